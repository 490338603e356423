"""`probe block --layers`: every layer's ffn_out through the adapter's runner and
the same HF reference prefill (run: python3 -m unittest discover -s test/python -t .)."""

import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(REPO, "scripts", "probe")
AIR_MINI = os.path.join(REPO, "examples", "air-mini")
TINY_LLAMA = os.path.join(AIR_MINI, "programming_examples", "llms", "tiny_llama")
sys.path.insert(0, PROBE)
sys.path.insert(0, os.path.join(REPO, "test", "python"))
from support import run_probe  # noqa: E402

from npu_probe.run import stages as probe_run  # noqa: E402
from npu_probe.core.errors import ProbeError  # noqa: E402
from fakes import fake_tree  # noqa: E402




def cosine(a, b):
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


class _Log:
    def __init__(self):
        self.lines = []

    def step(self, message):
        self.lines.append(message)


class WriteLayersTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="probe-layers-unit-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_shape_mismatch_names_the_layer_and_writes_nothing(self):
        npu = {0: np.zeros((4, 8), np.float32), 1: np.zeros((5, 8), np.float32)}
        ref = {0: np.zeros((4, 8), np.float32), 1: np.zeros((4, 8), np.float32)}
        with self.assertRaises(ProbeError) as cm:
            probe_run.write_layers(self.tmp, "m.verify_adapter.build_runner.prefill", npu, ref, 3, _Log())
        self.assertEqual(cm.exception.exit_code, 2)
        self.assertIn("layer 1", cm.exception.one_line())
        self.assertNotIn("\n", cm.exception.one_line())
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "layers")))

    def test_only_layers_on_both_sides_below_the_last(self):
        a = np.arange(32, dtype=np.float32).reshape(4, 8)
        npu = {0: a, 1: a, 2: a}
        ref = {0: a, 2: a}
        log = _Log()
        rec = probe_run.write_layers(self.tmp, "src.prefill", npu, ref, 3, log)
        self.assertEqual([e["layer"] for e in rec["entries"]], [0])
        self.assertEqual(rec["entries"][0]["npu"], {"file": "layers/layer_00.npu.npy", "dtype": "f32", "shape": [4, 8]})
        self.assertEqual(rec["source"], "src.prefill")
        self.assertIn("layers: 1 layers through src.prefill", log.lines)
        np.testing.assert_array_equal(np.load(os.path.join(self.tmp, "layers", "layer_00.ref.npy")), a)

    def test_adapter_path_reuses_the_block0_prefill(self):
        mdir = fake_tree.build(self.tmp, entry="adapter")
        out = os.path.join(self.tmp, "run")
        res = run_probe("block", "--model-dir", mdir, "--out", out, "--npu-lock", "none", "--layers")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stderr.count("building the adapter's NPU runner"), 1)  # not built twice
        with open(os.path.join(out, "probe.json"), encoding="utf-8") as f:
            p = json.load(f)
        self.assertEqual(p["layers"]["source"], "fake_m.verify_adapter.build_runner.prefill")
        self.assertEqual(p["timings"]["layers_npu"], 0.0)
        real = p["prompt"]["real_len"]
        for e in p["layers"]["entries"]:
            self.assertEqual(e["npu"]["shape"][0], real)
            self.assertEqual(e["npu"]["shape"], e["ref"]["shape"])


@unittest.skipUnless(os.path.isfile(os.path.join(TINY_LLAMA, "verify_adapter.py")), "examples/air-mini not present")
class LayersEndToEndTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="probe-layers-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        # A copy, so kernel caches under build_peano/ stay out of the repo.
        self.root = os.path.join(self.tmp, "air")
        shutil.copytree(AIR_MINI, self.root, ignore=shutil.ignore_patterns("build_peano", "__pycache__"))
        self.model_dir = os.path.join(self.root, "programming_examples", "llms", "tiny_llama")

    def block(self, name, *extra, env=None):
        out = os.path.join(self.tmp, name)
        res = run_probe("block", "--model-dir", self.model_dir, "--out", out, "--npu-lock", "none", *extra, env=env)
        self.assertEqual(res.returncode, 0, res.stderr)
        with open(os.path.join(out, "probe.json"), encoding="utf-8") as f:
            return out, json.load(f), res

    def layer_pairs(self, out, p):
        for e in p["layers"]["entries"]:
            yield e, np.load(os.path.join(out, e["npu"]["file"])), np.load(os.path.join(out, e["ref"]["file"]))

    def test_clean_run(self):
        out, p, res = self.block("clean", "--layers")
        self.assertEqual(p["model"]["config"]["n_layers"], 3)
        real, emb = p["prompt"]["real_len"], p["model"]["config"]["emb_dim"]
        layers = p["layers"]
        self.assertEqual(layers["source"], "tiny_llama.verify_adapter.build_runner.prefill")
        self.assertEqual([e["layer"] for e in layers["entries"]], [0, 1])
        self.assertIn(f"probe: layers: 2 layers through {layers['source']}", res.stderr)
        for e, npu, ref in self.layer_pairs(out, p):
            with self.subTest(layer=e["layer"]):
                nn = f"{e['layer']:02d}"
                self.assertEqual(e["npu"], {"file": f"layers/layer_{nn}.npu.npy", "dtype": "f32", "shape": [real, emb]})
                self.assertEqual(e["ref"], {"file": f"layers/layer_{nn}.ref.npy", "dtype": "f32", "shape": [real, emb]})
                self.assertEqual(npu.shape, (real, emb))
                self.assertEqual(ref.shape, (real, emb))
                self.assertEqual(npu.dtype, np.dtype("<f4"))
                self.assertGreaterEqual(cosine(npu, ref), 0.999)
        # Same computation path: the adapter's layer 0 is block 0's output (real rows);
        # the reference is the same HfRunner prefill record, so equal too.
        block_npu = np.load(os.path.join(out, "block0.npu.npy"))
        layer0 = np.load(os.path.join(out, "layers", "layer_00.npu.npy"))
        self.assertLessEqual(float(np.abs(block_npu[:real] - layer0).max()), 1e-6)
        np.testing.assert_array_equal(np.load(os.path.join(out, "block0.ref.npy")),
                                      np.load(os.path.join(out, "layers", "layer_00.ref.npy")))

    def test_transposed_q_weight_is_in_every_layer(self):
        out, p, _ = self.block("bug", "--layers", env={"AIR_MINI_INJECT": "transposed_q_weight"})
        pairs = {e["layer"]: (npu, ref) for e, npu, ref in self.layer_pairs(out, p)}
        self.assertEqual(sorted(pairs), [0, 1])
        for layer, (npu, ref) in pairs.items():
            with self.subTest(layer=layer):
                self.assertLess(cosine(npu, ref), 0.9)

    def test_without_layers_the_field_is_null(self):
        out, p, res = self.block("plain")
        self.assertIn("layers", p)
        self.assertIsNone(p["layers"])
        self.assertFalse(os.path.exists(os.path.join(out, "layers")))
        self.assertNotIn("probe: layers:", res.stderr)

    def test_help_names_the_flag(self):
        self.assertIn("--layers", run_probe("block", "--help").stdout)


if __name__ == "__main__":
    unittest.main()
