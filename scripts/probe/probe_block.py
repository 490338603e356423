"""Choose how block 0 is run on the NPU, and run it.

Preference (recorded in probe.json `integration`):
  1. `run_single_block` in `<model>_prefill.py`: the seed's Phase 2 entry point.
  2. a `run_transformer_block*` function reachable from `<model>_prefill.py`
     (or, for models without one, `<model>_inference.py`): defined in the
     model's own module -> "kernel-first"; imported from another module
     (e.g. llama32_1b_prefill) -> "inheritance".
  3. the adapter's `build_runner(...).prefill(tokens)` layer-0 `ffn_out` -> "adapter".
The classification follows where the function is *defined* (`__module__`), not
what it is called: a model that wrote its own block is kernel-first even when the
function keeps llama's name; one that reuses llama32_1b's function inherits it.
"""

import contextlib
import dataclasses
import importlib
import inspect
import json
import os
import time

import numpy as np

from probe_errors import ProbeError, TreeCrash
from probe_npy import write_json
from probe_schema import (
    BISECT_CPU_STEPS_KW,
    KERNEL_CACHE_SUBDIR,
    KERNEL_STAMP_FILE,
    KERNEL_STAMP_SCHEMA,
    MANIFEST_FILE,
    MAX_SEQ_DEFAULT,
    SEQ_ALIGN,
)
from probe_tree import import_tree_module, module_file_exists

BLOCK_PREFIX = "run_transformer_block"
SINGLE_BLOCK = "run_single_block"


@dataclasses.dataclass
class Entry:
    path: str  # kernel-first | inheritance | adapter
    kind: str  # single | block | adapter
    entry: str  # dotted name recorded in probe.json
    reason: str
    func: object = None
    module: object = None  # module that holds compile_all_kernels for single/block
    compile_all: object = None


def dotted_name(func):
    """`tiny_llama.tiny_llama_prefill.run_transformer_block` for a function in a
    bare-imported `<model>_prefill` module (the tree imports them by bare name)."""
    mod = getattr(func, "__module__", None) or "?"
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", "?")
    if "." not in mod:
        for suffix in ("_prefill", "_inference"):
            if mod.endswith(suffix) and len(mod) > len(suffix):
                return f"{mod[: -len(suffix)]}.{mod}.{name}"
    return f"{mod}.{name}"


def _defined_in(func, module):
    return getattr(func, "__module__", None) == module.__name__


def _block_functions(module):
    out = []
    for name, value in vars(module).items():
        if (name == BLOCK_PREFIX or name.startswith(BLOCK_PREFIX + "_")) and callable(value):
            out.append((name, value))
    return out


def _rank_block_functions(model, module):
    """Order run_transformer_block* candidates: own module first; within that, a
    suffix naming this model (run_transformer_block_qwen3 for qwen3_0_6b), then
    other suffixes, then the plain name."""

    def key(item):
        name, func = item
        own = _defined_in(func, module)
        suffix = name[len(BLOCK_PREFIX) + 1 :] if name != BLOCK_PREFIX else ""
        if suffix and model.startswith(suffix):
            rank = 0
        elif suffix:
            rank = 1
        else:
            rank = 2
        return (0 if own else 1, rank, name)

    return sorted(_block_functions(module), key=key)


def choose_entry(model, adapter, adapter_name, prefill_module=None, fallback_module=None):
    """Pick the block entry point. `prefill_module` is `<model>_prefill` (or None
    when the file does not exist), `fallback_module` `<model>_inference`."""
    if prefill_module is not None:
        func = vars(prefill_module).get(SINGLE_BLOCK)
        if callable(func):
            own = _defined_in(func, prefill_module)
            return Entry(
                path="kernel-first" if own else "inheritance",
                kind="single",
                entry=dotted_name(func),
                reason=(
                    f"{prefill_module.__name__} defines run_single_block, the seed's Phase 2 entry point"
                    if own
                    else f"{prefill_module.__name__}.run_single_block is {dotted_name(func)}, reused from another module"
                ),
                func=func,
                module=prefill_module,
                compile_all=_compile_all(prefill_module),
            )
    for module in (prefill_module, fallback_module):
        if module is None:
            continue
        ranked = _rank_block_functions(model, module)
        if not ranked:
            continue
        compile_all = _compile_all(module)
        if compile_all is None:
            continue
        name, func = ranked[0]
        own = _defined_in(func, module)
        others = [n for n, _ in ranked[1:]]
        also = f"; also present: {', '.join(others)}" if others else ""
        if own:
            reason = (
                f"no run_single_block; {module.__name__} defines its own {name}, "
                f"composing the model's kernels itself{also}"
            )
        else:
            reason = (
                f"no run_single_block; {module.__name__} reuses {dotted_name(func)} "
                f"(defined in {func.__module__}): the model inherits that block's kernel sequence{also}"
            )
        return Entry(
            path="kernel-first" if own else "inheritance",
            kind="block",
            entry=dotted_name(func),
            reason=reason,
            func=func,
            module=module,
            compile_all=compile_all,
        )
    why = "no run_single_block or run_transformer_block* with compile_all_kernels"
    where = f"{model}_prefill.py" if prefill_module is not None else f"no {model}_prefill.py"
    if not callable(getattr(adapter, "build_runner", None)):
        raise ProbeError(
            f"{adapter_name}",
            f"{why} ({where}) and the adapter has no build_runner: no way to run block 0",
        )
    return Entry(
        path="adapter",
        kind="adapter",
        entry=f"{adapter_name}.build_runner",
        reason=f"{why} ({where}); using the adapter's runner prefill, layer 0 ffn_out",
    )


def _compile_all(module):
    func = vars(module).get("compile_all_kernels")
    return func if callable(func) else None


def load_block_modules(tree):
    """(prefill_module or None, inference_module or None). The inference module is
    imported only when there is no prefill module to look at."""
    prefill = None
    inference = None
    name = f"{tree.model}_prefill"
    if module_file_exists(tree, name):
        prefill = import_tree_module(name, f"{tree.model}/{name}.py (import)")
    else:
        inf = f"{tree.model}_inference"
        if module_file_exists(tree, inf):
            inference = import_tree_module(inf, f"{tree.model}/{inf}.py (import)")
    return prefill, inference


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
# Helpers for calling into the tree


def accepts(func, name):
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    if name in params:
        return params[name].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())


def missing_required(func, offered):
    """Required parameters of `func` that `offered` keywords cannot fill."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_ONLY)
        and (p.name not in offered or p.kind is inspect.Parameter.POSITIONAL_ONLY)
    ]


def filter_kwargs(func, candidates):
    return {k: v for k, v in candidates.items() if accepts(func, k)}


def call_tree(where, func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except (ProbeError, TreeCrash):
        raise
    except Exception as exc:
        raise TreeCrash(where, exc) from exc


def block_output(ret):
    """The layer-0 output from whatever a block function returns: an array,
    (out, intermediates) or an intermediates dict. `ffn_out` wins when present."""
    if isinstance(ret, dict):
        return ret.get("ffn_out")
    if isinstance(ret, (tuple, list)):
        if len(ret) >= 2 and isinstance(ret[1], dict) and ret[1].get("ffn_out") is not None:
            return ret[1]["ffn_out"]
        return ret[0] if ret else None
    return ret


def copy_f32(x):
    """Copy NOW: the real tree's outputs are views into a buffer every later
    NPU call reuses (shared_nonstatic=True)."""
    return np.array(x, dtype=np.float32, copy=True)


def _is_bf16(t):
    try:
        return np.dtype(t).name == "bfloat16"
    except TypeError:
        return False


def bf16_type(*modules):
    """The bfloat16 dtype the tree itself uses (its modules import ml_dtypes'
    bfloat16), else ml_dtypes if installed, else None (stay float32)."""
    for m in modules:
        t = getattr(m, "bfloat16", None) if m is not None else None
        if t is not None and _is_bf16(t):
            return t
    try:
        from ml_dtypes import bfloat16  # noqa: PLC0415 - optional, the tree's dependency

        return bfloat16
    except ImportError:
        return None


def kernel_cache_dir(tree):
    return os.path.join(tree.model_dir, *KERNEL_CACHE_SUBDIR)


def build_dir(tree):
    """`<model>/build_peano`: the tree compiles (air_project/, *.o) into the
    current directory, and `make compile` / `make diagnosis` run from here."""
    return os.path.join(tree.model_dir, KERNEL_CACHE_SUBDIR[0])


@contextlib.contextmanager
def working_dir(path):
    prev = os.getcwd()
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise ProbeError(path, f"cannot create build dir: {exc.strerror or exc}") from exc
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(prev)


def read_manifest(cache_dir):
    """(entry names in order, toolchain dict or None) from manifest.json, or ([], None)."""
    path = os.path.join(cache_dir, MANIFEST_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return [], None
    entries = manifest.get("entries") if isinstance(manifest, dict) else None
    names = list(entries.keys()) if isinstance(entries, dict) else []
    tool = manifest.get("_toolchain") if isinstance(manifest, dict) else None
    toolchain = {str(k): _str(v) for k, v in tool.items()} if isinstance(tool, dict) else None
    return names, toolchain


def _str(v):
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


# ---------------------------------------------------------------------------
# What the kernel cache was built from (probe.json `kernel_cache`)


def compile_command(entry, seq_len, cpu_attn, adapter=None):
    """A stable description of the compile `block` runs for this entry, the same
    string in `config` and `block` (the TypeScript side keys its kernel cache on
    it). Only the keywords the call really passes appear."""
    if entry.kind == "adapter":
        build = getattr(adapter, "build_runner", None)
        kw = filter_kwargs(build, {"npu_attn": not cpu_attn, "lite_mode": False}) if callable(build) else {}
        extra = "".join(f", {k}={v}" for k, v in kw.items())
        return f"{entry.entry}(model_name, config, max_seq={int(seq_len)}, tokenizer{extra})"
    extra = f", cpu_attn={bool(cpu_attn)}" if accepts(entry.compile_all, "cpu_attn") else ""
    return f"{entry.module.__name__}.compile_all_kernels(cache, config, seq_len={int(seq_len)}{extra})"


def toolchain_of(cache):
    """`cache._toolchain_id()` as a JSON-safe dict with sorted keys, or None when
    the cache has no such method or it fails."""
    func = getattr(cache, "_toolchain_id", None)
    if not callable(func):
        return None
    try:
        ids = func()
    except Exception:  # informational: load_manifest reports a real toolchain problem
        return None
    if not isinstance(ids, dict):
        return None
    return {str(k): ids[k] if isinstance(ids[k], (str, int, float, bool)) or ids[k] is None else _str(ids[k])
            for k in sorted(ids, key=str)}


def tree_toolchain(cache_dir):
    """The tree's KernelCache toolchain id without compiling anything (for
    `config`). An instance made without __init__ first, so `config` does not
    create the cache dir; a full instance only if that fails. None when the
    tree has no usable KernelCache."""
    try:
        mod = importlib.import_module("shared.infra.cache")
        cls = mod.KernelCache
    except Exception:
        return None
    try:
        bare = cls.__new__(cls)
        ids = toolchain_of(bare)
        if ids is not None:
            return ids
    except Exception:
        pass
    try:
        return toolchain_of(cls(cache_dir=cache_dir))
    except Exception:
        return None


def read_stamp(cache_dir):
    """The compile command the probe recorded for this cache dir, or None."""
    try:
        with open(os.path.join(cache_dir, KERNEL_STAMP_FILE), encoding="utf-8") as f:
            stamp = json.load(f)
    except (OSError, ValueError):
        return None
    cmd = stamp.get("compile_command") if isinstance(stamp, dict) else None
    return cmd if isinstance(cmd, str) else None


def write_stamp(cache_dir, command):
    try:
        write_json(os.path.join(cache_dir, KERNEL_STAMP_FILE), {"schema": KERNEL_STAMP_SCHEMA, "compile_command": command})
    except OSError:
        pass  # only a guard for later --reuse-kernels runs


@dataclasses.dataclass
class CompileRecord:
    """What compile_all_kernels did to this KernelCache instance."""

    compiled: list = dataclasses.field(default_factory=list)  # names passed to the real compile_and_cache
    reused: list = dataclasses.field(default_factory=list)  # names skipped (--reuse-kernels)
    tracked: bool = True  # False: compile_and_cache could not be wrapped (names unknown)


def _artifact_binary(artifact):
    if isinstance(artifact, dict):
        binary = artifact.get("output_binary")
    else:
        binary = getattr(artifact, "output_binary", None)
    return str(binary) if binary else None


def track_compiles(cache, reuse):
    """Wrap THIS instance's compile_and_cache (an instance attribute; the tree
    and its class are untouched). Every call is noted. With `reuse` (load_manifest
    returned True), a call for a name the manifest loaded, whose binary exists, is
    skipped and returns None, which is what mlir-air's compile_and_cache returns;
    every other name compiles as usual. compile_all_kernels itself still runs, so
    module state it sets (qwen3's _FUSED_SCRATCH_FOR) is set as in a cold run."""
    rec = CompileRecord()
    orig = getattr(cache, "compile_and_cache", None)
    if not callable(orig):
        rec.tracked = False
        return rec
    loaded = {}
    if reuse:
        artifacts = getattr(cache, "artifacts", None)
        if isinstance(artifacts, dict):
            loaded = {name: _artifact_binary(art) for name, art in artifacts.items()}

    def compile_and_cache(*args, **kwargs):
        name = args[0] if args else kwargs.get("name")
        binary = loaded.get(name) if isinstance(name, str) else None
        if binary is not None and os.path.isfile(binary):
            if name not in rec.reused:
                rec.reused.append(name)
            return None
        if isinstance(name, str) and name not in rec.compiled:
            rec.compiled.append(name)
        return orig(*args, **kwargs)

    try:
        cache.compile_and_cache = compile_and_cache
    except (AttributeError, TypeError):
        rec.tracked = False  # __slots__ or a C type: compile as the tree does, names unknown
    return rec


# ---------------------------------------------------------------------------
# Running block 0


@dataclasses.dataclass
class BlockRun:
    npu: np.ndarray  # float32 copy of layer-0 ffn_out (padded rows for single/block)
    input: object  # float32 hidden that entered the block, or None (adapter path)
    seq_len: int
    cache_dir: str
    cache_hit: object  # bool or None
    timings: dict
    kernels_run: list = dataclasses.field(default_factory=list)  # ELF names in call order
    manifest_loaded: object = None  # what load_manifest() returned (None: not asked)
    toolchain: object = None  # cache._toolchain_id() or None
    compiled: object = None  # names compiled this run (None: unknown, adapter path)
    reused: object = None  # names skipped thanks to --reuse-kernels
    compile_seconds: object = None  # seconds in compile_all_kernels
    layers: object = None  # adapter path: {li: ffn_out} from the same prefill (reused by --layers)


def run_block0(tree, entry, adapter, config, model_name, tokens, seq_len, cpu_attn, log, tokenizer=None,
               reuse_kernels=False, keep_layers=False):
    if entry.kind == "adapter":
        if reuse_kernels:
            log.step("--reuse-kernels has no effect on the adapter path (its build_runner compiles on its own)")
        return _run_adapter(tree, entry, adapter, config, model_name, tokens, seq_len, cpu_attn, log, tokenizer, {},
                            keep_layers)
    setup = prepare_block0(tree, entry, config, model_name, tokens, seq_len, cpu_attn, log, reuse_kernels=reuse_kernels)
    log.step(f"running block 0 on the NPU via {entry.entry} (seq_len {seq_len}, real_len {len(tokens)})")
    t = time.monotonic()
    npu = run_block_once(setup)
    setup.timings["npu"] = time.monotonic() - t
    return BlockRun(
        npu=npu,
        input=setup.input,
        seq_len=seq_len,
        cache_dir=setup.cache_dir,
        cache_hit=setup.cache_hit,
        timings=setup.timings,
        kernels_run=unique(setup.kernels_run),
        manifest_loaded=setup.manifest_loaded,
        toolchain=setup.toolchain,
        compiled=setup.compiled,
        reused=setup.reused,
        compile_seconds=setup.timings.get("compile"),
    )


@dataclasses.dataclass
class BlockSetup:
    """Everything block 0 needs on the single/block paths, built once: the
    compiled KernelCache, layer-0 weights, the embedded zero-padded input and
    the RoPE LUT. `probe block` runs it once; `probe bisect` once per step."""

    entry: Entry
    cache: object
    config: object
    layer: object  # weights.layers[0]
    hidden: object  # block input in the tree's dtype (bf16 when available)
    input: np.ndarray  # float32 copy of `hidden`
    rope_lut: np.ndarray
    rope_lut_bf16: object
    seq_len: int
    cpu_attn: bool
    cache_dir: str
    cache_hit: object
    timings: dict
    kernels_run: list  # appended to by every cache.load_and_run
    manifest_loaded: object = None
    toolchain: object = None
    compiled: object = None  # list, or None when compile_and_cache could not be tracked
    reused: object = None


def prepare_block0(tree, entry, config, model_name, tokens, seq_len, cpu_attn, log, reuse_kernels=False):
    """Compile into `<model>/build_peano/prefill_kernel_cache`, load the weights,
    embed and zero-pad `tokens` to `seq_len`, build the RoPE LUT (single/block
    entries only; call from the build dir). With `reuse_kernels`, names the
    loaded manifest already holds are not recompiled (see track_compiles);
    compile_all_kernels runs either way."""
    timings = {}
    cache_dir = kernel_cache_dir(tree)
    weights_name = f"{tree.model}_weights"
    wmod = import_tree_module(weights_name, f"{tree.model}/{weights_name}.py (import)")
    for needed in ("load_weights", "generate_rope_lut"):
        if not callable(getattr(wmod, needed, None)):
            raise ProbeError(os.path.join(tree.model_dir, weights_name + ".py"), f"no {needed}()")
    cache_mod = import_tree_module("shared.infra.cache", "shared/infra/cache.py (import)")
    KernelCache = getattr(cache_mod, "KernelCache", None)
    if KernelCache is None:
        raise ProbeError(os.path.join(tree.llms_dir, "shared", "infra", "cache.py"), "no KernelCache")

    cache = call_tree("KernelCache", KernelCache, cache_dir=cache_dir)
    kernels_run = record_kernel_calls(cache)
    loaded = None
    if callable(getattr(cache, "load_manifest", None)):
        loaded = bool(call_tree("KernelCache.load_manifest", cache.load_manifest))
    toolchain = toolchain_of(cache)
    command = compile_command(entry, seq_len, cpu_attn)
    reuse = bool(reuse_kernels and loaded)
    if reuse:
        stamped = read_stamp(cache_dir)
        if stamped is not None and stamped != command:
            log.step(f"--reuse-kernels: not reusing {tree.rel(cache_dir)}: it was built by {stamped}")
            reuse = False
    elif reuse_kernels:
        log.step(f"--reuse-kernels: no loadable manifest in {tree.rel(cache_dir)}; compiling everything")
    record = track_compiles(cache, reuse)
    log.step(
        f"compiling kernels for seq_len {seq_len} ({'cpu' if cpu_attn else 'npu'} attention; "
        f"cache {tree.rel(cache_dir)}, {'warm' if loaded else 'cold'}"
        f"{', reusing loaded kernels' if reuse else ''})"
    )
    # compile_all_kernels always runs: load_manifest() knows nothing of seq_len
    # or config, and some models (qwen3) fill module state only inside it. Under
    # --reuse-kernels only the compile_and_cache calls for loaded names are skipped.
    t = time.monotonic()
    call_tree(
        f"{entry.module.__name__}.compile_all_kernels",
        entry.compile_all,
        cache,
        config,
        seq_len,
        **filter_kwargs(entry.compile_all, {"cpu_attn": cpu_attn}),
    )
    timings["compile"] = time.monotonic() - t
    write_stamp(cache_dir, command)
    if record.tracked:
        log.step(f"compile_all_kernels: compiled {len(record.compiled)}, reused {len(record.reused)} "
                 f"({timings['compile']:.1f}s)")
        hit = bool(reuse and not record.compiled)
    else:
        hit = False

    log.step(f"loading weights for {model_name}")
    t = time.monotonic()
    weights = call_tree(
        f"{weights_name}.load_weights",
        wmod.load_weights,
        model_name,
        **filter_kwargs(wmod.load_weights, {"config": config}),
    )
    timings["weights"] = time.monotonic() - t
    layers = getattr(weights, "layers", None)
    embed = getattr(weights, "embed_table", None)
    if not layers or embed is None:
        raise ProbeError(os.path.join(tree.model_dir, weights_name + ".py"), "load_weights() result has no layers or embed_table")

    bf16 = bf16_type(entry.module, wmod)
    real_len = len(tokens)
    hidden32 = np.zeros((seq_len, int(config.emb_dim)), dtype=np.float32)
    hidden32[:real_len] = np.asarray(embed)[np.asarray(tokens, dtype=np.int64)].astype(np.float32)
    hidden = hidden32.astype(bf16) if bf16 is not None else hidden32
    input_f32 = copy_f32(hidden)  # what actually entered the block (bf16-rounded)

    lut = call_tree(f"{weights_name}.generate_rope_lut", wmod.generate_rope_lut, config=config, seq_len=seq_len)
    lut = np.asarray(lut)
    rope_lut = lut.astype(np.float32)
    rope_lut_bf16 = lut.astype(bf16) if bf16 is not None else rope_lut
    return BlockSetup(
        entry=entry,
        cache=cache,
        config=config,
        layer=layers[0],
        hidden=hidden,
        input=input_f32,
        rope_lut=rope_lut,
        rope_lut_bf16=rope_lut_bf16,
        seq_len=seq_len,
        cpu_attn=cpu_attn,
        cache_dir=cache_dir,
        cache_hit=hit,
        timings=timings,
        kernels_run=kernels_run,
        manifest_loaded=loaded,
        toolchain=toolchain,
        compiled=record.compiled if record.tracked else None,
        reused=record.reused if record.tracked else None,
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
            "layer_idx": 0,
            "hidden": hidden,
            "weights": setup.layer,
            "layer_weights": setup.layer,
            "config": setup.config,
            "rope_lut": setup.rope_lut,
            "rope_lut_bf16": setup.rope_lut_bf16,
            "cache": setup.cache,
            "seq_len": setup.seq_len,
            "cpu_attn": setup.cpu_attn,
        }
        ret = call_tree(entry.entry, entry.func, **filter_kwargs(entry.func, offered), **extra)
    else:
        ret = call_tree(
            entry.entry,
            entry.func,
            hidden,
            setup.layer,
            setup.rope_lut_bf16,
            setup.config,
            setup.cache,
            **filter_kwargs(entry.func, {"layer_idx": 0, "cpu_attn": setup.cpu_attn}),
            **extra,
        )
    out = block_output(ret)
    if out is None:
        raise ProbeError(entry.entry, "returned no block output (no array and no 'ffn_out')")
    return copy_f32(out)  # now, before anything reuses the shared buffer


def record_kernel_calls(cache):
    """Note the name of every `cache.load_and_run(name, ...)` in call order, so
    the run dir lists the ELF sequence block 0 actually ran (the manifest only
    says what was compiled). Wraps this one instance; the tree is untouched."""
    calls = []
    orig = getattr(cache, "load_and_run", None)
    if not callable(orig):
        return calls

    def load_and_run(*args, **kwargs):
        name = args[0] if args else kwargs.get("name")
        if isinstance(name, str):
            calls.append(name)
        return orig(*args, **kwargs)

    try:
        cache.load_and_run = load_and_run
    except (AttributeError, TypeError):
        pass  # __slots__ or a C type: fall back to the manifest order
    return calls


def unique(names):
    seen = set()
    return [n for n in names if not (n in seen or seen.add(n))]


def probe_cache_hit(cache_dir):
    """Would the adapter's prefill cache load? (KernelCache.load_manifest on a
    throwaway instance; None when the tree has no usable KernelCache.)"""
    try:
        mod = importlib.import_module("shared.infra.cache")
        cache = mod.KernelCache(cache_dir=cache_dir)
        return bool(cache.load_manifest())
    except Exception:  # only informational here; the adapter reports real failures
        return None


class _TokenizerShim:
    """Stands in for an HF tokenizer when the adapter tokenizes itself."""

    def __init__(self, adapter):
        self._adapter = adapter
        self.eos_token_id = getattr(adapter, "EOS_TOKEN_ID", 0)

    def encode(self, text):
        return list(self._adapter.tokenize(text))


def build_adapter_runner(entry_name, adapter, config, model_name, seq_len, cpu_attn, log, tokenizer):
    """`adapter.build_runner(model_name, config, max_seq, tokenizer, npu_attn=, lite_mode=False)`,
    as verify_runner builds its NPU runner (compiles the adapter's kernels)."""
    tok = tokenizer if tokenizer is not None else _TokenizerShim(adapter)
    log.step(f"building the adapter's NPU runner (compiles its kernels; max_seq {seq_len})")
    return call_tree(
        entry_name,
        adapter.build_runner,
        model_name,
        config,
        seq_len,
        tok,
        **filter_kwargs(adapter.build_runner, {"npu_attn": not cpu_attn, "lite_mode": False}),
    )


def adapter_prefill(entry_name, runner, tokens):
    """`runner.prefill(tokens)`: the adapter's PrefillRecord."""
    return call_tree(f"{entry_name}(...).prefill", runner.prefill, np.asarray(tokens, dtype=np.int64))


def _run_adapter(tree, entry, adapter, config, model_name, tokens, seq_len, cpu_attn, log, tokenizer, timings,
                 keep_layers=False):
    cache_dir = kernel_cache_dir(tree)
    loaded = probe_cache_hit(cache_dir)
    t = time.monotonic()
    runner = build_adapter_runner(entry.entry, adapter, config, model_name, seq_len, cpu_attn, log, tokenizer)
    timings["compile"] = time.monotonic() - t
    log.step("running the adapter's prefill; taking layer 0 ffn_out")
    t = time.monotonic()
    rec = adapter_prefill(entry.entry, runner, tokens)
    try:
        out = rec.layer_intermediates[0]["ffn_out"]
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise ProbeError(entry.entry, f"prefill record has no layer_intermediates[0]['ffn_out'] ({exc})") from exc
    npu = copy_f32(out)
    timings["npu"] = time.monotonic() - t
    return BlockRun(
        npu=npu,
        input=None,
        seq_len=seq_len,
        cache_dir=cache_dir,
        cache_hit=None,  # the adapter compiles on its own: whether it skipped anything is unknown
        timings=timings,
        manifest_loaded=loaded,
        toolchain=tree_toolchain(cache_dir),
        # --layers on this path: every layer from this same prefill, copied now (no second runner)
        layers=layer_outputs(rec) if keep_layers else None,
    )


# ---------------------------------------------------------------------------
# --layers: every layer's ffn_out through the adapter's runner, as verify_runner's diagnosis


def layer_outputs(rec, n_layers=None):
    """{li: float32 copy of layer_intermediates[li]["ffn_out"]} for every layer the
    record has one (li < n_layers - 1 when n_layers is given; the last entry is the
    post-final-norm hidden, not a block output). Copied at once: shared buffers."""
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


def run_layers_npu(adapter, adapter_name, config, model_name, tokens, seq_len, cpu_attn, log, tokenizer, n_layers):
    """(source, {li: ffn_out}) from `adapter.build_runner(...).prefill(tokens)`.
    Call with the NPU lock held and from the build dir, as block 0."""
    entry_name = f"{adapter_name}.build_runner"
    if not callable(getattr(adapter, "build_runner", None)):
        raise ProbeError(adapter_name, "--layers needs the adapter's build_runner, and it has none")
    runner = build_adapter_runner(entry_name, adapter, config, model_name, seq_len, cpu_attn, log, tokenizer)
    log.step("running the adapter's prefill for every layer's ffn_out")
    return f"{entry_name}.prefill", layer_outputs(adapter_prefill(entry_name, runner, tokens), n_layers)
