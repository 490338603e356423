"""A known upstream mismatch, said once: the RMSNorm eps the tree's ELFs are built with against the
checkpoint config.json's rms_norm_eps (probe.json boundaries.norm_eps).

The tree's attention and FFN RMSNorm ELFs read one module constant, weighted_rms_norm.EPS
(programming_examples/weighted_rms_norm/weighted_rms_norm.py, `EPS = 1e-5` at the commit the
project tracks), whatever the model's config says: Qwen2.5 and Qwen3 declare 1e-6. The constant
is read here with ast (the tree's file is parsed, never run), with its line, so the report can
name the finding by file and line; the TypeScript side judges the rest of the lens with it
accounted for (the hardware twins run at the same eps, npu_probe.lens.expected).
"""

import ast
import os

from npu_probe.core.hfconfig import tree_fields
from npu_probe.core.hfhub import snapshot_config

EPS_FILE = "programming_examples/weighted_rms_norm/weighted_rms_norm.py"
EPS_NAME = "EPS"
_MAX_SOURCE = 1 << 20


def tree_eps(air_root):
    """(value, line) of the module-level `EPS = <number>` in the tree's weighted_rms_norm.py, or None."""
    path = os.path.join(air_root, *EPS_FILE.split("/"))
    try:
        if os.path.islink(path) or os.path.getsize(path) > _MAX_SOURCE:
            return None
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, ValueError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == EPS_NAME for t in node.targets):
            v = node.value
            if isinstance(v, ast.Constant) and isinstance(v.value, (int, float)) and not isinstance(v.value, bool):
                return float(v.value), int(node.lineno)
    return None


def norm_eps_record(air_root, hf_id, twins=None):
    """probe.json boundaries.norm_eps: {tree, file, line, config, config_from, twins, twins_from},
    or None when the tree's constant or the checkpoint's rms_norm_eps is unknown. `twins`: the run's
    Numerics (the eps the emulated NPU and the expected pass took)."""
    got = tree_eps(air_root)
    if got is None or not hf_id:
        return None
    hf, _where = snapshot_config(hf_id)
    eps = tree_fields(hf).get("rms_norm_eps") if hf is not None else None
    if eps is None:
        return None
    return {"tree": got[0], "file": EPS_FILE, "line": got[1], "config": float(eps),
            "config_from": f"{hf_id}/config.json",
            "twins": float(twins.rms_eps) if twins is not None else got[0],
            "twins_from": twins.eps_from if twins is not None else "tree"}
