"""--emulate runs the tree's code at the HF checkpoint's dimensions: the config's fields set from
the local snapshot's config.json."""

import json
import os

from npu_probe.core.errors import ProbeError
from npu_probe.core.hfhub import snapshot_dir, snapshot_revision


CONFIG_MAP = (("n_layers", "num_hidden_layers"), ("emb_dim", "hidden_size"), ("n_heads", "num_attention_heads"),
              ("n_kv_heads", "num_key_value_heads"), ("hidden_dim", "intermediate_size"), ("vocab_size", "vocab_size"),
              ("rope_base", "rope_theta"))


def snapshot_config(hf_id, environ=None):
    """(config.json dict, path) of the local HF snapshot of `hf_id` (or a local dir), or (None, why)."""
    if isinstance(hf_id, str) and os.path.isdir(hf_id):
        path = os.path.join(hf_id, "config.json")
    else:
        rev = snapshot_revision(hf_id, environ)
        if rev is None:
            return None, f"no local HF snapshot of {hf_id}"
        path = os.path.join(snapshot_dir(hf_id, rev, environ), "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), path
    except (OSError, ValueError) as exc:
        return None, f"{path}: {exc}"


def config_from_checkpoint(config, hf_id):
    """Set the tree config's dimensions from the checkpoint's config.json (in place).
    Returns (changes {field: [old, new]}, source path or why not)."""
    hf, where = snapshot_config(hf_id)
    if hf is None:
        return {}, where
    wanted = {}
    for field, key in CONFIG_MAP:
        if key in hf and hf[key] is not None:
            wanted[field] = type(getattr(config, field, hf[key]))(hf[key]) if hasattr(config, field) else hf[key]
    heads = int(hf.get("num_attention_heads") or getattr(config, "n_heads", 1))
    wanted["head_dim"] = int(hf.get("head_dim") or int(hf.get("hidden_size", 0)) // max(heads, 1))
    if "num_key_value_heads" not in hf:
        wanted["n_kv_heads"] = heads
    changes = {}
    for field, value in wanted.items():
        if not hasattr(config, field):
            continue
        old = getattr(config, field)
        if old != value:
            try:
                setattr(config, field, value)
            except (AttributeError, TypeError) as exc:
                raise ProbeError(hf_id, f"--emulate cannot set config.{field} ({exc})") from exc
            changes[field] = [old, value]
    return changes, where
