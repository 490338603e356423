"""Read an mlir-air tree without running it: parse, follow imports, evaluate paths.

Standard library only, and nothing here imports a module of the tree: the plan
(probe_plan.py) must work on a host that has neither the NPU packages nor the
Python version the tree needs. Everything is a best-effort static reading;
callers say where a value came from ("<file>:<line>") so a reader can check it.
"""

import ast
import dataclasses
import os
import re
import sys

# ---------------------------------------------------------------------------
# Parsing (with a cache: the plan parses the same shared/ files for every model)

PY_SUFFIX = ".py"

# SyntaxError texts that only mean "this Python is too old" (PEP 701 f-strings
# parse on 3.12+: nested same quotes, backslashes and comments inside {}).
_FSTRING_ERROR = re.compile(r"f-string", re.IGNORECASE)
# Version-only syntax recognisable from the failing line itself.
_LINE_SYNTAX_NEEDS = (
    (re.compile(r"^\s*type\s+[A-Za-z_]\w*(\[.*\])?\s*="), (3, 12), "type alias statement"),
    (re.compile(r"^\s*(async\s+)?def\s+[A-Za-z_]\w*\s*\["), (3, 12), "generic function (PEP 695)"),
    (re.compile(r"^\s*class\s+[A-Za-z_]\w*\s*\["), (3, 12), "generic class (PEP 695)"),
    (re.compile(r"^\s*except\s*\*"), (3, 11), "except* (PEP 654)"),
    (re.compile(r"^\s*match\s+[^=]+:\s*(#.*)?$"), (3, 10), "match statement (PEP 634)"),
)


@dataclasses.dataclass
class SyntaxIssue:
    line: int  # as the running Python reports it
    message: str
    needs: tuple = None  # (major, minor) when only a newer Python is needed
    feature: str = ""
    source_line: int = 0  # the line holding the construct (3.11 reports f-string errors a line late)


@dataclasses.dataclass
class Parsed:
    path: str
    text: str
    tree: ast.Module = None  # None when even the fallback could not parse
    issues: list = dataclasses.field(default_factory=list)  # SyntaxIssue, first is authoritative
    fallback: str = None  # None | "blanked" (ast after blanking version-only lines) | "regex"
    memo: dict = dataclasses.field(default_factory=dict)  # per-file facts, computed once


def source_lines(text):
    """Lines as Python numbers them (str.splitlines also splits on \\f, \\x1c, U+2028...)."""
    return re.split(r"\r\n|\r|\n", text)


_PARSE_CACHE = {}


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def parse_file(path):
    """Parsed for `path` (cached by mtime/size), or None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    hit = _PARSE_CACHE.get(key)
    if hit is None:
        text = read_text(path)
        if text is None:
            return None
        hit = parse_source(text, path)
        _PARSE_CACHE[key] = hit
    return hit


def classify_syntax_error(exc, lines):
    """SyntaxIssue for `exc`: `needs` is set when the code is valid on a newer Python."""
    lineno = exc.lineno or 0
    msg = " ".join(str(exc.msg or exc).split())
    if _FSTRING_ERROR.search(msg) and sys.version_info[:2] < (3, 12):
        return SyntaxIssue(lineno, msg, (3, 12), "f-string (PEP 701)", _fstring_line(lines, lineno))
    text = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    for pattern, needs, feature in _LINE_SYNTAX_NEEDS:
        if pattern.search(text) and sys.version_info[:2] < needs:
            return SyntaxIssue(lineno, msg, needs, feature, lineno)
    return SyntaxIssue(lineno, msg, source_line=lineno)


_FSTRING_START = re.compile(r"(?<![\w])(?:[rR][fF]|[fF][rR]?)[\"']")


def _fstring_line(lines, lineno):
    """The line where the failing f-string starts: Python 3.11 reports the error
    on the line after a string that ends its line, so look back a few lines."""
    for ln in range(min(lineno, len(lines)), max(0, lineno - 10), -1):
        if _FSTRING_START.search(lines[ln - 1]):
            return ln
    return lineno


def parse_source(text, path="<string>"):
    """Parse with the running Python; on a version-only error, blank the line and
    retry so later version-only lines are found too and the rest of the file can
    still be read with ast. Anything else falls back to a regex import scan."""
    result = Parsed(path=path, text=text)
    lines = source_lines(text)
    work = list(lines)
    for _ in range(64):  # a file with more version-only lines than this is not worth more
        try:
            tree = ast.parse("\n".join(work) + "\n", filename=path)
        except SyntaxError as exc:
            issue = classify_syntax_error(exc, work)
            if any(i.line == issue.line for i in result.issues):
                break  # blanking did not get past it
            if not result.issues or issue.needs:
                result.issues.append(issue)
            target = issue.source_line or issue.line
            if issue.needs is None or not (0 < target <= len(work)):
                break  # a real tree error (or a blanking artefact after one): stop here
            # Blanking keeps line numbers; `None` keeps call arguments and statements valid.
            indent = re.match(r"\s*", work[target - 1]).group(0)
            work[target - 1] = indent + "None"
            continue
        result.tree = tree
        result.fallback = "blanked" if result.issues else None
        return result
    result.fallback = "regex"
    return result


# ---------------------------------------------------------------------------
# Imports


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


def module_dir_of(files, base, dotted):
    """The directory a resolved dotted name names (for `from pkg import sub`)."""
    return os.path.join(base, *[p for p in dotted.split(".") if p])


# ---------------------------------------------------------------------------
# Static path evaluation (sys.path edits, Path(__file__).parent / "x" chains)


def _is_name(node, *names):
    return isinstance(node, ast.Name) and node.id in names


def _dotted(node):
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
        fn = _dotted(node.func)
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


def _memo(fn):
    """Cache a per-file fact on the Parsed (the parse cache keeps it across plans)."""
    def wrapper(parsed, *args):
        key = (fn.__name__,) + args
        if key not in parsed.memo:
            parsed.memo[key] = fn(parsed, *args)
        return parsed.memo[key]
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@_memo
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
        if node.func.attr not in ("insert", "append") or _dotted(node.func.value) != "sys.path":
            continue
        arg = node.args[-1] if node.args else None
        if arg is None:
            continue
        for v in ev.values(arg):
            if os.path.isabs(v) and v not in out:
                out.append(v)
    return out


@_memo
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


@_memo
def path_literals(parsed, suffixes):
    """Existing files named by path expressions of the file whose names end in `suffixes`."""
    if parsed.tree is None or not any(sfx + q in parsed.text for sfx in suffixes for q in "\"'"):
        return []
    ev = path_eval(parsed)
    out = []
    for node in ast.walk(parsed.tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) or (
                isinstance(node, ast.Call) and _dotted(node.func) == "os.path.join"):
            v = ev.eval(node)
            if v and v.endswith(suffixes) and os.path.isabs(v) and os.path.isfile(v) and v not in out:
                out.append(v)
    return out


# ---------------------------------------------------------------------------
# Environment variables a file reads


def _environ_base(node):
    d = _dotted(node)  # os.environ, environ, or an alias such as _os.environ
    return d is not None and (d == "environ" or d.endswith(".environ"))


@_memo
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
            elif (_dotted(fn) or "").split(".")[-1] == "getenv":
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


# ---------------------------------------------------------------------------
# Module-level names: definitions, constants, imports


@dataclasses.dataclass
class ModuleInfo:
    path: str
    parsed: Parsed
    defs: dict  # name -> FunctionDef/ClassDef node (module level)
    assigns: dict  # name -> (value node, line) (module level, last wins)
    imported: dict  # local name -> ImportRef, index into names (module level)


@_memo
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
            if isinstance(value, ast.Call) and _dotted(value.func) in ("field", "dataclasses.field"):
                value = next((k.value for k in value.keywords if k.arg == "default"), None)
            out.append((node.target.id, value, node.lineno))
    return out


def literal(node):
    """ast.literal_eval of a node, or raise ValueError."""
    if node is None:
        raise ValueError("no value")
    return ast.literal_eval(node)


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


# ---------------------------------------------------------------------------
# Makefiles


@dataclasses.dataclass
class Makefile:
    path: str
    vars: dict  # name -> (raw value, line)
    recipes: dict  # target -> [(line, command text with continuations joined)]


_RE_MAKE_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\?=|:=|::=|\+=|=)\s?(.*)$")
_RE_MAKE_TARGET = re.compile(r"^([A-Za-z0-9_.%/-]+(?:\s+[A-Za-z0-9_.%/-]+)*)\s*:(?!=)")


def parse_makefile(path, environ):
    """Variables and recipes of a Makefile; ifdef/ifndef follow `environ` and the
    file's own variables (as make does), ifeq/ifneq compare expanded text."""
    text = read_text(path)
    if text is None:
        return None
    lines = source_lines(text)
    vars_, recipes = {}, {}
    stack = []  # (active, taken) per open conditional
    target = None
    i = 0
    while i < len(lines):
        start = i
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i].strip()
        i += 1
        active = all(a for a, _ in stack)
        if line.startswith("\t"):
            if target and active:
                recipes[target].append((start + 1, line.strip()))
            continue
        stripped = line.strip()
        word = stripped.split(None, 1)[0] if stripped else ""
        if word in ("ifdef", "ifndef", "ifeq", "ifneq"):
            cond = _make_condition(word, stripped[len(word):].strip(), vars_, environ) if active else False
            stack.append((cond, cond))
            continue
        if word == "else" and stack:
            a, taken = stack[-1]
            rest = stripped[4:].strip()
            if rest:  # else ifdef X
                w = rest.split(None, 1)[0]
                cond = (not taken) and _make_condition(w, rest[len(w):].strip(), vars_, environ)
                stack[-1] = (cond, taken or cond)
            else:
                stack[-1] = (not taken, True)
            continue
        if word == "endif" and stack:
            stack.pop()
            continue
        if not active or not stripped or stripped.startswith("#"):
            continue
        m = _RE_MAKE_ASSIGN.match(stripped)
        if m:
            name, op, value = m.groups()
            value = value.split(" #")[0].rstrip() if "#" in value else value.rstrip()
            if op == "?=" and name in vars_:
                continue
            if op == "+=" and name in vars_:
                value = vars_[name][0] + " " + value
            vars_[name] = (value, start + 1)
            target = None
            continue
        m = _RE_MAKE_TARGET.match(stripped)
        if m and not stripped.startswith("."):
            target = m.group(1).split()[0]
            recipes.setdefault(target, [])
        elif m:
            target = None
    return Makefile(path, vars_, recipes)


def _make_condition(word, arg, vars_, environ):
    if word in ("ifdef", "ifndef"):
        name = arg.strip()
        defined = bool(vars_.get(name, ("",))[0].strip()) or bool(environ.get(name))
        return defined if word == "ifdef" else not defined
    m = re.match(r"^\((.*),(.*)\)$", arg) or re.match(r"^[\"'](.*)[\"']\s+[\"'](.*)[\"']$", arg)
    if not m:
        return True
    a = make_expand(m.group(1).strip(), vars_, environ)[0]
    b = make_expand(m.group(2).strip(), vars_, environ)[0]
    return (a == b) if word == "ifeq" else (a != b)


def _split_args(s):
    """Split make function arguments on top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def make_expand(text, vars_, environ, depth=0):
    """(expanded text, [variables whose value ended up in it]). Knows $(VAR),
    ${VAR} and $(if c,a,b); other functions stay as written."""
    used = []
    if depth > 20:
        return text, used
    out = ""
    i = 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text) and text[i + 1] in "({":
            close = ")" if text[i + 1] == "(" else "}"
            j, level = i + 2, 1
            while j < len(text) and level:
                if text[j] == text[i + 1]:
                    level += 1
                elif text[j] == close:
                    level -= 1
                j += 1
            inner = text[i + 2:j - 1]
            if inner.startswith("if "):
                parts = _split_args(inner[3:])
                cond, _ = make_expand(parts[0].strip(), vars_, environ, depth + 1)
                pick = parts[1] if cond.strip() else (parts[2] if len(parts) > 2 else "")
                val, u = make_expand(pick.strip(), vars_, environ, depth + 1)
                out += val
                used += u
            elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", inner):
                raw = vars_.get(inner, (environ.get(inner, ""), None))[0]
                val, u = make_expand(raw, vars_, environ, depth + 1)
                out += val
                used += [inner] + u
            else:
                out += text[i:j]
            i = j
        else:
            out += text[i]
            i += 1
    return out, used


_RE_CMD_ARG = re.compile(r"""--([\w-]+)(?:=|\s+)("(?:[^"\\]|\\.)*"|'[^']*'|\S+)""")


def command_args(cmd):
    """{option: raw value} of `--opt value` / `--opt=value` pairs in a shell command."""
    out = {}
    for m in _RE_CMD_ARG.finditer(cmd):
        out.setdefault(m.group(1), m.group(2))
    return out


def unquote(s):
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1]
    return s


# ---------------------------------------------------------------------------
# C/C++ sources


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
