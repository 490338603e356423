"""CPU twins of the real mlir-air prefill ELFs: one numpy function per ELF kind.

A twin computes a launch's outputs from that launch's own inputs, the way the
ELF does: GEMMs with FP32 accumulation and one cast (the registry's
high-precision GEMM tier), every buffer the ELF writes rounded to bf16 (the ELF
boundaries: each fused sub-launch keeps its result in a bf16 buffer), and, with
the default precision `hardware`, the roundings the registry's kernels make
inside a launch (RMSNorm's bf16 scale, SiLU's chain, RoPE's bf16 products,
FlashAttention's bf16 scores and carried softmax state; npu_probe.emulate.numerics
lists each with the registry line it follows). Precision `fp32` keeps float32
inside a launch. Norm eps are the ELFs' own constants (weighted_rms_norm.EPS =
1e-5 for the attention and FFN norms of every model, qknorm_eps = 1e-6 for
Qwen3's Q/K norm), not HF's config values.

Kinds (argument roles in elf_boundaries.json; stage order = STAGES[kind]):
  rms_gemms_rope       RMSNorm, Q/K/V GEMM, RoPE(Q, K)                 llama32_1b/3b, smollm2
  rms_qkv_bias_rope    RMSNorm, Q/K/V GEMM (N padded), +bias, RoPE      qwen25_*
  rms_qkv_qknorm_rope  RMSNorm, Q/K/V GEMM, per-head Q/K norm, RoPE     qwen3_*
  flash_attn           causal GQA attention, seq-first or head-first    all (NPU attention)
  o_ffn, o_ffn_qwen    O GEMM, +residual, RMSNorm, Gate, Up, SwiGLU, Down, +residual
  o_ffn_head           O GEMM (N padded), +residual, RMSNorm, Gate, Up, SwiGLU   qwen25_0_5b
  down_add             Down GEMM (N maybe padded), +residual, flat output
  o_res_norm           O GEMM, +residual, RMSNorm
  gate_up, gemm        Gate and Up GEMMs; one GEMM (qwen25_3b/qwen3_4b gate, up)
  swiglu               silu(gate) * up

Injected bugs (INJECTIONS), for the emulated NPU: each changes one stage of one
kind, the way a real integration bug would.

Needs numpy only (bf16 rounding is done on float32 bits, round to nearest even).
"""

import dataclasses

import numpy as np

from npu_probe.core.errors import ProbeError
from npu_probe.emulate import numerics

RMS_EPS, QK_NORM_EPS = numerics.RMS_EPS, numerics.QK_NORM_EPS
STALE_ROWS = 3

STAGES = {
    "rms_gemms_rope": ["normed", "q", "k", "v", "q_roped", "k_roped"],
    "rms_qkv_bias_rope": ["normed", "q", "k", "v", "q_b", "k_b", "v_b", "q_roped", "k_roped"],
    "rms_qkv_qknorm_rope": ["normed", "q", "k", "v", "q_n", "k_n", "q_roped", "k_roped"],
    "flash_attn": ["out"],
    "o_ffn": ["proj", "res1", "normed2", "gate", "up", "swiglu", "down", "out"],
    "o_ffn_qwen": ["proj", "res1", "normed2", "gate", "up", "swiglu", "down", "out"],
    "o_ffn_head": ["proj", "res1", "normed2", "gate", "up", "swiglu"],
    "down_add": ["down", "out"],
    "o_res_norm": ["proj", "res1", "normed2"],
    "gate_up": ["gate", "up"],
    "gemm": ["out"],
    "swiglu": ["out"],
}

# What each stage is, in the seed's words (bisect.json launches[].buffers[].stage).
STAGE_NAMES = {
    "normed": "RMSNorm", "q": "Q GEMM", "k": "K GEMM", "v": "V GEMM", "q_b": "Q bias add", "k_b": "K bias add",
    "v_b": "V bias add", "q_n": "Q norm", "k_n": "K norm", "q_roped": "RoPE Q", "k_roped": "RoPE K",
    "proj": "O GEMM", "res1": "residual add", "normed2": "RMSNorm (FFN)", "gate": "Gate GEMM", "up": "Up GEMM",
    "swiglu": "SwiGLU", "down": "Down GEMM", "out": "output",
}
KIND_OUT_NAMES = {"flash_attn": "FlashAttention", "gemm": "GEMM", "swiglu": "SwiGLU", "o_ffn": "residual add (FFN)",
                  "o_ffn_qwen": "residual add (FFN)", "down_add": "residual add (FFN)"}

FRONT_KINDS = ("rms_gemms_rope", "rms_qkv_bias_rope", "rms_qkv_qknorm_rope")
TAIL_KINDS = ("o_ffn", "o_ffn_qwen", "down_add")
FFN_NORM_KINDS = ("o_ffn", "o_ffn_qwen", "o_ffn_head", "o_res_norm")  # the ELFs holding the FFN RMSNorm

# name -> (kinds it changes, what it does, the lens boundary that shows it first, the stage (buffer role))
INJECTIONS = {
    "transposed_q_weight": (FRONT_KINDS, "the Q GEMM reads its weight buffer as (N, K) and transposes it: wq used "
                            "untransposed (a missing transpose after the weight load)", "q", "q"),
    "missing_causal_mask": (("flash_attn",), "attention without the causal mask: every position sees every "
                            "position of the buffer", "attn_out", "out"),
    "interleaved_rope": (FRONT_KINDS, "RoPE rotates interleaved pairs (x[2i], x[2i+1]) instead of the half-split "
                         "pairs (x[i], x[i + head_dim/2])", "q_roped", "q_roped"),
    "rope_k_only": (FRONT_KINDS, "RoPE is applied to K only; Q leaves the ELF unrotated", "q_roped", "q_roped"),
    "ignored_rmsnorm_weight": (FRONT_KINDS, "the attention RMSNorm ignores its weight (uses ones)", "attn_norm",
                               "normed"),
    "ignored_ffn_norm_weight": (FFN_NORM_KINDS, "the FFN RMSNorm (after attention) ignores its weight (uses ones)",
                                "ffn_norm", "normed2"),
    "dropped_bias": (("rms_qkv_bias_rope",), "the Q/K/V bias add is skipped (bias models only)", "q", "q_b"),
    "nan_row": (TAIL_KINDS, "one element of the block output on a real row is NaN (row real_len // 2, column 0)",
                "ffn_out", "out"),
    "nan_padded": (TAIL_KINDS, "one element of the output buffer's last row is NaN: a padded row whenever the "
                   "prompt is shorter than the compiled seq_len (G3 sees it; the real rows are clean)", "ffn_out",
                   "out"),
    "scale_drift": (TAIL_KINDS, "the block output is scaled by 1.05 (cosine cannot see it: the norm ratio does)",
                    "ffn_out", "out"),
    "stale_tail": (TAIL_KINDS, f"the block output's last {STALE_ROWS} real rows are not written back: they keep "
                   "what the shared output buffer held before the launch", "ffn_out", "out"),
}


def check_injection(name, where="--inject"):
    if name is None:
        return None
    if name not in INJECTIONS:
        raise ProbeError(where, f"unknown injected bug {name!r}; choose one of: {', '.join(sorted(INJECTIONS))}")
    return name


@dataclasses.dataclass(frozen=True)
class Injected:
    """An injected bug at one launch of the emulated NPU: its name (INJECTIONS), the run's
    real_len, and `prev` {output role: the buffer's content before the launch} (stale_tail
    keeps those rows)."""

    name: str
    real_len: int = None
    prev: dict = None


# bf16 rounding lives with the rest of the numerics (re-exported: the runtime uses it too)
bf16_bits, from_bf16_bits, bf = numerics.bf16_bits, numerics.from_bf16_bits, numerics.bf


def f32(a):
    """Any array (ml_dtypes bfloat16, float32, ...) as float32."""
    a = np.asarray(a)
    return a if a.dtype == np.float32 else a.astype(np.float32)


# ---------------------------------------------------------------------------
# Stages


def rms_norm(x, w, eps, precision=numerics.HARDWARE):
    return numerics.rms_norm(x, w, eps, precision)


def gemm(a, w, transposed=False, bfp=False):
    """One GEMM launch: FP32 accumulate, one bf16 cast; `bfp`: the operands through BFP16 first (an
    external mm.o GEMM at precision hw, npu_probe.emulate.numerics)."""
    k, n = w.shape
    if transposed:  # the weight buffer read as (N, K), then transposed back to (K, N): wq.T when square
        w = w.reshape(n, k).T
    return bf(numerics.matmul(a, w, bfp))


def rope(x, lut, heads, interleaved=False, precision=numerics.HARDWARE):
    """x (seq, n_heads*head_dim); lut (seq*n_heads*head_dim,): per (position, head) row [cos | sin]
    (generate_rope_lut repeated per head); heads = (n_heads, head_dim). Half-split pairs
    (x[i], x[i+half]) like rope_halfsplit.cc."""
    n_heads, head_dim = heads
    seq = x.shape[0]
    rows = x.reshape(seq * n_heads, head_dim)
    t = lut.reshape(seq * n_heads, head_dim)
    half = head_dim // 2
    cos, sin = t[:, :half], t[:, half:]
    out = np.empty_like(rows)
    if interleaved:
        out[:, 0::2], out[:, 1::2] = numerics.rotate(rows[:, 0::2], rows[:, 1::2], cos, sin, precision)
    else:
        out[:, :half], out[:, half:] = numerics.rotate(rows[:, :half], rows[:, half:], cos, sin, precision)
    return out.reshape(seq, n_heads * head_dim)


def qk_norm(x, w, heads, eps, precision=numerics.HARDWARE):
    n_heads, head_dim = heads
    seq = x.shape[0]
    return rms_norm(x.reshape(seq * n_heads, head_dim), w.reshape(head_dim), eps, precision).reshape(
        seq, n_heads * head_dim)


def silu_mul(g, u, precision=numerics.HARDWARE):
    return numerics.silu_mul(g, u, precision)


def attention(q, k, v, heads, causal=True, precision=numerics.HARDWARE):
    """q (seq, H*hd), k/v (seq, KV*hd) -> (seq, H*hd), heads = (H, KV, hd); GQA: q head h reads
    kv head h // (H // KV)."""
    n_heads, n_kv_heads, head_dim = heads
    seq = q.shape[0]
    group = n_heads // n_kv_heads
    qh = q.reshape(seq, n_heads, head_dim).transpose(1, 0, 2)
    kh = k.reshape(seq, n_kv_heads, head_dim).transpose(1, 0, 2)
    vh = v.reshape(seq, n_kv_heads, head_dim).transpose(1, 0, 2)
    out = np.empty((n_heads, seq, head_dim), dtype=np.float32)
    for h in range(n_heads):
        out[h] = numerics.softmax_attention(qh[h], kh[h // group], vh[h // group], causal, precision)
    return bf(out.transpose(1, 0, 2).reshape(seq, n_heads * head_dim))


# ---------------------------------------------------------------------------
# The twins


def run_twin(kind, vals, dims, layout="seq-first", bug=None, num=numerics.DEFAULT):
    """Outputs of one launch of ELF kind `kind`, in stage order: {role: float32 array
    in the role's stored shape}. `vals` maps input roles (and, for stale_tail,
    nothing else) to arrays of any dtype in their stored shape; `dims` holds
    n_heads, n_kv_heads, head_dim, q_dim, kv_dim, emb, hidden (dv_tile/dv_chunks
    for head-first attention; `direct`: the output roles of this ELF's direct-codegen GEMMs, which
    get no BFP16). `bug` (an Injected, emulated NPU only) changes one
    stage of the kinds its INJECTIONS entry names. `num`: the precision and eps
    (npu_probe.emulate.numerics.Numerics)."""
    precision = num.precision
    direct = tuple(dims.get("direct") or ())  # direct-codegen GEMMs: no external mm.o, no BFP16

    def ext(role):
        return num.bfp16 and role not in direct

    inject = bug.name if bug is not None and kind in INJECTIONS[bug.name][0] else None
    real_len, prev = (bug.real_len, bug.prev) if bug is not None else (None, None)
    v = {r: f32(a) for r, a in vals.items()}
    H, KV, hd = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    out = {}
    if kind in FRONT_KINDS:
        x = v["x"].reshape(-1, v["attn_norm_w"].size)
        w = np.ones_like(v["attn_norm_w"]) if inject == "ignored_rmsnorm_weight" else v["attn_norm_w"]
        out["normed"] = n = rms_norm(x, w.reshape(-1), num.rms_eps, precision)
        out["q"] = gemm(n, v["wq"], transposed=inject == "transposed_q_weight", bfp=ext("q"))
        out["k"] = gemm(n, v["wk"], bfp=ext("k"))
        out["v"] = gemm(n, v["wv"], bfp=ext("v"))
        q_in, k_in = out["q"], out["k"]
        if kind == "rms_qkv_bias_rope":
            qd, kvd = v["bq"].size, v["bk"].size
            if inject == "dropped_bias":
                out["q_b"], out["k_b"], out["v_b"] = out["q"][:, :qd], out["k"][:, :kvd], out["v"][:, :kvd]
            else:
                out["q_b"] = bf(out["q"][:, :qd] + v["bq"].reshape(1, qd))
                out["k_b"] = bf(out["k"][:, :kvd] + v["bk"].reshape(1, kvd))
                out["v_b"] = bf(out["v"][:, :kvd] + v["bv"].reshape(1, kvd))
            q_in, k_in = out["q_b"], out["k_b"]
        elif kind == "rms_qkv_qknorm_rope":
            out["q_n"] = qk_norm(out["q"], v["q_norm_w"], (H, hd), num.qk_eps, precision)
            out["k_n"] = qk_norm(out["k"], v["k_norm_w"], (KV, hd), num.qk_eps, precision)
            q_in, k_in = out["q_n"], out["k_n"]
        inter = inject == "interleaved_rope"
        out["q_roped"] = q_in.copy() if inject == "rope_k_only" else rope(q_in, v["lut_q"], (H, hd), inter, precision)
        out["k_roped"] = rope(k_in, v["lut_k"], (KV, hd), inter, precision)
        return out
    if kind == "flash_attn":
        q, k, vv = v["q"], v["k"], v["v"]
        if layout == "head-first":
            seq = q.shape[1]
            dvc, dvt = dims["dv_chunks"], dims["dv_tile"]
            q = q.reshape(H, seq, hd).transpose(1, 0, 2).reshape(seq, H * hd)
            k = k.reshape(KV, seq, hd).transpose(1, 0, 2).reshape(seq, KV * hd)
            vv = vv.reshape(KV, dvc, seq, dvt).transpose(2, 0, 1, 3).reshape(seq, KV * hd)
            o = attention(q, k, vv, (H, KV, hd), causal=inject != "missing_causal_mask", precision=precision)
            out["out"] = np.ascontiguousarray(
                o.reshape(seq, H, dvc, dvt).transpose(1, 2, 0, 3).reshape(H * dvc, seq, dvt))
        else:
            q = q.reshape(q.shape[0], -1) if q.ndim != 2 else q
            seq = q.shape[0]
            out["out"] = attention(q, k.reshape(seq, -1), vv.reshape(seq, -1), (H, KV, hd),
                                   causal=inject != "missing_causal_mask", precision=precision)
        return out
    if kind in ("o_ffn", "o_ffn_qwen", "o_ffn_head", "o_res_norm"):
        wo = v["wo"]
        attn = v["attn"].reshape(-1, wo.shape[0])
        emb = v["ffn_norm_w"].size
        out["proj"] = proj = gemm(attn, wo, bfp=ext("proj"))
        x = v["x"].reshape(-1, emb)
        out["res1"] = res1 = bf(x + proj[:, :emb])
        w2 = v["ffn_norm_w"].reshape(-1)
        if inject == "ignored_ffn_norm_weight":
            w2 = np.ones_like(w2)
        out["normed2"] = n2 = rms_norm(res1, w2, num.rms_eps, precision)
        if kind == "o_res_norm":
            return out
        out["gate"] = g = gemm(n2, v["w_gate"], bfp=ext("gate"))
        out["up"] = u = gemm(n2, v["w_up"], bfp=ext("up"))
        out["swiglu"] = sw = silu_mul(g, u, precision)
        if kind == "o_ffn_head":
            return out
        out["down"] = d = gemm(sw, v["w_down"], bfp=ext("down"))
        out["out"] = _tail(bf(res1 + d[:, :emb]).reshape(-1), inject, real_len, emb, prev)
        return out
    if kind == "down_add":
        wd = v["w_down"]
        sw = v["swiglu"].reshape(-1, wd.shape[0])
        out["down"] = d = gemm(sw, wd, bfp=ext("down"))
        res1 = v["res1"].reshape(d.shape[0], -1)
        emb = res1.shape[1]
        out["out"] = _tail(bf(res1 + d[:, :emb]).reshape(-1), inject, real_len, emb, prev)
        return out
    if kind == "gate_up":
        a = v["normed2"].reshape(-1, v["w_gate"].shape[0])
        out["gate"] = gemm(a, v["w_gate"], bfp=ext("gate"))
        out["up"] = gemm(a, v["w_up"], bfp=ext("up"))
        return out
    if kind == "gemm":
        out["out"] = gemm(v["a"].reshape(-1, v["w"].shape[0]), v["w"], bfp=ext("out"))
        return out
    if kind == "swiglu":
        out["out"] = silu_mul(v["gate"], v["up"], precision)
        return out
    raise ProbeError("npu_probe.emulate.twins", f"no twin for ELF kind {kind!r}")


def _tail(flat, inject, real_len, emb, prev):
    """The flat block output; stale_tail keeps the previous content of the last real rows; the
    output bugs (nan_row, nan_padded, scale_drift) change it as they say."""
    if inject == "scale_drift":
        return bf(flat * np.float32(1.05))
    if inject in ("nan_row", "nan_padded"):
        flat = flat.copy()
        if inject == "nan_padded":
            flat[flat.size - emb] = np.nan
        elif real_len:
            flat[(int(real_len) // 2) * emb] = np.nan
        return flat
    if inject != "stale_tail" or not real_len:
        return flat
    old = np.zeros_like(flat) if prev is None or prev.get("out") is None else f32(prev["out"]).reshape(-1)
    lo = max(int(real_len) - STALE_ROWS, 0) * emb
    flat = flat.copy()
    flat[lo:int(real_len) * emb] = old[lo:int(real_len) * emb]
    return flat


def input_roles(kind):
    """Roles a twin of `kind` reads."""
    return {
        "rms_gemms_rope": ("x", "attn_norm_w", "wq", "wk", "wv", "lut_q", "lut_k"),
        "rms_qkv_bias_rope": ("x", "attn_norm_w", "wq", "wk", "wv", "bq", "bk", "bv", "lut_q", "lut_k"),
        "rms_qkv_qknorm_rope": ("x", "attn_norm_w", "wq", "wk", "wv", "q_norm_w", "k_norm_w", "lut_q", "lut_k"),
        "flash_attn": ("q", "k", "v"),
        "o_ffn": ("attn", "wo", "x", "ffn_norm_w", "w_gate", "w_up", "w_down"),
        "o_ffn_qwen": ("attn", "wo", "x", "ffn_norm_w", "w_gate", "w_up", "w_down"),
        "o_ffn_head": ("attn", "wo", "x", "ffn_norm_w", "w_gate", "w_up"),
        "down_add": ("swiglu", "w_down", "res1"),
        "o_res_norm": ("attn", "wo", "x", "ffn_norm_w"),
        "gate_up": ("normed2", "w_gate", "w_up"),
        "gemm": ("a", "w"),
        "swiglu": ("gate", "up"),
    }[kind]
