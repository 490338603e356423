"""The model config, read statically: build_config()'s return followed through the adapter's
imports to the config class, and that class's field defaults."""

import ast

from npu_probe.plan.static.imports import ImportRef
from npu_probe.plan.static.names import class_fields, default_of_param, returns_of


CONFIG_FIELDS = ("n_layers", "emb_dim", "n_heads", "n_kv_heads", "head_dim", "hidden_dim")


def read_config(ctx):
    """(config dict or None, source, why-not). Follows build_config()'s return
    through the adapter's imports to the config class and reads field defaults."""
    info = ctx.info(ctx.adapter)
    fn = info.defs.get("build_config") if info else None
    if fn is not None and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(fn.returns, ast.Name) and fn.returns.id in ("dict", "Dict"):
            return None, None, "build_config() returns a dict, not a decoder config class"
        for ret in returns_of(fn):
            if isinstance(ret.value, ast.Call):
                got = config_from_call(ctx, info, ret.value, {})
                if got:
                    return got[0], got[1], None
            elif isinstance(ret.value, ast.Dict):
                return None, None, "build_config() returns a dict, not a decoder config class"
        return None, None, f"cannot follow build_config() ({ctx.where(ctx.adapter, fn.lineno)}) statically"
    # build_config bound to something else (air-mini: _ADAPTER.build_config); the
    # tree's convention is the LlamaConfig dataclass of <model>_weights.py.
    weights = ctx.model_file("weights")
    winfo = ctx.info(weights) if weights else None
    if winfo:
        for name, node in winfo.defs.items():
            if isinstance(node, ast.ClassDef) and name.endswith("Config"):
                got = config_from_class(ctx, winfo, node, {})
                if got:
                    bound = "is not a def" if fn is None and "build_config" not in (info.assigns if info else {}) \
                        else "is bound indirectly"
                    return got[0], got[1] + f" (by convention: build_config {bound})", None
    return None, None, "no build_config() in verify_adapter.py and no *Config class in the weights module"


def config_from_call(ctx, info, call, env, scope=None, depth=0):
    """(config dict, where) for a call that builds a config (a *Config(...) call, or a function
    returning one), else None. `scope` is the function holding the call: its own imports
    (`from qwen3_4b_weights import LlamaConfig` inside qwen3_8b_config) resolve the callee."""
    if depth > 4:
        return None
    target = _local_callee(ctx, info, call.func, scope) or ctx.resolve_callee(info, call.func)
    if not target or target[1] is None:
        return None
    tinfo, node = target
    overrides = {}
    for kw in call.keywords:
        if kw.arg:
            try:
                overrides[kw.arg] = ctx.const(info, kw.value, env)
            except ValueError:
                pass
    if isinstance(node, ast.ClassDef):
        fields = [f for f, _, _ in class_fields(node)]
        for i, a in enumerate(call.args[:len(fields)]):
            try:
                overrides[fields[i]] = ctx.const(info, a, env)
            except ValueError:
                pass
        return config_from_class(ctx, tinfo, node, overrides)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        inner = {}
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            d, _ = default_of_param(node, a.arg)
            if d is not None:
                try:
                    inner[a.arg] = ctx.const(tinfo, d)
                except ValueError:
                    pass
        inner.update(overrides)
        for ret in returns_of(node):
            if isinstance(ret.value, ast.Call):
                got = config_from_call(ctx, tinfo, ret.value, inner, node, depth + 1)
                if got:
                    return got
    return None


def _local_callee(ctx, info, func, scope):
    """(ModuleInfo, def node) for a name imported inside `scope` (a function body), or None."""
    if scope is None or not isinstance(func, ast.Name):
        return None
    for node in ast.walk(scope):
        if not isinstance(node, ast.ImportFrom) or node.level:
            continue
        for a in node.names:
            if (a.asname or a.name) != func.id:
                continue
            ref = ImportRef(node.module or "", (a.name,), 0, node.lineno, False, (func.id,))
            mod_file, _ = ctx.resolve_module(ref, info.path)
            minfo = ctx.info(mod_file) if mod_file and mod_file.endswith(".py") else None
            if minfo is not None and a.name in minfo.defs:
                return minfo, minfo.defs[a.name]
    return None


def config_from_class(ctx, info, cls, overrides):
    values = {}
    for name, value, _ in class_fields(cls):
        try:
            values[name] = ctx.const(info, value)
        except ValueError:
            pass
    values.update(overrides)
    if not all(isinstance(values.get(f), int) and not isinstance(values.get(f), bool) for f in CONFIG_FIELDS):
        return None
    cfg = {f: int(values[f]) for f in CONFIG_FIELDS}
    if isinstance(values.get("vocab_size"), int):
        cfg["vocab_size"] = int(values["vocab_size"])
    else:
        cfg["vocab_size"] = None
    cfg["rope_base"] = float(values["rope_base"]) if isinstance(values.get("rope_base"), (int, float)) else None
    cfg["qkv_bias"] = bool(values.get("qkv_bias", False))
    cfg["qk_norm"] = bool(values.get("qk_norm", False))
    for key in ("qkv_bias", "qk_norm"):  # a class that does not declare the flag: absent, not False
        if key not in values:
            cfg.pop(key)
    if isinstance(values.get("rms_norm_eps"), (int, float)) and not isinstance(values.get("rms_norm_eps"), bool):
        cfg["rms_norm_eps"] = float(values["rms_norm_eps"])
    return cfg, f"{ctx.where(info.path, cls.lineno)} {cls.name}"
