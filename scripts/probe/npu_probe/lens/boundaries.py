"""The lens's boundaries: the NPU side from the captured launches (npu_boundaries: through the
table's to_seq_first, padding sliced, seq-first, real rows; the block's returned dict for the
rest), written beside the HF side into RUN_DIR/boundaries/ with probe.json `boundaries`.

The probe computes no metric: it writes each boundary inside block 0 twice,
the NPU side and the HF side, in one layout (seq-first float32, rows = the
real positions, columns = features with heads contiguous, padding sliced),
and declares them in block order. The TypeScript side judges every pair with
the same engine as the gate.

  boundaries/NN-<name>.npu.npy   NN = the boundary's block order (elf_boundaries.json)
  boundaries/NN-<name>.ref.npy
  boundaries/NN-<name>.fp32.npy  HF layer 0 in FP32 (the error budget's ground truth), when measured
  boundaries/NN-<name>.twin.npy  the hardware twins' pass (npu_probe.lens.expected), beside an fp32 side
"""

import dataclasses
import os
import time

import numpy as np

from npu_probe.core.contract import BOUNDARIES_DIR, BOUNDARY_LAYOUT, HF_CAPTURE, boundary_file
from npu_probe.core.npy import tensor_entry, write_npy
from npu_probe.core.tree import emulates_npu
from npu_probe.emulate.table import boundary_info, boundary_order, elf_args, launch_dims, to_seq_first
from npu_probe.emulate.twins import f32, input_roles
from npu_probe.lens.eps import norm_eps_record
from npu_probe.lens.expected import WHAT as EXPECTED_WHAT, hw_numerics, twin_pass

FP32_RECORD = {"dtype": "float32", "what": "HF layer 0 in float32 from the bf16 reference's own weights (upcast) "
                                         "and token ids, the lens's layer-0 hooks on it"}


@dataclasses.dataclass
class Boundary:
    name: str
    array: np.ndarray  # seq-first float32, real rows only
    launch: object  # ELF name or None (returned dict)
    arg: object
    source: str  # "launch" | "returned"
    produced_by: object = None


def npu_boundaries(recorder, spec, config, real_len, returned=None, attn_producer=None):
    """{name: Boundary} from the recorder's launches (through the table), then the
    returned dict for the rest. Rows beyond real_len are dropped (row-chunked
    launches are placed at their row offset first)."""
    order = boundary_order()
    pieces = {}  # name -> list of (row offset, array, launch, arg)
    first_launch = {}
    offsets = {}
    for la in recorder.launches if spec is not None else []:
        elf = spec["elfs"].get(la.name)
        if elf is None or la.swapped:
            continue
        dims, layout, _specs = launch_dims(elf, la.shapes, config)
        off = offsets.get(la.name, 0)
        offsets[la.name] = off + dims.get("seq", 0)
        for a in elf_args(elf, layout):
            b = a.get("boundary")
            if not b:
                continue
            i = a["arg"]
            src = la.outputs.get(i) if i in la.outputs and i not in _input_only(elf, layout) else la.inputs.get(i)
            if src is None:
                continue
            if b in first_launch and first_launch[b] != la.name:
                continue  # the first ELF that holds a boundary is its source
            first_launch[b] = la.name
            arr = to_seq_first(np.asarray(src).reshape(la.shapes[i]), a, dims, layout)
            pieces.setdefault(b, []).append((off if elf.get("row_chunks") else 0, arr, la.name, i))
    out = {}
    for name, parts in pieces.items():
        if len(parts) == 1:
            full = parts[0][1]
        else:
            full = np.concatenate([p[1] for p in sorted(parts, key=lambda p: p[0])], axis=0)
        launch, arg = parts[0][2], parts[0][3]
        produced = attn_producer if name == "attn_out" else launch
        out[name] = Boundary(name, np.ascontiguousarray(full[:real_len], dtype=np.float32), launch, arg, "launch",
                             produced)
    for name, arr in (returned or {}).items():
        if name in out or name not in order or arr is None:
            continue
        a = f32(arr)
        if a.ndim != 2:
            continue
        out[name] = Boundary(name, np.ascontiguousarray(a[:real_len]), None, None, "returned",
                             attn_producer if name == "attn_out" else None)
    return dict(sorted(out.items(), key=lambda kv: order[kv[0]]))


def expected_boundaries(recorder, spec, config, real_len, fp32, num=None):
    """{name: seq-first float32 array, real rows}: the hardware twins' pass over the captured
    launches (npu_probe.lens.expected), read like the NPU side; {} when it cannot run."""
    got = twin_pass(recorder, spec, config, real_len, fp32, num)
    if got is None:
        return {}
    launches, wrote = got
    return {n: b.array for n, b in npu_boundaries(launches, spec, config, real_len).items() if n in wrote}


def _input_only(elf, layout):
    """Arg indices whose boundary is what the launch is GIVEN (its input roles)."""
    roles = set(input_roles(elf["kind"]))
    return {a["arg"] for a in elf_args(elf, layout) if a["role"] in roles}


@dataclasses.dataclass(frozen=True)
class RefSide:
    """The HF side of the lens: {name: float32 array} (None: no capture), the capture's version,
    {name: why it is missing}, and one note for every name when there is no capture at all."""

    arrays: dict = None
    capture: str = None
    missing: dict = None
    note: str = None
    fp32: dict = None  # {name: float32 array}: HF layer 0 in FP32 (the error budget), or None
    twin: dict = None  # {name: float32 array}: the hardware twins' pass (npu_probe.lens.expected), or None
    twin_record: dict = None  # how that pass computed (probe.json boundaries.twin)


def write_boundaries(out, npu, side, source_table, emulated, log=None):
    """Write every boundary both sides have (same shape) and return the probe.json record.
    `npu`: {name: Boundary}; `side`: the RefSide."""
    info = boundary_info()
    ref = side.arrays or {}
    ref_missing, ref_note, ref_capture = side.missing, side.note, side.capture
    entries, unpaired = [], []
    names = sorted(set(npu) | set(ref), key=lambda n: info[n]["order"] if n in info else 999)
    for name in names:
        if name not in info:
            continue
        b, r = npu.get(name), ref.get(name)
        if b is None:
            unpaired.append({"name": name, "side": "ref", "reason": "the NPU side has no buffer for it"})
            continue
        if r is None:
            why = (ref_missing or {}).get(name) or ref_note or "the HF side has no hook for it"
            unpaired.append({"name": name, "side": "npu", "reason": why})
            continue
        if tuple(b.array.shape) != tuple(r.shape):
            unpaired.append({"name": name, "side": "both",
                             "reason": f"NPU {list(b.array.shape)} vs HF {list(r.shape)}: different shapes"})
            continue
        order = info[name]["order"]
        item = {"name": name, "order": order, "step": info[name]["step"], "launch": b.launch, "arg": b.arg,
                "source": b.source, "produced_by": b.produced_by}
        os.makedirs(os.path.join(out, BOUNDARIES_DIR), exist_ok=True)
        f32side = (side.fp32 or {}).get(name)
        f32side = f32side if f32side is not None and tuple(f32side.shape) == tuple(r.shape) else None
        twin = (side.twin or {}).get(name) if f32side is not None else None
        twin = twin if twin is not None and tuple(twin.shape) == tuple(r.shape) else None
        for which, arr in (("npu", b.array), ("ref", r), ("fp32", f32side), ("twin", twin)):
            rel = boundary_file(order, name, which)
            item[which] = tensor_entry(rel, write_npy(os.path.join(out, *rel.split("/")), arr)) if arr is not None else None
        entries.append(item)
    sources = {e["source"] for e in entries} | {npu[n].source for n in npu}
    record = {
        "source": "launches" if sources == {"launch"} else "returned" if sources == {"returned"} else
        "launches+returned" if sources else None,
        "table": source_table,
        "emulated": bool(emulated),
        "reference": ref_capture,
        "layout": BOUNDARY_LAYOUT,
        "entries": entries,
        "unpaired": unpaired,
        "fp32": dict(FP32_RECORD) if any(e["fp32"] for e in entries) else None,
        "twin": dict(side.twin_record or {}, what=EXPECTED_WHAT) if any(e["twin"] for e in entries) else None,
    }
    if log is not None:
        log.step(f"boundaries: {len(entries)} pairs written to {BOUNDARIES_DIR}/"
                 + (f" ({len(unpaired)} unpaired)" if unpaired else ""))
    return record


def lens_record(ctx, out, blk, captured, kind):
    """boundaries/ and probe.json `boundaries` for one run (a RunContext and its BlockRun): the
    NPU side from the captured launches (the table) and the block's returned dict, the HF side
    from the layer-0 hooks (`captured`, None without them); `kind` the reference's kind."""
    spec, table_entry = ctx.spec, blk.table
    attn_by = "flash_attn" if "flash_attn" in (blk.recorder.names or []) else (
        "host (attention_reference, cpu_attn)" if spec.cpu_attn else None)
    npu = npu_boundaries(blk.recorder, table_entry, ctx.model.config, spec.real_len, blk.returned, attn_by)
    table = None
    if table_entry is not None:
        table = f"scripts/probe/elf_boundaries.json#{spec.tree.model}"
        if table_entry.get("same_as_resolved"):
            table += f" (same as {table_entry['same_as_resolved']})"
    if captured is None:
        note = ("the reference is emulated: no HF model to hook" if kind != "hf-bf16"
                else "the reference cache entry holds no boundaries")
        ref, missing, fp32 = None, None, None
    else:
        note, ref, missing, fp32 = None, captured["boundaries"], captured["missing"], captured.get("fp32")
    capture = captured.get("capture", HF_CAPTURE) if captured is not None else None
    twin, twin_rec = None, None
    if fp32:
        t = time.monotonic()
        twin = expected_boundaries(blk.recorder, table_entry, ctx.model.config, spec.real_len, fp32, spec.twins)
        twin_rec = hw_numerics(spec.twins).record()
        ctx.state.timings["boundaries_twin"] = time.monotonic() - t
    side = RefSide(arrays=ref, capture=capture, missing=missing, note=note, fp32=fp32, twin=twin, twin_record=twin_rec)
    emulated = ctx.state.emulation is not None or emulates_npu(spec.tree)
    record = write_boundaries(out, npu, side, table, emulated, ctx.log)
    record["norm_eps"] = norm_eps_record(spec.tree.air_root, spec.hf_id, spec.twins) if kind == "hf-bf16" else None
    return record
