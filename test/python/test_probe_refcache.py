"""Reference cache (npu_probe.reference.refcache): air-mini copies, explicit temp cache dirs.

run: python3 -m unittest discover -s test/python -t .
"""

import json
import os
import shutil
import sys
import tempfile
import types
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(REPO, "scripts", "probe")
AIR_MINI = os.path.join(REPO, "examples", "air-mini")
sys.path.insert(0, PROBE)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402

# Probe runs elsewhere in this suite pass no --ref-cache: keep them out of the
# user's ~/.cache (every test here passes its own temp dir, which wins over this).
os.environ["NPU_BLOCK_GATE_REF_CACHE"] = "none"

from npu_probe.reference import refcache as probe_refcache  # noqa: E402

# Installed through PYTHONPATH in the probe subprocess: importing the tree's
# runners.hf_runner raises, so a run that needs HfRunner fails (exit 3).
BLOCK_HF_RUNNER = '''
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name == "runners.hf_runner":
            raise RuntimeError("hf_runner blocked by the test")
        return None
sys.meta_path.insert(0, _Block())
'''


def run_probe(*args, env=None):
    return support.run_probe(*args, env=env, drop=("AIR_MINI_INJECT", "NPU_BLOCK_GATE_REF_CACHE", "NPU_BLOCK_GATE_CACHE_DIR"))


@unittest.skipUnless(os.path.isdir(AIR_MINI), "examples/air-mini not present")
class RefCacheAirMiniTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="probe-refcache-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = os.path.join(self.tmp, "air")
        shutil.copytree(AIR_MINI, self.root, ignore=shutil.ignore_patterns("build_peano", "__pycache__"))
        self.mdir = os.path.join(self.root, "programming_examples", "llms", "tiny_llama")
        self.cache = os.path.join(self.tmp, "refcache")
        self.n = 0

    def block(self, *extra, env=None, cache=None):
        self.n += 1
        out = os.path.join(self.tmp, f"run{self.n}")
        # Without the lens: store() below stands in for the trusted side with the layers alone (an
        # entry made with the lens also holds its boundaries; test/cache-reference.test.ts covers those).
        res = run_probe("block", "--model-dir", self.mdir, "--out", out, "--ref-cache", cache or self.cache,
                        "--no-boundaries", *extra, env=env)
        return res, out

    def probe_json(self, out):
        with open(os.path.join(out, "probe.json"), encoding="utf-8") as f:
            return json.load(f)

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def store(self, out):
        """Stands in for the trusted side (src/cache/reference.ts, tested with the probe in
        test/cache-reference.test.ts): the run dir's reference tensors under the recorded key."""
        p = self.probe_json(out)
        rec = p["reference"]["cache"]
        dest = os.path.join(self.cache, rec["key"])
        os.makedirs(dest)
        layers = rec["inputs"]["layers"]
        files = {0: p["tensors"]["ref"]["file"]}
        for e in (p.get("layers") or {}).get("entries", []):
            files[e["layer"]] = e["ref"]["file"]
        for li in layers:
            shutil.copyfile(os.path.join(out, files[li]), os.path.join(dest, f"layer_{li:02d}.npy"))
        with open(os.path.join(dest, "meta.json"), "w", encoding="utf-8") as f:
            json.dump({"key": rec["key"], "inputs": rec["inputs"], "kind": rec["kind"], "stored_layers": layers}, f)
        return dest

    def test_the_probe_reads_but_never_writes_the_cache(self):
        res, out1 = self.block()
        self.assertEqual(res.returncode, 0, res.stderr)
        c1 = self.probe_json(out1)["reference"]["cache"]
        self.assertFalse(c1["hit"])
        self.assertEqual(len(c1["key"]), 32)
        self.assertEqual(c1["dir"], os.path.join(os.path.abspath(self.cache), c1["key"]))
        self.assertIn(f"probe: reference cache miss {c1['key'][:12]} (a trusted run stores it after the verdict)", res.stderr)
        self.assertFalse(os.path.exists(self.cache))  # a miss writes nothing
        self.assertEqual(c1["inputs"]["layers"], [0])
        self.assertEqual(c1["inputs"]["token_ids"], self.probe_json(out1)["prompt"]["token_ids"])
        self.assertRegex(c1["inputs"]["runner_sources"], r"^[0-9a-f]{64}$")
        self.store(out1)

        hook = os.path.join(self.tmp, "hook")
        os.makedirs(hook)
        with open(os.path.join(hook, "sitecustomize.py"), "w", encoding="utf-8") as f:
            f.write(BLOCK_HF_RUNNER)
        blocked = {"PYTHONPATH": hook}

        res, out2 = self.block(env=blocked)
        self.assertEqual(res.returncode, 0, res.stderr)
        p2 = self.probe_json(out2)
        self.assertEqual(p2["reference"]["cache"], dict(c1, hit=True, kind="emulated"))
        self.assertIn(f"probe: reference cache hit {c1['key'][:12]}", res.stderr)
        self.assertEqual(p2["reference"]["kind"], "emulated")
        self.assertEqual(self.read(os.path.join(out1, "block0.ref.npy")), self.read(os.path.join(out2, "block0.ref.npy")))

        # The hook really blocks HfRunner: a prompt not in the cache misses and fails.
        res, out3 = self.block("--prompt", "a different prompt entirely", env=blocked)
        self.assertEqual(res.returncode, 3, res.stderr)
        self.assertRegex(res.stderr, r"probe: error: .*hf_runner.*RuntimeError: hf_runner blocked by the test")
        self.assertFalse(os.path.exists(os.path.join(out3, "probe.json")))

    def test_bad_entry_is_recomputed_and_left_alone(self):
        res, out1 = self.block()
        self.assertEqual(res.returncode, 0, res.stderr)
        entry = self.store(out1)
        with open(os.path.join(entry, "layer_00.npy"), "wb") as f:
            f.write(b"not an npy")
        res, out2 = self.block()
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("recomputing", res.stderr)
        self.assertFalse(self.probe_json(out2)["reference"]["cache"]["hit"])
        self.assertEqual(self.read(os.path.join(out1, "block0.ref.npy")), self.read(os.path.join(out2, "block0.ref.npy")))
        with open(os.path.join(entry, "layer_00.npy"), "rb") as f:
            self.assertEqual(f.read(), b"not an npy")  # the trusted side replaces it, not the probe

    def test_weights_source_change_is_a_miss(self):
        res, out1 = self.block()
        self.assertEqual(res.returncode, 0, res.stderr)
        k1 = self.probe_json(out1)["reference"]["cache"]["key"]
        with open(os.path.join(self.mdir, "tiny_llama_weights.py"), "a", encoding="utf-8") as f:
            f.write("\n# edited\n")
        res, out2 = self.block()
        self.assertEqual(res.returncode, 0, res.stderr)
        c2 = self.probe_json(out2)["reference"]["cache"]
        self.assertNotEqual(c2["key"], k1)
        self.assertFalse(c2["hit"])

    def test_reference_runner_change_is_a_miss(self):
        res, out1 = self.block()
        k1 = self.probe_json(out1)["reference"]["cache"]["key"]
        with open(os.path.join(self.root, "programming_examples", "llms", "verify", "runners", "_records.py"), "a",
                  encoding="utf-8") as f:
            f.write("\n# edited\n")
        res, out2 = self.block()
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertNotEqual(self.probe_json(out2)["reference"]["cache"]["key"], k1)

    def test_layers_is_its_own_key(self):
        res, out1 = self.block()
        self.assertEqual(res.returncode, 0, res.stderr)
        self.store(out1)
        res, out2 = self.block("--layers")
        self.assertEqual(res.returncode, 0, res.stderr)
        c2 = self.probe_json(out2)["reference"]["cache"]
        self.assertFalse(c2["hit"])
        self.assertNotEqual(c2["key"], self.probe_json(out1)["reference"]["cache"]["key"])
        self.store(out2)
        res, out3 = self.block("--layers")
        self.assertEqual(res.returncode, 0, res.stderr)
        p3 = self.probe_json(out3)
        self.assertTrue(p3["reference"]["cache"]["hit"])
        self.assertTrue(p3["layers"]["entries"])
        for e in p3["layers"]["entries"]:
            f = e["ref"]["file"]
            self.assertEqual(self.read(os.path.join(out2, f)), self.read(os.path.join(out3, f)))

    def test_none_never_writes(self):
        res, out = self.block(cache="none", env={"NPU_BLOCK_GATE_REF_CACHE": self.cache})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIsNone(self.probe_json(out)["reference"]["cache"])
        self.assertFalse(os.path.exists(self.cache))
        self.assertNotIn("reference cache", res.stderr)

    def test_env_root_when_no_flag(self):
        out = os.path.join(self.tmp, "envrun")
        res = run_probe("block", "--model-dir", self.mdir, "--out", out,
                        env={"NPU_BLOCK_GATE_CACHE_DIR": os.path.join(self.tmp, "cachedir")})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertTrue(self.probe_json(out)["reference"]["cache"]["dir"].startswith(
            os.path.join(self.tmp, "cachedir", "reference") + os.sep))


class RefCacheUnitTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="probe-refcache-unit-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_cache_root_order(self):
        home = os.path.join(os.path.expanduser("~"), ".cache", "npu-block-gate", "reference")
        self.assertEqual(probe_refcache.cache_root(None, {}), home)
        self.assertEqual(probe_refcache.cache_root(None, {"NPU_BLOCK_GATE_CACHE_DIR": "/c"}), "/c/reference")
        env = {"NPU_BLOCK_GATE_CACHE_DIR": "/c", "NPU_BLOCK_GATE_REF_CACHE": "/r"}
        self.assertEqual(probe_refcache.cache_root(None, env), "/r")
        self.assertEqual(probe_refcache.cache_root("/x", env), "/x")
        self.assertIsNone(probe_refcache.cache_root("none", env))
        self.assertIsNone(probe_refcache.cache_root(None, {"NPU_BLOCK_GATE_REF_CACHE": "none"}))

    def test_snapshot_revision_from_fake_hub(self):
        hub = os.path.join(self.tmp, "hub")
        env = {"HF_HUB_CACHE": hub}
        self.assertIsNone(probe_refcache.snapshot_revision("meta-llama/Llama-3.2-1B", env))
        refs = os.path.join(hub, "models--meta-llama--Llama-3.2-1B", "refs")
        os.makedirs(refs)
        with open(os.path.join(refs, "main"), "w", encoding="utf-8") as f:
            f.write("4e20de362430cd3b72f300e6b0f18e50e7166e08\n")
        self.assertEqual(probe_refcache.snapshot_revision("meta-llama/Llama-3.2-1B", env),
                         "4e20de362430cd3b72f300e6b0f18e50e7166e08")
        self.assertEqual(probe_refcache.snapshot_revision("meta-llama/Llama-3.2-1B", {"HF_HOME": self.tmp}),
                         "4e20de362430cd3b72f300e6b0f18e50e7166e08")
        self.assertIsNone(probe_refcache.snapshot_revision("meta-llama/Other", env))

    def record(self, model_id="meta-llama/Llama-3.2-1B"):
        return {"kind": "hf-bf16", "runner": "verify.runners.hf_runner.HfRunner", "lite_mode": False,
                "dtype": "bf16", "model_id": model_id, "transformers": "4.46.0", "torch": "2.5.0"}

    def test_real_hf_id_without_snapshot_is_not_cacheable(self):
        tree = types.SimpleNamespace(llms_dir=self.tmp, model_dir=self.tmp, model="m", air_root=self.tmp)
        old = os.environ.get("HF_HUB_CACHE")
        os.environ["HF_HUB_CACHE"] = os.path.join(self.tmp, "empty-hub")
        try:
            inputs, why = probe_refcache.key_inputs(tree, self.record(), [1, 2, 3], [0])
            self.assertIsNone(inputs)
            self.assertIn("not cached", why)
            refs = os.path.join(self.tmp, "empty-hub", "models--meta-llama--Llama-3.2-1B", "refs")
            os.makedirs(refs)
            with open(os.path.join(refs, "main"), "w", encoding="utf-8") as f:
                f.write("abc123")
            inputs, why = probe_refcache.key_inputs(tree, self.record(), [1, 2, 3], [0])
            self.assertIsNone(why)
            self.assertEqual(inputs["revision"], "abc123")
            k = probe_refcache.cache_key(inputs)
            self.assertRegex(k, r"^[0-9a-f]{32}$")
            other, _ = probe_refcache.key_inputs(tree, self.record(), [1, 2, 4], [0])
            self.assertNotEqual(probe_refcache.cache_key(other), k)
            layers, _ = probe_refcache.key_inputs(tree, self.record(), [1, 2, 3], [0, 1])
            self.assertNotEqual(probe_refcache.cache_key(layers), k)
            lens, _ = probe_refcache.key_inputs(tree, self.record(), [1, 2, 3], [0], boundaries="hf-layer0-hooks/1")
            self.assertEqual(lens["boundaries"], "hf-layer0-hooks/1")
            self.assertNotEqual(probe_refcache.cache_key(lens), k, "the lens's reference boundaries are their own key")
        finally:
            if old is None:
                os.environ.pop("HF_HUB_CACHE", None)
            else:
                os.environ["HF_HUB_CACHE"] = old

    def test_boundaries_of_an_entry(self):
        import numpy as np  # noqa: PLC0415

        entry = os.path.join(self.tmp, "entry")
        os.makedirs(entry)
        self.assertIsNone(probe_refcache.load_boundaries(entry, 3), "no meta")
        with open(os.path.join(entry, "meta.json"), "w", encoding="utf-8") as f:
            json.dump({"stored_layers": [0], "stored_boundaries": ["q_roped", "attn_norm"]}, f)
        np.save(os.path.join(entry, "boundary_q_roped.npy"), np.ones((3, 8), np.float32))
        self.assertIsNone(probe_refcache.load_boundaries(entry, 3), "a listed file is missing")
        np.save(os.path.join(entry, "boundary_attn_norm.npy"), np.ones((3, 4), np.float32))
        got = probe_refcache.load_boundaries(entry, 3)
        self.assertEqual({k: v.shape for k, v in got.items()}, {"q_roped": (3, 8), "attn_norm": (3, 4)})
        self.assertIsNone(probe_refcache.load_boundaries(entry, 4), "another real_len")


if __name__ == "__main__":
    unittest.main()
