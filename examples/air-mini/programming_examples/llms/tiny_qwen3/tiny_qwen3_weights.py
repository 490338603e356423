"""tiny_qwen3: config, weights and RoPE table (air-mini emulation).

Same names as a real `<model>_weights.py`: `LlamaConfig`, `LayerWeights`,
`LlamaWeights`, `load_weights`, `generate_rope_lut`. There is no checkpoint:
`load_weights` draws a deterministic synthetic one (see
shared/infra/synthetic.py for how the scales are chosen).

bf16 tensors are float32 arrays holding bf16-representable values
(`LlamaConfig.dtype` is that container dtype, float32).
"""

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

import numpy as np

_LLMS = str(Path(__file__).resolve().parent.parent)
if _LLMS not in sys.path:
    sys.path.insert(0, _LLMS)

from shared.infra import synthetic  # noqa: E402
from shared.infra.bf16 import BF16_CONTAINER  # noqa: E402

# HF-style ids this module provides weights for (used by HfRunner to find us).
HF_MODEL_IDS = ("air-mini/tiny-qwen3", "air-mini/tiny-qwen3-instruct")
ARCHITECTURE = "Qwen3ForCausalLM"


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
class LayerWeights:
    attn_norm: np.ndarray  # (emb_dim,)
    wq: np.ndarray  # (emb_dim, n_heads*head_dim)   stored (in, out)
    wk: np.ndarray  # (emb_dim, n_kv_heads*head_dim)
    wv: np.ndarray  # (emb_dim, n_kv_heads*head_dim)
    wo: np.ndarray  # (n_heads*head_dim, emb_dim)
    ffn_norm: np.ndarray  # (emb_dim,)
    w_gate: np.ndarray  # (emb_dim, hidden_dim)
    w_up: np.ndarray  # (emb_dim, hidden_dim)
    w_down: np.ndarray  # (hidden_dim, emb_dim)
    q_norm: np.ndarray  # (head_dim,)  Qwen3 QK-norm
    k_norm: np.ndarray  # (head_dim,)  Qwen3 QK-norm


@dataclass
class LlamaWeights:
    embed_table: np.ndarray  # (vocab_size, emb_dim)
    layers: List[LayerWeights] = field(default_factory=list)
    final_norm: np.ndarray = None  # (emb_dim,)
    lm_head: np.ndarray = None  # (vocab_size, emb_dim), tied: the embed table


def canonical_name(model_name_or_path):
    name = str(model_name_or_path or HF_MODEL_IDS[0])
    aliases = {"base": HF_MODEL_IDS[0], "instruct": HF_MODEL_IDS[1],
               "tiny_qwen3": HF_MODEL_IDS[0]}
    return aliases.get(name, name)


def load_weights(model_name_or_path=None, dtype=None, config: Optional[LlamaConfig] = None):
    """Deterministic synthetic weights for `model_name_or_path`."""
    config = config or LlamaConfig()
    d = synthetic.draw(config, canonical_name(model_name_or_path), "tiny_qwen3")
    return LlamaWeights(
        embed_table=d["embed_table"],
        layers=[LayerWeights(**lw) for lw in d["layers"]],
        final_norm=d["final_norm"],
        lm_head=d["lm_head"],
    )


def generate_rope_lut(config: Optional[LlamaConfig] = None, seq_len: int = 2048, dtype=None):
    """(seq_len, head_dim) RoPE table, [cos_0..cos_{h-1} | sin_0..sin_{h-1}]."""
    config = config or LlamaConfig()
    return synthetic.rope_lut(config.head_dim, config.rope_base, seq_len)
