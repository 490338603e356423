"""Reference cache (DESIGN.md "Caches"): the HF reference ffn_out per layer,
keyed by everything that determines it, so a hit skips loading the HF model.

<root>/<key>/layer_NN.npy (float32, real_len x emb_dim) + meta.json, as contract.json
`reference_cache` lays it out. The probe only reads it; the trusted TypeScript process writes
an entry after the verdict of a trusted run (src/cache/reference.ts), so code from a pull
request, which the probe imports, can never change what a later trusted run reads.
"""

import glob
import hashlib
import json
import os

import numpy as np

from npu_probe.core.contract import PROBE_SCHEMA_VERSION, REF_CACHE
from npu_probe.core.hfhub import hub_dir, snapshot_revision

ENV_ROOT = REF_CACHE["env_root"]
ENV_CACHE_DIR = REF_CACHE["env_cache_dir"]
OFF = REF_CACHE["off_value"]
META_FILE = REF_CACHE["meta"]
KEY_LEN = REF_CACHE["key_hex_chars"]


def _meta_key(name):
    """A key of meta.json the reader uses; it must be one contract.json lists (KeyError otherwise)."""
    return REF_CACHE["meta_keys"][REF_CACHE["meta_keys"].index(name)]


META_KIND = _meta_key("kind")
META_STORED_LAYERS = _meta_key("stored_layers")
META_STORED_BOUNDARIES = _meta_key("stored_boundaries")


def cache_root(cli_value, environ=None):
    """The cache root, or None when turned off (`--ref-cache none`)."""
    env = os.environ if environ is None else environ
    for value in (cli_value, env.get(ENV_ROOT)):
        if value:
            return None if value.strip().lower() == OFF else os.path.abspath(os.path.expanduser(value))
    if env.get(ENV_CACHE_DIR):
        return os.path.join(os.path.abspath(os.path.expanduser(env[ENV_CACHE_DIR])), REF_CACHE["subdir"])
    return os.path.join(os.path.expanduser("~"), *REF_CACHE["default_root"].split("/"))


def sources_hash(llms_dir, model_dir, model):
    """sha256 over the emulated reference's weight-generating sources."""
    files = sorted(
        glob.glob(os.path.join(llms_dir, "shared", "infra", "*.py"))
        + glob.glob(os.path.join(llms_dir, "verify", "runners", "*.py"))
        + [p for p in [os.path.join(model_dir, f"{model}_weights.py")] if os.path.isfile(p)]
    )
    return files_hash(llms_dir, files)


def runner_sources(llms_dir):
    """The reference runner's own code (verify/runners/*.py: HfRunner, its records): what
    turns a checkpoint into ffn_out. A changed runner is a new key."""
    return sorted(glob.glob(os.path.join(llms_dir, "verify", "runners", "*.py")))


def files_hash(base, files):
    """sha256 over (relative name, size, bytes) of each file, in the order given."""
    h = hashlib.sha256()
    for path in files:
        rel = os.path.relpath(path, base).replace(os.sep, "/")
        with open(path, "rb") as f:
            data = f.read()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def key_inputs(tree, ref_record, tokens, layers, adapter_file=None, boundaries=None):
    """(inputs dict, None) or (None, reason it cannot be cached). `boundaries`: the
    HF layer-0 capture version when the lens takes the reference's boundaries too
    (an entry then also holds boundary_<name>.npy, listed in meta.json stored_boundaries)."""
    inputs = {
        "model_id": ref_record["model_id"],
        "revision": None,
        "token_ids": [int(t) for t in tokens],
        "transformers": ref_record["transformers"],
        "torch": ref_record["torch"],
        "dtype": ref_record["dtype"],
        "runner": ref_record["runner"],
        "lite_mode": False,
        "layers": [int(li) for li in layers],
        "schema_version": PROBE_SCHEMA_VERSION,
    }
    if boundaries:
        inputs["boundaries"] = boundaries
    if ref_record["kind"] == "emulated":
        inputs["revision"] = "sources:" + sources_hash(tree.llms_dir, tree.model_dir, tree.model)
        # The emulated reference is built from this checkout's files; another copy never vouches for it.
        inputs["tree"] = os.path.realpath(tree.air_root)
    else:
        inputs["revision"] = snapshot_revision(ref_record["model_id"])
        if inputs["revision"] is None:
            return None, (f"no local HF snapshot revision for {ref_record['model_id']} "
                          f"(refs/main under {hub_dir()}); not cached")
    inputs["runner_sources"] = files_hash(tree.llms_dir, runner_sources(tree.llms_dir))
    if adapter_file is not None:  # a custom build_hf_model: its source is part of the reference
        with open(adapter_file, "rb") as f:
            inputs["adapter_hf_model"] = hashlib.sha256(f.read()).hexdigest()
    return inputs, None


def cache_key(inputs):
    blob = json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:KEY_LEN]


def layer_name(li):
    return REF_CACHE["layer_file"].replace("{NN}", f"{int(li):02d}")


def load(entry_dir, layers, real_len, emb_dim):
    """{li: array} when every wanted layer is there with shape (real_len, emb_dim); else None."""
    out = {}
    try:
        with open(os.path.join(entry_dir, META_FILE), encoding="utf-8") as f:
            meta = json.load(f)
        stored = meta.get(META_STORED_LAYERS) or layers
        for li in stored:
            arr = np.load(os.path.join(entry_dir, layer_name(li)), allow_pickle=False)
            if arr.dtype != np.float32 or arr.shape != (real_len, emb_dim):
                return None
            out[int(li)] = np.array(arr, dtype=np.float32, copy=True)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return out if 0 in out else None


def boundary_name(name):
    return REF_CACHE["boundary_file"].replace("{name}", name)


def load_boundaries(entry_dir, real_len):
    """{name: array} of the entry's stored boundaries (meta.json stored_boundaries), each
    float32 with real_len rows; None when the meta lists none or a file is missing or bad."""
    out = {}
    try:
        with open(os.path.join(entry_dir, META_FILE), encoding="utf-8") as f:
            meta = json.load(f)
        names = meta.get(META_STORED_BOUNDARIES)
        if not isinstance(names, list) or not names:
            return None
        for name in names:
            if not isinstance(name, str) or "/" in name or name.startswith("."):
                return None
            arr = np.load(os.path.join(entry_dir, boundary_name(name)), allow_pickle=False)
            if arr.dtype != np.float32 or arr.ndim != 2 or arr.shape[0] != real_len:
                return None
            out[name] = np.array(arr, dtype=np.float32, copy=True)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return out
