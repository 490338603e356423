"""The config stage: everything block 0 needs, resolved once into a RunContext.

`open_run` imports the tree (adapter, block modules), builds the config, picks the prompt,
tokens, seq_len, attention mode and block entry, with the plan's `make diagnosis` defaults
where the user gave nothing, and freezes them into the RunSpec (npu_probe.core.context).
"""

import os
import re
import time

from npu_probe.core.call import default_of
from npu_probe.core.context import Model, PlanFacts, PromptRecord, RunContext, RunSpec, RunState, Started
from npu_probe.core.contract import MAX_SEQ_DEFAULT
from npu_probe.core.errors import ProbeError
from npu_probe.core.tree import canonical_prompt, config_summary, detect_workarounds, emulates_npu, resolve_tree
from npu_probe.emulate.own import start_own
from npu_probe.reference.hf import reference_kind
from npu_probe.reference.positions import Prompt, extend_tokens
from npu_probe.reference.tokens import tokenize
from npu_probe.run.block import choose_seq_len, declared_seq_len
from npu_probe.run.entry import choose_entry, load_block_modules
from npu_probe.run.kernels import build_dir, kernel_cache_dir
from npu_probe.run.model import model_names, open_model


def _plan_part(plan, key):
    return (plan or {}).get(key) or {}


def open_run(opts, log, plan=None, started=Started()):
    """The config stage for Options `opts`: resolve and import everything block 0 needs
    (nothing compiles). `plan` is the static plan the run was gated on."""
    t = time.monotonic()
    tree = resolve_tree(opts.model_dir, opts.air_root)
    log.step(f"tree {tree.air_root}, model {tree.model}")
    adapter, adapter_name, config, cfg = open_model(tree)
    diag = _plan_part(plan, "defaults")
    choice = opts.hf_model or diag.get("model_choice") or getattr(adapter, "DEFAULT_MODEL", None)
    model_name, hf_id = model_names(adapter, adapter_name, choice, tree)
    log.step(f"config: {cfg['n_layers']} layers, emb_dim {cfg['emb_dim']}, head_dim {cfg['head_dim']}; "
             f"weights {model_name}, reference {hf_id}")

    if opts.prompt is None and opts.prompt_style is None and diag.get("prompt"):
        prompt, source = diag["prompt"], diag.get("prompt_source") or "make diagnosis"
        from_set = re.match(r"verify/prompts/([A-Za-z0-9_.-]+)\.txt:", source)
        style = from_set.group(1) if from_set else "diagnosis"
    else:
        style = opts.prompt_style or "instruct"
        prompt, source = canonical_prompt(tree, style, opts.prompt)
    config_changes, config_source = {}, None
    if opts.inject is not None and not opts.emulate:
        raise ProbeError("--inject", "needs --emulate (bugs are injected into the emulated NPU's twins)")
    own_npu = emulates_npu(tree)  # air-mini: --emulate runs the tree's own emulated NPU, as it is
    if opts.emulate and not own_npu:
        config_changes, config_source, cfg = _emulated_config(opts, tree, (config, cfg, hf_id), log)
    tokens, tokenizer_label, tokenizer = tokenize(tree, adapter, model_name, prompt)
    prefill_mod, inference_mod = load_block_modules(tree)
    max_seq = int(getattr(adapter, "MAX_SEQ", None) or getattr(prefill_mod, "MAX_SEQ", None) or MAX_SEQ_DEFAULT)
    positions = None
    if opts.positions is not None:
        encode = _encoder(tree, adapter, model_name, tokenizer)
        limit = max_seq if opts.seq_len is None else min(max_seq, opts.seq_len)
        tokens, positions = extend_tokens(tree, encode, Prompt(prompt, style, tokens), opts.positions, limit)
        log.step(f"positions: {positions['real_len']} real tokens ({positions['method']})")
    if len(tokens) > max_seq:
        log.step(f"prompt has {len(tokens)} tokens; truncating to max_seq {max_seq} as verify_runner does")
        tokens = tokens[:max_seq]
    declared = declared_seq_len(adapter, prefill_mod)
    seq_len, seq_why = choose_seq_len(len(tokens), opts.seq_len, max_seq, declared if declared[0] else None)
    log.step(f"prompt {source}: {len(tokens)} tokens, padded to {seq_len} ({seq_why})")

    step1 = _plan_part(plan, "step1") or None
    entry = choose_entry(tree.model, adapter, adapter_name, prefill_mod, (inference_mod, adapter), step1)
    cpu_attn = _cpu_attn(opts, diag, tree, entry)
    attn = "CPU" if cpu_attn else ("emulated NPU (twin)" if opts.emulate else "NPU")
    log.step(f"integration {entry.path}: {entry.entry} ({entry.kind}, {attn} attention)")
    workarounds = _workarounds(cfg, plan)
    for w in workarounds:
        log.step(f"workaround trigger {w['id']}: {w['detail']}")
    defaults = {"make_diagnosis": {k: diag.get(k) for k in ("prompt", "model_choice", "cpu_attn")},
                "differs": list((plan or {}).get("overrides") or [])}
    for line in defaults["differs"]:
        log.step(f"differs from make diagnosis: {line}")
    spec = RunSpec(tree=tree, model_name=model_name, hf_id=hf_id, tokens=tuple(tokens), seq_len=seq_len,
                   cpu_attn=cpu_attn, cache_dir=kernel_cache_dir(tree, plan), build_dir=build_dir(tree, plan),
                   boundaries=opts.boundaries, twins=_twins(opts, hf_id, log))
    model = Model(adapter=adapter, adapter_name=adapter_name, config=config, cfg=cfg, entry=entry,
                  prefill_mod=prefill_mod, inference_mod=inference_mod, tokenizer=tokenizer)
    ctx = RunContext(options=opts, spec=spec, model=model, state=RunState(ref_kind=reference_kind(tree), t_start=t),
                     log=log, prompt=PromptRecord(text=prompt, source=source, style=style, tokenizer=tokenizer_label,
                                                  positions=positions),
                     facts=PlanFacts.of(plan, defaults, workarounds))
    if own_npu:
        ctx.state.own_emulation = start_own(opts.emulate, opts.inject, log)
    elif opts.emulate:
        _start_emulation(ctx, config_changes, config_source)
    ctx.state.timings["config"] = time.monotonic() - t
    if started.plan_seconds is not None:
        ctx.state.timings["plan"] = started.plan_seconds
    if started.t0 is not None:
        ctx.state.t_start = started.t0  # total: from the probe's start, plan included
    return ctx


def _emulated_config(opts, tree, model, log):
    """--emulate: the config's dimensions from the checkpoint. `model` is (config, cfg, hf_id);
    returns (changes, source, the probe.json config record)."""
    from npu_probe.emulate.checkpoint import config_from_checkpoint  # noqa: PLC0415
    from npu_probe.emulate.twins import check_injection  # noqa: PLC0415

    config, cfg, hf_id = model
    check_injection(opts.inject)
    if opts.layers:
        raise ProbeError("--layers", "cannot run with --emulate (the adapter's runner compiles its own kernels)")
    config_changes, config_source = config_from_checkpoint(config, hf_id)
    if config_changes:
        cfg = config_summary(config, os.path.join(tree.model_dir, "verify_adapter.py"))
        log.step("emulate: config from " + str(config_source) + ": "
                 + ", ".join(f"{k} {v[0]} -> {v[1]}" for k, v in config_changes.items()))
    return config_changes, config_source, cfg


def _twins(opts, hf_id, log):
    """How the CPU twins compute: --twin-precision, and with --twin-eps config the checkpoint's eps."""
    from npu_probe.emulate.numerics import Numerics  # noqa: PLC0415 - numpy

    if opts.twin_eps == "config":
        from npu_probe.emulate.checkpoint import checkpoint_eps  # noqa: PLC0415

        eps, where = checkpoint_eps(hf_id)
        log.step(f"emulate: the twins' RMSNorm eps is the config's {eps:g} ({where}), not the ELFs' own")
        return Numerics(precision=opts.twin_precision, rms_eps=eps, qk_eps=eps, eps_from="config")
    return Numerics(precision=opts.twin_precision)


def _start_emulation(ctx, config_changes, config_source):
    from npu_probe.emulate.emulation import start as start_emulation  # noqa: PLC0415
    from npu_probe.emulate.table import model_spec  # noqa: PLC0415

    tree, inject = ctx.spec.tree, ctx.options.inject
    emulation = start_emulation(tree, ctx.model.config, model_spec(tree.model), inject, (ctx.spec.real_len, ctx.spec.twins))
    emulation.config_changes, emulation.config_source = config_changes, config_source
    ctx.state.emulation = emulation
    ctx.log.step(f"emulate: {tree.model} on the emulated air runtime (CPU twins, {ctx.spec.twins.precision} precision)"
                 + (f", injected bug {inject}" if inject else ""))


def _encoder(tree, adapter, model_name, tokenizer):
    """encode(text) -> ids, through the tokenizer the prompt went through (loaded once)."""
    if tokenizer is not None:
        return lambda text: [int(t) for t in tokenizer.encode(text)]
    return lambda text: tokenize(tree, adapter, model_name, text)[0]


def _cpu_attn(opts, diag, tree, entry):
    """--cpu-attn/--npu-attn; else what make diagnosis runs (verify_runner's
    --npu-attn default, on); a tree without verify_runner.py (air-mini) keeps its
    block compile's own default."""
    if opts.cpu_attn is not None:
        return bool(opts.cpu_attn)
    has_runner = os.path.isfile(os.path.join(tree.verify_dir, "verify_runner.py"))
    if has_runner and diag.get("cpu_attn") is not None:
        return bool(diag["cpu_attn"])
    if entry.compile_all is not None:
        d = default_of(entry.compile_all, "cpu_attn")
        if isinstance(d, bool):
            return d
    return not has_runner


def _workarounds(cfg, plan):
    """Seed Step 2 triggers; the prerequisite line worded from what the model's
    own code does when the plan found it."""
    found = detect_workarounds(cfg)
    step2 = _plan_part(plan, "step2")
    if step2.get("prerequisite"):
        for w in found:
            w["prerequisite"] = step2["prerequisite"]
    return found
