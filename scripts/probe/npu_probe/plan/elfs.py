"""Which ELFs a block runs, read from its compile_all_kernels: each `cache.compile_and_cache(name,
<builder call>, ...)` gives the ELF name and the builder that makes it. The seed's inheritance
rule asks whether a block runs llama's ELFs; that is: every ELF it compiles (attention aside) is
one llama32_1b compiles, by the same builder, and it compiles all of llama's. Attention is the
same FlashAttention op whichever layout its head_dim needs (the registry's seq-first and
head-first harnesses run one kernel), so its ELF is not compared."""

import ast
import os
import re

from npu_probe.plan.static.names import module_info
from npu_probe.plan.static.parse import parse_file

EXEMPLAR = "llama32_1b"  # the seed's worked exemplar: its block is what inheritance calls
EXEMPLAR_BLOCK = "run_transformer_block"
ATTENTION_RX = re.compile(r"attn|attention", re.I)


def _function(path, name):
    parsed = parse_file(path) if path else None
    if parsed is None or parsed.tree is None:
        return None, None
    node = module_info(parsed).defs.get(name)
    return (node, parsed) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else (None, parsed)


def _imported_names(fn, parsed):
    """local name -> "module.name" for `from module import name` at module level and inside `fn`."""
    out = {}
    for node in list(ast.walk(parsed.tree)) if parsed.tree else []:
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                out.setdefault(a.asname or a.name, f"{node.module}.{a.name}")
    for node in ast.walk(fn):  # the function's own imports win
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _callee(call, names):
    f = call.func
    if isinstance(f, ast.Name):
        return names.get(f.id, f.id)
    if isinstance(f, ast.Attribute):
        parts = []
        while isinstance(f, ast.Attribute):
            parts.append(f.attr)
            f = f.value
        if isinstance(f, ast.Name):
            parts.append(names.get(f.id, f.id))
        return ".".join(reversed(parts))
    return None


def compiled_elfs(path, function):
    """{ELF name: builder} that `function` of `path` compiles with compile_and_cache, or None when
    the function is not there. A builder held in a local first (`mod = build_x(...)`) is followed."""
    fn, parsed = _function(path, function)
    if fn is None:
        return None
    names = _imported_names(fn, parsed)
    local = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    local[t.id] = node.value
    out = {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "compile_and_cache" and len(node.args) >= 2):
            continue
        name = node.args[0]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            continue
        built = node.args[1]
        if isinstance(built, ast.Name) and built.id in local:
            built = local[built.id]
        out[name.value] = _callee(built, names) if isinstance(built, ast.Call) else None
    return out


def runs_llamas_elfs(ctx, block, compile_):
    """(True | False | None, why): does block 0 run llama's ELFs? None when it cannot be told
    (no llama32_1b in this tree, or no compile_all_kernels to read)."""
    exemplar = os.path.join(ctx.llms_dir, EXEMPLAR, f"{EXEMPLAR}_prefill.py")
    if block and os.path.abspath(block["_path"]) == os.path.abspath(exemplar) \
            and block["function"].endswith(f".{EXEMPLAR_BLOCK}"):
        return True, f"block 0 is {EXEMPLAR}'s own {EXEMPLAR_BLOCK}"
    llama = compiled_elfs(exemplar, "compile_all_kernels") if os.path.isfile(exemplar) else None
    if llama is None:
        return None, f"no {EXEMPLAR} exemplar in this tree to compare ELFs with"
    if not compile_:
        return None, "no compile_all_kernels found: the block's ELFs cannot be read"
    mine = compiled_elfs(compile_["_path"], compile_["function"].rsplit(".", 1)[-1])
    if not mine:
        return None, f"{compile_['function']} compiles no ELF with compile_and_cache that the plan can read"
    theirs = {k: v for k, v in llama.items() if not ATTENTION_RX.search(k)}
    ours = {k: v for k, v in mine.items() if not ATTENTION_RX.search(k)}
    other = sorted(k for k in ours if theirs.get(k, "?") != ours[k])
    lacking = sorted(k for k in theirs if k not in ours)
    if other or lacking:
        lack = f"; llama's {', '.join(lacking)} it does not build" if lacking else ""
        return False, f"{compile_['function']} builds ELFs llama's does not ({', '.join(other) or 'none'}{lack})"
    return True, (f"{compile_['function']} builds llama's ELFs with llama's builders ("
                  + ", ".join(f"{k}: {v}" for k, v in sorted(ours.items())) + "; attention aside)")
