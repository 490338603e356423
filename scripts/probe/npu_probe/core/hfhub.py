"""The local HF hub cache and the offline switches, by contract.json `hf_hub` (the rules
huggingface_hub itself follows; src/contract.ts applies the same ones). Standard library only:
the plan reads the hub cache too."""

import json
import os

from npu_probe.core.contract import HF_HUB

# Every variable the probe sets to 1 for a run without --online (and puts back after).
OFFLINE_VARS = tuple(HF_HUB["offline_env"]) + tuple(HF_HUB["offline_also"])


def _home(environ):
    return environ.get("HOME") or os.path.expanduser("~")


def hub_dir(environ=None):
    """The hub cache dir: $HF_HUB_CACHE (or its older name), else $HF_HOME/hub, else
    ($XDG_CACHE_HOME or ~/.cache)/huggingface/hub."""
    env = os.environ if environ is None else environ
    for var in HF_HUB["cache_env"]:
        if env.get(var):
            return env[var]
    if env.get(HF_HUB["home_env"]):
        return os.path.join(env[HF_HUB["home_env"]], HF_HUB["home_hub"])
    cache = env.get(HF_HUB["xdg_env"]) or os.path.join(_home(env), HF_HUB["user_cache"])
    return os.path.join(cache, HF_HUB["xdg_subdir"], HF_HUB["home_hub"])


def repo_dir(hf_id, environ=None):
    """`<hub>/models--org--name` for an HF id `org/name`."""
    return os.path.join(hub_dir(environ), HF_HUB["repo_prefix"] + hf_id.replace("/", HF_HUB["repo_sep"]))


def ref_file(hf_id, environ=None):
    """The file naming the snapshot revision the hub resolves `hf_id` to (refs/main)."""
    return os.path.join(repo_dir(hf_id, environ), *HF_HUB["ref"].split("/"))


def snapshot_dir(hf_id, revision, environ=None):
    return os.path.join(repo_dir(hf_id, environ), HF_HUB["snapshots"], revision)


def snapshot_revision(hf_id, environ=None):
    """The commit hash refs/main names in the local HF hub cache, or None."""
    if not isinstance(hf_id, str) or hf_id.count("/") != 1 or os.path.isabs(hf_id):
        return None
    try:
        with open(ref_file(hf_id, environ), encoding="utf-8") as f:
            rev = f.read().strip()
    except OSError:
        return None
    return rev or None


def snapshot_config(hf_id, environ=None):
    """(config.json as a dict, its path) of the local snapshot of `hf_id` (or of a local model dir),
    else (None, why not). What the run loads: the plan and --emulate read the same file."""
    if isinstance(hf_id, str) and os.path.isdir(hf_id):
        path = os.path.join(hf_id, "config.json")
    else:
        rev = snapshot_revision(hf_id, environ)
        if rev is None:
            return None, f"no local HF snapshot of {hf_id} ({ref_file(hf_id, environ) if isinstance(hf_id, str) else hf_id})"
        path = os.path.join(snapshot_dir(hf_id, rev, environ), "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        return None, f"{path}: {exc}"
    if not isinstance(data, dict):
        return None, f"{path}: not a JSON object"
    return data, path


def is_offline(environ=None):
    """True when the HF libraries will not call the hub (any offline switch set true)."""
    env = os.environ if environ is None else environ
    true = {v.upper() for v in HF_HUB["true_values"]}
    return any((env.get(var) or "").strip().upper() in true for var in HF_HUB["offline_env"])


def go_offline(environ):
    """Set every offline switch: no run waits on hub retries, the local cache only."""
    for var in OFFLINE_VARS:
        environ[var] = "1"
