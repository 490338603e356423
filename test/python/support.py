"""Shared by the probe test files: run `python3 scripts/probe ...` as the TypeScript side does,
find the real tree, and say what a skipped test needs (scripts/test/pyunit.py reads
"needs <need>: <why>"; under CI=true a need .ci/run provides may not be skipped)."""

import importlib.util
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(REPO, "scripts", "probe")
# `npm run test:fast` leaves out what needs torch or the real tree.
FAST = os.environ.get("NPU_BLOCK_GATE_TEST_FAST") == "1"
NO_TRANSFORMERS_VAR = "NPU_BLOCK_GATE_TEST_PYTHON_NO_TRANSFORMERS"


def needs(need, why):
    """A skip reason the runner counts: need is one of test/helpers/skip.ts's Need names."""
    return f"needs {need}: {why}"


def run_probe(*args, env=None, drop=("AIR_MINI_INJECT",), python=None):
    """Run the probe in a subprocess (with `python`, else this interpreter); `drop` names
    variables of this process it must not inherit."""
    e = dict(os.environ)
    for k in drop:
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([python or sys.executable, PROBE, *args], capture_output=True, text=True, env=e, timeout=600)


def find_mlir_air():
    """The real Xilinx/mlir-air tree: $NPU_BLOCK_GATE_MLIR_AIR (your own checkout), else
    shared/mlir-air beside the checkout (where CI lays ../shared out). Returned even when
    absent, so a skip message can name it."""
    return os.environ.get("NPU_BLOCK_GATE_MLIR_AIR") or os.path.join(os.path.dirname(REPO), "shared", "mlir-air")


def missing_real_tree(rel=os.path.join("programming_examples", "llms", "verify")):
    """A skip reason when the real tree (with `rel` in it) is not here or test:fast leaves it out, else None."""
    if FAST:
        return needs("real-tree", "npm run test:fast leaves out what needs the real mlir-air tree")
    root = find_mlir_air()
    if os.path.exists(os.path.join(root, rel)):
        return None
    return needs("real-tree", f"the real mlir-air tree is not at {root} (no {rel}; set NPU_BLOCK_GATE_MLIR_AIR to your mlir-air checkout)")


def missing_modules(names, need="torch"):
    """A skip reason when this Python lacks any of `names` (or test:fast leaves torch out), else None."""
    if FAST and need == "torch":
        return needs("torch", "npm run test:fast leaves out what needs torch and transformers")
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    if not missing:
        return None
    return needs(need, f"{sys.executable} has no {', '.join(missing)}; {ci_venv_hint()}")


def ci_venv_hint():
    """Where the Python with torch and transformers is: the venv .ci/run built here, else how to get one."""
    root = os.environ.get("NPU_BLOCK_GATE_CI_CACHE") or "/var/cache/npu-block-gate-ci"
    try:
        venvs = sorted(n for n in os.listdir(root) if n.startswith("venv-") and os.path.isfile(os.path.join(root, n, "bin", "python")))
    except OSError:
        venvs = []
    if venvs:
        return f"run with {os.path.join(root, venvs[0], 'bin', 'python')} (the venv .ci/run built)"
    return (f"run with a venv that has them (`bash .ci/run` builds one under {root}/venv-<hash>/; "
            "README, \"The real tree without an NPU\"), or set NPU_BLOCK_GATE_PYTHON")


def python_without_transformers():
    """A Python with numpy that cannot import transformers: this one, else
    $NPU_BLOCK_GATE_TEST_PYTHON_NO_TRANSFORMERS (.ci/run makes one); None when neither is."""
    for py in (sys.executable, os.environ.get(NO_TRANSFORMERS_VAR)):
        if not py:
            continue
        r = subprocess.run([py, "-c", "import importlib.util as u, sys, numpy; sys.exit(u.find_spec('transformers') is not None)"],
                           capture_output=True)
        if r.returncode == 0:
            return py
    return None
