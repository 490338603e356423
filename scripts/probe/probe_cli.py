"""`probe plan|config|block|check|bisect`: the run's frame (plan gate, run dir,
log, signals, exit codes) around the stages in probe_run and probe_bisect."""

import contextlib
import json
import os
import signal
import sys
import time
import traceback
import warnings

from probe_args import build_parser
from probe_errors import EnvironmentProblem, ProbeError, TreeCrash
from probe_log import ProbeLog
from probe_schema import (
    BOUNDARIES_DIR,
    EVENT_PREFIX,
    EXIT_INFRA,
    EXIT_OK,
    INPUT_NPY,
    LAYERS_DIR,
    NPU_NPY,
    PROBE_JSON,
    PROBE_LOG,
    REF_NPY,
)

HUB_OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def emit(event, **fields):
    """One machine-readable line for the TypeScript side (only with --events)."""
    sys.stderr.write(EVENT_PREFIX + json.dumps(dict(event=event, **fields), sort_keys=True) + "\n")
    sys.stderr.flush()


def hub_offline(online):
    """No run waits on hub retries: the local HF cache only, unless --online."""
    if not online:
        for var in HUB_OFFLINE_VARS:
            os.environ[var] = "1"


def prepare_run_dir(out):
    if os.path.exists(out) and not os.path.isdir(out):
        raise ProbeError(out, "run dir exists and is not a directory")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise ProbeError(out, f"cannot create run dir: {exc.strerror or exc}") from exc
    # A stale probe.json would vouch for files this run is about to replace.
    for name in (PROBE_JSON, NPU_NPY, REF_NPY, INPUT_NPY):
        _unlink(os.path.join(out, name))
    layers_dir = os.path.join(out, LAYERS_DIR)
    if os.path.isdir(layers_dir):
        for name in os.listdir(layers_dir):
            if name.startswith("layer_") and name.endswith(".npy"):
                _unlink(os.path.join(layers_dir, name))
    bdir = os.path.join(out, BOUNDARIES_DIR)
    if os.path.isdir(bdir):
        for name in os.listdir(bdir):
            if name.endswith(".npy"):
                _unlink(os.path.join(bdir, name))


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# ---------------------------------------------------------------------------
# The plan: first in every run, and a command of its own


def make_plan(args):
    from probe_plan import make_plan as _make  # noqa: PLC0415 - stdlib only; loaded when needed

    return _make(args.model_dir, args.air_root, environ=os.environ, online=args.online,
                 model_choice=args.hf_model, prompt=args.prompt, prompt_style=args.prompt_style,
                 cpu_attn=args.cpu_attn, seq_len=getattr(args, "seq_len", None),
                 emulate_npu=bool(getattr(args, "emulate", False)))


def run_plan(args):
    """`probe plan`: print the plan; exit 2 when Phase 2 cannot run on this model."""
    from probe_plan import plan_exit_code, plan_lines  # noqa: PLC0415

    hub_offline(args.online)
    try:
        plan = make_plan(args)
    except ProbeError as exc:
        sys.stderr.write(f"probe: error: {exc.one_line()}\n")
        return exc.exit_code
    code = plan_exit_code(plan)
    if args.json:
        sys.stdout.write(json.dumps(plan, indent=2, sort_keys=False) + "\n")
    else:
        lines = plan_lines(plan)
        if code and lines:  # the one line saying why comes first, as an error
            sys.stderr.write(f"probe: error: {lines[0]}\n")
            lines = lines[1:]
        for line in lines:
            sys.stdout.write(line + "\n")
    return code


def gate(plan, log):
    """Stop before anything is imported or compiled: a model Phase 2 cannot run on
    or a broken tree is exit 2; a missing piece of the environment (no NPU, no air,
    Python too old, no HF snapshot) is exit 3, one line naming all of it."""
    refusal = plan.get("refusal")
    model = (plan.get("model") or {}).get("dir") or "model dir"
    if refusal:
        needs = f"; Phase 2 needs {refusal['needs']}" if refusal.get("needs") else ""
        raise ProbeError(model, f"{refusal['reason']}{needs}")
    failed = [f for f in plan.get("preflight") or [] if f.get("status") == "fail"]
    tree = [f for f in failed if f.get("kind") == "tree"]
    if tree:
        raise ProbeError(model, "; ".join(f["message"] for f in tree))
    env = [f for f in failed if f.get("kind") != "tree"]
    if env:
        for f in env:  # the fixes, one per finding, in probe.log and `npu-block-gate plan`
            log.detail(f"preflight: {f['message']} (fix: {f.get('fix') or '-'})")
        raise EnvironmentProblem("this machine cannot run the model", "; ".join(f["message"] for f in env)
                                 + " (npu-block-gate plan --model-dir ... lists the fixes)")
    for f in plan.get("preflight") or []:
        if f.get("status") == "warn":
            log.step(f"preflight warning: {f['message']}")
    step1 = plan.get("step1") or {}
    if step1.get("path"):
        block = (step1.get("block") or {}).get("function")
        log.step(f"plan: Step 1 {step1['path']}" + (f" (block 0: {block})" if block else ""))
    return plan


def check_options(args):
    """Option combinations, before anything runs (exit 2, one line)."""
    from probe_schema import EMULATE_INJECTIONS  # noqa: PLC0415

    inject = getattr(args, "inject", None)
    emulate = bool(getattr(args, "emulate", False))
    if inject is not None and not emulate:
        raise ProbeError("--inject", "needs --emulate (bugs are injected into the emulated NPU's twins)")
    if inject is not None and inject not in EMULATE_INJECTIONS:
        raise ProbeError("--inject", f"unknown bug {inject!r}; choose one of: {', '.join(EMULATE_INJECTIONS)}")
    if emulate and getattr(args, "layers", False):
        raise ProbeError("--layers", "cannot run with --emulate (the adapter's runner compiles its own kernels)")
    positions = getattr(args, "positions", None)
    if positions is not None and positions <= 0:
        raise ProbeError("--positions", f"{positions} is not a positive number of tokens")


def handshake(args, out, log):
    """`check --events`: tell the caller the config stage is done and wait for its
    answer (it may restore the kernel cache meanwhile). EOF means go on."""
    if not getattr(args, "events", False):
        return bool(args.reuse_kernels)
    emit("config", probe_json=os.path.join(out, PROBE_JSON))
    line = sys.stdin.readline()
    try:
        answer = json.loads(line) if line.strip() else {}
    except ValueError:
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    if answer.get("note"):
        log.detail(f"caller: {answer['note']}")
    return bool(answer.get("reuse_kernels") or args.reuse_kernels)


def ask_knobs(args):
    """`check --events`: name the tree's own environment knobs (those that can change what it
    compiles: kernel_cache.inputs.env) and take the caller's values for them, before any of the
    tree's code runs. The caller hands the probe an allow-listed environment and answers this for a
    trusted run only. Returns the names it set (unset again when main() ends)."""
    if not getattr(args, "events", False) or args.command != "check":
        return []
    names = sorted(((args.plan.get("kernel_cache") or {}).get("inputs") or {}).get("env") or {})
    if not names:
        return []
    emit("knobs", names=names)
    line = sys.stdin.readline()
    try:
        answer = json.loads(line) if line.strip() else {}
    except ValueError:
        answer = {}
    env = answer.get("env") if isinstance(answer, dict) else None
    given = {k: v for k, v in (env if isinstance(env, dict) else {}).items()
             if k in names and isinstance(v, str) and "\0" not in v and k not in os.environ}
    os.environ.update(given)
    return sorted(given)


def run(args, log):
    """config, block or check on one context."""
    from probe_context import open_run  # noqa: PLC0415 - imports numpy and the tree
    from probe_run import run_block, write_config  # noqa: PLC0415

    ctx = open_run(args, log, args.plan)
    try:
        if args.command == "config":
            return write_config(ctx, args.out)
        if args.command == "check":
            write_config(ctx, args.out)
            reuse = handshake(args, args.out, log)
            _unlink(os.path.join(args.out, PROBE_JSON))  # stage config no longer describes the run dir
            return run_block(ctx, args.out, reuse_kernels=reuse, want_layers=args.layers)
        return run_block(ctx, args.out, reuse_kernels=args.reuse_kernels, want_layers=args.layers)
    finally:
        if ctx.emulation is not None:
            ctx.emulation.close()


class Terminated(BaseException):
    """SIGTERM (e.g. the TypeScript side's --timeout): unwind so temp files go."""


def _on_sigterm(signum, frame):
    raise Terminated()


def main(argv=None, args=None):
    if args is None:
        args = build_parser().parse_args(argv)
    if args.command == "plan":
        return run_plan(args)
    bisect = args.command == "bisect"
    if bisect:
        args.run_dir = os.path.abspath(args.run_dir)  # runs from the build dir too
    else:
        args.out = os.path.abspath(args.out)  # the block stage runs from the build dir
    log = ProbeLog(echo_details=args.verbose)
    code = EXIT_OK
    saved_path = list(sys.path)
    saved_env = {k: os.environ.get(k) for k in HUB_OFFLINE_VARS}
    knobs = []
    old_showwarning = warnings.showwarning
    try:
        old_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (tests calling main() from a thread)
        old_sigterm = None

    def _warn_to_log(message, category, filename, lineno, file=None, line=None):
        log.detail(warnings.formatwarning(message, category, filename, lineno, line))

    try:
        if bisect:
            import probe_bisect  # noqa: PLC0415 - numpy and the tree only when needed

            probe_bisect.check_run_dir(args.run_dir)
            # Bisect adds to a finished run dir: its log goes after the block's.
            log.attach(os.path.join(args.run_dir, PROBE_LOG), append=True)
            probe_bisect.clear_stale(args.run_dir)
            body = probe_bisect.run_bisect
        else:
            check_options(args)
            hub_offline(args.online)
            t = time.monotonic()
            args.plan = gate(make_plan(args), log)
            knobs = ask_knobs(args)
            if knobs:  # the plan records the knobs' values (the kernel cache key)
                args.plan = gate(make_plan(args), log)
            args.plan_seconds = time.monotonic() - t
            prepare_run_dir(args.out)
            log.attach(os.path.join(args.out, PROBE_LOG))
            body = run
        log.detail(f"probe {args.command} argv={sys.argv[1:] if argv is None else argv}")
        warnings.showwarning = _warn_to_log
        with contextlib.redirect_stdout(log.tree_output()):
            body(args, log)
    except (ProbeError, EnvironmentProblem) as exc:
        log.error(exc.one_line())
        code = exc.exit_code
    except TreeCrash as exc:
        log.detail("".join(traceback.format_exception(type(exc.exc), exc.exc, exc.exc.__traceback__)))
        log.error(exc.one_line())
        code = exc.exit_code
    except KeyboardInterrupt:
        log.error("interrupted")
        code = 130
    except Terminated:
        log.error("terminated (SIGTERM)")
        code = 143
    except SystemExit as exc:  # the tree called sys.exit(): a crash inside the tree, not bad input
        log.detail(traceback.format_exc())
        log.error(f"the tree called sys.exit({exc.code!r})")
        code = EXIT_INFRA
    except Exception as exc:  # a bug in the probe itself: still one line, still exit 3
        log.detail(traceback.format_exc())
        msg = " ".join(str(exc).split())
        log.error(f"probe internal error: {type(exc).__name__}: {msg}")
        code = EXIT_INFRA
    finally:
        warnings.showwarning = old_showwarning
        if old_sigterm is not None:
            signal.signal(signal.SIGTERM, old_sigterm)
        sys.path[:] = saved_path
        for k in knobs:
            os.environ.pop(k, None)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        log.close()
    return code

