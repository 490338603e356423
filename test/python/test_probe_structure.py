"""The probe package's shape (scripts/probe/npu_probe), read from its source with `ast`:
no import cycle (imports inside functions count), subpackages that import only those below
them, no module over 500 lines, no function over 6 parameters; and `plan` and `--help` run on
the standard library alone, importing nothing of the model tree. Nothing is exempt: the
exception lists below are empty and a new entry needs its reason beside it."""

import ast
import os
import subprocess
import sys
import unittest

from test.python.support import PROBE, REPO

PACKAGE = "npu_probe"
MAX_LINES = 500
MAX_PARAMS = 6
LONG_MODULES = {}  # "npu_probe.x.y": "why it cannot be split"
MANY_PARAMS = {}  # "npu_probe.x.y:function": "why it needs more"

# Each subpackage may import only itself and those listed before it (the stages in order);
# cli, args and __main__ sit on top.
LAYERS = ("core", "plan", "emulate", "lens", "reference", "run", "bisect", ("args",), ("cli", "__main__"))


def modules():
    """{dotted name: path} of every module of the package (a package is its __init__)."""
    out = {}
    for d, _, files in os.walk(os.path.join(PROBE, PACKAGE)):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, PROBE)[:-3].replace(os.sep, ".")
                out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def parse(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), filename=path)


def imports_of(name, path, known):
    """Modules of the package `name` imports anywhere in its file, function bodies included."""
    is_pkg = path.endswith("__init__.py")
    out = set()
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_pkg else name.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            # `from pkg import sub` imports the submodule sub; `from mod import f` the module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for t in targets:
            while t not in known and "." in t:
                t = t.rsplit(".", 1)[0]
            if t in known and t != name:
                out.add(t)
    return out


def find_cycles(graph):
    """Every cycle a depth-first walk meets (each as a path that ends where it starts)."""
    state, stack, cycles = {}, [], []

    def visit(u):
        state[u] = "open"
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == "open":
                cycles.append(stack[stack.index(v):] + [v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = "done"

    for u in sorted(graph):
        if u not in state:
            visit(u)
    return cycles


def param_count(fn):
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def layer_of(name):
    part = name.split(".")[1] if "." in name else "__init__"
    for i, layer in enumerate(LAYERS):
        if part in (layer if isinstance(layer, tuple) else (layer,)):
            return i
    return -1


class StructureTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mods = modules()
        cls.graph = {m: imports_of(m, p, cls.mods) for m, p in cls.mods.items()}

    def test_the_package_is_there(self):
        self.assertIn("npu_probe.cli", self.mods)
        self.assertGreater(len(self.mods), 40)
        flat = [f for f in os.listdir(PROBE) if f.endswith(".py") and f != "__main__.py"]
        self.assertEqual(flat, [], "modules beside __main__.py belong in the package")

    def test_the_checker_sees_cycles_and_function_level_imports(self):
        self.assertEqual(find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}), [["a", "b", "c", "a"]])
        self.assertEqual(find_cycles({"a": {"b"}, "b": set()}), [])
        # the edge from a function-level import is seen (the run stages import numpy-heavy code lazily)
        self.assertIn("npu_probe.plan.build", self.graph["npu_probe.cli"])
        self.assertIn("npu_probe.emulate.checkpoint", self.graph["npu_probe.run.config"])

    def test_no_import_cycle(self):
        self.assertEqual(find_cycles(self.graph), [])

    def test_subpackages_import_only_those_below_them(self):
        wrong = sorted(f"{u} -> {v}" for u, vs in self.graph.items() for v in vs
                       if layer_of(v) > layer_of(u) or layer_of(u) < 0 or layer_of(v) < 0)
        self.assertEqual(wrong, [])

    def test_no_module_over_500_lines(self):
        long = {}
        for name, path in self.mods.items():
            with open(path, encoding="utf-8") as f:
                n = len(f.read().splitlines())
            if n > MAX_LINES and name not in LONG_MODULES:
                long[name] = n
        self.assertEqual(long, {})

    def test_no_function_over_6_parameters(self):
        many = {}
        for name, path in self.mods.items():
            for node in ast.walk(parse(path)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    where = f"{name}:{getattr(node, 'name', 'lambda')}"
                    if param_count(node) > MAX_PARAMS and where not in MANY_PARAMS:
                        many[f"{where} (line {node.lineno})"] = param_count(node)
        self.assertEqual(many, {})
        self.assertEqual(param_count(ast.parse("def f(self, a, b=1, *c, d, **e): pass").body[0]), 5)

    def test_plan_and_help_need_only_the_standard_library(self):
        """Under a Python whose numpy import fails, `plan` and `--help` still run, and import
        no module of the tree; the trace of imported modules is checked too."""
        model = os.path.join(REPO, "examples", "air-mini", "programming_examples", "llms", "tiny_qwen3")
        code = (
            "import sys, runpy\n"
            "class NoNumpy:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('numpy', 'ml_dtypes', 'torch', 'transformers'):\n"
            "            raise ImportError('blocked: ' + name)\n"
            "sys.meta_path.insert(0, NoNumpy())\n"
            "sys.argv = ['probe'] + sys.argv[1:]\n"
            "try:\n"
            f"    runpy.run_path({PROBE!r}, run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    code = e.code\n"
            "tree = sorted(m for m in sys.modules if m.split('.')[0] in ('tiny_qwen3', 'verify_adapter', 'shared', 'runners', 'verify'))\n"
            "print('EXIT', code, 'TREE', tree, file=sys.stderr)\n"
        )
        for args in (["plan", "--model-dir", model, "--json"], ["--help"], ["block", "--help"]):
            with self.subTest(args=args):
                r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
                self.assertIn("EXIT 0 TREE []", r.stderr, r.stderr[-2000:])
                self.assertNotIn("blocked", r.stderr)


if __name__ == "__main__":
    unittest.main()
