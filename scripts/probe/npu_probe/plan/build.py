"""The Phase 2 plan of one model (`make_plan`): which config and prompt `make diagnosis` uses,
which tree files and packages the run imports (and whether this Python can parse them), whether
there is an NPU and a warm HF cache, the seed's Steps 1 and 2, Phase 1 registry coverage, what
the kernel cache depends on, and whether Phase 2 can run for this model at all.

Standard library only; no module of the tree is imported."""

import ast
import os
import re
import sys

from npu_probe.core.contract import MAX_SEQ_DEFAULT as DEFAULT_SEQ_LEN  # the production prefill ELFs' length
from npu_probe.core.contract import PLAN_SCHEMA, PLAN_SCHEMA_VERSION
from npu_probe.plan.block import find_block
from npu_probe.plan.closure import import_closure, missing_imports
from npu_probe.plan.architecture import features
from npu_probe.plan.context import Ctx
from npu_probe.plan.coverage import coverage
from npu_probe.plan.defaults import apply_overrides, read_defaults
from npu_probe.plan.finding import finding
from npu_probe.plan.kernel_cache import kernel_cache
from npu_probe.plan.preflight import preflight_device, preflight_hf_cache, preflight_packages, preflight_python
from npu_probe.plan.refusal import refusal
from npu_probe.plan.request import Host
from npu_probe.plan.sources import config_findings, resolve
from npu_probe.plan.static.parse import read_text
from npu_probe.plan.step1 import step1
from npu_probe.plan.step2 import step2, tree_does_step2


EMULATED_MARKER = "AIR_MINI"


def make_plan(request, host=None):
    """The static Phase 2 plan for one model (see module docstring): `request` a PlanRequest,
    `host` the machine (default: this one). Raises ProbeError on a bad layout (no llms dir,
    no verify/, no verify_adapter.py)."""
    host = host or Host()
    environ = host.env()
    ctx = Ctx(request.model_dir, request.air_root, environ)
    pyver = host.python()
    emulate_npu = request.emulate_npu
    emulated = os.path.isfile(os.path.join(ctx.air_root, EMULATED_MARKER))
    findings = []

    roots = [ctx.adapter] + [p for p in (ctx.model_file("prefill"), ctx.model_file("weights"),
                                         ctx.model_file("inference")) if p]
    hf_runner = os.path.join(ctx.verify_dir, "runners", "hf_runner.py")
    roots.append(hf_runner)
    closure, packages, extra = import_closure(ctx, roots)
    ctx.extra_path = extra

    defaults, choices = read_defaults(ctx)
    eff, overrides = apply_overrides(ctx, defaults, choices, request)
    cfg, cfg_source, cfg_why, cfg_record, hf_raw = resolve(ctx, eff["model_id"], environ, emulated=bool(emulate_npu))
    if cfg is None:
        findings.append(finding("config", "warn", "tree", f"model config not resolved statically: {cfg_why}",
                                "give verify_adapter.build_config() a plain `return <Config>()` of a dataclass "
                                "with literal defaults"))
    findings += config_findings(cfg_record)
    seq = int(request.seq_len) if request.seq_len else _declared_seq_len(ctx) or DEFAULT_SEQ_LEN

    block, compile_ = find_block(ctx)
    does, block_path = tree_does_step2(ctx, block, compile_)
    feat = features(ctx, cfg, hf_raw, block["_path"] if block else None)
    if cfg is not None:  # a flag the config left unset but the model's own code shows
        cfg_record["from_code"] = [k for k in ("qkv_bias", "qk_norm") if feat[k]["value"] and not cfg[k]]
        cfg.update({k: True for k in cfg_record["from_code"]})
    s1 = step1(ctx, feat, (block, compile_), does, findings)
    s2 = step2(ctx, cfg, does, block_path)
    refused = refusal(ctx, cfg, cfg_why, choices)

    # Preflight: environment first, then what the tree itself says.
    pre, unparsed = preflight_python(ctx, closure, pyver)
    hf_text = read_text(hf_runner) or ""
    reference_real = not emulated and bool(re.search(r"^\s*(from|import)\s+transformers\b", hf_text, re.MULTILINE))
    pre += preflight_packages(packages, reference_real, emulate_npu)
    missing = missing_imports(ctx, packages)
    for name, path, line in missing:  # a deleted or renamed file the run still imports
        pre.append(finding("tree-import", "fail", "tree",
                           f"{ctx.where(path, line)} imports {name}, which is neither a tree file nor an "
                           "installed package (a deleted or renamed file?)",
                           "restore the file or fix the import"))
    pre.append(preflight_device(host.device_glob, emulated, emulate_npu))
    if not emulated:
        pre.append(preflight_hf_cache(eff["model_id"], environ))
    if not os.path.isfile(hf_runner):
        pre.append(finding("hf-runner", "fail", "tree", f"{ctx.rel(hf_runner)} missing: no HF bf16 reference",
                           "restore verify/runners/hf_runner.py"))
    kc = kernel_cache(ctx, compile_, seq)
    adapter_dir = kc.get("adapter_dir")
    if os.path.isfile(os.path.join(ctx.model_dir, "Makefile")) and adapter_dir and adapter_dir != kc["dir"] \
            and adapter_dir.endswith("/prefill_kernel_cache"):
        findings.append(finding(
            "kernel-cache-dir", "warn", "tree",
            f"block 0 compiles into {kc['dir']} as make does ({kc['build_dir_source']}), but the verify adapter's "
            f"runner (used by --layers) opens {adapter_dir}",
            "set PEANO_INSTALL_DIR (make then uses build_peano, the adapter's dir too)"))
    pre += findings

    return {
        "schema": PLAN_SCHEMA,
        "schema_version": PLAN_SCHEMA_VERSION,
        "model": {"name": ctx.model, "dir": ctx.rel(ctx.model_dir), "air_root": ctx.air_root},
        "emulated": emulated,
        "emulate_npu": bool(emulate_npu),
        "config": cfg,
        "config_source": cfg_source,
        "config_sources": cfg_record,
        "defaults": defaults,
        "effective": {"prompt": eff["prompt"], "prompt_source": eff["prompt_source"],
                      "model_choice": eff["model_choice"], "model_id": eff["model_id"],
                      "cpu_attn": eff["cpu_attn"], "seq_len": seq},
        "overrides": overrides,
        "python": {"version": pyver, "executable": sys.executable if host.python_version is None else None},
        "hf_offline": not request.online,
        "imports": {"files": sorted(ctx.rel(p) for p in closure), "packages": sorted(p for p in packages if not p.startswith(".")),
                    "unresolved": [{"module": n, "file": ctx.rel(p), "line": ln} for n, p, ln in missing],
                    "unparsed": unparsed},
        "preflight": pre,
        "step1": s1,
        "step2": s2,
        "coverage": coverage(ctx, cfg, choices, seq, eff["cpu_attn"]),
        "refusal": refused,
        "kernel_cache": kc,
    }


def _declared_seq_len(ctx):
    """PREFILL_SEQ_LEN when the adapter declares it as a literal (air-mini does)."""
    info = ctx.info(ctx.adapter)
    if info and "PREFILL_SEQ_LEN" in info.assigns:
        try:
            v = ast.literal_eval(info.assigns["PREFILL_SEQ_LEN"][0])
            return v if isinstance(v, int) and v > 0 else None
        except ValueError:
            return None
    return None
