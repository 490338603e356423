"""Records returned by every runner (HfRunner and the model adapters' NpuRunner)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PrefillRecord:
    # One dict per layer. For li < n_layers - 1: {"ffn_out": (L, emb_dim) float32},
    # the layer's output hidden state. The last entry is {} (see final_hidden_normed).
    layer_intermediates: list
    # Hidden state after the final RMSNorm, (L, emb_dim) float32.
    final_hidden_normed: np.ndarray
    # Logits at the last prompt position, (vocab_size,) float32.
    logits_at_pred: np.ndarray
    top1_token: int


@dataclass
class DecodeStepRecord:
    lm_head_logits: np.ndarray
    top1_token: int
