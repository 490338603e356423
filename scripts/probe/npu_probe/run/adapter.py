"""Block 0 and every layer through the verify adapter's own runner
(`build_runner(...).prefill(tokens)`), as verify_runner's diagnosis does.

The real adapters keep each layer's `ffn_out` as the block returned it:
`np.asarray(ints["ffn_out"])[:prompt_len]`, a view into a KernelCache buffer
that every later launch overwrites (shared_nonstatic=True). Read after the
prefill, every layer would hold the last layer's output. So while the adapter's
prefill runs, the block functions it calls through its module globals
(`run_prefill_block`, an alias of `run_transformer_block*`) are wrapped to copy
what they return at once, when each layer's output is produced. Only this
process's module attributes change; the tree's files are untouched.
"""

import contextlib
import sys
import time

import numpy as np

from npu_probe.core.call import call_tree, copy_block_return, copy_f32, filter_kwargs
from npu_probe.core.errors import ProbeError
from npu_probe.run.entry import is_block_name
from npu_probe.run.kernels import probe_cache_hit, tree_toolchain
from npu_probe.run.outcome import BlockRun, Compiled


class _TokenizerShim:
    """Stands in for an HF tokenizer when the adapter tokenizes itself."""

    def __init__(self, adapter):
        self._adapter = adapter
        self.eos_token_id = getattr(adapter, "EOS_TOKEN_ID", 0)

    def encode(self, text):
        return list(self._adapter.tokenize(text))


def _block_globals(*modules):
    """(module, attribute name) of every block function reachable as a module
    global of the given modules (the adapter's `run_prefill_block`, ...)."""
    out = []
    for mod in modules:
        if mod is None:
            continue
        for name, value in list(vars(mod).items()):
            if callable(value) and (is_block_name(name) or is_block_name(getattr(value, "__name__", ""))):
                out.append((mod, name))
    return out


@contextlib.contextmanager
def copy_on_return(*modules):
    """While active, every block function the modules call through their globals
    returns copies of its arrays, taken the moment the block returns."""
    patched = []
    for mod, name in _block_globals(*modules):
        orig = getattr(mod, name)
        if getattr(orig, "_npu_block_gate_copies", False):
            continue

        def wrapper(*args, _orig=orig, **kwargs):
            return copy_block_return(_orig(*args, **kwargs))

        wrapper._npu_block_gate_copies = True
        wrapper.__wrapped__ = orig
        setattr(mod, name, wrapper)
        patched.append((mod, name, orig))
    try:
        yield len(patched)
    finally:
        for mod, name, orig in reversed(patched):
            setattr(mod, name, orig)


def build_adapter_runner(ctx, entry_name):
    """`adapter.build_runner(model_name, config, max_seq, tokenizer, npu_attn=, lite_mode=False)`,
    as verify_runner builds its NPU runner (compiles the adapter's kernels)."""
    model, spec = ctx.model, ctx.spec
    adapter = model.adapter
    tok = model.tokenizer if model.tokenizer is not None else _TokenizerShim(adapter)
    ctx.log.step(f"building the adapter's NPU runner (compiles its kernels; max_seq {spec.seq_len})")
    return call_tree(entry_name, adapter.build_runner, spec.model_name, model.config, spec.seq_len, tok,
                     **filter_kwargs(adapter.build_runner, {"npu_attn": not spec.cpu_attn, "lite_mode": False}))


def adapter_prefill(ctx, entry_name, runner):
    """`runner.prefill(tokens)`, with every layer's block output copied as it is produced."""
    runner_mod = sys.modules.get(type(runner).__module__)
    with copy_on_return(ctx.model.adapter, runner_mod, ctx.model.inference_mod) as n:
        if n == 0:
            ctx.log.detail("adapter prefill: no block function in the adapter's globals to copy at return")
        return call_tree(f"{entry_name}(...).prefill", runner.prefill, np.asarray(ctx.spec.tokens, dtype=np.int64))


def layer_outputs(rec, n_layers=None):
    """{li: float32 copy of layer_intermediates[li]["ffn_out"]} for every layer the
    record has one (li < n_layers - 1 when n_layers is given; the last entry is the
    post-final-norm hidden, not a block output)."""
    inter = getattr(rec, "layer_intermediates", None)
    out = {}
    if not isinstance(inter, (list, tuple)):
        return out
    for li, d in enumerate(inter):
        if n_layers is not None and li >= int(n_layers) - 1:
            break
        if isinstance(d, dict) and d.get("ffn_out") is not None:
            out[li] = copy_f32(d["ffn_out"])
    return out


def run_adapter_block0(ctx, keep_layers=False):
    """Layer-0 ffn_out from the adapter runner's prefill (integration runner `adapter`)."""
    entry = ctx.model.entry
    timings = {}
    cache_dir = ctx.spec.cache_dir
    loaded = probe_cache_hit(cache_dir)
    t = time.monotonic()
    runner = build_adapter_runner(ctx, entry.entry)
    timings["compile"] = time.monotonic() - t
    ctx.log.step("running the adapter's prefill; taking layer 0 ffn_out")
    t = time.monotonic()
    rec = adapter_prefill(ctx, entry.entry, runner)
    try:
        out = rec.layer_intermediates[0]["ffn_out"]
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise ProbeError(entry.entry, f"prefill record has no layer_intermediates[0]['ffn_out'] ({exc})") from exc
    npu = copy_f32(out)
    timings["npu"] = time.monotonic() - t
    # The adapter compiles on its own: whether it skipped anything is unknown (hit None).
    compiled = Compiled(manifest_loaded=loaded, toolchain=tree_toolchain(cache_dir))
    return BlockRun(
        npu=npu,
        input=None,
        timings=timings,
        compiled=compiled,
        layers=layer_outputs(rec) if keep_layers else None,  # --layers: this same prefill, no second runner
    )


def run_layers_npu(ctx):
    """(source, {li: ffn_out}) from `adapter.build_runner(...).prefill(tokens)`.
    Call with the NPU lock held and from the build dir, as block 0."""
    entry_name = f"{ctx.model.adapter_name}.build_runner"
    if not callable(getattr(ctx.model.adapter, "build_runner", None)):
        raise ProbeError(ctx.model.adapter_name, "--layers needs the adapter's build_runner, and it has none")
    runner = build_adapter_runner(ctx, entry_name)
    ctx.log.step("running the adapter's prefill for every layer's ffn_out")
    return f"{entry_name}.prefill", layer_outputs(adapter_prefill(ctx, entry_name, runner), ctx.model.cfg["n_layers"])
