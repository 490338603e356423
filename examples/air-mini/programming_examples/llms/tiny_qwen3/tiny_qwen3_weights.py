"""tiny_qwen3: config, weights and RoPE table (air-mini emulation).

The config, checkpoint ids and layer tensors are tiny_qwen3's own; the
`LlamaWeights` container and the synthetic loader are shared/infra/weights.py.
"""

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

_LLMS = str(Path(__file__).resolve().parent.parent)
if _LLMS not in sys.path:
    sys.path.insert(0, _LLMS)

from shared.infra import weights as _weights  # noqa: E402
from shared.infra.bf16 import BF16_CONTAINER  # noqa: E402
from shared.infra.weights import LlamaWeights  # noqa: E402,F401  (the contract's container)

# HF-style ids this module provides weights for (used by HfRunner to find us).
HF_MODEL_IDS = ("air-mini/tiny-qwen3", "air-mini/tiny-qwen3-instruct")
ARCHITECTURE = "Qwen3ForCausalLM"
MODEL_KEY = "tiny_qwen3"  # the model dir; it also seeds the synthetic checkpoint


@dataclass
class LlamaConfig:
    n_layers: int = 2
    emb_dim: int = 512
    n_heads: int = 4
    head_dim: int = 128
    n_kv_heads: int = 2  # GQA: 2 Q heads per KV head
    hidden_dim: int = 1024
    vocab_size: int = 1024
    rope_base: float = 1000000.0
    qk_norm: bool = True
    tie_word_embeddings: bool = True
    rms_norm_eps: float = 1e-6
    dtype: np.dtype = BF16_CONTAINER


@dataclass
class LayerWeights(_weights.LayerWeights):
    """The nine common tensors (shared/infra/weights.py) and Qwen3's Q/K norm gains."""

    q_norm: np.ndarray  # (head_dim,)  Qwen3 QK-norm
    k_norm: np.ndarray  # (head_dim,)  Qwen3 QK-norm


def canonical_name(model_name_or_path):
    return _weights.canonical_name(model_name_or_path, HF_MODEL_IDS, MODEL_KEY)


def load_weights(model_name_or_path=None, dtype=None, config: Optional[LlamaConfig] = None):
    """Deterministic synthetic weights for `model_name_or_path`."""
    config = config or LlamaConfig()
    return _weights.load_weights(config, canonical_name(model_name_or_path), MODEL_KEY,
                                 LayerWeights)


def generate_rope_lut(config: Optional[LlamaConfig] = None, seq_len: int = 2048, dtype=None):
    """(seq_len, head_dim) RoPE table, [cos_0..cos_{h-1} | sin_0..sin_{h-1}]."""
    return _weights.rope_lut(config or LlamaConfig(), seq_len)
