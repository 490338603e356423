"""Which of a file's C-source literals a compile path can reach: a path named inside a function
counts only when that function's name is referenced elsewhere in the files the compile path
imports (an import, a call, an attribute), so shared/infra/external_kernels.py's
compile_gelu_and_mul() puts gelu_and_mul.cc only into the models that call it."""

import ast
import os

from npu_probe.plan.static.parse import memo
from npu_probe.plan.static.paths import dotted, path_eval


@memo
def literal_sites(parsed, suffixes):
    """[(absolute path, outermost enclosing function as (name, first line, last line) or None)] for
    the existing files named by path expressions of the file whose names end in `suffixes`."""
    if parsed.tree is None or not any(sfx + q in parsed.text for sfx in suffixes for q in "\"'"):
        return []
    ev = path_eval(parsed)
    out = []

    def visit(node, outer):
        if outer is None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            outer = (node.name, node.lineno, getattr(node, "end_lineno", None) or node.lineno)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) or (
                isinstance(node, ast.Call) and dotted(node.func) == "os.path.join"):
            v = ev.eval(node)
            if v and v.endswith(suffixes) and os.path.isabs(v) and os.path.isfile(v) and (v, outer) not in out:
                out.append((v, outer))
        for child in ast.iter_child_nodes(node):
            visit(child, outer)

    visit(parsed.tree, None)
    return out


@memo
def name_uses(parsed):
    """{name: [line, ...]} for every name the file uses: Name loads, attribute names, imported names."""
    out = {}
    if parsed.tree is None:
        return out
    for node in ast.walk(parsed.tree):
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.alias):
            name = node.asname or node.name.split(".")[-1]
            out.setdefault(node.name.split(".")[-1], []).append(getattr(node, "lineno", 0))
        else:
            continue
        out.setdefault(name, []).append(getattr(node, "lineno", 0))
    return out


def used_outside(name, path, span, parsed_files):
    """Whether `name` is used in any of `parsed_files` [(path, parsed)] other than inside `span`
    (first, last line) of `path` (its own definition)."""
    for other, parsed in parsed_files:
        for line in name_uses(parsed).get(name, ()):
            if other != path or not (span[0] <= line <= span[1]):
                return True
    return False
