"""What `make diagnosis` runs (prompt, model choice, attention), read from the model's Makefile,
verify_runner.py and the adapter; and how this run's options differ from it."""

import ast
import os

from npu_probe.core.errors import ProbeError
from npu_probe.core import tree as probe_tree
from npu_probe.plan.static.makefile import command_args, make_expand, parse_makefile, unquote
from npu_probe.plan.static.names import default_of_param


DEFAULT_PROMPT_STYLE = "instruct"


def _adapter_choices(ctx):
    """(MODEL_CHOICES dict or None, line, DEFAULT_MODEL or None, line)."""
    info = ctx.info(ctx.adapter)
    choices, cline, default, dline = None, None, None, None
    if info and "MODEL_CHOICES" in info.assigns:
        node, cline = info.assigns["MODEL_CHOICES"]
        if isinstance(node, ast.Dict):
            choices = {}
            for k, v in zip(node.keys, node.values):
                try:
                    choices[ctx.const(info, k)] = ctx.const(info, v)
                except ValueError:
                    continue
    if info and ("DEFAULT_MODEL" in info.assigns or "DEFAULT_MODEL" in info.imported):
        dline = info.assigns["DEFAULT_MODEL"][1] if "DEFAULT_MODEL" in info.assigns \
            else info.imported["DEFAULT_MODEL"][0].line
        try:
            default = ctx.const(info, ast.Name(id="DEFAULT_MODEL", ctx=ast.Load()))
        except ValueError:
            default = None
    return choices, cline, default, dline


def _verify_runner_defaults(ctx):
    """verify_runner.py's DEFAULT_PROMPT and --npu-attn default, read statically."""
    path = os.path.join(ctx.verify_dir, "verify_runner.py")
    out = {"path": path if os.path.isfile(path) else None}
    info = ctx.info(path) if out["path"] else None
    if info is None:
        return out
    if "DEFAULT_PROMPT" in info.assigns:
        node, line = info.assigns["DEFAULT_PROMPT"]
        try:
            out["prompt"] = (ctx.const(info, node), line)
        except ValueError:
            pass
    for node in ast.walk(info.parsed.tree) if info.parsed.tree else []:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument" \
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "--npu-attn":
            for kw in node.keywords:
                if kw.arg == "default" and isinstance(kw.value, ast.Constant):
                    out["npu_attn"] = (kw.value.value, node.lineno)
    return out


def first_prompt(ctx, style):
    """(prompt, "verify/prompts/<style>.txt:<line>"): the probe's own reading of a prompt set,
    so a plan and a run name the same prompt the same way and refuse the same styles."""
    tree = probe_tree.Tree(air_root=ctx.air_root, llms_dir=ctx.llms_dir, verify_dir=ctx.verify_dir,
                           model_dir=ctx.model_dir, model=ctx.model)
    return probe_tree.canonical_prompt(tree, style)


def _diagnosis_recipe(ctx):
    """(Makefile, joined diagnosis command, its line) or (mk, None, None)."""
    path = os.path.join(ctx.model_dir, "Makefile")
    mk = parse_makefile(path, ctx.environ) if os.path.isfile(path) else None
    if mk is None or "diagnosis" not in mk.recipes:
        return mk, None, None
    cmds = [(line, c) for line, c in mk.recipes["diagnosis"] if "--prompt" in c or "VERIFY_RUNNER" in c
            or "verify_runner" in c]
    if not cmds:
        return mk, None, None
    line, cmd = cmds[-1]
    return mk, cmd, line


def _expand_arg(ctx, mk, raw):
    """(value, source) of a recipe argument such as "$(PROMPT)" or $(MODEL_CHOICE)."""
    text = unquote(raw)
    value, used = make_expand(text, mk.vars, ctx.environ)
    value = unquote(value.strip())
    source = None
    for name in used:  # the variable whose own value is what reached the command
        own = make_expand(mk.vars.get(name, ("", None))[0], mk.vars, ctx.environ)[0].strip()
        if own and own == value and mk.vars.get(name, (None, None))[1]:
            source = f"{ctx.where(mk.path, mk.vars[name][1])} {name}"
    return value, source


def read_defaults(ctx):
    mk, cmd, cline = _diagnosis_recipe(ctx)
    vr = _verify_runner_defaults(ctx)
    choices, _, default_model, dline = _adapter_choices(ctx)
    args = command_args(cmd) if cmd else {}
    d = {}
    # prompt
    if "prompt" in args:
        value, source = _expand_arg(ctx, mk, args["prompt"])
        d["prompt"], d["prompt_source"] = value, source or f"{ctx.where(mk.path, cline)} diagnosis --prompt"
    elif vr.get("prompt"):
        d["prompt"], d["prompt_source"] = vr["prompt"][0], f"{ctx.where(vr['path'], vr['prompt'][1])} DEFAULT_PROMPT"
    else:
        d["prompt"], d["prompt_source"] = first_prompt(ctx, DEFAULT_PROMPT_STYLE)
    # model choice
    if "model" in args:
        value, source = _expand_arg(ctx, mk, args["model"])
        d["model_choice"], d["model_choice_source"] = value, source or f"{ctx.where(mk.path, cline)} diagnosis --model"
    else:
        d["model_choice"] = default_model
        why = " (make diagnosis passes no --model)" if cmd else ""
        d["model_choice_source"] = (f"{ctx.where(ctx.adapter, dline)} DEFAULT_MODEL{why}"
                                    if default_model is not None else None)
    d["model_id"] = _model_id(choices, d["model_choice"])
    # attention
    if "npu-attn" in args:
        value, _ = _expand_arg(ctx, mk, args["npu-attn"])
        d["cpu_attn"] = value == "off"
        d["cpu_attn_source"] = f"{ctx.where(mk.path, cline)} diagnosis --npu-attn {value}"
    elif vr.get("npu_attn"):
        d["cpu_attn"] = vr["npu_attn"][0] == "off"
        d["cpu_attn_source"] = (f"{ctx.where(vr['path'], vr['npu_attn'][1])} --npu-attn default "
                                f"{vr['npu_attn'][0]!r}" + (" (make diagnosis does not pass it)" if cmd else ""))
    else:
        d["cpu_attn"], d["cpu_attn_source"] = _compile_cpu_attn_default(ctx)
    return d, choices


def _model_id(choices, choice):
    if choice is None:
        return None
    if choices and choice in choices:
        return choices[choice]
    return choice


def _compile_cpu_attn_default(ctx):
    """Without verify_runner.py: the prefill's compile_all_kernels(cpu_attn=...) default."""
    prefill = ctx.model_file("prefill")
    info = ctx.info(prefill) if prefill else None
    fn = info.defs.get("compile_all_kernels") if info else None
    if isinstance(fn, ast.FunctionDef):
        node, line = default_of_param(fn, "cpu_attn")
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return node.value, (f"{ctx.where(prefill, line)} compile_all_kernels(cpu_attn={node.value}) default "
                                "(no verify/verify_runner.py)")
    return False, "NPU attention assumed (no verify_runner.py and no compile_all_kernels default)"


def _shown(prompt, limit=200):
    """A prompt in a `differs` line: quoted, and past `limit` characters cut with its length said
    (probe.json prompt.text keeps it whole; a line per difference stays a line)."""
    if prompt is None or len(prompt) <= limit:
        return repr(prompt)
    return f"{prompt[:limit]!r}... ({len(prompt)} characters)"


def apply_overrides(ctx, d, choices, request):
    """Effective values of this run (`request`, a PlanRequest) and one line per difference
    from make diagnosis."""
    prompt, prompt_style = request.prompt, request.prompt_style
    model_choice, cpu_attn = request.model_choice, request.cpu_attn
    eff = {"prompt": d["prompt"], "prompt_source": d["prompt_source"], "model_choice": d["model_choice"],
           "model_id": d["model_id"], "cpu_attn": d["cpu_attn"]}
    lines = []
    if prompt is not None:
        if not prompt.strip():
            raise ProbeError("--prompt", "empty prompt")
        eff["prompt"], eff["prompt_source"] = prompt, "--prompt"
    elif prompt_style is not None:
        eff["prompt"], eff["prompt_source"] = first_prompt(ctx, prompt_style)
    if eff["prompt"] != d["prompt"]:
        lines.append(f"prompt: {_shown(eff['prompt'])} here ({eff['prompt_source']}), make diagnosis runs "
                     f"{_shown(d['prompt'])} ({d['prompt_source']})")
    if model_choice is not None:
        eff["model_choice"] = model_choice
        eff["model_id"] = _model_id(choices, model_choice)
        if eff["model_id"] != d["model_id"]:
            lines.append(f"model: {model_choice} ({eff['model_id']}) here, make diagnosis runs "
                         f"{d['model_choice']} ({d['model_id']})")
    if cpu_attn is not None and bool(cpu_attn) != d["cpu_attn"]:
        eff["cpu_attn"] = bool(cpu_attn)
        theirs = "CPU attention (verify_runner --npu-attn off)" if d["cpu_attn"] else \
            "NPU attention (verify_runner --npu-attn on)"
        lines.append(f"cpu_attn: {bool(cpu_attn)} here, make diagnosis runs {theirs}")
    return eff, lines
