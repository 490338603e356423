"""`probe config` and `probe block`: arguments, the run, the run dir; `main` also
dispatches `probe bisect` (probe_bisect.py)."""

import contextlib
import datetime
import json
import os
import signal
import sys
import time
import traceback
import warnings

import probe_refcache

from probe_block import (
    build_dir,
    call_tree,
    choose_entry,
    choose_seq_len,
    compile_command,
    declared_seq_len,
    kernel_cache_dir,
    layer_outputs,
    load_block_modules,
    read_manifest,
    run_block0,
    run_layers_npu,
    tree_toolchain,
    working_dir,
)
from probe_env import environment
from probe_errors import ProbeError, TreeCrash
from probe_lock import lock_path, npu_lock
from probe_log import ProbeLog
from probe_npy import tensor_entry, write_json, write_npy
from probe_reference import (
    check_layer_shapes,
    check_shapes,
    reference_kind,
    reference_record,
    run_reference,
    tokenize,
)
from probe_args import build_parser
from probe_schema import (
    EXIT_INFRA,
    EXIT_OK,
    INPUT_NPY,
    LAYERS_DIR,
    MAX_SEQ_DEFAULT,
    NPU_NPY,
    PROBE_JSON,
    PROBE_LOG,
    PROBE_SCHEMA,
    PROBE_SCHEMA_VERSION,
    REF_NPY,
    TOOL_NAME,
    TOOL_VERSION_FALLBACK,
    layer_file,
)
from probe_tree import (
    canonical_prompt,
    config_summary,
    detect_workarounds,
    import_tree_module,
    put_tree_on_path,
    resolve_tree,
)

PROBE_DIR = os.path.dirname(os.path.abspath(__file__))


def tool_version():
    pkg = os.path.join(PROBE_DIR, "..", "..", "package.json")
    try:
        with open(pkg, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("name") == TOOL_NAME and isinstance(data.get("version"), str):
            return data["version"]
    except (OSError, ValueError):
        pass
    return TOOL_VERSION_FALLBACK


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def prepare_run_dir(out):
    if os.path.exists(out) and not os.path.isdir(out):
        raise ProbeError(out, "run dir exists and is not a directory")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise ProbeError(out, f"cannot create run dir: {exc.strerror or exc}") from exc
    # A stale probe.json would vouch for files this run is about to replace.
    for name in (PROBE_JSON, NPU_NPY, REF_NPY, INPUT_NPY):
        try:
            os.unlink(os.path.join(out, name))
        except FileNotFoundError:
            pass
    layers_dir = os.path.join(out, LAYERS_DIR)
    if os.path.isdir(layers_dir):
        for name in os.listdir(layers_dir):
            if name.startswith("layer_") and name.endswith(".npy"):
                try:
                    os.unlink(os.path.join(layers_dir, name))
                except FileNotFoundError:
                    pass


def open_model(tree):
    """Put the tree on sys.path, import the verify adapter and build the config:
    (adapter, adapter module name, config object, probe.json config record)."""
    put_tree_on_path(tree)
    adapter_name = f"{tree.model}.verify_adapter"
    adapter = import_tree_module(adapter_name, f"{tree.model}/verify_adapter.py (import)")
    adapter_path = os.path.join(tree.model_dir, "verify_adapter.py")
    if not callable(getattr(adapter, "build_config", None)):
        raise ProbeError(adapter_path, "no build_config()")
    config = call_tree(f"{adapter_name}.build_config", adapter.build_config)
    return adapter, adapter_name, config, config_summary(config, adapter_path)


def model_names(adapter, adapter_name, choice, tree):
    """(weights name for load_weights / build_runner, HF reference id) for a
    MODEL_CHOICES key or id, as verify_runner resolves them."""
    resolve = getattr(adapter, "resolve_model", None)
    if choice is None:
        model_name = tree.model
    elif callable(resolve):
        model_name = call_tree(f"{adapter_name}.resolve_model", resolve, choice)
    else:
        model_name = getattr(adapter, "MODEL_CHOICES", {}).get(choice, choice)
    return model_name, reference_id(adapter, adapter_name, model_name)


def reference_id(adapter, adapter_name, model_name):
    hf_ref = getattr(adapter, "hf_reference", None)
    return call_tree(f"{adapter_name}.hf_reference", hf_ref, model_name) if callable(hf_ref) else model_name


def run(args, log):
    t_start = time.monotonic()
    timings = {}
    out = os.path.abspath(args.out)

    t = time.monotonic()
    tree = resolve_tree(args.model_dir, args.air_root)
    log.step(f"tree {tree.air_root}, model {tree.model}")
    adapter, adapter_name, config, cfg = open_model(tree)
    model_name, hf_id = model_names(adapter, adapter_name, args.hf_model or getattr(adapter, "DEFAULT_MODEL", None), tree)
    log.step(f"config: {cfg['n_layers']} layers, emb_dim {cfg['emb_dim']}, head_dim {cfg['head_dim']}; "
             f"weights {model_name}, reference {hf_id}")

    prompt, source = canonical_prompt(tree, args.prompt_style, args.prompt)
    tokens, tokenizer_label, tokenizer = tokenize(tree, adapter, model_name, prompt)
    prefill_mod, inference_mod = load_block_modules(tree)
    max_seq = int(getattr(adapter, "MAX_SEQ", None) or getattr(prefill_mod, "MAX_SEQ", None) or MAX_SEQ_DEFAULT)
    if len(tokens) > max_seq:
        log.step(f"prompt has {len(tokens)} tokens; truncating to max_seq {max_seq} as verify_runner does")
        tokens = tokens[:max_seq]
    real_len = len(tokens)
    declared = declared_seq_len(adapter, prefill_mod)
    seq_len, seq_why = choose_seq_len(real_len, args.seq_len, max_seq, declared if declared[0] else None)
    log.step(f"prompt {source}: {real_len} tokens, padded to {seq_len} ({seq_why})")

    entry = choose_entry(tree.model, adapter, adapter_name, prefill_mod, inference_mod)
    log.step(f"integration {entry.path}: {entry.entry}")
    workarounds = detect_workarounds(cfg)
    for w in workarounds:
        log.step(f"workaround trigger {w['id']}: {w['detail']}")
    kind = reference_kind(tree)
    timings["config"] = time.monotonic() - t

    cache_dir = kernel_cache_dir(tree)
    tensors = {"npu": None, "ref": None, "input": None}
    layers = None
    ref_cache = None
    want_layers = args.command == "block" and bool(getattr(args, "layers", False))
    cache_run = {"hit": None, "manifest_loaded": None, "toolchain": None,
                 "compiled": [], "reused": [], "compile_seconds": None}
    if args.command == "block":
        bdir = build_dir(tree)
        log.detail(f"working directory for compile and run: {bdir}")
        with npu_lock(lock_path(args.npu_lock), args.lock_timeout, log) as waited, working_dir(bdir):
            timings["lock_wait"] = waited
            blk = run_block0(tree, entry, adapter, config, model_name, tokens, seq_len, args.cpu_attn, log, tokenizer,
                             reuse_kernels=bool(getattr(args, "reuse_kernels", False)), keep_layers=want_layers)
            if want_layers and blk.layers is not None:  # adapter path: block 0 already ran that prefill
                layers_source, npu_layers = f"{entry.entry}.prefill", blk.layers
                timings["layers_npu"] = 0.0
            elif want_layers:
                t = time.monotonic()
                layers_source, npu_layers = run_layers_npu(adapter, adapter_name, config, model_name, tokens, seq_len,
                                                           args.cpu_attn, log, tokenizer, cfg["n_layers"])
                timings["layers_npu"] = time.monotonic() - t
        timings.update(blk.timings)
        cache_run = {
            "hit": blk.cache_hit,
            "manifest_loaded": blk.manifest_loaded,
            "toolchain": blk.toolchain,
            "compiled": blk.compiled,
            "reused": blk.reused,
            "compile_seconds": None if blk.compile_seconds is None else round(float(blk.compile_seconds), 4),
        }
        ref_cache = RefCache(args, tree, adapter, kind, hf_id, tokens, cfg, want_layers, log)
        ref_layers = ref_cache.lookup(real_len)
        if ref_layers is not None:
            ref, timings["ref"] = ref_layers[0], ref_cache.load_seconds
            kind = ref_cache.kind or kind
        else:
            ref, timings["ref"], observed, ref_rec = run_reference(tree, adapter, config, model_name, hf_id, tokens,
                                                                   seq_len, log)
            if observed == "emulated":
                kind = "emulated"
            if want_layers:
                ref_layers = layer_outputs(ref_rec, cfg["n_layers"])
        check_shapes(tree, blk.npu, ref, real_len, cfg["emb_dim"], entry.entry)
        if not ref_cache.hit:
            ref_cache.save(ref, ref_layers, kind)
        log.step(f"writing {NPU_NPY} {list(blk.npu.shape)}, {REF_NPY} {list(ref.shape)}"
                 + (f", {INPUT_NPY} {list(blk.input.shape)}" if blk.input is not None else ""))
        tensors["npu"] = tensor_entry(NPU_NPY, write_npy(os.path.join(out, NPU_NPY), blk.npu))
        tensors["ref"] = tensor_entry(REF_NPY, write_npy(os.path.join(out, REF_NPY), ref))
        if blk.input is not None:
            tensors["input"] = tensor_entry(INPUT_NPY, write_npy(os.path.join(out, INPUT_NPY), blk.input))
        if want_layers:
            layers = write_layers(out, layers_source, npu_layers, ref_layers, cfg["n_layers"], log)

    else:
        cache_run["toolchain"] = tree_toolchain(cache_dir)  # config: the id only, nothing compiles
    entries, toolchain = read_manifest(cache_dir)
    # The ELFs block 0 ran, in order; without that (config stage, adapter path,
    # a cache without load_and_run) what the manifest holds, in its order.
    kernels = blk.kernels_run if args.command == "block" and blk.kernels_run else entries
    timings["total"] = time.monotonic() - t_start
    probe = {
        "schema": PROBE_SCHEMA,
        "schema_version": PROBE_SCHEMA_VERSION,
        "stage": args.command,
        "created_at": _now(),
        "tool": {"name": TOOL_NAME, "version": tool_version()},
        "model": {"name": tree.model, "dir": tree.rel(tree.model_dir), "hf_id": hf_id, "config": cfg},
        "prompt": {
            "style": args.prompt_style,
            "text": prompt,
            "source": source,
            "token_ids": tokens,
            "real_len": real_len,
            "padded_len": seq_len,
            "tokenizer": tokenizer_label,
        },
        "integration": {
            "path": entry.path,
            "entry": entry.entry,
            "reason": entry.reason,
            "kernels": kernels,
            "tiles": {},
            "workarounds": workarounds,
            "cpu_attn": bool(args.cpu_attn),
        },
        "reference": dict(reference_record(kind, hf_id), cache=ref_cache.record() if ref_cache else None),
        "environment": environment(tree.air_root, toolchain),
        "timings": {k: round(float(v), 4) for k, v in timings.items()},
        "kernel_cache": {
            "dir": tree.rel(cache_dir),
            "key": None,
            "hit": cache_run["hit"],
            "seconds_saved": None,
            "entries": entries,
            "seq_len": seq_len,
            "cpu_attn": bool(args.cpu_attn),
            "toolchain": cache_run["toolchain"],
            "compile_command": compile_command(entry, seq_len, args.cpu_attn, adapter),
            "compiled": cache_run["compiled"],
            "reused": cache_run["reused"],
            "compile_seconds": cache_run["compile_seconds"],
            "manifest_loaded": cache_run["manifest_loaded"],
        },
        "tensors": tensors,
        "bisect": None,
        "layers": layers,
    }
    write_json(os.path.join(out, PROBE_JSON), probe)  # last: its presence means complete
    log.step(f"wrote {os.path.join(out, PROBE_JSON)} (stage {args.command}, {timings['total']:.1f}s)")
    return probe


class RefCache:
    """probe_refcache around one run: key, lookup, store, and probe.json `reference.cache`."""

    def __init__(self, args, tree, adapter, kind, hf_id, tokens, cfg, want_layers, log):
        self.log, self.cfg = log, cfg
        self.key = self.dir = self.inputs = self.kind = None
        self.hit, self.load_seconds = False, 0.0
        self.root = probe_refcache.cache_root(getattr(args, "ref_cache", None))
        if self.root is None:
            return
        layers = list(range(max(int(cfg["n_layers"]) - 1, 1))) if want_layers else [0]
        build = getattr(adapter, "build_hf_model", None)
        adapter_file = os.path.join(tree.model_dir, "verify_adapter.py") if callable(build) else None
        try:
            self.inputs, why = probe_refcache.key_inputs(tree, reference_record(kind, hf_id), tokens, layers,
                                                         adapter_file)
        except OSError as exc:
            self.inputs, why = None, f"cannot hash the reference sources ({exc}); not cached"
        if self.inputs is None:
            log.step(f"reference cache: {why}")
            return
        self.key = probe_refcache.cache_key(self.inputs)
        self.dir = os.path.join(self.root, self.key)

    def lookup(self, real_len):
        if self.key is None or not os.path.isdir(self.dir):
            return None
        t = time.monotonic()
        arrays = probe_refcache.load(self.dir, self.inputs["layers"], real_len, self.cfg["emb_dim"])
        if arrays is None:
            self.log.step(f"reference cache: entry {self.key[:12]} unreadable or wrong shape; recomputing")
            return None
        try:
            with open(os.path.join(self.dir, probe_refcache.META_FILE), encoding="utf-8") as f:
                self.kind = json.load(f).get("kind")
        except (OSError, ValueError, AttributeError):
            self.kind = None
        self.hit, self.load_seconds = True, time.monotonic() - t
        self.log.step(f"reference cache hit {self.key[:12]}")
        return arrays

    def save(self, ref, ref_layers, kind):
        if self.key is None:
            return
        arrays = dict(ref_layers or {})
        arrays[0] = ref
        if os.path.isdir(self.dir):  # the bad entry lookup refused
            probe_refcache.discard(self.dir)
        try:
            probe_refcache.store(self.root, self.key, self.inputs, arrays, kind)
        except OSError as exc:
            self.log.step(f"reference cache miss {self.key[:12]}; not stored ({exc.strerror or exc})")
            return
        self.log.step(f"reference cache miss {self.key[:12]}; stored")

    def record(self):
        if self.key is None:
            return None
        return {"key": self.key, "hit": self.hit, "dir": self.dir}


def write_layers(out, source, npu_layers, ref_layers, n_layers, log):
    """layers/layer_NN.{npu,ref}.npy for every layer both sides have (li < n_layers - 1),
    and the probe.json `layers` record. Shapes are checked for every layer first."""
    both = sorted(li for li in set(npu_layers) & set(ref_layers) if li < int(n_layers) - 1)
    check_layer_shapes({li: npu_layers[li] for li in both}, {li: ref_layers[li] for li in both})
    log.step(f"layers: {len(both)} layers through {source}")
    if both:
        os.makedirs(os.path.join(out, LAYERS_DIR), exist_ok=True)
    entries = []
    for li in both:
        item = {"layer": li}
        for side, arr in (("npu", npu_layers[li]), ("ref", ref_layers[li])):
            rel = layer_file(li, side)
            item[side] = tensor_entry(rel, write_npy(os.path.join(out, *rel.split("/")), arr))
        entries.append(item)
    return {"source": source, "entries": entries}


class Terminated(BaseException):
    """SIGTERM (e.g. the TypeScript side's --timeout): unwind so temp files go."""


def _on_sigterm(signum, frame):
    raise Terminated()


def main(argv=None, args=None):
    if args is None:
        args = build_parser().parse_args(argv)
    bisect = args.command == "bisect"
    if bisect:
        args.run_dir = os.path.abspath(args.run_dir)  # runs from <model>/build_peano too
    else:
        args.out = os.path.abspath(args.out)  # the block stage runs from <model>/build_peano
    log = ProbeLog(echo_details=args.verbose)
    code = EXIT_OK
    saved_path = list(sys.path)
    old_showwarning = warnings.showwarning
    try:
        old_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (tests calling main() from a thread)
        old_sigterm = None

    def _warn_to_log(message, category, filename, lineno, file=None, line=None):
        log.detail(warnings.formatwarning(message, category, filename, lineno, line))

    try:
        if bisect:
            import probe_bisect  # noqa: PLC0415 - it imports from this module

            probe_bisect.check_run_dir(args.run_dir)
            # Bisect adds to a finished run dir: its log goes after the block's.
            log.attach(os.path.join(args.run_dir, PROBE_LOG), append=True)
            probe_bisect.clear_stale(args.run_dir)
            body = probe_bisect.run_bisect
        else:
            prepare_run_dir(args.out)
            log.attach(os.path.join(args.out, PROBE_LOG))
            body = run
        log.detail(f"probe {args.command} argv={sys.argv[1:] if argv is None else argv}")
        warnings.showwarning = _warn_to_log
        with contextlib.redirect_stdout(log.tree_output()):
            body(args, log)
    except ProbeError as exc:
        log.error(exc.one_line())
        code = exc.exit_code
    except TreeCrash as exc:
        log.detail("".join(traceback.format_exception(type(exc.exc), exc.exc, exc.exc.__traceback__)))
        log.error(exc.one_line())
        code = exc.exit_code
    except KeyboardInterrupt:
        log.error("interrupted")
        code = 130
    except Terminated:
        log.error("terminated (SIGTERM)")
        code = 143
    except Exception as exc:  # a bug in the probe itself: still one line, still exit 3
        log.detail(traceback.format_exc())
        msg = " ".join(str(exc).split())
        log.error(f"probe internal error: {type(exc).__name__}: {msg}")
        code = EXIT_INFRA
    finally:
        warnings.showwarning = old_showwarning
        if old_sigterm is not None:
            signal.signal(signal.SIGTERM, old_sigterm)
        sys.path[:] = saved_path
        log.close()
    return code
