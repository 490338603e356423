"""The config and block stages on one RunContext, and the run dir they write.

`write_config` records what the config stage resolved (probe.json stage "config", no
tensors). `run_block` compiles and runs block 0 under the NPU lock, gets the reference (or its
cache), writes the tensors and probe.json stage "block". probe.json is always written last:
its presence means complete.
"""

import contextlib
import os
import time

from npu_probe.core.call import remove_if_empty, working_dir
from npu_probe.core.contract import FP32_PREFIX, HF_CAPTURE, INPUT_NPY, RECORD_CAPTURE, LAYERS_DIR, NPU_NPY, REF_NPY, layer_file
from npu_probe.core.npy import tensor_entry, write_npy
from npu_probe.lens.boundaries import lens_record
from npu_probe.reference.cache import RefCache
from npu_probe.reference.hf import check_layer_shapes, check_shapes, record_boundaries, run_reference
from npu_probe.run.adapter import layer_outputs, run_layers_npu
from npu_probe.run.block import run_block0
from npu_probe.run.kernels import tree_toolchain
from npu_probe.core.tree import emulates_npu
from npu_probe.run.lock import npu_lock_unless
from npu_probe.run.outcome import Compiled
from npu_probe.run.record import StageOutput, write_probe_json


def write_config(ctx, out):
    """probe.json stage config: what the config stage resolved; nothing compiled."""
    compiled = Compiled(toolchain=tree_toolchain(ctx.spec.cache_dir), compiled=[], reused=[])
    return write_probe_json(ctx, out, "config", StageOutput(compiled, {"npu": None, "ref": None, "input": None}))


def run_block(ctx, out, reuse_kernels=False, want_layers=False):
    """Block 0 on the NPU and the reference; tensors and probe.json stage block."""
    log, state, cfg = ctx.log, ctx.state, ctx.model.cfg
    blk, layers_source, npu_layers = _run_on_npu(ctx, reuse_kernels, want_layers)
    state.timings.update(blk.timings)

    lens = ctx.spec.boundaries and blk.recorder is not None
    ref, ref_layers, captured, ref_cache = _reference(ctx, want_layers, lens)
    check_shapes(ctx.spec.tree, blk.npu, ref, ctx.spec.real_len, cfg["emb_dim"], ctx.model.entry.entry)
    ref_cache.missed(state.ref_kind)
    log.step(f"writing {NPU_NPY} {list(blk.npu.shape)}, {REF_NPY} {list(ref.shape)}"
             + (f", {INPUT_NPY} {list(blk.input.shape)}" if blk.input is not None else ""))
    tensors = {
        "npu": tensor_entry(NPU_NPY, write_npy(os.path.join(out, NPU_NPY), blk.npu)),
        "ref": tensor_entry(REF_NPY, write_npy(os.path.join(out, REF_NPY), ref)),
        "input": tensor_entry(INPUT_NPY, write_npy(os.path.join(out, INPUT_NPY), blk.input)) if blk.input is not None else None,
    }
    layers = write_layers(out, layers_source, npu_layers, ref_layers, cfg["n_layers"], log) if want_layers else None
    boundaries = None
    if lens:
        t = time.monotonic()
        boundaries = lens_record(ctx, out, blk, captured, state.ref_kind)
        state.timings["boundaries"] = time.monotonic() - t
    sanity = step2_sanity(ctx)
    emulation = state.emulation
    output = StageOutput(blk.compiled, tensors, entries=list(emulation.artifacts) if emulation is not None else None,
                         kernels=blk.kernels_run, layers=layers, ref_cache=ref_cache.record(), boundaries=boundaries,
                         step2_sanity=sanity)
    return write_probe_json(ctx, out, "block", output)


def _run_on_npu(ctx, reuse_kernels, want_layers):
    """Block 0 (and with --layers every layer) under the NPU lock, from the build dir:
    (BlockRun, layers source, {li: NPU ffn_out} or None)."""
    opts, state, log = ctx.options, ctx.state, ctx.log
    bdir = ctx.spec.build_dir
    log.detail(f"working directory for compile and run: {bdir}")
    emulation = state.emulation
    try:
        with npu_lock_unless(emulation is not None or emulates_npu(ctx.spec.tree), opts, log) as waited, \
                working_dir(bdir, state.created_dirs), \
                (emulation.npu.installed() if emulation is not None else contextlib.nullcontext()):
            state.timings["lock_wait"] = waited
            blk = run_block0(ctx, reuse_kernels=reuse_kernels, keep_layers=want_layers)
            npu_layers, layers_source = None, None
            if want_layers and blk.layers is not None:  # adapter runner: block 0 already ran that prefill
                layers_source, npu_layers = f"{ctx.model.entry.entry}.prefill", blk.layers
                state.timings["layers_npu"] = 0.0
            elif want_layers:
                t = time.monotonic()
                layers_source, npu_layers = run_layers_npu(ctx)
                state.timings["layers_npu"] = time.monotonic() - t
    finally:
        remove_if_empty(state.created_dirs)  # a failed compile leaves no empty dirs in the model dir
    return blk, layers_source, npu_layers


def _reference(ctx, want_layers, lens):
    """The reference ffn_out, from the cache or HfRunner: (ref, {li: ref ffn_out} or None, the
    HF side of the lens or None, the RefCache). Sets the state's ref_kind to what was seen."""
    state = ctx.state
    kind = state.ref_kind
    capture = lens and kind == "hf-bf16"
    # An emulated reference has no torch modules to hook: its record may hold layer 0's boundaries.
    from_record = lens and kind != "hf-bf16"
    ref_cache = RefCache(ctx, want_layers, HF_CAPTURE if capture else RECORD_CAPTURE if from_record else None)
    ref_layers = ref_cache.lookup()
    captured = None
    if ref_layers is not None:
        ref, state.timings["ref"] = ref_layers[0], ref_cache.load_seconds
        kind = ref_cache.kind or kind
        if ref_cache.boundaries is not None:
            stored = ref_cache.boundaries  # the FP32 side is stored as fp32.<name> beside the HF side
            fp32 = {k[len(FP32_PREFIX):]: v for k, v in stored.items() if k.startswith(FP32_PREFIX)}
            hf = {k: v for k, v in stored.items() if not k.startswith(FP32_PREFIX)}
            captured = {"boundaries": dict(hf, ffn_out=ref), "missing": {}, "fp32": fp32 or None,
                        "capture": ref_cache.want_boundaries}
    else:
        ref, state.timings["ref"], observed, ref_rec, captured = run_reference(ctx, capture=capture)
        if observed == "emulated":
            kind = "emulated"
        if from_record and captured is None:
            captured = record_boundaries(ref_rec, ref)
        if want_layers:
            ref_layers = layer_outputs(ref_rec, ctx.model.cfg["n_layers"])
    state.ref_kind = kind
    return ref, ref_layers, captured, ref_cache


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


def step2_sanity(ctx):
    """Step 2's padded-vs-original check on the CPU when the plan's Step 2 triggers on non-1024-aligned
    dims and the reference is a HuggingFace model (None otherwise). Informational: whatever stops it
    is recorded as `skipped`, never the run's outcome."""
    step2 = ctx.facts.step2 or {}
    if not any(t.get("id") == "non_1024_aligned" for t in step2.get("triggers") or []):
        return None
    log, spec = ctx.log, ctx.spec
    if ctx.state.ref_kind != "hf-bf16":  # an emulated reference (air-mini) has no HF weights to pad
        log.step("step2 sanity: not run (the reference is not a HuggingFace model: no torch weights to pad)")
        return None
    from npu_probe.reference import step2_sanity as sanity  # noqa: PLC0415 - torch only here

    log.step("step2 sanity: padding the HF model on the CPU (GQA-aware reindexed, the tree's helper, naive)")
    t = time.monotonic()
    try:
        model = sanity.load_model(spec.hf_id)
        rec = sanity.run_sanity(model, list(spec.tokens), sanity.helper_of(step2, spec.tree.air_root), spec.hf_id)
        del model
    except sanity.Unavailable as exc:
        rec = sanity.skipped(str(exc))
    except Exception as exc:  # informational: the run goes on without it
        import traceback  # noqa: PLC0415

        log.detail(traceback.format_exc())
        rec = sanity.skipped(f"failed ({type(exc).__name__}: {' '.join(str(exc).split())[:300]})")
    ctx.state.timings["step2_sanity"] = time.monotonic() - t
    for line in sanity.sanity_lines(rec):
        log.step(line)
    return rec
