"""`--positions N` and the lens record on air-mini (numpy only, fast).

- `block --positions N`: N real tokens (the prompt continued with the prompt set's other
  prompts, the set repeated when it runs out), the padded length raised to hold them,
  probe.json prompt.positions says how; the reference has N rows too;
- N larger than the compiled seq_len, or not positive: exit 2, one line, no probe.json;
- air-mini is in no ELF boundary table, but its block returns every boundary and its emulated
  reference records them: the lens record holds 16 pairs; `--no-boundaries` leaves probe.json
  `boundaries` null; `--emulate` runs the tree's own emulated NPU.

run: python3 -m unittest test.python.test_probe_positions -v
"""

import json
import os
import shutil
import tempfile
import unittest

import numpy as np

from test.python.support import REPO, run_probe

AIR_MINI = os.path.join(REPO, "examples", "air-mini")


class PositionsTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="probe-positions-")
        cls.tree = os.path.join(cls.tmp, "air")
        shutil.copytree(AIR_MINI, cls.tree, ignore=shutil.ignore_patterns("__pycache__", "build_peano"))
        cls.model = os.path.join(cls.tree, "programming_examples", "llms", "tiny_llama")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def block(self, out, *extra):
        return run_probe("block", "--model-dir", self.model, "--out", out, "--ref-cache", "none", "--npu-lock", "none",
                         *extra)

    def load(self, out):
        with open(os.path.join(out, "probe.json"), encoding="utf-8") as f:
            return json.load(f)

    def test_positions_fill_the_input(self):
        out = os.path.join(self.tmp, "p100")
        r = self.block(out, "--positions", "100")
        self.assertEqual(r.returncode, 0, r.stderr)
        p = self.load(out)["prompt"]
        pos = p["positions"]
        self.assertEqual((p["real_len"], len(p["token_ids"]), pos["requested"], pos["real_len"]), (100, 100, 100, 100))
        self.assertIn(pos["method"], ("continued", "repeated"))
        self.assertEqual(pos["set"], "verify/prompts/instruct.txt")
        self.assertGreater(pos["prompts_used"], 0)
        self.assertEqual(p["padded_len"], 128)  # PREFILL_SEQ_LEN 64, raised to hold 100 tokens
        self.assertEqual(np.load(os.path.join(out, "block0.ref.npy")).shape[0], 100)
        self.assertIn("positions: 100 real tokens", r.stderr)

        short = os.path.join(self.tmp, "p5")
        r = self.block(short, "--positions", "5")
        self.assertEqual(r.returncode, 0, r.stderr)
        p5 = self.load(short)["prompt"]
        self.assertEqual((p5["positions"]["method"], p5["real_len"]), ("truncated", 5))
        self.assertEqual(p5["token_ids"], p["token_ids"][:5], "the same prompt, cut")

        plain = os.path.join(self.tmp, "plain")
        self.assertEqual(self.block(plain).returncode, 0)
        self.assertIsNone(self.load(plain)["prompt"]["positions"])

    def test_too_many_positions_is_bad_input(self):
        for n, pat in (("4096", "--positions: 4096 exceeds the compiled seq_len"),
                       ("0", "--positions: 0 is not a positive number")):
            out = os.path.join(self.tmp, f"bad{n}")
            r = self.block(out, "--positions", n)
            self.assertEqual(r.returncode, 2, r.stderr)
            errors = [ln for ln in r.stderr.splitlines() if ln.startswith("probe: error:")]
            self.assertEqual(len(errors), 1, r.stderr)
            self.assertIn(pat, errors[0])
            self.assertFalse(os.path.exists(os.path.join(out, "probe.json")))

    def test_lens_record_from_the_block_and_the_emulated_reference(self):
        # air-mini is in no ELF boundary table, but its block returns every boundary and its
        # emulated reference records the same ones under the lens's names: 16 pairs, none unpaired.
        out = os.path.join(self.tmp, "lens")
        r = self.block(out)
        self.assertEqual(r.returncode, 0, r.stderr)
        p = self.load(out)
        b = p["boundaries"]
        self.assertEqual((b["source"], b["table"], b["emulated"], b["reference"], b["unpaired"]),
                         ("returned", None, True, "reference-layer0-record/1", []))
        names = [e["name"] for e in b["entries"]]
        self.assertEqual(names, ["block_input", "attn_norm", "q", "k", "v", "q_roped", "k_roped", "attn_out", "o_proj",
                                 "res1", "ffn_norm", "gate", "up", "swiglu", "down", "ffn_out"])
        self.assertEqual([e["order"] for e in b["entries"]], sorted(e["order"] for e in b["entries"]))
        for e in b["entries"]:
            for side in ("npu", "ref"):
                self.assertTrue(os.path.isfile(os.path.join(out, e[side]["file"])), e[side]["file"])
        self.assertIsNone(p["emulate"], "without --emulate the run does not say emulated at the top")

        off = os.path.join(self.tmp, "nolens")
        self.assertEqual(self.block(off, "--no-boundaries").returncode, 0)
        self.assertIsNone(self.load(off)["boundaries"])
        self.assertFalse(os.path.isdir(os.path.join(off, "boundaries")))

    def test_emulate_on_a_tree_that_emulates_its_own_npu(self):
        # --emulate needs the ELF boundary table, except on a tree whose NPU is itself emulated
        # (air-mini): that NPU runs, and the run says so.
        out = os.path.join(self.tmp, "emu")
        r = self.block(out, "--emulate")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("--emulate needs the model in the ELF boundary table", r.stderr)
        emu = self.load(out)["emulate"]
        self.assertTrue(emu["runtime"].startswith("air-mini: the tree's own emulated NPU"), emu)
        self.assertIsNone(emu["inject"])

if __name__ == "__main__":
    unittest.main()
