"""tiny_qwen3 prefill on the emulated NPU (air-mini).

Kernel sequence per block, as in qwen3_0_6b (kernel-first: Qwen3's Q/K norm
sits between the Q/K GEMMs and RoPE, so llama's rms_gemms_rope cannot be reused):
  rms_qkv_qknorm_rope ELF (RMSNorm, Q/K/V GEMM, per-head Q/K RMSNorm with heads
                           as rows, RoPE)
  attention               (host `attention` step when cpu_attn=True, else flash_attn ELF)
  o_ffn_qwen ELF          (O GEMM, +residual, RMSNorm, Gate, Up, SwiGLU, Down, +residual)

Shared machinery (ELF calls, buffer rules, bisect hook): shared/infra/block.py.
"""

import sys
from pathlib import Path

_THIS = Path(__file__).resolve().parent
_LLMS = _THIS.parent
for _p in (str(_LLMS), str(_THIS)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from shared.infra import block  # noqa: E402
from shared.infra.block import embed_tokens  # noqa: E402,F401

from tiny_qwen3_cpu_helpers import attention_reference, qk_norm_per_head, rms_norm  # noqa: E402
from tiny_qwen3_weights import generate_rope_lut  # noqa: E402

# The block's ELFs in call order: (cache name, emulated kernel kind, bisect steps
# inside it); flash_attn only with cpu_attn=False, else attention runs on the host.
ELFS = [
    ("rms_qkv_qknorm_rope", "rms_qkv_qknorm_rope",
     ["attn_norm", "q_proj", "k_proj", "v_proj", "qk_norm", "rope"]),
    ("flash_attn", "flash_attn", ["attention"]),
    # llama's o_ffn kernel, cached under its own name
    ("o_ffn_qwen", "o_ffn", ["o_proj", "residual1", "ffn_norm", "gate_proj", "up_proj",
                             "swiglu", "down_proj", "residual2"]),
]

# (step, ELF it belongs to, CPU equivalent), in execution order
BISECT_STEPS = block.bisect_table(ELFS, "tiny_qwen3_cpu_helpers")

# The CPU equivalents a bisect swaps in (see tiny_qwen3_cpu_helpers)
CPU_OPS = {"rms_norm": rms_norm, "attention": attention_reference,
           "qk_norm": qk_norm_per_head}


def bisect_steps(config=None, cpu_attn=True):
    """Ordered bisect steps: list of dicts {step, kernel, cpu_equivalent};
    with cpu_attn=True the attention step's kernel is "host"."""
    return block.bisect_steps(BISECT_STEPS, cpu_attn)


def compile_all_kernels(cache, config, seq_len, cpu_attn=True, verbose=False):
    """Compile every ELF of the block for `seq_len` (a multiple of 64) into `cache`."""
    return block.compile_all_kernels(cache, config, seq_len, ELFS, cpu_attn, verbose)


def run_transformer_block_qwen3(x_bf16, layer_weights, rope_lut_bf16, config, cache,
                                layer_idx=0, cpu_attn=True, verbose=False,
                                cpu_steps=None, trace=None):
    """One transformer block on the emulated NPU: rms_qkv_qknorm_rope -> attention -> o_ffn_qwen.

    Arguments and returns are llama32_1b's, plus the cpu_steps / trace bisect
    hook (see shared/infra/block.py).
    """
    lw = layer_weights
    blk = block.Block(x_bf16, config, cache, layer_idx, CPU_OPS, cpu_steps, trace)
    blk.log(verbose, ELFS)
    q_roped, k_roped, v = blk.qkv_rope(
        "rms_qkv_qknorm_rope", [lw.attn_norm, lw.wq, lw.wk, lw.wv, lw.q_norm, lw.k_norm],
        rope_lut_bf16)
    attn_out = blk.attention(q_roped, k_roped, v, cpu_attn)
    out = blk.o_ffn("o_ffn_qwen", attn_out, lw)
    return out, blk.returned(q_roped, k_roped, v, attn_out, out)


def run_prefill(weights, config, cache, tokens, seq_len, rope_lut=None, cpu_attn=True,
                verbose=False):
    """All layers on the emulated NPU; the driver the verify adapter uses.
    Returns (layer_outputs, final_hidden_normed, logits_at_pred)."""
    if rope_lut is None:
        rope_lut = generate_rope_lut(config, seq_len)
    return block.run_prefill(run_transformer_block_qwen3, rms_norm, weights, config, cache,
                             tokens, seq_len, rope_lut, cpu_attn=cpu_attn, verbose=verbose)
