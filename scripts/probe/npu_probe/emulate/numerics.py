"""How the CPU twins round inside a launch. Three precisions (contract.json emulate.twin_precision):

  hw (default)  bf16's roundings, plus the BFP16 block-float operand cast on exactly the matmuls the
                tree compiles with bfp16=True: so the twins are no more precise than the NPU2 they
                stand for
  bf16          where the registry's kernels round in bf16 (each rounding follows a line of
                programming_examples/kernel_registry/details/* in the real tree, cited below), with
                the matmul operands exact bf16 (what `hardware` meant before BFP16 came in; a run dir
                recording `hardware` is read as bf16, contract.json emulate.twin_precision_aliases)
  fp32          float32 inside a launch, bf16 only where the ELF writes a buffer (npu_probe.emulate.twins)

bf16 roundings (the registry line each follows; hw makes them too):
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
bf16 rounding, EltwiseAdd_bf16.md) round the same way in every precision.

hw's BFP16 (bfp16(), matmul()):
  which        llms/shared/infra/external_kernels.py:175-184 (compile_gemm_mm, bfp16=True: every
               external mm.o GEMM, the drain and fused-cast methods) and :262-271 (compile_attn_npu2,
               bfp16=True: FlashAttention's Q@K^T and P@V) add -DAIE_API_EMULATE_BFLOAT16_MMUL_WITH_BFP16.
               Direct-codegen GEMMs (the registry's low-precision `direct` method, no external mm.o:
               qwen25_*'s Gate/Up) are not compiled with it: the table marks them (elf_boundaries.json
               `direct`) and they stay exact-bf16 operands.
  format       GEMM_bf16_in_bf16_out.md:59, FlashAttention_bf16.md:58: bf16 operands cast to
               v64bfp16ebs8; matrix_multiplication/bfp16/bfp16_utils.py:17-19, 52, 83-85: blocks of 8
               scalars share one 8-bit exponent (the block's largest), each scalar an 8-bit two's-
               complement mantissa worth 2^(e-127-6)
  blocks       aie_api's aie2p mmul<8,8,8,bfloat16> under that define converts A as stored (8 rows of
               8 K values) and B transposed (8 columns of 8 K values): each block runs along the
               reduction axis, for both operands
  rounding     mm_aie2p.cc:26-29 and attn_npu2.cc:198-204 set conv_even (round to nearest even) "for
               bf16 matmul accuracy" (GEMM_bf16_in_bf16_out.md:59: "conv_even rounding keeps it
               unbiased"); a mantissa that rounds past 127 saturates
Needs numpy only.
"""

import dataclasses

import numpy as np

HW, BF16, FP32 = "hw", "bf16", "fp32"
PRECISIONS = (FP32, BF16, HW)
ALIASES = {"hardware": BF16}  # the name bf16 had before hw (with BFP16) came in
HARDWARE = HW  # the default precision
BFP_BLOCK = 8  # bfp16ebs8: scalars per shared exponent
BFP_MANT_LSB = 6  # the mantissa's unit is 2^(e - 127 - 6): bfp16_utils.py:83-85
FA_KEY_CHUNK = 64  # FlashAttention_bf16.md:118, lkp: the K/V chunk the online softmax steps over
LOG2E = np.float32(1.4426950408889634)
# The ELFs' own norm eps (weighted_rms_norm.EPS for the attention and FFN norms of every model,
# qknorm_eps for Qwen3's Q/K norm), not HF's config values.
RMS_EPS = 1e-5
QK_NORM_EPS = 1e-6


def canonical(precision):
    """A precision name as the twins know it: `hardware` (the older name) is bf16."""
    return ALIASES.get(precision, precision)


@dataclasses.dataclass(frozen=True)
class Numerics:
    """How a twin computes: the precision, and the RMSNorm eps (the ELFs' own unless the run asks
    for the config's: `--twin-eps config`, to see whether an eps explains a scale drift)."""

    precision: str = HARDWARE
    rms_eps: float = RMS_EPS
    qk_eps: float = QK_NORM_EPS
    eps_from: str = "tree"  # tree | config

    def __post_init__(self):
        object.__setattr__(self, "precision", canonical(self.precision))

    @property
    def bfp16(self):
        """The external GEMMs' and FlashAttention's operands go through BFP16 (precision hw)."""
        return self.precision == HW

    def record(self):
        return {"precision": self.precision, "rms_eps": self.rms_eps, "qk_eps": self.qk_eps, "eps_from": self.eps_from}


DEFAULT = Numerics()


def rounds(precision):
    """The in-launch bf16 roundings of the registry's kernels (bf16 and hw; not fp32)."""
    return canonical(precision) != FP32


def _rounded(x):
    """float32 bit patterns (uint32, ndim >= 1) rounded to bf16 in place of the high half, round to
    nearest even, low half zero; a NaN stays NaN (quiet). In uint32: below the NaNs the largest
    pattern is -inf's 0xFF800000, so adding at most 0x8000 cannot overflow (the twins round every
    buffer of every launch: this is most of an emulated block's time)."""
    f = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    u = f.view(np.uint32)
    r = (u >> 16) & 1
    r += 0x7FFF
    r += u
    r &= 0xFFFF0000
    nan = np.isnan(f)
    if nan.any():
        r[nan] = (u[nan] & 0xFFFF0000) | 0x00400000
    return r


def bf16_bits(x):
    """float32 -> bf16 bit patterns (uint16), round to nearest even; NaN stays NaN."""
    return (_rounded(x) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf(x):
    """Round to bf16 and back to float32 (what a bf16 buffer between two launches does)."""
    return _rounded(x).view(np.float32).reshape(np.shape(x))


def rms_norm(x, w, eps, precision=HARDWARE):
    ms = np.mean(x * x, axis=-1, keepdims=True, dtype=np.float32)
    rstd = np.float32(1.0) / np.sqrt(ms + np.float32(eps))
    if rounds(precision):
        rstd = bf(rstd)
    return bf(bf(x * rstd) * w)


def silu_mul(g, u, precision=HARDWARE):
    if not rounds(precision):
        return bf(g / (np.float32(1.0) + np.exp(-g)) * u)
    half = bf(g * np.float32(0.5))
    t = bf(np.tanh(half))
    sig = bf(np.float32(0.5) * (np.float32(1.0) + t))
    return bf(bf(g * sig) * u)


def gelu_tanh(x, precision=HARDWARE):
    c = np.float32(np.sqrt(2.0 / np.pi))
    if not rounds(precision):
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
    if not rounds(precision):
        return bf(x1 * cos - x2 * sin), bf(x2 * cos + x1 * sin)
    return bf(bf(x1 * cos) - bf(x2 * sin)), bf(bf(x2 * cos) + bf(x1 * sin))


def softmax_attention(q, k, v, causal=True, precision=HARDWARE):
    """One head: q (seq_q, hd), k/v (seq_k, hd) -> (seq_q, hd) float32 (the caller rounds the output).
    fp32: the softmax in float32. hardware: the online softmax over 64-key chunks with its carried
    state in bf16, as the flash_attn kernel does."""
    seq_q, seq_k, hd = q.shape[0], k.shape[0], q.shape[1]
    mask = np.triu(np.ones((seq_q, seq_k), dtype=bool), k=1) if causal else None
    if not rounds(precision):
        s = np.matmul(q, k.T, dtype=np.float32) * np.float32(1.0 / np.sqrt(hd))
        if mask is not None:
            s[mask] = -np.inf
        s -= s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
        return np.matmul(p, v, dtype=np.float32)
    bq = bfp16 if canonical(precision) == HW else (lambda x, axis: x)
    q = bq(q, -1)  # Q@K^T: Q's blocks run along head_dim (the reduction)
    c = LOG2E / np.sqrt(np.float32(hd))  # the exp2 constant, FP32 (1/sqrt(dk) folded in)
    m = np.full((seq_q, 1), -np.inf, dtype=np.float32)
    den = np.zeros((seq_q, 1), dtype=np.float32)
    acc = np.zeros((seq_q, v.shape[1]), dtype=np.float32)
    for j in range(0, seq_k, FA_KEY_CHUNK):
        s = bf(np.matmul(q, bq(k[j:j + FA_KEY_CHUNK], -1).T, dtype=np.float32))
        if mask is not None:
            s[mask[:, j:j + FA_KEY_CHUNK]] = -np.inf
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        live = np.isfinite(m_new)  # rows with no key yet seen keep their zero state
        shift = np.where(live, m_new, np.float32(0.0))
        p = bf(np.exp2((s - shift) * c))
        alpha = np.where(np.isfinite(m), np.exp2((m - shift) * c), np.float32(0.0)).astype(np.float32)
        den = bf(den * alpha + p.sum(axis=-1, keepdims=True, dtype=np.float32))
        acc = bf(acc * alpha + np.matmul(bq(p, -1), bq(v[j:j + FA_KEY_CHUNK], 0), dtype=np.float32))
        m = m_new
    with np.errstate(divide="ignore", invalid="ignore"):
        return (acc / den).astype(np.float32)


def bfp16(x, axis=-1):
    """x (float32, bf16 values) through v64bfp16ebs8 and back: blocks of 8 along `axis` share the
    largest exponent among them; each value becomes a round-to-nearest-even multiple of
    2^(e_max - 127 - 6), saturated to the int8 range. An axis that is not a multiple of 8 is
    zero-padded for the blocking (a zero never raises a block's exponent)."""
    a = np.moveaxis(np.asarray(x, dtype=np.float32), axis, -1)
    shape, n = a.shape, a.shape[-1]
    pad = (-n) % BFP_BLOCK
    if pad:
        a = np.concatenate([a, np.zeros(shape[:-1] + (pad,), dtype=np.float32)], axis=-1)
    blocks = np.ascontiguousarray(a).reshape(-1, BFP_BLOCK)
    exps = ((blocks.view(np.uint32) >> 23) & 0xFF).astype(np.int32)
    unit = np.ldexp(np.float32(1.0), exps.max(axis=1, keepdims=True) - 127 - BFP_MANT_LSB).astype(np.float32)
    finite = np.isfinite(blocks)
    mant = np.clip(np.rint(np.where(finite, blocks, 0) / unit), -128, 127)
    out = np.where(finite, mant * unit, blocks).astype(np.float32)
    out = out.reshape(a.shape)[..., :n]
    return np.moveaxis(out, -1, axis)


def matmul(a, w, bfp=False):
    """a @ w with FP32 accumulation; with `bfp`, both operands through BFP16 first, blocked along the
    reduction axis (a's rows, w's columns), as the NPU2 MMA's emulation converts them."""
    if bfp:
        a, w = bfp16(a, -1), bfp16(w, 0)
    return np.matmul(a, w, dtype=np.float32)
