"""Issue 30: after the probe's last write it skips the interpreter's teardown (os._exit) only when
no XRT binding was loaded, so a real device is always released by XRT itself. Run as the runner
runs it (`python scripts/probe ...`, a process of its own): an atexit handler the run registers
shows whether the normal teardown ran."""

import os
import subprocess
import sys
import tempfile
import unittest

from test.python.support import PROBE, needs

# The probe's __main__ run as a script, with `entry` replaced by one that loads numpy (as every
# run past its plan does), optionally a module named pyxrt (an XRT binding), and registers an
# atexit handler that writes a marker file.
DRIVER = r"""
import atexit, os, runpy, sys, types
marker, with_xrt, probe = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
import numpy
if with_xrt:
    sys.modules["pyxrt"] = types.ModuleType("pyxrt")
atexit.register(lambda: open(marker, "w").write("torn down"))
sys.path.insert(0, probe)
import npu_probe.cli
npu_probe.cli.entry = lambda argv=None: 0
sys.argv = [probe]
runpy.run_path(probe, run_name="__main__")
"""


class ProbeExit(unittest.TestCase):
    def run_driver(self, with_xrt):
        with tempfile.TemporaryDirectory() as d:
            marker = os.path.join(d, "marker")
            r = subprocess.run([sys.executable, "-c", DRIVER, marker, "1" if with_xrt else "0", PROBE],
                               capture_output=True, text=True, timeout=120)
            if "No module named 'numpy'" in r.stderr:
                self.skipTest(needs("numpy", "this Python has none"))
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            return os.path.exists(marker)

    def test_no_device_skips_the_teardown(self):
        self.assertFalse(self.run_driver(with_xrt=False), "the teardown ran though no XRT binding was loaded")

    def test_an_xrt_binding_gets_the_normal_teardown(self):
        self.assertTrue(self.run_driver(with_xrt=True), "os._exit skipped the teardown after an XRT binding was loaded")


if __name__ == "__main__":
    unittest.main()
