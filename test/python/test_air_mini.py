"""Tests for examples/air-mini, the emulated mlir-air tree.

Checks the numbers the gate's demo and end-to-end tests rely on: the clean
emulated NPU block matches the emulated HF bf16 reference well inside the
Phase 2 thresholds, every AIR_MINI_INJECT bug moves the numbers the way it
should (and only on the NPU side), and the tree's API behaves like mlir-air's
(kernel cache manifest, seq_len rule, shared-buffer views, adapters).

Run from the repo root: /usr/bin/python3 -m unittest discover -s test/python -t .
"""

import importlib
import json
import os
import sys
import tempfile
import unittest

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLMS = os.path.join(REPO, "examples", "air-mini", "programming_examples", "llms")
VERIFY = os.path.join(LLMS, "verify")
MODELS = ("tiny_llama", "tiny_qwen3", "tiny_qwen25")
BLOCK_FN = {
    "tiny_llama": "run_transformer_block",
    "tiny_qwen3": "run_transformer_block_qwen3",
    "tiny_qwen25": "run_transformer_block_qwen25",
}
# Top-level module names the tree provides; other tests may have imported
# same-named modules from other trees, so they are dropped around this module.
_TREE_MODULES = ("shared", "verify", "runners", "comparators") + MODELS + tuple(
    f"{m}_{s}" for m in MODELS for s in ("weights", "prefill", "cpu_helpers"))
SEQ = 64


def _purge():
    for name in list(sys.modules):
        if name.split(".")[0] in _TREE_MODULES:
            del sys.modules[name]


_saved_path = None
_saved_inject = None


def setUpModule():
    global _saved_path, _saved_inject
    _saved_path = list(sys.path)
    _saved_inject = os.environ.pop("AIR_MINI_INJECT", None)
    _purge()
    sys.path[:0] = [LLMS, VERIFY]


def tearDownModule():
    _purge()
    sys.path[:] = _saved_path
    os.environ.pop("AIR_MINI_INJECT", None)
    if _saved_inject is not None:
        os.environ["AIR_MINI_INJECT"] = _saved_inject


class _Inject:
    """Set AIR_MINI_INJECT for a with-block."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        if self.value:
            os.environ["AIR_MINI_INJECT"] = self.value
        else:
            os.environ.pop("AIR_MINI_INJECT", None)

    def __exit__(self, *exc):
        os.environ.pop("AIR_MINI_INJECT", None)
        return False


def per_position_cosine(a, b):
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dot = np.sum(a * b, axis=1)
    out = np.zeros(a.shape[0], np.float32)
    ok = den > 0
    out[ok] = dot[ok] / den[ok]
    return out


def whole_cosine(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


class Model:
    """One model of the tree: modules, weights, canonical prompt, HF reference."""

    _cache = {}

    @classmethod
    def get(cls, name):
        if name not in cls._cache:
            cls._cache[name] = cls(name)
        return cls._cache[name]

    def __init__(self, name):
        self.name = name
        self.W = importlib.import_module(f"{name}.{name}_weights")
        self.P = importlib.import_module(f"{name}.{name}_prefill")
        self.A = importlib.import_module(f"{name}.verify_adapter")
        self.block = getattr(self.P, BLOCK_FN[name])
        self.cfg = self.A.build_config()
        self.model_id = self.A.resolve_model(self.A.DEFAULT_MODEL)
        self.weights = self.W.load_weights(self.model_id, config=self.cfg)
        self.tokens = np.asarray(self.A.tokenize(self.A.prompts("instruct")[0]), np.int64)
        self.n = self.tokens.size
        self.threshold = 0.98 if self.cfg.head_dim >= 128 else 0.99
        self.lut = self.W.generate_rope_lut(self.cfg, SEQ)
        self.x = np.zeros((SEQ, self.cfg.emb_dim), np.float32)
        self.x[:self.n] = self.weights.embed_table[self.tokens]
        self.tmp = tempfile.TemporaryDirectory()
        self.caches = {}
        from runners.hf_runner import HfRunner
        with _Inject(None):
            rec = HfRunner(self.model_id, self.cfg, 2048).prefill(self.tokens)
        self.ref = rec.layer_intermediates[0]["ffn_out"]

    def cache(self, cpu_attn=True):
        if cpu_attn not in self.caches:
            from shared.infra.cache import KernelCache
            c = KernelCache(cache_dir=os.path.join(self.tmp.name, f"cache-{cpu_attn}"))
            self.P.compile_all_kernels(c, self.cfg, SEQ, cpu_attn=cpu_attn)
            self.caches[cpu_attn] = c
        return self.caches[cpu_attn]

    def run(self, inject=None, cpu_attn=True, **kw):
        with _Inject(inject):
            out, inter = self.block(self.x, self.weights.layers[0], self.lut, self.cfg,
                                    self.cache(cpu_attn), layer_idx=0, cpu_attn=cpu_attn, **kw)
        return np.array(out, copy=True)

    def metrics(self, npu):
        a = npu[:self.n]
        pp = per_position_cosine(a, self.ref)
        return {
            "whole": whole_cosine(a, self.ref),
            "pp": pp,
            "pp_min": float(pp.min()),
            "bad": np.flatnonzero(pp < self.threshold).tolist(),
            "norm_ratio": float(np.linalg.norm(a.astype(np.float64))
                                / np.linalg.norm(self.ref.astype(np.float64))),
        }


def tearDownModuleCaches():
    for m in Model._cache.values():
        m.tmp.cleanup()
    Model._cache.clear()


class CleanAndInjectionTests(unittest.TestCase):
    @classmethod
    def tearDownClass(cls):
        tearDownModuleCaches()

    def assert_clean(self, m, met, label):
        self.assertGreaterEqual(met["whole"], 0.999, label)
        self.assertGreaterEqual(met["pp_min"], 0.995, label)

    def test_clean_all_models(self):
        for name in MODELS:
            m = Model.get(name)
            with self.subTest(model=name):
                self.assertTrue(20 <= m.n <= 40, m.n)
                npu = m.run()
                self.assertEqual(npu.shape, (SEQ, m.cfg.emb_dim))
                self.assertTrue(np.isfinite(npu).all())
                self.assertEqual(m.ref.shape, (m.n, m.cfg.emb_dim))
                self.assert_clean(m, m.metrics(npu), name)
                # the flash_attn ELF path agrees too
                self.assert_clean(m, m.metrics(m.run(cpu_attn=False)), name + " flash_attn")

    def test_block_contribution_dominates_input(self):
        # Otherwise the residual would hide every bug inside the block.
        for name in MODELS:
            m = Model.get(name)
            x = m.x[:m.n]
            self.assertGreater(np.linalg.norm(m.ref - x) / np.linalg.norm(x), 3.0, name)

    def test_layout_bugs_fail_clearly(self):
        for name in MODELS:
            m = Model.get(name)
            for inj in ("transposed_q_weight", "missing_causal_mask", "interleaved_rope", "rope_k_only"):
                with self.subTest(model=name, inject=inj):
                    met = m.metrics(m.run(inj))
                    self.assertLess(met["whole"], 0.9, met["whole"])
                    self.assertLess(met["pp_min"], 0.9, met["pp_min"])

    def test_missing_causal_mask_on_flash_attn_elf(self):
        m = Model.get("tiny_llama")
        met = m.metrics(m.run("missing_causal_mask", cpu_attn=False))
        self.assertLess(met["whole"], 0.9)

    def test_dropped_bias(self):
        m = Model.get("tiny_qwen25")
        met = m.metrics(m.run("dropped_bias"))
        self.assertLess(met["whole"], 0.9)
        self.assertLess(met["pp_min"], 0.9)
        for name in ("tiny_llama", "tiny_qwen3"):  # no bias: a no-op
            m = Model.get(name)
            np.testing.assert_array_equal(m.run("dropped_bias"), m.run())

    def test_stale_tail(self):
        for name in MODELS:
            m = Model.get(name)
            with self.subTest(model=name):
                met = m.metrics(m.run("stale_tail"))
                self.assertEqual(met["bad"], [m.n - 3, m.n - 2, m.n - 1])
                self.assertLess(met["pp_min"], m.threshold - 0.05)
                self.assertGreaterEqual(float(met["pp"][:m.n - 3].min()), 0.995)
                self.assertGreater(met["whole"], 0.95)

    def test_nan_row(self):
        for name in MODELS:
            m = Model.get(name)
            with self.subTest(model=name):
                npu = m.run("nan_row")
                rows = sorted(set(np.argwhere(np.isnan(npu))[:, 0].tolist()))
                self.assertTrue(rows)
                self.assertTrue(all(r < m.n for r in rows), rows)

    def test_nan_padded(self):
        for name in MODELS:
            m = Model.get(name)
            with self.subTest(model=name):
                npu = m.run("nan_padded")
                rows = sorted(set(np.argwhere(np.isnan(npu))[:, 0].tolist()))
                self.assertTrue(rows)
                self.assertTrue(all(r >= m.n for r in rows), rows)
                self.assertTrue(np.isfinite(npu[:m.n]).all())
                self.assert_clean(m, m.metrics(npu), name)

    def test_scale_drift(self):
        for name in MODELS:
            m = Model.get(name)
            with self.subTest(model=name):
                met = m.metrics(m.run("scale_drift"))
                self.assert_clean(m, met, name)
                self.assertAlmostEqual(met["norm_ratio"], 1.05, delta=1e-3)

    def test_unknown_injection_rejected(self):
        m = Model.get("tiny_llama")
        with self.assertRaises(ValueError) as cm:
            m.run("no_such_bug")
        self.assertIn("AIR_MINI_INJECT", str(cm.exception))

    def test_injections_are_the_probes_names(self):
        # --inject takes the same names on air-mini as on the real tree (contract.json emulate.inject).
        from shared.infra.inject import INJECTIONS
        with open(os.path.join(REPO, "scripts", "probe", "contract.json")) as f:
            shared = set(json.load(f)["emulate"]["inject"])
        self.assertLessEqual(shared, set(INJECTIONS))

    def test_renamed_injection_says_its_new_name(self):
        m = Model.get("tiny_llama")
        for old, new in (("missing_transpose", "transposed_q_weight"), ("no_causal_mask", "missing_causal_mask"),
                         ("rope_layout", "interleaved_rope")):
            with self.subTest(old=old), self.assertRaises(ValueError) as cm:
                m.run(old)
            self.assertIn(f"is now called {new!r}", str(cm.exception))
            self.assertIn(f"--emulate --inject {new}", str(cm.exception))

    def test_ignored_rmsnorm_weight_moves_the_normed_input(self):
        for name in MODELS:
            m = Model.get(name)
            with self.subTest(model=name):
                clean, bug = {}, {}
                m.run(trace=clean)
                m.run("ignored_rmsnorm_weight", trace=bug)
                n = m.n
                self.assertLess(whole_cosine(clean["attn_norm"][:n], bug["attn_norm"][:n]), 0.999)

    def test_lens_boundaries_on_both_sides(self):
        # The block returns, and the reference's layer 0 records, every boundary inside the block
        # under the lens's names, the same shape on both sides; on a clean run they agree.
        from runners.hf_runner import HfRunner
        with open(os.path.join(REPO, "scripts", "probe", "elf_boundaries.json")) as f:
            lens_names = {b["name"] for b in json.load(f)["boundaries"]}
        for name in MODELS:
            m = Model.get(name)
            with self.subTest(model=name):
                _, npu = m.block(m.x, m.weights.layers[0], m.lut, m.cfg, m.cache(True), layer_idx=0)
                ref = HfRunner(m.model_id, m.cfg, 2048).prefill(m.tokens).layer_intermediates[0]
                self.assertGreaterEqual(len(set(npu) & set(ref)), 14, sorted(set(npu) ^ set(ref)))
                self.assertLessEqual(set(npu) | set(ref), lens_names)
                for b in sorted(set(npu) & set(ref)):
                    a, r = np.asarray(npu[b], np.float32)[:m.n], ref[b]
                    self.assertEqual(a.shape, r.shape, b)
                    self.assertGreaterEqual(whole_cosine(a, r), 0.999, f"{name} {b}")
                self.assertEqual(set(npu) ^ set(ref), set(), "the same boundaries on both sides")

    def test_reference_ignores_injection(self):
        from runners.hf_runner import HfRunner
        m = Model.get("tiny_qwen25")
        for inj in ("dropped_bias", "scale_drift", "nan_row"):
            with _Inject(inj):
                rec = HfRunner(m.model_id, m.cfg, 2048).prefill(m.tokens)
            np.testing.assert_array_equal(rec.layer_intermediates[0]["ffn_out"], m.ref)

    def test_bisect_hook_localises_each_injection(self):
        from shared.infra.inject import INJECTIONS
        for name in MODELS:
            m = Model.get(name)
            steps = [s["step"] for s in m.P.bisect_steps(m.cfg)]
            self.assertEqual(steps[0], "attn_norm")
            self.assertEqual(steps[-1], "residual2")
            self.assertEqual(len(steps), len(set(steps)))
            # every step on the CPU still matches the reference
            self.assert_clean(m, m.metrics(m.run(cpu_steps=steps)), name + " all-cpu")
            for inj, (step, _) in INJECTIONS.items():
                if inj == "dropped_bias" and name != "tiny_qwen25":
                    continue
                with self.subTest(model=name, inject=inj):
                    self.assertIn(step, steps)
                    fixed = m.run(inj, cpu_steps={step})
                    self.assertTrue(np.isfinite(fixed).all())
                    self.assert_clean(m, m.metrics(fixed), f"{name} {inj} with {step} on cpu")

    def test_trace_collects_every_step(self):
        m = Model.get("tiny_qwen3")
        trace = {}
        m.run(trace=trace)
        for s in m.P.bisect_steps(m.cfg):
            self.assertIn(s["step"], trace)


class ApiTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        os.environ.pop("AIR_MINI_INJECT", None)

    def test_manifest_written_and_restored(self):
        from shared.infra.cache import KernelCache
        expected = {
            "tiny_llama": ["o_ffn", "rms_gemms_rope"],
            "tiny_qwen3": ["o_ffn_qwen", "rms_qkv_qknorm_rope"],
            "tiny_qwen25": ["down_add", "o_ffn_head", "rms_qkv_bias_rope"],
        }
        for name in MODELS:
            m = Model.get(name)
            d = os.path.join(self.tmp.name, name)
            c = KernelCache(cache_dir=d)
            m.P.compile_all_kernels(c, m.cfg, SEQ, cpu_attn=True)
            with open(os.path.join(d, "manifest.json")) as f:
                man = json.load(f)
            self.assertIn("_toolchain", man)
            self.assertEqual(sorted(man["entries"]), expected[name])
            for k, e in man["entries"].items():
                self.assertTrue(os.path.isfile(e["output_binary"]), e)
                self.assertTrue(e["output_binary"].endswith(f"{k}.elf"))
                self.assertTrue(os.path.isfile(e["insts"]))
                self.assertIn("kernel", e)
            # npu attention adds the flash_attn ELF
            m.P.compile_all_kernels(c, m.cfg, SEQ, cpu_attn=False)
            with open(os.path.join(d, "manifest.json")) as f:
                self.assertIn("flash_attn", json.load(f)["entries"])
            # a fresh cache restores from disk and runs without compiling
            c2 = KernelCache(cache_dir=d)
            self.assertTrue(c2.load_manifest())
            out, _ = m.block(m.x, m.weights.layers[0], m.lut, m.cfg, c2)
            self.assertGreaterEqual(m.metrics(np.array(out))["whole"], 0.999)
            # a missing binary invalidates the manifest
            os.remove(os.path.join(d, "o_ffn_head.elf" if name == "tiny_qwen25" else
                                   ("o_ffn_qwen.elf" if name == "tiny_qwen3" else "o_ffn.elf")))
            self.assertFalse(KernelCache(cache_dir=d).load_manifest())
        self.assertFalse(KernelCache(cache_dir=os.path.join(self.tmp.name, "empty")).load_manifest())

    def test_uncompiled_kernel_rejected(self):
        from shared.infra.cache import KernelCache
        m = Model.get("tiny_llama")
        c = KernelCache(cache_dir=self.tmp.name)
        with self.assertRaises(RuntimeError) as cm:
            m.block(m.x, m.weights.layers[0], m.lut, m.cfg, c)
        self.assertIn("not compiled", str(cm.exception))

    def test_seq_len_must_be_multiple_of_64(self):
        from shared.infra.cache import KernelCache
        for name in MODELS:
            m = Model.get(name)
            c = KernelCache(cache_dir=os.path.join(self.tmp.name, name))
            for bad in (100, 0, 32):
                with self.assertRaises(ValueError):
                    m.P.compile_all_kernels(c, m.cfg, bad)

    def test_unpadded_input_rejected(self):
        m = Model.get("tiny_llama")
        with self.assertRaises(ValueError) as cm:
            m.block(m.x[:m.n], m.weights.layers[0], m.lut, m.cfg, m.cache())
        self.assertIn("pad", str(cm.exception))

    def test_shared_buffer_views(self):
        for name in MODELS:
            m = Model.get(name)
            with self.subTest(model=name):
                c = m.cache()
                out0, inter0 = m.block(m.x, m.weights.layers[0], m.lut, m.cfg, c, layer_idx=0)
                kept = np.array(out0, copy=True)
                self.assertIs(inter0["ffn_out"], out0)
                out1, _ = m.block(kept, m.weights.layers[1], m.lut, m.cfg, c, layer_idx=1)
                self.assertTrue(np.shares_memory(out0, out1))
                self.assertFalse(np.array_equal(out0, kept))  # silently overwritten
                np.testing.assert_array_equal(out0, out1)

    def test_a_checkpoint_loaded_twice_is_two_independent_copies(self):
        # The NPU side and the HF side load one checkpoint in one process: drawn once, but a bug
        # planted in one side's weights must never reach the other's.
        for name in MODELS:
            m = Model.get(name)
            a = m.W.load_weights(m.model_id, config=m.cfg)
            b = m.W.load_weights(m.model_id, config=m.cfg)
            for f in ("wq", "w_down", "attn_norm"):
                x, y = getattr(a.layers[0], f), getattr(b.layers[0], f)
                np.testing.assert_array_equal(x, y)
                self.assertFalse(np.shares_memory(x, y), (name, f))
            before = float(b.layers[0].wq[0, 0])
            a.layers[0].wq[0, 0] = 1234.0
            a.embed_table[0, 0] = 1234.0
            self.assertEqual(float(b.layers[0].wq[0, 0]), before)
            c = m.W.load_weights(m.model_id, config=m.cfg)
            self.assertEqual(float(c.layers[0].wq[0, 0]), before, name)
            self.assertNotEqual(float(c.embed_table[0, 0]), 1234.0, name)

    def test_weights_deterministic_bf16(self):
        from shared.infra.bf16 import is_bf16, to_bf16
        for name in MODELS:
            m = Model.get(name)
            w2 = m.W.load_weights(m.model_id, config=m.cfg)
            np.testing.assert_array_equal(w2.layers[0].wq, m.weights.layers[0].wq)
            other = m.W.load_weights(m.A.resolve_model("base"), config=m.cfg)
            self.assertFalse(np.array_equal(other.layers[0].wq, m.weights.layers[0].wq))
            lw = m.weights.layers[0]
            for f in ("attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up",
                      "w_down"):
                self.assertTrue(is_bf16(getattr(lw, f)), (name, f))
            self.assertTrue(is_bf16(m.weights.embed_table))
            self.assertEqual(lw.wq.shape, (m.cfg.emb_dim, m.cfg.n_heads * m.cfg.head_dim))
            self.assertEqual(lw.w_down.shape, (m.cfg.hidden_dim, m.cfg.emb_dim))
            self.assertEqual(m.lut.shape, (SEQ, m.cfg.head_dim))
        q3 = Model.get("tiny_qwen3")
        self.assertTrue(q3.cfg.qk_norm)
        self.assertEqual(q3.weights.layers[0].q_norm.shape, (q3.cfg.head_dim,))
        q25 = Model.get("tiny_qwen25")
        self.assertTrue(q25.cfg.qkv_bias)
        self.assertNotEqual(q25.cfg.emb_dim % 1024, 0)
        self.assertNotEqual(q25.cfg.hidden_dim % 1024, 0)
        self.assertEqual(q25.weights.layers[0].bk.shape, (q25.cfg.n_kv_heads * 64,))
        self.assertEqual(to_bf16(np.float32(1.00390625)), np.float32(1.0))  # tie -> even
        self.assertEqual(to_bf16(np.float32(1.01171875)), np.float32(1.015625))

    def test_hf_runner_record_and_imports(self):
        from runners.hf_runner import HfRunner
        vmod = importlib.import_module("verify.runners.hf_runner")
        self.assertTrue(hasattr(vmod, "HfRunner"))
        m = Model.get("tiny_llama")
        rec = HfRunner(m.model_id, m.cfg, 2048).prefill(m.tokens)
        self.assertEqual(len(rec.layer_intermediates), m.cfg.n_layers)
        self.assertEqual(rec.layer_intermediates[-1], {})
        for li in range(m.cfg.n_layers - 1):
            ffn = rec.layer_intermediates[li]["ffn_out"]
            self.assertEqual(ffn.dtype, np.float32)
            self.assertEqual(ffn.shape, (m.n, m.cfg.emb_dim))
        self.assertEqual(rec.final_hidden_normed.shape, (m.n, m.cfg.emb_dim))
        self.assertEqual(rec.logits_at_pred.shape, (m.cfg.vocab_size,))
        self.assertEqual(rec.top1_token, int(np.argmax(rec.logits_at_pred)))
        lite = HfRunner(m.model_id, m.cfg, 2048, lite_mode=True).prefill(m.tokens)
        self.assertEqual(lite.layer_intermediates, [])
        # the checkpoint can also be handed over directly
        rec2 = HfRunner("anything", m.cfg, 2048, model=m.weights).prefill(m.tokens)
        np.testing.assert_array_equal(rec2.layer_intermediates[0]["ffn_out"],
                                      rec.layer_intermediates[0]["ffn_out"])
        with self.assertRaises(ValueError):
            HfRunner("no/such-model", m.cfg, 2048)

    def test_adapters(self):
        from runners.hf_runner import HfRunner
        for name in MODELS:
            m = Model.get(name)
            A = m.A
            with self.subTest(model=name):
                self.assertEqual(set(A.MODEL_CHOICES), {"base", "instruct"})
                self.assertIn(A.DEFAULT_MODEL, A.MODEL_CHOICES)
                self.assertEqual(A.resolve_model("base"), A.MODEL_CHOICES["base"])
                self.assertEqual(A.resolve_model("x/y"), "x/y")
                self.assertEqual(A.tokenize("hello world"), A.tokenize("hello world"))
                for style in ("base", "instruct"):
                    self.assertTrue(20 <= len(A.tokenize(A.prompts(style)[0])) <= 40)
                r = A.build_runner(m.model_id, m.cfg, SEQ, None, npu_attn=True,
                                   cache_dir=os.path.join(self.tmp.name, name))
                self.assertEqual(r.seq_len, SEQ)
                # As the real adapters: each layer's ffn_out is kept as the block returned it, a
                # view of the one shared output buffer, so after the prefill every layer holds
                # the last layer's output...
                rec = r.prefill(m.tokens)
                self.assertEqual(len(rec.layer_intermediates), m.cfg.n_layers)
                kept = [d["ffn_out"] for d in rec.layer_intermediates[:-1]]
                self.assertEqual(kept[0].shape, (m.n, m.cfg.emb_dim))
                self.assertTrue(all(np.shares_memory(k, kept[0]) for k in kept))
                # ...unless the caller copies what each block returns (the module global the
                # loop calls, as npu-block-gate's probe does).
                orig = A.run_prefill_block
                A.run_prefill_block = lambda *a, **k: tuple(
                    {n: np.array(v, copy=True) for n, v in x.items()} if isinstance(x, dict) else np.array(x, copy=True)
                    for x in orig(*a, **k))
                try:
                    rec = r.prefill(m.tokens)
                finally:
                    A.run_prefill_block = orig
                ffn0 = rec.layer_intermediates[0]["ffn_out"]
                np.testing.assert_array_equal(ffn0, m.run(cpu_attn=False)[:m.n])
                hf = HfRunner(A.hf_reference(m.model_id), m.cfg, 2048).prefill(m.tokens)
                for li in range(m.cfg.n_layers - 1):
                    a = rec.layer_intermediates[li]["ffn_out"]
                    b = hf.layer_intermediates[li]["ffn_out"]
                    self.assertGreater(per_position_cosine(a, b).min(), 0.99, li)
                self.assertGreater(
                    per_position_cosine(rec.final_hidden_normed, hf.final_hidden_normed).min(),
                    0.99)


if __name__ == "__main__":
    unittest.main()
