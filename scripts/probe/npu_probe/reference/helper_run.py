"""One of the tree's padding helpers, run alone and bounded (`plan --sanity`, issue 25).

step2_sanity checks first that every node of the helper is plain arithmetic; plain arithmetic can
still run without end or eat the machine (`return 9**9**9**2`), and `plan --sanity` runs outside the
probe's sandbox. So the helper runs in a child Python of its own (this interpreter, isolated: `-I
-S`, no site, no environment, from /), under resource limits set before the helper is compiled:
HELPER_CPU_SECONDS of CPU, HELPER_MEMORY_BYTES of address space, no file writes, no core file;
and the child is killed after HELPER_WALL_SECONDS whatever it does. What it returns comes back as
JSON; whatever stopped it comes back as one line (HelperError).
"""

import json
import subprocess
import sys

HELPER_CPU_SECONDS = 2
HELPER_WALL_SECONDS = 10
HELPER_MEMORY_BYTES = 256 * 1024 * 1024

# The child: limits first, then the helper's definition with the given builtins only, then one call.
_CHILD = r"""
import builtins, json, resource, sys
req = json.loads(sys.stdin.read())
cpu, mem = req["cpu"], req["mem"]
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU at cpu, SIGKILL a second later
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
def answer(d):
    sys.stdout.write(json.dumps(d))
    sys.stdout.flush()
try:
    ns = {"__builtins__": {n: getattr(builtins, n) for n in req["builtins"]}}
    exec(compile(req["source"], req["file"], "exec"), ns)
    got = ns[req["name"]](*req["args"])
    got = got if isinstance(got, tuple) else (got,)
    ints = [v for v in got if isinstance(v, int) and not isinstance(v, bool)]
    answer({"ints": ints if len(ints) == len(got) else None, "repr": repr(got)[:200]})
except MemoryError:
    answer({"error": "MemoryError: over its memory limit of %d MiB" % (mem // 1048576)})
except BaseException as exc:
    answer({"error": "%s: %s" % (type(exc).__name__, " ".join(str(exc).split())[:300])})
"""


class HelperError(Exception):
    """The helper did not return: what stopped it, one line."""


def run_helper(source, file, name, args, builtin_names):
    """(ints or None, repr) of `name(*args)` after `source` (one def) ran in a bounded child.
    ints: the helper's values when it returned ints (one or a tuple), else None. Raises HelperError."""
    req = {"source": source, "file": file, "name": name, "args": list(args), "builtins": sorted(builtin_names),
           "cpu": HELPER_CPU_SECONDS, "mem": HELPER_MEMORY_BYTES}
    try:
        r = subprocess.run([sys.executable, "-I", "-S", "-c", _CHILD], input=json.dumps(req), capture_output=True,
                           text=True, timeout=HELPER_WALL_SECONDS, env={}, cwd="/", check=False)
    except subprocess.TimeoutExpired as exc:
        raise HelperError(f"stopped after {HELPER_WALL_SECONDS} s, its time limit") from exc
    except OSError as exc:
        raise HelperError(f"cannot start a Python for it: {exc}") from exc
    if r.returncode < 0:
        sig = -r.returncode
        if sig in (9, 24):  # SIGXCPU at RLIMIT_CPU's soft limit, SIGKILL at its hard one
            raise HelperError(f"stopped at its CPU time limit of {HELPER_CPU_SECONDS} s, signal {sig}")
        raise HelperError(f"killed by signal {sig}")
    try:
        out = json.loads(r.stdout)
    except ValueError as exc:
        last = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise HelperError(f"no answer ({last[:300]})") from exc
    if "error" in out:
        raise HelperError(out["error"])
    return (tuple(out["ints"]) if out["ints"] is not None else None), out["repr"]
