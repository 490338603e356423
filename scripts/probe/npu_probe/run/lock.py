"""The NPU lock: one process on the device at a time.

mlir-air's skills wrap NPU use in `flock -x -w 1800 /tmp/mlir-air-npu.lock`, because two
processes on the NPU at once crash it with out-of-memory. The probe takes the same lock with
flock(2) (fcntl.flock), so it waits for a skill's run and a skill waits for it. The kernel
drops the lock when its holder dies, so a crashed run never leaves it stale.

Never take /tmp/npu.lock here: KernelCache.load_and_run takes that one itself, and holding it
from outside deadlocks.
"""

import contextlib
import fcntl
import os
import time

from npu_probe.core.errors import TreeCrash
from npu_probe.core.contract import NPU_LOCK_ENV, NPU_LOCK_PATH, NPU_LOCK_PROGRESS, NPU_LOCK_TIMEOUT

DEFAULT_LOCK = NPU_LOCK_PATH
DEFAULT_TIMEOUT = NPU_LOCK_TIMEOUT
LOCK_ENV = NPU_LOCK_ENV
PROGRESS_EVERY = NPU_LOCK_PROGRESS


class LockTimeout(TreeCrash):
    """Waited too long for the NPU (exit 3: infrastructure, not the user's input)."""

    def __init__(self, path, waited, holder):
        super().__init__(path, TimeoutError(
            f"waited {waited:.0f}s for the NPU lock{f', held by {holder}' if holder else ''}"))


def lock_path(arg):
    """--npu-lock, else $NPU_BLOCK_GATE_NPU_LOCK, else the skills' lock; 'none' turns it off."""
    path = arg or os.environ.get(LOCK_ENV) or DEFAULT_LOCK
    return None if path.strip().lower() == "none" else path


def holder_of(path, proc="/proc"):
    """'pid N (command line)' of the process holding a flock on path, from /proc/locks; None if unknown."""
    try:
        st = os.stat(path)
        with open(os.path.join(proc, "locks")) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    want = st.st_ino
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234567 0 EOF" (blocked waiters have "->")
        if "->" in parts or len(parts) < 6:
            continue
        try:
            pid = int(parts[4])
            inode = int(parts[5].split(":")[-1])
        except ValueError:
            continue
        if inode != want or pid == os.getpid():
            continue
        try:
            with open(os.path.join(proc, str(pid), "cmdline"), "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            cmd = ""
        return f"pid {pid}" + (f" ({cmd[:120]})" if cmd else "")
    return None


@contextlib.contextmanager
def npu_lock(path, timeout, log, clock=time.monotonic, sleep=time.sleep):
    """Hold an exclusive flock on path for the body; wait up to timeout seconds with progress lines."""
    if path is None:
        log.step("NPU lock: off (--npu-lock none)")
        yield 0.0
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        t0 = clock()
        next_note = t0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                now = clock()
                if now - t0 >= timeout:
                    raise LockTimeout(path, now - t0, holder_of(path))
                if now >= next_note:
                    holder = holder_of(path)
                    log.step(f"waiting for the NPU lock {path}{f' (held by {holder})' if holder else ''}: "
                             f"{now - t0:.0f}s of {timeout:.0f}s")
                    next_note = now + PROGRESS_EVERY
                sleep(0.25)
        waited = clock() - t0
        if waited >= 1:
            log.step(f"NPU lock {path} taken after {waited:.0f}s")
        yield waited
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def npu_lock_unless(no_npu, opts, log):
    """The NPU lock, unless no NPU runs here (an emulated NPU: there is nothing to wait for, and a
    demo must not wait on another job's hardware run)."""
    if no_npu:
        log.detail("NPU lock: not taken (no NPU runs: the NPU is emulated)")
        return contextlib.nullcontext(0.0)
    return npu_lock(lock_path(opts.npu_lock), opts.lock_timeout, log)
