"""The real tree's own block functions on the emulated NPU (`probe block --emulate`), against
the real HfRunner on tiny random checkpoints: the lens, the CPU twins, the injected bugs,
the launch-level and swap-forward bisect, and --positions.

A temp copy of ../shared/mlir-air (cache.py's two print-only PEP 701 f-strings rewritten
when this Python is older than 3.12, as test_real_aliasing does) and a temp HF hub with
tiny random checkpoints (fakes/tiny_hf.py: llama like Llama-3.2-1B-Instruct, smollm2 like
SmolLM2-1.7B-Instruct, qwen2 like Qwen2.5-0.5B-Instruct, qwen3 like Qwen3-0.6B; plain
random init, std 0.02, so attention is near uniform). Each run is the probe itself, in a
process of its own, offline (a `probe block` forked from the class's test-only fork server,
test/python/forkserver.py, which imported torch and transformers once; the rest spawned): the tree's llama32_1b / smollm2_1_7b (llama32_1b's block through its
adapter) / qwen25_0_5b (bias on device, N padded to 1024) / qwen3_0_6b (Q/K norm,
head-first FlashAttention) block functions, compile skipped, ELFs answered by the twins.

The numbers (cosines) are computed HERE, with numpy, from the run dir's tensors: the probe
writes tensors and declares them; it computes no metric.

- clean: the seed's gates pass and every boundary's whole and per-position cosine is
  >= 0.999; the lens changes nothing (--no-boundaries gives the same block0 files);
- each injected bug: the first boundary under 0.999 in block order is the one the bug
  touches, the launch-level bisect's first diverging buffer is the ELF and stage it lives
  in, and when the gates fail the first swap-forward step that passes them is that ELF;
  interleaved RoPE on plain random init passes the gates and the lens still names q_roped;
- --positions 2048: every architecture, 2048 real positions (the prompt set repeated).
  qwen2, qwen3 and smollm2 stay clean. llama32_1b does not, and that is the tree: its
  generate_rope_lut uses plain rope_theta frequencies while Llama-3.2 (and this checkpoint)
  declares llama3 rope_scaling, so q/k after RoPE drift with position (invisible at the
  canonical prompt's length) while ffn_out still passes the gates.

Needs torch, transformers, ml_dtypes (.venv); skipped otherwise or without the tree.

run: .venv/bin/python -m unittest test.python.test_real_twins -v
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROBE = os.path.join(REPO, "scripts", "probe")
if REPO not in sys.path:
    sys.path.insert(0, REPO)
from test.python.forkserver import ForkServer  # noqa: E402
from test.python.support import find_mlir_air, missing_modules, missing_real_tree  # noqa: E402

MLIR_AIR = find_mlir_air()
LLMS_REL = os.path.join("programming_examples", "llms")

MODELS = {  # model dir -> (tiny_hf arch, head_dim)
    "llama32_1b": ("llama", 64),
    "smollm2_1_7b": ("smollm2", 64),
    "qwen25_0_5b": ("qwen2", 64),
    "qwen3_0_6b": ("qwen3", 128),
}
BAR = 0.999  # the acceptance bar for a clean boundary
# The clean-block tests hold every boundary to BAR with the twins at bf16 (the integration path and the
# lens, as they were set): at hw, BFP16's own rounding puts qwen3's down and swiglu per-position minimum
# at 0.99897-0.99899 (over 2048 positions), which the error budget against the hardware twins judges
# (test_the_error_budget_of_a_clean_run_is_near_one), not this bar.
CLEAN = ("--twin-precision", "bf16")
# (model, bug) -> (boundary the lens names first, (launch, buffer) the bisect names)
BUGS = {
    ("llama32_1b", "transposed_q_weight"): ("q", ("rms_gemms_rope", "q")),
    ("llama32_1b", "missing_causal_mask"): ("attn_out", ("flash_attn", "out")),
    ("llama32_1b", "interleaved_rope"): ("q_roped", ("rms_gemms_rope", "q_roped")),
    ("llama32_1b", "rope_k_only"): ("q_roped", ("rms_gemms_rope", "q_roped")),
    ("llama32_1b", "ignored_rmsnorm_weight"): ("attn_norm", ("rms_gemms_rope", "normed")),
    ("llama32_1b", "stale_tail"): ("ffn_out", ("o_ffn", "out")),
    ("qwen25_0_5b", "dropped_bias"): ("q", ("rms_qkv_bias_rope", "q_b")),
    ("qwen25_0_5b", "transposed_q_weight"): ("q_gemm", ("rms_qkv_bias_rope", "q")),
    ("qwen25_0_5b", "stale_tail"): ("ffn_out", ("down_add", "out")),
    ("qwen3_0_6b", "interleaved_rope"): ("q_roped", ("rms_qkv_qknorm_rope", "q_roped")),
    ("qwen3_0_6b", "missing_causal_mask"): ("attn_out", ("flash_attn", "out")),
    ("qwen3_0_6b", "ignored_rmsnorm_weight"): ("attn_norm", ("rms_qkv_qknorm_rope", "normed")),
    # the FFN norm: named where its drift starts (normed2), not at a later stage that crosses a bar first
    ("qwen3_0_6b", "ignored_ffn_norm_weight"): ("ffn_norm", ("o_ffn_qwen", "normed2")),
    ("llama32_1b", "ignored_ffn_norm_weight"): ("ffn_norm", ("o_ffn", "normed2")),
    ("qwen25_0_5b", "ignored_ffn_norm_weight"): ("ffn_norm", ("o_ffn_head", "normed2")),
}


def why_skip():
    # The emulated real-tree tests run the real HfRunner.
    return (missing_real_tree(os.path.join(LLMS_REL, "llama32_1b", "llama32_1b_prefill.py"))
            or missing_modules(("numpy", "ml_dtypes", "torch", "transformers", "tokenizers", "safetensors")))


SKIP = why_skip()


# ---------------------------------------------------------------------------
# numbers, here and only here


def cos(a, b):
    import numpy as np  # noqa: PLC0415

    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na and nb else 0.0


def per_position(a, b):
    import numpy as np  # noqa: PLC0415

    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    ok = (na > 0) & (nb > 0)
    out = np.zeros(a.shape[0])
    out[ok] = (a * b).sum(1)[ok] / (na * nb)[ok]
    return out


def rel_l2(a, b):
    import numpy as np  # noqa: PLC0415

    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nb = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / nb) if nb else float("nan")


def threshold(head_dim):
    import math  # noqa: PLC0415

    return min(max(0.99 - 0.01 * math.log2(head_dim / 64), 0.97), 0.99)


class Run:
    """A run dir, read: probe.json, the gate numbers and the lens table."""

    def __init__(self, path):
        import numpy as np  # noqa: PLC0415

        self.path = path
        with open(os.path.join(path, "probe.json"), encoding="utf-8") as f:
            self.probe = json.load(f)
        self.real_len = self.probe["prompt"]["real_len"]
        self.npu = np.load(os.path.join(path, "block0.npu.npy"))
        self.ref = np.load(os.path.join(path, "block0.ref.npy"))
        self.lens = []
        for e in (self.probe.get("boundaries") or {}).get("entries", []):
            n, r = self.load(e["npu"]["file"]), self.load(e["ref"]["file"])
            self.lens.append((e["name"], cos(n, r), float(per_position(n, r).min()), e))

    def load(self, rel):
        import numpy as np  # noqa: PLC0415

        return np.load(os.path.join(self.path, *rel.split("/")))

    def gates(self, head_dim):
        import numpy as np  # noqa: PLC0415

        npu = self.npu[: self.real_len]
        whole, pmin = cos(npu, self.ref), float(per_position(npu, self.ref).min())
        ok = whole >= 0.99 and pmin >= threshold(head_dim) and bool(np.isfinite(self.npu).all())
        return ok, whole, pmin

    def budget(self, name):
        """error(NPU vs FP32) / error(HF bf16 vs FP32) at a boundary (relative L2), NaN when both are exact."""
        e = next(e for n, _, _, e in self.lens if n == name)
        f = self.load(e["fp32"]["file"])
        npu, ref = rel_l2(self.load(e["npu"]["file"]), f), rel_l2(self.load(e["ref"]["file"]), f)
        return npu / ref if ref else float("nan")

    def vs_twins(self, name):
        """error(NPU vs FP32) / error(hardware twins vs FP32) at a boundary: the budget the judge warns on."""
        e = next(e for n, _, _, e in self.lens if n == name)
        f = self.load(e["fp32"]["file"])
        npu, twin = rel_l2(self.load(e["npu"]["file"]), f), rel_l2(self.load(e["twin"]["file"]), f)
        return npu / twin if twin else float("nan")

    def first_below(self, bar=BAR):
        return next(((n, c, p) for n, c, p, _ in self.lens if c < bar or p < bar), None)

    def bisect(self):
        with open(os.path.join(self.path, "bisect", "bisect.json"), encoding="utf-8") as f:
            return json.load(f)

    def first_launch_divergence(self, b, bar=BAR):
        for la in b["launches"]:
            for buf in la["buffers"]:
                c = cos(self.load(buf["npu"]["file"]), self.load(buf["twin"]["file"]))
                if c < bar:
                    return la["launch"], buf["buffer"], c
        return None

    def first_fixing_swap(self, b, head_dim):
        for s in b["steps"]:
            out = self.load(s["file"])[: self.real_len]
            if cos(out, self.ref) >= 0.99 and per_position(out, self.ref).min() >= threshold(head_dim):
                return s["step"]
        return None


@unittest.skipIf(SKIP, SKIP)
class RealTreeTwinTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, HERE)
        try:
            from fakes import shared_fixtures, tiny_hf  # noqa: PLC0415
            from test_real_aliasing import make_parseable_here  # noqa: PLC0415
        finally:
            sys.path.remove(HERE)
        cls.tmp = tempfile.mkdtemp(prefix="npu-block-gate-twins-")
        cls.root = os.path.join(cls.tmp, "mlir-air")
        hub = os.path.join(cls.tmp, "hub")
        fx = shared_fixtures.load()
        if fx and fx["tree"] and fx["hub"]:
            # This run's shared fixtures: a copy of its parseable tree, its checkpoints hard-linked
            # (only read; the directories are this copy's own).
            shutil.copytree(fx["tree"], cls.root)
            subprocess.run(["cp", "-al", fx["hub"], hub], check=True)
            cls.ckpt = shared_fixtures.checkpoints(fx)
        else:
            shutil.copytree(MLIR_AIR, cls.root, ignore=shutil.ignore_patterns("__pycache__", "build_peano", "build_chess"))
            make_parseable_here(os.path.join(cls.root, LLMS_REL, "shared", "infra", "cache.py"))
            cls.ckpt = {arch: tiny_hf.build(arch, hub) for arch in sorted({a for a, _ in MODELS.values()})}
        cls.env = dict(os.environ)
        for k in list(cls.env):
            if k.startswith(("HF_", "HUGGINGFACE_", "TRANSFORMERS_")) or k == "AIR_MINI_INJECT":
                del cls.env[k]
        cls.env.update(tiny_hf.offline_env(hub))
        cls.runs = {}
        cls.server = None

    @classmethod
    def tearDownClass(cls):
        if cls.server:
            cls.server.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def probe(self, *args):
        return subprocess.run([sys.executable, PROBE, *args], capture_output=True, text=True, env=self.env,
                              timeout=900)

    def probe_block(self, *args):
        """`probe block`, forked from this job's fork server: torch and transformers are imported
        once per job instead of once per run (about 3.5 of a run's 4.8 CPU-seconds)."""
        cls = type(self)
        if cls.server is None:
            cls.server = ForkServer(cls.env)
        return cls.server.run(PROBE, args, env=self.env, timeout=900)

    def block(self, model, tag, *extra, seq_len="64", arch=None):
        out = os.path.join(self.tmp, "runs", f"{model}-{tag}")
        arch = arch or MODELS[model][0]
        args = ["block", "--model-dir", os.path.join(self.root, LLMS_REL, model), "--out", out, "--ref-cache", "none",
                "--npu-lock", "none", "--emulate", "--hf-model", self.ckpt[arch].hf_id, "--prompt-style", "instruct"]
        if seq_len:
            args += ["--seq-len", seq_len]
        r = self.probe_block(*args, *extra)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        return Run(out)

    # -- clean -------------------------------------------------------------------------

    def test_clean_blocks_pass_the_gates_and_every_boundary(self):
        expect = {
            "llama32_1b": {"q", "k", "v", "q_roped", "k_roped"},
            "smollm2_1_7b": {"q", "k", "v", "q_roped", "k_roped"},
            "qwen25_0_5b": {"q_gemm", "k_gemm", "v_gemm", "q", "k", "v", "q_roped", "k_roped"},
            "qwen3_0_6b": {"q", "k", "v", "q_norm", "k_norm", "q_roped", "k_roped"},
        }
        common = {"block_input", "attn_norm", "attn_out", "o_proj", "res1", "ffn_norm", "gate", "up", "swiglu",
                  "down", "ffn_out"}
        for model, (arch, hd) in MODELS.items():
            with self.subTest(model=model):
                run = self.block(model, "clean", *CLEAN)
                p = run.probe
                ok, whole, pmin = run.gates(hd)
                self.assertTrue(ok, f"{model}: gates fail (cos {whole:.5f}, per-position min {pmin:.5f})")
                names = [n for n, _, _, _ in run.lens]
                self.assertEqual(set(names), common | expect[model])
                orders = [e["order"] for _, _, _, e in run.lens]
                self.assertEqual(orders, sorted(orders), "entries in block order")
                for name, c, pm, e in run.lens:
                    self.assertGreaterEqual(c, BAR, f"{model} {name}")
                    self.assertGreaterEqual(pm, BAR, f"{model} {name}")
                    self.assertEqual(e["source"], "launch")
                    self.assertEqual(e["npu"]["shape"], e["ref"]["shape"])
                    self.assertEqual(e["npu"]["shape"][0], run.real_len)
                b = p["boundaries"]
                self.assertTrue(b["emulated"])
                self.assertEqual(b["reference"], "hf-layer0-hooks/1")
                self.assertEqual(b["unpaired"], [])
                emu = p["emulate"]
                self.assertIsNone(emu["inject"])
                self.assertEqual(p["model"]["config"]["emb_dim"], self.ckpt[arch].config.emb_dim)
                self.assertEqual(p["kernel_cache"]["entries"], emu["artifacts"])
                self.assertEqual(p["integration"]["kernels"], emu["artifacts"])
                self.assertFalse(p["integration"]["cpu_attn"])
                self.assertEqual(p["reference"]["kind"], "hf-bf16")
                self.cls_runs()[model] = run
        q = self.cls_runs()["qwen25_0_5b"]
        qg = next(e for n, _, _, e in q.lens if n == "q_gemm")
        self.assertEqual((qg["launch"], qg["arg"], qg["npu"]["shape"][1]), ("rms_qkv_bias_rope", 4, 256),
                         "the N padding to 1024 is sliced off")
        smol = self.cls_runs()["smollm2_1_7b"].probe["emulate"]["registry"]
        self.assertIn({"shape": [64, 256, 256], "as": [2048, 2048, 2048], "dtype": "bf16", "precision": "high",
                       "method": "fused-cast"}, smol, "MHA: Q/K/V all fused-cast with f32 scratch, as production")

    def test_the_other_bf16_models_run_too(self):
        """The rest of the table, end to end at the same tiny configs: llama32_3b, qwen25_1_5b and
        qwen25_3b on host attention (their head-first FlashAttention wrappers want head_dim 128, the
        tiny llama/qwen2 checkpoints have 64), qwen3_1_7b and qwen3_4b on NPU attention."""
        others = {"llama32_3b": ("llama", ["--cpu-attn"], "o_ffn"),
                  "qwen25_1_5b": ("qwen2", ["--cpu-attn"], "down_add"),
                  "qwen25_3b": ("qwen2", ["--cpu-attn"], "down_add"),
                  "qwen3_1_7b": ("qwen3", [], "o_ffn_qwen"),
                  "qwen3_4b": ("qwen3", [], "down_add")}
        for model, (arch, extra, tail) in others.items():
            with self.subTest(model=model):
                run = self.block(model, "clean", *extra, *CLEAN, arch=arch)
                ok, whole, pmin = run.gates(128 if arch == "qwen3" else 64)
                self.assertTrue(ok, f"{model}: cos {whole:.5f}, min {pmin:.5f}")
                self.assertGreaterEqual(len(run.lens), 16)
                for name, c, pm, e in run.lens:
                    self.assertGreaterEqual(min(c, pm), BAR, f"{model} {name}")
                ffn = next(e for n, _, _, e in run.lens if n == "ffn_out")
                self.assertEqual(ffn["launch"], tail)

    def cls_runs(self):
        return type(self).runs

    def test_the_lens_changes_nothing_in_the_block(self):
        import numpy as np  # noqa: PLC0415

        with_lens = self.cls_runs().get("llama32_1b") or self.block("llama32_1b", "clean", *CLEAN)
        without = self.block("llama32_1b", "nolens", "--no-boundaries", *CLEAN)
        self.assertIsNone(without.probe["boundaries"])
        self.assertFalse(os.path.isdir(os.path.join(without.path, "boundaries")))
        self.assertTrue(np.array_equal(with_lens.npu, without.npu))
        self.assertTrue(np.array_equal(with_lens.ref, without.ref), "hooks leave HfRunner's ffn_out bit for bit")

    # -- injected bugs ---------------------------------------------------------------

    # One test per model (scripts/test.mjs runs each test of this file as a job of its own).
    def test_each_injected_bug_is_named_by_the_lens_and_the_bisect_llama32_1b(self):
        self.check_injected_bugs("llama32_1b")

    def test_each_injected_bug_is_named_by_the_lens_and_the_bisect_qwen25_0_5b(self):
        self.check_injected_bugs("qwen25_0_5b")

    def test_each_injected_bug_is_named_by_the_lens_and_the_bisect_qwen3_0_6b(self):
        self.check_injected_bugs("qwen3_0_6b")

    def test_every_bug_has_its_test(self):
        self.assertEqual({m for m, _ in BUGS}, {"llama32_1b", "qwen25_0_5b", "qwen3_0_6b"})

    def check_injected_bugs(self, only):
        import numpy as np  # noqa: PLC0415

        for (model, bug), (boundary, launch) in BUGS.items():
            if model != only:
                continue
            hd = MODELS[model][1]
            with self.subTest(model=model, bug=bug):
                run = self.block(model, bug, "--inject", bug)
                self.assertEqual(run.probe["emulate"]["inject"], bug)
                first = run.first_below()
                self.assertIsNotNone(first, f"{model} {bug}: every boundary >= {BAR}")
                self.assertEqual(first[0], boundary, f"{model} {bug}: lens names {first}")
                r = self.probe("bisect", "--run-dir", run.path, "--npu-lock", "none")
                self.assertEqual(r.returncode, 0, r.stderr[-3000:])
                b = run.bisect()
                self.assertEqual((b["available"], b["method"], b["hook"], b["emulated"]), (True, "twins", None, True))
                # the unswapped re-run under this interpreter is the judged ffn_out, bit for bit
                self.assertEqual(b["rerun"], {"file": "bisect/00-rerun.npy", "python": sys.executable})
                self.assertTrue(np.array_equal(run.load(b["rerun"]["file"]), run.npu))
                self.assertEqual(b["twins"]["precision"], "hw")
                # the error budget against FP32 sees it too: at the bug's boundary the NPU's error is far
                # above the hardware twins' own (the issue: 5-330x over the bar), over the bar of 3
                self.assertGreater(run.vs_twins(boundary), 3.0, f"{model} {bug}: NPU/twins at {boundary}")
                hit = run.first_launch_divergence(b)
                self.assertIsNotNone(hit)
                self.assertEqual(hit[:2], launch, f"{model} {bug}: the launch bisect names {hit}")
                ok, whole, pmin = run.gates(hd)
                if not ok:
                    self.assertEqual(run.first_fixing_swap(b, hd), launch[0],
                                     f"{model} {bug}: gates fail (cos {whole:.4f}, min {pmin:.4f})")
                if (model, bug) == ("llama32_1b", "interleaved_rope"):
                    self.assertTrue(ok, f"plain random init: near-uniform attention hides RoPE from ffn_out "
                                        f"(cos {whole:.5f}, min {pmin:.5f})")
                    self.assertLess(first[2], 0.9, "and the lens sees it at q_roped")

    def test_a_bisect_of_another_block_does_not_reproduce_the_judged_output(self):
        """probe.json changed under the run (here: the injected bug gone): the bisect's unswapped
        re-run is another block's output, which the judge then refuses (src/bisect/judge.ts)."""
        import numpy as np  # noqa: PLC0415

        run = self.block("qwen25_0_5b", "rerun", "--inject", "dropped_bias")
        path = os.path.join(run.path, "probe.json")
        with open(path, encoding="utf-8") as f:
            p = json.load(f)
        p["emulate"]["inject"] = None
        with open(path, "w", encoding="utf-8") as f:
            json.dump(p, f)
        r = self.probe("bisect", "--run-dir", run.path, "--npu-lock", "none")
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        rerun = run.load(run.bisect()["rerun"]["file"])
        diff = float(np.linalg.norm(rerun[: run.real_len] - run.npu[: run.real_len]) / np.linalg.norm(run.npu[: run.real_len]))
        self.assertGreater(diff, 0.01, "a clean block is not the judged (dropped-bias) one")

    def test_the_error_budget_of_a_clean_run_is_near_one(self):
        """HF layer 0 in FP32 and the hardware twins' pass beside every boundary (issue 29.2): at the
        default precision hw a clean block's error against FP32 is about 1x the twins' own, at every
        boundary a twin wrote (the block input is exact on every side; under --cpu-attn attn_out is
        the host's and has no twin side), while the twins themselves, BFP16 and all, are well over
        bf16's error at the Q GEMM (the issue: 3.4-4.1x). Qwen's RMSNorm ELFs use eps 1e-5 where the
        config says 1e-6: probe.json names both, the tree's with its file and line."""
        import math  # noqa: PLC0415

        for model, extra, arch in (("llama32_1b", [], None), ("smollm2_1_7b", [], None), ("qwen25_0_5b", [], None),
                                   ("qwen3_0_6b", [], None), ("llama32_3b", ["--cpu-attn"], "llama")):
            with self.subTest(model=model):
                run = self.block(model, "budget", *extra, arch=arch)
                b = run.probe["boundaries"]
                self.assertEqual(b["fp32"]["dtype"], "float32")
                self.assertEqual(b["twin"]["precision"], "hw")
                self.assertEqual(run.probe["emulate"]["twins"]["precision"], "hw", "hw is the default")
                for name, _, _, e in run.lens:
                    self.assertEqual(e["fp32"]["shape"], e["ref"]["shape"])
                    if name == "attn_out" and extra:
                        self.assertIsNone(e["twin"], "host attention: no twin wrote it")
                        continue
                    self.assertEqual(e["twin"]["shape"], e["ref"]["shape"], f"{model} {name}")
                    r = run.vs_twins(name)
                    if name == "block_input":
                        self.assertTrue(math.isnan(r), "the embeddings are exact on every side")
                        continue
                    self.assertLessEqual(abs(r - 1), 0.1, f"{model} {name}: NPU/twins {r:.3f}")
                q = "q_gemm" if model == "qwen25_0_5b" else "q"
                self.assertGreater(run.budget(q), 2.0, f"{model}: BFP16 costs the Q GEMM more than bf16 does")
                eps = b["norm_eps"]
                self.assertEqual((eps["tree"], eps["file"], eps["twins"]),
                                 (1e-5, "programming_examples/weighted_rms_norm/weighted_rms_norm.py", 1e-5))
                self.assertEqual(eps["config"], 1e-6 if model.startswith("qwen") else 1e-5)
                with open(os.path.join(self.root, *eps["file"].split("/")), encoding="utf-8") as f:
                    self.assertRegex(f.read().splitlines()[eps["line"] - 1], r"^EPS\s*=\s*1e-5")
        # bf16's own measure stays: twins without BFP16 at the config's eps are within [0.5, 2] of bf16
        cfg = self.block("qwen25_0_5b", "budget-bf16", "--twin-precision", "bf16", "--twin-eps", "config")
        for name, _, _, _ in cfg.lens:
            if name != "block_input":
                self.assertTrue(0.5 <= cfg.budget(name) <= 2.0, f"qwen25_0_5b bf16 {name}: {cfg.budget(name):.2f}")

    def test_fp32_twins_keep_the_older_numerics_and_config_eps_changes_the_norm(self):
        import numpy as np  # noqa: PLC0415

        bf = self.cls_runs().get("qwen25_0_5b") or self.block("qwen25_0_5b", "clean", *CLEAN)
        fp = self.block("qwen25_0_5b", "fp32", "--twin-precision", "fp32")
        self.assertEqual(fp.probe["emulate"]["twins"], {"precision": "fp32", "rms_eps": 1e-05, "qk_eps": 1e-06,
                                                        "eps_from": "tree"})
        self.assertEqual(bf.probe["emulate"]["twins"]["precision"], "bf16")
        self.assertFalse(np.array_equal(bf.npu, fp.npu))
        ok, whole, pmin = fp.gates(64)
        self.assertTrue(ok)
        eps = self.block("qwen25_0_5b", "configeps", "--twin-eps", "config", *CLEAN)
        self.assertEqual(eps.probe["emulate"]["twins"]["rms_eps"], 1e-06)  # Qwen2.5's rms_norm_eps
        self.assertEqual(eps.probe["emulate"]["twins"]["eps_from"], "config")
        norm = {n: e for n, _, _, e in eps.lens}["attn_norm"]
        tree = {n: e for n, _, _, e in bf.lens}["attn_norm"]
        ratio = lambda r, e: float(np.linalg.norm(r.load(e["npu"]["file"])) / np.linalg.norm(r.load(e["ref"]["file"])))  # noqa: E731
        self.assertLess(abs(ratio(eps, norm) - 1), abs(ratio(bf, tree) - 1), "the config's eps brings the scale back")

    def test_option_errors_are_one_line_exit_2(self):
        model_dir = os.path.join(self.root, LLMS_REL, "llama32_1b")
        for args, pat in ((["--inject", "stale_tail"], "--inject: needs --emulate"),
                          (["--emulate", "--inject", "nope"], "--inject: unknown bug 'nope'"),
                          (["--emulate", "--positions", "0"], "--positions: 0 is not a positive"),
                          (["--emulate", "--positions", "4096"], "--positions: 4096 exceeds the compiled seq_len"),
                          (["--twin-eps", "config"], "--twin-eps: needs --emulate")):
            with self.subTest(args=args):
                r = self.probe("block", "--model-dir", model_dir, "--out", os.path.join(self.tmp, "bad"),
                               "--ref-cache", "none", "--npu-lock", "none",
                               "--hf-model", self.ckpt["llama"].hf_id, *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                errors = [ln for ln in r.stderr.splitlines() if ln.startswith("probe: error:")]
                self.assertEqual(len(errors), 1, r.stderr)
                self.assertIn(pat, errors[0])

    # -- long inputs -------------------------------------------------------------------

    def test_2048_positions_llama32_1b(self):
        self.check_2048_positions("llama32_1b")

    def test_2048_positions_smollm2_1_7b(self):
        self.check_2048_positions("smollm2_1_7b")

    def test_2048_positions_qwen25_0_5b(self):
        self.check_2048_positions("qwen25_0_5b")

    def test_2048_positions_qwen3_0_6b(self):
        self.check_2048_positions("qwen3_0_6b")

    def test_2048_positions_on_every_architecture(self):
        self.assertEqual(set(MODELS), {"llama32_1b", "smollm2_1_7b", "qwen25_0_5b", "qwen3_0_6b"}, "one test each above")

    def check_2048_positions(self, only):
        import numpy as np  # noqa: PLC0415

        for model, (arch, hd) in MODELS.items():
            if model != only:
                continue
            with self.subTest(model=model):
                run = self.block(model, "2048", "--positions", "2048", *CLEAN, seq_len=None)
                pos = run.probe["prompt"]["positions"]
                self.assertEqual((pos["requested"], pos["real_len"], pos["method"]), (2048, 2048, "repeated"))
                self.assertEqual((run.real_len, run.probe["prompt"]["padded_len"]), (2048, 2048))
                self.assertEqual(len(run.probe["prompt"]["token_ids"]), 2048)
                ok, whole, pmin = run.gates(hd)
                self.assertTrue(ok, f"{model} at 2048: cos {whole:.5f}, min {pmin:.5f}")
                if model != "llama32_1b":
                    self.assertIsNone(run.first_below(), f"{model} at 2048")
                    continue
                # llama32_1b: the tree's RoPE LUT has no llama3 frequency scaling; the checkpoint has it.
                self.assertEqual(self.ckpt["llama"].hf_config["rope_scaling"]["rope_type"], "llama3")
                first = run.first_below()
                self.assertEqual(first[0], "q_roped")
                names_below = {n for n, c, p, _ in run.lens if p < BAR}
                self.assertTrue({"q_roped", "k_roped"} <= names_below)
                self.assertGreaterEqual(min(p for n, _, p, _ in run.lens if n in ("q", "k", "v")), BAR)
                e = next(e for n, _, _, e in run.lens if n == "q_roped")
                pp = per_position(run.load(e["npu"]["file"]), run.load(e["ref"]["file"]))
                self.assertGreaterEqual(pp[:64].min(), BAR, "the canonical prompt's positions look clean")
                self.assertLess(pp[-256:].mean(), 0.95, "the drift grows with position")
                self.assertLess(np.mean(pp[-256:]), np.mean(pp[256:512]))


if __name__ == "__main__":
    unittest.main()
