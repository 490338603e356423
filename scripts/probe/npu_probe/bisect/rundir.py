"""The run dir `probe bisect` adds to: checked, its stale bisect files cleared, its probe.json
read, and the run rebuilt from it: the same tree, model, entry and RunSpec `probe block` ran
(tokens, padded length, attention, kernel cache dir), so the block runs again as it did."""

import json
import os
import re

import numpy as np

from npu_probe.core.context import Model, RunContext, RunSpec, RunState
from npu_probe.core.contract import (
    BISECT_DIR,
    BISECT_JSON,
    BISECT_STAGE,
    NPU_NPY,
    PROBE_JSON,
    PROBE_SCHEMA,
    PROBE_SCHEMA_VERSION,
    REF_NPY,
)
from npu_probe.core.errors import ProbeError
from npu_probe.core.tree import config_summary, resolve_tree
from npu_probe.run.entry import choose_entry, load_block_modules
from npu_probe.run.kernels import build_dir, kernel_cache_dir
from npu_probe.run.model import model_names, open_model

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
# The run, rebuilt


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


def open_recorded_model(probe, tree):
    """The model probe.json ran, imported again (Model): the same config (for an --emulate run,
    the checkpoint's, as then) and the same block entry; a changed tree is bad input."""
    integ = probe["integration"]
    adapter, adapter_name, config, cfg = open_model(tree)
    if isinstance(probe.get("emulate"), dict):  # the run was --emulate: the same checkpoint config
        from npu_probe.emulate.checkpoint import config_from_checkpoint  # noqa: PLC0415

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
    return Model(adapter=adapter, adapter_name=adapter_name, config=config, cfg=cfg, entry=entry,
                 prefill_mod=prefill_mod, inference_mod=inference_mod)


def recorded_twins(probe, precision):
    """How the twins compute in this bisect: an --emulate run's as it recorded them (its NPU was
    those twins), else `precision` (--twin-precision) with the ELFs' own eps."""
    from npu_probe.emulate.numerics import Numerics  # noqa: PLC0415 - numpy

    rec = (probe.get("emulate") or {}).get("twins") if isinstance(probe.get("emulate"), dict) else None
    if isinstance(rec, dict) and rec.get("precision"):
        keep = {k: rec[k] for k in ("precision", "rms_eps", "qk_eps", "eps_from") if k in rec}
        return Numerics(**keep)
    return Numerics(precision=precision)


def recorded_spec(probe, tree, model, precision="hw"):
    """The RunSpec `probe block` ran, from probe.json: same tokens, padded length, attention and
    kernel cache dir (its build dir the one above it), and the twins' numerics."""
    kc_dir = (probe.get("kernel_cache") or {}).get("dir")
    plan = {"kernel_cache": {"dir": kc_dir, "build_dir": kc_dir.rsplit("/", 1)[0]}} if kc_dir and "/" in kc_dir else None
    p = probe["prompt"]
    return RunSpec(tree=tree, model_name=weights_name(probe, model.adapter, model.adapter_name, tree),
                   hf_id=probe["model"]["hf_id"], tokens=tuple(p["token_ids"]), seq_len=p["padded_len"],
                   cpu_attn=probe["integration"]["cpu_attn"], cache_dir=kernel_cache_dir(tree, plan),
                   build_dir=build_dir(tree, plan), twins=recorded_twins(probe, precision))


def run_context(opts, log, probe, tree, model):
    """The RunContext block 0 runs again in: the recorded spec, the model, a fresh state."""
    spec = recorded_spec(probe, tree, model, opts.twin_precision)
    ref_kind = (probe.get("reference") or {}).get("kind") or ""
    return RunContext(options=opts, spec=spec, model=model, state=RunState(ref_kind=ref_kind), log=log)
