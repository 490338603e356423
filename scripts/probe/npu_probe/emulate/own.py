"""A tree whose NPU is its own numpy emulation (examples/air-mini: the AIR_MINI marker at its
root). There is no device to stand in for, so `--emulate` runs that tree's own emulated NPU (no
twins, no table entry needed), and `--inject NAME` sets the variable the tree reads its bug from
(AIR_MINI_INJECT), with the same names as the twins on a real tree. Setting the variable by hand
means the same as `--emulate --inject NAME`. probe.json `emulate` records it either way, so every
report marks the run emulated.
"""

import os

from npu_probe.core.contract import EMULATE_INJECTIONS
from npu_probe.core.errors import ProbeError
from npu_probe.core.tree import TREE_INJECT_ENV

RUNTIME = "air-mini: the tree's own emulated NPU (numpy ELFs)"
TREE_INJECT_MODULE = "shared.infra.inject"


def _from_env():
    raw = os.environ.get(TREE_INJECT_ENV, "").strip()
    return None if not raw or raw.lower() in ("none", "off", "0") else raw


def check_tree_injection(name, where):
    """The name, if the tree (or the shared list) knows it; a renamed one says its new name."""
    import importlib  # noqa: PLC0415

    try:
        mod = importlib.import_module(TREE_INJECT_MODULE)
    except ImportError:
        mod = None
    known = set(getattr(mod, "INJECTIONS", {}) or {}) | set(EMULATE_INJECTIONS)
    renamed = getattr(mod, "RENAMED", {}) or {}
    if name in renamed:
        raise ProbeError(where, f"{name!r} is now called {renamed[name]!r} (the name --inject uses on the real "
                                f"tree too): --emulate --inject {renamed[name]}")
    if name not in known:
        raise ProbeError(where, f"unknown injected bug {name!r}; choose one of: {', '.join(sorted(known))}")
    return name


def start_own(emulate, inject, log):
    """probe.json `emulate` for this run on a tree that emulates its own NPU, or None for an
    ordinary run there (no --emulate, no bug set). Sets the tree's bug variable to the run's bug
    (or clears it), so the tree and the record agree."""
    alias = _from_env()
    if inject is not None and alias is not None and inject != alias:
        raise ProbeError("--inject", f"{inject} and {TREE_INJECT_ENV}={alias} disagree; give one of them")
    bug = inject or alias
    if not emulate and bug is None:
        return None
    where = "--inject" if inject is not None else TREE_INJECT_ENV
    if bug is not None:
        check_tree_injection(bug, where)
        os.environ[TREE_INJECT_ENV] = bug
    else:
        os.environ.pop(TREE_INJECT_ENV, None)
    said = f"{TREE_INJECT_ENV}={bug}: the same as --emulate --inject {bug}; " if inject is None and bug else ""
    log.step(f"emulate: {said}the tree's own emulated NPU runs the block" + (f", injected bug {bug}" if bug else ""))
    return {
        "runtime": RUNTIME,
        "inject": bug,
        "config_from": None,
        "config_changes": {},
        "artifacts": [],
        "registry": [],
        "launches": 0,
        "compile": "the tree's own compile_all_kernels on its emulated KernelCache",
    }


def set_tree_injection(record):
    """The bisect re-runs the block: the same bug as the recorded run (probe.json `emulate`)."""
    bug = (record or {}).get("inject")
    if bug:
        os.environ[TREE_INJECT_ENV] = bug
    else:
        os.environ.pop(TREE_INJECT_ENV, None)
