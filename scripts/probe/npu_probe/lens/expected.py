"""The error budget's expected side: what the hardware twins themselves give at every boundary.

The error budget divides the NPU's error against FP32 by what bf16 itself costs (HF bf16 against
FP32). A kernel that computes in a coarser format than bf16 (NPU2's BFP16 operands) is over that
on a right integration. So the lens runs the hardware twins (precision hw: bf16's roundings plus
BFP16 where the tree compiles it, npu_probe.emulate.numerics) a second time over block 0's
captured launches, fed from the FP32 input, and writes each boundary they give beside the pair
(boundaries/NN-<name>.twin.npy); the TypeScript side divides the NPU's error by theirs.

The pass, launch by launch in call order (the captured launches, npu_probe.lens.capture):
- each launch's twin gets what the launch was given (weights, LUTs, padding as the tree passed
  them), except its activation inputs (INPUTS below): the block's input from the FP32 side, and
  a boundary an earlier launch of this pass wrote from that launch's twin output. So the twins'
  error accumulates through the block as the NPU's does, from the same input;
- a boundary no twin of this pass wrote (host attention under --cpu-attn: the launch keeps the
  buffer it was given) has no expected side;
- the twins are clean (no injected bug) and take the run's RMSNorm eps (the ELFs' own unless
  --twin-eps config): the tree's eps is part of what a right integration gives.
On an emulated NPU at precision hw the two passes are the same computation: the expected side is
the NPU side, bit for bit, unless an injected bug changed it. Needs numpy only.
"""

import dataclasses

import numpy as np

from npu_probe.emulate import numerics
from npu_probe.emulate.table import elf_args, from_seq_first, launch_dims, to_seq_first
from npu_probe.emulate.twins import FRONT_KINDS, input_roles
from npu_probe.lens.capture import Launch, twin_launch

# kind -> {input role: the boundary the launch is given there}
_NORM_TAIL = {"attn": "attn_out", "x": "block_input"}
INPUTS = dict(
    {k: {"x": "block_input"} for k in FRONT_KINDS},
    flash_attn={"q": "q_roped", "k": "k_roped", "v": "v"},
    o_ffn=_NORM_TAIL, o_ffn_qwen=_NORM_TAIL, o_ffn_head=_NORM_TAIL, o_res_norm=_NORM_TAIL,
    down_add={"swiglu": "swiglu", "res1": "res1"},
    gate_up={"normed2": "ffn_norm"},
    gemm={"a": "ffn_norm"},
    swiglu={"gate": "gate", "up": "up"},
)
# Outputs the table leaves unnamed (the boundary is read where the next ELF is given it).
OUTPUTS = {"flash_attn": {"out": "attn_out"}}
FROM_FP32 = ("block_input",)  # the block's input: the FP32 side's (the embeddings, exact in bf16)
WHAT = ("the hardware twins (precision hw) run again over block 0's captured launches, fed the FP32 "
        "block input and, from there on, their own outputs (npu_probe.lens.expected)")


@dataclasses.dataclass
class _Recorded:
    launches: list


def hw_numerics(num=None):
    """The expected pass's numerics: precision hw with the run's RMSNorm eps."""
    base = num if num is not None else numerics.DEFAULT
    return numerics.Numerics(precision=numerics.HW, rms_eps=base.rms_eps, qk_eps=base.qk_eps, eps_from=base.eps_from)


def twin_pass(recorder, spec, config, real_len, fp32, num=None):
    """The hardware twins' pass (see above): (a recorder-like object whose launches are the twins'
    (inputs as given to them, outputs theirs), the boundary names a twin of this pass wrote), for
    npu_probe.lens.boundaries.npu_boundaries to read; None when there is nothing to feed it (no
    table entry, no FP32 block input)."""
    fp32 = fp32 or {}
    if spec is None or fp32.get("block_input") is None:
        return None
    hw = hw_numerics(num)
    feed = {n: np.array(fp32[n], dtype=np.float32, copy=True) for n in FROM_FP32 if fp32.get(n) is not None}
    wrote = set(FROM_FP32) & set(feed)
    offsets, passes = {}, []
    for la in recorder.launches:
        elf = spec["elfs"].get(la.name)
        if elf is None or la.swapped:
            continue
        dims, layout, specs = launch_dims(elf, la.shapes, config)
        seq = dims.get("seq", 0)
        off = offsets.get(la.name, 0) if elf.get("row_chunks") else 0
        offsets[la.name] = offsets.get(la.name, 0) + seq
        given = dict(la.inputs)
        for role, name in INPUTS.get(elf["kind"], {}).items():
            a = specs.get(role)
            if a is None or name not in feed or a["arg"] not in given:
                continue
            i = a["arg"]
            given[i] = from_seq_first(np.asarray(given[i]).reshape(la.shapes[i]), feed[name][off:off + seq], a, dims, layout)
        if any(specs[r]["arg"] not in given for r in input_roles(elf["kind"]) if r in specs):
            continue  # a launch captured without its inputs (capture off): no twin for it
        outs, _ = twin_launch(elf, given, la.shapes, config, hw)
        by_arg = {specs[r]["arg"]: np.asarray(v, dtype=np.float32) for r, v in outs.items() if r in specs}
        unnamed = OUTPUTS.get(elf["kind"], {})
        for a in elf_args(elf, layout):
            name = a.get("boundary") or unnamed.get(a["role"])
            if name is None or a["arg"] not in by_arg:
                continue
            arr = to_seq_first(by_arg[a["arg"]].reshape(la.shapes[a["arg"]]), a, dims, layout)
            if name not in feed:
                feed[name] = np.zeros((max(real_len, off + arr.shape[0]), arr.shape[1]), dtype=np.float32)
            rows = max(0, min(arr.shape[0], feed[name].shape[0] - off))
            if feed[name].shape[1] == arr.shape[1]:
                feed[name][off:off + rows] = arr[:rows]
                wrote.add(name)
        passes.append(Launch(index=len(passes), name=la.name, occurrence=la.occurrence, shapes=la.shapes,
                             dtypes=la.dtypes, static=la.static, inputs=given, outputs=by_arg))
    return _Recorded(passes), wrote
