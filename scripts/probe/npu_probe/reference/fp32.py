"""The FP32 ground truth for the error budget (issue 17.9): HF layer 0 in float32, from the same
weights and the same input as the bf16 reference.

The bf16 reference model is cut to its embeddings and layer 0 (the layers list swapped for a
one-layer list only while it is copied), the copy is cast to float32 (the bf16 weights upcast:
the same values) and run on the same token ids, as HfRunner runs the bf16 model, and the same layer-0 hooks as the lens (npu_probe.lens.hf_capture)
capture every boundary in float32 (ffn_out: layer 0's output, from a hook on it). The judge reports, per boundary and for ffn_out,
error(NPU vs FP32) / error(HF bf16 vs FP32): about 1 when the NPU is as good as bf16 allows.
"""

import copy
import time

import numpy as np

from npu_probe.lens.hf_capture import Layer0Hooks, find_layer0, seq_first


def _layers_owner(model):
    """(object holding the decoder layers list, its attribute name), or (None, None)."""
    for path in ("model", "model.model", "transformer", ""):
        cur = model
        for part in [p for p in path.split(".") if p]:
            cur = getattr(cur, part, None)
        for attr in ("layers", "h"):
            if cur is not None and hasattr(cur, attr):
                return cur, attr
    return None, None


def one_layer_fp32(model):
    """A float32 copy of `model` holding only its embeddings, layer 0 and the final norm (no
    other layer is copied, so a large model costs one layer); None when the layers are not found."""
    import torch  # noqa: PLC0415 - only with a real HF reference

    owner, attr = _layers_owner(model)
    if owner is None or find_layer0(model) is None:
        return None
    layers = getattr(owner, attr)
    setattr(owner, attr, torch.nn.ModuleList([layers[0]]))
    try:
        small = copy.deepcopy(model)
    finally:
        setattr(owner, attr, layers)
    cfg = getattr(small, "config", None)
    text = getattr(cfg, "text_config", None) or cfg
    if text is not None and hasattr(text, "num_hidden_layers"):
        text.num_hidden_layers = 1
    return small.float().eval()


def run_fp32(model, tokens, real_len):
    """(layer-0 output float32 [real_len, emb], {boundary: float32 [real_len, cols]}, {why missing},
    seconds) for the token ids, or None when the model cannot be cut to one layer."""
    import torch  # noqa: PLC0415

    t = time.monotonic()
    m32 = one_layer_fp32(model)
    if m32 is None:
        return None
    hooks = Layer0Hooks(m32)
    seen = []  # layer 0's own output (hidden_states conventions differ between transformers versions)
    handle = find_layer0(m32).register_forward_hook(lambda mod, a, o: seen.append(o[0] if isinstance(o, tuple) else o))
    try:
        with torch.no_grad(), hooks:
            ids = torch.tensor(np.asarray(tokens, dtype=np.int64)).unsqueeze(0)
            m32(ids, use_cache=False, return_dict=True)
    finally:
        handle.remove()
    ffn_out = seq_first(seen[0].detach())[:real_len]
    bounds = {k: np.ascontiguousarray(v[:real_len], dtype=np.float32) for k, v in hooks.captured.items()}
    bounds["ffn_out"] = np.ascontiguousarray(ffn_out, dtype=np.float32)
    del m32
    return bounds["ffn_out"], bounds, dict(hooks.missing), time.monotonic() - t
