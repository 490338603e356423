"""The contract file (scripts/probe/contract.json) from the Python side: the probe's
constants come from it, probe.json holds only declared keys, and building one with an
undeclared key fails (test/contract.test.ts checks the TypeScript side)."""

import json
import os
import shutil
import sys
import tempfile
import unittest

from test.python.support import PROBE, REPO, run_probe

sys.path.insert(0, PROBE)

from npu_probe.run import lock as probe_lock  # noqa: E402
from npu_probe.core import contract as probe_schema  # noqa: E402

AIR_MINI = os.path.join(REPO, "examples", "air-mini")


class ContractTests(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(PROBE, "contract.json"), encoding="utf-8") as f:
            self.c = json.load(f)

    def test_constants_come_from_the_file(self):
        s = probe_schema
        self.assertEqual((s.PROBE_SCHEMA, s.PROBE_SCHEMA_VERSION), (self.c["probe"]["schema"], self.c["probe"]["version"]))
        self.assertEqual(s.RUN_FILES, self.c["run_files"])
        self.assertEqual((s.EXIT_OK, s.EXIT_BAD_INPUT, s.EXIT_INFRA, s.EXIT_NO_NUMPY),
                         (self.c["exit"]["ok"], self.c["exit"]["input"], self.c["exit"]["infra"], self.c["exit"]["no_numpy"]))
        self.assertEqual((s.BISECT_SCHEMA, s.BISECT_DIR, s.BISECT_JSON, s.BISECT_HOOK, s.BISECT_CPU_STEPS_KW),
                         (self.c["bisect"]["schema"], self.c["bisect"]["dir"], self.c["bisect"]["json"],
                          self.c["bisect"]["hook"], self.c["bisect"]["cpu_steps_kw"]))
        self.assertEqual((probe_lock.DEFAULT_LOCK, probe_lock.DEFAULT_TIMEOUT, probe_lock.LOCK_ENV),
                         (self.c["npu_lock"]["path"], float(self.c["npu_lock"]["timeout_seconds"]), self.c["npu_lock"]["env"]))

    def test_probe_json_refuses_an_undeclared_key(self):
        with self.assertRaises(KeyError):
            probe_schema.probe_json(stage="block", colour="red")
        with self.assertRaises(KeyError):
            probe_schema.probe_json(stage="block", model={"name": "m", "colour": "red"})
        doc = probe_schema.probe_json(stage="block", timings={"anything": 1.0})
        self.assertEqual(list(doc)[:3], ["schema", "schema_version", "stage"])

    def test_a_real_run_writes_only_declared_keys(self):
        tmp = tempfile.mkdtemp(prefix="probe-contract-")
        self.addCleanup(shutil.rmtree, tmp, True)
        tree = os.path.join(tmp, "air")
        shutil.copytree(AIR_MINI, tree, ignore=shutil.ignore_patterns("__pycache__", "build_peano"))
        model = os.path.join(tree, "programming_examples", "llms", "tiny_llama")
        out = os.path.join(tmp, "run")
        r = run_probe("block", "--model-dir", model, "--out", out, "--ref-cache", "none", "--npu-lock", "none", "--layers")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, probe_schema.PROBE_JSON), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(probe_schema.undeclared_keys(doc), [])
        self.assertEqual(probe_schema.undeclared_keys(dict(doc, extra=1, model=dict(doc["model"], colour=1))),
                         ["model.colour", "extra"])


if __name__ == "__main__":
    unittest.main()
