"""`probe bisect --run-dir RUN_DIR`: rebuild the run a `probe block` recorded (the same RunSpec,
npu_probe.bisect.rundir) and bisect it with the model's hook (npu_probe.bisect.hook) or, for a
model of the ELF table, with the CPU twins of its ELFs (npu_probe.bisect.launches).
RUN_DIR/bisect/bisect.json is written last, and says why when bisect is unavailable."""

import contextlib
import os
import time

from npu_probe.bisect.hook import BisectResult, find_hook, list_steps, run_hook_steps, unavailable_adapter
from npu_probe.bisect.rundir import npu_shape, open_recorded_model, open_tree, read_probe_json, run_context
from npu_probe.core.call import working_dir
from npu_probe.core.contract import BISECT_CPU_STEPS_KW, BISECT_DIR, BISECT_JSON
from npu_probe.core.errors import ProbeError
from npu_probe.core.npy import write_json
from npu_probe.emulate.table import model_spec
from npu_probe.run.entry import dotted_name
from npu_probe.core.tree import emulates_npu
from npu_probe.emulate.own import set_tree_injection
from npu_probe.run.lock import npu_lock_unless


def run_bisect(opts, log):
    t_start = time.monotonic()
    run_dir = os.path.abspath(opts.run_dir)
    probe = read_probe_json(run_dir)
    shape = npu_shape(run_dir)
    bdir = os.path.join(run_dir, BISECT_DIR)
    out_json = os.path.join(bdir, BISECT_JSON)
    try:
        os.makedirs(bdir, exist_ok=True)
    except OSError as exc:
        raise ProbeError(bdir, f"cannot create: {exc.strerror or exc}") from exc

    def finish(result):
        record = result.record()
        write_json(out_json, record)  # last: its presence means complete
        n = len(record["steps"])
        what = f"{n} steps" if record["available"] else f"unavailable: {record['reason']}"
        log.step(f"wrote {out_json} ({what}; {time.monotonic() - t_start:.1f}s)")
        return record

    integ = probe["integration"]
    tree = open_tree(probe, run_dir)
    log.step(f"bisect {run_dir}: tree {tree.air_root}, model {tree.model}, entry {integ['entry']}")
    if integ.get("runner") == "adapter" or integ["path"] == "adapter":
        return finish(BisectResult(False, unavailable_adapter()))
    model = open_recorded_model(probe, tree)
    hook, reason = find_hook(tree, model.prefill_mod, model.entry)
    if reason is not None:
        return finish(_twins(opts, log, probe, (tree, model, hook, reason), (run_dir, shape)))
    return finish(_hook(opts, log, probe, (tree, model, hook), (run_dir, shape)))


def _hook(opts, log, probe, found, out):
    """The model's bisect_steps hook: each step once on the CPU."""
    tree, model, hook = found
    run_dir, shape = out
    emulated = isinstance(probe.get("emulate"), dict)
    prefill_path = os.path.join(tree.model_dir, f"{tree.model}_prefill.py")
    steps = list_steps(hook, model.config, probe["integration"]["cpu_attn"], prefill_path)
    if not steps:
        return BisectResult(False, f"{dotted_name(hook)}() listed no steps", hook)
    log.step(f"{dotted_name(hook)}: {len(steps)} steps ({', '.join(s['step'] for s in steps)})")
    ctx = run_context(opts, log, probe, tree, model)
    log.detail(f"working directory for compile and run: {ctx.spec.build_dir}")
    own_npu = emulates_npu(tree)
    if own_npu:  # the same bug as the recorded run, in the tree's own emulated NPU
        set_tree_injection(probe.get("emulate"))
    with npu_lock_unless(own_npu, opts, log), working_dir(ctx.spec.build_dir):
        records = run_hook_steps(ctx, steps, run_dir, shape)
    entry = model.entry.entry
    reason = (
        f"{dotted_name(hook)} lists {len(steps)} steps and {entry} takes {BISECT_CPU_STEPS_KW}; "
        "each step ran once on the CPU with the others on the NPU"
    )
    return BisectResult(True, reason, hook, records, method="hook", emulated=emulated, rerun=True)


def _twins(opts, log, probe, found, out):
    """No usable hook: the CPU twins of the ELFs, for a model of the table (else unavailable)."""
    tree, model, hook, reason = found
    run_dir, shape = out
    emu_rec = probe.get("emulate") if isinstance(probe.get("emulate"), dict) else None
    emulated = emu_rec is not None
    table = model_spec(tree.model)
    if table is None or model.entry.kind == "adapter":
        why = reason if table is not None else (
            f"{reason}; and {tree.model} is not in scripts/probe/elf_boundaries.json, so there are no CPU twins "
            "of its ELFs")
        return BisectResult(False, why, hook, emulated=emulated)
    ctx = run_context(opts, log, probe, tree, model)
    if emulated:  # the same emulated NPU, with the same injected bug
        from npu_probe.emulate.emulation import start as start_emulation  # noqa: PLC0415

        ctx.state.emulation = start_emulation(tree, model.config, table, emu_rec.get("inject"),
                                              (ctx.spec.real_len, ctx.spec.twins))
    from npu_probe.bisect.launches import run_twins_bisect  # noqa: PLC0415

    emulation = ctx.state.emulation
    log.detail(f"working directory for compile and run: {ctx.spec.build_dir}")
    try:
        with npu_lock_unless(emulation is not None or emulates_npu(tree), opts, log), working_dir(ctx.spec.build_dir), \
                (emulation.npu.installed() if emulation is not None else contextlib.nullcontext()):
            launches, steps = run_twins_bisect(ctx, run_dir, shape, log)
    finally:
        if emulation is not None:
            emulation.close()
    why = (f"no bisect hook ({reason}); the CPU twins of its ELFs bisect instead (scripts/probe/elf_boundaries.json): "
           f"{len(launches)} launches compared NPU vs twin from their own inputs, then {len(steps)} ELFs "
           "swapped to their twins one after another")
    return BisectResult(True, why, None, steps, method="twins", launches=launches, emulated=emulated,
                        twins=ctx.spec.twins.record(), rerun=True)
