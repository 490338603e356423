"""The kernel cache the run compiles into (build dir, cache dir, and where each was read from) and
what it depends on: the files and environment variables compile_all_kernels can read."""

import ast
import os
import re

from npu_probe.plan.closure import import_closure
from npu_probe.plan.context import runner_sources
from npu_probe.plan.static.makefile import make_expand, parse_makefile
from npu_probe.plan.static.parse import parse_file
from npu_probe.plan.static.paths import env_reads, path_eval, quoted_includes
from npu_probe.plan.static.reach import literal_sites, used_outside


def kernel_cache(ctx, compile_, seq_len):
    mk_path = os.path.join(ctx.model_dir, "Makefile")
    mk = parse_makefile(mk_path, ctx.environ) if os.path.isfile(mk_path) else None
    peano = bool(ctx.environ.get("PEANO_INSTALL_DIR"))
    cache_dir, dir_source = _prefill_cache_dir(ctx, seq_len)
    if mk and "BUILD_DIR" in mk.vars:
        build = make_expand(mk.vars["BUILD_DIR"][0], mk.vars, ctx.environ)[0].strip()
        build_dir = os.path.join(ctx.model_dir, build)
        build_source = f"{ctx.where(mk_path, mk.vars['BUILD_DIR'][1])} BUILD_DIR"
    elif mk is None and cache_dir and os.path.basename(cache_dir) == "prefill_kernel_cache":
        build_dir = os.path.dirname(cache_dir)
        build_source = "no Makefile: the directory holding the adapter's prefill_kernel_cache"
    elif mk is None:
        build_dir = os.path.join(ctx.model_dir, "build_peano")
        build_source = "no Makefile: build_peano, the dir the verify adapters use"
    else:
        build_dir = os.path.join(ctx.model_dir, "build_peano" if peano else "build_chess")
        build_source = "convention (build_peano with PEANO_INSTALL_DIR, else build_chess)"
    adapter_dir = cache_dir
    if cache_dir is None or os.path.basename(cache_dir) == "prefill_kernel_cache":
        # The probe compiles block 0 with its own KernelCache: into the dir `make compile`
        # uses (BUILD_DIR), so a make-built cache and ours are the same one. The adapter's
        # own runner (--layers) keeps the dir it hard-codes (adapter_dir).
        cache_dir, dir_source = os.path.join(build_dir, "prefill_kernel_cache"), "<build_dir>/prefill_kernel_cache"
    files, env, models = [], {}, []
    if compile_:
        files, env, models = compile_inputs(ctx, compile_["_path"])
    return {"build_dir": ctx.rel(build_dir), "build_dir_source": build_source,
            "dir": ctx.rel(cache_dir) if os.path.isabs(cache_dir) else cache_dir, "dir_source": dir_source,
            "adapter_dir": ctx.rel(adapter_dir) if adapter_dir and os.path.isabs(adapter_dir) else adapter_dir,
            "seq_len": seq_len, "compile": compile_["function"] if compile_ else None,
            "inputs": {"files": files, "env": env, "models": models}}


def _prefill_cache_dir(ctx, seq_len):
    """The prefill cache the run opens: a path in the adapter (or the module its
    build_runner lives in) ending in prefill_kernel_cache, else the prefill
    module's seq_len-keyed f-string (the q4nx/q4 classes)."""
    for path in runner_sources(ctx):
        parsed = parse_file(path)
        if not parsed or parsed.tree is None:
            continue
        ev = path_eval(parsed)
        for node in ast.walk(parsed.tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                tail = _const_tail(node)
                if not tail or tail[-1] != "prefill_kernel_cache":
                    continue
                v = ev.eval(node)
                full = v if v and os.path.isabs(v) else os.path.join(ctx.model_dir, *tail)
                return full, f"{ctx.where(path, node.lineno)} (KernelCache dir)"
    prefill = ctx.model_file("prefill")
    parsed = parse_file(prefill) if prefill else None
    if parsed and parsed.tree is not None:
        for node in ast.walk(parsed.tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.JoinedStr):
                pattern = _fstring_pattern(node.right)
                if "cache_seq" in pattern:
                    name, notes = _in_words(pattern.replace("{seq_len}", str(seq_len)), parsed.tree, ctx, prefill)
                    return os.path.join(ctx.model_dir, name), f"{ctx.where(prefill, node.lineno)} {pattern}{notes}"
    return None, None


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _in_words(name, tree, ctx, path):
    """A cache dir name whose f-string still holds a value only the run knows (q4nx's `{_fa}`, `{_att}`:
    which FlashAttention the run picks) said in words, `<_fa: tfa or hfa, chosen at run time>`, with where
    it is chosen; never printed as an unexpanded placeholder."""
    notes = []

    def word(m):
        var = m.group(1)
        choices, line = _choices(tree, var)
        said = f"<{var}: {' or '.join(choices)}, chosen at run time>" if choices else f"<{var}, chosen at run time>"
        notes.append(f"; {var} is set at run time{f' ({ctx.where(path, line)})' if line else ''}")
        return said

    return _PLACEHOLDER.sub(word, name), "".join(notes)


def _choices(tree, var):
    """(the string values an `var = "a" if ... else "b"` assignment can give, its line), or ([], None)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == var for t in node.targets):
            v = node.value
            if isinstance(v, ast.IfExp) and all(isinstance(x, ast.Constant) and isinstance(x.value, str) for x in (v.body, v.orelse)):
                return [v.body.value, v.orelse.value], node.lineno
            return [], node.lineno
    return [], None


def _const_tail(node):
    """String constants at the right end of an `a / "b" / "c"` chain."""
    out = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) \
            and isinstance(node.right.value, str):
        out.append(node.right.value)
        node = node.left
    return list(reversed(out))


def _fstring_pattern(js):
    parts = []
    for v in js.values:
        if isinstance(v, ast.Constant):
            parts.append(str(v.value))
        elif isinstance(v, ast.FormattedValue):
            parts.append("{" + (ast.unparse(v.value) if hasattr(ast, "unparse") else "?") + "}")
    return "".join(parts)


C_SUFFIXES = (".cc", ".cpp", ".c", ".h", ".hpp")


def compile_inputs(ctx, compile_path):
    """Files and environment variables that can change what compile_all_kernels builds."""
    base = [ctx.model_dir, os.path.dirname(compile_path), ctx.verify_dir, ctx.llms_dir, ctx.pe_dir]
    # The KernelCache module is a compile input too: its compile_and_cache prepares
    # air_project/ and builds the external kernels (shared.infra.external_kernels).
    cache_mod = os.path.join(ctx.llms_dir, "shared", "infra", "cache.py")
    roots = [compile_path] + ([cache_mod] if os.path.isfile(cache_mod) else [])
    order, _, _ = import_closure(ctx, roots, base)
    files = set(order)
    env_names = {}
    parsed_files = [(path, parsed) for path, parsed in ((p, parse_file(p)) for p in order) if parsed]
    for path, parsed in parsed_files:
        # A kernel source named inside a function counts only when the compile path uses that
        # function (gelu_and_mul.cc is compile_gelu_and_mul's, which only gemma calls).
        for src, outer in literal_sites(parsed, C_SUFFIXES):
            if outer is None or used_outside(outer[0], path, outer[1:], parsed_files):
                files.add(src)
                files.update(quoted_includes(src))
        for name, _ in env_reads(parsed):
            env_names.setdefault(name, None)
    registry = os.path.join(ctx.pe_dir, "kernel_registry")
    if any(p.startswith(registry + os.sep) for p in order):
        for root, _, names in os.walk(registry):
            files.update(os.path.join(root, n) for n in names if n.endswith(".json"))
    models = sorted({m for m in (ctx.model_of(p) for p in files) if m and m != ctx.model})
    env = {name: ctx.environ.get(name) for name in sorted(env_names)}
    return sorted(ctx.rel(p) for p in files), env, models
