"""A test-only fork server: one process imports the heavy third-party modules of a probe run
(torch, transformers, numpy, ...) once, then fork()s one child per run. Each child is a process
of its own with its own pid, argv, stdout, stderr and exit code; it runs the probe's code as it
is on disk (nothing of scripts/probe is imported before the fork), so a bug planted there shows.

Why: a `probe block` on a tiny checkpoint spends about 3.5 of its 4.8 CPU-seconds importing
torch and transformers, and test_real_twins runs it some fifty times.

Only tests use it (test_real_twins' probe runs); src/ and scripts/ never start it, and it runs
this checkout's probe on the fixtures the test built, so a pull request's code never reaches it.

`ForkServer(env).run(script, args, env=..., timeout=...)` stands for
`subprocess.run([sys.executable, script, *args], env=env, capture_output=True, text=True,
timeout=timeout)`, and differs from it only in what the fork keeps:
- the server starts with `env` and takes only runs with that same environment (`run` spawns a
  fresh interpreter for any other): modules that read the environment when imported
  (huggingface_hub's hub path and offline switch) must have read the run's values;
- the modules of PRELOAD are already imported (their import-time environment changes too, as in
  a fresh process that imports them); the child's numpy legacy RNG is reseeded from entropy, as a
  fresh process's would be;
- stdin is /dev/null (scripts/test.mjs gives the jobs no stdin either).
The child ends as the interpreter would: SystemExit's code (a non-int printed, exit 1), an
uncaught exception's traceback and exit 1, a signal as a negative returncode; non-daemon threads
are joined and atexit handlers run before it exits.

Protocol (the server's stdin and stdout, one JSON line each): request {"argv", "cwd",
"stdout", "stderr"}; the server answers {"pid"} once forked and {"code"} once the child ended;
EOF on stdin ends the server.
"""

import json
import os
import select
import signal
import subprocess
import sys
import tempfile

# What a `probe block --emulate` imports of the venv's heavy modules (HfRunner, the tiny
# checkpoints' model classes); the rest of a run imports in the child as usual.
PRELOAD = ("numpy", "ml_dtypes", "safetensors", "tokenizers", "torch", "transformers",
           "transformers.models.auto.modeling_auto", "transformers.models.auto.tokenization_auto",
           "transformers.models.llama.modeling_llama", "transformers.models.qwen2.modeling_qwen2",
           "transformers.models.qwen3.modeling_qwen3", "transformers.models.qwen2.tokenization_qwen2")


class ForkServer:
    """The client: starts the server (this file, run by this interpreter) with `env`."""

    def __init__(self, env, preload=PRELOAD, tmp_parent=None):
        self.env = dict(env)
        self.tmp = tempfile.mkdtemp(prefix="npu-block-gate-forkserver-", dir=tmp_parent)
        self.n = 0
        self.log = os.path.join(self.tmp, "server.err")  # a file: a pipe nobody reads could fill and block it
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), *preload], env=self.env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        self.buf = b""
        try:
            self._expect("ready", timeout=600)
        except BaseException:
            self.close()
            raise

    def _read(self, timeout):
        """The server's next JSON line, or None after `timeout` seconds."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            r, _, _ = select.select([fd], [], [], timeout)
            if not r:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                with open(self.log, encoding="utf-8", errors="replace") as f:
                    err = f.read()
                raise RuntimeError(f"the fork server ended (status {self.proc.wait()}): {err[-3000:]}")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def _expect(self, key, timeout):
        """The server's next answer, which must hold `key`."""
        msg = self._read(timeout)
        if not isinstance(msg, dict) or key not in msg:
            raise RuntimeError(f"the fork server gave {msg!r} where {key!r} was due (within {timeout} s)")
        return msg[key]

    def run(self, script, args, env, timeout=None):
        """subprocess.run([sys.executable, script, *args], env=env, capture_output=True, text=True, timeout=...)."""
        if not os.path.isabs(script):
            raise ValueError(f"the fork server runs a script by its absolute path, not {script!r}")
        argv = [script, *args]
        if dict(env) != self.env:
            return subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, timeout=timeout)
        self.n += 1
        out, err = (os.path.join(self.tmp, f"{self.n}.{s}") for s in ("out", "err"))
        req = {"argv": argv, "cwd": os.getcwd(), "stdout": out, "stderr": err}
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        pid = self._expect("pid", timeout=60)
        done = self._read(timeout)
        if done is None:
            os.kill(pid, signal.SIGKILL)  # what subprocess.run does on a timeout
            self._expect("code", timeout=60)
        texts = []
        for path in (out, err):
            with open(path, encoding=None, errors="strict") as f:  # text=True: locale encoding, universal newlines
                texts.append(f.read())
            os.unlink(path)
        cmd = [sys.executable, *argv]
        if done is None:
            raise subprocess.TimeoutExpired(cmd, timeout, output=texts[0], stderr=texts[1])
        return subprocess.CompletedProcess(cmd, done["code"], texts[0], texts[1])

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        elif not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.stdout.close()
        for name in os.listdir(self.tmp):
            os.unlink(os.path.join(self.tmp, name))
        os.rmdir(self.tmp)


# ---------------------------------------------------------------------------------------------
# the server


def _send(obj):
    os.write(1, (json.dumps(obj) + "\n").encode())


def _exit_code(exc):
    """What the interpreter exits with for SystemExit(exc.code) (a non-int is printed, exit 1)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:  # noqa: BLE001 - as the interpreter: a failing print is not an exit code
        pass
    return 1


def _child(req, protocol_fds):
    import atexit  # noqa: PLC0415
    import runpy  # noqa: PLC0415
    import threading  # noqa: PLC0415

    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for fd in protocol_fds:
        os.close(fd)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.closerange(3, 1 << 16)  # close_fds=True, as subprocess.run
    os.chdir(req["cwd"])
    if "numpy.random" in sys.modules:  # a fresh process seeds its legacy RNG from entropy
        sys.modules["numpy.random"].seed()
    script = req["argv"][0]
    sys.argv = list(req["argv"])
    # sys.path[0] is this file's directory; `python script` has the script's there instead (a
    # directory's own path, which run_path puts there itself).
    sys.path[:] = sys.path[1:] if os.path.isdir(script) else [os.path.dirname(os.path.realpath(script)), *sys.path[1:]]
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc)
    except KeyboardInterrupt:
        code = -signal.SIGINT
    except BaseException:  # noqa: BLE001 - as the interpreter: the traceback, exit 1
        sys.excepthook(*sys.exc_info())
        code = 1
    try:
        threading._shutdown()  # noqa: SLF001 - what the interpreter does at exit: join non-daemon threads
    except Exception:  # noqa: BLE001
        pass
    atexit._run_exitfuncs()  # noqa: SLF001
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - the interpreter exits 120 when stdout cannot be flushed
            code = code or 120
    if code < 0:  # an uncaught KeyboardInterrupt: the interpreter dies of SIGINT
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def serve(preload):
    import importlib  # noqa: PLC0415

    for name in preload:
        importlib.import_module(name)
    if len(os.listdir("/proc/self/task")) != 1:
        raise RuntimeError("a preloaded module started a thread: forking now would copy its locks half-held")
    _send({"ready": True})
    stdin = os.fdopen(0, "rb", buffering=0)
    line = b""
    while True:
        chunk = stdin.read(65536)
        if not chunk:
            return
        line += chunk
        while b"\n" in line:
            raw, line = line.split(b"\n", 1)
            req = json.loads(raw)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                try:
                    _child(req, (0, 1))
                finally:
                    os._exit(70)  # _child never returns; a bug in it must not run the server's loop
            _send({"pid": pid})
            _, status = os.waitpid(pid, 0)
            _send({"code": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    serve(sys.argv[1:])
