"""The real tree's shared-buffer aliasing, and the probe's fix for it, on a fake NPU.

The real KernelCache (llms/shared/infra/cache.py) runs the prefill with
`load_and_run(..., shared_nonstatic=True)`: what it returns are zero-copy views of
buffer objects that the next launch of the same kernel reuses. The real verify
adapter's diagnosis loop (llama32_1b/verify_adapter.py, `NpuRunner.prefill`) keeps
`np.asarray(ints["ffn_out"])[:prompt_len]` for every layer without a copy, calling
the block through its module global `run_prefill_block`. This test runs that real
code, unchanged, in a temp copy of the tree, with the NPU replaced by
fakes/fake_air.py (pyxrt / air.backend.xrt / filelock stand-ins, deterministic numpy
kernels per ELF name, a log of what every launch wrote), and shows:

(a) without a copy, every layer's `layer_intermediates[li]["ffn_out"]` holds the LAST
    layer's output: all of them are views of the one shared o_ffn output buffer;
(b) with the probe's `copy_on_return(adapter_module)` active, each layer's ffn_out is
    that layer's own block output (what the o_ffn launch of that layer wrote), and
    layer 0 equals a fresh single call of the real `run_transformer_block` on the same
    input, copied at once; the same holds through the probe's own
    `npu_probe.run.adapter.adapter_prefill`.

Each check runs with NPU attention (the `flash_attn` ELF, verify_runner's default
--npu-attn on) and with the CPU attention fallback.

What is not the tree's code: the NPU (fake_air), `NpuRunner.__init__` (it compiles
every kernel; the runner is built without it, with the attributes prefill() reads),
and `run_npu_prefill` (the production prefill + LM head that prefill() calls first
for the logits; stubbed for the test and restored after). The model is tiny (3
layers, emb 960, 15 query / 5 kv heads of 64, max_seq 256) and its shapes were picked
so that the real `_rms_scratch_specs` finds them in the tree's kernel registry
(GEMM 256x960x960 and 256x960x320, both "drain", so no f32 scratch args): nothing in
llama32_1b_prefill is patched.

Needs numpy and ml_dtypes (the tree's own imports); skipped otherwise. The real tree:
NPU_BLOCK_GATE_MLIR_AIR, else shared/mlir-air beside the checkout, else
/work/shared/mlir-air; skipped, saying so, when none has the llama32_1b adapter.
sys.path and sys.modules are restored after every test.

run: .venv/bin/python -m unittest test.python.test_real_aliasing -v
"""

import contextlib
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROBE = os.path.join(REPO, "scripts", "probe")

MODEL = "llama32_1b"
ADAPTER = f"{MODEL}.verify_adapter"
N_LAYERS = 3
MAX_SEQ = 256  # registry GEMM shapes 256x960x960 / 256x960x320 exist
PROMPT_LEN = 11
CONFIG = dict(n_layers=N_LAYERS, emb_dim=960, n_heads=15, head_dim=64, n_kv_heads=5, hidden_dim=1024, vocab_size=97)
EOS = 2



from test.python.support import find_mlir_air, missing_modules, missing_real_tree  # noqa: E402

MLIR_AIR = find_mlir_air()
LLMS_REL = os.path.join("programming_examples", "llms")


def why_skip():
    # The test imports the tree, which needs numpy and ml_dtypes.
    for rel in (os.path.join(MODEL, "verify_adapter.py"), os.path.join("shared", "infra", "cache.py")):
        missing = missing_real_tree(os.path.join(LLMS_REL, rel))
        if missing:
            return missing
    return missing_modules(("numpy", "ml_dtypes"), need="ml_dtypes")


SKIP = why_skip()


def make_parseable_here(cache_py):
    """shared/infra/cache.py's PEP 701 lines rewritten IN THE TEMP COPY ONLY (SNAPSHOT.md allows it
    for tests) when this Python is older than 3.12: scripts/fixture/tree_copy.py's, the rewrite
    `npx npu-block-gate fixture tree-copy` makes. Returns the rewritten line numbers."""
    fixture_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scripts", "fixture")
    if fixture_dir not in sys.path:
        sys.path.insert(0, fixture_dir)
    import tree_copy  # noqa: PLC0415

    return tree_copy.make_parseable_here(cache_py)


def tree_module_names(llms):
    """Top-level module names the tree's llms/, llms/verify and model dir provide (plus
    kernel_registry): entries of sys.modules under these names from elsewhere (another
    test's fake tree) are moved aside while a test imports the real ones."""
    names = {"kernel_registry", "verify_adapter"}
    for d in (llms, os.path.join(llms, "verify"), os.path.join(llms, MODEL)):
        for entry in os.listdir(d):
            stem, ext = os.path.splitext(entry)
            if (ext == ".py" or (not ext and os.path.isdir(os.path.join(d, entry)))) and stem.isidentifier():
                names.add(stem)
    return {n for n in names if not n.startswith("_")} - set(sys.stdlib_module_names) - {"test", "docs", "bench", "prompts"}


@unittest.skipIf(SKIP, SKIP)
class RealAliasingTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import numpy as np  # noqa: PLC0415
        from ml_dtypes import bfloat16  # noqa: PLC0415

        if __package__:
            from .fakes import fake_air  # noqa: PLC0415
        else:  # run as a script from test/python
            sys.path.insert(0, HERE)
            try:
                from fakes import fake_air  # noqa: PLC0415
            finally:
                sys.path.remove(HERE)
        cls.np, cls.bf16, cls.fake_air = np, bfloat16, fake_air

        cls.tmp = tempfile.mkdtemp(prefix="npu-block-gate-aliasing-")
        cls.root = os.path.join(cls.tmp, "mlir-air")
        shutil.copytree(MLIR_AIR, cls.root, ignore=shutil.ignore_patterns("__pycache__", "build_peano"))
        cls.llms = os.path.join(cls.root, LLMS_REL)
        cls.rewritten = make_parseable_here(os.path.join(cls.llms, "shared", "infra", "cache.py"))
        cls.tree_names = tree_module_names(cls.llms)

        # Random bf16 weights shaped like llama32_1b_weights.LayerWeights (y = x @ W).
        c = CONFIG
        emb, hid, kv = c["emb_dim"], c["hidden_dim"], c["n_kv_heads"] * c["head_dim"]
        rng = np.random.default_rng(20260822)

        def mat(rows, cols):
            return (rng.standard_normal((rows, cols), dtype=np.float32) / np.sqrt(rows)).astype(bfloat16)

        def norm(n):
            return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(bfloat16)

        cls.layer_arrays = [
            dict(attn_norm=norm(emb), wq=mat(emb, emb), wk=mat(emb, kv), wv=mat(emb, kv), wo=mat(emb, emb),
                 ffn_norm=norm(emb), w_gate=mat(emb, hid), w_up=mat(emb, hid),
                 w_down=mat(hid, emb))
            for _ in range(N_LAYERS)
        ]
        cls.embed = rng.standard_normal((c["vocab_size"], emb), dtype=np.float32).astype(bfloat16)
        cls.final_norm = norm(emb)
        cls.tokens = rng.integers(3, c["vocab_size"], size=PROMPT_LEN).astype(np.int64)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    # -- the real tree, imported fresh for each test -------------------------------------

    @contextlib.contextmanager
    def real_tree(self):
        """Import the real adapter from the temp copy with the fake NPU installed; yields a
        namespace of the modules and helpers. sys.path, sys.modules (incl. the fakes) and the
        adapter's `run_npu_prefill` global are put back afterwards."""
        saved_path = list(sys.path)
        saved_modules = dict(sys.modules)
        for name in list(sys.modules):
            if name.split(".")[0] in self.tree_names:
                del sys.modules[name]
        rt = self.fake_air.FakeRuntime()
        adapter = None
        real_run_npu_prefill = None
        try:
            with rt.installed():
                # as verify_runner does: llms/ and llms/verify first; the adapter puts its model dir there too
                for p in (self.llms, os.path.join(self.llms, "verify"), os.path.join(self.llms, MODEL)):
                    sys.path.insert(0, p)
                adapter = importlib.import_module(ADAPTER)
                prefill_mod = sys.modules[f"{MODEL}_prefill"]
                for mod in (adapter, prefill_mod, sys.modules["shared.infra.cache"]):
                    self.assertTrue(os.path.realpath(mod.__file__).startswith(os.path.realpath(self.root) + os.sep),
                                    f"{mod.__name__} imported from {mod.__file__}, not the temp copy")
                weights_mod = sys.modules[f"{MODEL}_weights"]
                cfg = weights_mod.LlamaConfig(**CONFIG)
                rt.kernels.update(self.fake_air.llama_prefill_kernels(cfg))

                # prefill() first calls run_npu_prefill (production prefill + LM head) for the
                # logits; that is not what this test is about: stub it, restore it below.
                real_run_npu_prefill = adapter.run_npu_prefill
                calls = []

                def run_npu_prefill_stub(token_ids, weights, config, prefill_cache, decode_cache,
                                         rope_lut_bf16, max_seq, tokenizer=None, cpu_attn=True, profile=False, quiet=False):
                    calls.append(len(token_ids))
                    return 0, self.np.zeros(config.vocab_size, dtype=self.np.float32), None, None, PROMPT_LEN

                adapter.run_npu_prefill = run_npu_prefill_stub

                weights = weights_mod.LlamaWeights(
                    embed_table=self.embed,
                    layers=[weights_mod.LayerWeights(**la) for la in self.layer_arrays],
                    final_norm=self.final_norm,
                    lm_head=self.embed,
                )
                lut = weights_mod.generate_rope_lut(config=cfg, seq_len=MAX_SEQ).astype(self.bf16)
                n_caches = [0]

                def new_cache(cpu_attn):
                    """The tree's own KernelCache (as the adapter imported it), given artifacts, no compile."""
                    n_caches[0] += 1
                    cache = adapter.KernelCache(os.path.join(self.tmp, f"cache{n_caches[0]}"), verbose=False)
                    return rt.populate(cache, ["rms_gemms_rope", "o_ffn"] + ([] if cpu_attn else ["flash_attn"]))

                def new_runner(cpu_attn):
                    """adapter.NpuRunner without its __init__ (which compiles every kernel)."""
                    r = adapter.NpuRunner.__new__(adapter.NpuRunner)
                    r.weights, r.config, r.max_seq = weights, cfg, MAX_SEQ
                    r.npu_attn, r.cpu_attn, r.lite_mode = not cpu_attn, cpu_attn, False
                    r._tokenizer = types.SimpleNamespace(eos_token_id=EOS)
                    r.rope_lut_bf16 = lut
                    r.prefill_cache = new_cache(cpu_attn)
                    r.decode_cache = new_cache(cpu_attn)
                    r.k_cache = r.v_cache = None
                    return r

                yield types.SimpleNamespace(
                    rt=rt, adapter=adapter, prefill_mod=prefill_mod, inference_mod=sys.modules[f"{MODEL}_inference"],
                    cfg=cfg, weights=weights, lut=lut, new_cache=new_cache, new_runner=new_runner, stub_calls=calls,
                )
        finally:
            if adapter is not None and real_run_npu_prefill is not None:
                adapter.run_npu_prefill = real_run_npu_prefill
            sys.path[:] = saved_path
            for name in list(sys.modules):
                if name not in saved_modules:
                    del sys.modules[name]
            sys.modules.update(saved_modules)

    # -- helpers -----------------------------------------------------------------------------

    def own_outputs(self, rt, start):
        """Each layer's own block output, as the fake NPU's o_ffn launch of that layer wrote
        it (copied right after the launch), for the launches from `start` on: [:prompt_len]."""
        launches = [la for la in rt.launches[start:] if la.name == "o_ffn"]
        self.assertEqual(len(launches), N_LAYERS, "one o_ffn launch per layer")
        return [la.outputs[14].reshape(MAX_SEQ, CONFIG["emb_dim"])[:PROMPT_LEN] for la in launches], launches

    def assert_bits(self, a, b, what):
        np = self.np
        a, b = np.asarray(a), np.asarray(b)
        self.assertEqual(a.dtype, self.bf16, f"{what}: dtype {a.dtype}")
        self.assertEqual(b.dtype, self.bf16, f"{what}: dtype {b.dtype}")
        self.assertEqual(a.shape, b.shape, what)
        if not np.array_equal(a.view(np.uint16), b.view(np.uint16)):
            d = np.abs(a.astype(np.float32) - b.astype(np.float32))
            self.fail(f"{what}: not bit-equal (max |diff| {d.max():.4g}, {int((d > 0).sum())} elements differ)")

    def assert_differ(self, a, b, what):
        self.assertFalse(self.np.array_equal(self.np.asarray(a).view(self.np.uint16), self.np.asarray(b).view(self.np.uint16)), what)

    def assert_layers_distinct(self, own):
        for i in range(len(own)):
            for j in range(i + 1, len(own)):
                self.assert_differ(own[i], own[j], f"layers {i} and {j} produced the same output: the test could not see aliasing")

    def bo_bytes(self, bo):
        return self.np.frombuffer(bo._buf, dtype=self.np.uint8)

    def check_each_layer_own(self, w, rec, own, start):
        """rec's layers are each its own block output, and none is a view of an NPU buffer."""
        inter = rec.layer_intermediates
        self.assertEqual(len(inter), N_LAYERS)
        for li in range(N_LAYERS):
            fo = inter[li]["ffn_out"]
            self.assert_bits(fo, own[li], f"layer {li} ffn_out vs layer {li}'s own block output")
            for bo in {id(b): b for la in w.rt.launches[start:] for b in la.bos}.values():
                self.assertFalse(self.np.shares_memory(fo, self.bo_bytes(bo)), f"layer {li} ffn_out is a view of an NPU buffer")

    # -- (a) the real adapter without a copy ---------------------------------------------------

    def test_without_copy_every_layer_holds_the_last_layers_ffn_out(self):
        for cpu_attn in (False, True):
            with self.subTest(cpu_attn=cpu_attn), self.real_tree() as w:
                runner = w.new_runner(cpu_attn)
                rec = runner.prefill(self.tokens)
                self.assertEqual(w.stub_calls, [MAX_SEQ], "prefill() pads to max_seq and calls run_npu_prefill once")
                own, launches = self.own_outputs(w.rt, 0)
                self.assert_layers_distinct(own)
                # the real KernelCache: ONE o_ffn output buffer for all layers, per-layer weight buffers
                self.assertEqual(len({id(la.bos[14]) for la in launches}), 1, "o_ffn output BO shared across layers")
                self.assertEqual(len({id(la.bos[1]) for la in launches}), N_LAYERS, "wo BO per layer")
                self.assertEqual(len(w.rt.launches_of("flash_attn")), 0 if cpu_attn else N_LAYERS)
                shared_out = self.bo_bytes(launches[0].bos[14])
                inter = rec.layer_intermediates
                self.assertEqual(len(inter), N_LAYERS)
                for li in range(N_LAYERS):
                    fo = inter[li]["ffn_out"]
                    self.assertTrue(self.np.shares_memory(fo, shared_out), f"layer {li} ffn_out is not a view of the shared o_ffn output BO")
                    self.assert_bits(fo, own[-1], f"layer {li} ffn_out vs the LAST layer's output")
                    if li < N_LAYERS - 1:
                        self.assert_differ(fo, own[li], f"layer {li} ffn_out still equals its own output: no aliasing seen")
                self.assertTrue(set(w.rt.lock_paths) <= {"/tmp/npu.lock"} and w.rt.lock_paths, "the fake FileLock saw the cache's lock")

    # -- (b) the same, with the probe's copy_on_return -----------------------------------------

    def probe_adapter(self):
        sys.path.insert(0, PROBE)  # removed by real_tree's sys.path restore
        return importlib.import_module("npu_probe.run.adapter")

    def test_copy_on_return_keeps_each_layers_own_ffn_out(self):
        for cpu_attn in (False, True):
            with self.subTest(cpu_attn=cpu_attn), self.real_tree() as w:
                probe_adapter = self.probe_adapter()
                real_block = w.adapter.run_prefill_block
                self.assertIs(real_block, w.prefill_mod.run_transformer_block)

                # the unpatched run first, on its own runner: the reference for "own" outputs
                rec_a = w.new_runner(cpu_attn).prefill(self.tokens)
                own_a, _ = self.own_outputs(w.rt, 0)
                self.assert_bits(rec_a.layer_intermediates[0]["ffn_out"], own_a[-1], "unpatched run aliases (sanity)")

                start = len(w.rt.launches)
                runner = w.new_runner(cpu_attn)
                with probe_adapter.copy_on_return(w.adapter) as n:
                    self.assertGreaterEqual(n, 1, "copy_on_return found no block global in the adapter")
                    self.assertIsNot(w.adapter.run_prefill_block, real_block)
                    rec = runner.prefill(self.tokens)
                self.assertIs(w.adapter.run_prefill_block, real_block, "copy_on_return restored the global")
                own, _ = self.own_outputs(w.rt, start)
                self.assert_layers_distinct(own)
                for li in range(N_LAYERS):
                    self.assert_bits(own[li], own_a[li], f"layer {li}: same block output in both runs (deterministic fake)")
                self.check_each_layer_own(w, rec, own, start)

                # layer 0 = a fresh single call of the real block on the same input, copied at once
                padded = self.np.concatenate([self.tokens, self.np.zeros(MAX_SEQ - PROMPT_LEN, dtype=self.tokens.dtype)])
                x = w.weights.embed_table[padded].astype(self.np.float32).astype(self.bf16)
                _, ints = w.prefill_mod.run_transformer_block(
                    x, w.weights.layers[0], w.lut, w.cfg, w.new_cache(cpu_attn), layer_idx=0, cpu_attn=cpu_attn, verbose=False)
                fresh0 = self.np.array(ints["ffn_out"], copy=True)[:PROMPT_LEN]
                self.assert_bits(rec.layer_intermediates[0]["ffn_out"], fresh0, "layer 0 vs a fresh run_transformer_block call")

    def test_probe_adapter_prefill_keeps_each_layers_own_ffn_out(self):
        for cpu_attn in (False, True):
            with self.subTest(cpu_attn=cpu_attn), self.real_tree() as w:
                probe_adapter = self.probe_adapter()
                real_block = w.adapter.run_prefill_block
                real_inf_block = w.inference_mod.run_transformer_block
                log = []
                ctx = types.SimpleNamespace(  # the parts of a RunContext adapter_prefill reads
                    model=types.SimpleNamespace(adapter=w.adapter, inference_mod=w.inference_mod),
                    spec=types.SimpleNamespace(tokens=tuple(int(t) for t in self.tokens)),
                    log=types.SimpleNamespace(step=log.append, detail=log.append, error=log.append),
                )
                runner = w.new_runner(cpu_attn)
                rec = probe_adapter.adapter_prefill(ctx, f"{ADAPTER}.build_runner", runner)
                self.assertIs(w.adapter.run_prefill_block, real_block)
                self.assertIs(w.inference_mod.run_transformer_block, real_inf_block)
                own, _ = self.own_outputs(w.rt, 0)
                self.assert_layers_distinct(own)
                self.check_each_layer_own(w, rec, own, 0)
                outs = probe_adapter.layer_outputs(rec)
                self.assertEqual(sorted(outs), list(range(N_LAYERS)))
                for li, arr in outs.items():
                    self.assertTrue(self.np.array_equal(arr, own[li].astype(self.np.float32)), f"probe layer_outputs[{li}]")


if __name__ == "__main__":
    unittest.main()
