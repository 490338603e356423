"""The model config from where the run takes it, read statically: the weights module's config
(a `<model>_config()` function, a `*Config` class, or its module constants), the HF config.json
of the local snapshot, and the verify adapter's build_config() class. The first complete one in
that order is used (with --emulate the checkpoint's config.json comes first: the emulated run
takes its dimensions from it); the plan says which, and where the sources disagree."""

import ast

from npu_probe.core import hfhub
from npu_probe.core.hfconfig import tree_fields
from npu_probe.plan.config import CONFIG_FIELDS, config_from_call, config_from_class, read_config
from npu_probe.plan.finding import finding
from npu_probe.plan.static.names import returns_of

# What the plan's config holds beyond the six dimensions every source must give.
FLAGS = ("vocab_size", "rope_base", "qkv_bias", "qk_norm", "rms_norm_eps")
ORDER = ("weights", "hf-config", "adapter")
EMULATED_ORDER = ("hf-config", "weights", "adapter")

# Module constants some weights modules use instead of a config class (gemma3_4b_q4nx: D, DH, ...).
CONSTANTS = {
    "emb_dim": ("D", "EMB_DIM", "HIDDEN_SIZE", "DIM"),
    "head_dim": ("DH", "HEAD_DIM"),
    "n_heads": ("N_Q_HEADS", "N_HEADS", "NUM_HEADS"),
    "n_kv_heads": ("N_KV_HEADS", "NUM_KV_HEADS"),
    "hidden_dim": ("INTER", "INTERMEDIATE", "HIDDEN_DIM", "INTERMEDIATE_SIZE"),
    "n_layers": ("NUM_LAYERS", "N_LAYERS"),
    "vocab_size": ("VOCAB", "VOCAB_SIZE"),
    "rope_base": ("ROPE_THETA", "ROPE_BASE"),
    "rms_norm_eps": ("RMS_EPS", "RMS_NORM_EPS", "NORM_EPS"),
}


def _source(name, where, fields, why=None, declares=False):
    """One source's record; `declares`: a config class, whose unset flag the run reads as False
    (its default), where config.json or module constants simply do not say."""
    complete = all(isinstance(fields.get(f), int) and not isinstance(fields.get(f), bool) for f in CONFIG_FIELDS)
    return {"source": name, "where": where, "fields": fields, "complete": complete, "why": why,
            "unset_flags_false": declares}


def weights_source(ctx):
    """The weights module's config: `<model>_config()` (or any module-level *_config()
    returning a config call), else a *Config class with literal defaults, else its constants."""
    path = ctx.model_file("weights")
    info = ctx.info(path) if path else None
    if info is None:
        return _source("weights", None, {}, f"no {ctx.model}_weights.py")
    own = f"{ctx.model}_config"
    funcs = sorted((n for n, d in info.defs.items() if isinstance(d, ast.FunctionDef) and n.endswith("_config")),
                   key=lambda n: (n != own, n))
    for name in funcs:
        fn = info.defs[name]
        for ret in returns_of(fn):
            if isinstance(ret.value, ast.Call):
                got = config_from_call(ctx, info, ret.value, _param_defaults(ctx, info, fn), fn)
                if got:
                    return _source("weights", f"{ctx.where(path, fn.lineno)} {name}()", _with_eps(ctx, info, got[0]),
                                   declares=True)
    for name, node in info.defs.items():
        if isinstance(node, ast.ClassDef) and name.endswith("Config"):
            got = config_from_class(ctx, info, node, {})
            if got:
                return _source("weights", got[1], _with_eps(ctx, info, got[0]), declares=True)
    fields, lines = {}, []
    for field, names in CONSTANTS.items():
        for n in names:
            if n in info.assigns:
                try:
                    v = ctx.const(info, info.assigns[n][0])
                except ValueError:
                    continue
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    fields[field] = float(v) if field in ("rope_base", "rms_norm_eps") else v
                    lines.append(n)
                    break
    if fields:
        return _source("weights", f"{ctx.rel(path)} constants {', '.join(lines)}", fields)
    return _source("weights", ctx.rel(path), {}, "no *_config(), *Config class or dimension constants")


def _param_defaults(ctx, info, fn):
    from npu_probe.plan.static.names import default_of_param  # noqa: PLC0415 - keeps the imports short

    env = {}
    for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
        d, _ = default_of_param(fn, a.arg)
        if d is not None:
            try:
                env[a.arg] = ctx.const(info, d)
            except ValueError:
                pass
    return env


def _with_eps(ctx, info, fields):
    """A config class rarely holds eps: the module's RMS_EPS-like constant, when it has one."""
    out = dict(fields)
    if "rms_norm_eps" not in out:
        for n in CONSTANTS["rms_norm_eps"]:
            if n in info.assigns:
                try:
                    out["rms_norm_eps"] = float(ctx.const(info, info.assigns[n][0]))
                    break
                except (ValueError, TypeError):
                    continue
    return out


def hf_source(model_id, environ):
    """config.json of the local HF snapshot (or of a local model dir), in the tree's names."""
    if not model_id:
        return _source("hf-config", None, {}, "no model id")
    hf, where = hfhub.snapshot_config(model_id, environ)
    if hf is None:
        return _source("hf-config", None, {}, where)
    return _source("hf-config", where, tree_fields(hf)), hf


def adapter_source(ctx):
    cfg, where, why = read_config(ctx)
    return _source("adapter", where, dict(cfg) if cfg else {}, why, declares=True)


def resolve(ctx, model_id, environ, emulated=False):
    """The plan's config and its provenance: (config dict or None, where it came from, why not,
    record {used, order, sources, disagree}, the raw config.json or None)."""
    got = hf_source(model_id, environ)
    hf_raw = None
    if isinstance(got, tuple):
        got, hf_raw = got
    sources = {"weights": weights_source(ctx), "hf-config": got, "adapter": adapter_source(ctx)}
    order = EMULATED_ORDER if emulated else ORDER
    used = next((sources[n] for n in order if sources[n]["complete"]), None)
    record = {"used": used["source"] if used else None, "order": list(order), "emulated": bool(emulated),
              "sources": [sources[n] for n in order], "disagree": disagreements([sources[n] for n in order])}
    if used is None:
        why = "; ".join(f"{s['source']}: {s['why'] or 'incomplete'}" for s in record["sources"])
        return None, None, why, record, hf_raw
    cfg = {f: int(used["fields"][f]) for f in CONFIG_FIELDS}
    record["filled"] = {}
    for f in FLAGS:
        v = used["fields"].get(f)
        if f in ("qkv_bias", "qk_norm"):
            cfg[f] = bool(v)
            continue
        if v is None:  # a value the used source does not state: the next source that does
            later = next((s for s in record["sources"] if s["fields"].get(f) is not None), None)
            if later is not None:
                v = later["fields"][f]
                record["filled"][f] = later["source"]
        if v is not None or f != "rms_norm_eps":
            cfg[f] = v
    return cfg, used["where"], None, record, hf_raw


def disagreements(sources):
    """[{field, values: {source: value}}] for every field two sources state differently. A flag
    one source leaves unset reads as False there (what the run gets from that source)."""
    out = []
    for field in CONFIG_FIELDS + FLAGS:
        values = {}
        for s in sources:
            if not s["fields"]:
                continue
            v = s["fields"].get(field)
            if v is None and field in ("qkv_bias", "qk_norm") and s["unset_flags_false"]:
                v = False
            if v is not None:
                values[s["source"]] = v
        if len({_key(v) for v in values.values()}) > 1:
            out.append({"field": field, "values": values})
    return out


def _key(v):
    return round(float(v), 12) if isinstance(v, float) else v


NAMES = {"weights": "the weights module", "hf-config": "the HF config.json", "adapter": "the adapter's config class"}


def config_findings(record):
    """One finding naming where the sources disagree (a warning: the run may take another value
    elsewhere; informational for --emulate, whose dimensions come from the checkpoint by design)."""
    if not record["disagree"]:
        return []
    where = {s["source"]: s["where"] for s in record["sources"]}
    parts = []
    for d in record["disagree"]:
        vals = ", ".join(f"{NAMES[k]} {v!r}" for k, v in d["values"].items())
        parts.append(f"{d['field']}: {vals}")
    used = record["used"]
    msg = (f"the config sources disagree ({'; '.join(parts)}); the plan uses {NAMES.get(used, 'none')}"
           + (f" ({where[used]})" if used else "") + ", the first of " + " > ".join(NAMES[n] for n in record["order"]))
    emulated_dims = record["emulated"] and used == "hf-config"
    return [finding("config-sources", "ok" if emulated_dims else "warn", "tree", msg,
                    "make the adapter's build_config() and the weights module's config state the same values")]
