"""Deterministic synthetic checkpoints for the air-mini models.

The weights stand in for a trained checkpoint, so they are drawn to behave
like one where it matters for a block-level gate:

* attention is sharp, not uniform: Q/K projections (or the Qwen3 q_norm /
  k_norm gains) are scaled so that attention logits have a standard deviation
  of about `logit_std` (several units), so each query concentrates on a few
  keys. With near-uniform attention, RoPE and causal-mask bugs would barely
  move the output.
* the block's own contribution dominates its input, as in layer 0 of a real
  model (small token embeddings, large attention/FFN outputs): embeddings are
  small next to the attention and FFN outputs, so a bug inside the block
  cannot hide behind the residual stream.

Every value is rounded to bf16 (values are bf16-representable float32).
The seed is derived from the model id, so base and instruct differ.
"""

import zlib

import numpy as np

from .bf16 import to_bf16

DEFAULT_SCALES = {
    "embed_std": 0.25,   # token embedding element std (residual input to layer 0)
    "logit_std": 3.0,    # target std of q.k / sqrt(head_dim)
    "v_std": 1.0,        # element std of V
    "o_gain": 1.5,       # o_proj output element std ~ o_gain * std(attn_out)
    "ffn_std": 1.0,      # element std of the down projection output
    "norm_jitter": 0.1,  # RMSNorm gains ~ 1 + N(0, jitter)
    "bias_std": 0.5,     # Qwen2.5 q/k/v bias element std
}


def seed_for(name, salt):
    return zlib.crc32(f"{salt}:{name}".encode()) & 0xFFFFFFFF


_DRAWN = {}  # what draw() made in this process, by everything it depends on


def draw(config, name, salt, scales=None):
    """Return a dict with 'embed_table', 'final_norm', 'lm_head', 'layers'.

    A process that loads one checkpoint twice (the NPU side and the reference) draws it once:
    each call gets its own copies, so a change to one side's arrays never reaches the other."""
    fields = ("n_layers", "emb_dim", "head_dim", "hidden_dim", "n_heads", "n_kv_heads", "vocab_size",
              "qk_norm", "qkv_bias", "tie_word_embeddings")
    key = (name, salt, tuple(getattr(config, f, None) for f in fields), tuple(sorted((scales or {}).items())))
    if key not in _DRAWN:
        _DRAWN[key] = _draw(config, name, salt, scales)
    d = _DRAWN[key]
    embed = d["embed_table"].copy()
    return {"embed_table": embed, "final_norm": d["final_norm"].copy(),
            "lm_head": embed if d["lm_head"] is d["embed_table"] else d["lm_head"].copy(),
            "layers": [{k: v.copy() for k, v in lw.items()} for lw in d["layers"]]}


def _draw(config, name, salt, scales=None):
    s = dict(DEFAULT_SCALES)
    s.update(scales or {})
    rng = np.random.default_rng(seed_for(name, salt))
    E, D, H = config.emb_dim, config.head_dim, config.hidden_dim
    Q, KV = config.n_heads * D, config.n_kv_heads * D
    qk_norm = bool(getattr(config, "qk_norm", False))
    qkv_bias = bool(getattr(config, "qkv_bias", False))

    def normal(shape, std):
        return to_bf16(rng.standard_normal(shape).astype(np.float32) * np.float32(std))

    def gain(n):
        return to_bf16(1.0 + rng.standard_normal(n).astype(np.float32) * s["norm_jitter"])

    embed = normal((config.vocab_size, E), s["embed_std"])
    layers = []
    for _ in range(config.n_layers):
        lw = {"attn_norm": gain(E)}
        if qk_norm:
            # q/k are re-normalised per head, so the q_norm/k_norm gains set the
            # logit scale: std(q.k/sqrt(D)) ~ gq * gk.
            g = float(np.sqrt(s["logit_std"]))
            lw["wq"] = normal((E, Q), 1.0 / np.sqrt(E))
            lw["wk"] = normal((E, KV), 1.0 / np.sqrt(E))
            lw["q_norm"] = to_bf16(g * (1.0 + 0.1 * rng.standard_normal(D)))
            lw["k_norm"] = to_bf16(g * (1.0 + 0.1 * rng.standard_normal(D)))
        else:
            per = float(np.sqrt(s["logit_std"]))  # std of q and k elements
            lw["wq"] = normal((E, Q), per / np.sqrt(E))
            lw["wk"] = normal((E, KV), per / np.sqrt(E))
        lw["wv"] = normal((E, KV), s["v_std"] / np.sqrt(E))
        if qkv_bias:
            lw["bq"] = normal((Q,), s["bias_std"])
            lw["bk"] = normal((KV,), s["bias_std"])
            lw["bv"] = normal((KV,), s["bias_std"])
        lw["wo"] = normal((Q, E), s["o_gain"] / np.sqrt(Q))
        lw["ffn_norm"] = gain(E)
        lw["w_gate"] = normal((E, H), 1.0 / np.sqrt(E))
        lw["w_up"] = normal((E, H), 1.0 / np.sqrt(E))
        # silu(g) * u with g, u ~ N(0, 1) has std ~ 0.6
        lw["w_down"] = normal((H, E), s["ffn_std"] / (0.6 * np.sqrt(H)))
        layers.append(lw)
    final_norm = gain(E)
    if getattr(config, "tie_word_embeddings", False):
        lm_head = embed
    else:
        lm_head = normal((config.vocab_size, E), 1.0 / np.sqrt(E))
    return {"embed_table": embed, "final_norm": final_norm, "lm_head": lm_head,
            "layers": layers}


def rope_lut(head_dim, base, seq_len):
    """(seq_len, head_dim) table [cos | sin], half-split layout, bf16 values."""
    half = head_dim // 2
    inv = 1.0 / (float(base) ** (np.arange(half, dtype=np.float64) * 2.0 / head_dim))
    ang = np.arange(seq_len, dtype=np.float64)[:, None] * inv[None, :]
    return to_bf16(np.concatenate([np.cos(ang), np.sin(ang)], axis=1).astype(np.float32))
