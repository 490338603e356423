"""Module-level names of a tree file (definitions, constants, imports) and small readers of
function and class bodies: returns, parameter defaults, dataclass fields, dict keys."""

import ast
import dataclasses
import re

from npu_probe.plan.static.imports import imports_of
from npu_probe.plan.static.parse import Parsed, memo
from npu_probe.plan.static.paths import dotted


@dataclasses.dataclass


class ModuleInfo:
    path: str
    parsed: Parsed
    defs: dict  # name -> FunctionDef/ClassDef node (module level)
    assigns: dict  # name -> (value node, line) (module level, last wins)
    imported: dict  # local name -> ImportRef, index into names (module level)


@memo


def module_info(parsed):
    defs, assigns, imported = {}, {}, {}
    if parsed.tree is not None:
        for node in _module_level(parsed.tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs[node.name] = node
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        assigns[t.id] = (node.value, node.lineno)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                assigns[node.target.id] = (node.value, node.lineno)
    for ref in imports_of(parsed):
        if not ref.top_level:
            continue
        if ref.names:
            for i, local in enumerate(ref.asnames):
                imported[local] = (ref, i)
        else:
            imported[ref.asnames[0]] = (ref, -1)
    return ModuleInfo(parsed.path, parsed, defs, assigns, imported)


def _module_level(body):
    """Statements at module level, looking inside if/try/with blocks."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody"):
                yield from _module_level(getattr(node, field, []) or [])
            for h in getattr(node, "handlers", []) or []:
                yield from _module_level(h.body)


def function_defs(tree, pattern):
    """Module-level (and class-level) functions whose name matches the regex."""
    rx = re.compile(pattern)
    out = []
    for node in _module_level(tree.body if tree else []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and rx.search(node.name):
            out.append(node)
    return out


def returns_of(fn):
    """Return statements of a function, not of functions nested in it."""
    out = []

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Return):
                out.append(child)
            walk(child)

    walk(fn)
    return out


def default_of_param(fn, name):
    """(default node, line) of parameter `name` of a FunctionDef, or (None, None)."""
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for arg, d in zip(positional, defaults):
        if arg.arg == name:
            return d, fn.lineno
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        if arg.arg == name:
            return d, fn.lineno
    return None, None


def class_fields(cls):
    """[(field, value node or None, line)] of the annotated fields of a class body."""
    out = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and dotted(value.func) in ("field", "dataclasses.field"):
                value = next((k.value for k in value.keywords if k.arg == "default"), None)
            out.append((node.target.id, value, node.lineno))
    return out


def dict_literal_keys(tree, key):
    """Lines where `key` is a key of a dict literal or the subscript of an assignment target."""
    lines = []
    if tree is None:
        return lines
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k in node.keys:
                if isinstance(k, ast.Constant) and k.value == key:
                    lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == key:
                    lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            if any(k.arg == key for k in node.keywords):
                lines.append(node.lineno)
    return sorted(set(lines))

