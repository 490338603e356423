"""What every air-mini `<model>_prefill.py` shares: calling the block's ELFs,
the bisect hook's plumbing and the prefill driver.

A model's prefill module keeps what makes it that model: its ELFs (names,
kinds and the bisect steps inside each), its CPU equivalents and its block
function, which calls the ELFs in order through a `Block` (one method per
ELF argument layout: qkv_rope, attention, o_ffn, o_ffn_head, down_add).

`Block` knows each ELF's argument layout and the cache's buffer rules: every
ELF runs through `cache.load_and_run(...)` with `shared_nonstatic=True`, so
the arrays a block returns are views of buffers that the next call
overwrites: copy (np.array(x, copy=True)) what you keep. Weights are static
arguments under a per-layer `bo_key` ("<elf>_L<layer_idx>").

Block function contract (llama32_1b's, plus the bisect hook):
    x_bf16: (seq_len, emb_dim) input, zero-padded to the compiled seq_len.
    layer_weights: LayerWeights of this layer.
    rope_lut_bf16: (>= seq_len, head_dim) RoPE table from generate_rope_lut.
    config: LlamaConfig. cache: KernelCache with compile_all_kernels done.
    cpu_steps: optional iterable of bisect step names to run on the CPU.
    trace: optional dict that receives every step's output.
    Returns (out (seq_len, emb_dim), {"v", "k_roped", "q_roped", "attn_out",
    "ffn_out", and every other boundary inside the block under the lens's names:
    Block.returned}); v, q_roped, k_roped and ffn_out are views of reused cache
    buffers.

Bisect hook (seed Step 4): a model's `BISECT_STEPS` lists the block's steps
(kernel boundaries inside the fused ELFs) in execution order, each with the
ELF it lives in and its CPU equivalent; `bisect_table` builds it from the
model's ELFS. A step named in `cpu_steps` is computed by its CPU equivalent
(the model's `<model>_cpu_helpers` for rms_norm / attention / qk_norm, inline
numpy for the rest) and every other step on the "NPU". `trace={}` collects
each step's output (bf16 values as float32).
"""

import numpy as np

from . import emu_kernels, inject
from .bf16 import to_bf16

# The CPU equivalent of each bisect step. "{helpers}" is the model's
# `<model>_cpu_helpers` module.
CPU_EQUIVALENTS = {
    "attn_norm": "{helpers}.rms_norm",
    "q_proj": "numpy x @ wq",
    "k_proj": "numpy x @ wk",
    "v_proj": "numpy x @ wv",
    "qkv_bias": "numpy q/k/v + bq/bk/bv",
    "qk_norm": "{helpers}.qk_norm_per_head",
    "rope": "numpy half-split RoPE",
    "attention": "{helpers}.attention_reference",
    "o_proj": "numpy attn @ wo",
    "residual1": "numpy x + o",
    "ffn_norm": "{helpers}.rms_norm",
    "gate_proj": "numpy h @ w_gate",
    "up_proj": "numpy h @ w_up",
    "swiglu": "numpy silu(g) * u",
    "down_proj": "numpy s @ w_down",
    "residual2": "numpy res1 + down",
}

FLASH_ATTN = "flash_attn"  # the attention ELF, compiled and run only when cpu_attn=False


def bisect_table(elfs, cpu_helpers):
    """BISECT_STEPS from a model's ELFS: [(step, ELF it belongs to, CPU
    equivalent)] in execution order. `cpu_helpers` names the model's helpers
    module (e.g. "tiny_llama_cpu_helpers")."""
    return [(step, name, CPU_EQUIVALENTS[step].format(helpers=cpu_helpers))
            for name, _kind, steps in elfs for step in steps]


def bisect_steps(table, cpu_attn=True):
    """Ordered bisect steps: list of dicts {step, kernel, cpu_equivalent}.

    With cpu_attn=True the attention step runs on the host ("host") rather
    than in the flash_attn ELF; it can still be swapped for the reference.
    """
    out = []
    for step, elf, cpu in table:
        if step == "attention" and cpu_attn:
            elf = "host"
        out.append({"step": step, "kernel": elf, "cpu_equivalent": cpu})
    return out


def compile_all_kernels(cache, config, seq_len, elfs, cpu_attn=True, verbose=False):
    """Compile each of `elfs` ((name, kind, steps), in call order) for
    `seq_len` (a multiple of 64) into `cache`; flash_attn only when not
    cpu_attn. Returns the compiled names."""
    emu_kernels.check_seq_len(seq_len)
    mods = [(name, emu_kernels.build_module(kind, seq_len, config))
            for name, kind, _steps in elfs if not (cpu_attn and name == FLASH_ATTN)]
    for name, mod in mods:
        if verbose:
            print(f"  compiling {name} (seq_len={seq_len})")
        cache.compile_and_cache(name, mod, {"omit_while_true_loop": False})
    return [name for name, _ in mods]


class Block:
    """One call of a model's block function: the run kwargs every ELF sees,
    and one method per ELF argument layout."""

    def __init__(self, x_bf16, config, cache, layer_idx, cpu_ops, cpu_steps=None, trace=None):
        inject.active()  # fail fast on an unknown AIR_MINI_INJECT
        self.x = to_bf16(np.asarray(x_bf16, dtype=np.float32))
        self.S, self.E = self.x.shape
        self.Q = config.n_heads * config.head_dim
        self.KV = config.n_kv_heads * config.head_dim
        self.H = config.hidden_dim
        self.cache = cache
        self.layer_idx = layer_idx
        # Every step's output, for the bisect's caller (`trace`) and for the lens (returned()).
        self.trace = trace if trace is not None else {}
        self.kw = {
            "eps": config.rms_norm_eps,
            "n_heads": config.n_heads,
            "n_kv_heads": config.n_kv_heads,
            "head_dim": config.head_dim,
            "real_len": inject.real_rows(self.x),
            "cpu_steps": frozenset(cpu_steps or ()),
            "cpu_ops": cpu_ops,
            "trace": self.trace,
        }

    def returned(self, q_roped, k_roped, v, attn_out, out):
        """The block's returned dict: llama32_1b's ("v", "k_roped", "q_roped", "attn_out",
        "ffn_out") plus every other boundary inside the block under the lens's names
        (scripts/probe/elf_boundaries.json), from the steps' outputs: what a real tree
        reads back from its ELFs' buffers, here without a table of argument layouts."""
        t = self.trace
        Q, KV = self.Q, self.KV
        d = {"block_input": self.x, "attn_norm": t.get("attn_norm")}
        if "qkv_bias" in t:  # the GEMMs, then q/k/v with their bias
            d.update(q_gemm=t.get("q_proj"), k_gemm=t.get("k_proj"), v_gemm=t.get("v_proj"))
            qkv = t["qkv_bias"]
            d.update(q=qkv[:, :Q], k=qkv[:, Q:Q + KV])
        else:
            d.update(q=t.get("q_proj"), k=t.get("k_proj"))
        if "qk_norm" in t:
            d.update(q_norm=t["qk_norm"][:, :Q], k_norm=t["qk_norm"][:, Q:Q + KV])
        d.update(o_proj=t.get("o_proj"), res1=t.get("residual1"), ffn_norm=t.get("ffn_norm"),
                 gate=t.get("gate_proj"), up=t.get("up_proj"), swiglu=t.get("swiglu"),
                 down=t.get("down_proj"))
        d.update(v=v, k_roped=k_roped, q_roped=q_roped, attn_out=attn_out, ffn_out=out)
        return {k: a for k, a in d.items() if a is not None}

    def log(self, verbose, elfs):
        if verbose:
            seq = " -> ".join("attention" if name == FLASH_ATTN else name for name, _, _ in elfs)
            print(f"  Layer {self.layer_idx}: {seq} (seq_len={self.S})")

    def _run(self, name, *args, outputs, static):
        res = self.cache.load_and_run(
            name, self.kw, *args, output_indices=outputs, static_input_indices=static,
            intermediate_indices=set(outputs), bo_key=f"{name}_L{self.layer_idx}",
            shared_nonstatic=True)
        return [res[i] for i in outputs]

    def qkv_rope(self, name, weights, rope_lut_bf16):
        """The front ELF: x, its weights (attn_norm, wq, wk, wv and the model's
        extras), the RoPE table -> (q_roped, k_roped, v) buffers."""
        S = self.S
        n_in = 2 + len(weights)  # x, the weights, the RoPE table
        return self._run(
            name, self.x, *weights, np.asarray(rope_lut_bf16)[:S],
            np.zeros((S, self.Q), np.float32), np.zeros((S, self.KV), np.float32),
            np.zeros((S, self.KV), np.float32),
            outputs=[n_in, n_in + 1, n_in + 2], static=set(range(1, n_in)))

    def attention(self, q_roped, k_roped, v, cpu_attn):
        """The attention step: on the host, or the flash_attn ELF."""
        if cpu_attn:
            with self.cache.profiler.time_cpu("prefill_cpu_attention"):
                return emu_kernels.attention_step(emu_kernels.make_ctx(self.kw), q_roped,
                                                  k_roped, v)
        return self.cache.load_and_run(
            FLASH_ATTN, self.kw, q_roped, k_roped, v, np.zeros((self.S, self.Q), np.float32),
            output_indices=[3])[3]

    def o_ffn(self, name, attn_out, lw):
        """O GEMM, +residual, RMSNorm, Gate, Up, SwiGLU, Down, +residual -> out."""
        (out,) = self._run(
            name, attn_out, lw.wo, self.x, lw.ffn_norm, lw.w_gate, lw.w_up, lw.w_down,
            np.zeros((self.S, self.E), np.float32),
            outputs=[7], static={1, 3, 4, 5, 6})
        return out

    def o_ffn_head(self, name, attn_out, lw):
        """O GEMM, +residual, RMSNorm, Gate, Up, SwiGLU -> (res1, swiglu)."""
        res1, swiglu = self._run(
            name, attn_out, lw.wo, self.x, lw.ffn_norm, lw.w_gate, lw.w_up,
            np.zeros((self.S, self.E), np.float32), np.zeros((self.S, self.H), np.float32),
            outputs=[6, 7], static={1, 3, 4, 5})
        return res1, swiglu

    def down_add(self, name, swiglu, lw, res1):
        """Down GEMM, +residual -> out."""
        (out,) = self._run(
            name, swiglu, lw.w_down, res1, np.zeros((self.S, self.E), np.float32),
            outputs=[3], static={1})
        return out


def embed_tokens(weights, tokens, seq_len):
    """Embedding lookup, zero-padded to seq_len rows (the block's input)."""
    tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)
    if tokens.size > seq_len:
        raise ValueError(f"{tokens.size} tokens do not fit the compiled seq_len {seq_len}")
    x = np.zeros((seq_len, weights.embed_table.shape[1]), np.float32)
    x[:tokens.size] = weights.embed_table[tokens]
    return x


def run_prefill(block_fn, rms_norm, weights, config, cache, tokens, seq_len, rope_lut,
                cpu_attn=True, verbose=False):
    """All layers through `block_fn`, then the final norm (`rms_norm`, the
    model's CPU helper) and the logits of the last real token.

    Returns (layer_outputs, final_hidden_normed, logits_at_pred): layer_outputs is
    a list of per-layer block outputs (copies, padded to seq_len), the final
    normed hidden state is (seq_len, emb_dim) and logits are for the last real token.
    """
    tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)
    x = embed_tokens(weights, tokens, seq_len)
    outs = []
    for li, lw in enumerate(weights.layers):
        y, _ = block_fn(x, lw, rope_lut, config, cache, layer_idx=li, cpu_attn=cpu_attn,
                        verbose=verbose)
        x = np.array(y, copy=True)  # the shared buffer is reused by the next layer
        outs.append(x)
    final = to_bf16(rms_norm(x, weights.final_norm, config.rms_norm_eps))
    logits = final[tokens.size - 1] @ np.asarray(weights.lm_head, np.float32).T
    return outs, final, logits.astype(np.float32)
