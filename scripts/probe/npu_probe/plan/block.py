"""Where the run gets its block function and compile_all_kernels (Step 1 `block`, kernel cache)."""

import ast
import os
import re

from npu_probe.plan.static.imports import imports_of
from npu_probe.plan.static.parse import parse_file


def _find_entry(ctx, name_rx, prefer_def=None):
    """Where the run gets a function: defined in <model>_prefill.py, else imported
    by name into <model>_prefill.py, verify_adapter.py or <model>_inference.py
    (module-level imports first, then imports inside functions)."""
    prefill = ctx.model_file("prefill")
    pinfo = ctx.info(prefill) if prefill else None
    if pinfo:
        for want in ([prefer_def] if prefer_def else []) + [name_rx]:
            for name, node in pinfo.defs.items():
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and re.fullmatch(want, name):
                    return _entry(ctx, prefill, node, "own-prefill", None)
    holders = [(prefill, "prefill"), (ctx.adapter, "adapter"), (ctx.model_file("inference"), "inference")]
    for top_only in (True, False):
        for path, role in holders:
            if not path:
                continue
            parsed = parse_file(path)
            for ref in imports_of(parsed) if parsed else []:
                if ref.top_level != top_only:
                    continue
                for orig in ref.names:
                    if not re.fullmatch(name_rx, orig):
                        continue
                    src, _ = ctx.resolve_module(ref, path)
                    sinfo = ctx.info(src) if src and src.endswith(".py") else None
                    node = sinfo.defs.get(orig) if sinfo else None
                    if node is None:
                        continue
                    own = ctx.model_of(src) == ctx.model
                    where = "own-prefill" if own else ("inference" if role == "inference" else "other-model-prefill")
                    return _entry(ctx, src, node, where, ctx.where(path, ref.line))
    return None


def _entry(ctx, path, node, where, via):
    module = os.path.splitext(os.path.basename(path))[0]
    return {"function": f"{module}.{node.name}", "file": ctx.rel(path), "line": node.lineno,
            "where": where, "via": via, "_path": path}


def find_block(ctx):
    block = _find_entry(ctx, r"run_transformer_block\w*", prefer_def="run_single_block")
    if block is None:
        block = _find_entry(ctx, r"run_single_block")
    compile_ = _find_entry(ctx, r"compile_all_kernels")
    return block, compile_
