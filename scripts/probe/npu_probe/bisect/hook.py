"""`probe bisect` (seed Step 4, "Bisect on FAIL") with the model's own hook.

The hook, defined here and nowhere else (README "Bisect hook"):

  `<model>_prefill.py` defines
      bisect_steps(config, cpu_attn) -> [{"step": str, "kernel": str, "cpu_equivalent": str}, ...]
  listing the block's steps in execution order (`kernel`: the ELF, or "host",
  the step runs in; `cpu_equivalent`: what replaces it on the CPU), and the
  block entry point `probe block` used accepts the keyword
      cpu_steps={step, ...}
  (step names to run on the CPU instead of the NPU).

Bisect is unavailable (bisect.json says why, exit 0) on the adapter path, when
there is no `<model>_prefill.py` or it defines no `bisect_steps`, when the entry
takes no `cpu_steps`, or when `bisect_steps()` lists no steps.

First block 0 runs once more with nothing swapped (RUN_DIR/bisect/00-rerun.npy):
the judge requires the judged ffn_out back from it, else the bisect ran another
block (another interpreter or environment, a changed tree, a nondeterministic
NPU) and is void. Then, for each step in order, block 0 runs again on the same
setup `probe block` built (weights, embedded zero-padded input, RoPE LUT, KernelCache dir and
compile) with just that step on the CPU; its output is copied at once and
written to RUN_DIR/bisect/NN-<step>.npy. bisect.json is written last. The probe
computes no cosines: the TypeScript side judges every step file against
block0.ref.npy with the same metrics engine as the gate.
"""

import dataclasses
import os
import re
import sys
import time

from npu_probe.core.call import accepts, call_tree
from npu_probe.core.contract import (
    BISECT_CPU_STEPS_KW,
    BISECT_DIR,
    BISECT_HOOK,
    BISECT_RERUN,
    BISECT_SCHEMA,
    BISECT_SCHEMA_VERSION,
    BISECT_STEP_KEYS,
    NPU_NPY,
)
from npu_probe.core.errors import ProbeError
from npu_probe.core.npy import write_npy
from npu_probe.run.block import run_block_once
from npu_probe.run.entry import dotted_name
from npu_probe.run.setup import prepare_block0


def validate_steps(raw, where):
    """The hook's list, checked: dicts with string step/kernel/cpu_equivalent,
    unique step names, in order."""
    if isinstance(raw, tuple):
        raw = list(raw)
    if not isinstance(raw, list):
        raise ProbeError(where, f"returned {type(raw).__name__}, not a list of {{{', '.join(BISECT_STEP_KEYS)}}}")
    steps, seen = [], set()
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ProbeError(where, f"item {i} is {type(item).__name__}, not a dict")
        rec = {}
        for key in BISECT_STEP_KEYS:
            value = item.get(key)
            if not isinstance(value, str) or not value:
                raise ProbeError(where, f"item {i} has no string {key!r}")
            rec[key] = value
        if rec["step"] in seen:
            raise ProbeError(where, f"step {rec['step']!r} is listed twice")
        seen.add(rec["step"])
        steps.append(rec)
    return steps


def find_hook(tree, prefill_mod, entry):
    """(hook function or None, reason or None): reason says why bisect is unavailable."""
    if entry.kind == "adapter":
        return None, unavailable_adapter()
    prefill_file = f"{tree.model}_prefill.py"
    if prefill_mod is None:
        return None, f"{tree.model} has no {prefill_file}, where the bisect hook {BISECT_HOOK}(config, cpu_attn) lives"
    hook = getattr(prefill_mod, BISECT_HOOK, None)
    if not callable(hook):
        return None, (
            f"{prefill_file} defines no {BISECT_HOOK}(config, cpu_attn), so the probe cannot list the block's steps"
        )
    if not accepts(entry.func, BISECT_CPU_STEPS_KW):
        return hook, (
            f"{entry.entry} takes no {BISECT_CPU_STEPS_KW} keyword, so no step can be swapped for its CPU equivalent"
        )
    return hook, None


def unavailable_adapter():
    return (
        "integration path is adapter: block 0 ran inside the adapter's runner, "
        f"which has no {BISECT_CPU_STEPS_KW} to swap single steps"
    )


def list_steps(hook, config, cpu_attn, prefill_path):
    name = dotted_name(hook)
    kwargs = {"cpu_attn": cpu_attn} if accepts(hook, "cpu_attn") else {}
    raw = call_tree(name, hook, config, **kwargs)
    return validate_steps(raw, f"{prefill_path}: {BISECT_HOOK}()")


def step_file(index, step):
    """RUN_DIR-relative name of step `index`'s (1-based) output, forward slashes."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", step).strip("._") or "step"
    return f"{BISECT_DIR}/{index:02d}-{safe}.npy"


@dataclasses.dataclass(frozen=True)
class BisectResult:
    """bisect.json. `method`: "hook" (the model's bisect_steps), "twins" (CPU twins of the
    ELFs: `launches` is the launch-level table, `steps` the swap-forward) or None."""

    available: bool
    reason: str
    hook: object = None  # the hook function, or None
    steps: list = ()
    method: str = None
    launches: list = None
    emulated: bool = False
    twins: dict = None  # how the twins computed (npu_probe.emulate.numerics.Numerics.record())
    rerun: bool = False  # bisect/00-rerun.npy was written (block 0 re-run unswapped)

    def record(self):
        return {
            "schema": BISECT_SCHEMA,
            "schema_version": BISECT_SCHEMA_VERSION,
            "available": bool(self.available),
            "reason": self.reason,
            "hook": dotted_name(self.hook) if self.hook is not None else None,
            "method": self.method,
            "emulated": bool(self.emulated),
            "steps": list(self.steps),
            "launches": self.launches,
            "twins": self.twins,
            # Which interpreter re-ran the block (the check's, through its --python command).
            "rerun": {"file": BISECT_RERUN, "python": sys.executable} if self.rerun else None,
        }


def write_rerun(setup, run_dir, shape, log):
    """Block 0 once more, nothing swapped, before any step: the judge requires the judged ffn_out
    back from it (else the bisect ran another block and is void). Returns the output."""
    log.step("bisect: block 0 re-run unswapped first (the judge checks it reproduces the judged ffn_out)")
    out = run_block_once(setup)
    if tuple(out.shape) != shape:
        raise ProbeError(setup.ctx.model.entry.entry, f"re-run returned shape {list(out.shape)}, {NPU_NPY} is {list(shape)}")
    write_npy(os.path.join(run_dir, *BISECT_RERUN.split("/")), out)
    return out


def run_hook_steps(ctx, steps, run_dir, shape):
    """Block 0 once per step with that step on the CPU (lock held, from the build dir):
    bisect.json `steps`, each step's output written to RUN_DIR/bisect/NN-<step>.npy."""
    log, entry = ctx.log, ctx.model.entry
    records = []
    setup = prepare_block0(ctx)
    write_rerun(setup, run_dir, shape, log)
    for i, st in enumerate(steps, start=1):
        log.step(f"bisect step {i}/{len(steps)} {st['step']} (cpu: {st['cpu_equivalent']})")
        t = time.monotonic()
        out = run_block_once(setup, cpu_steps={st["step"]})  # a copy, taken at once
        seconds = time.monotonic() - t
        if tuple(out.shape) != shape:
            raise ProbeError(
                entry.entry,
                f"with {BISECT_CPU_STEPS_KW}={{{st['step']!r}}} returned shape {list(out.shape)}, "
                f"{NPU_NPY} is {list(shape)}",
            )
        rel = step_file(i, st["step"])
        write_npy(os.path.join(run_dir, *rel.split("/")), out)
        records.append({"index": i, **st, "file": rel, "seconds": round(seconds, 4)})
    return records
