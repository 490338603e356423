"""The per-ELF argument table (scripts/probe/elf_boundaries.json) and the one
place that turns an ELF argument buffer into a lens boundary tensor.

elf_boundaries.json is data, derived by reading each bf16 model's code in
Xilinx/mlir-air: for every ELF block 0 launches, each argument index with its
role (what the ELF's CPU twin, npu_probe.emulate.twins, reads or writes), its shape as the
model's code passes it, symbolic (seq, emb, q_dim, kv_dim, hidden, head_dim,
n_heads, n_kv_heads, dv_tile, dv_chunks, pad1024(x), products with *), and the
lens boundary it holds. `cols` slices padding off (qwen25_0_5b pads Q/K/V GEMM
N to 1024 and O/Down GEMM N to pad1024(emb)); `view` reads a flat buffer as 2-D.

Layout normalisation, NPU side (HF side: npu_probe.lens.hf_capture.seq_first): every
boundary is written seq-first, rows = positions, columns = features with heads
contiguous (head h at columns h*head_dim .. (h+1)*head_dim), padding columns
sliced off, real rows only. `to_seq_first` below is that step for an ELF buffer.
"""

import json
import os
import re

import numpy as np

from npu_probe.core.contract import PROBE_DIR
from npu_probe.core.errors import ProbeError

TABLE_FILE = os.path.join(PROBE_DIR, "elf_boundaries.json")
TABLE_SCHEMA = "npu-block-gate/elf-boundaries"
ROLE_SCRATCH = "scratch"
LAYOUT_SEQ_FIRST = "seq-first"
LAYOUT_HEAD_FIRST = "head-first"
# head_dim -> dv_tile of shared/infra/fa_headfirst._FA_TILING (v and out are dv-chunked there)
FA_DV_TILE = {128: 64, 256: 128}

_TABLE = None


def load_table(path=TABLE_FILE):
    """The parsed table (cached); a broken table is bad input naming the file (exit 2)."""
    global _TABLE
    if _TABLE is not None and path == TABLE_FILE:
        return _TABLE
    try:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError) as exc:
        raise ProbeError(path, f"cannot read the ELF boundary table: {exc}") from exc
    if not isinstance(table, dict) or table.get("schema") != TABLE_SCHEMA:
        raise ProbeError(path, f"not an ELF boundary table (schema {TABLE_SCHEMA!r} expected)")
    for key in ("boundaries", "models"):
        if key not in table:
            raise ProbeError(path, f"no {key!r}")
    names = [b["name"] for b in table["boundaries"]]
    for model, entry in table["models"].items():
        spec = _resolve(table, model)
        for elf, e in spec["elfs"].items():
            for a in e.get("args", []) + [x for lay in (e.get("layouts") or {}).values() for x in lay]:
                b = a.get("boundary")
                if b is not None and b not in names:
                    raise ProbeError(path, f"{model}.{elf} arg {a.get('arg')}: unknown boundary {b!r}")
    if path == TABLE_FILE:
        _TABLE = table
    return table


def _resolve(table, model):
    entry = table["models"][model]
    seen = {model}
    while "same_as" in entry:
        target = entry["same_as"]
        if target in seen or target not in table["models"]:
            raise ProbeError(TABLE_FILE, f"{model}: same_as {target!r} does not resolve")
        seen.add(target)
        base = table["models"][target]
        entry = dict(base, derived_from=entry.get("derived_from", []) + base.get("derived_from", []),
                     same_as_resolved=target) if "same_as" not in base else dict(base)
    return entry


def model_spec(model, table=None):
    """The table entry for a model dir name (same_as followed), or None when not covered."""
    table = table or load_table()
    if model not in table["models"]:
        return None
    return _resolve(table, model)


def boundary_order(table=None):
    table = table or load_table()
    return {b["name"]: b["order"] for b in table["boundaries"]}


def boundary_info(table=None):
    table = table or load_table()
    return {b["name"]: b for b in table["boundaries"]}


# ---------------------------------------------------------------------------
# Dimensions and shapes


def dims_of(cfg, seq=None):
    """Symbol values from a model config (probe.json model.config or the tree's object)."""
    get = cfg.get if isinstance(cfg, dict) else (lambda k, d=None: getattr(cfg, k, d))
    n_heads, n_kv, hd = int(get("n_heads")), int(get("n_kv_heads")), int(get("head_dim"))
    d = {
        "emb": int(get("emb_dim")), "hidden": int(get("hidden_dim")), "n_heads": n_heads, "n_kv_heads": n_kv,
        "head_dim": hd, "q_dim": n_heads * hd, "kv_dim": n_kv * hd,
    }
    d["dv_tile"] = FA_DV_TILE.get(hd, hd)
    d["dv_chunks"] = hd // d["dv_tile"]
    if seq is not None:
        d["seq"] = int(seq)
    return d


_TERM = re.compile(r"^(?:(\d+)|([a-z_]+)|pad1024\(([a-z_]+)\))$")


def eval_dim(expr, dims):
    """'seq', '1024', 'pad1024(emb)', 'n_heads*dv_chunks'."""
    value = 1
    for term in str(expr).split("*"):
        m = _TERM.match(term.strip())
        if not m:
            raise ProbeError(TABLE_FILE, f"bad dimension {expr!r}")
        lit, sym, pad = m.groups()
        if lit:
            v = int(lit)
        elif sym:
            if sym not in dims:
                raise ProbeError(TABLE_FILE, f"dimension {expr!r}: unknown symbol {sym!r}")
            v = dims[sym]
        else:
            v = dims[pad]
            v = v if v % 1024 == 0 else ((v + 1023) // 1024) * 1024
        value *= int(v)
    return value


def eval_shape(shape, dims):
    return tuple(eval_dim(e, dims) for e in shape)


def elf_args(elf_spec, layout=None):
    """The argument list of an ELF spec (flash_attn: the given layout, else its default)."""
    layouts = elf_spec.get("layouts")
    if layouts:
        return layouts.get(layout or elf_spec.get("default_layout")) or elf_spec["args"]
    return elf_spec["args"]


def fa_layout(elf_spec, shapes):
    """flash_attn: 'head-first' when q was passed 3-D (fa_headfirst), else 'seq-first'."""
    if shapes and len(shapes[0]) == 3:
        return LAYOUT_HEAD_FIRST
    if shapes and len(shapes[0]) == 2:
        return LAYOUT_SEQ_FIRST
    return elf_spec.get("default_layout") or LAYOUT_SEQ_FIRST


def args_by_role(elf_spec, layout=None):
    return {a["role"]: a for a in elf_args(elf_spec, layout)}


def launch_dims(elf_spec, shapes, config):
    """One launch, worked out from the shapes of the arrays the tree passed (None: not known):
    (the model's dims with this launch's seq, layout, {role: arg spec}). seq is the first
    argument's with "seq" in its shape: read off the shape when the tree passed it with the spec's
    rank, else the argument's size over the rest of its shape (a flattened buffer). No "seq" in the
    dims when no shape tells it. The emulated NPU, the lens, its twins and the launch bisect all
    take a launch apart here."""
    layout = fa_layout(elf_spec, shapes) if elf_spec["kind"] == "flash_attn" else LAYOUT_SEQ_FIRST
    roles = args_by_role(elf_spec, layout)
    dims = dict(dims_of(config), direct=tuple(elf_spec.get("direct", ())))
    for a in roles.values():
        i, shape = a["arg"], a["shape"]
        if shapes is None or i >= len(shapes) or shapes[i] is None or "seq" not in shape:
            continue
        if len(shapes[i]) == len(shape):
            dims["seq"] = int(shapes[i][shape.index("seq")])
        else:
            rest = int(np.prod(eval_shape([e for e in shape if e != "seq"], dims))) if len(shape) > 1 else 1
            dims["seq"] = int(np.prod(shapes[i])) // max(rest, 1)
        break
    return dims, layout, roles


def to_seq_first(arr, arg_spec, dims, layout=LAYOUT_SEQ_FIRST):
    """An ELF argument buffer as a seq-first 2-D float32 array (rows = positions,
    columns = features, heads contiguous), padding columns sliced off. `arr` has
    any shape with the right number of elements; `dims` carries this launch's seq."""
    a = np.asarray(arr)
    return seq_first_view(a.astype(np.float32) if a.dtype != np.float32 else a, arg_spec, dims, layout)


def seq_first_view(a, arg_spec, dims, layout=LAYOUT_SEQ_FIRST):
    """to_seq_first without the float32 cast: a view (reshape, transpose, column slice) of `a`, so
    an index array through it says where each boundary element sits in the buffer (from_seq_first)."""
    a = np.asarray(a)
    role = arg_spec["role"]
    if layout == LAYOUT_HEAD_FIRST and role in ("q", "k", "v", "out"):
        heads = dims["n_heads"] if role in ("q", "out") else dims["n_kv_heads"]
        seq, hd = dims["seq"], dims["head_dim"]
        if role in ("v", "out"):
            dvc, dvt = dims["dv_chunks"], dims["dv_tile"]
            return a.reshape(heads, dvc, seq, dvt).transpose(2, 0, 1, 3).reshape(seq, heads * hd)
        return a.reshape(heads, seq, hd).transpose(1, 0, 2).reshape(seq, heads * hd)
    shape = eval_shape(arg_spec.get("view") or arg_spec["shape"], dims)
    if len(shape) != 2:
        raise ProbeError(TABLE_FILE, f"arg {arg_spec['arg']} ({role}) is not 2-D and has no 'view'")
    a = a.reshape(shape)
    if arg_spec.get("cols"):
        a = a[:, :eval_dim(arg_spec["cols"], dims)]
    return a


def from_seq_first(buf, arr, arg_spec, dims, layout=LAYOUT_SEQ_FIRST, row_off=0):
    """`buf` (an ELF argument buffer, any shape) with the seq-first rows `arr` written over rows
    row_off.. of its seq-first view: to_seq_first's inverse for the elements it keeps (padding
    columns and rows beyond `arr` keep what `buf` held). Returns a float32 copy in buf's shape."""
    out = np.array(buf, dtype=np.float32, copy=True)
    idx = seq_first_view(np.arange(out.size).reshape(out.shape), arg_spec, dims, layout)
    rows = max(0, min(idx.shape[0] - row_off, arr.shape[0]))
    if rows and idx.shape[1] == arr.shape[1]:
        out.reshape(-1)[idx[row_off:row_off + rows].reshape(-1)] = np.asarray(arr[:rows], dtype=np.float32).reshape(-1)
    return out
