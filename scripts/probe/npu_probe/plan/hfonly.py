"""`plan --hf-config PATH|ID`: Steps 1 and 2 before a line of the model's code exists, from an HF
config.json alone (a file, or a model id's snapshot in the local HF cache). The same rules as the
model-dir plan, fed by the config instead of the code: the kernel sequence the architecture implies
(npu_probe.plan.architecture.sequence), Step 1's decision with its breaks against llama's, Step 2's
triggers (npu_probe.plan.step2, with no tree to do anything yet), what else in the config a port must
handle, the GQA-aware padding plan (which phantom Q heads go where), and, with --air-root, the Phase 1
kernel rows the registry lacks for this model's shapes. Standard library only."""

import json
import os

from npu_probe.core.errors import ProbeError
from npu_probe.core.hfconfig import architecture as hf_architecture
from npu_probe.core.hfconfig import text_part, tree_fields
from npu_probe.core.hfhub import snapshot_config
from npu_probe.plan.architecture import LLAMA_SEQUENCE, breaks, sequence
from npu_probe.plan.coverage import launched, parse_registry
from npu_probe.plan.step2 import ALIGN, step2

SCHEMA = "npu-block-gate/plan-hf-config"
NEEDED = ("emb_dim", "hidden_dim", "n_heads", "n_kv_heads", "head_dim")


def load_config(source, environ=None):
    """(config.json dict, where it came from) for a path (file or dir) or a model id in the local HF cache."""
    if os.path.isfile(source):
        path = source
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as exc:
            raise ProbeError(path, f"not a readable config.json: {' '.join(str(exc).split())}") from exc
        if not isinstance(data, dict):
            raise ProbeError(path, "not a JSON object")
        return data, path
    if os.path.sep in source and not os.path.isdir(source) and source.count("/") != 1:
        raise ProbeError(source, "no such file")
    data, where = snapshot_config(source, environ)
    if data is None:
        raise ProbeError(source, f"neither a config.json nor a model in the local HF cache: {where}")
    return data, where


def features_from_config(hf, cfg):
    """{feature: {value, evidence}} as npu_probe.plan.architecture.features gives them, from the config
    alone (each evidence a config.json key)."""
    arch = hf_architecture(hf)
    c = text_part(hf)
    mtype = str(c.get("model_type") or hf.get("model_type") or "")
    sandwich = "sandwich_norms" in arch
    places = ["before attention (input_layernorm)"] + (
        ["after attention, before the residual add (post_attention_layernorm)", "before the FFN (pre_feedforward_layernorm)",
         "after the FFN, before the residual add (post_feedforward_layernorm)"] if sandwich
        else ["before the FFN (post_attention_layernorm)"])
    act = arch.get("activation", ("SwiGLU", "no hidden_act: llama's SwiGLU"))
    out = {
        "norms": {"value": {"per_layer": len(places), "places": places, "sandwich": sandwich},
                  "evidence": f"config.json {arch['sandwich_norms'][1]}" if sandwich else "llama's two pre-norms"},
        "activation": {"value": "GeGLU" if act[0] == "GeGLU" else "SwiGLU", "evidence": f"config.json {act[1]}"},
    }
    for key, what in (("qk_norm", "Q/K norm"), ("qkv_bias", "QKV bias")):
        on = bool(cfg.get(key))
        why = (f"config.json attention_bias={c.get('attention_bias')}" if key == "qkv_bias" and "attention_bias" in c
               else f"config.json model_type={mtype}" if on else f"no {what} in config.json (model_type={mtype or '?'})")
        out[key] = {"value": on, "evidence": why}
    win = arch.get("sliding_window")
    out["sliding_window"] = ({"value": win[0], "evidence": f"config.json {win[1]}"} if win
                             else {"value": None, "evidence": "none: every layer attends causally to all positions"})
    rot = arch.get("rotary_dim")
    out["rotary_dim"] = ({"value": rot[0], "evidence": f"config.json {rot[1]}"} if rot and rot[0] < cfg["head_dim"]
                         else {"value": None, "evidence": "full rotary: RoPE over every head dim"})
    return out


def padding_plan(cfg):
    """The seed's GQA-aware padding (as reference.step2_sanity builds it): emb_dim, hidden_dim and
    q_dim up to 1024 multiples, n_heads up to the fewest heads whose q_dim is aligned and that
    n_kv_heads divides; real Q head j of KV group k moves to k * g' + j, the phantom heads fill each
    group's tail, so every real head still reads its own K/V head. None when nothing needs padding."""
    up = lambda n: -(-int(n) // ALIGN) * ALIGN  # noqa: E731
    h, kv, d = cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]
    if cfg["emb_dim"] % ALIGN == 0 and cfg["hidden_dim"] % ALIGN == 0 and (h * d) % ALIGN == 0:
        return None
    hp = h
    while (hp * d) % ALIGN or hp % kv:
        hp += 1
    g, gp = h // kv, hp // kv
    groups = [{"kv_head": k, "real_q_heads": list(range(k * g, (k + 1) * g)),
               "slots": list(range(k * gp, k * gp + g)), "phantom_slots": list(range(k * gp + g, (k + 1) * gp))}
              for k in range(kv)]
    naive = sum(1 for i in range(h) if i // gp != i // g)
    return {"emb_dim": [cfg["emb_dim"], up(cfg["emb_dim"])], "hidden_dim": [cfg["hidden_dim"], up(cfg["hidden_dim"])],
            "n_heads": [h, hp], "q_dim": [h * d, hp * d], "group_size": [g, gp], "phantom_heads_per_group": gp - g,
            "groups": groups, "rmsnorm": f"the emb_dim RMSNorms take weight x sqrt({cfg['emb_dim']}/{up(cfg['emb_dim'])}) "
            f"and eps x {cfg['emb_dim']}/{up(cfg['emb_dim'])}",
            "naive_end_misrouted": naive}


def config_facts(hf, cfg, feat):
    """What else in the config a port must handle (Step 2's wider list): GQA groups, tied embeddings,
    sliding window, partial rotary."""
    c = text_part(hf)
    out = [{"id": "gqa", "detail": f"{cfg['n_heads']} Q heads over {cfg['n_kv_heads']} KV heads: group size "
            f"{cfg['n_heads'] // cfg['n_kv_heads']}" + ("" if cfg['n_heads'] % cfg['n_kv_heads'] == 0 else " (not whole!)")}]
    tied = c.get("tie_word_embeddings", hf.get("tie_word_embeddings"))
    if tied:
        out.append({"id": "tied_embeddings", "detail": "tie_word_embeddings=true: the LM head is the embedding table"})
    if feat["sliding_window"]["value"]:
        out.append({"id": "sliding_window", "detail": feat["sliding_window"]["evidence"]})
    if feat["rotary_dim"]["value"]:
        out.append({"id": "partial_rotary", "detail": f"RoPE over {feat['rotary_dim']['value']} of "
                    f"{cfg['head_dim']} dims ({feat['rotary_dim']['evidence']})"})
    return out


def missing_rows(cfg, air_root, seq=2048, cpu_attn=False):
    """Phase 1: the kernels block 0 would launch whose shape the tree's registry has no row for
    (None without a tree)."""
    if not air_root:
        return None
    path = os.path.join(air_root, "programming_examples", "kernel_registry", "supported_kernels.md")
    rows = parse_registry(path)
    if rows is None:
        raise ProbeError(path, "no kernel registry there (--air-root must be the mlir-air repo root)")
    have = {r["key"] for r in rows}
    return [{"kernel": label, "shape": repr(key[1:]) if len(key) > 2 else repr(key[1])}
            for label, key in launched(cfg, seq, cpu_attn) if key not in have]


def plan_from_config(source, air_root=None, environ=None):
    hf, where = load_config(source, environ)
    cfg = tree_fields(hf)
    lacking = [k for k in NEEDED if not isinstance(cfg.get(k), int) or cfg[k] <= 0]
    if lacking:
        raise ProbeError(where, f"the config states no {', '.join(lacking)} (hidden_size, intermediate_size, "
                         "num_attention_heads, num_key_value_heads)")
    cfg.setdefault("qkv_bias", False)
    cfg.setdefault("qk_norm", False)
    feat = features_from_config(hf, cfg)
    seq = sequence(feat)
    brk = breaks(feat, [])
    path = "inheritance" if seq == LLAMA_SEQUENCE and not brk else "kernel-first"
    ops = sorted({b["op"] for b in brk})
    why = ("the kernel sequence matches llama's: reuse llama32_1b's block and ELFs" if path == "inheritance"
           else f"the kernel sequence differs from llama's ({', '.join(ops) or 'see model_sequence'})")
    s2 = step2(None, cfg, [], None)
    s2["config_facts"] = config_facts(hf, cfg, feat)
    s2["padding_plan"] = padding_plan(cfg)
    return {"schema": SCHEMA, "schema_version": 1, "config": {"source": where, **cfg},
            "step1": {"llama_sequence": list(LLAMA_SEQUENCE), "model_sequence": seq, "matches": seq == LLAMA_SEQUENCE,
                      "breaks": brk, "architecture": feat, "path": path, "path_why": why},
            "step2": s2, "coverage": {"missing": missing_rows(cfg, air_root), "seq_len": 2048}}


def lines(plan):
    s1, s2 = plan["step1"], plan["step2"]
    out = [f"config: {plan['config']['source']} (no model dir: Steps 1 and 2 before the model's code exists)",
           f"kernel sequence: {' -> '.join(s1['model_sequence'])}",
           f"Step 1: {s1['path']}: {s1['path_why']}"]
    out += [f"  break ({b['rule']}) {b['op']}: {b['detail']}" for b in s1["breaks"]]
    out.append("Step 2 triggers: " + (", ".join(t["id"] for t in s2["triggers"]) or "none"))
    out += [f"  {t['id']}: {t['detail']}" for t in s2["triggers"]]
    out += [f"  {f['id']}: {f['detail']}" for f in s2["config_facts"]]
    pad = s2["padding_plan"]
    if pad:
        out.append(f"padding plan (GQA-aware): n_heads {pad['n_heads'][0]} -> {pad['n_heads'][1]}, q_dim {pad['q_dim'][0]} -> "
                   f"{pad['q_dim'][1]}, emb_dim {pad['emb_dim'][0]} -> {pad['emb_dim'][1]}, hidden_dim "
                   f"{pad['hidden_dim'][0]} -> {pad['hidden_dim'][1]}; {pad['phantom_heads_per_group']} phantom Q heads "
                   f"at the end of each KV group (naive end-padding would misroute {pad['naive_end_misrouted']} real heads)")
        out += [f"  KV head {g['kv_head']}: real Q heads {g['real_q_heads']} -> slots {g['slots']}, phantom slots "
                f"{g['phantom_slots']}" for g in pad["groups"]]
    miss = plan["coverage"]["missing"]
    if miss is None:
        out.append("Phase 1 coverage: give --air-root to list the kernel rows the registry lacks")
    else:
        out.append("Phase 1 kernel rows the registry lacks: " + (", ".join(f"{m['kernel']} {m['shape']}" for m in miss) or "none"))
    return out
