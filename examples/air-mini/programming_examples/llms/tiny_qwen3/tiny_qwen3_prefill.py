"""tiny_qwen3 prefill on the emulated NPU (air-mini).

Kernel sequence per block, as in qwen3_0_6b (kernel-first: Qwen3's Q/K norm
sits between the Q/K GEMMs and RoPE, so llama's rms_gemms_rope cannot be reused):
  rms_qkv_qknorm_rope ELF (RMSNorm, Q/K/V GEMM, per-head Q/K RMSNorm with heads
                           as rows, RoPE)
  attention               (host `attention` step when cpu_attn=True, else flash_attn ELF)
  o_ffn_qwen ELF          (O GEMM, +residual, RMSNorm, Gate, Up, SwiGLU, Down, +residual)

Every ELF runs through `cache.load_and_run(...)` with `shared_nonstatic=True`,
so the arrays returned by `run_transformer_block` are views of buffers that the
next call overwrites: copy (np.array(x, copy=True)) what you keep.

Bisect hook (seed Step 4): `bisect_steps()` lists the block's steps (kernel
boundaries inside the fused ELFs) in execution order, each with the ELF it
lives in and its CPU equivalent. `run_transformer_block(..., cpu_steps={...})`
computes the named steps with their CPU equivalents (tiny_qwen3_cpu_helpers
for rms_norm / attention, inline numpy for the rest) and every other step on
the "NPU". `trace={}` collects each step's output (bf16 values as float32).
"""

import sys
from pathlib import Path

import numpy as np

_THIS = Path(__file__).resolve().parent
_LLMS = _THIS.parent
for _p in (str(_LLMS), str(_THIS)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from shared.infra import emu_kernels, inject  # noqa: E402
from shared.infra.bf16 import to_bf16  # noqa: E402

from tiny_qwen3_cpu_helpers import attention_reference, qk_norm_per_head, rms_norm  # noqa: E402
from tiny_qwen3_weights import generate_rope_lut  # noqa: E402

# (step, ELF it belongs to, CPU equivalent)
BISECT_STEPS = [
    ("attn_norm", "rms_qkv_qknorm_rope", "tiny_qwen3_cpu_helpers.rms_norm"),
    ("q_proj", "rms_qkv_qknorm_rope", "numpy x @ wq"),
    ("k_proj", "rms_qkv_qknorm_rope", "numpy x @ wk"),
    ("v_proj", "rms_qkv_qknorm_rope", "numpy x @ wv"),
    ("qk_norm", "rms_qkv_qknorm_rope", "tiny_qwen3_cpu_helpers.qk_norm_per_head"),
    ("rope", "rms_qkv_qknorm_rope", "numpy half-split RoPE"),
    ("attention", "flash_attn", "tiny_qwen3_cpu_helpers.attention_reference"),
    ("o_proj", "o_ffn_qwen", "numpy attn @ wo"),
    ("residual1", "o_ffn_qwen", "numpy x + o"),
    ("ffn_norm", "o_ffn_qwen", "tiny_qwen3_cpu_helpers.rms_norm"),
    ("gate_proj", "o_ffn_qwen", "numpy h @ w_gate"),
    ("up_proj", "o_ffn_qwen", "numpy h @ w_up"),
    ("swiglu", "o_ffn_qwen", "numpy silu(g) * u"),
    ("down_proj", "o_ffn_qwen", "numpy s @ w_down"),
    ("residual2", "o_ffn_qwen", "numpy res1 + down"),
]


def bisect_steps(config=None, cpu_attn=True):
    """Ordered bisect steps: list of dicts {step, kernel, cpu_equivalent}.

    With cpu_attn=True the attention step runs on the host ("host") rather
    than in the flash_attn ELF; it can still be swapped for the reference.
    """
    out = []
    for step, elf, cpu in BISECT_STEPS:
        if step == "attention" and cpu_attn:
            elf = "host"
        out.append({"step": step, "kernel": elf, "cpu_equivalent": cpu})
    return out


CPU_OPS = {"rms_norm": rms_norm, "attention": attention_reference,
           "qk_norm": qk_norm_per_head}


def _build_modules(config, seq_len, cpu_attn):
    mods = [("rms_qkv_qknorm_rope",
             emu_kernels.build_module("rms_qkv_qknorm_rope", seq_len, config))]
    if not cpu_attn:
        mods.append(("flash_attn", emu_kernels.build_module("flash_attn", seq_len, config)))
    mods.append(("o_ffn_qwen", emu_kernels.build_module("o_ffn", seq_len, config)))
    return mods


def compile_all_kernels(cache, config, seq_len, cpu_attn=True, verbose=False):
    """Compile every ELF of the block for `seq_len` (a multiple of 64) into `cache`."""
    emu_kernels.check_seq_len(seq_len)
    for name, mod in _build_modules(config, seq_len, cpu_attn):
        if verbose:
            print(f"  compiling {name} (seq_len={seq_len})")
        cache.compile_and_cache(name, mod, {"omit_while_true_loop": False})
    return [name for name, _ in _build_modules(config, seq_len, cpu_attn)]


def _run_kwargs(config, real_len, cpu_steps, trace):
    return {
        "eps": config.rms_norm_eps,
        "n_heads": config.n_heads,
        "n_kv_heads": config.n_kv_heads,
        "head_dim": config.head_dim,
        "real_len": real_len,
        "cpu_steps": frozenset(cpu_steps or ()),
        "cpu_ops": CPU_OPS,
        "trace": trace,
    }


def run_transformer_block_qwen3(x_bf16, layer_weights, rope_lut_bf16, config, cache, layer_idx=0,
                          cpu_attn=True, verbose=False, cpu_steps=None, trace=None):
    """One transformer block on the emulated NPU.

    Args:
        x_bf16: (seq_len, emb_dim) input, zero-padded to the compiled seq_len.
        layer_weights: LayerWeights of this layer.
        rope_lut_bf16: (>= seq_len, head_dim) RoPE table from generate_rope_lut.
        config: LlamaConfig. cache: KernelCache with compile_all_kernels done.
        cpu_steps: optional iterable of bisect step names to run on the CPU.
        trace: optional dict that receives every step's output.
    Returns:
        (out (seq_len, emb_dim), {"v", "k_roped", "q_roped", "attn_out", "ffn_out"});
        every array except attn_out (host) is a view of a reused cache buffer.
    """
    inject.active()  # fail fast on an unknown AIR_MINI_INJECT
    x = to_bf16(np.asarray(x_bf16, dtype=np.float32))
    S, E = x.shape
    D, nh, nkv = config.head_dim, config.n_heads, config.n_kv_heads
    Q, KV = nh * D, nkv * D
    kw = _run_kwargs(config, inject.real_rows(x), cpu_steps, trace)
    lw = layer_weights
    if verbose:
        print(f"  Layer {layer_idx}: rms_qkv_qknorm_rope -> attention -> o_ffn_qwen "
              f"(seq_len={S})")

    res = cache.load_and_run(
        "rms_qkv_qknorm_rope", kw,
        x, lw.attn_norm, lw.wq, lw.wk, lw.wv, lw.q_norm, lw.k_norm,
        np.asarray(rope_lut_bf16)[:S],
        np.zeros((S, Q), np.float32), np.zeros((S, KV), np.float32),
        np.zeros((S, KV), np.float32),
        output_indices=[8, 9, 10], static_input_indices={1, 2, 3, 4, 5, 6, 7},
        intermediate_indices={8, 9, 10}, bo_key=f"rms_qkv_qknorm_rope_L{layer_idx}",
        shared_nonstatic=True)
    q_roped, k_roped, v = res[8], res[9], res[10]

    if cpu_attn:
        with cache.profiler.time_cpu("prefill_cpu_attention"):
            attn_out = emu_kernels.attention_step(emu_kernels.make_ctx(kw), q_roped, k_roped, v)
    else:
        attn_out = cache.load_and_run(
            "flash_attn", kw, q_roped, k_roped, v, np.zeros((S, Q), np.float32),
            output_indices=[3])[3]

    res = cache.load_and_run(
        "o_ffn_qwen", kw,
        attn_out, lw.wo, x, lw.ffn_norm, lw.w_gate, lw.w_up, lw.w_down,
        np.zeros((S, E), np.float32),
        output_indices=[7], static_input_indices={1, 3, 4, 5, 6},
        intermediate_indices={7}, bo_key=f"o_ffn_qwen_L{layer_idx}", shared_nonstatic=True)
    out = res[7]
    return out, {"v": v, "k_roped": k_roped, "q_roped": q_roped, "attn_out": attn_out,
                 "ffn_out": out}


def embed_tokens(weights, tokens, seq_len):
    """Embedding lookup, zero-padded to seq_len rows (the block's input)."""
    tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)
    if tokens.size > seq_len:
        raise ValueError(f"{tokens.size} tokens do not fit the compiled seq_len {seq_len}")
    x = np.zeros((seq_len, weights.embed_table.shape[1]), np.float32)
    x[:tokens.size] = weights.embed_table[tokens]
    return x


def run_prefill(weights, config, cache, tokens, seq_len, rope_lut=None, cpu_attn=True,
                verbose=False):
    """All layers on the emulated NPU; the driver the verify adapter uses.

    Returns (layer_outputs, final_hidden_normed, logits_at_pred): layer_outputs is
    a list of per-layer block outputs (copies, padded to seq_len), the final
    normed hidden state is (seq_len, emb_dim) and logits are for the last real token.
    """
    tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)
    if rope_lut is None:
        rope_lut = generate_rope_lut(config, seq_len)
    x = embed_tokens(weights, tokens, seq_len)
    outs = []
    for li, lw in enumerate(weights.layers):
        y, _ = run_transformer_block_qwen3(x, lw, rope_lut, config, cache, layer_idx=li,
                                     cpu_attn=cpu_attn, verbose=verbose)
        x = np.array(y, copy=True)  # the shared buffer is reused by the next layer
        outs.append(x)
    final = to_bf16(rms_norm(x, weights.final_norm, config.rms_norm_eps))
    logits = final[tokens.size - 1] @ np.asarray(weights.lm_head, np.float32).T
    return outs, final, logits.astype(np.float32)
