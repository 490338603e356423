"""What one layer of the model computes, from the model's own code (and its config and HF
config.json): how many RMSNorms and where, the activation (SwiGLU / GeGLU), Q/K norm, a QKV bias,
a sliding window, partial rotary. Each feature carries its evidence (file:line, or the config key
that says so), and `sequence` turns them into the per-layer kernel sequence the seed's Step 1
compares with llama's. Read statically: nothing of the tree is imported."""

import ast
import os
import re

from npu_probe.core.hfconfig import architecture as hf_architecture
from npu_probe.plan.static.parse import parse_file

# HF parameter names of the norms a decoder layer may have, and where each sits. In Gemma 2/3
# post_attention_layernorm normalises the attention output (pre_feedforward_layernorm is the FFN
# norm); in llama-like models it is the FFN's input norm.
NORM_NAMES = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
              "post_feedforward_layernorm")
_NORM_RX = re.compile(r"(?:^|\.)(" + "|".join(NORM_NAMES) + r")(?:\.weight)?$")
_QK_NORM_RX = re.compile(r"(?:self_attn\.)?[qk]_norm\.weight$|self_attn\.[qk]_norm$|qknorm", re.I)
_BIAS_RX = re.compile(r"[qkv]_proj\.bias$|qkv_bias_rope", re.I)
_GELU_RX = re.compile(r"gelu", re.I)
_SILU_RX = re.compile(r"silu|swiglu|swish", re.I)
_WINDOW_RX = re.compile(r"^_?SLIDING_WINDOW$")
_ROTARY_RX = re.compile(r"^_?(ROPE_DIM|ROTARY_DIM|PARTIAL_ROTARY_DIM)$")


def _docstring_ids(tree):
    """ids of the string constants that are docstrings (a module's, class's or function's first statement)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _tokens(tree):
    """(kind, text, line) for each string constant (docstrings left out: prose, not code) and
    identifier (names, attributes, definitions, keywords) of a parsed file."""
    docs = _docstring_ids(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield "str", node.value, node.lineno
        elif isinstance(node, ast.Name):
            yield "id", node.id, node.lineno
        elif isinstance(node, ast.Attribute):
            yield "id", node.attr, node.lineno
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield "id", node.name, node.lineno
        elif isinstance(node, ast.keyword) and node.arg:
            yield "id", node.arg, getattr(node, "lineno", 0) or 0


def model_files(ctx, block_path=None):
    """The model dir's own Python files (the adapter first), then the block function's module
    when it lives in another model's dir."""
    names = sorted(n for n in os.listdir(ctx.model_dir) if n.endswith(".py"))
    files = [ctx.adapter] + [os.path.join(ctx.model_dir, n) for n in names
                             if os.path.join(ctx.model_dir, n) != ctx.adapter]
    if block_path and block_path not in files:
        files.append(block_path)
    return files


class Evidence:
    """The first place each pattern shows in the scanned files."""

    def __init__(self, ctx, files):
        self.ctx = ctx
        self.found = {}  # key -> "file:line"
        self.norms = {}  # HF norm name -> "file:line"
        self.constants = {}  # name -> (value, "file:line")
        for path in files:
            parsed = parse_file(path)
            if parsed is None or parsed.tree is None:
                continue
            self._scan(path, parsed.tree)

    def _note(self, key, path, line):
        self.found.setdefault(key, self.ctx.where(path, line))

    def _scan(self, path, tree):
        for kind, text, line in _tokens(tree):
            if kind == "str":
                m = _NORM_RX.search(text)
                if m:
                    self.norms.setdefault(m.group(1), self.ctx.where(path, line))
                if _QK_NORM_RX.search(text):
                    self._note("qk_norm", path, line)
                if _BIAS_RX.search(text):
                    self._note("qkv_bias", path, line)
            if _GELU_RX.search(text):
                self._note("gelu", path, line)
            if _SILU_RX.search(text):
                self._note("silu", path, line)
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, int) \
                    and not isinstance(node.value.value, bool):
                name = node.targets[0].id
                if _WINDOW_RX.match(name) or _ROTARY_RX.match(name):
                    self.constants.setdefault(name, (node.value.value, self.ctx.where(path, node.lineno)))

    def constant(self, rx):
        return next(((v, w, n) for n, (v, w) in self.constants.items() if rx.match(n)), None)


def features(ctx, cfg, hf_raw=None, block_path=None):
    """{feature: {"value", "evidence"}} for norms, activation, qk_norm, qkv_bias, sliding_window,
    rotary_dim: what one layer of this model computes."""
    ev = Evidence(ctx, model_files(ctx, block_path))
    hf = hf_architecture(hf_raw) if isinstance(hf_raw, dict) else {}
    out = {}
    # Norms: the two pre-norms every decoder layer in scope has, plus Gemma's sandwich norms.
    post = [n for n in ("pre_feedforward_layernorm", "post_feedforward_layernorm") if n in ev.norms]
    sandwich = bool(post) or "sandwich_norms" in hf
    places = ["before attention (input_layernorm)"]
    if sandwich:
        places += ["after attention, before the residual add (post_attention_layernorm)",
                   "before the FFN (pre_feedforward_layernorm)", "after the FFN, before the residual add "
                   "(post_feedforward_layernorm)"]
    else:
        places += ["before the FFN (post_attention_layernorm)"]
    where = [f"{n}: {w}" for n, w in sorted(ev.norms.items())] or (
        [f"config.json {hf['sandwich_norms'][1]}"] if "sandwich_norms" in hf else [])
    out["norms"] = {"value": {"per_layer": len(places), "places": places, "sandwich": sandwich},
                    "evidence": "; ".join(where) or "no norm named in the model's code: llama's two pre-norms"}
    # Activation.
    if "gelu" in ev.found or (hf.get("activation", (None,))[0] == "GeGLU"):
        act_where = ev.found.get("gelu") or f"config.json {hf['activation'][1]}"
        out["activation"] = {"value": "GeGLU", "evidence": act_where}
    else:
        act_where = ev.found.get("silu") or (f"config.json {hf['activation'][1]}" if "activation" in hf else
                                            "no other activation in the model's code: llama's SwiGLU")
        out["activation"] = {"value": "SwiGLU", "evidence": act_where}
    # Q/K norm and QKV bias: the config's flags, else the model's own code names them.
    for key, what in (("qk_norm", "Q/K norm"), ("qkv_bias", "QKV bias")):
        on = bool((cfg or {}).get(key)) or key in ev.found
        src = f"config {key}=True" if (cfg or {}).get(key) else ev.found.get(key)
        out[key] = {"value": on, "evidence": src or f"no {what} in the config or the model's code"}
    # Sliding window and partial rotary: the model's constants, else config.json.
    win = ev.constant(_WINDOW_RX)
    if win and win[0] > 0:
        out["sliding_window"] = {"value": win[0], "evidence": f"{win[1]} {win[2]} = {win[0]}"}
    elif "sliding_window" in hf:
        out["sliding_window"] = {"value": hf["sliding_window"][0], "evidence": f"config.json {hf['sliding_window'][1]}"}
    else:
        out["sliding_window"] = {"value": None, "evidence": "none: every layer attends causally to all positions"}
    rot = ev.constant(_ROTARY_RX)
    head_dim = (cfg or {}).get("head_dim")
    if rot and head_dim and 0 < rot[0] < head_dim:
        out["rotary_dim"] = {"value": rot[0], "evidence": f"{rot[1]} {rot[2]} = {rot[0]} of head_dim {head_dim}"}
    elif "rotary_dim" in hf and head_dim and hf["rotary_dim"][0] < head_dim:
        out["rotary_dim"] = {"value": hf["rotary_dim"][0], "evidence": f"config.json {hf['rotary_dim'][1]}"}
    else:
        out["rotary_dim"] = {"value": None, "evidence": "full rotary: RoPE over every head dim"}
    return out


LLAMA_SEQUENCE = ["RMSNorm", "Q/K/V GEMM", "RoPE", "FlashAttention", "O GEMM", "add",
                  "RMSNorm", "Gate/Up GEMM", "SwiGLU", "Down GEMM", "add"]


def sequence(feat):
    """The per-layer kernel sequence these features give (llama's when none differs)."""
    seq = ["RMSNorm", "Q/K/V GEMM"]
    if feat["qkv_bias"]["value"]:
        seq.append("QKV bias add")
    if feat["qk_norm"]["value"]:
        seq.append("Q/K Norm")
    rot = feat["rotary_dim"]["value"]
    seq.append(f"partial RoPE ({rot} dims)" if rot else "RoPE")
    win = feat["sliding_window"]["value"]
    seq.append(f"FlashAttention (sliding window {win})" if win else "FlashAttention")
    seq.append("O GEMM")
    sandwich = feat["norms"]["value"]["sandwich"]
    if sandwich:
        seq.append("RMSNorm (post-attention)")
    seq += ["add", "RMSNorm", "Gate/Up GEMM", feat["activation"]["value"], "Down GEMM"]
    if sandwich:
        seq.append("RMSNorm (post-FFN)")
    seq.append("add")
    return seq


def breaks(feat, tree_does):
    """The seed's breaks, (a) a new op type, (b) a new op between fused launches, (c) a reorder,
    each naming the op: [{"rule", "op", "detail", "evidence"}]."""
    out = []

    def add(rule, op, detail, key):
        out.append({"rule": rule, "op": op, "detail": detail, "evidence": feat[key]["evidence"]})

    if feat["qkv_bias"]["value"]:
        on_device = [t["detail"].split("ELF ")[1].split(",")[0] for t in tree_does if t["id"] == "qkv_bias_on_device"]
        tree_says = (f"this tree adds the bias on device before RoPE ({on_device[0]}), an extra device op"
                     if on_device else
                     "the seed's host-side post-RoPE bias add would keep the device ELFs bias-free, but the add "
                     "still sits inside the block (after RoPE, before attention)")
        add("a", "QKV bias add", f"QKV bias add after the Q/K/V GEMM: a new op type; {tree_says}, so llama's "
            "run_transformer_block cannot be called unchanged", "qkv_bias")
        add("b", "QKV bias add", "QKV bias add lands between Q/K/V GEMM and RoPE, which llama's rms_gemms_rope ELF "
            "fuses into one launch", "qkv_bias")
    if feat["qk_norm"]["value"]:
        add("a", "Q/K Norm", "a new op type (per-head RMSNorm with a (head_dim,) weight)", "qk_norm")
        add("b", "Q/K Norm", "Q/K Norm lands between Q/K/V GEMM and RoPE, which llama's rms_gemms_rope ELF fuses "
            "into one launch", "qk_norm")
    rot = feat["rotary_dim"]["value"]
    if rot:
        add("a", "partial RoPE", f"RoPE over {rot} dims of each head (partial rotary), the rest passed through: "
            "llama's RoPE rotates every dim", "rotary_dim")
    win = feat["sliding_window"]["value"]
    if win:
        add("a", "sliding-window attention", f"FlashAttention with a {win}-position sliding-window mask: llama's "
            "flash_attn ELF is causal over every position", "sliding_window")
    if feat["norms"]["value"]["sandwich"]:
        add("b", "RMSNorm (post-attention)", "an RMSNorm on the attention output, between the O GEMM and the residual "
            "add, which llama's o_ffn ELF fuses into one launch", "norms")
        add("b", "RMSNorm (post-FFN)", "an RMSNorm on the FFN output, between the Down GEMM and the residual add, "
            "which llama's o_ffn ELF fuses into one launch", "norms")
        add("c", "RMSNorm (post-norm)", f"{feat['norms']['value']['per_layer']} norms per layer: each sublayer is "
            "normalised after as well as before (sandwich / post-norm), where llama only pre-norms", "norms")
    if feat["activation"]["value"] != "SwiGLU":
        add("a", feat["activation"]["value"], f"{feat['activation']['value']} (GELU-tanh gate times up) instead of "
            "SwiGLU: a different activation kernel (gelu_and_mul, not silu_and_mul)", "activation")
    return out
