"""HF-side capture: forward hooks on layer 0 of the reference model.

The probe builds the HF model itself, the way the tree's HfRunner would
(`AutoModelForCausalLM.from_pretrained(id, torch_dtype=bfloat16,
low_cpu_mem_usage=True)`, or the adapter's own `build_hf_model`), hooks layer 0
and hands the model to the tree's `HfRunner(..., model=m)`: ffn_out still comes
from HfRunner's record; the hooks only copy what flows through layer 0.

Hooks (module names of LlamaDecoderLayer / Qwen2DecoderLayer / Qwen3DecoderLayer):
  block_input  layer 0's hidden_states argument (the embeddings)
  attn_norm    input_layernorm output
  q, k, v      self_attn.{q,k,v}_proj outputs (bias included); q_gemm/k_gemm/v_gemm
               = output minus the bias, for projections with a bias
  q_norm, k_norm  self_attn.q_norm / k_norm outputs (Qwen3)
  q_roped, k_roped  recomputed with the modeling module's own apply_rotary_pos_emb
               on the q/k the attention uses (after q_norm/k_norm when present) and
               the position_embeddings (cos, sin) layer 0's self_attn received
  attn_out     self_attn.o_proj input;  o_proj  its output
  res1         post_attention_layernorm input;  ffn_norm  its output
  gate, up     mlp.gate_proj / up_proj outputs;  swiglu  mlp.down_proj input
  down         mlp.down_proj output
  ffn_out      not a hook: HfRunner's layer_intermediates[0]["ffn_out"]

Layout normalisation, HF side: `seq_first` below is the one place. Every
boundary becomes float32 [positions, features] with heads contiguous, the same
layout npu_probe.emulate.table.to_seq_first gives the NPU side: [1, seq, X] -> [seq, X];
[1, heads, seq, hd] (q/k after RoPE) -> transpose to [seq, heads*hd] (k keeps
its n_kv_heads: before repeat_kv); [1, seq, heads, hd] (q_norm/k_norm) ->
[seq, heads*hd].
"""

import sys

import numpy as np

CAPTURE_VERSION = "hf-layer0-hooks/1"


def seq_first(t):
    """A layer-0 tensor as float32 [positions, features], heads contiguous."""
    a = t.detach().float().cpu().numpy()
    if a.ndim >= 1 and a.shape[0] == 1:
        a = a[0]
    if a.ndim == 3:
        # [heads, seq, hd] from attention (q/k after RoPE) vs [seq, heads, hd] (q_norm/k_norm):
        # the caller says which through `heads_first`; default: [seq, heads, hd].
        return np.ascontiguousarray(a.reshape(a.shape[0], -1), dtype=np.float32)
    return np.ascontiguousarray(a, dtype=np.float32)


def heads_first_to_seq(t):
    a = t.detach().float().cpu().numpy()
    if a.ndim == 4:
        a = a[0]
    h, s, d = a.shape
    return np.ascontiguousarray(a.transpose(1, 0, 2).reshape(s, h * d), dtype=np.float32)


def build_model(hf_id):
    """The reference model as the tree's HfRunner builds it when given none."""
    import torch  # noqa: PLC0415 - only with a real HF reference
    from transformers import AutoModelForCausalLM  # noqa: PLC0415

    try:
        return AutoModelForCausalLM.from_pretrained(hf_id, torch_dtype=torch.bfloat16, low_cpu_mem_usage=True)
    except ImportError:
        return AutoModelForCausalLM.from_pretrained(hf_id, torch_dtype=torch.bfloat16)


def find_layer0(model):
    for path in ("model.layers", "model.model.layers", "transformer.h", "layers"):
        cur = model
        for part in path.split("."):
            cur = getattr(cur, part, None)
            if cur is None:
                break
        if cur is not None:
            try:
                return cur[0]
            except (IndexError, TypeError, KeyError):
                continue
    return None


class Layer0Hooks:
    """Forward hooks on layer 0; `captured` maps boundary name -> float32 [seq, cols].
    Only the first forward through layer 0 is kept (HfRunner.prefill runs one)."""

    def __init__(self, model):
        self.model = model
        self.layer = find_layer0(model)
        self.captured = {}
        self.missing = {}
        self._handles = []
        self._raw = {}
        self._pos = None
        self._done = False

    def __enter__(self):
        self.install()
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def _get(self, path):
        cur = self.layer
        for part in path.split("."):
            cur = getattr(cur, part, None)
            if cur is None:
                return None
        return cur

    def _keep(self, name, value):
        if not self._done and name not in self.captured:
            self.captured[name] = value

    def install(self):
        if self.layer is None:
            self.missing["*"] = "no decoder layer 0 found (model.layers[0])"
            return
        self._on(self.layer, "pre", lambda m, a, k: self._keep("block_input", seq_first(_arg0(a, k))))
        self._on(self.layer, "post", lambda m, a, k, o: setattr(self, "_done", True))
        outs = {"input_layernorm": "attn_norm", "self_attn.o_proj": "o_proj", "post_attention_layernorm": "ffn_norm",
                "mlp.gate_proj": "gate", "mlp.up_proj": "up", "mlp.down_proj": "down"}
        for path, name in outs.items():
            self._out(path, name)
        ins = {"self_attn.o_proj": "attn_out", "post_attention_layernorm": "res1", "mlp.down_proj": "swiglu"}
        for path, name in ins.items():
            mod = self._get(path)
            if mod is None:
                self.missing[name] = f"layer 0 has no {path}"
                continue
            self._on(mod, "pre", lambda m, a, k, _n=name: self._keep(_n, seq_first(_arg0(a, k))))
        for proj, name in (("q_proj", "q"), ("k_proj", "k"), ("v_proj", "v")):
            mod = self._get(f"self_attn.{proj}")
            if mod is None:
                self.missing[name] = f"layer 0 has no self_attn.{proj}"
                continue
            self._on(mod, "post", lambda m, a, k, o, _n=name: self._proj(_n, m, o))
        for norm in ("q_norm", "k_norm"):
            mod = self._get(f"self_attn.{norm}")
            if mod is not None:
                self._on(mod, "post", lambda m, a, k, o, _n=norm: self._raw_keep(_n, o))
        attn = self._get("self_attn")
        if attn is not None:
            self._on(attn, "pre", lambda m, a, k: self._attn_in(m, a, k))
            self._on(attn, "post", lambda m, a, k, o: self._rope(m))

    def _on(self, module, when, fn):
        if when == "pre":
            self._handles.append(module.register_forward_pre_hook(lambda m, a, k: fn(m, a, k), with_kwargs=True))
        else:
            self._handles.append(module.register_forward_hook(lambda m, a, k, o: fn(m, a, k, o), with_kwargs=True))

    def _out(self, path, name):
        mod = self._get(path)
        if mod is None:
            self.missing[name] = f"layer 0 has no {path}"
            return
        self._on(mod, "post", lambda m, a, k, o, _n=name: self._keep(_n, seq_first(_first(o))))

    def _raw_keep(self, name, out):
        if not self._done and name not in self._raw:
            self._raw[name] = _first(out).detach()
            self._keep(name, seq_first(self._raw[name]))

    def _proj(self, name, module, out):
        if self._done or name in self._raw:
            return
        t = _first(out).detach()
        self._raw[name] = t
        self._keep(name, seq_first(t))
        bias = getattr(module, "bias", None)
        if bias is not None:
            self._keep(f"{name}_gemm", seq_first(t.float() - bias.detach().float()))

    def _attn_in(self, module, args, kwargs):
        if self._done or self._pos is not None:
            return
        pe = kwargs.get("position_embeddings")
        if pe is None and len(args) > 1:
            pe = args[1]
        self._pos = pe

    def _rope(self, module):
        if self._done or "q_roped" in self.captured:
            return
        q = self._raw.get("q_norm", self._raw.get("q"))
        k = self._raw.get("k_norm", self._raw.get("k"))
        if q is None or k is None or self._pos is None:
            self.missing["q_roped"] = self.missing["k_roped"] = "no q/k or position_embeddings seen in layer 0"
            return
        hd = int(getattr(module, "head_dim", 0) or q.shape[-1])
        qs = q.reshape(*q.shape[:2], -1, hd).transpose(1, 2)
        ks = k.reshape(*k.shape[:2], -1, hd).transpose(1, 2)
        cos, sin = self._pos
        apply = getattr(sys.modules.get(type(module).__module__), "apply_rotary_pos_emb", None)
        if apply is None:
            apply = _apply_rotary_pos_emb
        qr, kr = apply(qs, ks, cos, sin)
        self._keep("q_roped", heads_first_to_seq(qr))
        self._keep("k_roped", heads_first_to_seq(kr))


def _first(o):
    return o[0] if isinstance(o, (tuple, list)) else o


def _arg0(args, kwargs):
    if args:
        return args[0]
    return kwargs.get("hidden_states")


def _rotate_half(x):
    import torch  # noqa: PLC0415

    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
