"""`probe plan|plans|config|block|check|bisect`: the run's frame (plan gate, run dir, log, signals,
exit codes) around the stages (npu_probe.run, npu_probe.bisect). `entry` is what
scripts/probe/__main__.py runs. Standard library only at import: numpy, the stages and the tree
are imported only by the commands that need them, so `plan` and `--help` run anywhere."""

import contextlib
import dataclasses
import json
import os
import signal
import sys
import time
import traceback
import warnings

from npu_probe.args import build_parser
from npu_probe.core import hfhub
from npu_probe.core.context import Started
from npu_probe.core.contract import (
    BOUNDARIES_DIR,
    EVENT_PREFIX,
    EXIT_BAD_INPUT,
    EXIT_INFRA,
    EXIT_NO_NUMPY,
    EXIT_OK,
    INPUT_NPY,
    LAYERS_DIR,
    NPU_NPY,
    PROBE_JSON,
    PROBE_LOG,
    REF_NPY,
)
from npu_probe.core.errors import EnvironmentProblem, ProbeError, TreeCrash
from npu_probe.core.log import ProbeLog
from npu_probe.core.options import Options



def emit(event, **fields):
    """One machine-readable line for the TypeScript side (only with --events)."""
    sys.stderr.write(EVENT_PREFIX + json.dumps(dict(event=event, **fields), sort_keys=True) + "\n")
    sys.stderr.flush()


def hub_offline(online):
    """No run waits on hub retries: the local HF cache only, unless --online."""
    if not online:
        hfhub.go_offline(os.environ)


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


def make_plan(opts):
    from npu_probe.plan.build import make_plan as _make  # noqa: PLC0415 - stdlib only; loaded when needed
    from npu_probe.plan.request import Host, PlanRequest  # noqa: PLC0415

    request = PlanRequest(model_dir=opts.model_dir, air_root=opts.air_root, online=opts.online,
                          model_choice=opts.hf_model, prompt=opts.prompt, prompt_style=opts.prompt_style,
                          cpu_attn=opts.cpu_attn, seq_len=opts.seq_len, emulate_npu=opts.emulate)
    return _make(request, Host(environ=os.environ))


def run_plan(opts):
    """`probe plan`: print the plan; exit 2 when Phase 2 cannot run on this model."""
    from npu_probe.plan.report import plan_exit_code, plan_lines  # noqa: PLC0415

    hub_offline(opts.online)
    if (opts.hf_config is None) == (opts.model_dir is None):
        sys.stderr.write("probe: error: plan: give --model-dir DIR or --hf-config PATH|ID (one of them)\n")
        return EXIT_BAD_INPUT
    if opts.hf_config is not None:
        return run_plan_hf(opts)
    try:
        plan = make_plan(opts)
    except ProbeError as exc:
        sys.stderr.write(f"probe: error: {exc.one_line()}\n")
        return exc.exit_code
    code = plan_exit_code(plan)
    sanity = None
    if opts.sanity:
        from npu_probe.reference.step2_sanity import Unavailable, sanity_for_plan  # noqa: PLC0415 - torch only here

        try:
            sanity = sanity_for_plan(plan)
        except Unavailable as exc:
            sys.stderr.write(f"probe: error: plan --sanity: {exc}\n")
            return EXIT_INFRA
        plan["step2_sanity"] = sanity
    if opts.json:
        sys.stdout.write(json.dumps(plan, indent=2, sort_keys=False) + "\n")
    else:
        lines = plan_lines(plan)
        if code and lines:  # the one line saying why comes first, as an error
            sys.stderr.write(f"probe: error: {lines[0]}\n")
            lines = lines[1:]
        for line in lines:
            sys.stdout.write(line + "\n")
        if sanity is not None:
            from npu_probe.reference.step2_sanity import sanity_lines  # noqa: PLC0415

            for line in sanity_lines(sanity):
                sys.stdout.write(line + "\n")
    return code  # plan judges nothing: a sanity FAIL is printed (and `ok` in --json), not an exit code


def run_plan_hf(opts):
    """`probe plan --hf-config`: Steps 1 and 2 from a config.json alone."""
    from npu_probe.plan.hfonly import lines, plan_from_config  # noqa: PLC0415 - stdlib only

    try:
        plan = plan_from_config(opts.hf_config, opts.air_root)
    except ProbeError as exc:
        sys.stderr.write(f"probe: error: {exc.one_line()}\n")
        return exc.exit_code
    out = json.dumps(plan, indent=2) if opts.json else "\n".join(lines(plan))
    sys.stdout.write(out + "\n")
    return 0


def run_plans(opts):
    """`probe plans`: every model dir's plan in one process (the fleet's affected reads the whole
    tree). A model whose plan cannot be made is an entry with its error; the command exits 0."""
    from npu_probe.plan.report import plan_exit_code  # noqa: PLC0415

    hub_offline(False)
    out = []
    for model_dir in opts.model_dirs:
        try:
            plan = make_plan(dataclasses.replace(opts, model_dir=model_dir))
            out.append({"model_dir": model_dir, "exit": plan_exit_code(plan), "plan": plan})
        except ProbeError as exc:
            out.append({"model_dir": model_dir, "exit": exc.exit_code, "error": exc.one_line()})
        except Exception as exc:  # a bug in the plan on one model: that model's error, not the tree's
            out.append({"model_dir": model_dir, "exit": EXIT_INFRA, "error": f"probe internal error: {type(exc).__name__}: {' '.join(str(exc).split())}"})
    sys.stdout.write(json.dumps({"plans": out}, sort_keys=False) + "\n")
    return EXIT_OK


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


def check_options(opts):
    """Option combinations, before anything runs (exit 2, one line)."""
    from npu_probe.core.contract import EMULATE_INJECTIONS  # noqa: PLC0415

    inject, emulate = opts.inject, opts.emulate
    if inject is not None and not emulate:
        raise ProbeError("--inject", "needs --emulate (bugs are injected into the emulated NPU's twins)")
    if inject is not None and inject not in EMULATE_INJECTIONS:
        raise ProbeError("--inject", f"unknown bug {inject!r}; choose one of: {', '.join(EMULATE_INJECTIONS)}")
    if opts.twin_eps != "tree" and not emulate:
        raise ProbeError("--twin-eps", "needs --emulate (it sets the emulated NPU's RMSNorm eps)")
    if emulate and opts.layers:
        raise ProbeError("--layers", "cannot run with --emulate (the adapter's runner compiles its own kernels)")
    positions = opts.positions
    if positions is not None and positions <= 0:
        raise ProbeError("--positions", f"{positions} is not a positive number of tokens")


def handshake(opts, log):
    """`check --events`: tell the caller the config stage is done and wait for its
    answer (it may restore the kernel cache meanwhile). EOF means go on."""
    if not opts.events:
        return bool(opts.reuse_kernels)
    emit("config", probe_json=os.path.join(opts.out, PROBE_JSON))
    line = sys.stdin.readline()
    try:
        answer = json.loads(line) if line.strip() else {}
    except ValueError:
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    if answer.get("note"):
        log.detail(f"caller: {answer['note']}")
    return bool(answer.get("reuse_kernels") or opts.reuse_kernels)


# The knobs ask_knobs set in this process: unset again when main() ends (tests call it in-process).
_knobs_set = []


def ask_knobs(opts, plan):
    """`check --events`: name the tree's own environment knobs (those that can change what it
    compiles: kernel_cache.inputs.env) and take the caller's values for them, before any of the
    tree's code runs. The caller hands the probe an allow-listed environment and answers this for a
    trusted run only. Only names asked for and not set already are set. True when any was set."""
    if not opts.events or opts.command != "check":
        return False
    names = sorted(((plan.get("kernel_cache") or {}).get("inputs") or {}).get("env") or {})
    if not names:
        return False
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
    _knobs_set.extend(given)
    return bool(given)


def run(opts, log, plan, started):
    """config, block or check on one context (`started`: npu_probe.core.context.Started)."""
    from npu_probe.run.config import open_run  # noqa: PLC0415 - imports numpy and the tree
    from npu_probe.run.stages import run_block, write_config  # noqa: PLC0415

    ctx = open_run(opts, log, plan, started)
    try:
        if opts.command == "config":
            return write_config(ctx, opts.out)
        if opts.command == "check":
            write_config(ctx, opts.out)
            reuse = handshake(opts, log)
            _unlink(os.path.join(opts.out, PROBE_JSON))  # stage config no longer describes the run dir
            return run_block(ctx, opts.out, reuse_kernels=reuse, want_layers=opts.layers)
        return run_block(ctx, opts.out, reuse_kernels=opts.reuse_kernels, want_layers=opts.layers)
    finally:
        if ctx.state.emulation is not None:
            ctx.state.emulation.close()


class Terminated(BaseException):
    """SIGTERM (e.g. the TypeScript side's --timeout): unwind so temp files go."""


def _on_sigterm(signum, frame):
    raise Terminated()


def main(opts, argv, t0=None):
    """Run one command (Options) to its exit code; `argv` for the log, `t0` when the probe's
    clock started (probe.json timings.total)."""
    if opts.command == "plan":
        return run_plan(opts)
    if opts.command == "plans":
        return run_plans(opts)
    if opts.command == "bisect":
        opts = dataclasses.replace(opts, run_dir=os.path.abspath(opts.run_dir))  # runs from the build dir too
    else:
        opts = dataclasses.replace(opts, out=os.path.abspath(opts.out))  # the block stage runs from the build dir
    log = ProbeLog(echo_details=opts.verbose)
    code = EXIT_OK
    with _restored(log):
        try:
            body = _prepare(opts, log, t0)
            log.detail(f"probe {opts.command} argv={argv}")
            with _warnings_to(log), contextlib.redirect_stdout(log.tree_output()):
                body()
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
    return code


def _prepare(opts, log, t0):
    """What comes before the body: for bisect the run dir's check and log; for the others the
    option check, the plan gate, the run dir and its log. Returns the body to run."""
    if opts.command == "bisect":
        from npu_probe.bisect import rundir  # noqa: PLC0415 - numpy and the tree only when needed
        from npu_probe.bisect.main import run_bisect  # noqa: PLC0415

        rundir.check_run_dir(opts.run_dir)
        # Bisect adds to a finished run dir: its log goes after the block's.
        log.attach(os.path.join(opts.run_dir, PROBE_LOG), append=True)
        rundir.clear_stale(opts.run_dir)
        return lambda: run_bisect(opts, log)
    check_options(opts)
    hub_offline(opts.online)
    t = time.monotonic()
    plan = gate(make_plan(opts), log)
    if ask_knobs(opts, plan):  # the plan records the knobs' values (the kernel cache key)
        plan = gate(make_plan(opts), log)
    started = Started(t0=t0, plan_seconds=time.monotonic() - t)
    prepare_run_dir(opts.out)
    log.attach(os.path.join(opts.out, PROBE_LOG))
    return lambda: run(opts, log, plan, started)


@contextlib.contextmanager
def _restored(log):
    """SIGTERM unwinds (temp files go); sys.path and the hub variables are put back; the log closes."""
    saved_path = list(sys.path)
    saved_env = {k: os.environ.get(k) for k in hfhub.OFFLINE_VARS}
    try:
        old_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (tests calling main() from a thread)
        old_sigterm = None
    try:
        yield
    finally:
        if old_sigterm is not None:
            signal.signal(signal.SIGTERM, old_sigterm)
        sys.path[:] = saved_path
        while _knobs_set:
            os.environ.pop(_knobs_set.pop(), None)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        log.close()


@contextlib.contextmanager
def _warnings_to(log):
    """Python warnings (the tree's too) go to probe.log, not stderr."""
    old = warnings.showwarning

    def _warn_to_log(message, category, filename, lineno, file=None, line=None):
        log.detail(warnings.formatwarning(message, category, filename, lineno, line))

    warnings.showwarning = _warn_to_log
    try:
        yield
    finally:
        warnings.showwarning = old


def entry(argv=None):
    """`python3 scripts/probe ...`: parse, check this Python has numpy (its own exit code, so the
    TypeScript side tries the next Python), then main()."""
    # Under uid isolation the probe runs as another user in the runner's group: what it creates
    # (build dirs, the run dir's files) stays writable for the runner, which cleans it up.
    if os.environ.get("NPU_BLOCK_GATE_UMASK", "").strip() in ("002", "0002"):
        os.umask(0o002)
    args = build_parser().parse_args(argv)
    opts = Options.from_args(args)
    t0 = None
    if opts.command not in ("plan", "plans"):
        try:
            import numpy  # noqa: PLC0415
        except ImportError as exc:
            sys.stderr.write(
                f"probe: error: numpy: {type(exc).__name__}: {exc} (run the probe with the mlir-air environment's python)\n"
            )
            return EXIT_NO_NUMPY
        # The probe's own clock starts here (probe.json timings.total): interpreter start-up
        # and the numpy import before it are the tool's overhead, not the probe's.
        t0 = time.monotonic()
        if opts.events:
            info = {"event": "python", "executable": sys.executable, "version": sys.version.split()[0],
                    "numpy": numpy.__version__}
            sys.stderr.write(EVENT_PREFIX + json.dumps(info, sort_keys=True) + "\n")
            sys.stderr.flush()
    return main(opts, sys.argv[1:] if argv is None else argv, t0)
