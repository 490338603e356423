"""Integration-bug injection for the emulated NPU path.

`npu-block-gate check --emulate --inject NAME` on this tree sets the
environment variable AIR_MINI_INJECT to NAME for the probe (the same names as
the probe's emulated NPU on the real mlir-air tree: contract.json
emulate.inject); setting AIR_MINI_INJECT yourself does the same. The emulated
NPU kernels then misbehave in that one way. The HF reference
(verify/runners/hf_runner.py) never reads it. An unknown value is an error,
and a name air-mini used before the names were shared says what it is now.
The variable is read at every call, so a test can change it between runs.
"""

import os

import numpy as np

ENV_VAR = "AIR_MINI_INJECT"

# name -> (bisect step where the bug lives, what it does)
INJECTIONS = {
    "transposed_q_weight": (
        "q_proj",
        "the Q projection kernel reads its weight as (out, in) instead of (in, out), "
        "i.e. uses wq untransposed (wq is square, so it still runs)",
    ),
    "dropped_bias": (
        "qkv_bias",
        "the Q/K/V bias add is skipped (models with qkv_bias only; a no-op elsewhere)",
    ),
    "missing_causal_mask": (
        "attention",
        "attention runs without the causal mask (every position sees future tokens)",
    ),
    "interleaved_rope": (
        "rope",
        "RoPE rotates interleaved pairs (x[2i], x[2i+1]) instead of the "
        "half-split pairs (x[i], x[i + head_dim/2])",
    ),
    "rope_k_only": (
        "rope",
        "RoPE is applied to K only; Q leaves the ELF unrotated",
    ),
    "ignored_rmsnorm_weight": (
        "attn_norm",
        "the attention RMSNorm ignores its weight (uses ones)",
    ),
    "ignored_ffn_norm_weight": (
        "ffn_norm",
        "the FFN RMSNorm (after attention) ignores its weight (uses ones)",
    ),
    "stale_tail": (
        "residual2",
        "the write-back of the last 3 real rows is skipped, so they keep the "
        "residual staged in the output buffer (the post-attention residual "
        "x + o_proj, i.e. the block output without its FFN contribution)",
    ),
    "nan_row": (
        "residual2",
        "one element of one real row of the block output is NaN "
        "(row real_len // 2, column 0)",
    ),
    "nan_padded": (
        "residual2",
        "one element of the LAST row of the output buffer is NaN; that row is a "
        "padded row whenever the prompt is shorter than the compiled seq_len",
    ),
    "scale_drift": (
        "residual2",
        "the block output is multiplied by 1.05 (cosine-blind magnitude error)",
    ),
}

# Names air-mini used before it shared the probe's names: what each is called now.
RENAMED = {
    "missing_transpose": "transposed_q_weight",
    "no_causal_mask": "missing_causal_mask",
    "rope_layout": "interleaved_rope",
}


def active():
    """Return the active injection name or None; raise on an unknown value."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value or value.lower() in ("none", "off", "0"):
        return None
    if value in RENAMED:
        raise ValueError(
            f"{ENV_VAR}={value!r} is now called {RENAMED[value]!r} (the name --inject uses on "
            f"the real tree too): npu-block-gate check --emulate --inject {RENAMED[value]}"
        )
    if value not in INJECTIONS:
        raise ValueError(
            f"{ENV_VAR}={value!r} is not a known injection; "
            f"choose one of: {', '.join(sorted(INJECTIONS))}"
        )
    return value


def real_rows(x):
    """Number of real rows of a zero-padded block input.

    The caller pads the prompt with all-zero rows up to the compiled seq_len,
    so the real rows are everything up to the last row that is not all zero.
    This is exact for layer 0 (the block under test); for later layers the
    padded rows are no longer zero and every row counts as real.
    """
    nz = np.flatnonzero(np.any(np.asarray(x) != 0, axis=1))
    return int(nz[-1]) + 1 if nz.size else 0

