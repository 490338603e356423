"""Block 0 on the NPU: the padded length, the one-time setup (compile, weights,
embedded input, RoPE LUT) and one run of the block function.

`probe block` runs the setup once and the block once; `probe bisect` runs the
same setup once and the block once per swapped step. The adapter path (no block
function to call) lives in probe_adapter.
"""

import dataclasses
import os
import time

import numpy as np

from npu_probe.core.call import bf16_type, block_output, call_tree, copy_f32, filter_kwargs
from probe_capture import LaunchRecorder
from npu_probe.core.errors import ProbeError
from probe_kernels import (
    compile_command,
    read_stamp,
    record_kernel_calls,
    toolchain_of,
    track_compiles,
    unique,
    write_stamp,
)
from npu_probe.core.contract import BISECT_CPU_STEPS_KW, MAX_SEQ_DEFAULT, SEQ_ALIGN
from npu_probe.emulate.table import model_spec
from npu_probe.core.tree import import_tree_module

# ---------------------------------------------------------------------------
# seq_len


def round_up(n, multiple):
    return ((n + multiple - 1) // multiple) * multiple


SEQ_LEN_ATTR = "PREFILL_SEQ_LEN"


def declared_seq_len(*modules):
    """(value, "module.PREFILL_SEQ_LEN") of the first module declaring the
    model's prefill length, or (None, None)."""
    for m in modules:
        v = getattr(m, SEQ_LEN_ATTR, None) if m is not None else None
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v, f"{m.__name__}.{SEQ_LEN_ATTR}"
    return None, None


def choose_seq_len(real_len, override=None, max_seq=MAX_SEQ_DEFAULT, declared=None):
    """(padded length, why). `--seq-len` if given (a multiple of 64 holding the
    prompt); else the model's declared PREFILL_SEQ_LEN (raised to the next
    multiple of 64 holding the prompt when the prompt is longer); else max_seq,
    mlir-air's convention: its prefill ELFs are built for 2048 and the kernel
    registry has the LLM GEMM shapes only at M=2048, so compile_all_kernels
    fails at any other length."""
    if override is not None:
        if override <= 0 or override % SEQ_ALIGN:
            raise ProbeError("--seq-len", f"{override} is not a positive multiple of {SEQ_ALIGN}")
        if override < real_len:
            raise ProbeError("--seq-len", f"{override} is shorter than the prompt ({real_len} tokens)")
        return override, "--seq-len"
    if declared is not None:
        value, source = declared
        if value % SEQ_ALIGN:
            raise ProbeError(source, f"{value} is not a multiple of {SEQ_ALIGN}")
        if real_len <= value:
            return value, source
        return min(round_up(real_len, SEQ_ALIGN), max_seq), f"{source} raised to hold {real_len} tokens"
    return max_seq, f"mlir-air prefill length {max_seq}"


# ---------------------------------------------------------------------------
# Running block 0


@dataclasses.dataclass
class BlockRun:
    npu: np.ndarray  # float32 copy of layer-0 ffn_out (padded rows for single/block)
    input: object  # float32 hidden that entered the block, or None (adapter path)
    cache_hit: object  # bool or None
    timings: dict
    kernels_run: list = dataclasses.field(default_factory=list)  # ELF names in call order
    recorder: object = None  # probe_capture.LaunchRecorder (single/block paths)
    spec: object = None  # the model's ELF boundary table entry, or None
    returned: dict = None  # the block's returned dict, float32 copies (v, q_roped, k_roped, attn_out, ffn_out)
    emulated: list = None  # --emulate: ELF names registered on the emulated runtime
    manifest_loaded: object = None  # what load_manifest() returned (None: not asked)
    toolchain: object = None  # cache._toolchain_id() or None
    compiled: object = None  # names compiled this run (None: unknown, adapter path)
    reused: object = None  # names skipped thanks to --reuse-kernels
    compile_seconds: object = None  # seconds in compile_all_kernels
    layers: object = None  # adapter path: {li: ffn_out} from the same prefill (reused by --layers)


@dataclasses.dataclass
class BlockSetup:
    """Everything block 0 needs on the single/block paths, built once: the
    compiled KernelCache, layer-0 weights, the embedded zero-padded input and
    the RoPE LUT. `probe block` runs it once; `probe bisect` once per step."""

    entry: object
    cache: object
    config: object
    layer: object  # weights.layers[0]
    hidden: object  # block input in the tree's dtype (bf16 when available)
    input: np.ndarray  # float32 copy of `hidden`
    rope_lut: np.ndarray
    rope_lut_bf16: object
    seq_len: int
    cpu_attn: bool
    cache_hit: object
    timings: dict
    kernels_run: list  # appended to by every cache.load_and_run
    manifest_loaded: object = None
    toolchain: object = None
    compiled: object = None  # list, or None when compile_and_cache could not be tracked
    reused: object = None
    recorder: object = None  # probe_capture.LaunchRecorder on this cache
    spec: object = None  # the model's ELF boundary table entry, or None
    returned: dict = dataclasses.field(default_factory=dict)  # the last run's returned boundaries (copies)
    emulated: list = None  # --emulate: the ELF names registered on the emulated runtime


def run_block0(ctx, reuse_kernels=False, keep_layers=False):
    """Block 0 once, on the path the context chose (call from the build dir, lock held)."""
    if ctx.entry.kind == "adapter":
        from probe_adapter import run_adapter_block0  # noqa: PLC0415 - the adapter path only

        if reuse_kernels:
            ctx.log.step("--reuse-kernels has no effect on the adapter path (its build_runner compiles on its own)")
        return run_adapter_block0(ctx, keep_layers)
    setup = prepare_block0(ctx, reuse_kernels=reuse_kernels)
    ctx.log.step(f"running block 0 on the NPU via {ctx.entry.entry} (seq_len {ctx.seq_len}, real_len {ctx.real_len})")
    t = time.monotonic()
    npu = run_block_once(setup)
    setup.timings["npu"] = time.monotonic() - t
    return BlockRun(
        npu=npu,
        input=setup.input,
        cache_hit=setup.cache_hit,
        timings=setup.timings,
        kernels_run=unique(setup.kernels_run),
        manifest_loaded=setup.manifest_loaded,
        toolchain=setup.toolchain,
        compiled=setup.compiled,
        reused=setup.reused,
        compile_seconds=setup.timings.get("compile"),
        recorder=setup.recorder,
        spec=setup.spec,
        returned=setup.returned,
        emulated=setup.emulated,
    )


def _open_cache(ctx):
    cache_mod = import_tree_module("shared.infra.cache", "shared/infra/cache.py (import)")
    KernelCache = getattr(cache_mod, "KernelCache", None)
    if KernelCache is None:
        raise ProbeError(os.path.join(ctx.tree.llms_dir, "shared", "infra", "cache.py"), "no KernelCache")
    emulation = getattr(ctx, "emulation", None)
    cache_dir = emulation.cache_dir if emulation is not None else ctx.cache_dir
    ctx.created_dirs.extend(_missing_dirs(cache_dir))  # KernelCache makes it; removed again if left empty
    return call_tree("KernelCache", KernelCache, cache_dir=cache_dir)


def _missing_dirs(path):
    out = []
    p = os.path.abspath(path)
    while not os.path.exists(p) and os.path.dirname(p) != p:
        out.append(p)
        p = os.path.dirname(p)
    return out


def prepare_block0(ctx, reuse_kernels=False):
    """Compile into the plan's prefill kernel cache dir, load the weights, embed
    and zero-pad the tokens to seq_len, build the RoPE LUT (single/block entries
    only; call from the build dir). With `reuse_kernels`, names the loaded
    manifest already holds are not recompiled (see probe_kernels.track_compiles);
    compile_all_kernels runs either way."""
    tree, entry, log = ctx.tree, ctx.entry, ctx.log
    timings = {}
    weights_name = f"{tree.model}_weights"
    wmod = import_tree_module(weights_name, f"{tree.model}/{weights_name}.py (import)")
    for needed in ("load_weights", "generate_rope_lut"):
        if not callable(getattr(wmod, needed, None)):
            raise ProbeError(os.path.join(tree.model_dir, weights_name + ".py"), f"no {needed}()")
    cache = _open_cache(ctx)
    kernels_run = record_kernel_calls(cache)
    spec = model_spec(tree.model)
    emulation = getattr(ctx, "emulation", None)
    recorder = LaunchRecorder(spec, ctx.config, capture=getattr(ctx, "want_boundaries", True),
                              emulator=emulation.npu if emulation is not None else None)
    recorder.install(cache)
    if emulation is not None:
        return _prepare_emulated(ctx, cache, kernels_run, recorder, spec, wmod, weights_name, timings)
    loaded = None
    if callable(getattr(cache, "load_manifest", None)):
        loaded = bool(call_tree("KernelCache.load_manifest", cache.load_manifest))
    toolchain = toolchain_of(cache)
    command = compile_command(entry, ctx.seq_len, ctx.cpu_attn)
    reuse = bool(reuse_kernels and loaded)
    rel_cache = tree.rel(ctx.cache_dir)
    if reuse:
        stamped = read_stamp(ctx.cache_dir)
        if stamped is not None and stamped != command:
            log.step(f"--reuse-kernels: not reusing {rel_cache}: it was built by {stamped}")
            reuse = False
    elif reuse_kernels:
        log.step(f"--reuse-kernels: no loadable manifest in {rel_cache}; compiling everything")
    record = track_compiles(cache, reuse)
    log.step(
        f"compiling kernels for seq_len {ctx.seq_len} ({'cpu' if ctx.cpu_attn else 'npu'} attention; "
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
        ctx.config,
        ctx.seq_len,
        **filter_kwargs(entry.compile_all, {"cpu_attn": ctx.cpu_attn}),
    )
    timings["compile"] = time.monotonic() - t
    write_stamp(ctx.cache_dir, command)
    if record.tracked:
        log.step(f"compile_all_kernels: compiled {len(record.compiled)}, reused {len(record.reused)} "
                 f"({timings['compile']:.1f}s)")
    hit = bool(record.tracked and reuse and not record.compiled)

    return _finish_setup(ctx, cache, kernels_run, recorder, spec, wmod, weights_name, timings, hit=hit, loaded=loaded,
                         toolchain=toolchain, compiled=record.compiled if record.tracked else None,
                         reused=record.reused if record.tracked else None)


def _prepare_emulated(ctx, cache, kernels_run, recorder, spec, wmod, weights_name, timings):
    """--emulate: no compile_all_kernels (it builds MLIR with the air compiler); one
    artifact per ELF of the table on the emulated runtime."""
    emu = ctx.emulation
    names = emu.npu.elf_names(ctx.cpu_attn)
    emu.artifacts = emu.npu.register_artifacts(cache, names)
    timings["compile"] = 0.0
    ctx.log.step(f"emulate: registered {', '.join(names)} on the emulated air runtime (nothing compiled)")
    setup = _finish_setup(ctx, cache, kernels_run, recorder, spec, wmod, weights_name, timings, hit=None,
                          loaded=None, toolchain=None, compiled=[], reused=[])
    setup.emulated = list(names)
    return setup


def _finish_setup(ctx, cache, kernels_run, recorder, spec, wmod, weights_name, timings, *, hit, loaded, toolchain,
                  compiled, reused):
    tree, entry, log = ctx.tree, ctx.entry, ctx.log
    log.step(f"loading weights for {ctx.model_name}")
    t = time.monotonic()
    weights = call_tree(f"{weights_name}.load_weights", wmod.load_weights, ctx.model_name,
                        **filter_kwargs(wmod.load_weights, {"config": ctx.config}))
    timings["weights"] = time.monotonic() - t
    layers = getattr(weights, "layers", None)
    embed = getattr(weights, "embed_table", None)
    if not layers or embed is None:
        raise ProbeError(os.path.join(tree.model_dir, weights_name + ".py"), "load_weights() result has no layers or embed_table")

    bf16 = bf16_type(entry.module, wmod)
    hidden32 = np.zeros((ctx.seq_len, int(ctx.config.emb_dim)), dtype=np.float32)
    hidden32[:ctx.real_len] = np.asarray(embed)[np.asarray(ctx.tokens, dtype=np.int64)].astype(np.float32)
    hidden = hidden32.astype(bf16) if bf16 is not None else hidden32
    lut = np.asarray(call_tree(f"{weights_name}.generate_rope_lut", wmod.generate_rope_lut, config=ctx.config,
                               seq_len=ctx.seq_len))
    rope_lut = lut.astype(np.float32)
    return BlockSetup(
        entry=entry, cache=cache, config=ctx.config, layer=layers[0], hidden=hidden,
        input=copy_f32(hidden),  # what actually entered the block (bf16-rounded)
        rope_lut=rope_lut, rope_lut_bf16=lut.astype(bf16) if bf16 is not None else rope_lut,
        seq_len=ctx.seq_len, cpu_attn=ctx.cpu_attn, cache_hit=hit, timings=timings, kernels_run=kernels_run,
        manifest_loaded=loaded, toolchain=toolchain, compiled=compiled, reused=reused, recorder=recorder, spec=spec,
    )


def run_block_once(setup, cpu_steps=None):
    """Run block 0 once on `setup` and return a float32 copy of its output.
    `cpu_steps` (a set of bisect step names) is passed as the `cpu_steps`
    keyword when given; the caller checks the entry accepts it."""
    entry = setup.entry
    extra = {} if cpu_steps is None else {BISECT_CPU_STEPS_KW: set(cpu_steps)}
    # A fresh array each run: a block may write into its input.
    hidden = np.array(setup.hidden, copy=True)
    if entry.kind == "single":
        offered = {
            "layer_idx": 0, "hidden": hidden, "weights": setup.layer, "layer_weights": setup.layer,
            "config": setup.config, "rope_lut": setup.rope_lut, "rope_lut_bf16": setup.rope_lut_bf16,
            "cache": setup.cache, "seq_len": setup.seq_len, "cpu_attn": setup.cpu_attn,
        }
        ret = call_tree(entry.entry, entry.func, **filter_kwargs(entry.func, offered), **extra)
    else:
        ret = call_tree(entry.entry, entry.func, hidden, setup.layer, setup.rope_lut_bf16, setup.config, setup.cache,
                        **filter_kwargs(entry.func, {"layer_idx": 0, "cpu_attn": setup.cpu_attn}), **extra)
    out = block_output(ret)
    if out is None:
        raise ProbeError(entry.entry, "returned no block output (no array and no 'ffn_out')")
    setup.returned = returned_boundaries(ret)  # copies, now: the arrays are views of shared buffers
    return copy_f32(out)  # now, before anything reuses the shared buffer


def returned_boundaries(ret):
    """The block's returned intermediates dict (v, q_roped, k_roped, attn_out, ffn_out), float32 copies."""
    d = ret if isinstance(ret, dict) else (ret[1] if isinstance(ret, (tuple, list)) and len(ret) >= 2
                                           and isinstance(ret[1], dict) else None)
    out = {}
    for k, v in (d or {}).items():
        if isinstance(k, str) and v is not None and hasattr(v, "shape"):
            try:
                out[k] = copy_f32(v)
            except (TypeError, ValueError):
                continue
    return out

