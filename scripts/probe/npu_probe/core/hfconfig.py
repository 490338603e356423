"""An HF config.json read in the tree's terms (LlamaConfig field names). Standard library only:
the plan reads it, and --emulate sets the tree config's dimensions from the same mapping."""

# tree field -> config.json key, for the dimensions every decoder config has
DIMENSIONS = (("n_layers", "num_hidden_layers"), ("emb_dim", "hidden_size"), ("n_heads", "num_attention_heads"),
              ("n_kv_heads", "num_key_value_heads"), ("hidden_dim", "intermediate_size"), ("vocab_size", "vocab_size"))

# model_type values whose HF modeling code carries what the config's keys do not say
QKV_BIAS_TYPES = ("qwen2",)  # Qwen2Attention: q/k/v_proj with bias=True, no config key
QK_NORM_TYPES = ("qwen3", "qwen3_moe", "gemma3", "gemma3_text", "olmo2")
SANDWICH_NORM_TYPES = ("gemma2", "gemma3", "gemma3_text")  # post-attention and post-FFN norms too


def text_part(hf):
    """The language model's part of a config.json (Gemma 3 nests it under text_config)."""
    inner = hf.get("text_config") if isinstance(hf, dict) else None
    return inner if isinstance(inner, dict) and inner.get("hidden_size") else hf


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def rope_theta(hf):
    """rope_theta at the top level (transformers 4.x) or in rope_parameters (5.x)."""
    t = _num(hf.get("rope_theta"))
    params = hf.get("rope_parameters")
    if t is None and isinstance(params, dict):
        t = _num(params.get("rope_theta"))
    return float(t) if t is not None else None


def tree_fields(hf):
    """{tree field: value} for what the config.json states (a missing key is left out, except
    head_dim, n_kv_heads and qkv_bias/qk_norm, which HF derives the same way)."""
    c = text_part(hf)
    out = {}
    for field, key in DIMENSIONS:
        v = _num(c.get(key))
        if isinstance(v, int):
            out[field] = v
    heads = out.get("n_heads")
    if isinstance(_num(c.get("head_dim")), int):
        out["head_dim"] = int(c["head_dim"])
    elif heads and out.get("emb_dim"):
        out["head_dim"] = out["emb_dim"] // heads
    if "n_kv_heads" not in out and heads:
        out["n_kv_heads"] = heads
    theta = rope_theta(c)
    if theta is not None:
        out["rope_base"] = theta
    mtype = str(c.get("model_type") or hf.get("model_type") or "")
    if "attention_bias" in c or mtype in QKV_BIAS_TYPES:
        out["qkv_bias"] = bool(c.get("attention_bias")) or mtype in QKV_BIAS_TYPES
    if mtype:
        out["qk_norm"] = mtype in QK_NORM_TYPES
    eps = _num(c.get("rms_norm_eps"))
    if eps is not None:
        out["rms_norm_eps"] = float(eps)
    return out


def architecture(hf):
    """What the config.json says about the per-layer ops beyond the dimensions: {feature: (value,
    key that says so)} for activation, sliding_window, rotary_dim, sandwich_norms."""
    c = text_part(hf)
    out = {}
    mtype = str(c.get("model_type") or hf.get("model_type") or "")
    act = c.get("hidden_activation") or c.get("hidden_act")
    if isinstance(act, str):
        key = "hidden_activation" if c.get("hidden_activation") else "hidden_act"
        out["activation"] = ("GeGLU" if "gelu" in act.lower() else "SwiGLU" if act.lower() in ("silu", "swish")
                             else act, f"{key}={act}")
    window = _num(c.get("sliding_window"))
    layer_types = c.get("layer_types") if isinstance(c.get("layer_types"), list) else []
    uses = c.get("use_sliding_window")
    sliding = "sliding_attention" in layer_types or uses is True or (uses is None and window and mtype.startswith(
        ("gemma2", "gemma3", "mistral")))
    if window and sliding:
        out["sliding_window"] = (int(window), f"sliding_window={int(window)}"
                                 + (f" ({layer_types.count('sliding_attention')} of {len(layer_types)} layers)"
                                    if layer_types else ""))
    prf = _num(c.get("partial_rotary_factor"))
    if prf is not None and 0 < prf < 1:
        hd = tree_fields(hf).get("head_dim")
        if hd:
            out["rotary_dim"] = (int(hd * prf), f"partial_rotary_factor={prf}")
    if mtype in SANDWICH_NORM_TYPES:
        out["sandwich_norms"] = (True, f"model_type={mtype}")
    return out
