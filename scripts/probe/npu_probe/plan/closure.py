"""The tree files and third-party packages a run imports, found by following import statements
(module level and inside functions), relative imports, spec_from_file_location loads and the
sys.path edits the files make."""

import ast
import dataclasses
import glob
import importlib.util
import os
import re
import sys

from npu_probe.plan.static.imports import imports_of, stdlib_names
from npu_probe.plan.static.parse import parse_file
from npu_probe.plan.static.paths import file_loads, sys_path_additions


def import_closure(ctx, roots, base_path=None):
    """Files (discovery order) and third-party packages {name: (file, line)} the
    roots import, following function-level imports, relative imports,
    spec_from_file_location loads and the sys.path edits the files make. An import that
    resolves to no tree file is a package; missing_imports() says which of those exist."""
    base = list(base_path or ctx.base_path)
    order, seen, extra, pending = [], set(), [], []
    packages = {}
    queue = []

    def add(path):
        path = os.path.normpath(path)
        if path not in seen and os.path.isfile(path):
            seen.add(path)
            order.append(path)
            queue.append(path)

    for r in roots:
        add(r)
    search = _Search(ctx.resolver, base, extra, stdlib_names())
    while True:
        while queue:
            path = queue.pop(0)
            parsed = parse_file(path)
            if parsed is None or not path.endswith(".py"):
                continue
            local = sys_path_additions(parsed)
            for d in local:
                if d not in extra and d not in base:
                    extra.append(d)
            for loaded, _ in file_loads(parsed):
                add(loaded)
            for ref in imports_of(parsed):
                files = search.resolve(ref, path, local)
                if files is None:
                    pending.append((ref, path))
                else:
                    for f in files:
                        add(f)
        still = []
        for ref, path in pending:  # later files may have widened sys.path
            parsed = parse_file(path)
            files = search.resolve(ref, path, sys_path_additions(parsed))
            if files is None:
                still.append((ref, path))
            else:
                for f in files:
                    add(f)
        pending = still
        if not queue:
            break
    for ref, path in pending:
        top = ref.module.split(".")[0]
        if ref.level:
            packages.setdefault("." * ref.level + ref.module, (path, ref.line))
            continue
        if not top or top in search.stdlib:
            continue
        packages.setdefault(top, (path, ref.line))
    return order, packages, extra


# What the mlir-air environment provides besides the packages a requirements file names
# (llama32_1b/requirements.txt: "the mlir-air base environment ... provides numpy, ml_dtypes,
# filelock, pyxrt, etc."): an import of one of these is third-party even where it is not installed
# (a runner that only plans).
BASE_ENVIRONMENT = ("numpy", "ml_dtypes", "filelock", "pyxrt", "air", "aie", "torch", "transformers",
                    "safetensors", "huggingface_hub", "tokenizers")


def missing_imports(ctx, packages):
    """[(module, file, line)] of the imports in `packages` (import_closure's) that resolve to
    neither a tree file nor a package: not installed here (importlib.util.find_spec, nothing
    imported), not named by a requirements file of the tree, not the base environment's, and not
    guarded by a `try: ... except ImportError`. A relative import that found no file is one."""
    declared = set(BASE_ENVIRONMENT) | _declared(ctx)
    out = []
    for name, (path, line) in sorted(packages.items()):
        if not name.startswith(".") and (name.lower() in declared or _installed(name)):
            continue
        if line in _guarded_lines(path):
            continue
        out.append((_dotted_at(path, line, name), path, line))
    return out


def _dotted_at(path, line, default):
    """The whole dotted name the import at `line` of `path` asks for (shared.infra.fa_headfirst)."""
    parsed = parse_file(path)
    for ref in imports_of(parsed) if parsed else ():
        if ref.line == line and ref.module.split(".")[0] == default.lstrip(".").split(".")[0]:
            return "." * ref.level + ref.module
    return default


def _installed(top):
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _declared(ctx):
    """Distribution names of the tree's requirements files, as import names (lower case, _ for -)."""
    names = set()
    for pattern in ("requirements*.txt", os.path.join("utils", "requirements*.txt")):
        for path in glob.glob(os.path.join(ctx.air_root, pattern)) + glob.glob(os.path.join(ctx.llms_dir, "*", pattern)):
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read(1 << 20)
            except OSError:
                continue
            for raw in text.splitlines():
                m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", raw.split("#")[0])
                if m:
                    names.add(m.group(1).lower().replace("-", "_").replace(".", "_"))
    return names


def _guarded_lines(path):
    """Lines of the import statements inside a try whose handlers catch ImportError (or wider)."""
    parsed = parse_file(path)
    if parsed is None or parsed.tree is None:
        return set()
    catches = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
    out = set()
    for node in ast.walk(parsed.tree):
        if not isinstance(node, ast.Try):
            continue
        names = set()
        for h in node.handlers:
            types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
            names.update("*" if t is None else getattr(t, "id", getattr(t, "attr", "")) for t in types)
        if names & catches or "*" in names:
            for stmt in node.body:
                out.update(n.lineno for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return out


@dataclasses.dataclass
class _Search:
    """Where the closure looks for a module: the run's sys.path (`base`), the directories the
    files read so far add to it (`extra`, growing), and the standard library's names."""

    resolver: object
    base: list
    extra: list
    stdlib: set

    def resolve(self, ref, path, local):
        """Tree files an ImportRef of `path` executes ([] for stdlib-only, None when not in the
        tree); `local` the sys.path additions `path` makes itself."""
        return _resolve_ref(self, ref, path, local)


def _resolve_ref(search, ref, path, local):
    r, base, extra, stdlib = search.resolver, search.base, search.extra, search.stdlib
    parts = [p for p in ref.module.split(".") if p]
    if ref.level:
        pkg = os.path.dirname(path)
        for _ in range(ref.level - 1):
            pkg = os.path.dirname(pkg)
        files = r.find_in(pkg, parts) if parts else []
        target = os.path.join(pkg, *parts)
    else:
        top = parts[0] if parts else ""
        if top in sys.builtin_module_names or top == "__future__":
            return []
        search = list(reversed(local)) + base + [e for e in extra if e not in base] + [os.path.dirname(path)]
        files, b = r.resolve(ref.module, search)
        if files is None:
            return [] if top in stdlib else None
        if not files and top in stdlib:
            return []  # a same-named directory without code does not shadow the stdlib module
        target = os.path.join(b, *parts)
    if files is None:
        return None
    files = list(files)
    for name in ref.names:
        sub = r.submodule(target, name)
        if sub:
            files.extend(sub)
    if not files and not ref.level:
        # Only a code-less directory matched: an installed package of that name
        # still wins over a namespace portion, so treat it as not in the tree.
        return None
    return files
