"""The probe's wrapper of the real KernelCache.load_and_run (npu_probe.lens.capture.LaunchRecorder),
on the product's emulated air runtime (npu_probe.emulate) and the tree's own cache.py.

- the tree gets exactly what the real load_and_run returns for the indices it asked for,
  and empty arrays elsewhere, although every non-static buffer was read back;
- every launch's inputs (statics by reference) and read-back buffers are copies, taken
  at once: a later launch that rewrites the shared buffers leaves them alone, while the
  views the tree holds change (the shared_nonstatic footgun the copies exist for);
- a swapped ELF is answered by its clean twin without reaching the runtime.

Needs numpy, ml_dtypes (the tree's cache.py imports it) and the real tree's
shared/infra/cache.py (loaded from a temp copy, its print-only PEP 701 f-strings
rewritten on Python < 3.12 as test_real_aliasing does).

run: .venv/bin/python -m unittest test.python.test_probe_capture -v
"""

import importlib.util
import os
import shutil
import sys
import tempfile
import types
import unittest

from test.python.support import PROBE, find_mlir_air

MLIR_AIR = find_mlir_air()
CACHE_PY = os.path.join(MLIR_AIR, "programming_examples", "llms", "shared", "infra", "cache.py")


def why_skip():
    missing = [n for n in ("numpy", "ml_dtypes") if importlib.util.find_spec(n) is None]
    if missing:
        return f"the tree's cache.py imports {', '.join(missing)}, which {sys.executable} lacks (use .venv/bin/python)"
    if not os.path.isfile(CACHE_PY):
        return f"the real mlir-air tree is not at {MLIR_AIR} (set NPU_BLOCK_GATE_MLIR_AIR)"
    return None


SKIP = why_skip()


@unittest.skipIf(SKIP, SKIP)
class CaptureTests(unittest.TestCase):
    def setUp(self):
        import numpy as np  # noqa: PLC0415
        from ml_dtypes import bfloat16  # noqa: PLC0415

        if PROBE not in sys.path:
            sys.path.insert(0, PROBE)
        from test.python.test_real_aliasing import make_parseable_here  # noqa: PLC0415

        from npu_probe.lens import capture as probe_capture  # noqa: PLC0415
        from npu_probe.emulate import runtime as probe_emulate  # noqa: PLC0415
        from npu_probe.emulate import table as probe_table  # noqa: PLC0415

        self.np, self.bf16, self.cap, self.emu = np, bfloat16, probe_capture, probe_emulate
        self.tmp = tempfile.mkdtemp(prefix="probe-capture-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        path = os.path.join(self.tmp, "cache.py")
        shutil.copy(CACHE_PY, path)
        make_parseable_here(path)
        spec = importlib.util.spec_from_file_location("npu_block_gate_test_cache", path)
        self.cache_mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.cache_mod)
        self.cfg = types.SimpleNamespace(emb_dim=128, hidden_dim=256, n_heads=2, n_kv_heads=1, head_dim=64)
        self.spec = probe_table.model_spec("llama32_1b")
        self.npu = probe_emulate.EmulatedNpu(self.spec, self.cfg)
        self.rng = np.random.default_rng(3)

    def args(self, seq=64):
        np, bf = self.np, self.bf16
        emb, kv, H, KV, hd = 128, 64, 2, 1, 64

        def w(*shape, scale=0.1):
            return (self.rng.standard_normal(shape) * scale).astype(bf)

        inv = 1.0 / (10000.0 ** (np.arange(0, hd, 2) / hd))
        ang = np.outer(np.arange(seq), inv)
        lut = np.concatenate([np.cos(ang), np.sin(ang)], axis=1).astype(bf)
        return [w(seq, emb, scale=1.0), (1 + w(emb)).astype(bf), np.zeros((seq, emb), bf), w(emb, emb),
                np.zeros((seq, emb), bf), w(emb, kv), np.zeros((seq, kv), bf), w(emb, kv), np.zeros((seq, kv), bf),
                np.repeat(lut, H, axis=0).flatten(), np.repeat(lut, KV, axis=0).flatten(),
                np.zeros((seq, emb), bf), np.zeros((seq, kv), bf)]

    def run_launch(self, cache, args):
        return cache.load_and_run("rms_gemms_rope", {}, *args, output_indices=[8, 11, 12],
                                  static_input_indices={1, 3, 5, 7, 9, 10},
                                  intermediate_indices={2, 4, 6, 8, 11, 12}, bo_key="rms_L0", shared_nonstatic=True)

    def test_what_the_tree_gets_and_what_the_probe_keeps(self):
        np = self.np
        with self.npu.installed():
            plain = self.cache_mod.KernelCache(cache_dir=os.path.join(self.tmp, "plain"))
            self.npu.register_artifacts(plain, ["rms_gemms_rope"])
            args = self.args()
            expect = [np.array(r, copy=True) for r in self.run_launch(plain, args)]

            cache = self.cache_mod.KernelCache(cache_dir=os.path.join(self.tmp, "wrapped"))
            self.npu.register_artifacts(cache, ["rms_gemms_rope"])
            rec = self.cap.LaunchRecorder(self.spec, self.cfg, emulator=self.npu)
            self.assertTrue(rec.install(cache))
            got = self.run_launch(cache, args)
            self.assertEqual(len(got), len(expect))
            for i, (g, e) in enumerate(zip(got, expect)):
                if i in (8, 11, 12):
                    self.assertTrue(np.array_equal(g, e), f"arg {i}")
                else:
                    self.assertEqual(g.size, 0, f"arg {i} was not asked for: the real cache returns an empty array")
            (la,) = rec.launches
            self.assertEqual(sorted(la.outputs), [0, 2, 4, 6, 8, 11, 12], "every non-static buffer read back")
            self.assertIs(la.inputs[3], args[3], "statics by reference")
            self.assertIsNot(la.inputs[0], args[0])
            q_kept = np.array(la.outputs[4], copy=True)
            v_view = got[8]
            v_kept = np.array(la.outputs[8], copy=True)

            args2 = self.args()  # a second launch rewrites the shared buffers
            self.run_launch(cache, args2)
            self.assertFalse(np.array_equal(v_view, v_kept), "the tree's view was overwritten (the footgun)")
            self.assertTrue(np.array_equal(la.outputs[8], v_kept), "the probe's copy was not")
            self.assertTrue(np.array_equal(la.outputs[4], q_kept), "an intermediate buffer, kept")
            self.assertEqual([x.name for x in rec.launches], ["rms_gemms_rope"] * 2)
            self.assertEqual([x.occurrence for x in rec.launches], [0, 1])

    def test_a_swapped_elf_never_reaches_the_runtime(self):
        np = self.np
        with self.npu.installed():
            cache = self.cache_mod.KernelCache(cache_dir=os.path.join(self.tmp, "swap"))
            self.npu.register_artifacts(cache, ["rms_gemms_rope"])
            rec = self.cap.LaunchRecorder(self.spec, self.cfg, emulator=self.npu)
            rec.install(cache)
            args = self.args()
            on_npu = [np.array(r, copy=True) for r in self.run_launch(cache, args)]
            n = len(self.npu.launches)
            rec.swap = {"rms_gemms_rope"}
            twin = self.run_launch(cache, args)
            self.assertEqual(len(self.npu.launches), n, "no emulated launch")
            self.assertTrue(rec.launches[-1].swapped)
            for i in (8, 11, 12):
                self.assertTrue(np.array_equal(np.asarray(twin[i]).astype(np.float32),
                                               np.asarray(on_npu[i]).astype(np.float32)), f"arg {i}")
                self.assertEqual(twin[i].dtype, args[i].dtype)


if __name__ == "__main__":
    unittest.main()
