"""One run's context: everything the config stage resolves, in one object.

`open_run` imports the tree (adapter, block modules), builds the config, picks
the prompt, tokens, seq_len, attention mode and block entry, with the plan's
`make diagnosis` defaults where the user gave nothing. The block stage, the
reference and the layers all take this object instead of a dozen positional
parameters.
"""

import dataclasses
import os
import re
import time

from npu_probe.core.call import default_of
from probe_block import choose_seq_len, declared_seq_len
from probe_entry import choose_entry, load_block_modules
from npu_probe.core.errors import ProbeError
from probe_kernels import build_dir, kernel_cache_dir
from probe_model import model_names, open_model
from probe_positions import extend_tokens
from probe_reference import reference_kind, tokenize
from npu_probe.core.contract import MAX_SEQ_DEFAULT
from npu_probe.core.tree import canonical_prompt, config_summary, detect_workarounds, resolve_tree


@dataclasses.dataclass
class RunContext:
    args: object
    log: object
    plan: object  # the static plan (npu_probe.plan.build.make_plan), or None
    tree: object
    adapter: object
    adapter_name: str
    config: object  # the adapter's config object
    cfg: dict  # probe.json model.config
    model_name: str  # what load_weights / build_runner take
    hf_id: str  # the HF reference id
    prompt: str
    prompt_source: str
    prompt_style: str
    tokens: list
    tokenizer: object
    tokenizer_label: str
    prefill_mod: object
    inference_mod: object
    max_seq: int
    seq_len: int
    seq_why: str
    cpu_attn: bool
    entry: object  # probe_entry.Entry
    workarounds: list
    ref_kind: str
    defaults: dict  # probe.json `defaults`: what make diagnosis runs, and where this run differs
    emulation: object = None  # npu_probe.emulate.emulation.Emulation with --emulate, else None
    positions: object = None  # probe.json prompt.positions with --positions, else None
    want_boundaries: bool = True  # the lens: NPU buffers read back, HF layer-0 hooks
    t_start: float = dataclasses.field(default_factory=time.monotonic)
    timings: dict = dataclasses.field(default_factory=dict)
    created_dirs: list = dataclasses.field(default_factory=list)  # dirs this run made in the tree

    @property
    def real_len(self):
        return len(self.tokens)

    @property
    def cache_dir(self):
        return kernel_cache_dir(self.tree, self.plan)

    @property
    def build_dir(self):
        return build_dir(self.tree, self.plan)


def _plan_part(plan, key):
    return (plan or {}).get(key) or {}


def open_run(args, log, plan=None):
    """The config stage: resolve and import everything block 0 needs (nothing compiles)."""
    t = time.monotonic()
    tree = resolve_tree(args.model_dir, args.air_root)
    log.step(f"tree {tree.air_root}, model {tree.model}")
    adapter, adapter_name, config, cfg = open_model(tree)
    diag = _plan_part(plan, "defaults")
    choice = args.hf_model or diag.get("model_choice") or getattr(adapter, "DEFAULT_MODEL", None)
    model_name, hf_id = model_names(adapter, adapter_name, choice, tree)
    log.step(f"config: {cfg['n_layers']} layers, emb_dim {cfg['emb_dim']}, head_dim {cfg['head_dim']}; "
             f"weights {model_name}, reference {hf_id}")

    if args.prompt is None and args.prompt_style is None and diag.get("prompt"):
        prompt, source = diag["prompt"], diag.get("prompt_source") or "make diagnosis"
        from_set = re.match(r"verify/prompts/([A-Za-z0-9_.-]+)\.txt:", source)
        style = from_set.group(1) if from_set else "diagnosis"
    else:
        style = args.prompt_style or "instruct"
        prompt, source = canonical_prompt(tree, style, args.prompt)
    emulate, inject = bool(getattr(args, "emulate", False)), getattr(args, "inject", None)
    config_changes, config_source = {}, None
    if inject is not None and not emulate:
        raise ProbeError("--inject", "needs --emulate (bugs are injected into the emulated NPU's twins)")
    if emulate:
        from npu_probe.emulate.checkpoint import config_from_checkpoint  # noqa: PLC0415
        from npu_probe.emulate.twins import check_injection  # noqa: PLC0415

        check_injection(inject)
        if getattr(args, "layers", False):
            raise ProbeError("--layers", "cannot run with --emulate (the adapter's runner compiles its own kernels)")
        config_changes, config_source = config_from_checkpoint(config, hf_id)
        if config_changes:
            cfg = config_summary(config, os.path.join(tree.model_dir, "verify_adapter.py"))
            log.step("emulate: config from " + str(config_source) + ": "
                     + ", ".join(f"{k} {v[0]} -> {v[1]}" for k, v in config_changes.items()))
    tokens, tokenizer_label, tokenizer = tokenize(tree, adapter, model_name, prompt)
    prefill_mod, inference_mod = load_block_modules(tree)
    max_seq = int(getattr(adapter, "MAX_SEQ", None) or getattr(prefill_mod, "MAX_SEQ", None) or MAX_SEQ_DEFAULT)
    positions = None
    if getattr(args, "positions", None) is not None:
        tokens, positions = extend_tokens(tree, _encoder(tree, adapter, model_name, tokenizer), prompt, style, tokens,
                                          args.positions,
                                          max_seq if args.seq_len is None else min(max_seq, args.seq_len))
        log.step(f"positions: {positions['real_len']} real tokens ({positions['method']})")
    if len(tokens) > max_seq:
        log.step(f"prompt has {len(tokens)} tokens; truncating to max_seq {max_seq} as verify_runner does")
        tokens = tokens[:max_seq]
    declared = declared_seq_len(adapter, prefill_mod)
    seq_len, seq_why = choose_seq_len(len(tokens), args.seq_len, max_seq, declared if declared[0] else None)
    log.step(f"prompt {source}: {len(tokens)} tokens, padded to {seq_len} ({seq_why})")

    step1 = _plan_part(plan, "step1") or None
    entry = choose_entry(tree.model, adapter, adapter_name, prefill_mod, (inference_mod, adapter), step1)
    cpu_attn = _cpu_attn(args, diag, tree, entry)
    log.step(f"integration {entry.path}: {entry.entry} ({entry.kind}, {'CPU' if cpu_attn else 'NPU'} attention)")
    workarounds = _workarounds(cfg, plan)
    for w in workarounds:
        log.step(f"workaround trigger {w['id']}: {w['detail']}")
    defaults = {"make_diagnosis": {k: diag.get(k) for k in ("prompt", "model_choice", "cpu_attn")},
                "differs": list((plan or {}).get("overrides") or [])}
    for line in defaults["differs"]:
        log.step(f"differs from make diagnosis: {line}")
    ctx = RunContext(
        args=args, log=log, plan=plan, tree=tree, adapter=adapter, adapter_name=adapter_name, config=config,
        cfg=cfg, model_name=model_name, hf_id=hf_id, prompt=prompt, prompt_source=source, prompt_style=style,
        tokens=tokens, tokenizer=tokenizer, tokenizer_label=tokenizer_label, prefill_mod=prefill_mod,
        inference_mod=inference_mod, max_seq=max_seq, seq_len=seq_len, seq_why=seq_why, cpu_attn=cpu_attn,
        entry=entry, workarounds=workarounds, ref_kind=reference_kind(tree), defaults=defaults, t_start=t,
        positions=positions, want_boundaries=bool(getattr(args, "boundaries", True)),
    )
    if emulate:
        from npu_probe.emulate.emulation import start as start_emulation  # noqa: PLC0415
        from npu_probe.emulate.table import model_spec  # noqa: PLC0415

        ctx.emulation = start_emulation(tree, config, model_spec(tree.model), inject, len(tokens), _defaults_of(config))
        ctx.emulation.config_changes, ctx.emulation.config_source = config_changes, config_source
        log.step(f"emulate: {tree.model} on the emulated air runtime (CPU twins)"
                 + (f", injected bug {inject}" if inject else ""))
    ctx.timings["config"] = time.monotonic() - t
    if getattr(args, "plan_seconds", None) is not None:
        ctx.timings["plan"] = args.plan_seconds
    if getattr(args, "t0", None) is not None:
        ctx.t_start = args.t0  # total: from the probe's start, plan included
    return ctx


def _encoder(tree, adapter, model_name, tokenizer):
    """encode(text) -> ids, through the tokenizer the prompt went through (loaded once)."""
    if tokenizer is not None:
        return lambda text: [int(t) for t in tokenizer.encode(text)]
    return lambda text: tokenize(tree, adapter, model_name, text)[0]


def _defaults_of(config):
    """The config class's own defaults (the production model), or None."""
    try:
        return type(config)()
    except Exception:  # not a dataclass with defaults: the registry shim maps nothing
        return None


def _cpu_attn(args, diag, tree, entry):
    """--cpu-attn/--npu-attn; else what make diagnosis runs (verify_runner's
    --npu-attn default, on); a tree without verify_runner.py (air-mini) keeps its
    block compile's own default."""
    if args.cpu_attn is not None:
        return bool(args.cpu_attn)
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
