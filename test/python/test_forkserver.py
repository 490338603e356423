"""test/python/forkserver.py, the test-only fork server test_real_twins runs its probe blocks
through: each run must be what `subprocess.run([sys.executable, script, *args], env=env,
capture_output=True, text=True, timeout=...)` gives (argv, cwd, output, exit code, a timeout),
in a process of its own that sees nothing an earlier run did, with the preloaded modules
already imported. Standard library only (xml.dom.minidom stands for torch as the preloaded module)."""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

from test.python.forkserver import ForkServer

SCRIPT = textwrap.dedent("""\
    import json, os, sys
    import marker
    seen = {"argv": sys.argv, "cwd": os.getcwd(), "pid": os.getpid(), "path0": sys.path[0],
            "preloaded": "xml.dom.minidom" in sys.modules, "marker_count": marker.count, "env": os.environ.get("FS_MARK"),
            "left": os.environ.get("FS_LEFT"), "main": __name__}
    marker.count += 1
    os.environ["FS_LEFT"] = "set by an earlier run"
    what = sys.argv[1]
    print(json.dumps(seen))
    sys.stdout.write("no newline at the end")
    if what == "exit3":
        sys.stderr.write("to stderr\\n")
        sys.exit(3)
    if what == "message":
        sys.exit("a message instead of a code")
    if what == "raise":
        raise ValueError("an uncaught error")
    if what == "kill":
        import signal
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    if what == "sleep":
        import time
        time.sleep(30)
    if what == "atexit":
        import atexit, threading, time
        atexit.register(lambda: print("atexit ran"))
        threading.Thread(target=lambda: (time.sleep(0.3), print("thread joined"))).start()
""")


class ForkServerTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="npu-block-gate-fs-test-")
        cls.script = os.path.join(cls.tmp, "script.py")
        with open(cls.script, "w", encoding="utf-8") as f:
            f.write(SCRIPT)
        with open(os.path.join(cls.tmp, "marker.py"), "w", encoding="utf-8") as f:
            f.write("count = 0\n")
        cls.env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        cls.env.update(FS_MARK="the server's environment", PYTHONDONTWRITEBYTECODE="1")
        cls.server = ForkServer(cls.env, preload=("xml.dom.minidom",))

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def both(self, *args):
        """The server's run and a real subprocess.run of the same command."""
        served = self.server.run(self.script, args, env=self.env, timeout=60)
        real = subprocess.run([sys.executable, self.script, *args], env=self.env, capture_output=True, text=True,
                              timeout=60)
        return served, real

    @staticmethod
    def seen(r):
        import json  # noqa: PLC0415

        return json.loads(r.stdout.splitlines()[0])

    def test_argv_cwd_output_and_exit_code_are_those_of_a_real_run(self):
        served, real = self.both("exit3", "two words", "--flag=x")
        self.assertEqual((served.returncode, real.returncode), (3, 3))
        self.assertEqual(served.stderr, real.stderr)
        self.assertEqual(served.stderr, "to stderr\n")
        self.assertEqual(served.args, real.args)
        s, r = self.seen(served), self.seen(real)
        for k in ("argv", "cwd", "path0", "env", "main", "marker_count"):
            self.assertEqual(s[k], r[k], k)
        self.assertEqual(s["argv"], [self.script, "exit3", "two words", "--flag=x"])
        self.assertEqual(served.stdout.splitlines()[1], "no newline at the end")

    def test_each_run_is_a_process_of_its_own_that_sees_nothing_an_earlier_run_did(self):
        first, second = (self.server.run(self.script, ["ok"], env=self.env, timeout=60) for _ in range(2))
        a, b = self.seen(first), self.seen(second)
        self.assertNotEqual(a["pid"], b["pid"])
        self.assertNotIn(self.server.proc.pid, (a["pid"], b["pid"]))
        self.assertEqual((a["marker_count"], b["marker_count"]), (0, 0), "a module imported by a run is imported afresh")
        self.assertEqual((a["left"], b["left"]), (None, None), "an earlier run's environment change is gone")

    def test_the_preloaded_modules_are_imported_before_the_run(self):
        served, real = self.both("ok")
        self.assertEqual((served.returncode, real.returncode), (0, 0))
        self.assertEqual((self.seen(served)["preloaded"], self.seen(real)["preloaded"]), (True, False))

    def test_a_message_an_uncaught_exception_and_a_signal_end_it_as_the_interpreter_would(self):
        for what in ("message", "raise", "kill"):
            with self.subTest(what=what):
                served, real = self.both(what)
                self.assertEqual(served.returncode, real.returncode)
                self.assertEqual(served.returncode, {"message": 1, "raise": 1, "kill": -9}[what])
                if what == "message":
                    self.assertEqual(served.stderr, real.stderr)
                    self.assertEqual(served.stderr, "a message instead of a code\n")
                if what == "raise":
                    self.assertEqual(served.stderr.splitlines()[0], "Traceback (most recent call last):")
                    self.assertEqual(served.stderr.splitlines()[-1], "ValueError: an uncaught error")

    def test_atexit_handlers_run_and_threads_are_joined_before_it_exits(self):
        served, real = self.both("atexit")
        self.assertEqual(served.returncode, 0)
        self.assertEqual(served.stdout.splitlines()[1:], real.stdout.splitlines()[1:])
        self.assertEqual(served.stdout.splitlines()[-2:], ["no newline at the endthread joined", "atexit ran"])

    def test_a_timeout_kills_the_run_raises_as_subprocess_run_does_and_the_server_goes_on(self):
        with self.assertRaises(subprocess.TimeoutExpired) as cm:
            self.server.run(self.script, ["sleep"], env=self.env, timeout=1)
        self.assertEqual(cm.exception.timeout, 1)
        after = self.server.run(self.script, ["ok"], env=self.env, timeout=60)
        self.assertEqual(after.returncode, 0)

    def test_a_server_that_cannot_preload_says_why(self):
        parent = tempfile.mkdtemp(dir=self.tmp)
        with self.assertRaises(RuntimeError) as cm:
            ForkServer(self.env, preload=("npu_block_gate_no_such_module",), tmp_parent=parent)
        self.assertIn("No module named 'npu_block_gate_no_such_module'", str(cm.exception))
        self.assertEqual(os.listdir(parent), [], "its temp dir is gone")

    def test_another_environment_runs_in_a_fresh_interpreter(self):
        other = dict(self.env, FS_MARK="another environment")
        r = self.server.run(self.script, ["ok"], env=other, timeout=60)
        s = self.seen(r)
        self.assertEqual(s["env"], "another environment")
        self.assertNotEqual(s["pid"], self.server.proc.pid)


if __name__ == "__main__":
    unittest.main()
