"""Why Phase 2 cannot run for a model (not a decoder LLM, no per-layer ffn_out), or None."""

import ast
import re

from npu_probe.plan.context import runner_sources
from npu_probe.plan.static.names import dict_literal_keys
from npu_probe.plan.static.parse import parse_file


def _empty_intermediates(tree):
    """True when a PrefillRecord gets layer_intermediates=[{} for ...]."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "layer_intermediates" \
                and isinstance(node.value, ast.ListComp) and isinstance(node.value.elt, ast.Dict) \
                and not node.value.elt.keys:
            return True
    return False


def refusal(ctx, cfg, config_why, choices):
    """Why Phase 2 cannot run for this model, or None. An adapter that does not
    parse is a tree failure (preflight tree-syntax), not a judgement on the model."""
    info = ctx.info(ctx.adapter)
    if info is None or info.parsed.tree is None:
        return None
    adapter_rel = f"{ctx.model}/verify_adapter.py"
    has_runner = info is not None and ("build_runner" in info.defs or "build_runner" in info.assigns
                                       or "build_runner" in info.imported)
    if choices is None or not has_runner or (cfg is None and config_why and "dict" in config_why):
        what = []
        if choices is None:
            what.append("has no MODEL_CHOICES")
        if cfg is None and config_why:
            what.append(config_why)
        if not has_runner:
            what.append("has no build_runner (verify_runner's NPU runner contract)")
        doc = ast.get_docstring(info.parsed.tree) if info and info.parsed.tree else None
        about = f"; the adapter says: {doc.strip().splitlines()[0].strip()}" if doc else ""
        return {"reason": f"{ctx.model} is not a decoder LLM: {adapter_rel} {'; '.join(what)}{about}",
                "needs": "a decoder-only LLM with a verify adapter (MODEL_CHOICES, build_config() -> a "
                         "LlamaConfig-like config, per-layer ffn_out)"}
    sources = runner_sources(ctx)
    records = []
    for path in sources:
        parsed = parse_file(path)
        if parsed and parsed.tree is not None:
            records += dict_literal_keys(parsed.tree, "ffn_out")
        elif parsed:  # unparsable: accept a code-looking mention
            records += [1] if re.search(r"[\"']ffn_out[\"']\s*[:\]]", parsed.text) else []
    if not records:
        empty = info and info.parsed.tree is not None and _empty_intermediates(info.parsed.tree)
        how = " (layer_intermediates are empty dicts)" if empty else ""
        return {"reason": f"{adapter_rel} records no per-layer ffn_out{how}, so there is no layer-0 block "
                          "output to gate",
                "needs": f"an adapter prefill that records layer_intermediates[0]['ffn_out'], or a run_single_block "
                         f"in {ctx.model}/{ctx.model}_prefill.py"}
    return None
