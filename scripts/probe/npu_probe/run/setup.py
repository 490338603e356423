"""The one-time setup of block 0 on the single/block paths: the KernelCache (opened in the run
spec's cache dir and wrapped: call order, launch capture), the compile, the layer-0 weights,
the embedded zero-padded input and the RoPE LUT. `probe block` runs the block on it once,
`probe bisect` once per swapped step; both build it from a RunContext the same way.
"""

import dataclasses
import os
import time

import numpy as np

from npu_probe.core.call import bf16_type, call_tree, copy_f32, filter_kwargs
from npu_probe.core.errors import ProbeError
from npu_probe.core.tree import import_tree_module
from npu_probe.emulate.table import model_spec
from npu_probe.lens.capture import LaunchRecorder
from npu_probe.run.kernels import (
    compile_command,
    read_stamp,
    record_kernel_calls,
    toolchain_of,
    track_compiles,
    write_stamp,
)
from npu_probe.run.outcome import Compiled


@dataclasses.dataclass
class Instrumented:
    """The run's KernelCache with the probe's wrappers on this instance (the tree is untouched)."""

    cache: object
    kernels_run: list  # every load_and_run name, in call order
    recorder: object  # npu_probe.lens.capture.LaunchRecorder
    table: object  # the model's ELF boundary table entry, or None


@dataclasses.dataclass(frozen=True)
class BlockInputs:
    layer: object  # weights.layers[0]
    hidden: object  # block input in the tree's dtype (bf16 when available)
    input: np.ndarray  # float32 copy of `hidden`: what actually entered the block
    rope_lut: np.ndarray
    rope_lut_bf16: object


@dataclasses.dataclass
class BlockSetup:
    """Everything block 0 needs, built once; run_block_once runs the block on it."""

    ctx: object  # npu_probe.core.context.RunContext
    kernels: Instrumented
    inputs: BlockInputs
    compiled: Compiled
    timings: dict
    emulated: list = None  # --emulate: the ELF names registered on the emulated runtime
    returned: dict = dataclasses.field(default_factory=dict)  # the last run's returned boundaries (copies)


def prepare_block0(ctx, reuse_kernels=False):
    """Compile into the spec's prefill kernel cache dir, load the weights, embed and zero-pad
    the tokens to seq_len, build the RoPE LUT (single/block entries only; call from the build
    dir). With `reuse_kernels`, names the loaded manifest already holds are not recompiled
    (npu_probe.run.kernels.track_compiles); compile_all_kernels runs either way."""
    tree = ctx.spec.tree
    weights_name = f"{tree.model}_weights"
    wmod = import_tree_module(weights_name, f"{tree.model}/{weights_name}.py (import)")
    for needed in ("load_weights", "generate_rope_lut"):
        if not callable(getattr(wmod, needed, None)):
            raise ProbeError(os.path.join(tree.model_dir, weights_name + ".py"), f"no {needed}()")
    kernels = _instrument(ctx)
    timings = {}
    emulated = None
    if ctx.state.emulation is not None:
        compiled, emulated = _register_emulated(ctx, kernels.cache, timings)
    else:
        compiled = _compile(ctx, kernels.cache, reuse_kernels, timings)
    inputs = _block_inputs(ctx, wmod, timings)
    return BlockSetup(ctx=ctx, kernels=kernels, inputs=inputs, compiled=compiled, timings=timings, emulated=emulated)


def _instrument(ctx):
    cache = _open_cache(ctx)
    kernels_run = record_kernel_calls(cache)
    table = model_spec(ctx.spec.tree.model)
    emulation = ctx.state.emulation
    recorder = LaunchRecorder(table, ctx.model.config, capture=ctx.spec.boundaries,
                              emulator=emulation.npu if emulation is not None else None, num=ctx.spec.twins)
    recorder.install(cache)
    return Instrumented(cache=cache, kernels_run=kernels_run, recorder=recorder, table=table)


def _open_cache(ctx):
    cache_mod = import_tree_module("shared.infra.cache", "shared/infra/cache.py (import)")
    KernelCache = getattr(cache_mod, "KernelCache", None)
    if KernelCache is None:
        raise ProbeError(os.path.join(ctx.spec.tree.llms_dir, "shared", "infra", "cache.py"), "no KernelCache")
    emulation = ctx.state.emulation
    cache_dir = emulation.cache_dir if emulation is not None else ctx.spec.cache_dir
    ctx.state.created_dirs.extend(_missing_dirs(cache_dir))  # KernelCache makes it; removed again if left empty
    return call_tree("KernelCache", KernelCache, cache_dir=cache_dir)


def _missing_dirs(path):
    out = []
    p = os.path.abspath(path)
    while not os.path.exists(p) and os.path.dirname(p) != p:
        out.append(p)
        p = os.path.dirname(p)
    return out


def _compile(ctx, cache, reuse_kernels, timings):
    """compile_all_kernels on the run's cache, with --reuse-kernels honoured; the Compiled record."""
    spec, entry, log = ctx.spec, ctx.model.entry, ctx.log
    loaded = None
    if callable(getattr(cache, "load_manifest", None)):
        loaded = bool(call_tree("KernelCache.load_manifest", cache.load_manifest))
    toolchain = toolchain_of(cache)
    command = compile_command(entry, spec.seq_len, spec.cpu_attn)
    reuse = bool(reuse_kernels and loaded)
    rel_cache = spec.tree.rel(spec.cache_dir)
    if reuse:
        stamped = read_stamp(spec.cache_dir)
        if stamped is not None and stamped != command:
            log.step(f"--reuse-kernels: not reusing {rel_cache}: it was built by {stamped}")
            reuse = False
    elif reuse_kernels:
        log.step(f"--reuse-kernels: no loadable manifest in {rel_cache}; compiling everything")
    record = track_compiles(cache, reuse)
    log.step(
        f"compiling kernels for seq_len {spec.seq_len} ({'cpu' if spec.cpu_attn else 'npu'} attention; "
        f"cache {rel_cache}, {'warm' if loaded else 'cold'}{', reusing loaded kernels' if reuse else ''})"
    )
    # compile_all_kernels always runs: load_manifest() knows nothing of seq_len
    # or config, and some models (qwen3) fill module state only inside it. Under
    # --reuse-kernels only the compile_and_cache calls for loaded names are skipped.
    t = time.monotonic()
    call_tree(
        f"{entry.module.__name__}.compile_all_kernels",
        entry.compile_all,
        cache,
        ctx.model.config,
        spec.seq_len,
        **filter_kwargs(entry.compile_all, {"cpu_attn": spec.cpu_attn}),
    )
    timings["compile"] = time.monotonic() - t
    write_stamp(spec.cache_dir, command)
    if record.tracked:
        log.step(f"compile_all_kernels: compiled {len(record.compiled)}, reused {len(record.reused)} "
                 f"({timings['compile']:.1f}s)")
    return Compiled(hit=bool(record.tracked and reuse and not record.compiled), manifest_loaded=loaded,
                    toolchain=toolchain, compiled=record.compiled if record.tracked else None,
                    reused=record.reused if record.tracked else None, seconds=timings["compile"])


def _register_emulated(ctx, cache, timings):
    """--emulate: no compile_all_kernels (it builds MLIR with the air compiler); one artifact
    per ELF of the table on the emulated runtime. (Compiled, the names registered)."""
    emu = ctx.state.emulation
    names = emu.npu.elf_names(ctx.spec.cpu_attn)
    emu.artifacts = emu.npu.register_artifacts(cache, names)
    timings["compile"] = 0.0
    ctx.log.step(f"emulate: registered {', '.join(names)} on the emulated air runtime (nothing compiled)")
    return Compiled(compiled=[], reused=[], seconds=0.0), list(names)


def _block_inputs(ctx, wmod, timings):
    """Layer-0 weights, the embedded zero-padded input and the RoPE LUT."""
    spec, config = ctx.spec, ctx.model.config
    tree = spec.tree
    weights_name = f"{tree.model}_weights"
    ctx.log.step(f"loading weights for {spec.model_name}")
    t = time.monotonic()
    weights = call_tree(f"{weights_name}.load_weights", wmod.load_weights, spec.model_name,
                        **filter_kwargs(wmod.load_weights, {"config": config}))
    timings["weights"] = time.monotonic() - t
    layers = getattr(weights, "layers", None)
    embed = getattr(weights, "embed_table", None)
    if not layers or embed is None:
        raise ProbeError(os.path.join(tree.model_dir, weights_name + ".py"), "load_weights() result has no layers or embed_table")

    bf16 = bf16_type(ctx.model.entry.module, wmod)
    hidden32 = np.zeros((spec.seq_len, int(config.emb_dim)), dtype=np.float32)
    hidden32[:spec.real_len] = np.asarray(embed)[np.asarray(spec.tokens, dtype=np.int64)].astype(np.float32)
    hidden = hidden32.astype(bf16) if bf16 is not None else hidden32
    lut = np.asarray(call_tree(f"{weights_name}.generate_rope_lut", wmod.generate_rope_lut, config=config,
                               seq_len=spec.seq_len))
    rope_lut = lut.astype(np.float32)
    return BlockInputs(layer=layers[0], hidden=hidden, input=copy_f32(hidden), rope_lut=rope_lut,
                       rope_lut_bf16=lut.astype(bf16) if bf16 is not None else rope_lut)
