"""probe.json, assembled from a RunContext and what the stage produced, and written last: its
presence means the run dir is complete."""

import dataclasses
import datetime
import math
import os
import time

from npu_probe.core import hfhub
from npu_probe.core.contract import PROBE_JSON, TOOL_NAME, probe_json
from npu_probe.core.env import environment
from npu_probe.core.npy import write_json
from npu_probe.reference.hf import reference_record
from npu_probe.run.kernels import compile_command, read_manifest
from npu_probe.run.model import tool_version
from npu_probe.run.outcome import Compiled


@dataclasses.dataclass(frozen=True)
class StageOutput:
    """What a stage adds to probe.json beside the context."""

    compiled: Compiled  # kernel_cache: what compile_all_kernels did
    tensors: dict  # {npu, ref, input}: tensor entries or None
    entries: list = None  # kernel_cache.entries, when not the manifest's (--emulate)
    kernels: list = None  # the ELFs block 0 ran, in order
    layers: dict = None
    ref_cache: dict = None  # reference.cache
    boundaries: dict = None
    step2_sanity: dict = None  # Step 2's padded-vs-original check (npu_probe.reference.step2_sanity), when it triggers


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def write_probe_json(ctx, out, stage, output):
    spec, model, state, facts, prompt = ctx.spec, ctx.model, ctx.state, ctx.facts, ctx.prompt
    tree, entry, compiled = spec.tree, model.entry, output.compiled
    entries, toolchain = read_manifest(spec.cache_dir)
    state.timings["total"] = time.monotonic() - state.t_start
    doc = probe_json(
        stage=stage,
        created_at=_now(),
        tool={"name": TOOL_NAME, "version": tool_version()},
        model={"name": tree.model, "dir": tree.rel(tree.model_dir), "hf_id": spec.hf_id, "config": model.cfg},
        prompt={
            "style": prompt.style, "text": prompt.text, "source": prompt.source, "token_ids": list(spec.tokens),
            "real_len": spec.real_len, "padded_len": spec.seq_len, "tokenizer": prompt.tokenizer,
            "positions": prompt.positions,
        },
        defaults=facts.defaults,
        integration={
            "path": entry.path,
            "entry": entry.entry,
            "runner": entry.kind,
            "reason": entry.reason,
            # The ELFs block 0 ran, in order; without that (config stage, adapter
            # runner) what the manifest holds, in its order.
            "kernels": output.kernels or entries,
            "tiles": {},
            "workarounds": list(facts.workarounds),
            "cpu_attn": bool(spec.cpu_attn),
            "step1": facts.step1,
            "step2": facts.step2,
            "coverage": facts.coverage,
            "defined_in": entry.defined_in(tree),
        },
        reference=dict(reference_record(state.ref_kind, spec.hf_id), cache=output.ref_cache,
                       hub_offline=hfhub.is_offline()),
        environment=environment(tree.air_root, toolchain, emulated=state.emulation is not None),
        timings={k: round(float(v), 4) for k, v in state.timings.items()},
        kernel_cache={
            "dir": tree.rel(spec.cache_dir),
            "key": None,
            "hit": compiled.hit,
            "seconds_saved": None,
            "entries": entries if output.entries is None else output.entries,
            "seq_len": spec.seq_len,
            "cpu_attn": bool(spec.cpu_attn),
            "toolchain": compiled.toolchain,
            "compile_command": compile_command(entry, spec.seq_len, spec.cpu_attn, model.adapter),
            "compiled": compiled.compiled,
            "reused": compiled.reused,
            "compile_seconds": None if compiled.seconds is None else round(float(compiled.seconds), 4),
            "manifest_loaded": compiled.manifest_loaded,
            "inputs": facts.compile_inputs,
        },
        tensors=output.tensors,
        bisect=None,
        layers=output.layers,
        boundaries=output.boundaries,
        emulate=_emulate_record(state, output),
        step2_sanity=output.step2_sanity,
    )
    path = os.path.join(out, PROBE_JSON)
    for where in _nonfinite_to_null(doc):
        # JSON has no NaN: the run dir is still written (and can be judged again), the value said here.
        ctx.log.step(f"{PROBE_JSON}: {where} is not finite; written as null")
    write_json(path, doc)  # last: its presence means complete
    ctx.log.step(f"wrote {path} (stage {stage}, {state.timings['total']:.1f}s)")
    return doc


def _emulate_record(state, output):
    """probe.json `emulate`: the probe's emulated runtime's, or a tree's own emulated NPU's (with the
    launches its block made), or None when an NPU ran."""
    if state.emulation is not None:
        return state.emulation.record()
    if state.own_emulation is not None:
        return dict(state.own_emulation, launches=len(output.kernels or []))
    return None


def _nonfinite_to_null(node, at=""):
    """Every NaN or Inf float in `node` (dicts and lists, in place) replaced by None; their paths."""
    found = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in list(items):
        where = f"{at}.{k}" if isinstance(node, dict) else f"{at}[{k}]"
        if isinstance(v, float) and not math.isfinite(v):
            node[k] = None
            found.append(f"{where.lstrip('.')} ({v})")
        else:
            found += _nonfinite_to_null(v, where)
    return found
