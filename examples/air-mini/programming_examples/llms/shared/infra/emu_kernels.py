"""numpy emulations of the air-mini "ELFs".

Each emulated ELF is a fixed argument list (inputs, weights, output buffers)
and an ordered list of named sub-steps. Inside an ELF, math runs in float32
(fp32 accumulation); every sub-step's result is rounded to bf16, as the real
multi-launch ELFs store every launch's result in a bf16 buffer.

Sub-steps are the bisect granularity: a step named in `cpu_steps` is computed
by its CPU equivalent instead (the model's `<model>_cpu_helpers.py` for
rms_norm / attention / qk_norm, small inline numpy for the rest), which never
sees an injected bug. See BISECT steps in each `<model>_prefill.py`.

Kernel authors: the NPU implementations below are written independently of the
HF reference in verify/runners/hf_runner.py (different op grouping, tiling and
rounding points), so comparing the two is a real test.
"""

import numpy as np

from .bf16 import to_bf16
from . import inject as _inject

K_TILE = 64  # GEMM reduction tile: fp32 partial sums are added tile by tile
KV_TILE = 64  # flash-attention key tile (online softmax)


# ---------------------------------------------------------------------------
# Module descriptions ("MLIR modules" of the emulation)
# ---------------------------------------------------------------------------


class EmuModule:
    """What `compile_and_cache` compiles: a kernel kind plus its arg shapes."""

    def __init__(self, kind, seq_len, arg_names, arg_shapes, outputs, static):
        if kind not in KERNELS:
            raise ValueError(f"unknown air-mini kernel kind {kind!r}")
        self.kind = kind
        self.seq_len = int(seq_len)
        self.arg_names = list(arg_names)
        self.arg_shapes = [list(s) for s in arg_shapes]
        self.outputs = list(outputs)
        self.static = list(static)

    def describe(self):
        return {
            "format": "air-mini-emulated-elf/1",
            "kind": self.kind,
            "seq_len": self.seq_len,
            "args": [
                {"name": n, "shape": s} for n, s in zip(self.arg_names, self.arg_shapes)
            ],
            "outputs": self.outputs,
            "static": self.static,
        }


def _dims(config):
    q = config.n_heads * config.head_dim
    kv = config.n_kv_heads * config.head_dim
    return config.emb_dim, q, kv, config.hidden_dim, config.head_dim


def check_seq_len(seq_len):
    if not isinstance(seq_len, (int, np.integer)) or seq_len <= 0 or seq_len % 64:
        raise ValueError(
            f"seq_len must be a positive multiple of 64 (got {seq_len!r}); "
            "pad the prompt up to the compiled length"
        )


def build_module(kind, seq_len, config):
    """Describe one emulated ELF for `config` at `seq_len`."""
    check_seq_len(seq_len)
    S = int(seq_len)
    E, Q, KV, H, D = _dims(config)
    if kind == "rms_gemms_rope":
        names = ["x", "attn_norm", "wq", "wk", "wv", "rope_lut", "q_roped", "k_roped", "v"]
        shapes = [(S, E), (E,), (E, Q), (E, KV), (E, KV), (S, D), (S, Q), (S, KV), (S, KV)]
        return EmuModule(kind, S, names, shapes, [6, 7, 8], [1, 2, 3, 4, 5])
    if kind == "rms_qkv_qknorm_rope":
        names = ["x", "attn_norm", "wq", "wk", "wv", "q_norm", "k_norm", "rope_lut",
                 "q_roped", "k_roped", "v"]
        shapes = [(S, E), (E,), (E, Q), (E, KV), (E, KV), (D,), (D,), (S, D),
                  (S, Q), (S, KV), (S, KV)]
        return EmuModule(kind, S, names, shapes, [8, 9, 10], [1, 2, 3, 4, 5, 6, 7])
    if kind == "rms_qkv_bias_rope":
        names = ["x", "attn_norm", "wq", "wk", "wv", "bq", "bk", "bv", "rope_lut",
                 "q_roped", "k_roped", "v"]
        shapes = [(S, E), (E,), (E, Q), (E, KV), (E, KV), (Q,), (KV,), (KV,), (S, D),
                  (S, Q), (S, KV), (S, KV)]
        return EmuModule(kind, S, names, shapes, [9, 10, 11], [1, 2, 3, 4, 5, 6, 7, 8])
    if kind == "flash_attn":
        names = ["q", "k", "v", "attn_out"]
        shapes = [(S, Q), (S, KV), (S, KV), (S, Q)]
        return EmuModule(kind, S, names, shapes, [3], [])
    if kind == "o_ffn":
        names = ["attn_out", "wo", "x_residual", "ffn_norm", "w_gate", "w_up", "w_down",
                 "out"]
        shapes = [(S, Q), (Q, E), (S, E), (E,), (E, H), (E, H), (H, E), (S, E)]
        return EmuModule(kind, S, names, shapes, [7], [1, 3, 4, 5, 6])
    if kind == "o_ffn_head":
        names = ["attn_out", "wo", "x_residual", "ffn_norm", "w_gate", "w_up",
                 "res1", "swiglu"]
        shapes = [(S, Q), (Q, E), (S, E), (E,), (E, H), (E, H), (S, E), (S, H)]
        return EmuModule(kind, S, names, shapes, [6, 7], [1, 3, 4, 5])
    if kind == "down_add":
        names = ["swiglu", "w_down", "res1", "out"]
        shapes = [(S, H), (H, E), (S, E), (S, E)]
        return EmuModule(kind, S, names, shapes, [3], [1])
    raise ValueError(f"unknown air-mini kernel kind {kind!r}")


# ---------------------------------------------------------------------------
# Inline CPU equivalents for the steps without a <model>_cpu_helpers function
# ---------------------------------------------------------------------------


def cpu_gemm(a, w):
    return np.asarray(a, np.float32) @ np.asarray(w, np.float32)


def cpu_add(a, b):
    return np.asarray(a, np.float32) + np.asarray(b, np.float32)


def cpu_rope_halfsplit(x, lut, n_heads, head_dim):
    S = x.shape[0]
    half = head_dim // 2
    xh = np.asarray(x, np.float32).reshape(S, n_heads, head_dim)
    cos = np.asarray(lut[:S, :half], np.float32)[:, None, :]
    sin = np.asarray(lut[:S, half:], np.float32)[:, None, :]
    rot = np.concatenate([-xh[..., half:], xh[..., :half]], axis=-1)
    return (xh * np.concatenate([cos, cos], -1) + rot * np.concatenate([sin, sin], -1)
            ).reshape(S, n_heads * head_dim)


def cpu_swiglu(g, u):
    g = np.asarray(g, np.float32)
    return g / (1.0 + np.exp(-g)) * np.asarray(u, np.float32)


# ---------------------------------------------------------------------------
# NPU implementations (fp32 inside, bf16 out, injection-aware)
# ---------------------------------------------------------------------------


def npu_rms_norm(x, w, eps):
    xf = np.asarray(x, np.float32)
    ms = np.einsum("ij,ij->i", xf, xf, dtype=np.float32) / np.float32(xf.shape[1])
    inv = (np.float32(1.0) / np.sqrt(ms + np.float32(eps))).astype(np.float32)
    return to_bf16(xf * inv[:, None] * np.asarray(w, np.float32)[None, :])


def npu_gemm(a, w):
    """Tiled GEMM: fp32 partial products per K tile, one bf16 cast at the end."""
    a = np.asarray(a, np.float32)
    w = np.asarray(w, np.float32)
    acc = np.zeros((a.shape[0], w.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], K_TILE):
        acc += a[:, k0:k0 + K_TILE] @ w[k0:k0 + K_TILE, :]
    return to_bf16(acc)


def npu_rope(x, lut, n_heads, head_dim, interleaved=False):
    S = x.shape[0]
    half = head_dim // 2
    xh = np.asarray(x, np.float32).reshape(S, n_heads, head_dim)
    cos = np.asarray(lut[:S, :half], np.float32)[:, None, :]
    sin = np.asarray(lut[:S, half:], np.float32)[:, None, :]
    out = np.empty_like(xh)
    if interleaved:
        a, b = xh[..., 0::2], xh[..., 1::2]
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = b * cos + a * sin
    else:
        a, b = xh[..., :half], xh[..., half:]
        out[..., :half] = a * cos - b * sin
        out[..., half:] = b * cos + a * sin
    return to_bf16(out.reshape(S, n_heads * head_dim))


def npu_head_rms_norm(x, w, n_heads, head_dim, eps):
    """weighted_rms_norm with heads as rows (M = S*n_heads, N = head_dim)."""
    S = x.shape[0]
    return npu_rms_norm(np.asarray(x).reshape(S * n_heads, head_dim), w, eps).reshape(
        S, n_heads * head_dim)


def npu_flash_attention(q, k, v, n_heads, n_kv_heads, causal=True):
    """Online-softmax attention over KV tiles, fp32 state, bf16 output."""
    S = q.shape[0]
    D = q.shape[1] // n_heads
    group = n_heads // n_kv_heads
    scale = np.float32(1.0 / np.sqrt(D))
    qh = np.asarray(q, np.float32).reshape(S, n_heads, D).transpose(1, 0, 2) * scale
    kh = np.asarray(k, np.float32).reshape(S, n_kv_heads, D).transpose(1, 0, 2)
    vh = np.asarray(v, np.float32).reshape(S, n_kv_heads, D).transpose(1, 0, 2)
    out = np.empty((n_heads, S, D), np.float32)
    rows = np.arange(S)[:, None]
    for h in range(n_heads):
        kv = h // group
        m = np.full((S, 1), -np.inf, np.float32)
        l = np.zeros((S, 1), np.float32)
        acc = np.zeros((S, D), np.float32)
        for t0 in range(0, S, KV_TILE):
            s = qh[h] @ kh[kv, t0:t0 + KV_TILE].T
            if causal:
                cols = np.arange(t0, min(t0 + KV_TILE, S))[None, :]
                s = np.where(cols <= rows, s, np.float32(-np.inf))
            m_new = np.maximum(m, s.max(axis=1, keepdims=True))
            safe = np.where(np.isfinite(m_new), m_new, np.float32(0))
            p = np.exp(s - safe)
            corr = np.exp(np.where(np.isfinite(m), m - safe, np.float32(-np.inf)))
            l = l * corr + p.sum(axis=1, keepdims=True)
            acc = acc * corr + p @ vh[kv, t0:t0 + KV_TILE]
            m = m_new
        out[h] = acc / l
    return to_bf16(out.transpose(1, 0, 2).reshape(S, n_heads * D))


def npu_swiglu(g, u):
    g = np.asarray(g, np.float32)
    silu = g * (np.float32(1.0) / (np.float32(1.0) + np.exp(-g)))
    return to_bf16(silu * np.asarray(u, np.float32))


# ---------------------------------------------------------------------------
# ELF emulators
# ---------------------------------------------------------------------------


class _Ctx:
    def __init__(self, run_kwargs, spec):
        run_kwargs = run_kwargs or {}
        self.cpu_steps = frozenset(run_kwargs.get("cpu_steps") or ())
        self.cpu_ops = run_kwargs.get("cpu_ops") or {}
        self.eps = float(run_kwargs.get("eps", 1e-5))
        self.n_heads = int(run_kwargs["n_heads"])
        self.n_kv_heads = int(run_kwargs["n_kv_heads"])
        self.head_dim = int(run_kwargs["head_dim"])
        self.real_len = run_kwargs.get("real_len")
        self.bug = _inject.active()
        self.trace = run_kwargs.get("trace")  # optional dict: step -> tensor

    def step(self, name, npu, cpu):
        if name in self.cpu_steps:
            out = to_bf16(cpu())
        else:
            out = npu()
        if self.trace is not None:
            self.trace[name] = np.array(out, copy=True)
        return out

    def cpu_op(self, key):
        if key not in self.cpu_ops:
            raise KeyError(f"no CPU equivalent registered for {key!r}")
        return self.cpu_ops[key]


def _qkv_front(ctx, x, attn_norm, wq, wk, wv, q_norm=None, k_norm=None,
               bq=None, bk=None, bv=None, lut=None):
    nh, nkv, D, eps = ctx.n_heads, ctx.n_kv_heads, ctx.head_dim, ctx.eps
    norm_w = np.ones_like(attn_norm) if ctx.bug == "ignored_rmsnorm_weight" else attn_norm
    normed = ctx.step("attn_norm", lambda: npu_rms_norm(x, norm_w, eps),
                      lambda: ctx.cpu_op("rms_norm")(x, attn_norm, eps))
    q = ctx.step("q_proj",
                 lambda: npu_gemm(normed, wq.T if ctx.bug == "transposed_q_weight" else wq),
                 lambda: cpu_gemm(normed, wq))
    k = ctx.step("k_proj", lambda: npu_gemm(normed, wk), lambda: cpu_gemm(normed, wk))
    v = ctx.step("v_proj", lambda: npu_gemm(normed, wv), lambda: cpu_gemm(normed, wv))
    if bq is not None:
        def npu_bias():
            if ctx.bug == "dropped_bias":
                return q, k, v
            return (to_bf16(q + bq[None, :]), to_bf16(k + bk[None, :]),
                    to_bf16(v + bv[None, :]))

        if "qkv_bias" in ctx.cpu_steps:
            q, k, v = (to_bf16(cpu_add(q, bq[None, :])), to_bf16(cpu_add(k, bk[None, :])),
                       to_bf16(cpu_add(v, bv[None, :])))
        else:
            q, k, v = npu_bias()
        if ctx.trace is not None:
            ctx.trace["qkv_bias"] = np.concatenate([q, k, v], axis=1)
    if q_norm is not None:
        def npu_qkn():
            return (npu_head_rms_norm(q, q_norm, nh, D, eps),
                    npu_head_rms_norm(k, k_norm, nkv, D, eps))

        if "qk_norm" in ctx.cpu_steps:
            f = ctx.cpu_op("qk_norm")
            q, k = to_bf16(f(q, q_norm, nh, D, eps)), to_bf16(f(k, k_norm, nkv, D, eps))
        else:
            q, k = npu_qkn()
        if ctx.trace is not None:
            ctx.trace["qk_norm"] = np.concatenate([q, k], axis=1)
    inter = ctx.bug == "interleaved_rope"
    if "rope" in ctx.cpu_steps:
        qr = to_bf16(cpu_rope_halfsplit(q, lut, nh, D))
        kr = to_bf16(cpu_rope_halfsplit(k, lut, nkv, D))
    else:
        qr = to_bf16(q) if ctx.bug == "rope_k_only" else npu_rope(q, lut, nh, D, interleaved=inter)
        kr = npu_rope(k, lut, nkv, D, interleaved=inter)
    if ctx.trace is not None:
        ctx.trace["rope"] = np.concatenate([qr, kr], axis=1)
    return qr, kr, v


def _elf_rms_gemms_rope(args, ctx):
    x, attn_norm, wq, wk, wv, lut, q_out, k_out, v_out = args
    q, k, v = _qkv_front(ctx, x, attn_norm, wq, wk, wv, lut=lut)
    q_out[...], k_out[...], v_out[...] = q, k, v


def _elf_rms_qkv_qknorm_rope(args, ctx):
    x, attn_norm, wq, wk, wv, q_norm, k_norm, lut, q_out, k_out, v_out = args
    q, k, v = _qkv_front(ctx, x, attn_norm, wq, wk, wv, q_norm=q_norm, k_norm=k_norm,
                         lut=lut)
    q_out[...], k_out[...], v_out[...] = q, k, v


def _elf_rms_qkv_bias_rope(args, ctx):
    x, attn_norm, wq, wk, wv, bq, bk, bv, lut, q_out, k_out, v_out = args
    q, k, v = _qkv_front(ctx, x, attn_norm, wq, wk, wv, bq=bq, bk=bk, bv=bv, lut=lut)
    q_out[...], k_out[...], v_out[...] = q, k, v


def attention_step(ctx, q, k, v):
    """The 'attention' step, shared by the flash_attn ELF and the host fallback."""
    return ctx.step(
        "attention",
        lambda: npu_flash_attention(q, k, v, ctx.n_heads, ctx.n_kv_heads,
                                    causal=ctx.bug != "missing_causal_mask"),
        lambda: ctx.cpu_op("attention")(q, k, v, ctx.n_heads, ctx.n_kv_heads))


def _elf_flash_attn(args, ctx):
    q, k, v, out = args
    out[...] = attention_step(ctx, q, k, v)


def _o_and_ffn_front(ctx, attn, wo, x_res, ffn_norm, w_gate, w_up):
    o = ctx.step("o_proj", lambda: npu_gemm(attn, wo), lambda: cpu_gemm(attn, wo))
    res1 = ctx.step("residual1", lambda: to_bf16(np.asarray(x_res, np.float32) + o),
                    lambda: cpu_add(x_res, o))
    npu_norm_w = np.ones_like(ffn_norm) if ctx.bug == "ignored_ffn_norm_weight" else ffn_norm
    normed = ctx.step("ffn_norm", lambda: npu_rms_norm(res1, npu_norm_w, ctx.eps),
                      lambda: ctx.cpu_op("rms_norm")(res1, ffn_norm, ctx.eps))
    g = ctx.step("gate_proj", lambda: npu_gemm(normed, w_gate),
                 lambda: cpu_gemm(normed, w_gate))
    u = ctx.step("up_proj", lambda: npu_gemm(normed, w_up), lambda: cpu_gemm(normed, w_up))
    sw = ctx.step("swiglu", lambda: npu_swiglu(g, u), lambda: cpu_swiglu(g, u))
    return res1, sw


def _ffn_back(ctx, sw, w_down, res1, out):
    d = ctx.step("down_proj", lambda: npu_gemm(sw, w_down), lambda: cpu_gemm(sw, w_down))

    def npu_residual2():
        y = np.asarray(res1, np.float32) + d
        if ctx.bug == "scale_drift":
            y = y * np.float32(1.05)
        y = to_bf16(y)
        S = y.shape[0]
        real = S if ctx.real_len is None else int(ctx.real_len)
        if ctx.bug == "stale_tail":
            lo = max(real - 3, 0)
            y[lo:real] = res1[lo:real]  # write-back skipped: staged residual stays
        elif ctx.bug == "nan_row" and real > 0:
            y[real // 2, 0] = np.nan
        elif ctx.bug == "nan_padded":
            y[S - 1, 0] = np.nan
        return y

    out[...] = ctx.step("residual2", npu_residual2, lambda: cpu_add(res1, d))


def _elf_o_ffn(args, ctx):
    attn, wo, x_res, ffn_norm, w_gate, w_up, w_down, out = args
    res1, sw = _o_and_ffn_front(ctx, attn, wo, x_res, ffn_norm, w_gate, w_up)
    _ffn_back(ctx, sw, w_down, res1, out)


def _elf_o_ffn_head(args, ctx):
    attn, wo, x_res, ffn_norm, w_gate, w_up, res1_out, sw_out = args
    res1, sw = _o_and_ffn_front(ctx, attn, wo, x_res, ffn_norm, w_gate, w_up)
    res1_out[...], sw_out[...] = res1, sw


def _elf_down_add(args, ctx):
    sw, w_down, res1, out = args
    _ffn_back(ctx, sw, w_down, res1, out)


KERNELS = {
    "rms_gemms_rope": _elf_rms_gemms_rope,
    "rms_qkv_qknorm_rope": _elf_rms_qkv_qknorm_rope,
    "rms_qkv_bias_rope": _elf_rms_qkv_bias_rope,
    "flash_attn": _elf_flash_attn,
    "o_ffn": _elf_o_ffn,
    "o_ffn_head": _elf_o_ffn_head,
    "down_add": _elf_down_add,
}


def run_kernel(kind, args, run_kwargs, spec=None):
    ctx = _Ctx(run_kwargs, spec)
    KERNELS[kind](args, ctx)


def make_ctx(run_kwargs):
    """A step context for host-side steps (the cpu_attn=True attention path)."""
    return _Ctx(run_kwargs, None)
