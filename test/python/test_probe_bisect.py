"""Tests for `probe bisect` (run: python3 -m unittest discover -s test/python -t .).

End to end on a copy of examples/air-mini: each injected bug must be fixed by
swapping exactly the step shared/infra/inject.py says it lives in. Fake trees
(test/python/fakes) cover the unavailable cases, the hook contract and the
error exits. Every run is a subprocess: each imports a fresh tree.
"""

import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(REPO, "scripts", "probe")
AIR_MINI = os.path.join(REPO, "examples", "air-mini")
AIR_MINI_LLMS = os.path.join(AIR_MINI, "programming_examples", "llms")
sys.path.insert(0, PROBE)
sys.path.insert(0, os.path.join(REPO, "test", "python"))
from support import run_probe  # noqa: E402

from npu_probe.bisect import hook as probe_bisect  # noqa: E402
from npu_probe.bisect import rundir  # noqa: E402
from npu_probe.core import contract as probe_schema  # noqa: E402
from npu_probe.core.errors import ProbeError  # noqa: E402
from fakes import fake_tree  # noqa: E402

PASS = 0.999




def cosine(npu, ref):
    a = np.asarray(npu[: ref.shape[0]], dtype=np.float64).ravel()
    b = np.asarray(ref, dtype=np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class BisectCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="probe-bisect-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.run_dir = os.path.join(self.tmp, "run")

    def bisect_json_path(self):
        return os.path.join(self.run_dir, "bisect", "bisect.json")

    def bisect(self, env=None, run_dir=None):
        return run_probe("bisect", "--run-dir", run_dir or self.run_dir, env=env)

    def block(self, model_dir, *extra, env=None):
        res = run_probe("block", "--model-dir", model_dir, "--out", self.run_dir, *extra, env=env)
        self.assertEqual(res.returncode, 0, res.stderr)

    def assert_ok(self, res):
        self.assertEqual(res.returncode, 0, res.stderr)
        for line in res.stderr.splitlines():
            self.assertTrue(line.startswith("probe: "), line)
        self.assertNotIn("probe: error", res.stderr)

    def assert_one_line_error(self, res, code, pattern):
        self.assertEqual(res.returncode, code, res.stderr)
        errors = [l for l in res.stderr.splitlines() if l.startswith("probe: error: ")]
        self.assertEqual(len(errors), 1, res.stderr)
        self.assertRegex(errors[0], pattern)
        self.assertNotIn("Traceback", res.stderr)
        self.assertFalse(os.path.exists(self.bisect_json_path()))

    def assert_unavailable(self, res, reason_pattern, hook=None):
        self.assert_ok(res)
        b = load_json(self.bisect_json_path())
        self.assertEqual(b, {
            "schema": "npu-block-gate/bisect",
            "schema_version": 1,
            "available": False,
            "reason": b["reason"],
            "hook": hook,
            "method": None,
            "emulated": False,
            "steps": [],
            "launches": None,
            "twins": None,
            "rerun": None,
        })
        self.assertRegex(b["reason"], reason_pattern)
        self.assertEqual(len(b["reason"].splitlines()), 1)
        self.assertEqual(os.listdir(os.path.join(self.run_dir, "bisect")), ["bisect.json"])
        return b


# ---------------------------------------------------------------------------
# End to end on air-mini


def _air_mini_ready():
    return all(
        os.path.isfile(os.path.join(AIR_MINI_LLMS, m, f"{m}_prefill.py"))
        for m in ("tiny_llama", "tiny_qwen25")
    )


@unittest.skipUnless(_air_mini_ready(), "examples/air-mini not present")
class AirMiniBisectTests(BisectCase):
    @classmethod
    def setUpClass(cls):
        cls.tree_tmp = tempfile.mkdtemp(prefix="probe-bisect-air-")
        # A copy, so the kernel caches written under build_peano/ stay out of the repo.
        cls.root = os.path.join(cls.tree_tmp, "air")
        shutil.copytree(AIR_MINI, cls.root, ignore=shutil.ignore_patterns("build_peano", "__pycache__"))
        path = os.path.join(cls.root, "programming_examples", "llms", "shared", "infra", "inject.py")
        spec = importlib.util.spec_from_file_location("air_mini_inject_for_tests", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        cls.INJECTIONS = mod.INJECTIONS  # name -> (owning step, what it does)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tree_tmp, True)

    def model_dir(self, model):
        return os.path.join(self.root, "programming_examples", "llms", model)

    def check_injection(self, model, injection, *block_args, kernel_of_owner=None):
        env = {"AIR_MINI_INJECT": injection}
        self.block(self.model_dir(model), *block_args, env=env)
        res = self.bisect(env=env)
        self.assert_ok(res)
        probe = load_json(os.path.join(self.run_dir, "probe.json"))
        npu = np.load(os.path.join(self.run_dir, "block0.npu.npy"))
        ref = np.load(os.path.join(self.run_dir, "block0.ref.npy"))
        self.assertLess(cosine(npu, ref), PASS, "the injection should fail the gate")

        b = load_json(self.bisect_json_path())
        self.assertEqual(sorted(b), ["available", "emulated", "hook", "launches", "method", "reason", "rerun", "schema",
                                     "schema_version", "steps", "twins"])
        # The bug variable is --emulate --inject's alias on air-mini: the run, and its bisect, are emulated.
        self.assertEqual(probe["emulate"]["inject"], injection)
        self.assertEqual((b["method"], b["launches"], b["emulated"], b["twins"]), ("hook", None, True, None))
        # Before any step, block 0 re-run unswapped under this interpreter: the judged ffn_out back,
        # bit for bit (air-mini's emulated NPU is deterministic).
        self.assertEqual(b["rerun"], {"file": "bisect/00-rerun.npy", "python": sys.executable})
        self.assertTrue(np.array_equal(np.load(os.path.join(self.run_dir, "bisect", "00-rerun.npy")), npu))
        self.assertLess(res.stderr.index("re-run unswapped first"), res.stderr.index("probe: bisect step 1/"))
        self.assertEqual((b["schema"], b["schema_version"], b["available"]), ("npu-block-gate/bisect", 1, True))
        self.assertEqual(b["hook"], f"{model}.{model}_prefill.bisect_steps")
        self.assertIn("cpu_steps", b["reason"])
        steps = b["steps"]
        self.assertGreater(len(steps), 5)
        owner = self.INJECTIONS[injection][0]
        fixed = []
        for i, s in enumerate(steps, start=1):
            self.assertEqual(sorted(s), ["cpu_equivalent", "file", "index", "kernel", "seconds", "step"])
            self.assertEqual(s["index"], i)
            self.assertEqual(s["file"], f"bisect/{i:02d}-{s['step']}.npy")
            self.assertIsInstance(s["seconds"], float)
            self.assertIn(f"probe: bisect step {i}/{len(steps)} {s['step']} (cpu: {s['cpu_equivalent']})", res.stderr)
            path = os.path.join(self.run_dir, *s["file"].split("/"))
            with open(path, "rb") as f:
                self.assertEqual(np.lib.format.read_magic(f), (1, 0))
                shape, _, dtype = np.lib.format.read_array_header_1_0(f)
            self.assertEqual((shape, dtype.str), (npu.shape, "<f4"))
            if cosine(np.load(path), ref) >= PASS:
                fixed.append(s["step"])
        self.assertEqual(fixed, [owner], f"{injection}: steps that fix the block")
        self.assertEqual([s["step"] for s in steps].count(owner), 1)
        if kernel_of_owner is not None:
            self.assertEqual(next(s["kernel"] for s in steps if s["step"] == owner), kernel_of_owner)
        # The block's log is kept; bisect's follows it.
        with open(os.path.join(self.run_dir, "probe.log"), encoding="utf-8") as f:
            log = f.read()
        self.assertLess(log.index("probe block"), log.index("probe bisect"))
        self.assertEqual(probe["stage"], "block")  # bisect leaves probe.json alone
        return b

    def test_transposed_q_weight_tiny_llama(self):
        self.check_injection("tiny_llama", "transposed_q_weight", kernel_of_owner="rms_gemms_rope")

    def test_missing_causal_mask_tiny_llama_host_attention_then_a_crash(self):
        self.check_injection("tiny_llama", "missing_causal_mask", kernel_of_owner="host")
        bdir = os.path.join(self.run_dir, "bisect")
        stale = os.path.join(bdir, "99-old_step.npy")
        shutil.copy(os.path.join(bdir, "01-attn_norm.npy"), stale)
        # A crash inside the tree while bisecting: exit 3, one line, traceback in
        # probe.log, and the previous bisect.json and step files gone.
        prefill = os.path.join(self.model_dir("tiny_llama"), "tiny_llama_prefill.py")
        with open(prefill, encoding="utf-8") as f:
            source = f.read()
        def restore():
            with open(prefill, "w", encoding="utf-8") as f:
                f.write(source)

        self.addCleanup(restore)
        with open(prefill, "w", encoding="utf-8") as f:
            f.write(re.sub(r"(def run_transformer_block\([^)]*\):\n)", r"\1    raise ValueError('boom')\n", source))
        res = self.bisect()
        self.assert_one_line_error(res, 3, r"^probe: error: tiny_llama\.tiny_llama_prefill\.run_transformer_block: ValueError: ")
        self.assertEqual(os.listdir(bdir), [])
        with open(os.path.join(self.run_dir, "probe.log"), encoding="utf-8") as f:
            self.assertIn("Traceback", f.read())
        # Bisect never touches the block's files.
        for name in ("probe.json", "block0.npu.npy", "block0.ref.npy", "block0.input.npy"):
            self.assertTrue(os.path.exists(os.path.join(self.run_dir, name)), name)

    def test_missing_causal_mask_tiny_llama_npu_attention(self):
        self.check_injection("tiny_llama", "missing_causal_mask", "--npu-attn", kernel_of_owner="flash_attn")

    def test_dropped_bias_tiny_qwen25(self):
        b = self.check_injection("tiny_qwen25", "dropped_bias")
        self.assertIn("qkv_bias", [s["step"] for s in b["steps"]])


# ---------------------------------------------------------------------------
# Fake trees: the hook contract, unavailable cases, bad input


HOOK = '''
BISECT_CALLS = []
def bisect_steps(config, cpu_attn=True):
    return {steps!r}
'''

SINGLE_WITH_STEPS = '''
_BUF = None
def run_single_block(layer_idx=0, hidden=None, weights=None, config=None, cache=None, seq_len=None,
                     cpu_attn=True, cpu_steps=None):
    global _BUF
    y = M.block(hidden, weights)
    for s in (cpu_steps or ()):
        y[0, 0] = 1000.0 + len(s)  # marks which step ran on the CPU
    if _BUF is None:
        _BUF = np.zeros_like(y)
    _BUF[...] = y
    return _BUF  # one buffer reused by every call, like shared_nonstatic=True
'''

FAKE_STEPS = [
    {"step": "attn", "kernel": "rms_gemms_rope", "cpu_equivalent": "cpu_helpers.attention_reference"},
    {"step": "o proj/add", "kernel": "o_ffn", "cpu_equivalent": "numpy attn @ wo + x"},
]


class FakeTreeBisectTests(BisectCase):
    """Each test gets its own copy of one fake tree (entry run_single_block, no
    hook) and of the run dir `probe block` wrote for it, then adds what it needs
    to the copy's prefill module: one `block` run for the whole class."""

    @classmethod
    def setUpClass(cls):
        cls.template = tempfile.mkdtemp(prefix="probe-bisect-fake-")
        mdir = fake_tree.build(os.path.join(cls.template, "tree"), entry="single")
        res = run_probe("block", "--model-dir", mdir, "--out", os.path.join(cls.template, "run"))
        if res.returncode != 0:
            raise AssertionError(res.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.template, True)

    def setUp(self):
        super().setUp()
        shutil.copytree(os.path.join(self.template, "tree"), os.path.join(self.tmp, "tree"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(os.path.join(self.template, "run"), self.run_dir)
        path = os.path.join(self.run_dir, "probe.json")
        probe = load_json(path)
        probe["environment"]["air_root"] = os.path.join(self.tmp, "tree")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(probe, f)
        self.prefill = os.path.join(self.tmp, "tree", "programming_examples", "llms", "fake_m", "fake_m_prefill.py")

    def add_to_prefill(self, *code):
        with open(self.prefill, "a", encoding="utf-8") as f:
            f.write("".join(code))

    def test_no_hook_is_unavailable(self):
        res = self.bisect()
        self.assert_unavailable(res, r"fake_m_prefill\.py defines no bisect_steps\(config, cpu_attn\)")
        self.assertIn("probe: wrote ", res.stderr)

    def test_entry_without_cpu_steps_is_unavailable(self):
        self.add_to_prefill(HOOK.format(steps=FAKE_STEPS))
        self.assert_unavailable(
            self.bisect(),
            r"^fake_m\.fake_m_prefill\.run_single_block takes no cpu_steps keyword",
            hook="fake_m.fake_m_prefill.bisect_steps",
        )

    def test_adapter_path_is_unavailable(self):
        mdir = fake_tree.build(os.path.join(self.tmp, "adapter_tree"), entry="adapter")
        shutil.rmtree(self.run_dir)
        self.block(mdir)
        self.assert_unavailable(self.bisect(), r"^integration path is adapter: ")

    def test_run_single_block_with_hook_and_copy_per_step(self):
        self.add_to_prefill(HOOK.format(steps=FAKE_STEPS), SINGLE_WITH_STEPS)
        res = self.bisect()
        self.assert_ok(res)
        self.assertIn("probe: bisect step 2/2 o proj/add (cpu: numpy attn @ wo + x)", res.stderr)
        b = load_json(self.bisect_json_path())
        self.assertTrue(b["available"])
        self.assertEqual(b["hook"], "fake_m.fake_m_prefill.bisect_steps")
        self.assertEqual(
            [(s["index"], s["step"], s["kernel"], s["cpu_equivalent"], s["file"]) for s in b["steps"]],
            [(1, "attn", "rms_gemms_rope", "cpu_helpers.attention_reference", "bisect/01-attn.npy"),
             (2, "o proj/add", "o_ffn", "numpy attn @ wo + x", "bisect/02-o_proj_add.npy")],
        )
        npu = np.load(os.path.join(self.run_dir, "block0.npu.npy"))
        for s in b["steps"]:
            out = np.load(os.path.join(self.run_dir, s["file"]))
            self.assertEqual(out.shape, npu.shape)
            # Copied before the next step overwrote the shared buffer.
            self.assertEqual(out[0, 0], 1000.0 + len(s["step"]))
            # Same input as the block run: everything but the marker matches.
            np.testing.assert_array_equal(out.ravel()[1:], npu.ravel()[1:])

    def test_bad_hook_result_is_exit_2(self):
        # The other shapes of a bad list are covered by UnitTests.test_validate_steps.
        self.add_to_prefill(HOOK.format(steps=[FAKE_STEPS[0], FAKE_STEPS[0]]), SINGLE_WITH_STEPS)
        self.assert_one_line_error(self.bisect(), 2, r"fake_m_prefill\.py: bisect_steps\(\): step 'attn' is listed twice$")

    def test_hook_crash_is_exit_3(self):
        self.add_to_prefill("\ndef bisect_steps(config, cpu_attn=True):\n    raise KeyError('no such layer')\n",
                            SINGLE_WITH_STEPS)
        res = self.bisect()
        self.assert_one_line_error(res, 3, r"^probe: error: fake_m\.fake_m_prefill\.bisect_steps: KeyError: 'no such layer'$")
        with open(os.path.join(self.run_dir, "probe.log"), encoding="utf-8") as f:
            self.assertIn("Traceback", f.read())

    def test_empty_step_list_is_unavailable(self):
        self.add_to_prefill(HOOK.format(steps=[]), SINGLE_WITH_STEPS)
        self.assert_unavailable(self.bisect(), r"bisect_steps\(\) listed no steps",
                                hook="fake_m.fake_m_prefill.bisect_steps")

    def test_changed_entry_is_exit_2(self):
        os.unlink(self.prefill)
        with open(self.prefill, "w", encoding="utf-8") as f:
            f.write("def run_transformer_block(*a, **k):\n    pass\n"
                    "def compile_all_kernels(*a, **k):\n    pass\n")
        self.assert_one_line_error(self.bisect(), 2, r"block entry is now fake_m\.fake_m_prefill\.run_transformer_block, "
                                   r"probe\.json ran fake_m\.fake_m_prefill\.run_single_block: re-run `probe block`$")

    def test_missing_run_dir(self):
        self.run_dir = os.path.join(self.tmp, "nope")
        res = self.bisect()
        self.assert_one_line_error(res, 2, r"nope: run dir not found")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "nope")))

    def test_run_dir_without_probe_json(self):
        os.unlink(os.path.join(self.run_dir, "probe.json"))
        self.assert_one_line_error(self.bisect(), 2, r"run/probe\.json: not found")

    def test_config_stage_and_moved_tree(self):
        self.assert_ok(self.bisect())  # the copy works where it is
        os.rename(os.path.join(self.tmp, "tree"), os.path.join(self.tmp, "moved"))
        self.assert_one_line_error(self.bisect(), 2, r"tree: air root from probe\.json not found \(tree moved")
        path = os.path.join(self.run_dir, "probe.json")
        probe = load_json(path)
        probe["stage"] = "config"
        with open(path, "w", encoding="utf-8") as f:
            json.dump(probe, f)
        self.assert_one_line_error(self.bisect(), 2, r"probe\.json: stage is 'config': bisect needs a run dir from `probe block`")

    def test_unreadable_probe_json(self):
        with open(os.path.join(self.run_dir, "probe.json"), "w") as f:
            f.write("{")
        self.assert_one_line_error(self.bisect(), 2, r"probe\.json: cannot read: ")

    def test_usage_and_help(self):
        res = run_probe("bisect")
        self.assertEqual(res.returncode, 2)
        self.assertEqual(len(res.stderr.strip().splitlines()), 1, res.stderr)
        res = run_probe("bisect", "--help")
        self.assertEqual(res.returncode, 0)
        self.assertIn("--run-dir", res.stdout)


class UnitTests(unittest.TestCase):
    def test_schema_constants(self):
        self.assertEqual(probe_schema.BISECT_SCHEMA, "npu-block-gate/bisect")
        self.assertEqual(probe_schema.BISECT_SCHEMA_VERSION, 1)
        self.assertEqual((probe_schema.BISECT_HOOK, probe_schema.BISECT_CPU_STEPS_KW), ("bisect_steps", "cpu_steps"))

    def test_step_file_names(self):
        self.assertEqual(probe_bisect.step_file(3, "attention"), "bisect/03-attention.npy")
        self.assertEqual(probe_bisect.step_file(12, "o proj/add"), "bisect/12-o_proj_add.npy")
        self.assertEqual(probe_bisect.step_file(100, "../x"), "bisect/100-x.npy")
        self.assertTrue(re.match(rundir.STEP_FILE_RE, "07-rope.npy"))

    def test_validate_steps(self):
        steps = probe_bisect.validate_steps(tuple(FAKE_STEPS), "w")
        self.assertEqual(steps, FAKE_STEPS)
        with self.assertRaises(ProbeError):
            probe_bisect.validate_steps([{"step": "", "kernel": "k", "cpu_equivalent": "c"}], "w")


if __name__ == "__main__":
    unittest.main()
