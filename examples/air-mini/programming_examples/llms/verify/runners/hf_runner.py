"""HfRunner for air-mini: an emulated HuggingFace bf16 reference.

There is no torch here. This module re-implements, in numpy, the forward pass
of HF transformers' LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM in
bf16, op for op in the order the HF modules run them:

  embed -> per layer: input_layernorm -> q/k/v_proj (+bias on Qwen2)
        -> (Qwen3: q_norm / k_norm per head) -> RoPE (rotate_half)
        -> repeat_kv -> q k^T, * scaling, + causal mask, softmax(fp32) -> @ v
        -> o_proj -> + residual -> post_attention_layernorm
        -> gate_proj, up_proj, silu(gate) * up, down_proj -> + residual
  -> final norm -> lm_head

Every op's result is rounded to bf16 (round-to-nearest-even on the float32
bits), as torch does for bf16 tensors; matmuls accumulate in float32 before
their single rounding, and RMSNorm/softmax compute in float32 as HF does.
This code shares nothing with the emulated NPU path (shared/infra), so it is
an independent check of it, and it never reads AIR_MINI_INJECT. Layer 0's
record also holds every boundary inside the layer under the lens's names
(block_input, attn_norm, q, k, v, q_roped, ..., down), as the probe's hooks on
a real HF model would capture them: the lens's HF side on this tree.

Finding the weights: `model` may be a weights object (with `embed_table` and
`layers`), a `<model>_weights` module, or a module name such as "tiny_llama".
Otherwise `model_name` is matched against `HF_MODEL_IDS` of every
`<dir>/<dir>_weights.py` next to verify/ (or equal to `<dir>`), and that
module's `load_weights(model_name, config=config)` provides the checkpoint.
The architecture follows the config: qk_norm -> Qwen3, qkv_bias -> Qwen2,
otherwise Llama.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np

from runners._records import DecodeStepRecord, PrefillRecord

_LLMS = Path(__file__).resolve().parent.parent.parent
if str(_LLMS) not in sys.path:
    sys.path.append(str(_LLMS))

_BF16_MIN = np.float32(-3.3895313892515355e38)  # torch.finfo(torch.bfloat16).min


def _bf16(t):
    """Emulate a torch bf16 tensor: nearest-even rounding of float32 bits."""
    f = np.ascontiguousarray(t, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    r = (u & 0xFFFFFFFF).astype(np.uint32).view(np.float32).reshape(f.shape)
    return np.where(np.isnan(f), f, r)


class _Linear:
    """nn.Linear(bias=...) with the HF weight layout (out_features, in_features)."""

    def __init__(self, w_in_out, bias=None):
        self.weight = np.ascontiguousarray(np.asarray(w_in_out, np.float32).T)
        self.bias = None if bias is None else np.asarray(bias, np.float32)

    def __call__(self, x):
        y = np.matmul(x, self.weight.T)
        if self.bias is not None:
            y = y + self.bias
        return _bf16(y)


class _RMSNorm:
    """LlamaRMSNorm / Qwen2RMSNorm / Qwen3RMSNorm."""

    def __init__(self, weight, eps):
        self.weight = np.asarray(weight, np.float32)
        self.eps = np.float32(eps)

    def __call__(self, hidden):
        h = hidden.astype(np.float32)
        variance = np.mean(h * h, axis=-1, keepdims=True)
        h = h * (np.float32(1.0) / np.sqrt(variance + self.eps))
        return _bf16(self.weight * _bf16(h))


class _Rotary:
    def __init__(self, head_dim, base):
        idx = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
        self.inv_freq = (np.float32(1.0) / (np.float32(base) ** idx)).astype(np.float32)

    def __call__(self, n):
        pos = np.arange(n, dtype=np.float32)
        freqs = np.outer(pos, self.inv_freq).astype(np.float32)
        emb = np.concatenate((freqs, freqs), axis=-1)
        return _bf16(np.cos(emb)), _bf16(np.sin(emb))


def _rotate_half(x):
    d = x.shape[-1] // 2
    return np.concatenate((-x[..., d:], x[..., :d]), axis=-1)


def _apply_rotary(q, k, cos, sin):
    # q: (heads, L, D); cos/sin: (L, D) -> broadcast over heads
    c, s = cos[None], sin[None]
    q_embed = _bf16(_bf16(q * c) + _bf16(_rotate_half(q) * s))
    k_embed = _bf16(_bf16(k * c) + _bf16(_rotate_half(k) * s))
    return q_embed, k_embed


def _repeat_kv(x, n_rep):
    return x if n_rep == 1 else np.repeat(x, n_rep, axis=0)


class _Attention:
    def __init__(self, lw, cfg, arch, eps):
        self.nh, self.nkv, self.hd = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        bias = arch == "qwen2"
        self.q_proj = _Linear(lw.wq, lw.bq if bias else None)
        self.k_proj = _Linear(lw.wk, lw.bk if bias else None)
        self.v_proj = _Linear(lw.wv, lw.bv if bias else None)
        self.o_proj = _Linear(lw.wo)
        self.q_norm = _RMSNorm(lw.q_norm, eps) if arch == "qwen3" else None
        self.k_norm = _RMSNorm(lw.k_norm, eps) if arch == "qwen3" else None
        self.scaling = np.float32(self.hd ** -0.5)

    def __call__(self, h, cos, sin, rec=None):
        L = h.shape[0]
        qf, kf, vf = self.q_proj(h), self.k_proj(h), self.v_proj(h)
        if rec is not None:
            if self.q_proj.bias is not None:  # the GEMM before its bias, as the hooks take it
                rec.update(q_gemm=qf - self.q_proj.bias, k_gemm=kf - self.k_proj.bias, v_gemm=vf - self.v_proj.bias)
            rec.update(q=qf, k=kf, v=vf)
        q, k, v = qf.reshape(L, self.nh, self.hd), kf.reshape(L, self.nkv, self.hd), vf.reshape(L, self.nkv, self.hd)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
            if rec is not None:
                rec.update(q_norm=q.reshape(L, -1), k_norm=k.reshape(L, -1))
        q, k, v = q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2)
        q, k = _apply_rotary(q, k, cos, sin)
        if rec is not None:  # seq-first, heads contiguous; k before repeat_kv
            rec.update(q_roped=q.transpose(1, 0, 2).reshape(L, -1), k_roped=k.transpose(1, 0, 2).reshape(L, -1))
        rep = self.nh // self.nkv
        k, v = _repeat_kv(k, rep), _repeat_kv(v, rep)
        w = _bf16(np.matmul(q, k.transpose(0, 2, 1)))
        w = _bf16(w * self.scaling)
        mask = np.where(np.tril(np.ones((L, L), dtype=bool)), np.float32(0), _BF16_MIN)
        w = _bf16(w + mask[None])
        w = w - np.max(w, axis=-1, keepdims=True)
        p = np.exp(w)
        p = _bf16(p / np.sum(p, axis=-1, keepdims=True))
        o = _bf16(np.matmul(p, v))  # (heads, L, D)
        o = o.transpose(1, 0, 2).reshape(L, self.nh * self.hd)
        out = self.o_proj(o)
        if rec is not None:
            rec.update(attn_out=o, o_proj=out)
        return out


class _MLP:
    def __init__(self, lw):
        self.gate_proj = _Linear(lw.w_gate)
        self.up_proj = _Linear(lw.w_up)
        self.down_proj = _Linear(lw.w_down)

    def __call__(self, x, rec=None):
        g = self.gate_proj(x)
        act = _bf16(g / (np.float32(1.0) + np.exp(-g)))
        u = self.up_proj(x)
        sw = _bf16(act * u)
        down = self.down_proj(sw)
        if rec is not None:
            rec.update(gate=g, up=u, swiglu=sw, down=down)
        return down


class _DecoderLayer:
    def __init__(self, lw, cfg, arch, eps):
        self.input_layernorm = _RMSNorm(lw.attn_norm, eps)
        self.self_attn = _Attention(lw, cfg, arch, eps)
        self.post_attention_layernorm = _RMSNorm(lw.ffn_norm, eps)
        self.mlp = _MLP(lw)

    def __call__(self, h, cos, sin, rec=None):
        """One layer; `rec` (a dict), when given, receives every boundary inside it under
        the lens's names (scripts/probe/elf_boundaries.json), as float32 [positions, features]."""
        if rec is not None:
            rec["block_input"] = h
        residual = h
        h = self.input_layernorm(h)
        if rec is not None:
            rec["attn_norm"] = h
        h = self.self_attn(h, cos, sin, rec)
        h = _bf16(residual + h)
        residual = h
        if rec is not None:
            rec["res1"] = h
        h = self.post_attention_layernorm(h)
        if rec is not None:
            rec["ffn_norm"] = h
        h = self.mlp(h, rec)
        return _bf16(residual + h)


def _arch_of(cfg):
    if getattr(cfg, "qk_norm", False):
        return "qwen3"
    if getattr(cfg, "qkv_bias", False):
        return "qwen2"
    return "llama"


def _weights_modules():
    for d in sorted(_LLMS.iterdir()):
        if (d / f"{d.name}_weights.py").is_file():
            yield d.name


def _load_checkpoint(model_name, config, model):
    if model is not None and hasattr(model, "embed_table") and hasattr(model, "layers"):
        return model
    mod = None
    if isinstance(model, str):
        mod = importlib.import_module(f"{model}.{model}_weights")
    elif model is not None and hasattr(model, "load_weights"):
        mod = model
    else:
        known = []
        for name in _weights_modules():
            m = importlib.import_module(f"{name}.{name}_weights")
            ids = tuple(getattr(m, "HF_MODEL_IDS", ()))
            known.extend(ids)
            if model_name in ids or model_name == name:
                mod = m
                break
        if mod is None:
            raise ValueError(
                f"HfRunner: no air-mini checkpoint for {model_name!r}; known ids: {known}")
    return mod.load_weights(model_name, config=config)


class HfRunner:
    """The HF bf16 reference (emulated). See the module docstring."""

    name = "hf_bf16"

    def __init__(self, model_name, config, max_seq, lite_mode=False, model=None):
        self.model_name = model_name
        self.config = config
        self.max_seq = int(max_seq)
        self.lite_mode = lite_mode
        arch = _arch_of(config)
        self.arch = arch
        eps = float(getattr(config, "rms_norm_eps", 1e-5 if arch == "llama" else 1e-6))
        w = _load_checkpoint(model_name, config, model)
        self.embed_tokens = np.asarray(w.embed_table, np.float32)
        self.layers = [_DecoderLayer(lw, config, arch, eps) for lw in w.layers]
        self.norm = _RMSNorm(w.final_norm, eps)
        lm = w.lm_head if w.lm_head is not None else w.embed_table
        self.lm_head = _Linear(np.asarray(lm, np.float32).T)
        self.rotary_emb = _Rotary(config.head_dim, config.rope_base)
        self._history = []

    def _forward(self, ids):
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.size == 0 or ids.size > self.max_seq:
            raise ValueError(f"prompt length {ids.size} outside 1..{self.max_seq}")
        h = _bf16(self.embed_tokens[ids])
        cos, sin = self.rotary_emb(ids.size)
        hidden_states = [h]
        self.layer0 = {}
        for li, layer in enumerate(self.layers):
            h = layer(h, cos, sin, self.layer0 if li == 0 else None)
            hidden_states.append(h)
        normed = self.norm(h)
        hidden_states[-1] = normed  # HF: the last entry is post-final-norm
        logits = self.lm_head(normed)
        return hidden_states, logits

    def prefill(self, prompt_tokens) -> PrefillRecord:
        ids = np.asarray(prompt_tokens, dtype=np.int64).reshape(-1)
        self._history = list(ids)
        hidden_states, logits = self._forward(ids)
        last = logits[-1].astype(np.float32)
        top1 = int(np.argmax(last))
        if self.lite_mode:
            return PrefillRecord(layer_intermediates=[],
                                 final_hidden_normed=np.empty((0,), np.float32),
                                 logits_at_pred=last, top1_token=top1)
        n = len(self.layers)
        inter = [{"ffn_out": hidden_states[li + 1].astype(np.float32)} for li in range(n - 1)]
        inter.append({})
        # Layer 0's boundaries beside its ffn_out (the lens's HF side: a real HfRunner's probe
        # hooks the torch modules; this one has none, so it records what they would see).
        if n > 1:
            inter[0] = {**{k: np.ascontiguousarray(a, np.float32) for k, a in self.layer0.items()}, **inter[0]}
        return PrefillRecord(layer_intermediates=inter,
                             final_hidden_normed=hidden_states[-1].astype(np.float32),
                             logits_at_pred=last, top1_token=top1)

    def decode_step(self, input_token: int, current_pos: int) -> DecodeStepRecord:
        """Recomputes the whole prefix (no KV cache): fine at air-mini sizes."""
        self._history = self._history[:current_pos] + [int(input_token)]
        _, logits = self._forward(np.asarray(self._history, np.int64))
        last = logits[-1].astype(np.float32)
        return DecodeStepRecord(lm_head_logits=last, top1_token=int(np.argmax(last)))
