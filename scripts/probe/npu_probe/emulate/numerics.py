"""How the CPU twins round inside a launch. Two precisions (contract.json emulate.twin_precision):

  hardware (default)  where the registry's kernels round, so the twins are no more precise than
                      the NPU they stand for; each rounding follows a line of
                      programming_examples/kernel_registry/details/* in the real tree (cited below)
  fp32                the older numerics: float32 inside a launch, bf16 only where the ELF writes
                      a buffer (npu_probe.emulate.twins)

Hardware roundings (the registry line each follows):
  RMSNorm      RMSNorm_bf16.md:45-46   sum(x^2), mean and rstd in FP32; "the per-element multiply
               uses the bf16 vector path": x * bf16(rstd) rounds, then * weight rounds
  SiLU-and-Mul SiLU_Mul_bf16.md:35-44  g_half = g*0.5, tanh(g_half), sigmoid = 0.5*(1+tanh),
               silu = g*sigmoid, out = silu*up: "each round once" (the hardware tanh LUT is modelled
               as tanh rounded to bf16)
  GELU-tanh    GELU_bf16.md:49-63      x^2, x^3, x + 0.044715 x^3, sqrt(2/pi)*inner, tanh, the output:
               "the chain of bf16 roundings"
  RoPE         RoPE_bf16.md:58         "(bf16 mul, mul, sub)": each product rounds, then the sum
  FlashAttn    FlashAttention_bf16.md:59-61, 91-95, 118   S = Q@K^T (FP32 accumulate) kept in bf16;
               the 1/sqrt(dk) scale folded into the exp2 constant in FP32; the running max, the
               probabilities P, the running denominator and the output accumulator carried in bf16
               from one 64-key chunk (lkp) to the next; the output cast to bf16 after the divide
GEMMs (FP32 accumulate, one cast: the registry's high-precision tier) and the residual adds (one
bf16 rounding, EltwiseAdd_bf16.md) round the same way in both precisions. Needs numpy only.
"""

import dataclasses

import numpy as np

HARDWARE, FP32 = "hardware", "fp32"
PRECISIONS = (HARDWARE, FP32)
FA_KEY_CHUNK = 64  # FlashAttention_bf16.md:118, lkp: the K/V chunk the online softmax steps over
LOG2E = np.float32(1.4426950408889634)
# The ELFs' own norm eps (weighted_rms_norm.EPS for the attention and FFN norms of every model,
# qknorm_eps for Qwen3's Q/K norm), not HF's config values.
RMS_EPS = 1e-5
QK_NORM_EPS = 1e-6


@dataclasses.dataclass(frozen=True)
class Numerics:
    """How a twin computes: the precision, and the RMSNorm eps (the ELFs' own unless the run asks
    for the config's: `--twin-eps config`, to see whether an eps explains a scale drift)."""

    precision: str = HARDWARE
    rms_eps: float = RMS_EPS
    qk_eps: float = QK_NORM_EPS
    eps_from: str = "tree"  # tree | config

    def record(self):
        return {"precision": self.precision, "rms_eps": self.rms_eps, "qk_eps": self.qk_eps, "eps_from": self.eps_from}


DEFAULT = Numerics()


def bf16_bits(x):
    """float32 -> bf16 bit patterns (uint16), round to nearest even; NaN stays NaN."""
    f = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    u = f.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        out[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return out


def from_bf16_bits(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf(x):
    """Round to bf16 and back to float32 (what a bf16 buffer between two launches does)."""
    return from_bf16_bits(bf16_bits(x)).reshape(np.shape(x))


def rms_norm(x, w, eps, precision=HARDWARE):
    ms = np.mean(x * x, axis=-1, keepdims=True, dtype=np.float32)
    rstd = np.float32(1.0) / np.sqrt(ms + np.float32(eps))
    if precision == HARDWARE:
        rstd = bf(rstd)
    return bf(bf(x * rstd) * w)


def silu_mul(g, u, precision=HARDWARE):
    if precision != HARDWARE:
        return bf(g / (np.float32(1.0) + np.exp(-g)) * u)
    half = bf(g * np.float32(0.5))
    t = bf(np.tanh(half))
    sig = bf(np.float32(0.5) * (np.float32(1.0) + t))
    return bf(bf(g * sig) * u)


def gelu_tanh(x, precision=HARDWARE):
    c = np.float32(np.sqrt(2.0 / np.pi))
    if precision != HARDWARE:
        return bf(np.float32(0.5) * x * (np.float32(1.0) + np.tanh(c * (x + np.float32(0.044715) * x * x * x))))
    x2 = bf(x * x)
    x3 = bf(x * x2)
    inner = bf(x + bf(np.float32(0.044715) * x3))
    t = bf(np.tanh(bf(c * inner)))
    return bf(np.float32(0.5) * x * (np.float32(1.0) + t))


def gelu_mul(g, u, precision=HARDWARE):
    """GeGLU: gelu_tanh(gate) * up (the gelu_and_mul kernel: the GELU chain, then one more bf16 multiply)."""
    return bf(gelu_tanh(g, precision) * u)


def rotate(x1, x2, cos, sin, precision=HARDWARE):
    """Half-split RoPE of the pairs (x1, x2): (x1 cos - x2 sin, x2 cos + x1 sin), bf16 out."""
    if precision != HARDWARE:
        return bf(x1 * cos - x2 * sin), bf(x2 * cos + x1 * sin)
    return bf(bf(x1 * cos) - bf(x2 * sin)), bf(bf(x2 * cos) + bf(x1 * sin))


def softmax_attention(q, k, v, causal=True, precision=HARDWARE):
    """One head: q (seq_q, hd), k/v (seq_k, hd) -> (seq_q, hd) float32 (the caller rounds the output).
    fp32: the softmax in float32. hardware: the online softmax over 64-key chunks with its carried
    state in bf16, as the flash_attn kernel does."""
    seq_q, seq_k, hd = q.shape[0], k.shape[0], q.shape[1]
    mask = np.triu(np.ones((seq_q, seq_k), dtype=bool), k=1) if causal else None
    if precision != HARDWARE:
        s = np.matmul(q, k.T, dtype=np.float32) * np.float32(1.0 / np.sqrt(hd))
        if mask is not None:
            s[mask] = -np.inf
        s -= s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
        return np.matmul(p, v, dtype=np.float32)
    c = LOG2E / np.sqrt(np.float32(hd))  # the exp2 constant, FP32 (1/sqrt(dk) folded in)
    m = np.full((seq_q, 1), -np.inf, dtype=np.float32)
    den = np.zeros((seq_q, 1), dtype=np.float32)
    acc = np.zeros((seq_q, v.shape[1]), dtype=np.float32)
    for j in range(0, seq_k, FA_KEY_CHUNK):
        s = bf(np.matmul(q, k[j:j + FA_KEY_CHUNK].T, dtype=np.float32))
        if mask is not None:
            s[mask[:, j:j + FA_KEY_CHUNK]] = -np.inf
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        live = np.isfinite(m_new)  # rows with no key yet seen keep their zero state
        shift = np.where(live, m_new, np.float32(0.0))
        p = bf(np.exp2((s - shift) * c))
        alpha = np.where(np.isfinite(m), np.exp2((m - shift) * c), np.float32(0.0)).astype(np.float32)
        den = bf(den * alpha + p.sum(axis=-1, keepdims=True, dtype=np.float32))
        acc = bf(acc * alpha + np.matmul(p, v[j:j + FA_KEY_CHUNK], dtype=np.float32))
        m = m_new
    with np.errstate(divide="ignore", invalid="ignore"):
        return (acc / den).astype(np.float32)
