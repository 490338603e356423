"""`probe bisect` (seed Step 4, "Bisect on FAIL").

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

For each step in order, block 0 runs again on the same setup `probe block`
built (weights, embedded zero-padded input, RoPE LUT, KernelCache dir and
compile) with just that step on the CPU; its output is copied at once and
written to RUN_DIR/bisect/NN-<step>.npy. bisect.json is written last. The probe
computes no cosines: the TypeScript side judges every step file against
block0.ref.npy with the same metrics engine as the gate.
"""

import contextlib
import json
import os
import re
import time

import numpy as np

from probe_block import prepare_block0, run_block_once
from npu_probe.core.call import accepts, call_tree, working_dir
from probe_context import RunContext
from probe_entry import choose_entry, dotted_name, load_block_modules
from npu_probe.core.errors import ProbeError
from probe_lock import lock_path, npu_lock
from probe_model import model_names, open_model
from npu_probe.core.npy import write_json, write_npy
from npu_probe.core.contract import (
    BISECT_CPU_STEPS_KW,
    BISECT_DIR,
    BISECT_HOOK,
    BISECT_JSON,
    BISECT_SCHEMA,
    BISECT_SCHEMA_VERSION,
    BISECT_STAGE,
    BISECT_STEP_KEYS,
    NPU_NPY,
    PROBE_JSON,
    PROBE_SCHEMA,
    PROBE_SCHEMA_VERSION,
    REF_NPY,
)
from npu_probe.emulate.table import model_spec
from npu_probe.core.tree import resolve_tree

STEP_FILE_RE = re.compile(r"^(\d{2,}-.+|launch-\d{2,}-.+)\.npy$")


def check_run_dir(run_dir):
    """The run dir must exist (bisect adds to it; it never creates one)."""
    if not os.path.exists(run_dir):
        raise ProbeError(run_dir, "run dir not found (run `probe block --out RUN_DIR` first)")
    if not os.path.isdir(run_dir):
        raise ProbeError(run_dir, "run dir is not a directory")


def clear_stale(run_dir):
    """Remove a previous bisect's bisect.json (first: it would vouch for the
    rest) and its step files, so nothing left over mixes with this run."""
    bdir = os.path.join(run_dir, BISECT_DIR)
    if not os.path.isdir(bdir):
        return
    try:
        os.unlink(os.path.join(bdir, BISECT_JSON))
    except FileNotFoundError:
        pass
    for name in os.listdir(bdir):
        if STEP_FILE_RE.match(name):
            try:
                os.unlink(os.path.join(bdir, name))
            except FileNotFoundError:
                pass


# ---------------------------------------------------------------------------
# probe.json


def _get(obj, dotted, path, kind, allow_none=False):
    cur = obj
    for key in dotted.split("."):
        if not isinstance(cur, dict) or key not in cur:
            raise ProbeError(path, f"no {dotted}")
        cur = cur[key]
    if cur is None and allow_none:
        return None
    ok = isinstance(cur, kind) and not (kind is int and isinstance(cur, bool))
    if not ok:
        raise ProbeError(path, f"{dotted} is {json.dumps(cur)[:60]}, not {_kind_name(kind)}")
    return cur


def _kind_name(kind):
    names = {str: "a string", int: "an integer", bool: "a boolean", list: "a list", dict: "an object"}
    return names.get(kind, getattr(kind, "__name__", str(kind)))


def read_probe_json(run_dir):
    """probe.json of a complete `probe block` run, with what bisect needs checked."""
    path = os.path.join(run_dir, PROBE_JSON)
    if not os.path.isfile(path):
        raise ProbeError(path, "not found (run `probe block` into this run dir first)")
    try:
        with open(path, encoding="utf-8") as f:
            probe = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ProbeError(path, f"cannot read: {exc}") from exc
    if not isinstance(probe, dict):
        raise ProbeError(path, "not a JSON object")
    if probe.get("schema") != PROBE_SCHEMA or probe.get("schema_version") != PROBE_SCHEMA_VERSION:
        raise ProbeError(path, f"schema {probe.get('schema')!r} v{probe.get('schema_version')!r}, expected {PROBE_SCHEMA!r} v{PROBE_SCHEMA_VERSION}")
    stage = probe.get("stage")
    if stage != BISECT_STAGE:
        raise ProbeError(path, f"stage is {stage!r}: bisect needs a run dir from `probe block` (stage {BISECT_STAGE!r})")
    _get(probe, "environment.air_root", path, str)
    _get(probe, "model.dir", path, str)
    _get(probe, "model.name", path, str)
    _get(probe, "model.hf_id", path, str, allow_none=True)
    _get(probe, "model.config", path, dict)
    _get(probe, "integration.path", path, str)
    _get(probe, "integration.entry", path, str)
    cpu_attn = _get(probe, "integration.cpu_attn", path, bool, allow_none=True)
    if cpu_attn is None:
        probe["integration"]["cpu_attn"] = True  # the tree's default for block runs
    tokens = _get(probe, "prompt.token_ids", path, list)
    if not tokens or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise ProbeError(path, "prompt.token_ids is not a non-empty list of integers")
    padded = _get(probe, "prompt.padded_len", path, int)
    if padded < len(tokens):
        raise ProbeError(path, f"prompt.padded_len {padded} is shorter than prompt.token_ids ({len(tokens)})")
    return probe


def npu_shape(run_dir):
    """Shape of block0.npu.npy (every step file has it); block0.ref.npy must be there too."""
    for name in (NPU_NPY, REF_NPY):
        p = os.path.join(run_dir, name)
        if not os.path.isfile(p):
            raise ProbeError(p, "not found (the `probe block` run dir is incomplete)")
    p = os.path.join(run_dir, NPU_NPY)
    try:
        return tuple(int(d) for d in np.load(p, mmap_mode="r", allow_pickle=False).shape)
    except (OSError, ValueError) as exc:
        raise ProbeError(p, f"cannot read: {exc}") from exc


def open_tree(probe, run_dir):
    """The tree probe.json names; a moved or changed tree is bad input."""
    path = os.path.join(run_dir, PROBE_JSON)
    air_root = probe["environment"]["air_root"]
    model_dir = os.path.normpath(os.path.join(air_root, probe["model"]["dir"]))
    if not os.path.isdir(air_root):
        raise ProbeError(air_root, f"air root from {PROBE_JSON} not found (tree moved since `probe block`?)")
    if not os.path.isdir(model_dir):
        raise ProbeError(model_dir, f"model dir from {PROBE_JSON} not found (tree moved since `probe block`?)")
    tree = resolve_tree(model_dir, air_root)
    if tree.model != probe["model"]["name"]:
        raise ProbeError(path, f"model.dir is {tree.model}, model.name {probe['model']['name']!r}")
    return tree


# ---------------------------------------------------------------------------
# The hook


def weights_name(probe, adapter, adapter_name, tree):
    """The load_weights name `probe block` used: the choice whose HF reference is
    probe.json's model.hf_id (the id itself for bf16 models, where the two
    coincide; else the MODEL_CHOICES entry that maps to it)."""
    hf_id = probe["model"]["hf_id"]
    choices = getattr(adapter, "MODEL_CHOICES", None)
    candidates = [hf_id] + (list(choices) if isinstance(choices, dict) else [])
    if hf_id is None:
        candidates = [getattr(adapter, "DEFAULT_MODEL", None)]
    for choice in candidates:
        name, ref = model_names(adapter, adapter_name, choice, tree)
        if ref == hf_id:
            return name
    raise ProbeError(
        os.path.join(tree.model_dir, "verify_adapter.py"),
        f"no model choice has HF reference {hf_id!r} (probe.json model.hf_id)",
    )


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


def bisect_record(available, reason, hook, steps, method=None, launches=None, emulated=False):
    """bisect.json. `method`: "hook" (the model's bisect_steps), "twins" (CPU twins of the
    ELFs: `launches` is the launch-level table, `steps` the swap-forward) or None."""
    return {
        "schema": BISECT_SCHEMA,
        "schema_version": BISECT_SCHEMA_VERSION,
        "available": bool(available),
        "reason": reason,
        "hook": dotted_name(hook) if hook is not None else None,
        "method": method,
        "emulated": bool(emulated),
        "steps": steps,
        "launches": launches,
    }


# ---------------------------------------------------------------------------
# The run


def run_bisect(args, log):
    t_start = time.monotonic()
    run_dir = os.path.abspath(args.run_dir)
    probe = read_probe_json(run_dir)
    shape = npu_shape(run_dir)
    bdir = os.path.join(run_dir, BISECT_DIR)
    out_json = os.path.join(bdir, BISECT_JSON)
    try:
        os.makedirs(bdir, exist_ok=True)
    except OSError as exc:
        raise ProbeError(bdir, f"cannot create: {exc.strerror or exc}") from exc

    def finish(record):
        write_json(out_json, record)  # last: its presence means complete
        n = len(record["steps"])
        what = f"{n} steps" if record["available"] else f"unavailable: {record['reason']}"
        log.step(f"wrote {out_json} ({what}; {time.monotonic() - t_start:.1f}s)")
        return record

    integ = probe["integration"]
    tree = open_tree(probe, run_dir)
    log.step(f"bisect {run_dir}: tree {tree.air_root}, model {tree.model}, entry {integ['entry']}")
    if integ.get("runner") == "adapter" or integ["path"] == "adapter":
        return finish(bisect_record(False, unavailable_adapter(), None, []))

    adapter, adapter_name, config, cfg = open_model(tree)
    emu_rec = probe.get("emulate") if isinstance(probe.get("emulate"), dict) else None
    if emu_rec is not None:  # the run was --emulate: the same checkpoint config, the same emulated NPU
        from npu_probe.emulate.checkpoint import config_from_checkpoint  # noqa: PLC0415
        from npu_probe.core.tree import config_summary  # noqa: PLC0415

        changes, _src = config_from_checkpoint(config, probe["model"]["hf_id"])
        if changes:
            cfg = config_summary(config, os.path.join(tree.model_dir, "verify_adapter.py"))
    recorded = probe["model"]["config"]
    changed = sorted(k for k in cfg if k in recorded and cfg[k] != recorded[k])
    if changed:
        raise ProbeError(
            os.path.join(tree.model_dir, "verify_adapter.py"),
            f"build_config() now differs from {PROBE_JSON} in {', '.join(changed)}: re-run `probe block`",
        )
    prefill_mod, inference_mod = load_block_modules(tree)
    entry = choose_entry(tree.model, adapter, adapter_name, prefill_mod, (inference_mod, adapter), integ.get("step1"))
    if entry.entry != integ["entry"]:
        raise ProbeError(tree.model_dir, f"block entry is now {entry.entry}, {PROBE_JSON} ran {integ['entry']}: re-run `probe block`")
    hook, reason = find_hook(tree, prefill_mod, entry)
    emulated = emu_rec is not None
    if reason is not None:
        spec = model_spec(tree.model)
        if spec is None or entry.kind == "adapter":
            why = reason if spec is not None else (
                f"{reason}; and {tree.model} is not in scripts/probe/elf_boundaries.json, so there are no CPU twins "
                "of its ELFs")
            return finish(bisect_record(False, why, hook, [], emulated=emulated))
        ctx = bisect_context(args, log, probe, tree, adapter, adapter_name, config, cfg, prefill_mod, inference_mod,
                             entry, weights_name(probe, adapter, adapter_name, tree))
        if emulated:
            from npu_probe.emulate.emulation import start as start_emulation  # noqa: PLC0415

            ctx.emulation = start_emulation(tree, config, spec, emu_rec.get("inject"), ctx.real_len,
                                            _defaults_of(config))
        from probe_launch_bisect import run_twins_bisect  # noqa: PLC0415

        log.detail(f"working directory for compile and run: {ctx.build_dir}")
        try:
            with npu_lock(lock_path(args.npu_lock), args.lock_timeout, log), working_dir(ctx.build_dir), \
                    (ctx.emulation.npu.installed() if ctx.emulation is not None else contextlib.nullcontext()):
                launches, steps = run_twins_bisect(ctx, run_dir, shape, log)
        finally:
            if ctx.emulation is not None:
                ctx.emulation.close()
        why = (f"no bisect hook ({reason}); the CPU twins of its ELFs bisect instead (scripts/probe/elf_boundaries.json): "
               f"{len(launches)} launches compared NPU vs twin from their own inputs, then {len(steps)} ELFs "
               "swapped to their twins one after another")
        return finish(bisect_record(True, why, None, steps, method="twins", launches=launches, emulated=emulated))

    cpu_attn = integ["cpu_attn"]
    prefill_path = os.path.join(tree.model_dir, f"{tree.model}_prefill.py")
    steps = list_steps(hook, config, cpu_attn, prefill_path)
    if not steps:
        reason = f"{dotted_name(hook)}() listed no steps"
        return finish(bisect_record(False, reason, hook, []))
    log.step(f"{dotted_name(hook)}: {len(steps)} steps ({', '.join(s['step'] for s in steps)})")

    ctx = bisect_context(args, log, probe, tree, adapter, adapter_name, config, cfg, prefill_mod, inference_mod,
                         entry, weights_name(probe, adapter, adapter_name, tree))
    records = []
    log.detail(f"working directory for compile and run: {ctx.build_dir}")
    with npu_lock(lock_path(args.npu_lock), args.lock_timeout, log), working_dir(ctx.build_dir):
        setup = prepare_block0(ctx)
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
    reason = (
        f"{dotted_name(hook)} lists {len(steps)} steps and {entry.entry} takes {BISECT_CPU_STEPS_KW}; "
        "each step ran once on the CPU with the others on the NPU"
    )
    return finish(bisect_record(True, reason, hook, records, method="hook", emulated=emulated))


def _defaults_of(config):
    try:
        return type(config)()
    except Exception:
        return None


def bisect_context(args, log, probe, tree, adapter, adapter_name, config, cfg, prefill_mod, inference_mod, entry,
                   model_name):
    """The RunContext `probe block` had, rebuilt from probe.json: same tokens,
    padded length, attention, entry and kernel cache dir."""
    kc_dir = (probe.get("kernel_cache") or {}).get("dir")
    plan = {"kernel_cache": {"dir": kc_dir, "build_dir": kc_dir.rsplit("/", 1)[0]}} if kc_dir and "/" in kc_dir else None
    p = probe["prompt"]
    return RunContext(
        args=args, log=log, plan=plan, tree=tree, adapter=adapter, adapter_name=adapter_name, config=config,
        cfg=cfg, model_name=model_name, hf_id=probe["model"]["hf_id"], prompt=p.get("text") or "",
        prompt_source=p.get("source") or "", prompt_style=p.get("style") or "", tokens=p["token_ids"],
        tokenizer=None, tokenizer_label=p.get("tokenizer") or "", prefill_mod=prefill_mod,
        inference_mod=inference_mod, max_seq=p["padded_len"], seq_len=p["padded_len"], seq_why=PROBE_JSON,
        cpu_attn=probe["integration"]["cpu_attn"], entry=entry, workarounds=[],
        ref_kind=(probe.get("reference") or {}).get("kind") or "", defaults={},
    )
