"""The probe's side of the kernel cache (probe.json `kernel_cache`).

Where the prefill kernels are compiled (the build dir and cache dir the plan
chose), what they were built from (compile command, toolchain id, stamp), and
what compile_all_kernels really compiled or reused on this KernelCache
instance. The content-addressed store itself is the TypeScript side's
(src/cache/kernel.ts); the probe only records and, under --reuse-kernels,
skips compiles of what a restored manifest already holds.
"""

import dataclasses
import importlib
import json
import os

from npu_probe.core.call import accepts, filter_kwargs
from npu_probe.core.npy import write_json
from npu_probe.core.contract import KERNEL_STAMP_FILE, KERNEL_STAMP_SCHEMA, MANIFEST_FILE, PREFILL_CACHE_NAME

DEFAULT_BUILD_DIR = "build_peano"


def build_dir(tree, plan=None):
    """`<model>/<build dir>`: the dir `make compile` and `make diagnosis` run in
    and the tree compiles into (air_project/, *.o). The plan's choice
    (build_peano with PEANO_INSTALL_DIR set, build_chess without, as the
    Makefiles say); build_peano when there is no plan."""
    rel = ((plan or {}).get("kernel_cache") or {}).get("build_dir")
    return os.path.join(tree.air_root, *rel.split("/")) if rel else os.path.join(tree.model_dir, DEFAULT_BUILD_DIR)


def kernel_cache_dir(tree, plan=None):
    """The prefill kernel cache dir the run compiles into (the plan's, which knows
    the q4nx models' `_q4nx_cache_seq{N}` dirs), else `<build dir>/prefill_kernel_cache`."""
    rel = ((plan or {}).get("kernel_cache") or {}).get("dir")
    if rel:
        return os.path.join(tree.air_root, *rel.split("/"))
    return os.path.join(build_dir(tree, plan), PREFILL_CACHE_NAME)


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
        cls = importlib.import_module("shared.infra.cache").KernelCache
    except Exception:
        return None
    try:
        ids = toolchain_of(cls.__new__(cls))
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
    throwaway instance; None when the tree has no usable KernelCache.) Only asked
    when the dir exists, so asking never creates it."""
    if not os.path.isdir(cache_dir):
        return False
    try:
        cache = importlib.import_module("shared.infra.cache").KernelCache(cache_dir=cache_dir)
        return bool(cache.load_manifest())
    except Exception:  # only informational here; the adapter reports real failures
        return None
