"""Phase 1 coverage: the kernel registry's rows for the model against the kernels the
config-derived block launches."""

import os
import re

from npu_probe.plan.static.parse import read_text, source_lines


_SECTIONS = (("GEMM (f32", "GEMM"), ("GEMM (bf16", "GEMM"), ("GEMV", "GEMV"), ("RMSNorm", "RMSNorm"),
             ("LayerNorm", "LayerNorm"), ("FlashAttention", "FlashAttention"), ("Element-wise Add", "EltwiseAdd"),
             ("SiLU", "SiLU-and-Mul"), ("RoPE", "RoPE"), ("GELU", "GELU"))
_STATUS = re.compile(r"(✅|⚠️|⚠|❌)")


def parse_registry(path):
    """[{section, kind, cells, shape, used_by, status, key}] for every shape row."""
    text = read_text(path)
    if text is None:
        return None
    rows, section, kind, header = [], None, None, None
    for line in source_lines(text):
        if line.startswith("## "):
            section = line[3:].split(" — ")[0].strip()
            kind = next((k for prefix, k in _SECTIONS if section.startswith(prefix)), None)
            header = None
            continue
        if not line.startswith("|") or kind is None:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        rows.append(_registry_row(section, kind, header, cells))
    return rows


def _registry_row(section, kind, header, cells):
    status_cell = cells[-1]
    m = _STATUS.search(status_cell)
    status = m.group(1) if m else status_cell
    if "used by" in header:
        used_by = cells[header.index("used by")]
    else:  # no Used-by column: the status cell's remark names the user
        used_by = _STATUS.sub("", status_cell).strip().strip("()").strip()
    return {"section": section, "kind": kind, "shape": cells[0], "used_by": used_by,
            "status": "⚠️" if status == "⚠" else status, "key": _row_key(kind, cells)}


def _nums(text):
    return [int(x) for x in re.findall(r"\d+", text.replace(",", ""))]


def _row_key(kind, cells):
    n = _nums(cells[0])
    if kind == "FlashAttention":
        d = _nums(cells[1]) if len(cells) > 1 else []
        h = _nums(cells[2]) if len(cells) > 2 else []
        causal = "✓" in (cells[3] if len(cells) > 3 else "")
        return (kind, tuple(n[:2]), tuple(d[:2]), tuple(h[:2]), causal)
    if kind in ("EltwiseAdd", "SiLU-and-Mul", "GELU"):
        return (kind, n[0] if n else None)
    return (kind, tuple(n))


def model_names(choices, model):
    """Registry spellings for the model: HF id names cut after the size token."""
    names = set()
    for ident in (choices or {}).values():
        if not isinstance(ident, str):
            continue
        base = ident.rstrip("/").split("/")[-1]
        m = re.match(r"^(.*?\d+(?:\.\d+)?[BbMm])(?![\w.])", base) or re.match(r"^(.*?\d+(?:\.\d+)?[BbMm])", base)
        names.add(m.group(1) if m else base)
    if not names:
        names.add(model)
    return sorted(names)


def _names_row(row, names):
    text = row["used_by"]
    return any(re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w.])", text, re.IGNORECASE) for n in names)


def launched(cfg, seq, cpu_attn):
    """(label, registry key) of every leaf kernel the block launches at `seq`."""
    e, nh, nkv, hd, hid = cfg["emb_dim"], cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"], cfg["hidden_dim"]
    q, kv = nh * hd, nkv * hd
    out = [("RMSNorm (attn/ffn)", ("RMSNorm", (seq, e))),
           ("Q GEMM", ("GEMM", (seq, e, q))), ("K/V GEMM", ("GEMM", (seq, e, kv))),
           ("RoPE-Q", ("RoPE", (nh * seq, hd))), ("RoPE-K", ("RoPE", (nkv * seq, hd))),
           ("O GEMM", ("GEMM", (seq, q, e))), ("residual add", ("EltwiseAdd", seq * e)),
           ("Gate/Up GEMM", ("GEMM", (seq, e, hid))), ("SiLU-and-Mul", ("SiLU-and-Mul", seq * hid)),
           ("Down GEMM", ("GEMM", (seq, hid, e)))]
    if cfg.get("qk_norm"):
        out.insert(3, ("Q/K Norm", ("RMSNorm", (seq, hd))))
    if not cpu_attn:
        out.insert(5, ("FlashAttention", ("FlashAttention", (seq, seq), (hd, hd), (nh, nkv), True)))
    return out


def coverage(ctx, cfg, choices, seq, cpu_attn):
    path = os.path.join(ctx.pe_dir, "kernel_registry", "supported_kernels.md")
    rows = parse_registry(path)
    out = {"registry": ctx.rel(path) if rows is not None else None, "seq_len": seq, "model_names": [],
           "registry_rows": [], "wired": [], "unwired": [], "outside_block": [], "unregistered": []}
    if rows is None or cfg is None:
        return out
    names = model_names(choices, ctx.model)
    out["model_names"] = names
    mine = [r for r in rows if _names_row(r, names)]
    launches = launched(cfg, seq, cpu_attn)
    keys = {}
    for label, key in launches:
        keys.setdefault(key, []).append(label)
    public = lambda r: {k: r[k] for k in ("section", "shape", "used_by", "status")}  # noqa: E731
    out["registry_rows"] = [public(r) for r in mine]
    for label, key in launches:
        # bf16-out GEMM rows first: the production prefill GEMMs are bf16 in, bf16 out
        match = sorted((r for r in rows if r["key"] == key), key=lambda r: "f32" in r["section"])
        named = [r for r in match if r in mine]
        best = (named or match or [None])[0]
        entry = {"kernel": label, "shape": _key_text(key), "row": public(best) if best else None}
        (out["wired"] if best else out["unregistered"]).append(entry)
    for r in mine:
        if r["key"] not in keys:
            reason = _unwired_reason(r, cpu_attn)
            # Decode and LM-head kernels are verified for the model but are not Phase 2's block:
            # listed apart, so `unwired` holds only what the block should launch and does not.
            outside = reason.startswith(("LM head", "decode kernel"))
            out["outside_block" if outside else "unwired"].append(dict(public(r), reason=reason))
    return out


def _key_text(key):
    kind = key[0]
    if kind == "FlashAttention":
        return f"{key[1][0]}x{key[1][1]} dk/dv {key[2][0]}/{key[2][1]} heads {key[3][0]}/{key[3][1]} causal"
    if isinstance(key[1], tuple):
        return "x".join(str(x) for x in key[1])
    return str(key[1])


def _unwired_reason(row, cpu_attn):
    if "lm-head" in row["used_by"].lower() or "lm head" in row["used_by"].lower():
        return "LM head: outside the transformer block"
    if row["kind"] == "GEMV" or "decode" in row["used_by"].lower():
        return "decode kernel: the prefill block does not launch it"
    if row["kind"] == "FlashAttention" and cpu_attn:
        return "cpu_attn: attention runs on the CPU"
    return "not a shape the config-derived block launches"
