"""The Phase 2 plan: what a block-0 gate run of one model would need and do,
read from the tree without running it.

`make_plan(model_dir, ...)` answers, before anything is compiled or downloaded:
which config and prompt `make diagnosis` uses, which tree files and packages the
run imports (and whether this Python can even parse them), whether there is an
NPU and a warm HF cache, the seed's Step 1 (inheritance or kernel-first) and
Step 2 (padding / bias) readings, Phase 1 registry coverage, what the kernel
cache depends on, and whether Phase 2 can run for this model at all.

Standard library only; no module of the tree is imported (probe_static.py).
"""

import ast
import glob
import importlib.util
import os
import platform
import re
import sys

from npu_probe.plan.static.imports import imports_of, iter_statements, stdlib_names
from npu_probe.plan.static.makefile import command_args, make_expand, parse_makefile, unquote
from npu_probe.plan.static.names import class_fields, default_of_param, dict_literal_keys, function_defs, returns_of
from npu_probe.plan.static.parse import parse_file, read_text, source_lines
from npu_probe.plan.static.paths import env_reads, file_loads, path_eval, path_literals, quoted_includes, sys_path_additions
from npu_probe.plan.context import Ctx, runner_sources
from npu_probe.plan.finding import finding
from npu_probe.core import tree as probe_tree
from npu_probe.core.errors import ProbeError

from npu_probe.core.contract import EXIT_BAD_INPUT as EXIT_REFUSED  # noqa: E402 - contract.json, stdlib only
from npu_probe.core.contract import EXIT_OK, PLAN_SCHEMA, PLAN_SCHEMA_VERSION  # noqa: E402

from npu_probe.core.contract import MAX_SEQ_DEFAULT as DEFAULT_SEQ_LEN  # noqa: E402 - production prefill ELFs are built for it

EMULATED_MARKER = "AIR_MINI"
DEFAULT_PROMPT_STYLE = "instruct"
ALIGN = 1024  # seed Step 2: emb_dim/hidden_dim not a multiple of this -> padding trigger

CONFIG_FIELDS = ("n_layers", "emb_dim", "n_heads", "n_kv_heads", "head_dim", "hidden_dim")
CONFIG_OPTIONAL = ("vocab_size", "rope_base")

LLAMA_SEQUENCE = ["RMSNorm", "Q/K/V GEMM", "RoPE", "FlashAttention", "O GEMM", "add",
                  "RMSNorm", "Gate/Up GEMM", "SwiGLU", "Down GEMM", "add"]
LLAMA_BLOCK = "llama32_1b_prefill.run_transformer_block"

SEED_WORKAROUND = {
    "non_1024_aligned": (
        "GQA-aware reindexed padding: pad to a 1024-aligned size by inserting phantom Q heads "
        "inside each KV group (keeps n_heads/n_kv_heads); CPU-check padded vs original first"),
    "qkv_bias": (
        "host-side post-RoPE bias add: RoPE(q + bq) = RoPE(q) + RoPE(bq), so the rms_gemms_rope "
        "ELF stays bias-free and the bias is added on the host after it returns"),
}
SEED_PREREQUISITE = "Phase 4/5 prerequisite: perf optimization must preserve the padded/bias wrappers"

# Packages that get a preflight finding of their own (others are only listed).
CORE_PACKAGES = ("numpy", "ml_dtypes")
REFERENCE_PACKAGES = ("transformers", "torch")
NPU_PACKAGES = ("air", "aie", "pyxrt")
PACKAGE_FIX = {
    "numpy": "pip install numpy",
    "ml_dtypes": "pip install ml_dtypes",
    "transformers": "pip install transformers (the HF bf16 reference, verify/runners/hf_runner.py)",
    "torch": "pip install torch (CPU wheel is enough for the HF bf16 reference)",
    "air": "install mlir-air's Python package (build the tree or its wheel) on the NPU host",
    "aie": "install mlir-aie's Python package (the mlir_aie wheel) on the NPU host",
    "pyxrt": "install XRT and `source /opt/xilinx/xrt/setup.sh` on the NPU host",
}



# ---------------------------------------------------------------------------
# Import closure


def import_closure(ctx, roots, base_path=None):
    """Files (discovery order) and third-party packages {name: (file, line)} the
    roots import, following function-level imports, relative imports,
    spec_from_file_location loads and the sys.path edits the files make."""
    base = list(base_path or ctx.base_path)
    order, seen, extra, pending = [], set(), [], []
    packages = {}
    queue = []

    def add(path):
        path = os.path.normpath(path)
        if path not in seen and os.path.isfile(path):
            seen.add(path)
            order.append(path)
            queue.append(path)

    for r in roots:
        add(r)
    stdlib = stdlib_names()
    while True:
        while queue:
            path = queue.pop(0)
            parsed = parse_file(path)
            if parsed is None or not path.endswith(".py"):
                continue
            local = sys_path_additions(parsed)
            for d in local:
                if d not in extra and d not in base:
                    extra.append(d)
            for loaded, _ in file_loads(parsed):
                add(loaded)
            for ref in imports_of(parsed):
                files = _resolve_ref(ctx, ref, path, local, base, extra, stdlib)
                if files is None:
                    pending.append((ref, path))
                else:
                    for f in files:
                        add(f)
        still = []
        for ref, path in pending:  # later files may have widened sys.path
            parsed = parse_file(path)
            files = _resolve_ref(ctx, ref, path, sys_path_additions(parsed), base, extra, stdlib)
            if files is None:
                still.append((ref, path))
            else:
                for f in files:
                    add(f)
        pending = still
        if not queue:
            break
    for ref, path in pending:
        top = ref.module.split(".")[0]
        if ref.level or not top or top in stdlib:
            continue
        packages.setdefault(top, (path, ref.line))
    return order, packages, extra


def _resolve_ref(ctx, ref, path, local, base, extra, stdlib):
    """Tree files an ImportRef executes, [] for stdlib-only, None when not in the tree."""
    r = ctx.resolver
    parts = [p for p in ref.module.split(".") if p]
    if ref.level:
        pkg = os.path.dirname(path)
        for _ in range(ref.level - 1):
            pkg = os.path.dirname(pkg)
        files = r.find_in(pkg, parts) if parts else []
        target = os.path.join(pkg, *parts)
    else:
        top = parts[0] if parts else ""
        if top in sys.builtin_module_names or top == "__future__":
            return []
        search = list(reversed(local)) + base + [e for e in extra if e not in base] + [os.path.dirname(path)]
        files, b = r.resolve(ref.module, search)
        if files is None:
            return [] if top in stdlib else None
        if not files and top in stdlib:
            return []  # a same-named directory without code does not shadow the stdlib module
        target = os.path.join(b, *parts)
    if files is None:
        return None
    files = list(files)
    for name in ref.names:
        sub = r.submodule(target, name)
        if sub:
            files.extend(sub)
    if not files and not ref.level:
        # Only a code-less directory matched: an installed package of that name
        # still wins over a namespace portion, so treat it as not in the tree.
        return None
    return files


# ---------------------------------------------------------------------------
# Config


def read_config(ctx):
    """(config dict or None, source, why-not). Follows build_config()'s return
    through the adapter's imports to the config class and reads field defaults."""
    info = ctx.info(ctx.adapter)
    fn = info.defs.get("build_config") if info else None
    if fn is not None and isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(fn.returns, ast.Name) and fn.returns.id in ("dict", "Dict"):
            return None, None, "build_config() returns a dict, not a decoder config class"
        for ret in returns_of(fn):
            if isinstance(ret.value, ast.Call):
                got = _config_from_call(ctx, info, ret.value, {}, 0)
                if got:
                    return got[0], got[1], None
            elif isinstance(ret.value, ast.Dict):
                return None, None, "build_config() returns a dict, not a decoder config class"
        return None, None, f"cannot follow build_config() ({ctx.where(ctx.adapter, fn.lineno)}) statically"
    # build_config bound to something else (air-mini: _ADAPTER.build_config); the
    # tree's convention is the LlamaConfig dataclass of <model>_weights.py.
    weights = ctx.model_file("weights")
    winfo = ctx.info(weights) if weights else None
    if winfo:
        for name, node in winfo.defs.items():
            if isinstance(node, ast.ClassDef) and name.endswith("Config"):
                got = _config_from_class(ctx, winfo, node, {})
                if got:
                    bound = "is not a def" if fn is None and "build_config" not in (info.assigns if info else {}) \
                        else "is bound indirectly"
                    return got[0], got[1] + f" (by convention: build_config {bound})", None
    return None, None, "no build_config() in verify_adapter.py and no *Config class in the weights module"


def _config_from_call(ctx, info, call, env, depth):
    if depth > 4:
        return None
    target = ctx.resolve_callee(info, call.func)
    if not target or target[1] is None:
        return None
    tinfo, node = target
    overrides = {}
    for kw in call.keywords:
        if kw.arg:
            try:
                overrides[kw.arg] = ctx.const(info, kw.value, env)
            except ValueError:
                pass
    if isinstance(node, ast.ClassDef):
        fields = [f for f, _, _ in class_fields(node)]
        for i, a in enumerate(call.args[:len(fields)]):
            try:
                overrides[fields[i]] = ctx.const(info, a, env)
            except ValueError:
                pass
        return _config_from_class(ctx, tinfo, node, overrides)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        inner = {}
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            d, _ = default_of_param(node, a.arg)
            if d is not None:
                try:
                    inner[a.arg] = ctx.const(tinfo, d)
                except ValueError:
                    pass
        inner.update(overrides)
        for ret in returns_of(node):
            if isinstance(ret.value, ast.Call):
                got = _config_from_call(ctx, tinfo, ret.value, inner, depth + 1)
                if got:
                    return got
    return None


def _config_from_class(ctx, info, cls, overrides):
    values = {}
    for name, value, _ in class_fields(cls):
        try:
            values[name] = ctx.const(info, value)
        except ValueError:
            pass
    values.update(overrides)
    if not all(isinstance(values.get(f), int) and not isinstance(values.get(f), bool) for f in CONFIG_FIELDS):
        return None
    cfg = {f: int(values[f]) for f in CONFIG_FIELDS}
    if isinstance(values.get("vocab_size"), int):
        cfg["vocab_size"] = int(values["vocab_size"])
    else:
        cfg["vocab_size"] = None
    cfg["rope_base"] = float(values["rope_base"]) if isinstance(values.get("rope_base"), (int, float)) else None
    cfg["qkv_bias"] = bool(values.get("qkv_bias", False))
    cfg["qk_norm"] = bool(values.get("qk_norm", False))
    return cfg, f"{ctx.where(info.path, cls.lineno)} {cls.name}"


# ---------------------------------------------------------------------------
# Defaults: what `make diagnosis` runs


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


def apply_overrides(ctx, d, choices, prompt, prompt_style, model_choice, cpu_attn):
    """Effective values of this run and one line per difference from make diagnosis."""
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
        lines.append(f"prompt: {eff['prompt']!r} here ({eff['prompt_source']}), make diagnosis runs "
                     f"{d['prompt']!r} ({d['prompt_source']})")
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


# ---------------------------------------------------------------------------
# Block function and compile entry (Step 1 "block", kernel cache)


def _find_entry(ctx, name_rx, prefer_def=None):
    """Where the run gets a function: defined in <model>_prefill.py, else imported
    by name into <model>_prefill.py, verify_adapter.py or <model>_inference.py
    (module-level imports first, then imports inside functions)."""
    prefill = ctx.model_file("prefill")
    pinfo = ctx.info(prefill) if prefill else None
    if pinfo:
        for want in ([prefer_def] if prefer_def else []) + [name_rx]:
            for name, node in pinfo.defs.items():
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and re.fullmatch(want, name):
                    return _entry(ctx, prefill, node, "own-prefill", None)
    holders = [(prefill, "prefill"), (ctx.adapter, "adapter"), (ctx.model_file("inference"), "inference")]
    for top_only in (True, False):
        for path, role in holders:
            if not path:
                continue
            parsed = parse_file(path)
            for ref in imports_of(parsed) if parsed else []:
                if ref.top_level != top_only:
                    continue
                for orig in ref.names:
                    if not re.fullmatch(name_rx, orig):
                        continue
                    src, _ = ctx.resolve_module(ref, path)
                    sinfo = ctx.info(src) if src and src.endswith(".py") else None
                    node = sinfo.defs.get(orig) if sinfo else None
                    if node is None:
                        continue
                    own = ctx.model_of(src) == ctx.model
                    where = "own-prefill" if own else ("inference" if role == "inference" else "other-model-prefill")
                    return _entry(ctx, src, node, where, ctx.where(path, ref.line))
    return None


def _entry(ctx, path, node, where, via):
    module = os.path.splitext(os.path.basename(path))[0]
    return {"function": f"{module}.{node.name}", "file": ctx.rel(path), "line": node.lineno,
            "where": where, "via": via, "_path": path}


def find_block(ctx):
    block = _find_entry(ctx, r"run_transformer_block\w*", prefer_def="run_single_block")
    if block is None:
        block = _find_entry(ctx, r"run_single_block")
    compile_ = _find_entry(ctx, r"compile_all_kernels")
    return block, compile_


# ---------------------------------------------------------------------------
# Step 1


def model_sequence(cfg):
    seq = list(LLAMA_SEQUENCE)
    qkv = seq.index("Q/K/V GEMM")
    if cfg.get("qkv_bias"):
        seq.insert(qkv + 1, "QKV bias add")
    if cfg.get("qk_norm"):
        seq.insert(seq.index("RoPE"), "Q/K Norm")
    return seq


def step1(ctx, cfg, block, compile_, tree_does, findings):
    out = {"llama_sequence": list(LLAMA_SEQUENCE), "model_sequence": None, "matches": None,
           "inheritance_allowed": None, "breaks": [], "block": None, "path": None}
    if cfg is not None:
        seq = model_sequence(cfg)
        out["model_sequence"] = seq
        out["breaks"] = _breaks(cfg, tree_does)
        out["matches"] = seq == LLAMA_SEQUENCE
        out["inheritance_allowed"] = out["matches"] and not out["breaks"]
    if block:
        out["block"] = {k: v for k, v in block.items() if not k.startswith("_")}
        out["block"]["compile"] = compile_["function"] if compile_ else None
        foreign = block["where"] != "own-prefill"
        if not foreign:
            out["path"] = "kernel-first"
        else:
            out["path"] = "inheritance"
            home, home_seq = _home_sequence(ctx, block)
            mine = out["model_sequence"]
            if mine is not None and home_seq is not None and mine != home_seq:
                findings.append(finding(
                    "step1-inheritance", "warn", "tree",
                    f"{ctx.model} calls {block['function']} ({block['file']}:{block['line']}), {home}'s block, "
                    f"although its kernel sequence differs ({' -> '.join(mine)} vs {' -> '.join(home_seq)}): "
                    "the seed forbids the inheritance shortcut here",
                    f"compose the model's own block (kernel-first) in {ctx.model}/{ctx.model}_prefill.py"))
    else:
        out["path"] = "kernel-first"
        findings.append(finding(
            "step1-block", "warn", "tree",
            f"no run_single_block / run_transformer_block* found for {ctx.model} "
            "(prefill, adapter or inference module)",
            f"write run_single_block in {ctx.model}/{ctx.model}_prefill.py (seed Step 3)"))
    return out


def _home_sequence(ctx, block):
    """(model, kernel sequence) of the model whose prefill defines the block function."""
    home = ctx.model_of(block["_path"])
    if home is None:
        return None, None
    if home == ctx.model:
        return home, None
    try:
        other = Ctx(os.path.join(ctx.llms_dir, home), None, ctx.environ)
    except ProbeError:
        return home, None
    cfg, _, _ = read_config(other)
    return home, (model_sequence(cfg) if cfg else None)


def _breaks(cfg, tree_does):
    breaks = []
    if cfg.get("qk_norm"):
        breaks.append({"rule": "a", "detail": "Q/K Norm: a new op type (per-head RMSNorm with a (head_dim,) weight)"})
        breaks.append({"rule": "b", "detail": "Q/K Norm lands between Q/K/V GEMM and RoPE, which llama's "
                                              "rms_gemms_rope ELF fuses into one launch"})
    if cfg.get("qkv_bias"):
        on_device = [t["detail"].split("ELF ")[1].split(",")[0] for t in tree_does if t["id"] == "qkv_bias_on_device"]
        tree_says = (f"this tree adds the bias on device before RoPE ({on_device[0]}), an extra device op"
                     if on_device else
                     "the seed's host-side post-RoPE bias add would keep the device ELFs bias-free, but the add "
                     "still sits inside the block (after RoPE, before attention)")
        breaks.append({"rule": "a", "detail": f"QKV bias add after the Q/K/V GEMM: a new op type; {tree_says}, "
                                              "so llama's run_transformer_block cannot be called unchanged"})
        breaks.append({"rule": "b", "detail": "QKV bias add lands between Q/K/V GEMM and RoPE, which llama's "
                                              "rms_gemms_rope ELF fuses into one launch"})
    return breaks


# ---------------------------------------------------------------------------
# Step 2


_BIAS_ATTRS = {"bq", "bk", "bv"}


def tree_does_step2(ctx, block, compile_):
    """What the block module really does about bias and padding, with evidence."""
    path = block["_path"] if block else (compile_["_path"] if compile_ else ctx.model_file("prefill"))
    parsed = parse_file(path) if path else None
    tree = parsed.tree if parsed else None
    if tree is None:
        return [], path
    out = []
    module = os.path.splitext(os.path.basename(path))[0]
    # Bias on device: a load_and_run of an ELF named *bias* in a function that uses .bq/.bk/.bv.
    bias_elfs = {}
    for fn, _ in iter_statements(tree.body):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        attrs = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)}
        if not attrs & _BIAS_ATTRS:
            continue
        for call in ast.walk(fn):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.args
                    and isinstance(call.args[0], ast.Constant) and "bias" in str(call.args[0].value)):
                continue
            passes_bias = any(isinstance(n, ast.Attribute) and n.attr in _BIAS_ATTRS
                              for a in call.args[1:] for n in ast.walk(a))
            # load_and_run gets them from an args list built in the same function
            if call.func.attr == "load_and_run" or passes_bias:
                bias_elfs.setdefault(call.args[0].value, (call.lineno, call.func.attr))
    for elf, (line, via) in bias_elfs.items():
        out.append({"id": "qkv_bias_on_device",
                    "detail": f"adds the Q/K/V bias ON DEVICE before RoPE: ELF {elf}, bq/bk/bv passed to {via}",
                    "evidence": ctx.where(path, line)})
    # Bias on the host (`q + lw.bq`), and which module functions are called at all.
    called, host_bias = set(), None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
        elif host_bias is None and not bias_elfs and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) \
                and any(isinstance(x, ast.Attribute) and x.attr in ("bq", "bk", "bv") for x in (node.left, node.right)):
            host_bias = node.lineno
    if host_bias:
        out.append({"id": "qkv_bias_host", "detail": "adds the Q/K/V bias on the host",
                    "evidence": ctx.where(path, host_bias)})
    # Zero-padding of GEMM N: called helpers named *pad* that compute 1024-aligned sizes.
    pads = []
    for fn in function_defs(tree, r"pad"):
        consts = {n.value for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, int)}
        if fn.name in called and consts & {1023, 1024}:
            pads.append(fn)
    if pads:
        names = ", ".join(f"{module}.{fn.name}" for fn in pads)
        out.append({"id": "zero_pad_gemm_n",
                    "detail": "zero-pads GEMM N to a multiple of 1024 (host pads weight columns, slices "
                              f"outputs): {names}",
                    "evidence": ctx.where(path, pads[0].lineno),
                    "functions": [f"{module}.{fn.name}" for fn in pads]})
    return out, path


def step2(ctx, cfg, tree_does, block_path):
    if cfg is None:
        return None
    emb_ok = cfg["emb_dim"] % ALIGN == 0
    hid_ok = cfg["hidden_dim"] % ALIGN == 0
    triggers = []
    if not (emb_ok and hid_ok):
        dims = ", ".join(f"{k}={cfg[k]}" for k in ("emb_dim", "hidden_dim") if cfg[k] % ALIGN)
        triggers.append({"id": "non_1024_aligned",
                         "detail": f"{dims} not a multiple of {ALIGN}: BD-pool exhaustion risk at long seq_len "
                                   f"(group size n_heads/n_kv_heads = {cfg['n_heads']}/{cfg['n_kv_heads']})",
                         "seed_workaround": SEED_WORKAROUND["non_1024_aligned"]})
    if cfg["qkv_bias"]:
        triggers.append({"id": "qkv_bias", "detail": "qkv_bias=True: Q/K/V projections carry a bias",
                         "seed_workaround": SEED_WORKAROUND["qkv_bias"]})
    does = list(tree_does)
    if triggers and triggers[0]["id"] == "non_1024_aligned" and not any(t["id"] == "zero_pad_gemm_n" for t in does) \
            and block_path:
        does.append({"id": "no_padding",
                     "detail": "no GEMM N padding helper in the block module: emb_dim/hidden_dim run at their "
                               "real, non-1024-aligned sizes",
                     "evidence": ctx.rel(block_path)})
    return {"emb_dim_aligned": emb_ok, "hidden_dim_aligned": hid_ok, "qkv_bias": cfg["qkv_bias"],
            "triggers": triggers, "tree_does": [{k: v for k, v in t.items() if k != "functions"} for t in does],
            "prerequisite": _prerequisite(triggers, does)}


def _prerequisite(triggers, does):
    if not triggers:
        return None
    keep = []
    for t in does:
        if t["id"] == "qkv_bias_on_device":
            elf = t["detail"].split("ELF ")[1].split(",")[0]
            keep.append(f"the on-device QKV bias add before RoPE ({elf})")
        elif t["id"] == "qkv_bias_host":
            keep.append(f"the host-side QKV bias add ({t['evidence']})")
        elif t["id"] == "zero_pad_gemm_n":
            keep.append(f"the zero-padding of GEMM N to 1024 ({', '.join(t['functions'])})")
    ids = {t["id"] for t in triggers}
    unpadded = "non_1024_aligned" in ids and not any(t["id"] == "zero_pad_gemm_n" for t in does)
    if keep:
        tail = ("; the non-1024-aligned GEMMs run unpadded, so it must also keep them placeable at long seq_len"
                if unpadded else "")
        return "Phase 4/5 prerequisite: perf optimization must preserve " + " and ".join(keep) + tail
    if ids == {"non_1024_aligned"}:
        return ("Phase 4/5 prerequisite: the non-1024-aligned dims run unpadded (no GQA-aware padding in the tree); "
                "perf optimization must keep them placeable at long seq_len or add the padded wrapper")
    return SEED_PREREQUISITE


# ---------------------------------------------------------------------------
# Coverage (Phase 1 registry rows vs what the block launches)


_SECTIONS = (("GEMM (f32", "GEMM"), ("GEMM (bf16", "GEMM"), ("GEMV", "GEMV"), ("RMSNorm", "RMSNorm"),
             ("LayerNorm", "LayerNorm"), ("FlashAttention", "FlashAttention"), ("Element-wise Add", "EltwiseAdd"),
             ("SiLU", "SiLU-and-Mul"), ("RoPE", "RoPE"), ("GELU", "GELU"))
_STATUS = re.compile(r"(✅|⚠️|⚠|❌)")


def parse_registry(path):
    """[{section, kind, cells, shape, used_by, status, key}] for every shape row."""
    text = read_text(path)
    if text is None:
        return None
    rows, section, kind, header = [], None, None, None
    for line in source_lines(text):
        if line.startswith("## "):
            section = line[3:].split(" — ")[0].strip()
            kind = next((k for prefix, k in _SECTIONS if section.startswith(prefix)), None)
            header = None
            continue
        if not line.startswith("|") or kind is None:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        rows.append(_registry_row(section, kind, header, cells))
    return rows


def _registry_row(section, kind, header, cells):
    status_cell = cells[-1]
    m = _STATUS.search(status_cell)
    status = m.group(1) if m else status_cell
    if "used by" in header:
        used_by = cells[header.index("used by")]
    else:  # no Used-by column: the status cell's remark names the user
        used_by = _STATUS.sub("", status_cell).strip().strip("()").strip()
    return {"section": section, "kind": kind, "shape": cells[0], "used_by": used_by,
            "status": "⚠️" if status == "⚠" else status, "key": _row_key(kind, cells)}


def _nums(text):
    return [int(x) for x in re.findall(r"\d+", text.replace(",", ""))]


def _row_key(kind, cells):
    n = _nums(cells[0])
    if kind == "FlashAttention":
        d = _nums(cells[1]) if len(cells) > 1 else []
        h = _nums(cells[2]) if len(cells) > 2 else []
        causal = "✓" in (cells[3] if len(cells) > 3 else "")
        return (kind, tuple(n[:2]), tuple(d[:2]), tuple(h[:2]), causal)
    if kind in ("EltwiseAdd", "SiLU-and-Mul", "GELU"):
        return (kind, n[0] if n else None)
    return (kind, tuple(n))


def model_names(choices, model):
    """Registry spellings for the model: HF id names cut after the size token."""
    names = set()
    for ident in (choices or {}).values():
        if not isinstance(ident, str):
            continue
        base = ident.rstrip("/").split("/")[-1]
        m = re.match(r"^(.*?\d+(?:\.\d+)?[BbMm])(?![\w.])", base) or re.match(r"^(.*?\d+(?:\.\d+)?[BbMm])", base)
        names.add(m.group(1) if m else base)
    if not names:
        names.add(model)
    return sorted(names)


def _names_row(row, names):
    text = row["used_by"]
    return any(re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w.])", text, re.IGNORECASE) for n in names)


def launched(cfg, seq, cpu_attn):
    """(label, registry key) of every leaf kernel the block launches at `seq`."""
    e, nh, nkv, hd, hid = cfg["emb_dim"], cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"], cfg["hidden_dim"]
    q, kv = nh * hd, nkv * hd
    out = [("RMSNorm (attn/ffn)", ("RMSNorm", (seq, e))),
           ("Q GEMM", ("GEMM", (seq, e, q))), ("K/V GEMM", ("GEMM", (seq, e, kv))),
           ("RoPE-Q", ("RoPE", (nh * seq, hd))), ("RoPE-K", ("RoPE", (nkv * seq, hd))),
           ("O GEMM", ("GEMM", (seq, q, e))), ("residual add", ("EltwiseAdd", seq * e)),
           ("Gate/Up GEMM", ("GEMM", (seq, e, hid))), ("SiLU-and-Mul", ("SiLU-and-Mul", seq * hid)),
           ("Down GEMM", ("GEMM", (seq, hid, e)))]
    if cfg.get("qk_norm"):
        out.insert(3, ("Q/K Norm", ("RMSNorm", (seq, hd))))
    if not cpu_attn:
        out.insert(5, ("FlashAttention", ("FlashAttention", (seq, seq), (hd, hd), (nh, nkv), True)))
    return out


def coverage(ctx, cfg, choices, seq, cpu_attn):
    path = os.path.join(ctx.pe_dir, "kernel_registry", "supported_kernels.md")
    rows = parse_registry(path)
    out = {"registry": ctx.rel(path) if rows is not None else None, "seq_len": seq, "model_names": [],
           "registry_rows": [], "wired": [], "unwired": [], "outside_block": [], "unregistered": []}
    if rows is None or cfg is None:
        return out
    names = model_names(choices, ctx.model)
    out["model_names"] = names
    mine = [r for r in rows if _names_row(r, names)]
    launches = launched(cfg, seq, cpu_attn)
    keys = {}
    for label, key in launches:
        keys.setdefault(key, []).append(label)
    public = lambda r: {k: r[k] for k in ("section", "shape", "used_by", "status")}  # noqa: E731
    out["registry_rows"] = [public(r) for r in mine]
    for label, key in launches:
        # bf16-out GEMM rows first: the production prefill GEMMs are bf16 in, bf16 out
        match = sorted((r for r in rows if r["key"] == key), key=lambda r: "f32" in r["section"])
        named = [r for r in match if r in mine]
        best = (named or match or [None])[0]
        entry = {"kernel": label, "shape": _key_text(key), "row": public(best) if best else None}
        (out["wired"] if best else out["unregistered"]).append(entry)
    for r in mine:
        if r["key"] not in keys:
            reason = _unwired_reason(r, cpu_attn)
            # Decode and LM-head kernels are verified for the model but are not Phase 2's block:
            # listed apart, so `unwired` holds only what the block should launch and does not.
            outside = reason.startswith(("LM head", "decode kernel"))
            out["outside_block" if outside else "unwired"].append(dict(public(r), reason=reason))
    return out


def _key_text(key):
    kind = key[0]
    if kind == "FlashAttention":
        return f"{key[1][0]}x{key[1][1]} dk/dv {key[2][0]}/{key[2][1]} heads {key[3][0]}/{key[3][1]} causal"
    if isinstance(key[1], tuple):
        return "x".join(str(x) for x in key[1])
    return str(key[1])


def _unwired_reason(row, cpu_attn):
    if "lm-head" in row["used_by"].lower() or "lm head" in row["used_by"].lower():
        return "LM head: outside the transformer block"
    if row["kind"] == "GEMV" or "decode" in row["used_by"].lower():
        return "decode kernel: the prefill block does not launch it"
    if row["kind"] == "FlashAttention" and cpu_attn:
        return "cpu_attn: attention runs on the CPU"
    return "not a shape the config-derived block launches"


# ---------------------------------------------------------------------------
# Refusal




def _empty_intermediates(tree):
    """True when a PrefillRecord gets layer_intermediates=[{} for ...]."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "layer_intermediates" \
                and isinstance(node.value, ast.ListComp) and isinstance(node.value.elt, ast.Dict) \
                and not node.value.elt.keys:
            return True
    return False


def refusal(ctx, cfg, config_why, choices):
    """Why Phase 2 cannot run for this model, or None. An adapter that does not
    parse is a tree failure (preflight tree-syntax), not a judgement on the model."""
    info = ctx.info(ctx.adapter)
    if info is None or info.parsed.tree is None:
        return None
    adapter_rel = f"{ctx.model}/verify_adapter.py"
    has_runner = info is not None and ("build_runner" in info.defs or "build_runner" in info.assigns
                                       or "build_runner" in info.imported)
    if choices is None or not has_runner or (cfg is None and config_why and "dict" in config_why):
        what = []
        if choices is None:
            what.append("has no MODEL_CHOICES")
        if cfg is None and config_why:
            what.append(config_why)
        if not has_runner:
            what.append("has no build_runner (verify_runner's NPU runner contract)")
        doc = ast.get_docstring(info.parsed.tree) if info and info.parsed.tree else None
        about = f"; the adapter says: {doc.strip().splitlines()[0].strip()}" if doc else ""
        return {"reason": f"{ctx.model} is not a decoder LLM: {adapter_rel} {'; '.join(what)}{about}",
                "needs": "a decoder-only LLM with a verify adapter (MODEL_CHOICES, build_config() -> a "
                         "LlamaConfig-like config, per-layer ffn_out)"}
    sources = runner_sources(ctx)
    records = []
    for path in sources:
        parsed = parse_file(path)
        if parsed and parsed.tree is not None:
            records += dict_literal_keys(parsed.tree, "ffn_out")
        elif parsed:  # unparsable: accept a code-looking mention
            records += [1] if re.search(r"[\"']ffn_out[\"']\s*[:\]]", parsed.text) else []
    if not records:
        empty = info and info.parsed.tree is not None and _empty_intermediates(info.parsed.tree)
        how = " (layer_intermediates are empty dicts)" if empty else ""
        return {"reason": f"{adapter_rel} records no per-layer ffn_out{how}, so there is no layer-0 block "
                          "output to gate",
                "needs": f"an adapter prefill that records layer_intermediates[0]['ffn_out'], or a run_single_block "
                         f"in {ctx.model}/{ctx.model}_prefill.py"}
    return None


# ---------------------------------------------------------------------------
# Kernel cache


def kernel_cache(ctx, compile_, seq_len):
    mk_path = os.path.join(ctx.model_dir, "Makefile")
    mk = parse_makefile(mk_path, ctx.environ) if os.path.isfile(mk_path) else None
    peano = bool(ctx.environ.get("PEANO_INSTALL_DIR"))
    cache_dir, dir_source = _prefill_cache_dir(ctx, seq_len)
    if mk and "BUILD_DIR" in mk.vars:
        build = make_expand(mk.vars["BUILD_DIR"][0], mk.vars, ctx.environ)[0].strip()
        build_dir = os.path.join(ctx.model_dir, build)
        build_source = f"{ctx.where(mk_path, mk.vars['BUILD_DIR'][1])} BUILD_DIR"
    elif mk is None and cache_dir and os.path.basename(cache_dir) == "prefill_kernel_cache":
        build_dir = os.path.dirname(cache_dir)
        build_source = "no Makefile: the directory holding the adapter's prefill_kernel_cache"
    elif mk is None:
        build_dir = os.path.join(ctx.model_dir, "build_peano")
        build_source = "no Makefile: build_peano, the dir the verify adapters use"
    else:
        build_dir = os.path.join(ctx.model_dir, "build_peano" if peano else "build_chess")
        build_source = "convention (build_peano with PEANO_INSTALL_DIR, else build_chess)"
    adapter_dir = cache_dir
    if cache_dir is None or os.path.basename(cache_dir) == "prefill_kernel_cache":
        # The probe compiles block 0 with its own KernelCache: into the dir `make compile`
        # uses (BUILD_DIR), so a make-built cache and ours are the same one. The adapter's
        # own runner (--layers) keeps the dir it hard-codes (adapter_dir).
        cache_dir, dir_source = os.path.join(build_dir, "prefill_kernel_cache"), "<build_dir>/prefill_kernel_cache"
    files, env, models = [], {}, []
    if compile_:
        files, env, models = compile_inputs(ctx, compile_["_path"])
    return {"build_dir": ctx.rel(build_dir), "build_dir_source": build_source,
            "dir": ctx.rel(cache_dir) if os.path.isabs(cache_dir) else cache_dir, "dir_source": dir_source,
            "adapter_dir": ctx.rel(adapter_dir) if adapter_dir and os.path.isabs(adapter_dir) else adapter_dir,
            "seq_len": seq_len, "compile": compile_["function"] if compile_ else None,
            "inputs": {"files": files, "env": env, "models": models}}


def _prefill_cache_dir(ctx, seq_len):
    """The prefill cache the run opens: a path in the adapter (or the module its
    build_runner lives in) ending in prefill_kernel_cache, else the prefill
    module's seq_len-keyed f-string (the q4nx/q4 classes)."""
    for path in runner_sources(ctx):
        parsed = parse_file(path)
        if not parsed or parsed.tree is None:
            continue
        ev = path_eval(parsed)
        for node in ast.walk(parsed.tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                tail = _const_tail(node)
                if not tail or tail[-1] != "prefill_kernel_cache":
                    continue
                v = ev.eval(node)
                full = v if v and os.path.isabs(v) else os.path.join(ctx.model_dir, *tail)
                return full, f"{ctx.where(path, node.lineno)} (KernelCache dir)"
    prefill = ctx.model_file("prefill")
    parsed = parse_file(prefill) if prefill else None
    if parsed and parsed.tree is not None:
        for node in ast.walk(parsed.tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.JoinedStr):
                pattern = _fstring_pattern(node.right)
                if "cache_seq" in pattern:
                    name = pattern.replace("{seq_len}", str(seq_len))
                    return os.path.join(ctx.model_dir, name), f"{ctx.where(prefill, node.lineno)} {pattern}"
    return None, None


def _const_tail(node):
    """String constants at the right end of an `a / "b" / "c"` chain."""
    out = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) \
            and isinstance(node.right.value, str):
        out.append(node.right.value)
        node = node.left
    return list(reversed(out))


def _fstring_pattern(js):
    parts = []
    for v in js.values:
        if isinstance(v, ast.Constant):
            parts.append(str(v.value))
        elif isinstance(v, ast.FormattedValue):
            parts.append("{" + (ast.unparse(v.value) if hasattr(ast, "unparse") else "?") + "}")
    return "".join(parts)


C_SUFFIXES = (".cc", ".cpp", ".c", ".h", ".hpp")


def compile_inputs(ctx, compile_path):
    """Files and environment variables that can change what compile_all_kernels builds."""
    base = [ctx.model_dir, os.path.dirname(compile_path), ctx.verify_dir, ctx.llms_dir, ctx.pe_dir]
    # The KernelCache module is a compile input too: its compile_and_cache prepares
    # air_project/ and builds the external kernels (shared.infra.external_kernels).
    cache_mod = os.path.join(ctx.llms_dir, "shared", "infra", "cache.py")
    roots = [compile_path] + ([cache_mod] if os.path.isfile(cache_mod) else [])
    order, _, _ = import_closure(ctx, roots, base)
    files = set(order)
    env_names = {}
    for path in order:
        parsed = parse_file(path)
        if not parsed:
            continue
        for src in path_literals(parsed, C_SUFFIXES):
            files.add(src)
            files.update(quoted_includes(src))
        for name, _ in env_reads(parsed):
            env_names.setdefault(name, None)
    registry = os.path.join(ctx.pe_dir, "kernel_registry")
    if any(p.startswith(registry + os.sep) for p in order):
        for root, _, names in os.walk(registry):
            files.update(os.path.join(root, n) for n in names if n.endswith(".json"))
    models = sorted({m for m in (ctx.model_of(p) for p in files) if m and m != ctx.model})
    env = {name: ctx.environ.get(name) for name in sorted(env_names)}
    return sorted(ctx.rel(p) for p in files), env, models


# ---------------------------------------------------------------------------
# Preflight


def _version_tuple(text):
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def preflight_python(ctx, closure, pyver):
    """python-version / tree-syntax findings and the imports.unparsed records."""
    running = _version_tuple(pyver)
    unparsed, needs, broken = [], [], []
    for path in closure:
        parsed = parse_file(path)
        if not parsed or not parsed.issues:
            continue
        for issue in parsed.issues:
            rec = {"file": ctx.rel(path), "line": issue.line, "source_line": issue.source_line or issue.line,
                   "error": issue.message,
                   "needs_python": ".".join(map(str, issue.needs)) if issue.needs else None,
                   "fallback": parsed.fallback}
            unparsed.append(rec)
            if issue.needs and running[:2] < issue.needs:
                needs.append((issue, path))
            elif not issue.needs:
                broken.append((issue, path))
    out = []
    if needs:
        top = max(i.needs for i, _ in needs)
        where = ", ".join(f"{ctx.rel(p)}:{i.line}" + (f" (construct on line {i.source_line})"
                                                      if i.source_line and i.source_line != i.line else "")
                          for i, p in needs)
        feats = ", ".join(sorted({i.feature for i, _ in needs}))
        out.append(finding("python-version", "fail", "environment",
                           f"needs Python >= {top[0]}.{top[1]} ({feats}): {where}; running {pyver}",
                           f"run with Python >= {top[0]}.{top[1]} (a {top[0]}.{top[1]} venv with the tree's "
                           "requirements)"))
    else:
        out.append(finding("python-version", "ok", "environment",
                           f"all {len(closure)} imported tree files parse on Python {pyver}"))
    for issue, path in broken:
        out.append(finding("tree-syntax", "fail", "tree",
                           f"{ctx.rel(path)}:{issue.line}: SyntaxError: {issue.message}",
                           "fix the syntax error in the tree (it fails on every Python)"))
    return out, unparsed


def preflight_packages(closure_packages, reference_real, emulate_npu=False):
    """Checked with importlib.util.find_spec on the running interpreter (never imported).
    With `emulate_npu` (--emulate) the NPU packages are the probe's emulated runtime."""
    out = []
    wanted = list(CORE_PACKAGES)
    if reference_real:
        wanted += list(REFERENCE_PACKAGES)
    wanted += [p for p in NPU_PACKAGES if p in closure_packages]
    for name in wanted:
        if emulate_npu and name in NPU_PACKAGES:
            out.append(finding(f"package-{name}", "ok", "environment",
                               f"{name}: emulated by the probe (--emulate: CPU twins of the ELFs)"))
            continue
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        used = name in closure_packages or name in REFERENCE_PACKAGES
        fid = f"package-{name}"
        if found:
            out.append(finding(fid, "ok", "environment", f"{name} is importable"))
        elif not used:
            out.append(finding(fid, "ok", "environment", f"{name} is not installed and the tree does not import it"))
        else:
            out.append(finding(fid, "fail", "environment", f"{name} is not installed (the run imports it)",
                               PACKAGE_FIX.get(name, f"pip install {name}")))
    return out


def preflight_device(device_glob, emulated, emulate_npu=False):
    if emulate_npu:
        return finding("npu-device", "ok", "environment", "--emulate: no NPU needed (CPU twins of the ELFs)")
    if glob.glob(device_glob):
        return finding("npu-device", "ok", "environment", f"NPU device present ({device_glob})")
    if emulated:
        return finding("npu-device", "ok", "environment", "emulated tree: no NPU needed")
    return finding("npu-device", "fail", "environment",
                   f"no NPU: {device_glob} missing; this is not an NPU host",
                   "run on an NPU host (amdxdna driver loaded, /dev/accel/accel0 present; if it vanished, "
                   "power-cycle the runner)")


def hf_hub_dir(environ):
    if environ.get("HF_HUB_CACHE"):
        return environ["HF_HUB_CACHE"]
    if environ.get("HUGGINGFACE_HUB_CACHE"):
        return environ["HUGGINGFACE_HUB_CACHE"]
    if environ.get("HF_HOME"):
        return os.path.join(environ["HF_HOME"], "hub")
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".cache", "huggingface", "hub")


def preflight_hf_cache(model_id, environ):
    fix = (f"huggingface-cli download {model_id} (gated models such as meta-llama/* need a token: "
           "huggingface-cli login or HF_TOKEN)")
    if not model_id:
        return finding("hf-cache", "fail", "environment", "no model id to look up in the HF cache",
                       "pass a model choice or HF id")
    if os.path.isabs(model_id) and os.path.isdir(model_id):
        snap = model_id
    else:
        hub = hf_hub_dir(environ)
        repo = os.path.join(hub, "models--" + model_id.replace("/", "--"))
        ref = os.path.join(repo, "refs", "main")
        rev = (read_text(ref) or "").strip()
        if not rev:
            return finding("hf-cache", "fail", "environment",
                           f"{model_id} is not in the HF cache ({ref} missing)", fix)
        snap = os.path.join(repo, "snapshots", rev)
    missing = []
    if not os.path.isfile(os.path.join(snap, "config.json")):
        missing.append("config.json")
    if not any(os.path.isfile(os.path.join(snap, n)) for n in ("tokenizer.json", "tokenizer_config.json")):
        missing.append("tokenizer.json/tokenizer_config.json")
    if missing:
        return finding("hf-cache", "fail", "environment",
                       f"{model_id} snapshot {snap} lacks {', '.join(missing)}", fix)
    return finding("hf-cache", "ok", "environment", f"{model_id} cached at {snap}")


# ---------------------------------------------------------------------------
# The plan


def make_plan(model_dir, air_root=None, *, environ=None, online=False, model_choice=None, prompt=None,
              prompt_style=None, cpu_attn=None, seq_len=None, device_glob="/dev/accel/accel*",
              python_version=None, emulate_npu=False):
    """The static Phase 2 plan for one model (see module docstring). Raises
    ProbeError on a bad layout (no llms dir, no verify/, no verify_adapter.py)."""
    environ = dict(os.environ if environ is None else environ)
    ctx = Ctx(model_dir, air_root, environ)
    pyver = python_version or platform.python_version()
    emulated = os.path.isfile(os.path.join(ctx.air_root, EMULATED_MARKER))
    findings = []

    roots = [ctx.adapter] + [p for p in (ctx.model_file("prefill"), ctx.model_file("weights"),
                                         ctx.model_file("inference")) if p]
    hf_runner = os.path.join(ctx.verify_dir, "runners", "hf_runner.py")
    roots.append(hf_runner)
    closure, packages, extra = import_closure(ctx, roots)
    ctx.extra_path = extra

    cfg, cfg_source, cfg_why = read_config(ctx)
    if cfg is None:
        findings.append(finding("config", "warn", "tree", f"model config not resolved statically: {cfg_why}",
                                "give verify_adapter.build_config() a plain `return <Config>()` of a dataclass "
                                "with literal defaults"))
    defaults, choices = read_defaults(ctx)
    eff, overrides = apply_overrides(ctx, defaults, choices, prompt, prompt_style, model_choice, cpu_attn)
    seq = int(seq_len) if seq_len else _declared_seq_len(ctx) or DEFAULT_SEQ_LEN

    block, compile_ = find_block(ctx)
    does, block_path = tree_does_step2(ctx, block, compile_)
    s1 = step1(ctx, cfg, block, compile_, does, findings)
    s2 = step2(ctx, cfg, does, block_path)
    refused = refusal(ctx, cfg, cfg_why, choices)

    # Preflight: environment first, then what the tree itself says.
    pre, unparsed = preflight_python(ctx, closure, pyver)
    hf_text = read_text(hf_runner) or ""
    reference_real = not emulated and bool(re.search(r"^\s*(from|import)\s+transformers\b", hf_text, re.MULTILINE))
    pre += preflight_packages(packages, reference_real, emulate_npu)
    pre.append(preflight_device(device_glob, emulated, emulate_npu))
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
        "defaults": defaults,
        "effective": {"prompt": eff["prompt"], "prompt_source": eff["prompt_source"],
                      "model_choice": eff["model_choice"], "model_id": eff["model_id"],
                      "cpu_attn": eff["cpu_attn"], "seq_len": seq},
        "overrides": overrides,
        "python": {"version": pyver, "executable": sys.executable if python_version is None else None},
        "hf_offline": not online,
        "imports": {"files": sorted(ctx.rel(p) for p in closure), "packages": sorted(packages),
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
    where = f"{blk['function']} ({blk['file']}:{blk['line']}, {blk['where']})" if blk else "no block function"
    seq = {True: "matches llama's", False: "differs from llama's"}.get(s1.get("matches"), "unknown")
    lines.append(f"step1: path {s1['path']}; kernel sequence {seq}; block {where}")
    for b in s1.get("breaks", []):
        lines.append(f"step1 break ({b['rule']}): {b['detail']}")
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
