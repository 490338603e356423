"""The local HF hub cache: where it is and which snapshot revision refs/main names."""

import os


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
