"""The seed's Step 2: the padding and bias triggers from the config, what the block module really
does about them (with evidence), and the Phase 4/5 prerequisite line that follows."""

import ast
import os

from npu_probe.plan.static.imports import iter_statements
from npu_probe.plan.static.names import function_defs
from npu_probe.plan.static.parse import parse_file


ALIGN = 1024  # seed Step 2: emb_dim/hidden_dim not a multiple of this -> padding trigger


SEED_WORKAROUND = {
    "non_1024_aligned": (
        "GQA-aware reindexed padding: pad to a 1024-aligned size by inserting phantom Q heads "
        "inside each KV group (keeps n_heads/n_kv_heads); CPU-check padded vs original first"),
    "qkv_bias": (
        "host-side post-RoPE bias add: RoPE(q + bq) = RoPE(q) + RoPE(bq), so the rms_gemms_rope "
        "ELF stays bias-free and the bias is added on the host after it returns"),
}
SEED_PREREQUISITE = "Phase 4/5 prerequisite: perf optimization must preserve the padded/bias wrappers"


_BIAS_ATTRS = {"bq", "bk", "bv"}


def tree_does_step2(ctx, block, compile_):
    """What the block module really does about bias and padding, with evidence."""
    path = block["_path"] if block else (compile_["_path"] if compile_ else ctx.model_file("prefill"))
    parsed = parse_file(path) if path else None
    tree = parsed.tree if parsed else None
    if tree is None:
        return [], path
    out = []
    module = os.path.splitext(os.path.basename(path))[0]
    # Bias on device: a load_and_run of an ELF named *bias* in a function that uses .bq/.bk/.bv.
    bias_elfs = {}
    for fn, _ in iter_statements(tree.body):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        attrs = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)}
        if not attrs & _BIAS_ATTRS:
            continue
        for call in ast.walk(fn):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.args
                    and isinstance(call.args[0], ast.Constant) and "bias" in str(call.args[0].value)):
                continue
            passes_bias = any(isinstance(n, ast.Attribute) and n.attr in _BIAS_ATTRS
                              for a in call.args[1:] for n in ast.walk(a))
            # load_and_run gets them from an args list built in the same function
            if call.func.attr == "load_and_run" or passes_bias:
                bias_elfs.setdefault(call.args[0].value, (call.lineno, call.func.attr))
    for elf, (line, via) in bias_elfs.items():
        out.append({"id": "qkv_bias_on_device",
                    "detail": f"adds the Q/K/V bias ON DEVICE before RoPE: ELF {elf}, bq/bk/bv passed to {via}",
                    "evidence": ctx.where(path, line)})
    # Bias on the host (`q + lw.bq`), and which module functions are called at all.
    called, host_bias = set(), None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
        elif host_bias is None and not bias_elfs and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) \
                and any(isinstance(x, ast.Attribute) and x.attr in ("bq", "bk", "bv") for x in (node.left, node.right)):
            host_bias = node.lineno
    if host_bias:
        out.append({"id": "qkv_bias_host", "detail": "adds the Q/K/V bias on the host",
                    "evidence": ctx.where(path, host_bias)})
    # Zero-padding of GEMM N: called helpers named *pad* that compute 1024-aligned sizes.
    pads = []
    for fn in function_defs(tree, r"pad"):
        consts = {n.value for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, int)}
        if fn.name in called and consts & {1023, 1024}:
            pads.append(fn)
    if pads:
        names = ", ".join(f"{module}.{fn.name}" for fn in pads)
        out.append({"id": "zero_pad_gemm_n",
                    "detail": "zero-pads GEMM N to a multiple of 1024 (host pads weight columns, slices "
                              f"outputs): {names}",
                    "evidence": ctx.where(path, pads[0].lineno),
                    "functions": [f"{module}.{fn.name}" for fn in pads]})
    return out, path


def step2(ctx, cfg, tree_does, block_path):
    if cfg is None:
        return None
    emb_ok = cfg["emb_dim"] % ALIGN == 0
    hid_ok = cfg["hidden_dim"] % ALIGN == 0
    triggers = []
    if not (emb_ok and hid_ok):
        dims = ", ".join(f"{k}={cfg[k]}" for k in ("emb_dim", "hidden_dim") if cfg[k] % ALIGN)
        triggers.append({"id": "non_1024_aligned",
                         "detail": f"{dims} not a multiple of {ALIGN}: BD-pool exhaustion risk at long seq_len "
                                   f"(group size n_heads/n_kv_heads = {cfg['n_heads']}/{cfg['n_kv_heads']})",
                         "seed_workaround": SEED_WORKAROUND["non_1024_aligned"]})
    if cfg["qkv_bias"]:
        triggers.append({"id": "qkv_bias", "detail": "qkv_bias=True: Q/K/V projections carry a bias",
                         "seed_workaround": SEED_WORKAROUND["qkv_bias"]})
    does = list(tree_does)
    if triggers and triggers[0]["id"] == "non_1024_aligned" and not any(t["id"] == "zero_pad_gemm_n" for t in does) \
            and block_path:
        does.append({"id": "no_padding",
                     "detail": "no GEMM N padding helper in the block module: emb_dim/hidden_dim run at their "
                               "real, non-1024-aligned sizes",
                     "evidence": ctx.rel(block_path)})
    helper = next((t for t in does if t["id"] == "zero_pad_gemm_n"), None)
    return {"emb_dim_aligned": emb_ok, "hidden_dim_aligned": hid_ok, "qkv_bias": cfg["qkv_bias"],
            "triggers": triggers, "tree_does": [{k: v for k, v in t.items() if k != "functions"} for t in does],
            # the Step 2 sanity check (reference/step2_sanity.py) runs these helpers on the model's sizes
            "padding_helper": {"file": ctx.rel(block_path), "functions": helper["functions"]} if helper else None,
            "prerequisite": _prerequisite(triggers, does)}


def _prerequisite(triggers, does):
    if not triggers:
        return None
    keep = []
    for t in does:
        if t["id"] == "qkv_bias_on_device":
            elf = t["detail"].split("ELF ")[1].split(",")[0]
            keep.append(f"the on-device QKV bias add before RoPE ({elf})")
        elif t["id"] == "qkv_bias_host":
            keep.append(f"the host-side QKV bias add ({t['evidence']})")
        elif t["id"] == "zero_pad_gemm_n":
            keep.append(f"the zero-padding of GEMM N to 1024 ({', '.join(t['functions'])})")
    ids = {t["id"] for t in triggers}
    unpadded = "non_1024_aligned" in ids and not any(t["id"] == "zero_pad_gemm_n" for t in does)
    if keep:
        tail = ("; the non-1024-aligned GEMMs run unpadded, so it must also keep them placeable at long seq_len"
                if unpadded else "")
        return "Phase 4/5 prerequisite: perf optimization must preserve " + " and ".join(keep) + tail
    if ids == {"non_1024_aligned"}:
        return ("Phase 4/5 prerequisite: the non-1024-aligned dims run unpadded (no GQA-aware padding in the tree); "
                "perf optimization must keep them placeable at long seq_len or add the padded wrapper")
    return SEED_PREREQUISITE
