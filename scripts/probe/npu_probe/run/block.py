"""Block 0 on the NPU: the padded length, and one run of the block function on a BlockSetup
(npu_probe.run.setup). `probe block` runs the block once (run_block0, which also takes the
adapter path, npu_probe.run.adapter); `probe bisect` once per swapped step.
"""

import time

import numpy as np

from npu_probe.core.call import block_output, call_tree, copy_f32, filter_kwargs
from npu_probe.core.contract import BISECT_CPU_STEPS_KW, MAX_SEQ_DEFAULT, SEQ_ALIGN
from npu_probe.core.errors import ProbeError
from npu_probe.run.adapter import run_adapter_block0
from npu_probe.run.kernels import unique
from npu_probe.run.outcome import BlockRun
from npu_probe.run.setup import prepare_block0

# ---------------------------------------------------------------------------
# seq_len


def round_up(n, multiple):
    return ((n + multiple - 1) // multiple) * multiple


SEQ_LEN_ATTR = "PREFILL_SEQ_LEN"


def declared_seq_len(*modules):
    """(value, "module.PREFILL_SEQ_LEN") of the first module declaring the
    model's prefill length, or (None, None)."""
    for m in modules:
        v = getattr(m, SEQ_LEN_ATTR, None) if m is not None else None
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v, f"{m.__name__}.{SEQ_LEN_ATTR}"
    return None, None


def choose_seq_len(real_len, override=None, max_seq=MAX_SEQ_DEFAULT, declared=None):
    """(padded length, why). `--seq-len` if given (a multiple of 64 holding the
    prompt); else the model's declared PREFILL_SEQ_LEN (raised to the next
    multiple of 64 holding the prompt when the prompt is longer); else max_seq,
    mlir-air's convention: its prefill ELFs are built for 2048 and the kernel
    registry has the LLM GEMM shapes only at M=2048, so compile_all_kernels
    fails at any other length."""
    if override is not None:
        if override <= 0 or override % SEQ_ALIGN:
            raise ProbeError("--seq-len", f"{override} is not a positive multiple of {SEQ_ALIGN}")
        if override < real_len:
            raise ProbeError("--seq-len", f"{override} is shorter than the prompt ({real_len} tokens)")
        return override, "--seq-len"
    if declared is not None:
        value, source = declared
        if value % SEQ_ALIGN:
            raise ProbeError(source, f"{value} is not a multiple of {SEQ_ALIGN}")
        if real_len <= value:
            return value, source
        return min(round_up(real_len, SEQ_ALIGN), max_seq), f"{source} raised to hold {real_len} tokens"
    return max_seq, f"mlir-air prefill length {max_seq}"

# ---------------------------------------------------------------------------
# Running block 0


def run_block0(ctx, reuse_kernels=False, keep_layers=False):
    """Block 0 once, on the path the context chose (call from the build dir, lock held)."""
    spec, entry = ctx.spec, ctx.model.entry
    if entry.kind == "adapter":
        if reuse_kernels:
            ctx.log.step("--reuse-kernels has no effect on the adapter path (its build_runner compiles on its own)")
        return run_adapter_block0(ctx, keep_layers)
    setup = prepare_block0(ctx, reuse_kernels=reuse_kernels)
    # An emulated run says so on every line that could be read as the NPU's (no NPU ran).
    where = ("the emulated NPU (CPU twins of its ELFs; no NPU runs)" if ctx.state.emulation is not None else "the NPU")
    ctx.log.step(f"running block 0 on {where} via {entry.entry} (seq_len {spec.seq_len}, real_len {spec.real_len})")
    t = time.monotonic()
    npu = run_block_once(setup)
    setup.timings["npu"] = time.monotonic() - t
    return BlockRun(
        npu=npu,
        input=setup.inputs.input,
        timings=setup.timings,
        compiled=setup.compiled,
        kernels_run=unique(setup.kernels.kernels_run),
        recorder=setup.kernels.recorder,
        table=setup.kernels.table,
        returned=setup.returned,
        emulated=setup.emulated,
    )


def run_block_once(setup, cpu_steps=None):
    """Run block 0 once on `setup` and return a float32 copy of its output.
    `cpu_steps` (a set of bisect step names) is passed as the `cpu_steps`
    keyword when given; the caller checks the entry accepts it."""
    entry, config, spec = setup.ctx.model.entry, setup.ctx.model.config, setup.ctx.spec
    inp, cache = setup.inputs, setup.kernels.cache
    extra = {} if cpu_steps is None else {BISECT_CPU_STEPS_KW: set(cpu_steps)}
    # A fresh array each run: a block may write into its input.
    hidden = np.array(inp.hidden, copy=True)
    if entry.kind == "single":
        offered = {
            "layer_idx": 0, "hidden": hidden, "weights": inp.layer, "layer_weights": inp.layer,
            "config": config, "rope_lut": inp.rope_lut, "rope_lut_bf16": inp.rope_lut_bf16,
            "cache": cache, "seq_len": spec.seq_len, "cpu_attn": spec.cpu_attn,
        }
        ret = call_tree(entry.entry, entry.func, **filter_kwargs(entry.func, offered), **extra)
    else:
        ret = call_tree(entry.entry, entry.func, hidden, inp.layer, inp.rope_lut_bf16, config, cache,
                        **filter_kwargs(entry.func, {"layer_idx": 0, "cpu_attn": spec.cpu_attn}), **extra)
    out = block_output(ret)
    if out is None:
        raise ProbeError(entry.entry, "returned no block output (no array and no 'ffn_out')")
    setup.returned = returned_boundaries(ret)  # copies, now: the arrays are views of shared buffers
    return copy_f32(out)  # now, before anything reuses the shared buffer


def returned_boundaries(ret):
    """The block's returned intermediates dict (v, q_roped, k_roped, attn_out, ffn_out), float32 copies."""
    d = ret if isinstance(ret, dict) else (ret[1] if isinstance(ret, (tuple, list)) and len(ret) >= 2
                                           and isinstance(ret[1], dict) else None)
    out = {}
    for k, v in (d or {}).items():
        if isinstance(k, str) and v is not None and hasattr(v, "shape"):
            try:
                out[k] = copy_f32(v)
            except (TypeError, ValueError):
                continue
    return out
