"""The model as its verify adapter declares it: config, weights name, HF reference id.

Shared by the config stage (npu_probe.run.config) and `probe bisect`, which
rebuilds the same model from a finished run dir.
"""

import json
import os

from npu_probe.core.call import call_tree
from npu_probe.core.errors import ProbeError
from npu_probe.core.contract import PROBE_DIR, TOOL_NAME, TOOL_VERSION_FALLBACK
from npu_probe.core.tree import config_summary, import_tree_module, put_tree_on_path


def tool_version():
    pkg = os.path.join(PROBE_DIR, "..", "..", "package.json")
    try:
        with open(pkg, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("name") == TOOL_NAME and isinstance(data.get("version"), str):
            return data["version"]
    except (OSError, ValueError):
        pass
    return TOOL_VERSION_FALLBACK


def open_model(tree):
    """Put the tree on sys.path, import the verify adapter and build the config:
    (adapter, adapter module name, config object, probe.json config record)."""
    put_tree_on_path(tree)
    adapter_name = f"{tree.model}.verify_adapter"
    adapter = import_tree_module(adapter_name, f"{tree.model}/verify_adapter.py (import)")
    adapter_path = os.path.join(tree.model_dir, "verify_adapter.py")
    if not callable(getattr(adapter, "build_config", None)):
        raise ProbeError(adapter_path, "no build_config()")
    config = call_tree(f"{adapter_name}.build_config", adapter.build_config)
    return adapter, adapter_name, config, config_summary(config, adapter_path)


def model_names(adapter, adapter_name, choice, tree):
    """(weights name for load_weights / build_runner, HF reference id) for a
    MODEL_CHOICES key or id, as verify_runner resolves them."""
    resolve = getattr(adapter, "resolve_model", None)
    if choice is None:
        model_name = tree.model
    elif callable(resolve):
        model_name = call_tree(f"{adapter_name}.resolve_model", resolve, choice)
    else:
        model_name = getattr(adapter, "MODEL_CHOICES", {}).get(choice, choice)
    return model_name, reference_id(adapter, adapter_name, model_name)


def reference_id(adapter, adapter_name, model_name):
    hf_ref = getattr(adapter, "hf_reference", None)
    return call_tree(f"{adapter_name}.hf_reference", hf_ref, model_name) if callable(hf_ref) else model_name
