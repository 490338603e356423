"""Reference cache (DESIGN.md "Caches"): the HF reference ffn_out per layer,
keyed by everything that determines it, so a hit skips loading the HF model.

<root>/<key>/layer_NN.npy (float32, real_len x emb_dim) + meta.json.
Written into a temp dir beside it, then renamed; a dir that appeared
meanwhile wins (same key, same content).
"""

import datetime
import glob
import hashlib
import json
import os
import shutil
import tempfile

import numpy as np

from probe_npy import write_json, write_npy
from probe_schema import PROBE_SCHEMA_VERSION

ENV_ROOT = "NPU_BLOCK_GATE_REF_CACHE"
ENV_CACHE_DIR = "NPU_BLOCK_GATE_CACHE_DIR"
META_FILE = "meta.json"
KEY_LEN = 32


def cache_root(cli_value, environ=None):
    """The cache root, or None when turned off (`--ref-cache none`)."""
    env = os.environ if environ is None else environ
    for value in (cli_value, env.get(ENV_ROOT)):
        if value:
            return None if value.strip().lower() == "none" else os.path.abspath(os.path.expanduser(value))
    if env.get(ENV_CACHE_DIR):
        return os.path.join(os.path.abspath(os.path.expanduser(env[ENV_CACHE_DIR])), "reference")
    return os.path.join(os.path.expanduser("~"), ".cache", "npu-block-gate", "reference")


def hub_dir(environ=None):
    env = os.environ if environ is None else environ
    if env.get("HF_HUB_CACHE"):
        return env["HF_HUB_CACHE"]
    if env.get("HF_HOME"):
        return os.path.join(env["HF_HOME"], "hub")
    return os.path.join(os.path.expanduser("~"), ".cache", "huggingface", "hub")


def snapshot_revision(hf_id, environ=None):
    """The commit hash refs/main names in the local HF hub cache, or None."""
    if not isinstance(hf_id, str) or hf_id.count("/") != 1 or os.path.isabs(hf_id):
        return None
    path = os.path.join(hub_dir(environ), "models--" + hf_id.replace("/", "--"), "refs", "main")
    try:
        with open(path, encoding="utf-8") as f:
            rev = f.read().strip()
    except OSError:
        return None
    return rev or None


def sources_hash(llms_dir, model_dir, model):
    """sha256 over the emulated reference's weight-generating sources."""
    files = sorted(
        glob.glob(os.path.join(llms_dir, "shared", "infra", "*.py"))
        + glob.glob(os.path.join(llms_dir, "verify", "runners", "*.py"))
        + [p for p in [os.path.join(model_dir, f"{model}_weights.py")] if os.path.isfile(p)]
    )
    h = hashlib.sha256()
    for path in files:
        rel = os.path.relpath(path, llms_dir).replace(os.sep, "/")
        with open(path, "rb") as f:
            data = f.read()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def key_inputs(tree, ref_record, tokens, layers, adapter_file=None):
    """(inputs dict, None) or (None, reason it cannot be cached)."""
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
    if ref_record["kind"] == "emulated":
        inputs["revision"] = "sources:" + sources_hash(tree.llms_dir, tree.model_dir, tree.model)
        # The emulated reference is built from this checkout's files; another copy never vouches for it.
        inputs["tree"] = os.path.realpath(tree.air_root)
    else:
        inputs["revision"] = snapshot_revision(ref_record["model_id"])
        if inputs["revision"] is None:
            return None, (f"no local HF snapshot revision for {ref_record['model_id']} "
                          f"(refs/main under {hub_dir()}); not cached")
    if adapter_file is not None:  # a custom build_hf_model: its source is part of the reference
        with open(adapter_file, "rb") as f:
            inputs["adapter_hf_model"] = hashlib.sha256(f.read()).hexdigest()
    return inputs, None


def cache_key(inputs):
    blob = json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:KEY_LEN]


def _layer_name(li):
    return f"layer_{int(li):02d}.npy"


def load(entry_dir, layers, real_len, emb_dim):
    """{li: array} when every wanted layer is there with shape (real_len, emb_dim); else None."""
    out = {}
    try:
        with open(os.path.join(entry_dir, META_FILE), encoding="utf-8") as f:
            meta = json.load(f)
        stored = meta.get("stored_layers") or layers
        for li in stored:
            arr = np.load(os.path.join(entry_dir, _layer_name(li)), allow_pickle=False)
            if arr.dtype != np.float32 or arr.shape != (real_len, emb_dim):
                return None
            out[int(li)] = np.array(arr, dtype=np.float32, copy=True)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return out if 0 in out else None


def store(root, key, inputs, arrays, kind):
    """Write the entry atomically; an entry that appeared meanwhile is kept."""
    dest = os.path.join(root, key)
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{key}.", suffix=".tmp", dir=root)
    try:
        for li, arr in sorted(arrays.items()):
            write_npy(os.path.join(tmp, _layer_name(li)), arr)
        created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        write_json(os.path.join(tmp, META_FILE),
                   {"key": key, "inputs": inputs, "kind": kind, "stored_layers": sorted(arrays),
                    "created_at": created})
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, dest)
        except OSError:
            if not os.path.isdir(dest):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def discard(entry_dir):
    """A bad entry is recomputed and overwritten."""
    shutil.rmtree(entry_dir, ignore_errors=True)
