"""The plan for people: one line per finding (the refusal first), and the exit code."""

from npu_probe.core.contract import EXIT_BAD_INPUT as EXIT_REFUSED  # a model Phase 2 cannot run on
from npu_probe.core.contract import EXIT_OK
from npu_probe.plan.config import CONFIG_FIELDS


def plan_exit_code(plan):
    """2 when Phase 2 is refused here or the tree itself is broken, else 0."""
    if plan.get("refusal"):
        return EXIT_REFUSED
    if any(f["status"] == "fail" and f["kind"] == "tree" for f in plan.get("preflight", [])):
        return EXIT_REFUSED
    return EXIT_OK


def plan_lines(plan):
    """Human-readable report, one finding per line (the refusal reason first)."""
    lines = []
    if plan.get("refusal"):
        r = plan["refusal"]
        lines.append(r["reason"] + (f"; Phase 2 needs {r['needs']}" if r.get("needs") else ""))
    m = plan["model"]
    lines.append(f"plan: {m['name']} ({m['dir']}){' [emulated]' if plan['emulated'] else ''}")
    cfg = plan.get("config")
    if cfg:
        lines.append("config: " + ", ".join(f"{k}={cfg[k]}" for k in CONFIG_FIELDS + ("qkv_bias", "qk_norm"))
                     + f" ({plan['config_source']})")
    else:
        lines.append("config: not resolved statically")
    d = plan["defaults"]
    attn = "CPU" if d["cpu_attn"] else "NPU"
    model = (f"model {d['model_choice']} -> {d['model_id']} ({d['model_choice_source']})"
             if d["model_choice"] is not None else "no model choice (no --model, no DEFAULT_MODEL)")
    lines.append(f"make diagnosis: prompt {d['prompt']!r} ({d['prompt_source']}); {model}; "
                 f"{attn} attention ({d['cpu_attn_source']})")
    for o in plan.get("overrides", []):
        lines.append(f"override: {o}")
    if plan.get("refusal"):
        lines.append(f"needs: {plan['refusal']['needs']}")
    s1 = plan["step1"]
    blk = s1.get("block")
    home = s1.get("defined_in") or {}
    where = (f"{blk['function']} ({blk['file']}:{blk['line']}, {blk['where']}"
             + (f", defined in {home['model']}" if home.get("model") else "") + ")") if blk else "no block function"
    seq = {True: "matches llama's", False: "differs from llama's"}.get(s1.get("matches"), "unknown")
    lines.append(f"step1: path {s1['path']} ({s1.get('path_why') or 'kernel sequence ' + seq}); block {where}")
    arch = s1.get("architecture")
    if arch:
        lines.append("step1 architecture: " + "; ".join(f"{k} {_feature_text(k, v['value'])} ({v['evidence']})"
                                                        for k, v in arch.items()))
        lines.append("step1 kernel sequence: " + " -> ".join(s1["model_sequence"]))
    for b in s1.get("breaks", []):
        lines.append(f"step1 break ({b['rule']}) {b.get('op', '')}: {b['detail']}".replace(") :", "):"))
    lines.extend(_step2_lines(plan.get("step2"), cfg))
    cov = plan["coverage"]
    lines.append(f"coverage: {len(cov['registry_rows'])} registry rows name the model; {len(cov['wired'])} block "
                 f"kernels have a registry row, {len(cov['unregistered'])} have none; {len(cov['unwired'])} verified "
                 f"rows are not wired into the block ({len(cov.get('outside_block', []))} more are decode/LM head)")
    for r in cov["unwired"]:
        lines.append(f"coverage: not wired: {r['section']} {r['shape']} ({r['used_by']}): {r['reason']}")
    kc = plan["kernel_cache"]
    env = ", ".join(f"{k}={'set' if v else 'unset'}" for k, v in kc["inputs"]["env"].items())
    lines.append(f"kernel cache: {kc['dir']} (build dir {kc['build_dir']}); {len(kc['inputs']['files'])} input "
                 f"files; env {env or 'none'}"
                 + (f"; other models {', '.join(kc['inputs']['models'])}" if kc["inputs"]["models"] else ""))
    for f in plan["preflight"]:
        fix = f" (fix: {f['fix']})" if f["fix"] and f["status"] != "ok" else ""
        lines.append(f"{f['status'].upper()} {f['id']} [{f['kind']}]: {f['message']}{fix}")
    lines.append(summary_line(plan))
    return lines


def _step2_lines(s2, cfg):
    """Step 2 always has a line: its triggers and what the tree does, or that nothing triggers."""
    if not s2:
        return ["step2: not planned (no config resolved statically)"]
    out = [f"step2 trigger {t['id']}: {t['detail']}" for t in s2["triggers"]]
    if not s2["triggers"]:
        dims = f"emb_dim {cfg['emb_dim']} and hidden_dim {cfg['hidden_dim']} are 1024-aligned; " if cfg else ""
        out.append(f"step2: no workaround triggers ({dims}no qkv_bias): nothing to carry into Phases 4/5")
    out += [f"step2 tree: {t['detail']} ({t['evidence']})" for t in s2["tree_does"]]
    if s2["prerequisite"]:
        out.append(s2["prerequisite"])
    return out


def summary_line(plan):
    """The last line: ready or not, and why, in one line (the lines above read as a checklist)."""
    name = plan["model"]["name"]
    if plan.get("refusal"):
        return f"summary: Phase 2 cannot run on {name}: {plan['refusal']['reason']}"
    fails = [f for f in plan.get("preflight", []) if f["status"] == "fail"]
    tree = [f["id"] for f in fails if f["kind"] == "tree"]
    env = [f["id"] for f in fails if f["kind"] != "tree"]
    if tree:
        return f"summary: not ready: the tree needs fixing first ({', '.join(tree)}; the FAIL lines above say how)"
    if env:
        return (f"summary: not ready on this machine: {len(env)} check{'s' if len(env) > 1 else ''} fail here "
                f"({', '.join(env)}); the tree itself is ready for Phase 2 (step1 path {plan['step1']['path']}): "
                "fix those (the FAIL lines above say how), or run check on an NPU host that has them")
    return f"summary: ready: every check passes; check runs block 0 on this machine (step1 path {plan['step1']['path']})"


def _feature_text(key, value):
    if key == "norms":
        return f"{value['per_layer']} per layer"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "none" if value is None else str(value)
