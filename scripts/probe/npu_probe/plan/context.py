"""The plan's view of one model in one tree: its layout, the static-reading caches the plan's
parts share, and name resolution across the tree's modules (import statements only, never run)."""

import ast
import os

from npu_probe.core.tree import resolve_tree
from npu_probe.plan.static.imports import ModuleResolver
from npu_probe.plan.static.names import module_info
from npu_probe.plan.static.parse import parse_file
from npu_probe.plan.static.paths import sys_path_additions


class Ctx:
    """One model in one tree, plus the static-reading caches the plan shares."""

    def __init__(self, model_dir, air_root, environ):
        self.environ = environ
        self._find_layout(model_dir, air_root)
        self.resolver = ModuleResolver()
        self.base_path = [self.model_dir, self.verify_dir, self.llms_dir, self.pe_dir]
        self.extra_path = []  # sys.path additions found in the run's import closure
        self._infos = {}

    def _find_layout(self, model_dir, air_root):
        # The probe's own rule for where the tree and the model are (core.tree.resolve_tree): one
        # rule for the plan and every probe step, never two that could disagree on a model dir.
        tree = resolve_tree(model_dir, air_root)
        self.llms_dir, self.verify_dir, self.model_dir = tree.llms_dir, tree.verify_dir, tree.model_dir
        self.pe_dir = os.path.dirname(tree.llms_dir)
        self.air_root = tree.air_root
        self.model = tree.model
        self.adapter = os.path.join(tree.model_dir, "verify_adapter.py")

    def rel(self, path):
        return os.path.relpath(path, self.air_root).replace(os.sep, "/")

    def where(self, path, line):
        return f"{self.rel(path)}:{line}" if line else self.rel(path)

    def model_file(self, suffix):
        p = os.path.join(self.model_dir, f"{self.model}_{suffix}.py")
        return p if os.path.isfile(p) else None

    def info(self, path):
        if path not in self._infos:
            parsed = parse_file(path)
            self._infos[path] = module_info(parsed) if parsed else None
        return self._infos[path]

    def model_of(self, path):
        """The model dir name a file lives in (a direct child of llms/), or None."""
        rel = os.path.relpath(path, self.llms_dir)
        if rel.startswith(".."):
            return None
        first = rel.split(os.sep)[0]
        d = os.path.join(self.llms_dir, first)
        return first if os.path.isfile(os.path.join(d, "verify_adapter.py")) else None

    # -- name resolution across modules (import statements only, never executed)

    def search_for(self, path):
        parsed = parse_file(path)
        local = list(reversed(sys_path_additions(parsed))) if parsed else []
        return local + self.base_path + self.extra_path + [os.path.dirname(path)]

    def resolve_module(self, ref, from_path):
        """The file a module-level ImportRef names (module .py or package __init__)."""
        if ref.level:
            base = os.path.dirname(from_path)
            for _ in range(ref.level - 1):
                base = os.path.dirname(base)
            files = self.resolver.find_in(base, ref.module.split(".")) if ref.module else []
            target = os.path.join(base, *ref.module.split(".")) if ref.module else base
        else:
            files, b = self.resolver.resolve(ref.module, self.search_for(from_path))
            target = os.path.join(b, *ref.module.split(".")) if files is not None else None
        if files is None:
            return None, None
        return (files[-1] if files else None), target

    def resolve_symbol(self, info, name, depth=0):
        """(ModuleInfo, def node or None for a module) that `name` means in `info`."""
        if info is None or depth > 8:
            return None
        if name in info.defs:
            return info, info.defs[name]
        if name in info.imported:
            ref, idx = info.imported[name]
            mod_file, target_dir = self.resolve_module(ref, info.path)
            if idx < 0:
                return (self.info(mod_file), None) if mod_file else None
            orig = ref.names[idx]
            if target_dir:  # `from pkg import submodule`
                sub = self.resolver.submodule(target_dir, orig)
                if sub:
                    return self.info(sub[-1]), None
            if mod_file and mod_file.endswith(".py"):
                return self.resolve_symbol(self.info(mod_file), orig, depth + 1)
            return None
        if name in info.assigns:
            value, _ = info.assigns[name]
            if isinstance(value, ast.Name) and value.id != name:
                return self.resolve_symbol(info, value.id, depth + 1)
        return None

    def resolve_callee(self, info, func):
        if isinstance(func, ast.Name):
            return self.resolve_symbol(info, func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            mod = self.resolve_symbol(info, func.value.id)
            if mod and mod[1] is None:
                return self.resolve_symbol(mod[0], func.attr)
        return None

    def const(self, info, node, env=None, depth=0):
        """Value of an expression built from literals and module constants (ValueError otherwise)."""
        if node is None or depth > 12:
            raise ValueError("unresolvable")
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if isinstance(node, ast.Name):
            if env and node.id in env:
                return env[node.id]
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            if info is not None and node.id in info.assigns:
                return self.const(info, info.assigns[node.id][0], None, depth + 1)
            if info is not None and node.id in info.imported:
                ref, idx = info.imported[node.id]
                mod_file, _ = self.resolve_module(ref, info.path)
                target = self.info(mod_file) if mod_file and idx >= 0 else None
                if target and ref.names[idx] in target.assigns:
                    return self.const(target, target.assigns[ref.names[idx]][0], None, depth + 1)
            raise ValueError(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            mod = self.resolve_symbol(info, node.value.id)
            if mod and mod[1] is None and node.attr in mod[0].assigns:
                return self.const(mod[0], mod[0].assigns[node.attr][0], None, depth + 1)
            raise ValueError(node.attr)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.const(info, node.operand, env, depth + 1)
        if isinstance(node, ast.BinOp):
            a = self.const(info, node.left, env, depth + 1)
            b = self.const(info, node.right, env, depth + 1)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.FloorDiv: lambda: a // b, ast.Div: lambda: a / b, ast.Mod: lambda: a % b}
            if type(node.op) in ops:
                try:
                    return ops[type(node.op)]()
                except (TypeError, ZeroDivisionError) as exc:
                    raise ValueError(str(exc)) from exc
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "float", "bool") \
                and len(node.args) == 1:
            cast = {"int": int, "float": float, "bool": bool}[node.func.id]
            return cast(self.const(info, node.args[0], env, depth + 1))
        raise ValueError("unresolvable")



def runner_sources(ctx):
    """The adapter plus the module build_runner is delegated to (air-mini binds it
    to a shared VerifyAdapter), where the per-layer records are built."""
    info = ctx.info(ctx.adapter)
    out = [ctx.adapter]
    if info is None or isinstance(info.defs.get("build_runner"), ast.FunctionDef):
        return out
    target = None
    if "build_runner" in info.assigns:
        value, _ = info.assigns["build_runner"]
        owner = value.value if isinstance(value, ast.Attribute) else value
        if isinstance(owner, ast.Name) and owner.id in info.assigns:
            made, _ = info.assigns[owner.id]
            if isinstance(made, ast.Call):
                target = ctx.resolve_callee(info, made.func)
        elif isinstance(owner, ast.Name):
            target = ctx.resolve_symbol(info, owner.id)
    elif "build_runner" in info.imported:
        target = ctx.resolve_symbol(info, "build_runner")
    if target and target[0] and target[0].path not in out:
        out.append(target[0].path)
    return out
