"""`probe check --events`: the 'knobs' handshake (issue 15). The probe's environment is an
allow-list; before any tree code runs, the probe names the tree's own knobs (the variables its
compile reads, kernel_cache.inputs.env) and takes the caller's values for them. Only names it asked
for are set, never one already set, and the plan records the values it got (the kernel cache key).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(REPO, "scripts", "probe")
sys.path.insert(0, os.path.join(REPO, "test", "python"))
from fakes import fake_tree  # noqa: E402

PREFIX = json.load(open(os.path.join(PROBE, "contract.json")))["control"]["event_prefix"]


class KnobsHandshakeTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="probe-knobs-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def run_check(self, answer):
        model = fake_tree.build(self.tmp)
        out = os.path.join(self.tmp, "run")
        env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_") and k != "AIR_MINI_INJECT"}
        env["FAKE_NPU_NAN_PAD"] = ""  # set (empty): the caller's value must not replace it
        p = subprocess.Popen([sys.executable, PROBE, "check", "--model-dir", model, "--out", out, "--events",
                              "--ref-cache", "none", "--npu-lock", "none"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        events = []
        for line in p.stderr:
            if not line.startswith(PREFIX):
                continue
            ev = json.loads(line[len(PREFIX):])
            events.append(ev)
            if ev["event"] == "knobs":
                p.stdin.write(json.dumps(answer(ev)) + "\n")
                p.stdin.flush()
            elif ev["event"] == "config":
                p.stdin.write("{}\n")
                p.stdin.flush()
        self.assertEqual(p.wait(timeout=300), 0)
        with open(os.path.join(out, "probe.json")) as f:
            return events, json.load(f)

    def test_the_tree_knobs_are_named_before_config_and_the_answer_is_recorded(self):
        events, probe = self.run_check(lambda ev: {"env": {"FAKE_HOSTILE_READ": "/nonexistent", "FAKE_NPU_NAN_PAD": "1", "GH_PAT": "ghp_x"}})
        kinds = [e["event"] for e in events]
        self.assertLess(kinds.index("knobs"), kinds.index("config"))
        names = next(e for e in events if e["event"] == "knobs")["names"]
        self.assertIn("FAKE_HOSTILE_READ", names)
        self.assertNotIn("GH_PAT", names)
        env = probe["kernel_cache"]["inputs"]["env"]
        self.assertEqual(env["FAKE_HOSTILE_READ"], "/nonexistent", "the plan was made again with the value it got")
        self.assertEqual(env["FAKE_NPU_NAN_PAD"], "", "a variable already set is never replaced")
        self.assertNotIn("GH_PAT", env)

    def test_no_answer_sets_nothing(self):
        _, probe = self.run_check(lambda ev: {})
        self.assertIsNone(probe["kernel_cache"]["inputs"]["env"]["FAKE_HOSTILE_READ"])


if __name__ == "__main__":
    unittest.main()
