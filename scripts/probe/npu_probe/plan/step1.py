"""The seed's Step 1: the model's per-layer kernel sequence (from its own code and config,
npu_probe.plan.architecture) against llama's, the breaks (a)/(b)/(c) that force kernel-first, and
the path label by the seed's rule: inheritance when the sequence matches llama's exactly and block 0
runs llama's ELFs (npu_probe.plan.elfs), whatever file holds the call; kernel-first otherwise.
Where the block function is defined is a separate fact (`defined_in`), not the label."""

import os

from npu_probe.core.errors import ProbeError
from npu_probe.plan.architecture import LLAMA_SEQUENCE, breaks, features, sequence
from npu_probe.plan.context import Ctx
from npu_probe.plan.elfs import runs_llamas_elfs
from npu_probe.plan.finding import finding
from npu_probe.plan.sources import resolve

__all__ = ["LLAMA_SEQUENCE", "step1"]


def step1(ctx, feat, found, tree_does, findings):
    """The Step 1 record. `feat`: npu_probe.plan.architecture.features; `found`: (block, compile_)
    from npu_probe.plan.block.find_block; warnings are appended to `findings`."""
    block, compile_ = found
    seq = sequence(feat)
    out = {"llama_sequence": list(LLAMA_SEQUENCE), "model_sequence": seq, "matches": seq == LLAMA_SEQUENCE,
           "inheritance_allowed": None, "breaks": breaks(feat, tree_does),
           "architecture": {k: dict(v) for k, v in feat.items()},
           "llama_elfs": None, "block": None, "defined_in": None, "path": None, "path_why": None}
    out["inheritance_allowed"] = out["matches"] and not out["breaks"]
    if block:
        out["block"] = {k: v for k, v in block.items() if not k.startswith("_")}
        out["block"]["compile"] = compile_["function"] if compile_ else None
        home = ctx.model_of(block["_path"])
        out["defined_in"] = {"model": home, "file": block["file"], "line": block["line"], "where": block["where"],
                             "via": block["via"]}
        _reused_block_warning(ctx, block, home, seq, findings)
    else:
        findings.append(finding(
            "step1-block", "warn", "tree",
            f"no run_single_block / run_transformer_block* found for {ctx.model} "
            "(prefill, adapter or inference module)",
            f"write run_single_block in {ctx.model}/{ctx.model}_prefill.py (seed Step 3)"))
    llama_elfs, why = runs_llamas_elfs(ctx, block, compile_) if block else (None, "no block function")
    out["llama_elfs"] = {"value": llama_elfs, "why": why}
    if out["matches"] and llama_elfs:
        out["path"] = "inheritance"
        out["path_why"] = f"the kernel sequence matches llama's and {why}"
    else:
        out["path"] = "kernel-first"
        if not out["matches"]:
            ops = sorted({b["op"] for b in out["breaks"]})
            out["path_why"] = f"the kernel sequence differs from llama's ({', '.join(ops) or 'see model_sequence'})"
        else:
            out["path_why"] = f"the kernel sequence matches llama's, but block 0 does not run llama's ELFs ({why})"
    return out


def _reused_block_warning(ctx, block, home, seq, findings):
    """A block function taken from another model whose kernel sequence differs from this model's."""
    if home is None or home == ctx.model:
        return
    home_seq = _home_sequence(ctx, home)
    if home_seq is not None and seq != home_seq:
        findings.append(finding(
            "step1-inheritance", "warn", "tree",
            f"{ctx.model} calls {block['function']} ({block['file']}:{block['line']}), {home}'s block, "
            f"although its kernel sequence differs ({' -> '.join(seq)} vs {' -> '.join(home_seq)}): "
            "the seed forbids the inheritance shortcut here",
            f"compose the model's own block (kernel-first) in {ctx.model}/{ctx.model}_prefill.py"))


def _home_sequence(ctx, home):
    """The kernel sequence of the model whose prefill defines the block function, or None."""
    try:
        other = Ctx(os.path.join(ctx.llms_dir, home), None, ctx.environ)
    except ProbeError:
        return None
    cfg, _, _, _, _ = resolve(other, None, ctx.environ)
    return sequence(features(other, cfg)) if cfg else None
