"""Import statements of a tree file, and where a dotted module name resolves in a search path
(regular packages and namespace directories), as the import system would."""

import ast
import dataclasses
import os
import re
import sys

from npu_probe.plan.static.parse import PY_SUFFIX, source_lines


@dataclasses.dataclass(frozen=True)


class ImportRef:
    module: str  # dotted name ("" for `from . import x`)
    names: tuple  # names after `from ... import` (empty for `import x`)
    level: int  # relative-import dots
    line: int
    top_level: bool  # at module level (not inside a def/class body)
    asnames: tuple = ()  # local names, parallel to names (or the bound name for `import`)


def iter_statements(body, top=True):
    """(statement, at module level) for every statement, nested bodies included.
    Statements only: imports, assignments and sys.path edits are statements, and
    not descending into expressions keeps a whole-tree reading fast."""
    for node in body:
        yield node, top
        inner = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(node, field, None)
            if isinstance(sub, list):
                yield from iter_statements(sub, inner)
        for h in getattr(node, "handlers", None) or []:
            yield from iter_statements(h.body, inner)
        for case in getattr(node, "cases", None) or []:
            yield from iter_statements(case.body, inner)


def imports_of(parsed):
    """Every import statement of the file, module level and inside functions."""
    if "imports" not in parsed.memo:
        parsed.memo["imports"] = _imports(parsed)
    return parsed.memo["imports"]


def _imports(parsed):
    if parsed.tree is None:
        return regex_imports(parsed.text)
    out = []
    for node, top in iter_statements(parsed.tree.body):
        if isinstance(node, ast.Import):
            for a in node.names:
                out.append(ImportRef(a.name, (), 0, node.lineno, top, (a.asname or a.name.split(".")[0],)))
        elif isinstance(node, ast.ImportFrom):
            out.append(ImportRef(node.module or "", tuple(a.name for a in node.names), node.level or 0,
                                 node.lineno, top, tuple(a.asname or a.name for a in node.names)))
    return out


_RE_FROM = re.compile(r"^(\s*)from\s+(\.*)([\w.]*)\s+import\s+(\(?)(.*)$")
_RE_IMPORT = re.compile(r"^(\s*)import\s+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*)")


def regex_imports(text):
    """Import lines of a file ast cannot read (parenthesised lists included)."""
    out = []
    lines = source_lines(text)
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _RE_FROM.match(line)
        if m:
            indent, dots, mod, paren, rest = m.groups()
            start = i
            body = rest
            if paren:
                while ")" not in body and i + 1 < len(lines):
                    i += 1
                    body += " " + lines[i]
                body = body.split(")")[0]
            names, asnames = [], []
            for part in body.split("#")[0].split(","):
                bits = part.split()
                if bits and re.fullmatch(r"[\w*]+", bits[0]):
                    names.append(bits[0])
                    asnames.append(bits[2] if len(bits) >= 3 and bits[1] == "as" else bits[0])
            out.append(ImportRef(mod, tuple(names), len(dots), start + 1, not indent, tuple(asnames)))
        else:
            m = _RE_IMPORT.match(line)
            if m:
                indent = m.group(1)
                for part in m.group(2).split(","):
                    bits = part.split()
                    out.append(ImportRef(bits[0], (), 0, i + 1, not indent,
                                         (bits[2] if len(bits) == 3 else bits[0].split(".")[0],)))
        i += 1
    return out


def stdlib_names():
    names = set(getattr(sys, "stdlib_module_names", ()))
    names.update(sys.builtin_module_names)
    names.add("__future__")
    return names


class ModuleResolver:
    """Find a dotted module in a list of directories, as the import system would
    (regular packages and namespace directories); returns the files it executes."""

    def __init__(self):
        self._isfile = {}
        self._isdir = {}

    def isfile(self, p):
        v = self._isfile.get(p)
        if v is None:
            v = self._isfile[p] = os.path.isfile(p)
        return v

    def isdir(self, p):
        v = self._isdir.get(p)
        if v is None:
            v = self._isdir[p] = os.path.isdir(p)
        return v

    def find_in(self, base, parts):
        """Files executed importing `parts` from directory `base` (package
        __init__.py files on the way, then the module), or None."""
        files = []
        cur = base
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            pkg = os.path.join(cur, part)
            if self.isdir(pkg):
                init = os.path.join(pkg, "__init__.py")
                if self.isfile(init):
                    files.append(init)
                if last:
                    return files  # a package (regular or namespace)
                cur = pkg
                continue
            mod = pkg + PY_SUFFIX
            if last and self.isfile(mod):
                files.append(mod)
                return files
            return None
        return files

    def resolve(self, dotted, search):
        """(files, base dir) of the first directory in `search` holding `dotted`."""
        parts = [p for p in dotted.split(".") if p]
        if not parts:
            return None, None
        for base in search:
            files = self.find_in(base, parts)
            if files is not None:
                return files, base
        return None, None

    def submodule(self, package_dir, name):
        """Files for `from package import name` when `name` is a submodule."""
        return self.find_in(package_dir, [name]) if name != "*" else None

