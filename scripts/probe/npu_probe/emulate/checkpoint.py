"""--emulate runs the tree's code at the HF checkpoint's dimensions: the config's fields set from
the local snapshot's config.json."""

from npu_probe.core.errors import ProbeError
from npu_probe.core.hfconfig import tree_fields
from npu_probe.core.hfhub import snapshot_config


# The dimensions --emulate takes from the checkpoint (flags such as qkv_bias stay the tree's).
DIMENSIONS = ("n_layers", "emb_dim", "n_heads", "n_kv_heads", "hidden_dim", "vocab_size", "rope_base", "head_dim")


def checkpoint_eps(hf_id):
    """(rms_norm_eps, config.json path) of the checkpoint: what --twin-eps config gives the twins."""
    hf, where = snapshot_config(hf_id)
    eps = tree_fields(hf).get("rms_norm_eps") if hf is not None else None
    if eps is None:
        raise ProbeError("--twin-eps", f"the checkpoint's config.json states no rms_norm_eps ({where})")
    return eps, where


def config_from_checkpoint(config, hf_id):
    """Set the tree config's dimensions from the checkpoint's config.json (in place).
    Returns (changes {field: [old, new]}, source path or why not)."""
    hf, where = snapshot_config(hf_id)
    if hf is None:
        return {}, where
    fields = tree_fields(hf)
    wanted = {}
    for field in DIMENSIONS:
        if field in fields:
            v = fields[field]
            wanted[field] = type(getattr(config, field))(v) if getattr(config, field, None) is not None else v
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
