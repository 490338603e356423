"""The config and block stages on one RunContext, and the run dir they write.

`write_config` records what the config stage resolved (probe.json stage
"config", no tensors). `run_block` compiles and runs block 0 under the NPU
lock, gets the reference (or its cache), writes the tensors and probe.json
stage "block". probe.json is always written last: its presence means complete.
"""

import contextlib
import datetime
import json
import os
import time

import probe_refcache
from probe_adapter import layer_outputs, run_layers_npu
from probe_block import run_block0
from probe_capture import npu_boundaries
from probe_lens import write_boundaries
from npu_probe.core.call import remove_if_empty, working_dir
from npu_probe.core.env import environment
from probe_kernels import compile_command, read_manifest, tree_toolchain
from probe_lock import lock_path, npu_lock
from probe_model import tool_version
from npu_probe.core.npy import tensor_entry, write_json, write_npy
from probe_reference import check_layer_shapes, check_shapes, reference_record, run_reference
from npu_probe.core.contract import (
    HF_CAPTURE,
    INPUT_NPY,
    LAYERS_DIR,
    NPU_NPY,
    PROBE_JSON,
    REF_NPY,
    TOOL_NAME,
    layer_file,
    probe_json,
)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _plan(ctx, key):
    return (ctx.plan or {}).get(key)


def _cache_inputs(ctx):
    kc = _plan(ctx, "kernel_cache") or {}
    return kc.get("inputs")


def write_config(ctx, out):
    """probe.json stage config: what the config stage resolved; nothing compiled."""
    cache = {"hit": None, "manifest_loaded": None, "toolchain": tree_toolchain(ctx.cache_dir),
             "compiled": [], "reused": [], "compile_seconds": None}
    return _write(ctx, out, "config", cache=cache, tensors={"npu": None, "ref": None, "input": None},
                  layers=None, kernels=None)


def run_block(ctx, out, reuse_kernels=False, want_layers=False):
    """Block 0 on the NPU and the reference; tensors and probe.json stage block."""
    log, args = ctx.log, ctx.args
    bdir = ctx.build_dir
    log.detail(f"working directory for compile and run: {bdir}")
    emulation = ctx.emulation
    try:
        with npu_lock(lock_path(args.npu_lock), args.lock_timeout, log) as waited, \
                working_dir(bdir, ctx.created_dirs), \
                (emulation.npu.installed() if emulation is not None else contextlib.nullcontext()):
            ctx.timings["lock_wait"] = waited
            blk = run_block0(ctx, reuse_kernels=reuse_kernels, keep_layers=want_layers)
            npu_layers, layers_source = None, None
            if want_layers and blk.layers is not None:  # adapter runner: block 0 already ran that prefill
                layers_source, npu_layers = f"{ctx.entry.entry}.prefill", blk.layers
                ctx.timings["layers_npu"] = 0.0
            elif want_layers:
                t = time.monotonic()
                layers_source, npu_layers = run_layers_npu(ctx)
                ctx.timings["layers_npu"] = time.monotonic() - t
    finally:
        remove_if_empty(ctx.created_dirs)  # a failed compile leaves no empty dirs in the model dir
    ctx.timings.update(blk.timings)

    kind = ctx.ref_kind
    lens = ctx.want_boundaries and blk.recorder is not None
    capture = lens and kind == "hf-bf16"
    ref_cache = RefCache(ctx, want_layers, HF_CAPTURE if capture else None)
    ref_layers = ref_cache.lookup()
    captured = None
    if ref_layers is not None:
        ref, ctx.timings["ref"] = ref_layers[0], ref_cache.load_seconds
        kind = ref_cache.kind or kind
        if ref_cache.boundaries is not None:
            captured = {"boundaries": dict(ref_cache.boundaries, ffn_out=ref), "missing": {}}
    else:
        ref, ctx.timings["ref"], observed, ref_rec, captured = run_reference(
            ctx.tree, ctx.adapter, ctx.config, ctx.model_name, ctx.hf_id, ctx.tokens, ctx.seq_len, log,
            capture=capture)
        if observed == "emulated":
            kind = "emulated"
        if want_layers:
            ref_layers = layer_outputs(ref_rec, ctx.cfg["n_layers"])
    check_shapes(ctx.tree, blk.npu, ref, ctx.real_len, ctx.cfg["emb_dim"], ctx.entry.entry)
    ref_cache.missed(kind)
    ctx.ref_kind = kind
    log.step(f"writing {NPU_NPY} {list(blk.npu.shape)}, {REF_NPY} {list(ref.shape)}"
             + (f", {INPUT_NPY} {list(blk.input.shape)}" if blk.input is not None else ""))
    tensors = {
        "npu": tensor_entry(NPU_NPY, write_npy(os.path.join(out, NPU_NPY), blk.npu)),
        "ref": tensor_entry(REF_NPY, write_npy(os.path.join(out, REF_NPY), ref)),
        "input": tensor_entry(INPUT_NPY, write_npy(os.path.join(out, INPUT_NPY), blk.input)) if blk.input is not None else None,
    }
    layers = write_layers(out, layers_source, npu_layers, ref_layers, ctx.cfg["n_layers"], log) if want_layers else None
    boundaries = None
    if lens:
        t = time.monotonic()
        boundaries = lens_record(ctx, out, blk, captured, kind)
        ctx.timings["boundaries"] = time.monotonic() - t
    cache = {
        "hit": blk.cache_hit, "manifest_loaded": blk.manifest_loaded, "toolchain": blk.toolchain,
        "compiled": blk.compiled, "reused": blk.reused,
        "compile_seconds": None if blk.compile_seconds is None else round(float(blk.compile_seconds), 4),
    }
    if emulation is not None:
        cache["entries"] = list(emulation.artifacts)
    return _write(ctx, out, "block", cache=cache, tensors=tensors, layers=layers, kernels=blk.kernels_run,
                  ref_cache=ref_cache.record(), boundaries=boundaries)


def lens_record(ctx, out, blk, captured, kind):
    """boundaries/ and probe.json `boundaries`: the NPU side from the captured launches
    (the table) and the block's returned dict, the HF side from the layer-0 hooks."""
    spec = blk.spec
    attn_by = "flash_attn" if "flash_attn" in (blk.recorder.names or []) else (
        "host (attention_reference, cpu_attn)" if ctx.cpu_attn else None)
    npu = npu_boundaries(blk.recorder, spec, ctx.config, ctx.real_len, blk.returned, attn_by)
    table = None
    if spec is not None:
        table = f"scripts/probe/elf_boundaries.json#{ctx.tree.model}"
        if spec.get("same_as_resolved"):
            table += f" (same as {spec['same_as_resolved']})"
    if captured is None:
        note = ("the reference is emulated: no HF model to hook" if kind != "hf-bf16"
                else "the reference cache entry holds no boundaries")
        ref, missing = None, None
    else:
        note, ref, missing = None, captured["boundaries"], captured["missing"]
    return write_boundaries(out, npu, ref, source_table=table, emulated=ctx.emulation is not None,
                            ref_capture=HF_CAPTURE if captured is not None else None, ref_missing=missing,
                            ref_note=note, log=ctx.log)


def _write(ctx, out, stage, *, cache, tensors, layers, kernels, ref_cache=None, boundaries=None):
    tree, entry = ctx.tree, ctx.entry
    entries, toolchain = read_manifest(ctx.cache_dir)
    ctx.timings["total"] = time.monotonic() - ctx.t_start
    step2 = _plan(ctx, "step2")
    doc = probe_json(
        stage=stage,
        created_at=_now(),
        tool={"name": TOOL_NAME, "version": tool_version()},
        model={"name": tree.model, "dir": tree.rel(tree.model_dir), "hf_id": ctx.hf_id, "config": ctx.cfg},
        prompt={
            "style": ctx.prompt_style, "text": ctx.prompt, "source": ctx.prompt_source, "token_ids": ctx.tokens,
            "real_len": ctx.real_len, "padded_len": ctx.seq_len, "tokenizer": ctx.tokenizer_label,
            "positions": ctx.positions,
        },
        defaults=ctx.defaults,
        integration={
            "path": entry.path,
            "entry": entry.entry,
            "runner": entry.kind,
            "reason": entry.reason,
            # The ELFs block 0 ran, in order; without that (config stage, adapter
            # runner) what the manifest holds, in its order.
            "kernels": kernels or entries,
            "tiles": {},
            "workarounds": ctx.workarounds,
            "cpu_attn": bool(ctx.cpu_attn),
            "step1": _plan(ctx, "step1"),
            "step2": step2,
            "coverage": _plan(ctx, "coverage"),
        },
        reference=dict(reference_record(ctx.ref_kind, ctx.hf_id), cache=ref_cache,
                       hub_offline=os.environ.get("HF_HUB_OFFLINE") == "1"),
        environment=environment(tree.air_root, toolchain),
        timings={k: round(float(v), 4) for k, v in ctx.timings.items()},
        kernel_cache={
            "dir": tree.rel(ctx.cache_dir),
            "key": None,
            "hit": cache["hit"],
            "seconds_saved": None,
            "entries": cache.get("entries", entries),
            "seq_len": ctx.seq_len,
            "cpu_attn": bool(ctx.cpu_attn),
            "toolchain": cache["toolchain"],
            "compile_command": compile_command(entry, ctx.seq_len, ctx.cpu_attn, ctx.adapter),
            "compiled": cache["compiled"],
            "reused": cache["reused"],
            "compile_seconds": cache["compile_seconds"],
            "manifest_loaded": cache["manifest_loaded"],
            "inputs": _cache_inputs(ctx),
        },
        tensors=tensors,
        bisect=None,
        layers=layers,
        boundaries=boundaries,
        emulate=ctx.emulation.record() if ctx.emulation is not None else None,
    )
    path = os.path.join(out, PROBE_JSON)
    write_json(path, doc)  # last: its presence means complete
    ctx.log.step(f"wrote {path} (stage {stage}, {ctx.timings['total']:.1f}s)")
    return doc


class RefCache:
    """probe_refcache around one run: the key, a read-only lookup, and probe.json
    `reference.cache`. The probe never writes the cache: it runs the tree's own code,
    and a pull request's code must not shape what a later trusted run reads. The
    trusted process stores a miss after the verdict (src/cache/reference.ts), from
    the run dir's reference tensors and the key and inputs recorded here."""

    def __init__(self, ctx, want_layers, boundaries=None):
        self.log, self.cfg, self.real_len = ctx.log, ctx.cfg, ctx.real_len
        self.key = self.dir = self.inputs = self.kind = None
        self.want_boundaries = boundaries
        self.boundaries = None
        self.hit, self.load_seconds = False, 0.0
        self.root = probe_refcache.cache_root(getattr(ctx.args, "ref_cache", None))
        if self.root is None:
            return
        layers = list(range(max(int(self.cfg["n_layers"]) - 1, 1))) if want_layers else [0]
        build = getattr(ctx.adapter, "build_hf_model", None)
        adapter_file = os.path.join(ctx.tree.model_dir, "verify_adapter.py") if callable(build) else None
        try:
            self.inputs, why = probe_refcache.key_inputs(ctx.tree, reference_record(ctx.ref_kind, ctx.hf_id),
                                                         ctx.tokens, layers, adapter_file, boundaries)
        except OSError as exc:
            self.inputs, why = None, f"cannot hash the reference sources ({exc}); not cached"
        if self.inputs is None:
            self.log.step(f"reference cache: {why}")
            return
        self.key = probe_refcache.cache_key(self.inputs)
        self.dir = os.path.join(self.root, self.key)

    def lookup(self):
        if self.key is None or not os.path.isdir(self.dir):
            return None
        t = time.monotonic()
        arrays = probe_refcache.load(self.dir, self.inputs["layers"], self.real_len, self.cfg["emb_dim"])
        if arrays is None:
            self.log.step(f"reference cache: entry {self.key[:12]} unreadable or wrong shape; recomputing")
            return None
        if self.want_boundaries:
            self.boundaries = probe_refcache.load_boundaries(self.dir, self.real_len)
            if self.boundaries is None:
                self.log.step(f"reference cache: entry {self.key[:12]} holds no readable boundaries; recomputing")
                return None
        try:
            with open(os.path.join(self.dir, probe_refcache.META_FILE), encoding="utf-8") as f:
                self.kind = json.load(f).get("kind")
        except (OSError, ValueError, AttributeError):
            self.kind = None
        self.hit, self.load_seconds = True, time.monotonic() - t
        self.log.step(f"reference cache hit {self.key[:12]}")
        return arrays

    def missed(self, kind):
        if self.key is not None and not self.hit:
            self.kind = kind
            self.log.step(f"reference cache miss {self.key[:12]} (a trusted run stores it after the verdict)")

    def record(self):
        if self.key is None:
            return None
        return {"key": self.key, "hit": self.hit, "dir": self.dir, "root": self.root, "kind": self.kind,
                "inputs": self.inputs}


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
