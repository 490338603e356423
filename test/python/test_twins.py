"""The CPU twins (npu_probe.emulate.twins) and the ELF boundary table
(scripts/probe/elf_boundaries.json), without running a block.

- bf16 rounding on float32 bits is ml_dtypes' (round to nearest even, NaN kept);
- the attention twin is the tree's own `attention_reference` (llama32_1b_cpu_helpers,
  loaded by path: numpy only) up to the bf16 rounding of its output; head-first attention
  (fa_headfirst's packing) gives the same numbers as seq-first;
- the RoPE twin with a [cos | sin] LUT is HF's `q * cos + rotate_half(q) * sin`; the
  injected interleaved / K-only RoPE are not;
- the table covers every bf16 model of the real tree, and agrees with each model's code:
  every ELF name a block passes to `cache.load_and_run` is in the model's entry, its
  `static_input_indices` are weights/LUTs (never a boundary), its `output_indices` are
  buffers the ELF writes; padding slices and layouts come out seq-first.

Needs numpy; the tree-reading tests need the real tree (NPU_BLOCK_GATE_MLIR_AIR, else
shared/mlir-air beside the checkout); ml_dtypes only for the rounding comparison.

run: .venv/bin/python -m unittest test.python.test_twins -v
"""

import ast
import importlib.util
import os
import re
import sys
import unittest

import numpy as np

from test.python.support import PROBE, find_mlir_air, missing_modules, missing_real_tree

sys.path.insert(0, PROBE)

from npu_probe.emulate import table as probe_table  # noqa: E402
from npu_probe.emulate import numerics as nm  # noqa: E402
from npu_probe.emulate import twins as tw  # noqa: E402

MLIR_AIR = find_mlir_air()
LLMS = os.path.join(MLIR_AIR, "programming_examples", "llms")
NO_TREE = missing_real_tree(os.path.join("programming_examples", "llms", "llama32_1b", "llama32_1b_prefill.py"))
HAVE_TREE = not NO_TREE
NO_ML_DTYPES = missing_modules(("ml_dtypes",), need="ml_dtypes")

BF16_MODELS = ("llama32_1b", "llama32_3b", "qwen25_0_5b", "qwen25_1_5b", "qwen25_3b", "qwen3_0_6b", "qwen3_1_7b",
               "qwen3_4b", "smollm2_1_7b")
# Where each model's block code lives (smollm2 runs llama32_1b's block).
BLOCK_FILES = {m: [f"{m}/{m}_prefill.py"] for m in BF16_MODELS}
BLOCK_FILES["smollm2_1_7b"] = ["llama32_1b/llama32_1b_prefill.py"]
FA_FILES = ["shared/infra/fa_headfirst.py", "shared/infra/fa_temporal.py"]


def cos(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def rng_arr(rng, *shape, scale=1.0):
    return tw.bf((rng.standard_normal(shape) * scale).astype(np.float32))


def load_by_path(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Bf16Tests(unittest.TestCase):
    @unittest.skipIf(NO_ML_DTYPES, NO_ML_DTYPES)  # nothing to compare the rounding with
    def test_rounding_is_ml_dtypes(self):
        from ml_dtypes import bfloat16

        rng = np.random.default_rng(0)
        x = np.concatenate([rng.standard_normal(10000).astype(np.float32) * 10.0 ** rng.integers(-8, 8, 10000),
                            np.array([0.0, -0.0, np.inf, -np.inf, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 65504.0],
                                     dtype=np.float32)]).astype(np.float32)
        self.assertTrue(np.array_equal(tw.bf(x), x.astype(bfloat16).astype(np.float32)))
        self.assertTrue(np.isnan(tw.bf(np.array([np.nan], np.float32)))[0])

    @unittest.skipIf(NO_ML_DTYPES, NO_ML_DTYPES)
    def test_rounding_is_ml_dtypes_bit_for_bit_at_every_rounding_boundary(self):
        from ml_dtypes import bfloat16

        # every bf16 pattern (high half) with the low halves where rounding turns: exact, just above,
        # just below half, half (ties to even), just above half, the top (a carry into the exponent,
        # to inf at the largest finite values)
        lows = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
        u = ((np.arange(1 << 16, dtype=np.uint32) << 16)[:, None] | lows[None, :]).ravel()
        x = u.view(np.float32)
        num = ~np.isnan(x)
        ours = tw.bf(x)
        self.assertTrue(np.array_equal(ours[num].view(np.uint32), x[num].astype(bfloat16).astype(np.float32).view(np.uint32)))
        self.assertTrue(np.isnan(ours[~num]).all(), "NaN stays NaN")
        self.assertTrue(np.array_equal(tw.bf16_bits(x), (ours.view(np.uint32) >> 16).astype(np.uint16)))
        self.assertTrue(np.array_equal(tw.from_bf16_bits(tw.bf16_bits(x)).view(np.uint32), ours.view(np.uint32)))
        for shape in ((), (3, 4), (2, 1, 5)):
            a = np.full(shape, 1.0 + 3 * 2 ** -8, np.float32)
            self.assertEqual(tw.bf(a).shape, shape)
            self.assertTrue(np.all(tw.bf(a) == np.float32(1.0 + 2 ** -6)))


class NumericsTests(unittest.TestCase):
    """The twins' two precisions (npu_probe.emulate.numerics): fp32 is the older numerics bit for bit;
    hardware rounds where the registry's kernels round, so its error against a float64 reference is
    above fp32's and at most what the registry measured for the kernel on the NPU (which adds its
    LUT and block-float errors on top): RMSNorm_bf16.md 4.2e-3, SiLU_Mul_bf16.md 1.0e-2,
    GELU_bf16.md 8.4e-3, RoPE_bf16.md 2.8e-3, FlashAttention_bf16.md 3.9e-2 (mean_rel_L1, randn)."""

    def setUp(self):
        self.rng = np.random.default_rng(7)
        self.a = rng_arr(self.rng, 256, 1024)
        self.b = rng_arr(self.rng, 256, 1024)

    @staticmethod
    def rel(x, ref):
        return float(np.abs(np.asarray(x, np.float64) - ref).mean() / np.abs(ref).mean())

    def check(self, name, hw, fp, ref, registry):
        e_hw, e_fp = self.rel(hw, ref), self.rel(fp, ref)
        self.assertLess(e_fp, e_hw, f"{name}: hardware must round more than fp32 ({e_hw} vs {e_fp})")
        self.assertLessEqual(e_hw, registry, f"{name}: {e_hw} above the registry's measured {registry}")

    def test_fp32_is_the_older_numerics_bit_for_bit(self):
        x, w, g, u = self.a, self.b[0], self.a, self.b
        ms = np.mean(x * x, axis=-1, keepdims=True, dtype=np.float32)
        self.assertTrue(np.array_equal(nm.rms_norm(x, w, 1e-5, nm.FP32),
                                       tw.bf(tw.bf(x * (1.0 / np.sqrt(ms + np.float32(1e-5)))) * w)))
        self.assertTrue(np.array_equal(nm.silu_mul(g, u, nm.FP32), tw.bf(g / (np.float32(1.0) + np.exp(-g)) * u)))
        q, k, v = self.a[:100, :64], self.b[:100, :64], self.a[100:200, :64]
        s = np.matmul(q, k.T, dtype=np.float32) * np.float32(1.0 / np.sqrt(64))
        s[np.triu(np.ones((100, 100), dtype=bool), k=1)] = -np.inf
        s -= s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
        self.assertTrue(np.array_equal(nm.softmax_attention(q, k, v, True, nm.FP32), np.matmul(p, v, dtype=np.float32)))

    def test_hardware_rounds_where_the_registry_kernels_round(self):
        x, w = self.a, self.b[0]
        x64 = x.astype(np.float64)
        ref = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-5) * w
        self.check("RMSNorm", nm.rms_norm(x, w, 1e-5), nm.rms_norm(x, w, 1e-5, nm.FP32), ref, 4.2e-3)
        g, u = self.a, self.b
        g64 = g.astype(np.float64)
        self.check("SiLU", nm.silu_mul(g, u), nm.silu_mul(g, u, nm.FP32), g64 / (1 + np.exp(-g64)) * u, 1.0e-2)
        ref = 0.5 * g64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (g64 + 0.044715 * g64 ** 3)))
        self.check("GELU", nm.gelu_tanh(g), nm.gelu_tanh(g, nm.FP32), ref, 8.4e-3)
        ang = self.rng.uniform(0, 6, (256, 512))
        c, s = tw.bf(np.cos(ang).astype(np.float32)), tw.bf(np.sin(ang).astype(np.float32))
        x1, x2 = self.a[:, :512], self.a[:, 512:]
        ref = x1.astype(np.float64) * c - x2.astype(np.float64) * s
        self.check("RoPE", nm.rotate(x1, x2, c, s)[0], nm.rotate(x1, x2, c, s, nm.FP32)[0], ref, 2.8e-3)
        q, k, v = self.a[:, :64], self.b[:, :64], self.a[:, 64:128]
        sc = q.astype(np.float64) @ k.T.astype(np.float64) / 8.0
        sc[np.triu(np.ones((256, 256), dtype=bool), k=1)] = -np.inf
        pr = np.exp(sc - sc.max(-1, keepdims=True))
        ref = (pr / pr.sum(-1, keepdims=True)) @ v
        self.check("FlashAttention", tw.bf(nm.softmax_attention(q, k, v)),
                   tw.bf(nm.softmax_attention(q, k, v, True, nm.FP32)), ref, 3.9e-2)

    def test_online_softmax_over_key_chunks(self):
        # 300 keys: four full 64-key chunks and a partial one; the first row sees only key 0.
        q, k, v = rng_arr(self.rng, 300, 64), rng_arr(self.rng, 300, 64), rng_arr(self.rng, 300, 64)
        out = nm.softmax_attention(q, k, v, True, nm.BF16)  # the chunking, with exact bf16 operands
        ref = nm.softmax_attention(q, k, v, True, nm.FP32)
        self.assertGreater(cos(out, ref), 0.9999)
        self.assertTrue(np.array_equal(tw.bf(out[0]), v[0]))
        self.assertFalse(np.isnan(out).any())

    def test_run_twin_takes_the_numerics(self):
        d = probe_table.dims_of({"emb_dim": 64, "hidden_dim": 128, "n_heads": 1, "n_kv_heads": 1, "head_dim": 64})
        vals = {"gate": self.a[:8, :128], "up": self.b[:8, :128]}
        hw = tw.run_twin("swiglu", vals, d)["out"]
        fp = tw.run_twin("swiglu", vals, d, num=nm.Numerics(precision=nm.FP32))["out"]
        self.assertFalse(np.array_equal(hw, fp))
        self.assertTrue(np.array_equal(fp, nm.silu_mul(vals["gate"], vals["up"], nm.FP32)))
        gemm = {"a": self.a[:8, :64], "w": self.b[:64, :32]}  # a GEMM rounds once at bf16 and fp32
        self.assertTrue(np.array_equal(tw.run_twin("gemm", gemm, d, num=nm.Numerics(precision=nm.BF16))["out"],
                                       tw.run_twin("gemm", gemm, d, num=nm.Numerics(precision=nm.FP32))["out"]))
        x = {"x": self.a[:8, :64], "attn_norm_w": 1 + self.b[0, :64] * 0.1, "wq": self.b[:64, :64],
             "wk": self.b[64:128, :64], "wv": self.b[128:192, :64], "lut_q": np.ones(8 * 64, np.float32),
             "lut_k": np.ones(8 * 64, np.float32)}
        tree_eps = tw.run_twin("rms_gemms_rope", x, d)["normed"]
        other_eps = tw.run_twin("rms_gemms_rope", x, d, num=nm.Numerics(rms_eps=1.0))["normed"]
        self.assertFalse(np.array_equal(tree_eps, other_eps))


def registry_rel_l1(out, ref):
    """The registry harness's mean_rel_L1 (FlashAttention_bf16.md:73): mean|o - ref| / mean|ref|."""
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    return float(np.abs(out - ref).sum() / np.abs(ref).sum())


class BlockFloatTests(unittest.TestCase):
    """hw precision: the BFP16 operand cast the tree compiles into its GEMMs and FlashAttention
    (external_kernels.py:175-184, :262-271), judged the way the kernel registry measured NPU2."""

    # The registry's measured NPU2 figures (mean_rel_L1 against its harness's reference):
    # GEMM_bf16_in_bf16_out.md:183 (512x512x512, high precision drain) and :179-182 (the 2048 rows): 9.3e-3;
    # FlashAttention_bf16.md:152 (512x512, dk 64, 2/2 heads, non-causal): 4.4e-2; :149 (2048 causal): 3.9e-2.
    GEMM_NPU2, FA_NPU2_512 = 9.3e-3, 4.4e-2

    def test_bfp16_format_by_hand(self):
        # A block of 8 shares the largest exponent (2^0 here); each value is a multiple of 2^(0-6)
        # rounded to nearest even: 0.01 -> 1/64, 1 + 2^-7 -> 64.5 units -> 64 -> 1.0,
        # 1 + 3*2^-7 -> 65.5 -> 66 -> 1.03125, -0.5 stays, 2^-8 -> 0.25 units -> 0.
        block = np.array([1.0, 0.01, 1.0078125, 1.0234375, -0.5, 2.0 ** -8, 0.0, -1.0], np.float32)
        want = np.array([1.0, 0.015625, 1.0, 1.03125, -0.5, 0.0, 0.0, -1.0], np.float32)
        self.assertTrue(np.array_equal(nm.bfp16(block), want), nm.bfp16(block))
        # a second block with a small exponent keeps its own precision: blocks do not share
        two = np.concatenate([block, block * np.float32(2.0 ** -10)])
        self.assertTrue(np.array_equal(nm.bfp16(two), np.concatenate([want, want * np.float32(2.0 ** -10)])))
        # the blocks run along the axis asked for (the reduction): along axis 0, column j is one block
        m = np.stack([block, np.full(8, 2.0 ** -8, np.float32)], axis=1)
        self.assertTrue(np.array_equal(nm.bfp16(m, 0)[:, 0], want))
        self.assertTrue(np.array_equal(nm.bfp16(m, 0)[:, 1], m[:, 1]))

    def test_gemm_lands_on_the_registrys_npu2_figure(self):
        # the harness: matrix_multiplication/bf16_in_bf16_out/run.py: randn / sqrt(K) in bf16, the
        # reference the FP32 matmul cast to bf16
        rng = np.random.default_rng(0)
        m = k = n = 512
        a = rng_arr(rng, m, k, scale=1 / np.sqrt(k))
        w = rng_arr(rng, k, n, scale=1 / np.sqrt(k))
        ref = tw.bf(np.matmul(a.astype(np.float64), w.astype(np.float64)).astype(np.float32))
        hw = registry_rel_l1(tw.gemm(a, w, bfp=nm.Numerics(precision=nm.HW).bfp16), ref)
        self.assertLess(abs(hw - self.GEMM_NPU2), 0.25 * self.GEMM_NPU2, f"twin GEMM {hw:.3e} vs NPU2 9.3e-3")
        bf16 = registry_rel_l1(tw.gemm(a, w, bfp=nm.Numerics(precision=nm.BF16).bfp16), ref)
        self.assertLess(bf16, 1e-6)  # exact bf16 operands: only the accumulation order differs

    def fa_error(self, precision):
        # the harness: flash_attention/kernel_fusion_based/attn_npu2.py: N(0,1) Q/K/V in bf16; the
        # reference SDPA in FP32 cast to bf16
        rng = np.random.default_rng(42)
        num = den = 0.0
        for _ in range(2):
            q, k, v = (rng_arr(rng, 512, 64) for _ in range(3))
            sc = q.astype(np.float64) @ k.T.astype(np.float64) / 8.0
            pr = np.exp(sc - sc.max(-1, keepdims=True))
            ref = tw.bf(((pr / pr.sum(-1, keepdims=True)) @ v).astype(np.float32))
            out = tw.bf(nm.softmax_attention(q, k, v, False, precision))
            num += float(np.abs(out.astype(np.float64) - ref).sum())
            den += float(np.abs(ref.astype(np.float64)).sum())
        return num / den

    def test_fa_blockfloat_adds_error(self):
        # BFP16 on both matmuls adds to bf16's softmax error, and stays under the NPU2 figure
        hw, bf16 = self.fa_error(nm.HW), self.fa_error(nm.BF16)
        self.assertGreater(hw, 2 * bf16, (hw, bf16))
        self.assertLess(hw, self.FA_NPU2_512)

    @unittest.expectedFailure
    def test_fa_lands_on_the_registrys_npu2_figure(self):
        # Not met: the twin gives about 1.6e-2 against 4.4e-2. The format and the kernel's roundings
        # that attn_npu2.cc states are all in; what is left is the hardware exp2/inv precision, which
        # no source in the tree states (see numerics.py). Kept so the gap stays visible.
        hw = self.fa_error(nm.HW)
        self.assertLess(abs(hw - self.FA_NPU2_512), 0.25 * self.FA_NPU2_512, f"twin FA {hw:.3e} vs NPU2 4.4e-2")

    def test_direct_gemms_get_no_blockfloat(self):
        # qwen25_0_5b's o_ffn_head: O is an external drain GEMM (BFP16); Gate/Up are direct-codegen
        spec = probe_table.model_spec("qwen25_0_5b")["elfs"]["o_ffn_head"]
        self.assertEqual(sorted(spec.get("direct", ())), ["gate", "up"])
        rng = np.random.default_rng(3)
        d = dict(probe_table.dims_of({"emb_dim": 64, "hidden_dim": 128, "n_heads": 1, "n_kv_heads": 1,
                                      "head_dim": 64}), direct=tuple(spec["direct"]))
        vals = {"attn": rng_arr(rng, 8, 64), "wo": rng_arr(rng, 64, 64, scale=0.1), "x": rng_arr(rng, 8, 64),
                "ffn_norm_w": 1 + rng_arr(rng, 64, scale=0.1), "w_gate": rng_arr(rng, 64, 128, scale=0.1),
                "w_up": rng_arr(rng, 64, 128, scale=0.1)}
        hw = tw.run_twin("o_ffn_head", vals, d, num=nm.Numerics(precision=nm.HW))
        bf16 = tw.run_twin("o_ffn_head", vals, d, num=nm.Numerics(precision=nm.BF16))
        self.assertFalse(np.array_equal(hw["proj"], bf16["proj"]))
        # same input to Gate/Up at both precisions, then the direct GEMMs must agree exactly
        again = tw.run_twin("o_ffn_head", dict(vals, wo=np.zeros_like(vals["wo"])), d, num=nm.Numerics(precision=nm.HW))
        flat = tw.run_twin("o_ffn_head", dict(vals, wo=np.zeros_like(vals["wo"])), d, num=nm.Numerics(precision=nm.BF16))
        self.assertTrue(np.array_equal(again["gate"], flat["gate"]))
        self.assertTrue(np.array_equal(again["up"], flat["up"]))
        undirected = tw.run_twin("o_ffn_head", dict(vals, wo=np.zeros_like(vals["wo"])), dict(d, direct=()),
                                 num=nm.Numerics(precision=nm.HW))
        self.assertFalse(np.array_equal(undirected["gate"], flat["gate"]))

    def test_old_hardware_name_reads_as_bf16(self):
        self.assertEqual(nm.Numerics(precision="hardware").precision, nm.BF16)
        self.assertFalse(nm.Numerics(precision="hardware").bfp16)
        self.assertTrue(nm.Numerics().bfp16)  # hw is the default

    @unittest.skipUnless(HAVE_TREE, NO_TREE)
    def test_direct_entries_are_the_trees_low_precision_gemms(self):
        # a model's prefill builds a GEMM with the registry's low-precision (direct-codegen) method
        # exactly when the table marks some GEMM of it direct
        low = re.compile(r'_gemm_spec\([^)]*"low"\)')
        for model in BF16_MODELS:
            src = ""
            for f in BLOCK_FILES[model]:
                with open(os.path.join(LLMS, f), encoding="utf-8") as fh:
                    src += fh.read()
            marked = any(e.get("direct") for e in probe_table.model_spec(model)["elfs"].values())
            self.assertEqual(bool(low.search(src)), marked, model)


class TwinMathTests(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(1)

    @unittest.skipUnless(HAVE_TREE, NO_TREE)
    def test_attention_is_the_trees_attention_reference(self):
        helpers = load_by_path("llama32_1b_cpu_helpers_twintest", os.path.join(LLMS, "llama32_1b",
                                                                             "llama32_1b_cpu_helpers.py"))
        seq, H, KV, hd = 40, 4, 2, 64
        q, k, v = rng_arr(self.rng, seq, H * hd), rng_arr(self.rng, seq, KV * hd), rng_arr(self.rng, seq, KV * hd)
        ours = tw.attention(q, k, v, (H, KV, hd), precision=nm.BF16)  # the math; BFP16 is BlockFloatTests
        theirs = helpers.attention_reference(q, k, v, H, KV)
        self.assertGreater(cos(ours, theirs), 0.99999)
        self.assertLess(np.max(np.abs(ours - tw.bf(theirs))), 0.02)
        no_mask = tw.attention(q, k, v, (H, KV, hd), causal=False)
        self.assertLess(cos(no_mask[: seq // 2], theirs[: seq // 2]), 0.999)

    def test_head_first_attention_matches_seq_first(self):
        seq, H, KV, hd = 32, 4, 2, 128
        d = probe_table.dims_of({"emb_dim": 256, "hidden_dim": 512, "n_heads": H, "n_kv_heads": KV, "head_dim": hd})
        q, k, v = rng_arr(self.rng, seq, H * hd), rng_arr(self.rng, seq, KV * hd), rng_arr(self.rng, seq, KV * hd)
        seq_first = tw.run_twin("flash_attn", {"q": q, "k": k, "v": v}, d)["out"]
        # the packing of shared/infra/fa_headfirst.npu_fa_headfirst
        dvt = d["dv_tile"]
        dvc = hd // dvt
        q_hf = q.reshape(seq, H, hd).transpose(1, 0, 2)
        k_hf = k.reshape(seq, KV, hd).transpose(1, 0, 2)
        v_hf = v.reshape(seq, KV, hd).transpose(1, 0, 2).reshape(KV, seq, dvc, dvt).transpose(0, 2, 1, 3) \
            .reshape(KV * dvc, seq, dvt)
        out = tw.run_twin("flash_attn", {"q": q_hf, "k": k_hf, "v": v_hf}, d, layout="head-first")["out"]
        back = out.reshape(H, dvc, seq, dvt).transpose(2, 0, 1, 3).reshape(seq, H * hd)
        self.assertTrue(np.array_equal(back, seq_first))

    def test_rope_is_hf_rotate_half_with_the_lut(self):
        seq, H, hd = 16, 3, 64
        half = hd // 2
        inv = 1.0 / (10000.0 ** (np.arange(0, hd, 2) / hd))
        ang = np.outer(np.arange(seq), inv)
        lut = tw.bf(np.concatenate([np.cos(ang), np.sin(ang)], axis=1).astype(np.float32))  # generate_rope_lut
        lut_q = np.repeat(lut, H, axis=0).reshape(-1)  # np.repeat(rope_lut[:seq], n_heads, axis=0).flatten()
        q = rng_arr(self.rng, seq, H * hd)
        ours = tw.rope(q, lut_q, (H, hd))
        qh = q.reshape(seq, H, hd)
        cos_, sin_ = np.concatenate([lut[:, :half]] * 2, 1)[:, None], np.concatenate([lut[:, half:]] * 2, 1)[:, None]
        rot = np.concatenate([-qh[..., half:], qh[..., :half]], axis=-1)
        hf = (qh * cos_ + rot * sin_).reshape(seq, H * hd)
        self.assertGreater(cos(ours, hf), 0.99999)
        self.assertLess(cos(tw.rope(q, lut_q, (H, hd), interleaved=True)[1:], hf[1:]), 0.999)

    def test_each_injection_changes_its_stage(self):
        d = probe_table.dims_of({"emb_dim": 128, "hidden_dim": 256, "n_heads": 2, "n_kv_heads": 1, "head_dim": 64})
        seq = 16
        emb, qd, kvd = 128, 128, 64
        inv = 1.0 / (10000.0 ** (np.arange(0, 64, 2) / 64))
        ang = np.outer(np.arange(seq), inv)
        lut = tw.bf(np.concatenate([np.cos(ang), np.sin(ang)], axis=1).astype(np.float32))
        vals = {"x": rng_arr(self.rng, seq, emb), "attn_norm_w": 1 + rng_arr(self.rng, emb, scale=0.3),
                "wq": rng_arr(self.rng, emb, qd, scale=0.1), "wk": rng_arr(self.rng, emb, kvd, scale=0.1),
                "wv": rng_arr(self.rng, emb, kvd, scale=0.1), "bq": rng_arr(self.rng, qd), "bk": rng_arr(self.rng, kvd),
                "bv": rng_arr(self.rng, kvd), "lut_q": np.repeat(lut, 2, axis=0).reshape(-1),
                "lut_k": lut.reshape(-1)}
        clean = tw.run_twin("rms_qkv_bias_rope", vals, d)
        for bug, (kinds, _what, _boundary, stage) in tw.INJECTIONS.items():
            if "rms_qkv_bias_rope" not in kinds:
                continue
            with self.subTest(bug=bug):
                bad = tw.run_twin("rms_qkv_bias_rope", vals, d, bug=tw.Injected(bug))
                order = tw.STAGES["rms_qkv_bias_rope"]
                first = next(r for r in order if not np.array_equal(bad[r], clean[r]))
                self.assertEqual(first, stage)

    def test_stale_tail_keeps_the_old_rows(self):
        d = probe_table.dims_of({"emb_dim": 8, "hidden_dim": 16, "n_heads": 1, "n_kv_heads": 1, "head_dim": 8})
        seq = 10
        vals = {"swiglu": rng_arr(self.rng, seq, 16), "w_down": rng_arr(self.rng, 16, 8), "res1": rng_arr(self.rng, seq, 8)}
        old = np.full(seq * 8, 7.0, np.float32)
        out = tw.run_twin("down_add", vals, d, bug=tw.Injected("stale_tail", real_len=6, prev={"out": old}))["out"].reshape(seq, 8)
        clean = tw.run_twin("down_add", vals, d)["out"].reshape(seq, 8)
        self.assertTrue(np.array_equal(out[:3], clean[:3]))
        self.assertTrue(np.all(out[3:6] == 7.0))
        self.assertTrue(np.array_equal(out[6:], clean[6:]))


class TableTests(unittest.TestCase):
    def test_layout_normalisation(self):
        d = probe_table.dims_of({"emb_dim": 896, "hidden_dim": 512, "n_heads": 14, "n_kv_heads": 2, "head_dim": 64},
                                seq=4)
        self.assertEqual(probe_table.eval_dim("pad1024(emb)", d), 1024)
        self.assertEqual(probe_table.eval_dim("seq*n_heads*head_dim", d), 4 * 896)
        spec = probe_table.model_spec("qwen25_0_5b")
        q = probe_table.args_by_role(spec["elfs"]["rms_qkv_bias_rope"])["q"]
        buf = np.arange(4 * 1024, dtype=np.float32).reshape(4, 1024)
        out = probe_table.to_seq_first(buf, q, d)
        self.assertEqual(out.shape, (4, 896))
        self.assertTrue(np.array_equal(out, buf[:, :896]))
        flat = probe_table.args_by_role(spec["elfs"]["down_add"])["out"]
        self.assertEqual(probe_table.to_seq_first(np.arange(4 * 896.0), flat, d).shape, (4, 896))
        d3 = probe_table.dims_of({"emb_dim": 256, "hidden_dim": 512, "n_heads": 4, "n_kv_heads": 2, "head_dim": 128},
                                 seq=5)
        fa = probe_table.model_spec("qwen3_0_6b")["elfs"]["flash_attn"]
        out_spec = probe_table.args_by_role(fa, "head-first")["out"]
        seq_first = np.arange(5 * 512, dtype=np.float32).reshape(5, 512)
        packed = seq_first.reshape(5, 4, 2, 64).transpose(1, 2, 0, 3).reshape(8, 5, 64)
        self.assertTrue(np.array_equal(probe_table.to_seq_first(packed, out_spec, d3, "head-first"), seq_first))

    def test_same_as_and_unknown(self):
        self.assertEqual(probe_table.model_spec("smollm2_1_7b")["elfs"].keys(),
                         probe_table.model_spec("llama32_1b")["elfs"].keys())
        self.assertIsNone(probe_table.model_spec("tiny_llama"))

    @unittest.skipUnless(HAVE_TREE, NO_TREE)
    def test_every_bf16_model_is_covered(self):
        quantized = re.compile(r"(_q4nx|_q4|_int4)$")
        dirs = sorted(d for d in os.listdir(LLMS) if os.path.isfile(os.path.join(LLMS, d, "verify_adapter.py"))
                      and not quantized.search(d) and d != "smolvla")
        self.assertEqual(tuple(dirs), tuple(sorted(BF16_MODELS)))
        for m in dirs:
            self.assertIsNotNone(probe_table.model_spec(m), m)

    @unittest.skipUnless(HAVE_TREE, NO_TREE)
    def test_the_table_agrees_with_each_models_code(self):
        calls = {}
        for rel in FA_FILES:
            calls[rel] = load_and_run_calls(os.path.join(LLMS, rel))
        for model in BF16_MODELS:
            spec = probe_table.model_spec(model)
            elfs = spec["elfs"]
            seen = set()
            for rel in BLOCK_FILES[model] + FA_FILES:
                found = calls.get(rel) or load_and_run_calls(os.path.join(LLMS, rel))
                for name, static, outputs, inter in found:
                    if name is None or (rel in FA_FILES and "flash_attn" not in elfs):
                        continue
                    if rel not in FA_FILES and model == "llama32_3b" and name not in elfs:
                        continue
                    with self.subTest(model=model, elf=name, file=rel):
                        self.assertIn(name, elfs, f"{rel} launches {name!r}, the table's {model} entry lacks it")
                        seen.add(name)
                        e = elfs[name]
                        args = {a["arg"]: a for lay in ([e["args"]] + list((e.get("layouts") or {}).values()))
                                for a in lay}
                        for i in static or ():
                            self.assertIn(i, args, f"static arg {i} not in the table")
                            self.assertNotIn("boundary", args[i], f"static arg {i} is a weight, not a boundary")
                        for i in outputs or ():
                            self.assertIn(i, args)
                            self.assertIn(args[i]["role"], set(tw.STAGES[e["kind"]]) | {"out"},
                                          f"output arg {i} is not written by the ELF")
                        for i in inter or ():
                            if i in args:
                                self.assertNotIn(args[i]["role"], tw.input_roles(e["kind"]),
                                                 f"intermediate arg {i} is an input role")
            if model != "llama32_3b":
                self.assertEqual(seen | ({"flash_attn"} - seen), set(elfs), model)


def load_and_run_calls(path):
    """[(elf name or None, static indices, output indices, intermediate literal indices)] of every
    `*.load_and_run(...)` call in a file, read with ast (literal sets/lists only)."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load_and_run":
            name = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            kw = {k.arg: k.value for k in node.keywords}

            def lit(v):
                if isinstance(v, (ast.Set, ast.List, ast.Tuple)):
                    return [e.value for e in v.elts if isinstance(e, ast.Constant)]
                if isinstance(v, ast.BinOp) and isinstance(v.left, (ast.Set, ast.List)):
                    return lit(v.left)
                return None

            out.append((name, lit(kw.get("static_input_indices")), lit(kw.get("output_indices")),
                        lit(kw.get("intermediate_indices"))))
    return out


if __name__ == "__main__":
    unittest.main()
