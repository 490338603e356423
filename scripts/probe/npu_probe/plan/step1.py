"""The seed's Step 1: the model's kernel sequence against llama's, the breaks (a)/(b), and
whether the block is the model's own (kernel-first) or inherited."""

import os

from npu_probe.core.errors import ProbeError
from npu_probe.plan.config import read_config
from npu_probe.plan.context import Ctx
from npu_probe.plan.finding import finding


LLAMA_SEQUENCE = ["RMSNorm", "Q/K/V GEMM", "RoPE", "FlashAttention", "O GEMM", "add",
                  "RMSNorm", "Gate/Up GEMM", "SwiGLU", "Down GEMM", "add"]


def model_sequence(cfg):
    seq = list(LLAMA_SEQUENCE)
    qkv = seq.index("Q/K/V GEMM")
    if cfg.get("qkv_bias"):
        seq.insert(qkv + 1, "QKV bias add")
    if cfg.get("qk_norm"):
        seq.insert(seq.index("RoPE"), "Q/K Norm")
    return seq


def step1(ctx, cfg, block, compile_, tree_does, findings):
    out = {"llama_sequence": list(LLAMA_SEQUENCE), "model_sequence": None, "matches": None,
           "inheritance_allowed": None, "breaks": [], "block": None, "path": None}
    if cfg is not None:
        seq = model_sequence(cfg)
        out["model_sequence"] = seq
        out["breaks"] = _breaks(cfg, tree_does)
        out["matches"] = seq == LLAMA_SEQUENCE
        out["inheritance_allowed"] = out["matches"] and not out["breaks"]
    if block:
        out["block"] = {k: v for k, v in block.items() if not k.startswith("_")}
        out["block"]["compile"] = compile_["function"] if compile_ else None
        foreign = block["where"] != "own-prefill"
        if not foreign:
            out["path"] = "kernel-first"
        else:
            out["path"] = "inheritance"
            home, home_seq = _home_sequence(ctx, block)
            mine = out["model_sequence"]
            if mine is not None and home_seq is not None and mine != home_seq:
                findings.append(finding(
                    "step1-inheritance", "warn", "tree",
                    f"{ctx.model} calls {block['function']} ({block['file']}:{block['line']}), {home}'s block, "
                    f"although its kernel sequence differs ({' -> '.join(mine)} vs {' -> '.join(home_seq)}): "
                    "the seed forbids the inheritance shortcut here",
                    f"compose the model's own block (kernel-first) in {ctx.model}/{ctx.model}_prefill.py"))
    else:
        out["path"] = "kernel-first"
        findings.append(finding(
            "step1-block", "warn", "tree",
            f"no run_single_block / run_transformer_block* found for {ctx.model} "
            "(prefill, adapter or inference module)",
            f"write run_single_block in {ctx.model}/{ctx.model}_prefill.py (seed Step 3)"))
    return out


def _home_sequence(ctx, block):
    """(model, kernel sequence) of the model whose prefill defines the block function."""
    home = ctx.model_of(block["_path"])
    if home is None:
        return None, None
    if home == ctx.model:
        return home, None
    try:
        other = Ctx(os.path.join(ctx.llms_dir, home), None, ctx.environ)
    except ProbeError:
        return home, None
    cfg, _, _ = read_config(other)
    return home, (model_sequence(cfg) if cfg else None)


def _breaks(cfg, tree_does):
    breaks = []
    if cfg.get("qk_norm"):
        breaks.append({"rule": "a", "detail": "Q/K Norm: a new op type (per-head RMSNorm with a (head_dim,) weight)"})
        breaks.append({"rule": "b", "detail": "Q/K Norm lands between Q/K/V GEMM and RoPE, which llama's "
                                              "rms_gemms_rope ELF fuses into one launch"})
    if cfg.get("qkv_bias"):
        on_device = [t["detail"].split("ELF ")[1].split(",")[0] for t in tree_does if t["id"] == "qkv_bias_on_device"]
        tree_says = (f"this tree adds the bias on device before RoPE ({on_device[0]}), an extra device op"
                     if on_device else
                     "the seed's host-side post-RoPE bias add would keep the device ELFs bias-free, but the add "
                     "still sits inside the block (after RoPE, before attention)")
        breaks.append({"rule": "a", "detail": f"QKV bias add after the Q/K/V GEMM: a new op type; {tree_says}, "
                                              "so llama's run_transformer_block cannot be called unchanged"})
        breaks.append({"rule": "b", "detail": "QKV bias add lands between Q/K/V GEMM and RoPE, which llama's "
                                              "rms_gemms_rope ELF fuses into one launch"})
    return breaks
