"""Step 2's own check (seed: "CPU-only sanity test the padded vs orig forward FIRST (cosine should
be 0.999998+) before touching NPU"), for a model whose emb_dim or hidden_dim is not 1024-aligned.

From the HF model's own weights, on the CPU, three padded models are built and run on the prompt's
tokens beside the original; each row reports the cosine of layer-0 ffn_out (layer 0's output) and
of the logits against the original, gated at GATE:

  reindexed   the seed's GQA-aware padding. emb_dim, hidden_dim and q_dim (n_heads * head_dim) are
              padded to multiples of 1024; the phantom Q heads go INSIDE each KV group (real head j of
              group k moves to k * g' + j, g' = n_heads' / n_kv_heads), so every real Q head still
              reads its own K/V head. Phantom rows/columns are zero (a phantom head's attention output
              meets zero o_proj columns), and the emb_dim RMSNorms take weight * sqrt(E / E') and
              eps * E / E' so that the mean over E' zero-padded features gives the same scale.
  tree_helper the tree's own padding helper (the block module's *pad* functions that Step 2 found,
              e.g. qwen25_0_5b_prefill._padded_qkv_dims): the GEMMs it names get zero-padded output
              columns and their outputs are sliced back, as the tree's host code does. The helper's
              function bodies are run alone (no import of the tree), and only once every node of
              them is plain arithmetic (`plan --sanity` runs outside the sandbox), in a child bounded
              in CPU, memory and time (helper_run); one that needs more, or never ends, is not run.
  naive_end   the same padding with the phantom Q heads appended after the real ones: HF then maps
              Q head i to KV head i // g', which is wrong for some real heads once g' != g.

Both sides run in float32 (the bf16 weights upcast exactly), so the cosine measures the padding and
not bf16 rounding. Only llama-shaped decoders (llama, qwen2, qwen3, mistral) are padded; other
architectures are reported as skipped. torch and transformers are imported only here.
"""

import ast
import builtins
import copy
import math
import time

from npu_probe.reference.finite import cosine, describe, not_finite
from npu_probe.reference.helper_run import HelperError, run_helper

GATE = 0.999998  # seed Step 2
ALIGN = 1024
ARCHS = ("llama", "qwen2", "qwen3", "mistral")

# What a tree helper's parameter names mean: the model's size and the layer GEMMs whose output
# width (GEMM N) that size is. A helper returns the padded width per parameter, in order.
HELPER_PARAMS = {
    "q_dim": ("self_attn.q_proj",),
    "kv_dim": ("self_attn.k_proj", "self_attn.v_proj"),
    "emb_dim": ("self_attn.o_proj", "mlp.down_proj"),
    "hidden_dim": ("mlp.gate_proj", "mlp.up_proj"),
}
# The names a helper body may use: arithmetic only (anything else means it is not pure).
_HELPER_BUILTINS = {n: getattr(builtins, n) for n in ("int", "max", "min", "abs", "divmod", "round", "len", "tuple", "ValueError")}
# The syntax a helper body may use. Restricted builtins alone are no sandbox (an attribute chain
# from any literal reaches os.system), and `plan --sanity` runs outside the probe's sandbox: a
# helper is run only when every node of it is plain arithmetic on names, constants and tuples,
# with calls to the names above; no attribute, subscript, loop, import, lambda or comprehension.
_HELPER_NODES = (
    ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.If, ast.IfExp, ast.Expr, ast.Assign,
    ast.AugAssign, ast.Raise, ast.Pass, ast.Name, ast.Load, ast.Store, ast.Constant, ast.Tuple,
    ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call, ast.keyword, ast.operator,
    ast.unaryop, ast.boolop, ast.cmpop,
)


def _not_arithmetic(fn):
    """The first thing in a helper's definition that is not plain arithmetic, as words, or None."""
    for node in ast.walk(fn):
        if not isinstance(node, _HELPER_NODES):
            return f"{type(node).__name__.lower()} at line {getattr(node, 'lineno', fn.lineno)}"
        if isinstance(node, ast.FunctionDef) and (node is not fn or node.decorator_list or node.returns):
            return f"a decorator, annotation or nested function at line {node.lineno}"
        if isinstance(node, ast.arg) and node.annotation is not None:
            return f"an annotation at line {node.lineno}"
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            return f"the name {node.id} at line {node.lineno}"
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _HELPER_BUILTINS):
            return f"a call at line {node.lineno}"
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, bool, type(None))):
            return f"a {type(node.value).__name__} constant at line {node.lineno}"
    return None

ROW_LABELS = {
    "reindexed": "GQA-aware reindexed (phantom Q heads inside each KV group)",
    "tree_helper": "tree's own padding helper",
    "naive_end": "naive end-padding (phantom Q heads at the end)",
}


def up(n, align=ALIGN):
    return -(-int(n) // align) * align


def dims_of(config):
    """The original sizes from an HF config."""
    text = getattr(config, "text_config", None) or config
    h = int(text.num_attention_heads)
    kv = int(getattr(text, "num_key_value_heads", None) or h)
    e = int(text.hidden_size)
    d = int(getattr(text, "head_dim", None) or e // h)
    return {"emb_dim": e, "hidden_dim": int(text.intermediate_size), "n_heads": h, "n_kv_heads": kv,
            "head_dim": d, "group_size": h // kv}


def padded_dims(dims):
    """emb_dim and hidden_dim up to 1024 multiples; n_heads up to the fewest heads whose q_dim is a
    1024 multiple while n_kv_heads still divides them (each group gains the same phantom count)."""
    h, kv, d = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    hp = h
    while (hp * d) % ALIGN or hp % kv:
        hp += 1
    return {"emb_dim": up(dims["emb_dim"]), "hidden_dim": up(dims["hidden_dim"]), "n_heads": hp,
            "n_kv_heads": kv, "head_dim": d, "group_size": hp // kv, "phantom_heads_per_group": (hp - h) // kv}


def head_slots(dims, pad, reindexed):
    """Where each real Q head goes in the padded model (a list, indexed by the real head)."""
    g, gp = dims["group_size"], pad["group_size"]
    if reindexed:
        return [(i // g) * gp + i % g for i in range(dims["n_heads"])]
    return list(range(dims["n_heads"]))


def misrouted_heads(dims, pad):
    """How many real Q heads naive end-padding maps to another KV head (i // g' != i // g)."""
    g, gp = dims["group_size"], pad["group_size"]
    return sum(1 for i in range(dims["n_heads"]) if i // gp != i // g)


# ---------------------------------------------------------------------------
# Building the padded weights


def _role(key):
    """(kind, owner) of a state-dict key of a llama-shaped decoder, or None."""
    for suffix, kind in ((".self_attn.q_proj.weight", "q_w"), (".self_attn.q_proj.bias", "q_b"),
                         (".self_attn.k_proj.weight", "in_e"), (".self_attn.v_proj.weight", "in_e"),
                         (".self_attn.k_proj.bias", "keep"), (".self_attn.v_proj.bias", "keep"),
                         (".self_attn.o_proj.weight", "o_w"), (".self_attn.o_proj.bias", "out_e"),
                         (".self_attn.q_norm.weight", "keep"), (".self_attn.k_norm.weight", "keep"),
                         (".mlp.gate_proj.weight", "ffn_in"), (".mlp.up_proj.weight", "ffn_in"),
                         (".mlp.down_proj.weight", "ffn_out"),
                         (".input_layernorm.weight", "norm"), (".post_attention_layernorm.weight", "norm"),
                         ("model.norm.weight", "norm"), ("embed_tokens.weight", "in_e"),
                         ("lm_head.weight", "in_e")):
        if key.endswith(suffix):
            return kind
    return None


def _pad_heads(t, axis, dims, pad, slots):
    """Q-head rows (axis 0) or columns (axis 1) of `t`, placed at `slots`, phantoms zero."""
    import torch  # noqa: PLC0415

    d = dims["head_dim"]
    shape = list(t.shape)
    shape[axis] = pad["n_heads"] * d
    out = torch.zeros(shape, dtype=t.dtype)
    for i, s in enumerate(slots):
        src = t.narrow(axis, i * d, d)
        out.narrow(axis, s * d, d).copy_(src)
    return out


def _pad_to(t, sizes):
    """`t` zero-padded at the end of each axis up to `sizes`."""
    import torch  # noqa: PLC0415

    out = torch.zeros(sizes, dtype=t.dtype)
    out[tuple(slice(0, n) for n in t.shape)] = t
    return out


def padded_state(state, dims, pad, slots):
    """The padded model's state dict from the original's; raises ValueError on a key it cannot place."""
    e, ep, f, fp = dims["emb_dim"], pad["emb_dim"], dims["hidden_dim"], pad["hidden_dim"]
    norm_scale = math.sqrt(e / ep)
    out = {}
    for key, t in state.items():
        kind = _role(key)
        if kind is None:
            raise ValueError(f"no padding rule for weight {key} {tuple(t.shape)}")
        if kind == "keep":
            out[key] = t.clone()
        elif kind == "q_w":
            out[key] = _pad_to(_pad_heads(t, 0, dims, pad, slots), (pad["n_heads"] * dims["head_dim"], ep))
        elif kind == "q_b":
            out[key] = _pad_heads(t, 0, dims, pad, slots)
        elif kind == "o_w":
            out[key] = _pad_to(_pad_heads(t, 1, dims, pad, slots), (ep, pad["n_heads"] * dims["head_dim"]))
        elif kind == "in_e":  # [rows, emb]: k/v projections, embeddings, lm_head
            out[key] = _pad_to(t, (t.shape[0], ep))
        elif kind == "out_e":
            out[key] = _pad_to(t, (ep,))
        elif kind == "ffn_in":
            out[key] = _pad_to(t, (fp, ep))
        elif kind == "ffn_out":
            out[key] = _pad_to(t, (ep, fp))
        elif kind == "norm":
            out[key] = _pad_to(t * norm_scale, (ep,))
    return out


def build_padded(model, dims, pad, reindexed, state32=None):
    """A float32 padded copy of `model` (see the module docstring); `state32`: its state dict in
    float32, when the caller already has it."""
    import torch  # noqa: PLC0415
    from transformers import AutoModelForCausalLM  # noqa: PLC0415

    cfg = copy.deepcopy(model.config)
    cfg.hidden_size, cfg.intermediate_size = pad["emb_dim"], pad["hidden_dim"]
    cfg.num_attention_heads, cfg.head_dim = pad["n_heads"], pad["head_dim"]
    if state32 is None:
        state32 = {k: v.detach().float() for k, v in model.state_dict().items()}
    state = padded_state(state32, dims, pad, head_slots(dims, pad, reindexed))
    with _no_init():  # every weight is loaded below: random init would only cost time
        padded = AutoModelForCausalLM.from_config(cfg).float().eval()
    missing, unexpected = padded.load_state_dict(state, strict=False, assign=True)  # adopt, no second copy
    missing = [k for k in missing if not (k == "lm_head.weight" and getattr(cfg, "tie_word_embeddings", False))]
    if missing or unexpected:
        raise ValueError(f"padded state does not fit the padded model (missing {missing[:3]}, unexpected {unexpected[:3]})")
    if getattr(cfg, "tie_word_embeddings", False):
        padded.tie_weights()
    eps_scale = dims["emb_dim"] / pad["emb_dim"]
    for name, mod in padded.named_modules():
        w = getattr(mod, "weight", None)
        if hasattr(mod, "variance_epsilon") and w is not None and tuple(w.shape) == (pad["emb_dim"],) \
                and not name.endswith(("q_norm", "k_norm")):
            mod.variance_epsilon = float(mod.variance_epsilon) * eps_scale
    return padded


def _no_init():
    """transformers' no_init_weights (its place moved between versions), else nothing."""
    import contextlib  # noqa: PLC0415

    for where in ("transformers.initialization", "transformers.modeling_utils"):
        try:
            mod = __import__(where, fromlist=["no_init_weights"])
            return mod.no_init_weights()
        except (ImportError, AttributeError):
            continue
    return contextlib.nullcontext()


class _PadSlice:
    """A Linear whose output width was zero-padded to `n_pad`, sliced back to `n` after the GEMM."""

    @staticmethod
    def make(linear, n_pad):
        import torch  # noqa: PLC0415

        class PadSlice(torch.nn.Module):
            def __init__(self):
                super().__init__()
                n, k = linear.weight.shape
                self.n = n
                self.inner = torch.nn.Linear(k, n_pad, bias=linear.bias is not None)
                with torch.no_grad():
                    self.inner.weight.copy_(_pad_to(linear.weight.detach().float(), (n_pad, k)))
                    if linear.bias is not None:
                        self.inner.bias.copy_(_pad_to(linear.bias.detach().float(), (n_pad,)))

            def forward(self, x):
                return self.inner(x)[..., : self.n]

        return PadSlice()


def build_tree_padded(model, widths):
    """A float32 copy of `model` whose layer GEMMs named in `widths` ({"self_attn.q_proj": n_pad})
    compute zero-padded output columns that are then sliced away."""
    from npu_probe.lens.hf_capture import find_layer0  # noqa: PLC0415
    from npu_probe.reference.fp32 import _layers_owner  # noqa: PLC0415

    m = copy.deepcopy(model).float().eval()
    owner, attr = _layers_owner(m)
    if owner is None or find_layer0(m) is None:
        raise ValueError("decoder layers not found")
    for layer in getattr(owner, attr):
        for path, n_pad in widths.items():
            parent_path, _, leaf = path.rpartition(".")
            parent = layer.get_submodule(parent_path)
            lin = getattr(parent, leaf)
            if n_pad > lin.weight.shape[0]:
                setattr(parent, leaf, _PadSlice.make(lin, n_pad))
    return m


# ---------------------------------------------------------------------------
# The tree's own helper


def tree_helper_widths(path, names, dims):
    """({GEMM path: padded N}, label) from the tree's helper functions `names` ("module.fn") in the
    file `path`, each run alone on the model's sizes; raises ValueError saying why it cannot run."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    sizes = {"q_dim": dims["n_heads"] * dims["head_dim"], "kv_dim": dims["n_kv_heads"] * dims["head_dim"],
             "emb_dim": dims["emb_dim"], "hidden_dim": dims["hidden_dim"]}
    widths = {}
    for full in names:
        fname = full.rpartition(".")[2]
        fn = defs.get(fname)
        if fn is None:
            raise ValueError(f"{full} is not a top-level function of {path}")
        params = [a.arg for a in fn.args.args]
        unknown = [p for p in params if p not in HELPER_PARAMS]
        if unknown:
            raise ValueError(f"{full}({', '.join(params)}): cannot tell which GEMM {', '.join(unknown)} sizes")
        impure = _not_arithmetic(fn)
        if impure:
            raise ValueError(f"{full} does not run on its own here (not plain arithmetic: {impure})")
        try:  # in a child Python, bounded in time and memory (helper_run)
            got, shown = run_helper(ast.unparse(fn), path, fname, [sizes[p] for p in params], _HELPER_BUILTINS)
        except HelperError as exc:  # it needs more than arithmetic (the NPU stack, the tree), or never ends
            raise ValueError(f"{full} does not run on its own here ({exc})") from exc
        if got is None or len(got) != len(params) or not all(sizes[p] <= v <= 4 * up(sizes[p]) for v, p in zip(got, params)):
            raise ValueError(f"{full}{tuple(sizes[p] for p in params)} returned {shown}, not one padded width per size "
                             "(at most 4x the 1024-aligned size)")
        for p, v in zip(params, got):
            for gemm in HELPER_PARAMS[p]:
                widths[gemm] = max(widths.get(gemm, 0), v)
    return widths


# ---------------------------------------------------------------------------
# Forwards and the result


def forward(model, tokens, emb_dim):
    """(layer-0 output [T, emb_dim], logits [T, vocab]) as float64 numpy."""
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415

    from npu_probe.lens.hf_capture import find_layer0  # noqa: PLC0415

    seen = []
    handle = find_layer0(model).register_forward_hook(
        lambda mod, a, o: seen.append((o[0] if isinstance(o, tuple) else o).detach()))
    try:
        with torch.no_grad():
            out = model(torch.tensor([list(tokens)], dtype=torch.long), use_cache=False, return_dict=True)
    finally:
        handle.remove()
    ffn = seen[0].float().numpy().reshape(-1, seen[0].shape[-1])[:, :emb_dim]
    return ffn.astype(np.float64), out.logits[0].float().numpy().astype(np.float64)


def _row(rid, ref, got, label=None):
    f, lg = cosine(ref[0], got[0]), cosine(ref[1], got[1])
    return {"id": rid, "label": label or ROW_LABELS[rid], "ffn_out_cosine": f, "logits_cosine": lg,
            "pass": f >= GATE and lg >= GATE}


def skipped(why):
    return {"gate": GATE, "skipped": why}


def run_sanity(model, tokens, helper=None, model_id=None):
    """The Step 2 sanity record for an HF causal LM `model` (any dtype) on `tokens`. `helper`:
    (path, ["module.fn", ...]) of the tree's padding helper, or None when the tree has none."""
    t0 = time.monotonic()
    text = getattr(model.config, "text_config", None) or model.config
    mtype = getattr(text, "model_type", None)
    if mtype not in ARCHS:
        return skipped(f"model_type {mtype!r}: the padded copy is built for llama-shaped decoders only ({', '.join(ARCHS)})")
    dims = dims_of(model.config)
    if dims["emb_dim"] % ALIGN == 0 and dims["hidden_dim"] % ALIGN == 0:
        return skipped(f"emb_dim={dims['emb_dim']} and hidden_dim={dims['hidden_dim']} are 1024-aligned: Step 2 "
                       "padding does not trigger")
    pad = padded_dims(dims)
    tokens = [int(t) for t in tokens]
    orig = copy.deepcopy(model).float().eval()
    ref = forward(orig, tokens, dims["emb_dim"])
    if not_finite(ref):  # no cosine to judge the padding by
        return skipped(f"the original model's own output is not finite: {describe(orig, model_id or 'in use')}")
    state32 = {k: v.detach() for k, v in orig.state_dict().items()}  # float32 already: no copy
    del orig
    rows = []
    for rid, reindexed in (("reindexed", True), ("naive_end", False)):
        m = build_padded(model, dims, pad, reindexed, state32)
        rows.append(_row(rid, ref, forward(m, tokens, dims["emb_dim"])))
        del m
    if helper:
        path, names = helper
        label = f"{ROW_LABELS['tree_helper']} ({', '.join(names)})"
        try:
            widths = tree_helper_widths(path, names, dims)
            m = build_tree_padded(model, widths)
            row = _row("tree_helper", ref, forward(m, tokens, dims["emb_dim"]), label)
            row["pads"] = widths
            del m
        except (OSError, SyntaxError, ValueError) as exc:
            row = {"id": "tree_helper", "label": label, "skipped": str(exc)}
    else:
        row = {"id": "tree_helper", "label": ROW_LABELS["tree_helper"],
               "skipped": "the block module has no padding helper (Step 2 found none)"}
    rows.insert(1, row)
    by = {r["id"]: r for r in rows}
    ok = by["reindexed"]["pass"] and by["tree_helper"].get("pass", True)
    wrong = misrouted_heads(dims, pad)
    why = (f"naive end-padding maps Q head i to KV head i // {pad['group_size']} instead of i // {dims['group_size']}: "
           f"{wrong} of {dims['n_heads']} real Q heads read another group's K/V; reindexing keeps each group's heads "
           "on their own K/V head" if wrong else
           "no real Q head changes KV group under naive end-padding here")
    return {"gate": GATE, "dtype": "float32", "tokens": len(tokens), "model_id": model_id,
            "original": dims, "padded": pad, "rows": rows, "ok": bool(ok), "misrouted_heads": wrong,
            "why": why, "seconds": round(time.monotonic() - t0, 3)}


def sanity_lines(s):
    """The terminal lines of a sanity record (`plan --sanity`)."""
    if s is None:
        return []
    if s.get("skipped"):
        return [f"step2 sanity: skipped: {s['skipped']}"]
    o, p = s["original"], s["padded"]
    out = [f"step2 sanity (CPU, {s['dtype']}, {s['tokens']} tokens, gate >= {s['gate']}): "
           f"emb {o['emb_dim']}->{p['emb_dim']}, hidden {o['hidden_dim']}->{p['hidden_dim']}, "
           f"heads {o['n_heads']}->{p['n_heads']} ({o['n_kv_heads']} KV groups of {o['group_size']}->{p['group_size']})"]
    for r in s["rows"]:
        if r.get("skipped"):
            out.append(f"  {r['label']}: not run: {r['skipped']}")
        else:
            verdict = "PASS" if r["pass"] else "FAIL"
            out.append(f"  {r['label']}: ffn_out cosine {r['ffn_out_cosine']:.7f}, logits cosine "
                       f"{r['logits_cosine']:.7f}  {verdict}")
            if r.get("pads"):
                out.append("    (GEMM N zero-padded, outputs sliced back; head counts unchanged: "
                           + ", ".join(f"{k.rpartition('.')[2]} {v}" for k, v in r["pads"].items()) + ")")
    out.append(f"  why: {s['why']}")
    out.append(f"step2 sanity: {'PASS' if s['ok'] else 'FAIL'} (the reindexed padding"
               f"{' and the tree helper' if any(r['id'] == 'tree_helper' and 'pass' in r for r in s['rows']) else ''}"
               f" {'keep' if s['ok'] else 'do not keep'} the model's output)")
    return out


# ---------------------------------------------------------------------------
# Effects: the model and the tokens, for `probe plan --sanity` and `check`


class Unavailable(Exception):
    """The sanity check cannot run here (no torch, no checkpoint, no tokenizer): the message says why."""


def helper_of(step2, air_root):
    """(absolute file, functions) of the tree's padding helper from the plan's step2, or None."""
    ph = (step2 or {}).get("padding_helper")
    if not ph or not ph.get("functions"):
        return None
    import os  # noqa: PLC0415

    return os.path.join(air_root, *ph["file"].split("/")), list(ph["functions"])


def load_model(model_id):
    """The HF model as the lens builds it (bf16, from the local cache unless --online)."""
    try:
        import torch  # noqa: F401,PLC0415
        import transformers  # noqa: F401,PLC0415
    except ImportError as exc:
        raise Unavailable(f"needs torch and transformers ({exc})") from exc
    from npu_probe.lens.hf_capture import build_model  # noqa: PLC0415

    try:
        return build_model(model_id)
    except Exception as exc:  # no snapshot, a broken checkpoint: one line, never a stack trace
        raise Unavailable(f"cannot load {model_id} ({type(exc).__name__}: {' '.join(str(exc).split())[:300]})") from exc


def prompt_tokens(model_id, prompt):
    """The prompt's ids from the checkpoint's own tokenizer (AutoTokenizer), as verify_runner
    tokenizes when the adapter has no tokenize()."""
    from transformers import AutoTokenizer  # noqa: PLC0415

    try:
        ids = AutoTokenizer.from_pretrained(model_id).encode(prompt)
    except Exception as exc:
        raise Unavailable(f"cannot tokenize with {model_id}'s tokenizer ({type(exc).__name__}: {exc})") from exc
    if not ids:
        raise Unavailable("the prompt tokenized to 0 tokens")
    return [int(t) for t in ids]


def sanity_for_plan(plan):
    """The sanity record for a plan (`probe plan --sanity`); raises Unavailable."""
    eff = plan.get("effective") or {}
    if plan.get("emulated"):
        return skipped("an emulated tree (air-mini) has no HF checkpoint to pad; run it on a tree whose "
                       "model id resolves in the HF cache")
    model_id = eff.get("model_id")
    if not model_id:
        raise Unavailable("the plan resolved no HF model id")
    model = load_model(model_id)
    tokens = prompt_tokens(model_id, eff.get("prompt") or "")
    return run_sanity(model, tokens, helper_of(plan.get("step2"), plan["model"]["air_root"]), model_id)
