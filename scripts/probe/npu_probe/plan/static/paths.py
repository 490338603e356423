"""Path-valued expressions of a tree file, evaluated without running it: sys.path edits,
`Path(__file__).parent / "x"` chains, files loaded with spec_from_file_location, C sources it
names (and what those #include), and the environment variables it reads."""

import ast
import os
import re

from npu_probe.plan.static.imports import iter_statements
from npu_probe.plan.static.parse import memo, read_text


def dotted(node):
    """'os.path.join' for the expression os.path.join, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class PathEval:
    """Evaluates path-valued expressions of one file to absolute strings.

    Knows __file__, Path()/str()/os.fspath, .parent/.parents[n]/.resolve(),
    os.path.{dirname,join,abspath,realpath,normpath}, `a / "b"` and names bound
    to such expressions anywhere in the file (last binding wins)."""

    def __init__(self, parsed):
        self.file = os.path.abspath(parsed.path)
        self.tree = parsed.tree
        self.env = {}
        self.loops = {}  # loop variable -> element nodes of the literal it iterates
        if self.tree is not None:
            self._bind()

    def _bind(self):
        assigns = []
        for node, _ in iter_statements(self.tree.body):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                assigns.append((node.lineno, node.targets[0].id, node.value))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                assigns.append((node.lineno, node.target.id, node.value))
            elif isinstance(node, ast.For):
                self._bind_loop(node.target, node.iter)
        for _, name, value in sorted(assigns, key=lambda t: t[0]):
            v = self.eval(value)
            if v is not None:
                self.env[name] = v

    def _bind_loop(self, target, it):
        if not isinstance(it, (ast.Tuple, ast.List)):
            return
        if isinstance(target, ast.Name):
            self.loops.setdefault(target.id, []).extend(it.elts)
        elif isinstance(target, ast.Tuple):
            for idx, t in enumerate(target.elts):
                if not isinstance(t, ast.Name):
                    continue
                for elt in it.elts:
                    if isinstance(elt, (ast.Tuple, ast.List)) and len(elt.elts) == len(target.elts):
                        self.loops.setdefault(t.id, []).append(elt.elts[idx])

    def eval(self, node):
        try:
            return self._eval(node, 0)
        except RecursionError:
            return None

    def _eval(self, node, depth):
        if depth > 40:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return self.file
            return self.env.get(node.id)
        if isinstance(node, ast.Attribute):
            if node.attr == "parent":
                base = self._eval(node.value, depth + 1)
                return os.path.dirname(base) if base and os.path.isabs(base) else None
            return None
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute) and node.value.attr == "parents":
                base = self._eval(node.value.value, depth + 1)
                idx = node.slice
                if base and isinstance(idx, ast.Constant) and isinstance(idx.value, int):
                    for _ in range(idx.value + 1):
                        base = os.path.dirname(base)
                    return base
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left = self._eval(node.left, depth + 1)
            right = self._eval(node.right, depth + 1)
            if left and right is not None and os.path.isabs(left):
                return os.path.normpath(os.path.join(left, right))
            return None
        if isinstance(node, ast.Call):
            return self._eval_call(node, depth)
        return None

    def _eval_call(self, node, depth):
        fn = dotted(node.func)
        args = node.args
        if fn in ("Path", "pathlib.Path", "PurePath", "pathlib.PurePath", "os.path.join", "PosixPath"):
            vals = [self._eval(a, depth + 1) for a in args]
            if not vals or any(v is None for v in vals) or not os.path.isabs(vals[0]):
                return None
            return os.path.normpath(os.path.join(*vals))
        if fn in ("str", "os.fspath", "os.path.abspath", "os.path.realpath", "os.path.normpath") and len(args) == 1:
            v = self._eval(args[0], depth + 1)
            return os.path.normpath(v) if v and os.path.isabs(v) else (v if fn in ("str", "os.fspath") else None)
        if fn == "os.path.dirname" and len(args) == 1:
            v = self._eval(args[0], depth + 1)
            return os.path.dirname(v) if v and os.path.isabs(v) else None
        if isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr in ("resolve", "absolute", "expanduser") and not args:
                return self._eval(node.func.value, depth + 1)
            if attr == "joinpath":
                base = self._eval(node.func.value, depth + 1)
                vals = [self._eval(a, depth + 1) for a in args]
                if base and os.path.isabs(base) and all(v is not None for v in vals):
                    return os.path.normpath(os.path.join(base, *vals))
        return None

    def values(self, node):
        """All values a sys.path argument can take (a loop variable gives several)."""
        if isinstance(node, ast.Name) and node.id in self.loops and node.id not in self.env:
            return [v for v in (self.eval(e) for e in self.loops[node.id]) if v]
        v = self.eval(node)
        return [v] if v else []


def path_eval(parsed):
    if "path_eval" not in parsed.memo:
        parsed.memo["path_eval"] = PathEval(parsed)
    return parsed.memo["path_eval"]


@memo


def sys_path_additions(parsed):
    """Absolute directories the file puts on sys.path (insert or append)."""
    if parsed.tree is None or "sys.path" not in parsed.text:
        return []
    ev = path_eval(parsed)
    out = []
    for stmt, _ in iter_statements(parsed.tree.body):
        node = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("insert", "append") or dotted(node.func.value) != "sys.path":
            continue
        arg = node.args[-1] if node.args else None
        if arg is None:
            continue
        for v in ev.values(arg):
            if os.path.isabs(v) and v not in out:
                out.append(v)
    return out


@memo


def file_loads(parsed):
    """Files loaded with importlib.util.spec_from_file_location(name, <path>)."""
    if parsed.tree is None or "spec_from_file_location" not in parsed.text:
        return []
    ev = path_eval(parsed)
    out = []
    for node in ast.walk(parsed.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "spec_from_file_location" and len(node.args) >= 2:
            for v in ev.values(node.args[1]):
                if os.path.isabs(v) and os.path.isfile(v):
                    out.append((v, node.lineno))
    return out


# ---------------------------------------------------------------------------
# Environment variables a file reads


def _environ_base(node):
    d = dotted(node)  # os.environ, environ, or an alias such as _os.environ
    return d is not None and (d == "environ" or d.endswith(".environ"))


@memo


def env_reads(parsed):
    """[(NAME, line)] for os.environ.get/[...]/setdefault/pop, os.getenv and `in os.environ`."""
    if "environ" not in parsed.text and "getenv" not in parsed.text:
        return []
    if parsed.tree is None:
        return [(m.group(1), parsed.text.count("\n", 0, m.start()) + 1)
                for m in re.finditer(r"(?:environ\.get|getenv|environ\[)\(?\s*[\"']([A-Za-z_]\w*)[\"']", parsed.text)]
    ev = path_eval(parsed)
    out = []

    def keys(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name) and node.id in ev.loops:
            return [e.value for e in ev.loops[node.id] if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return []

    for node in ast.walk(parsed.tree):
        key_node = None
        if isinstance(node, ast.Call) and node.args:
            fn = node.func
            if isinstance(fn, ast.Attribute) and fn.attr in ("get", "setdefault", "pop") and _environ_base(fn.value):
                key_node = node.args[0]
            elif (dotted(fn) or "").split(".")[-1] == "getenv":
                key_node = node.args[0]
        elif isinstance(node, ast.Subscript) and _environ_base(node.value):
            key_node = node.slice
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                and _environ_base(node.comparators[0]):
            key_node = node.left
        if key_node is not None:
            for k in keys(key_node):
                out.append((k, node.lineno))
    return out



_RE_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def quoted_includes(path, seen=None):
    """Files named by #include "x" (resolved beside the including file), recursively."""
    seen = set() if seen is None else seen
    out = []
    text = read_text(path) or ""
    for name in _RE_INCLUDE.findall(text):
        p = os.path.normpath(os.path.join(os.path.dirname(path), name))
        if p not in seen and os.path.isfile(p):
            seen.add(p)
            out.append(p)
            out.extend(quoted_includes(p, seen))
    return out
