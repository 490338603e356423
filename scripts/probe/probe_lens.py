"""The lens's run-dir part: RUN_DIR/boundaries/ and probe.json `boundaries`.

The probe computes no metric: it writes each boundary inside block 0 twice,
the NPU side and the HF side, in one layout (seq-first float32, rows = the
real positions, columns = features with heads contiguous, padding sliced),
and declares them in block order. The TypeScript side judges every pair with
the same engine as the gate.

  boundaries/NN-<name>.npu.npy   NN = the boundary's block order (elf_boundaries.json)
  boundaries/NN-<name>.ref.npy
"""

import os

from npu_probe.core.npy import tensor_entry, write_npy
from npu_probe.core.contract import BOUNDARIES_DIR, BOUNDARY_LAYOUT, boundary_file
from npu_probe.emulate.table import boundary_info


def write_boundaries(out, npu, ref, *, source_table, emulated, ref_capture, ref_missing=None, ref_note=None,
                     log=None):
    """Write every boundary both sides have (same shape) and return the probe.json record.
    `npu`: {name: probe_capture.Boundary}; `ref`: {name: float32 array} or None."""
    info = boundary_info()
    ref = ref or {}
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
        for side, arr in (("npu", b.array), ("ref", r)):
            rel = boundary_file(order, name, side)
            item[side] = tensor_entry(rel, write_npy(os.path.join(out, *rel.split("/")), arr))
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
    }
    if log is not None:
        log.step(f"boundaries: {len(entries)} pairs written to {BOUNDARIES_DIR}/"
                 + (f" ({len(unpaired)} unpaired)" if unpaired else ""))
    return record
