"""CPU (float32 numpy) helpers for tiny_qwen25.

These are the CPU equivalents used when a bisect swaps an NPU step out
(`rms_norm` for attn_norm/ffn_norm, `attention_reference` for attention).
They never see an injected bug.
"""

import numpy as np


def rms_norm(x, weight, eps=1e-6):
    """x / sqrt(mean(x^2) + eps) * weight, in float32. x: (M, N), weight: (N,)."""
    x = np.asarray(x, dtype=np.float32)
    w = np.asarray(weight, dtype=np.float32)
    return x / np.sqrt(np.mean(np.square(x), axis=-1, keepdims=True) + np.float32(eps)) * w


def softmax(x, axis=-1):
    """Numerically stable softmax in float32."""
    x = np.asarray(x, dtype=np.float32)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def attention_reference(q, k, v, n_heads, n_kv_heads):
    """Causal GQA attention in float32.

    q: (S, n_heads*hd) RoPE'd; k: (S, n_kv_heads*hd) RoPE'd; v: (S, n_kv_heads*hd).
    Returns (S, n_heads*hd).
    """
    q = np.asarray(q, dtype=np.float32)
    k = np.asarray(k, dtype=np.float32)
    v = np.asarray(v, dtype=np.float32)
    S = q.shape[0]
    hd = q.shape[1] // n_heads
    group = n_heads // n_kv_heads
    mask = np.triu(np.ones((S, S), dtype=bool), k=1)
    out = np.empty((S, n_heads, hd), dtype=np.float32)
    for h in range(n_heads):
        kvh = h // group
        qh = q[:, h * hd:(h + 1) * hd]
        kh = k[:, kvh * hd:(kvh + 1) * hd]
        vh = v[:, kvh * hd:(kvh + 1) * hd]
        scores = (qh @ kh.T) / np.float32(np.sqrt(hd))
        scores[mask] = -np.inf
        out[:, h, :] = softmax(scores, axis=-1) @ vh
    return out.reshape(S, n_heads * hd)
