"""The probe's NPU lock (npu_probe.run.lock): flock(2) shared with mlir-air's skills."""

import fcntl
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "probe"))

from npu_probe.run import lock as probe_lock  # noqa: E402


class Log:
    def __init__(self):
        self.lines = []

    def step(self, message):
        self.lines.append(message)


class FakeClock:
    """Advances only when the lock loop sleeps: no real waiting, no timing in the test."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


class NpuLockTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="nbg-lock-")
        self.path = os.path.join(self.tmp, "npu.lock")

    def hold(self):
        """Another open file description holding the lock, as another process would."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self.addCleanup(os.close, fd)
        return fd

    def test_free_lock_is_taken_and_released(self):
        log = Log()
        clock = FakeClock()
        with probe_lock.npu_lock(self.path, 5, log, clock=clock, sleep=clock.sleep) as waited:
            self.assertEqual(waited, 0.0)
            self.assertEqual(log.lines, [])  # no waiting, nothing said
            other = os.open(self.path, os.O_RDWR)
            with self.assertRaises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # Exclusive: not even a shared lock (a reader's) gets in while the probe holds it.
            with self.assertRaises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
            os.close(other)
        other = os.open(self.path, os.O_RDWR)
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released on exit
        os.close(other)

    def test_held_lock_times_out_with_exit_3_and_progress(self):
        self.hold()
        clock = FakeClock()
        log = Log()
        with self.assertRaises(probe_lock.LockTimeout) as ctx:
            with probe_lock.npu_lock(self.path, 40, log, clock=clock, sleep=clock.sleep):
                self.fail("entered the body without the lock")
        self.assertEqual(ctx.exception.exit_code, 3)
        self.assertIn("waited 40s for the NPU lock", ctx.exception.one_line())
        notes = [l for l in log.lines if l.startswith("waiting for the NPU lock")]
        self.assertEqual(len(notes), 3)  # at 0, 15 and 30 s: progress, not a flood

    def test_none_turns_it_off(self):
        self.hold()
        self.assertIsNone(probe_lock.lock_path("none"))
        log = Log()
        with probe_lock.npu_lock(None, 1, log):
            pass
        self.assertIn("NPU lock: off", log.lines[0])

    def test_lock_path_order(self):
        old = os.environ.pop(probe_lock.LOCK_ENV, None)
        try:
            self.assertEqual(probe_lock.lock_path(None), "/tmp/mlir-air-npu.lock")
            os.environ[probe_lock.LOCK_ENV] = "/x.lock"
            self.assertEqual(probe_lock.lock_path(None), "/x.lock")
            self.assertEqual(probe_lock.lock_path("/y.lock"), "/y.lock")
        finally:
            os.environ.pop(probe_lock.LOCK_ENV, None)
            if old is not None:
                os.environ[probe_lock.LOCK_ENV] = old

    def test_holder_named_from_proc_locks(self):
        open(self.path, "w").close()
        ino = os.stat(self.path).st_ino
        proc = os.path.join(self.tmp, "proc")
        os.makedirs(os.path.join(proc, "4242"))
        with open(os.path.join(proc, "locks"), "w") as f:
            f.write(f"1: POSIX  ADVISORY  WRITE 77 00:2d:999 0 EOF\n")
            f.write(f"2: FLOCK  ADVISORY  WRITE 4242 fd:01:{ino} 0 EOF\n")
            f.write(f"2: -> FLOCK  ADVISORY  WRITE 5151 fd:01:{ino} 0 EOF\n")
        with open(os.path.join(proc, "4242", "cmdline"), "wb") as f:
            f.write(b"python3\0llama32_1b_inference.py\0--run-only\0")
        self.assertEqual(probe_lock.holder_of(self.path, proc=proc), "pid 4242 (python3 llama32_1b_inference.py --run-only)")
        self.assertIsNone(probe_lock.holder_of(os.path.join(self.tmp, "missing"), proc=proc))


if __name__ == "__main__":
    unittest.main()
