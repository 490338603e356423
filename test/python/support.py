"""Shared by the probe test files: run `python3 scripts/probe ...` as the TypeScript side does."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(REPO, "scripts", "probe")


def run_probe(*args, env=None, drop=("AIR_MINI_INJECT",)):
    """Run the probe in a subprocess; `drop` names variables of this process it must not inherit."""
    e = dict(os.environ)
    for k in drop:
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([sys.executable, PROBE, *args], capture_output=True, text=True, env=e, timeout=600)


def find_mlir_air():
    """The real Xilinx/mlir-air tree: $NPU_BLOCK_GATE_MLIR_AIR, else shared/mlir-air beside the
    checkout (where CI lays ../shared out), else /work/shared/mlir-air. The default path is
    returned even when absent, so a skip message can name it."""
    if os.environ.get("NPU_BLOCK_GATE_MLIR_AIR"):
        return os.environ["NPU_BLOCK_GATE_MLIR_AIR"]
    for d in (os.path.join(os.path.dirname(REPO), "shared", "mlir-air"), "/work/shared/mlir-air"):
        if os.path.isdir(d):
            return d
    return os.path.join(os.path.dirname(REPO), "shared", "mlir-air")
