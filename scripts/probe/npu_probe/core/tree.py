"""Find the mlir-air tree around a model dir and read what it declares.

Everything here only reads: the layout (programming_examples/llms/{verify,<model>}),
the canonical prompt, the adapter's config. Importing the user's modules happens
through `import_tree_module`, which turns an exception inside the tree into a
TreeCrash (exit 3) rather than a traceback.
"""

import dataclasses
import importlib
import os
import re
import sys

from npu_probe.core.errors import ProbeError, TreeCrash
from npu_probe.core.contract import (
    LLMS_DIR_NAME,
    PROGRAMMING_EXAMPLES,
    PROMPT_STYLES,
    WORKAROUND_PREREQUISITE,
)


@dataclasses.dataclass
class Tree:
    air_root: str  # repo root (parent of programming_examples)
    llms_dir: str  # <air_root>/programming_examples/llms
    verify_dir: str
    model_dir: str
    model: str  # model dir basename, e.g. "tiny_llama"

    def rel(self, path):
        """`path` relative to the air root, with forward slashes."""
        return os.path.relpath(path, self.air_root).replace(os.sep, "/")

    def rel_llms(self, path):
        return os.path.relpath(path, self.llms_dir).replace(os.sep, "/")


def _is_llms_dir(path):
    return (
        os.path.basename(path) == LLMS_DIR_NAME
        and os.path.basename(os.path.dirname(path)) == PROGRAMMING_EXAMPLES
    )


def find_llms_dir(start):
    """Walk up from `start` to the `programming_examples/llms` directory, or None."""
    cur = os.path.abspath(start)
    while True:
        if _is_llms_dir(cur):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def resolve_tree(model_dir, air_root=None):
    """Locate the tree and the model. Raises ProbeError on any layout problem."""
    if air_root is not None:
        root = os.path.abspath(air_root)
        if not os.path.isdir(root):
            raise ProbeError(air_root, "air root not found")
        llms = os.path.join(root, PROGRAMMING_EXAMPLES, LLMS_DIR_NAME)
        if not os.path.isdir(llms):
            raise ProbeError(llms, "not found: --air-root must be the mlir-air repo root (with programming_examples/llms)")
        if model_dir is None:
            raise ProbeError("--model-dir", "required")
        candidate = model_dir
        if not os.path.isdir(candidate) and not os.path.isabs(model_dir):
            candidate = os.path.join(llms, model_dir)  # `--model-dir tiny_llama` under --air-root
        if not os.path.isdir(candidate):
            raise ProbeError(model_dir, "model dir not found")
        mdir = os.path.realpath(candidate)
        if os.path.dirname(mdir) != os.path.realpath(llms):
            raise ProbeError(model_dir, f"model dir is not directly under {llms}")
        llms = os.path.realpath(llms)
    else:
        if model_dir is None:
            raise ProbeError("--model-dir", "required")
        if not os.path.isdir(model_dir):
            raise ProbeError(model_dir, "model dir not found")
        mdir = os.path.realpath(model_dir)
        llms = find_llms_dir(mdir)
        if llms is None:
            raise ProbeError(model_dir, "no programming_examples/llms directory above the model dir")
        if mdir == llms:
            raise ProbeError(model_dir, "is the llms dir itself; pass a model dir under it (e.g. llms/llama32_1b)")
        # The model is the child of llms/ on the way down (a deeper --model-dir
        # such as <model>/build_peano still names that model).
        rel = os.path.relpath(mdir, llms).split(os.sep)
        mdir = os.path.join(llms, rel[0])
    verify = os.path.join(llms, "verify")
    if not os.path.isdir(verify):
        raise ProbeError(verify, "not found: the tree has no verify/ subsystem")
    adapter = os.path.join(mdir, "verify_adapter.py")
    if not os.path.isfile(adapter):
        raise ProbeError(adapter, "not found: the model has no verify adapter")
    return Tree(
        air_root=os.path.dirname(os.path.dirname(llms)),
        llms_dir=llms,
        verify_dir=verify,
        model_dir=mdir,
        model=os.path.basename(mdir),
    )


def put_tree_on_path(tree):
    """As verify_runner does: llms/ and llms/verify/ first, then the model dir
    (the real modules import siblings such as `<model>_weights` by bare name)."""
    for p in (tree.model_dir, tree.verify_dir, tree.llms_dir):
        while p in sys.path:
            sys.path.remove(p)
        sys.path.insert(0, p)


def import_tree_module(name, where=None):
    try:
        return importlib.import_module(name)
    except Exception as exc:  # anything the user's module raises at import
        raise TreeCrash(where or f"import {name}", exc) from exc


def module_file_exists(tree, module_basename):
    return os.path.isfile(os.path.join(tree.model_dir, module_basename + ".py"))


# ---------------------------------------------------------------------------
# Prompts


def parse_prompt_lines(text):
    """(line_number, prompt) for every non-empty, non-comment line (1-based)."""
    out = []
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append((i, line))
    return out


def canonical_prompt(tree, style, override=None):
    """(text, source). `--prompt` wins; otherwise the first prompt of
    verify/prompts/<style>.txt, sourced as "verify/prompts/<style>.txt:<line>"."""
    if override is not None:
        if not override.strip():
            raise ProbeError("--prompt", "empty prompt")
        return override, "--prompt"
    prompts_dir = os.path.join(tree.verify_dir, "prompts")
    path = os.path.join(prompts_dir, f"{style}.txt")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", style or "") or not os.path.isfile(path):
        known = sorted(set(PROMPT_STYLES) | {f[:-4] for f in _listdir(prompts_dir) if f.endswith(".txt")})
        if style in PROMPT_STYLES or style in known:
            raise ProbeError(path, "prompt file not found")
        raise ProbeError(path, f"unknown prompt style {style!r} (known: {', '.join(known)})")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProbeError(path, f"cannot read prompt file: {exc}") from exc
    lines = parse_prompt_lines(text)
    if not lines:
        raise ProbeError(path, "no prompt in file (only comments or blank lines)")
    lineno, prompt = lines[0]
    return prompt, f"{tree.rel_llms(path)}:{lineno}"


def _listdir(d):
    try:
        return os.listdir(d)
    except OSError:
        return []


# ---------------------------------------------------------------------------
# Config and workarounds

# A tree whose NPU (and reference) are numpy emulations says so with this file at its root
# (examples/air-mini): no NPU runs there, so no NPU lock is taken, and --emulate runs its own NPU.
EMULATED_NPU_MARKER = "AIR_MINI"
# The variable such a tree reads its injected bug from (--inject sets it; set by hand it means the same).
TREE_INJECT_ENV = "AIR_MINI_INJECT"


def emulates_npu(tree):
    """Whether the tree's NPU is its own emulation (the marker at its root)."""
    return os.path.exists(os.path.join(tree.air_root, EMULATED_NPU_MARKER))


CONFIG_INT_FIELDS = ("n_layers", "emb_dim", "n_heads", "n_kv_heads", "head_dim", "hidden_dim")


def config_summary(config, source):
    """The ModelConfig record of probe.json from the adapter's config object."""
    out = {}
    for field in CONFIG_INT_FIELDS:
        value = getattr(config, field, None)
        if value is None:
            raise ProbeError(source, f"build_config() result has no {field}")
        out[field] = int(value)
    vocab = getattr(config, "vocab_size", None)
    if vocab is not None:
        out["vocab_size"] = int(vocab)
    rope = getattr(config, "rope_base", None)
    if rope is not None:
        out["rope_base"] = float(rope)
    out["qkv_bias"] = bool(getattr(config, "qkv_bias", False))
    out["qk_norm"] = bool(getattr(config, "qk_norm", False))
    # head_dim sets the G2 bar; the judge checks it against emb_dim / n_heads unless the config
    # declares its own (Qwen3: 128 with emb_dim 1024 and 16 heads), which this says.
    if out["head_dim"] * out["n_heads"] != out["emb_dim"]:
        out["head_dim_explicit"] = True
    return out


def detect_workarounds(cfg):
    """Seed Step 2 triggers, read from the config (not from what the tree did)."""
    found = []
    unaligned = [f"{k}={cfg[k]}" for k in ("emb_dim", "hidden_dim") if cfg[k] % 1024 != 0]
    if unaligned:
        found.append(
            {
                "id": "non_1024_aligned",
                "detail": (
                    f"{', '.join(unaligned)} not a multiple of 1024: BD-pool exhaustion risk at long "
                    "seq_len; GQA-aware padding to a 1024-aligned size keeps group size "
                    f"n_heads/n_kv_heads = {cfg['n_heads']}/{cfg['n_kv_heads']}"
                ),
                "prerequisite": WORKAROUND_PREREQUISITE,
            }
        )
    if cfg.get("qkv_bias"):
        found.append(
            {
                "id": "qkv_bias",
                "detail": "qkv_bias=True: Q/K/V biases must be applied (host-side post-RoPE add or on device)",
                "prerequisite": WORKAROUND_PREREQUISITE,
            }
        )
    return found
