"""CPU (float32 numpy) equivalents of the block's steps, shared by every model.

Each `<model>_cpu_helpers.py` exposes these under the real tree's names and
fixes the model's own defaults (its RMSNorm eps); a bisect swaps an NPU step
for them (`rms_norm` for attn_norm/ffn_norm, `attention_reference` for
attention, `qk_norm_per_head` for Qwen3's Q/K norm). They never see an
injected bug.

They are written independently of both other implementations: the emulated
NPU kernels (emu_kernels.py) and the HF reference (verify/runners/hf_runner.py,
which imports nothing from shared/infra).
"""

import numpy as np


def rms_norm(x, weight, eps):
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


def qk_norm_per_head(x, weight, n_heads, head_dim, eps):
    """Qwen3 Q/K norm: RMSNorm over each head's head_dim slice, one shared
    (head_dim,) weight. x: (S, n_heads*head_dim) -> same shape, float32."""
    x = np.asarray(x, dtype=np.float32)
    S = x.shape[0]
    return rms_norm(x.reshape(S * n_heads, head_dim), weight, eps).reshape(
        S, n_heads * head_dim)
