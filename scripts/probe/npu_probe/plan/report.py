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
    s2 = plan.get("step2")
    if s2:
        for t in s2["triggers"]:
            lines.append(f"step2 trigger {t['id']}: {t['detail']}")
        for t in s2["tree_does"]:
            lines.append(f"step2 tree: {t['detail']} ({t['evidence']})")
        if s2["prerequisite"]:
            lines.append(s2["prerequisite"])
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
    return lines


def _feature_text(key, value):
    if key == "norms":
        return f"{value['per_layer']} per layer"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "none" if value is None else str(value)
