"""The HF bf16 layer-0 reference, the way verify_runner gets it: HfRunner in diagnosis mode
(lite_mode=False) on the run's tokens, layer_intermediates[0]["ffn_out"]; and the shape checks
the gate needs of both sides."""

import os
import re
import sys
import time

import numpy as np

from npu_probe.core.call import call_tree, copy_f32, filter_kwargs, missing_required
from npu_probe.core.errors import ProbeError
from npu_probe.core.tree import import_tree_module

HF_RUNNER_MODULE = "runners.hf_runner"
HF_RUNNER_ENTRY = "verify.runners.hf_runner.HfRunner"
# A tree that emulates the reference (examples/air-mini) says so with this file
# at its root, or its hf_runner simply never imports transformers.
EMULATION_MARKERS = ("AIR_MINI", ".air-mini")


def hf_runner_path(tree):
    return os.path.join(tree.verify_dir, "runners", "hf_runner.py")


def reference_kind(tree):
    """'emulated' for a tree that says it emulates (marker) or whose HfRunner does
    not import transformers; 'hf-bf16' otherwise. Read from source so `config`
    need not import torch."""
    if any(os.path.exists(os.path.join(tree.air_root, m)) for m in EMULATION_MARKERS):
        return "emulated"
    try:
        with open(hf_runner_path(tree), encoding="utf-8") as f:
            src = f.read()
    except OSError:
        return "hf-bf16"  # the import will fail later with the real reason
    if re.search(r"^\s*(from\s+transformers\b|import\s+transformers\b)", src, re.M):
        return "hf-bf16"
    return "emulated"


def package_version(name):
    # Imported here: importlib.metadata costs every probe run ~12 ms, and only an HF reference asks.
    import importlib.metadata
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    except Exception:  # broken metadata must not sink the run
        return None


def reference_record(kind, hf_id):
    real = kind == "hf-bf16"
    return {
        "kind": kind,
        "runner": HF_RUNNER_ENTRY,
        "lite_mode": False,
        "dtype": "bf16",
        "model_id": hf_id,
        "transformers": package_version("transformers") if real else None,
        "torch": package_version("torch") if real else None,
    }


def run_reference(ctx, capture=False):
    """Layer-0 ffn_out from HfRunner in diagnosis mode, as float32 (real_len rows), for the
    run's spec and model (a RunContext). Returns (array, seconds, kind-as-observed, the whole
    PrefillRecord, captured): `--layers` takes every layer from the same record rather than
    running the reference twice. With `capture` (a real HF reference), the probe builds the HF
    model itself (or takes the adapter's build_hf_model), hooks layer 0
    (npu_probe.lens.hf_capture) and passes it as HfRunner(..., model=m); `captured` is
    {"boundaries": {name: float32 [real_len, cols]}, "missing": {name: why}} (None
    without capture)."""
    spec, log = ctx.spec, ctx.log
    mod = import_tree_module(HF_RUNNER_MODULE, "verify/runners/hf_runner.py (import)")
    HfRunner = getattr(mod, "HfRunner", None)
    if HfRunner is None:
        raise ProbeError(hf_runner_path(spec.tree), "no HfRunner class")
    t = time.monotonic()
    hf_model = _adapter_hf_model(ctx)
    hooks = None
    if capture:
        from npu_probe.lens.hf_capture import Layer0Hooks, build_model  # noqa: PLC0415 - torch only here

        if hf_model is None:
            log.step(f"building the HF model ({spec.hf_id}) in the probe, to hook layer 0 for the lens")
            hf_model = call_tree(f"AutoModelForCausalLM.from_pretrained({spec.hf_id})", build_model, spec.hf_id)
        hooks = Layer0Hooks(hf_model)
    log.step(f"running the bf16 reference ({spec.hf_id}) on {len(spec.tokens)} tokens")
    runner = call_tree(
        "HfRunner",
        HfRunner,
        model_name=spec.hf_id,
        config=ctx.model.config,
        max_seq=spec.seq_len,
        lite_mode=False,
        model=hf_model,
    )
    if hooks is not None:
        with hooks:
            rec = call_tree("HfRunner.prefill", runner.prefill, np.asarray(spec.tokens, dtype=np.int64))
    else:
        rec = call_tree("HfRunner.prefill", runner.prefill, np.asarray(spec.tokens, dtype=np.int64))
    try:
        out = rec.layer_intermediates[0]["ffn_out"]
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise ProbeError(hf_runner_path(spec.tree), f"prefill record has no layer_intermediates[0]['ffn_out'] ({exc})") from exc
    ref = copy_f32(out)
    if not np.isfinite(ref).all():
        # Named here (the judge then says "the reference is broken"): which checkpoint tensor is the cause.
        from npu_probe.reference.finite import describe  # noqa: PLC0415

        model = hf_model if hf_model is not None else getattr(runner, "model", None)
        log.step(f"the bf16 reference holds {int((~np.isfinite(ref)).sum())} NaN/Inf values: {describe(model, spec.hf_id)}")
    seconds = time.monotonic() - t
    observed = "hf-bf16" if "transformers" in sys.modules else "emulated"
    captured = None
    if hooks is not None:
        bounds = dict(hooks.captured)
        bounds["ffn_out"] = ref
        captured = {"boundaries": bounds, "missing": dict(hooks.missing), "fp32": _fp32(ctx, hf_model)}
    return ref, seconds, observed, rec, captured


def _fp32(ctx, hf_model):
    """The FP32 side of the error budget from the same model and tokens ({name: array}), or None."""
    from npu_probe.reference.fp32 import run_fp32  # noqa: PLC0415 - torch only here

    spec = ctx.spec
    ctx.log.step("running HF layer 0 in FP32 (same weights, same tokens) for the error budget")
    try:
        got = run_fp32(hf_model, spec.tokens, spec.real_len)
    except Exception as exc:  # informational: the run goes on without it
        import traceback  # noqa: PLC0415

        ctx.log.detail(traceback.format_exc())
        ctx.log.step(f"error budget: HF layer 0 in FP32 failed ({type(exc).__name__}: {exc}); not measured")
        return None
    if got is None:
        ctx.log.step("error budget: no decoder layer 0 to run in FP32; not measured")
        return None
    _, bounds, _, seconds = got
    ctx.state.timings["ref_fp32"] = seconds
    return bounds


def _adapter_hf_model(ctx):
    """The adapter's own build_hf_model(...), when it has one with verify_runner's keywords; else None."""
    model, spec = ctx.model, ctx.spec
    tree, adapter = spec.tree, model.adapter
    build = getattr(adapter, "build_hf_model", None)
    offered = {"npu_model_name": spec.model_name, "hf_ref_model": spec.hf_id, "config": model.config}
    missing = missing_required(build, offered) if callable(build) else []
    if callable(build) and missing:
        # verify_runner calls build_hf_model(npu_model_name=, hf_ref_model=, config=);
        # a hook with another signature would crash it too. Say so, use the plain reference.
        ctx.log.step(
            f"warning: {tree.model}.verify_adapter.build_hf_model needs {', '.join(missing)}, not the "
            "verify_runner contract (npu_model_name, hf_ref_model, config); not using it"
        )
        return None
    if callable(build):
        ctx.log.step("building the adapter's custom HF reference model")
        return call_tree(
            f"{tree.model}.verify_adapter.build_hf_model",
            build,
            **filter_kwargs(build, offered),
        )
    return None


def check_layer_shapes(npu_layers, ref_layers):
    """Each layer's NPU and reference ffn_out must have one shape (exit 2, naming the layer)."""
    for li in sorted(set(npu_layers) & set(ref_layers)):
        a, b = npu_layers[li], ref_layers[li]
        if a.shape != b.shape:
            raise ProbeError(
                f"layer {li}",
                f"NPU ffn_out has shape {list(a.shape)}, reference has {list(b.shape)}",
            )


def check_shapes(tree, npu, ref, real_len, emb_dim, entry_name):
    """Bad shapes are bad input (exit 2): the gate cannot judge them."""
    ref_path = hf_runner_path(tree)
    if ref.ndim != 2:
        raise ProbeError(ref_path, f"reference layer-0 ffn_out has shape {list(ref.shape)}, expected 2-D (rows, {emb_dim})")
    if ref.shape[0] != real_len:
        raise ProbeError(ref_path, f"reference has {ref.shape[0]} rows, expected real_len {real_len}")
    if ref.shape[1] != emb_dim:
        raise ProbeError(ref_path, f"reference has {ref.shape[1]} columns, expected emb_dim {emb_dim}")
    if npu.ndim != 2:
        raise ProbeError(entry_name, f"NPU block output has shape {list(npu.shape)}, expected 2-D (rows, {emb_dim})")
    if npu.shape[1] != ref.shape[1]:
        raise ProbeError(entry_name, f"NPU output has {npu.shape[1]} columns, reference has {ref.shape[1]}")
    if npu.shape[0] < real_len:
        raise ProbeError(entry_name, f"NPU output has {npu.shape[0]} rows, fewer than real_len {real_len}")


def record_boundaries(rec, ref):
    """An emulated reference's layer-0 boundaries from its own record: the lens names its
    layer_intermediates[0] holds besides ffn_out (float32 [real_len, features]), as the lens's HF
    side; None when it holds none (a real HfRunner records only ffn_out)."""
    from npu_probe.core.contract import RECORD_CAPTURE  # noqa: PLC0415
    from npu_probe.emulate.table import boundary_order  # noqa: PLC0415

    try:
        layer0 = rec.layer_intermediates[0]
    except (AttributeError, IndexError, KeyError, TypeError):
        return None
    order = boundary_order()
    found = {}
    for name, arr in (layer0.items() if isinstance(layer0, dict) else []):
        if name == "ffn_out" or name not in order or not hasattr(arr, "shape") or len(arr.shape) != 2:
            continue
        found[name] = copy_f32(arr)
    if not found:
        return None
    found["ffn_out"] = ref
    return {"boundaries": found, "missing": {}, "capture": RECORD_CAPTURE}
