"""The probe's behaviour against scripts/probe/contract.json (test/contract.test.ts holds the
TypeScript side to the same file): the exit codes it ends with, the run-dir files it writes,
the probe.json keys it refuses, the reference-cache entries it reads, where it finds the HF hub
cache (checked against huggingface_hub itself) and the NPU lock it takes. Each test reads the
file for the expected value and runs the probe's code for the actual one."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from test.python.support import PROBE, REPO, needs, run_probe

sys.path.insert(0, PROBE)

from npu_probe.core import contract as probe_schema  # noqa: E402
from npu_probe.core import hfhub  # noqa: E402
from npu_probe.reference import refcache  # noqa: E402
from npu_probe.run import lock as probe_lock  # noqa: E402

AIR_MINI = os.path.join(REPO, "examples", "air-mini")
with open(os.path.join(PROBE, "contract.json"), encoding="utf-8") as _f:
    C = json.load(_f)


def declared_objects(decl, prefix=()):
    """Every path (tuple of keys) of a declared nested object, the top level first."""
    yield prefix
    for key, sub in decl.items():
        if isinstance(sub, dict):
            yield from declared_objects(sub, prefix + (key,))


def filled(decl):
    """A document holding every declared key (leaves set to 0)."""
    return {k: filled(v) if isinstance(v, dict) else 0 for k, v in decl.items()}


def python_without_numpy():
    for py in ("/usr/bin/python3", "python3"):
        if shutil.which(py) and subprocess.run([py, "-c", "import numpy"], capture_output=True).returncode != 0:
            return py
    return None


class RunDirContractTests(unittest.TestCase):
    """One real run (air-mini, block then bisect): what the probe writes and how it exits."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="probe-contract-")
        tree = os.path.join(cls.tmp, "air")
        shutil.copytree(AIR_MINI, tree, ignore=shutil.ignore_patterns("__pycache__", "build_peano"))
        cls.model = os.path.join(tree, "programming_examples", "llms", "tiny_llama")
        cls.out = os.path.join(cls.tmp, "run")
        cls.block = run_probe("block", "--model-dir", cls.model, "--out", cls.out, "--ref-cache", "none",
                              "--npu-lock", "none", "--layers")
        cls.bisect = run_probe("bisect", "--run-dir", cls.out, "--npu-lock", "none")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_a_run_exits_ok_and_writes_the_contracts_files(self):
        self.assertEqual((self.block.returncode, self.bisect.returncode), (C["exit"]["ok"], C["exit"]["ok"]),
                         self.block.stderr + self.bisect.stderr)
        for role in ("probe", "npu", "ref", "input", "probeLog"):
            self.assertTrue(os.path.isfile(os.path.join(self.out, C["run_files"][role])), role)
        with open(os.path.join(self.out, C["run_files"]["probe"]), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual((doc["schema"], doc["schema_version"], doc["stage"]),
                         (C["probe"]["schema"], C["probe"]["version"], C["bisect"]["stage"]))
        self.assertEqual([e["layer"] for e in doc["layers"]["entries"]], [0, 1])
        self.assertTrue(doc["layers"]["entries"][1]["npu"]["file"].startswith(C["layers_dir"] + "/"))
        with open(os.path.join(self.out, C["bisect"]["dir"], C["bisect"]["json"]), encoding="utf-8") as f:
            bis = json.load(f)
        self.assertEqual((bis["schema"], bis["schema_version"], bis["method"]),
                         (C["bisect"]["schema"], C["bisect"]["version"], "hook"))
        self.assertIn(bis["method"], C["bisect"]["methods"])
        self.assertTrue(bis["hook"].endswith("." + C["bisect"]["hook"]))
        self.assertEqual(set(bis["steps"][0]) >= set(C["bisect"]["step_keys"]), True)

    def test_the_run_writes_only_declared_keys(self):
        with open(os.path.join(self.out, C["run_files"]["probe"]), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(probe_schema.undeclared_keys(doc), [])
        self.assertEqual(list(doc), [k for k in C["probe"]["keys"] if k in doc], "written in the contract's order")

    def test_bad_input_exits_with_the_contracts_input_code(self):
        r = run_probe("block", "--model-dir", os.path.join(self.tmp, "no-such-model"), "--out", os.path.join(self.tmp, "x"))
        self.assertEqual(r.returncode, C["exit"]["input"], r.stderr)
        self.assertRegex(r.stderr, r"^probe: error: .*no-such-model: model dir not found\n$")

    def test_a_python_without_numpy_exits_with_the_contracts_code(self):
        py = python_without_numpy()
        if py is None:
            self.skipTest(needs("python-without-numpy", "every Python here has numpy (/usr/bin/python3 without python3-numpy is one)"))
        r = subprocess.run([py, PROBE, "block", "--model-dir", self.model, "--out", os.path.join(self.tmp, "y")],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, C["exit"]["no_numpy"], r.stderr)
        plan = subprocess.run([py, PROBE, "plan", "--model-dir", self.model], capture_output=True, text=True, timeout=120)
        self.assertEqual(plan.returncode, C["exit"]["ok"], "plan needs no numpy: " + plan.stderr)


class ProbeJsonKeyTests(unittest.TestCase):
    def test_the_builder_takes_every_declared_key(self):
        doc = probe_schema.probe_json(**{k: v for k, v in filled(C["probe"]["keys"]).items()
                                         if k not in ("schema", "schema_version")})
        self.assertEqual(list(doc), list(C["probe"]["keys"]))

    def test_the_builder_refuses_a_key_at_every_declared_level(self):
        paths = list(declared_objects(C["probe"]["keys"]))
        self.assertGreater(len(paths), 10)
        for path in paths:
            with self.subTest(path=".".join(path) or "<top>"):
                doc = filled(C["probe"]["keys"])
                obj = doc
                for key in path:
                    obj = obj[key]
                obj["not_in_the_contract"] = 1
                parts = {k: v for k, v in doc.items() if k not in ("schema", "schema_version")}
                with self.assertRaises(KeyError) as cm:
                    probe_schema.probe_json(**parts)
                self.assertIn("not_in_the_contract", str(cm.exception))


class ReferenceCacheLayoutTests(unittest.TestCase):
    """An entry laid out by contract.json reference_cache (as src/cache/reference.ts writes it)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="probe-refcache-layout-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        rc = C["reference_cache"]
        self.arr = np.arange(6, dtype=np.float32).reshape(3, 2)
        np.save(os.path.join(self.tmp, rc["layer_file"].replace("{NN}", "00")), self.arr)
        np.save(os.path.join(self.tmp, rc["boundary_file"].replace("{name}", "q_roped")), self.arr * 2)
        meta = dict.fromkeys(rc["meta_keys"])
        meta.update(stored_layers=[0], stored_boundaries=["q_roped"], kind="hf-bf16")
        with open(os.path.join(self.tmp, rc["meta"]), "w", encoding="utf-8") as f:
            json.dump(meta, f)

    def test_the_probe_reads_it(self):
        self.assertEqual(refcache.load(self.tmp, [0], 3, 2)[0].tolist(), self.arr.tolist())
        self.assertEqual(refcache.load_boundaries(self.tmp, 3)["q_roped"].tolist(), (self.arr * 2).tolist())

    def test_the_root_follows_the_contracts_variables(self):
        rc = C["reference_cache"]
        self.assertEqual(refcache.cache_root(None, {rc["env_root"]: "/r"}), "/r")
        self.assertEqual(refcache.cache_root(None, {rc["env_cache_dir"]: "/c"}), os.path.join("/c", rc["subdir"]))
        self.assertIsNone(refcache.cache_root(rc["off_value"], {}))
        key = refcache.cache_key({"anything": 1})
        self.assertRegex(key, "^[0-9a-f]{%d}$" % rc["key_hex_chars"])


HF_CASES = [
    {},
    {"HF_HOME": "/hf"},
    {"XDG_CACHE_HOME": "/xdg"},
    {"HF_HOME": "/hf", "XDG_CACHE_HOME": "/xdg"},
    {"HUGGINGFACE_HUB_CACHE": "/old"},
    {"HF_HUB_CACHE": "/hub", "HUGGINGFACE_HUB_CACHE": "/old", "HF_HOME": "/hf"},
    {"HF_HUB_OFFLINE": "1"},
    {"TRANSFORMERS_OFFLINE": "yes"},
    {"HF_HUB_OFFLINE": "0"},
    {"HF_HUB_OFFLINE": "True"},
]


class HfHubTests(unittest.TestCase):
    def test_hub_cache_and_offline_as_huggingface_hub_decides(self):
        """hfhub against huggingface_hub.constants, each case in a fresh interpreter with that
        environment (the constants are read once, at import)."""
        probe_py = sys.executable
        if subprocess.run([probe_py, "-c", "import huggingface_hub"], capture_output=True).returncode != 0:
            self.skipTest(needs("torch", f"huggingface_hub is not installed for {probe_py} (NPU_BLOCK_GATE_PYTHON=.venv/bin/python)"))
        home = tempfile.mkdtemp(prefix="probe-hf-home-")
        self.addCleanup(shutil.rmtree, home, True)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "XDG_"))}
        code = "import json, huggingface_hub.constants as c; print(json.dumps([c.HF_HUB_CACHE, c.HF_HUB_OFFLINE]))"
        for case in HF_CASES:
            with self.subTest(env=case):
                env = dict(base, HOME=home, **case)
                r = subprocess.run([probe_py, "-c", code], capture_output=True, text=True, env=env, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
                theirs = json.loads(r.stdout)
                self.assertEqual([hfhub.hub_dir(env), hfhub.is_offline(env)], theirs)

    def test_the_snapshot_layout(self):
        hub = tempfile.mkdtemp(prefix="probe-hf-hub-")
        self.addCleanup(shutil.rmtree, hub, True)
        h = C["hf_hub"]
        repo = os.path.join(hub, h["repo_prefix"] + "org" + h["repo_sep"] + "name")
        os.makedirs(os.path.join(repo, *h["ref"].split("/")[:-1]))
        with open(os.path.join(repo, *h["ref"].split("/")), "w", encoding="utf-8") as f:
            f.write("abc123\n")
        env = {h["cache_env"][0]: hub}
        self.assertEqual(hfhub.snapshot_revision("org/name", env), "abc123")
        self.assertEqual(hfhub.snapshot_dir("org/name", "abc123", env), os.path.join(repo, h["snapshots"], "abc123"))

    def test_offline_sets_every_switch(self):
        env = {}
        hfhub.go_offline(env)
        self.assertEqual(env, dict.fromkeys(C["hf_hub"]["offline_env"] + C["hf_hub"]["offline_also"], "1"))
        self.assertTrue(hfhub.is_offline(env))


class NpuLockTests(unittest.TestCase):
    def test_the_lock_the_probe_takes(self):
        lock = C["npu_lock"]
        saved = os.environ.pop(lock["env"], None)
        try:
            self.assertEqual(probe_lock.lock_path(None), lock["path"])
            os.environ[lock["env"]] = "/tmp/other.lock"
            self.assertEqual(probe_lock.lock_path(None), "/tmp/other.lock")
        finally:
            os.environ.pop(lock["env"], None)
            if saved is not None:
                os.environ[lock["env"]] = saved
        self.assertEqual(probe_lock.DEFAULT_TIMEOUT, float(lock["timeout_seconds"]))


if __name__ == "__main__":
    unittest.main()
