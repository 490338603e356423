"""What every air-mini `<model>_weights.py` shares.

A model's weights module has the names of a real one: `LlamaConfig`,
`LayerWeights`, `LlamaWeights`, `load_weights`, `generate_rope_lut`. Its own
parts stay in it: the config values, `HF_MODEL_IDS`, the architecture and
the layer tensors it adds to the nine every model has (`LayerWeights` here).
The rest is this module: the `LlamaWeights` container, how a name resolves to
a checkpoint id and the loader. There is no checkpoint: `load_weights` draws
a deterministic synthetic one (see synthetic.py for how the scales are
chosen).

bf16 tensors are float32 arrays holding bf16-representable values
(`LlamaConfig.dtype` is that container dtype, float32).
"""

from dataclasses import dataclass, field
from typing import List

import numpy as np

from . import synthetic


@dataclass
class LayerWeights:
    """The nine tensors of every model's layer, stored (in, out)."""

    attn_norm: np.ndarray  # (emb_dim,)
    wq: np.ndarray  # (emb_dim, n_heads*head_dim)   stored (in, out)
    wk: np.ndarray  # (emb_dim, n_kv_heads*head_dim)
    wv: np.ndarray  # (emb_dim, n_kv_heads*head_dim)
    wo: np.ndarray  # (n_heads*head_dim, emb_dim)
    ffn_norm: np.ndarray  # (emb_dim,)
    w_gate: np.ndarray  # (emb_dim, hidden_dim)
    w_up: np.ndarray  # (emb_dim, hidden_dim)
    w_down: np.ndarray  # (hidden_dim, emb_dim)


@dataclass
class LlamaWeights:
    embed_table: np.ndarray  # (vocab_size, emb_dim)
    layers: List[LayerWeights] = field(default_factory=list)
    final_norm: np.ndarray = None  # (emb_dim,)
    lm_head: np.ndarray = None  # (vocab_size, emb_dim); the embed table when tied


def canonical_name(model_name_or_path, hf_model_ids, model_key):
    """The checkpoint id for a name: "base" / "instruct" / the model dir's name
    (or nothing) map onto `hf_model_ids`; any other name is kept."""
    name = str(model_name_or_path or hf_model_ids[0])
    aliases = {"base": hf_model_ids[0], "instruct": hf_model_ids[1],
               model_key: hf_model_ids[0]}
    return aliases.get(name, name)


def load_weights(config, checkpoint_id, salt, layer_weights_cls):
    """Deterministic synthetic weights of `checkpoint_id` for `config`, seeded
    from the id and `salt` (the model dir's name); layers are `layer_weights_cls`."""
    d = synthetic.draw(config, checkpoint_id, salt)
    return LlamaWeights(
        embed_table=d["embed_table"],
        layers=[layer_weights_cls(**lw) for lw in d["layers"]],
        final_norm=d["final_norm"],
        lm_head=d["lm_head"],
    )


def rope_lut(config, seq_len):
    """(seq_len, head_dim) RoPE table, [cos_0..cos_{h-1} | sin_0..sin_{h-1}]."""
    return synthetic.rope_lut(config.head_dim, config.rope_base, seq_len)
