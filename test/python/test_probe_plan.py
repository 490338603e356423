"""Tests for npu_probe.plan (scripts/probe/npu_probe/plan): the static Phase 2 plan.

The real-tree tests run on a temp copy of the mlir-air snapshot
($NPU_BLOCK_GATE_MLIR_AIR, else ../shared/mlir-air; skipped when absent),
planning every model dir it has; the emulated-tree tests run on examples/air-mini.
Nothing here imports a module of either tree, and nothing needs torch.

Run from the repo root: python3 -m unittest test.python.test_probe_plan
"""

import json
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts", "probe"))

from npu_probe.plan import build, report, step1  # noqa: E402
from npu_probe.plan.request import Host, PlanRequest  # noqa: E402
from test.python.support import find_mlir_air, missing_real_tree  # noqa: E402
from npu_probe.plan.static import imports, makefile, parse, paths  # noqa: E402
from npu_probe.core.errors import ProbeError  # noqa: E402

REAL_TREE = find_mlir_air()
AIR_MINI = os.path.join(REPO, "examples", "air-mini")
BF16 = ("llama32_1b", "llama32_3b", "qwen25_0_5b", "qwen25_1_5b", "qwen25_3b",
        "qwen3_0_6b", "qwen3_1_7b", "qwen3_4b", "smollm2_1_7b")
QUANTIZED = ("gemma3_4b_q4nx", "llama31_8b_q4nx", "llama32_1b_int4", "llama32_1b_q4nx",
             "llama32_3b_q4nx", "phi4_mini_q4nx", "qwen25_3b_q4", "qwen25_7b_q4nx", "qwen3_8b_q4nx")
OLD_PYTHON = sys.version_info[:2] < (3, 12)


def plan_of(model_dir, air_root=None, environ=None, device_glob="/dev/accel/accel*", **request):
    """make_plan with the request's options and the host's (environ, device_glob) as keywords."""
    return build.make_plan(PlanRequest(model_dir, air_root, **request), Host(environ, device_glob))


def by_id(plan, fid):
    found = [f for f in plan["preflight"] if f["id"] == fid]
    return found[0] if found else None


def rule_set(plan):
    return {b["rule"] for b in plan["step1"]["breaks"]}


NO_REAL_TREE = missing_real_tree(os.path.join("programming_examples", "llms"))


@unittest.skipIf(NO_REAL_TREE, NO_REAL_TREE)
class RealTreePlanTest(unittest.TestCase):
    """One plan per model dir of a temp copy of the real tree (copied once)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="plan-real-")
        cls.root = os.path.join(cls.tmp, "mlir-air")
        shutil.copytree(REAL_TREE, cls.root, ignore=shutil.ignore_patterns("__pycache__"))
        cls.llms = os.path.join(cls.root, "programming_examples", "llms")
        # A fixed environment: empty HF cache, no toolchain, a device glob that
        # matches nothing, so the answers do not depend on this host.
        cls.env = {"HOME": cls.tmp, "HF_HUB_CACHE": os.path.join(cls.tmp, "hub")}
        cls.no_device = os.path.join(cls.tmp, "dev", "accel", "accel*")
        cls.models = sorted(d for d in os.listdir(cls.llms)
                            if os.path.isfile(os.path.join(cls.llms, d, "verify_adapter.py")))
        cls.plans = {m: cls.plan(m) for m in cls.models}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def plan(cls, model, **kw):
        kw.setdefault("environ", cls.env)
        kw.setdefault("device_glob", cls.no_device)
        return plan_of(os.path.join(cls.llms, model), **kw)

    # -- every model dir gets an answer

    def test_every_plan_ends_with_a_summary_and_has_a_step2_line(self):
        # Issue 16: a plan on a machine without an NPU read as a failure (FAIL lines, no summary).
        for m in self.models:
            with self.subTest(model=m):
                p = self.plans[m]
                lines = report.plan_lines(p)
                self.assertRegex(lines[-1], r"^summary: (ready|not ready|Phase 2 cannot run on)")
                if p.get("refusal"):
                    self.assertIn(p["refusal"]["reason"], lines[-1])
                else:
                    self.assertTrue(any(line.startswith("step2") for line in lines), lines)
        q = report.plan_lines(self.plans["qwen3_0_6b"])
        self.assertIn("step2: no workaround triggers (emb_dim 1024 and hidden_dim 3072 are 1024-aligned; "
                      "no qkv_bias): nothing to carry into Phases 4/5", q)
        self.assertRegex(q[-1], r"^summary: not ready on this machine: \d+ checks fail here \(.*npu-device.*\); "
                                r"the tree itself is ready for Phase 2 \(step1 path kernel-first\)")
        fixes = [f["fix"] for f in self.plans["qwen3_0_6b"]["preflight"] if f["id"] == "package-torch" and f["fix"]]
        for fix in fixes:  # pip names the interpreter it installs into
            self.assertTrue(fix.startswith(f"{sys.executable} -m pip install torch"), fix)


    def test_copy_keeps_license_and_all_19_models(self):
        # This class's copy (what the plans below read) and the copy the emulated real-tree tests
        # run on (fakes/shared_fixtures.copy_tree): the MIT LICENSE, all 19 model dirs, and every
        # file as in the tree but the PEP 701 lines of cache.py this Python cannot parse.
        self.assertEqual(set(self.models), set(BF16) | set(QUANTIZED) | {"smolvla"})
        sys.path.insert(0, os.path.join(REPO, "test", "python"))
        try:
            from fakes import shared_fixtures  # noqa: PLC0415
        finally:
            sys.path.remove(os.path.join(REPO, "test", "python"))
        fixture = os.path.join(self.tmp, "fixture-copy")
        rewritten = shared_fixtures.copy_tree(REAL_TREE, fixture)
        for copy in (self.root, fixture):
            with open(os.path.join(REAL_TREE, "LICENSE"), "rb") as a, open(os.path.join(copy, "LICENSE"), "rb") as b:
                self.assertEqual(a.read(), b.read(), copy)
        llms = os.path.join(fixture, "programming_examples", "llms")
        self.assertEqual(sorted(d for d in os.listdir(llms) if os.path.isfile(os.path.join(llms, d, "verify_adapter.py"))),
                         self.models)
        cache_py = os.path.join("programming_examples", "llms", "shared", "infra", "cache.py")
        self.assertEqual(bool(rewritten), OLD_PYTHON)
        src_root = os.path.join(REAL_TREE, "programming_examples")
        for d, dirs, files in os.walk(src_root):
            dirs[:] = [x for x in dirs if x not in ("__pycache__", "build_peano", "build_chess")]
            for name in files:
                rel = os.path.relpath(os.path.join(d, name), REAL_TREE)
                with open(os.path.join(REAL_TREE, rel), "rb") as a, open(os.path.join(fixture, rel), "rb") as b:
                    want, got = a.read(), b.read()
                if rel != cache_py:
                    self.assertEqual(got, want, rel)
                    continue
                differ = [i + 1 for i, (x, y) in enumerate(zip(want.split(b"\n"), got.split(b"\n"))) if x != y]
                self.assertEqual(differ, rewritten, "only the rewritten lines of cache.py differ")

    def test_bf16_models_plan_with_exit_0(self):
        for m in BF16:
            with self.subTest(model=m):
                p = self.plans[m]
                self.assertEqual(report.plan_exit_code(p), 0, report.plan_lines(p)[:3])
                self.assertIsNone(p["refusal"])
                self.assertIsNotNone(p["config"])
                self.assertFalse(p["emulated"])
                self.assertEqual(p["model"], {"name": m, "dir": f"programming_examples/llms/{m}",
                                              "air_root": self.root})

    def test_quantized_models_are_refused_for_no_ffn_out(self):
        for m in QUANTIZED:
            with self.subTest(model=m):
                p = self.plans[m]
                self.assertEqual(report.plan_exit_code(p), 2)
                reason = p["refusal"]["reason"]
                self.assertIn(f"{m}/verify_adapter.py records no per-layer ffn_out", reason)
                self.assertIn("layer_intermediates are empty dicts", reason)
                self.assertIn("layer_intermediates[0]['ffn_out']", p["refusal"]["needs"])
                self.assertEqual(report.plan_lines(p)[0], f"{reason}; Phase 2 needs {p['refusal']['needs']}")

    def test_smolvla_is_refused_as_not_a_decoder_llm(self):
        p = self.plans["smolvla"]
        self.assertEqual(report.plan_exit_code(p), 2)
        self.assertIn("smolvla is not a decoder LLM", p["refusal"]["reason"])
        self.assertIn("no MODEL_CHOICES", p["refusal"]["reason"])
        self.assertIsNone(p["config"])
        self.assertTrue(report.plan_lines(p)[0].startswith(p["refusal"]["reason"] + "; Phase 2 needs "))

    def test_plans_are_json_and_lines_are_one_per_finding(self):
        for m in self.models:
            with self.subTest(model=m):
                p = self.plans[m]
                self.assertEqual(json.loads(json.dumps(p))["schema"], "npu-block-gate/plan")
                self.assertEqual(p["schema_version"], 1)
                lines = report.plan_lines(p)
                self.assertFalse(any("\n" in line for line in lines))
                for f in p["preflight"]:
                    self.assertEqual(set(f), {"id", "status", "kind", "message", "fix"})
                    self.assertIn(f["status"], ("ok", "warn", "fail"))
                    self.assertIn(f["kind"], ("environment", "tree"))
                    self.assertEqual(sum(1 for line in lines if line.startswith(f"{f['status'].upper()} {f['id']} ")),
                                     sum(1 for g in p["preflight"] if g["id"] == f["id"]))

    # -- config, read statically

    def test_config_values(self):
        q = self.plans["qwen25_0_5b"]
        self.assertEqual(q["config"], {"n_layers": 24, "emb_dim": 896, "n_heads": 14, "n_kv_heads": 2,
                                       "head_dim": 64, "hidden_dim": 4864, "vocab_size": 151936,
                                       "rope_base": 1000000.0, "qkv_bias": True, "qk_norm": False})
        self.assertEqual(q["config_source"],
                         "programming_examples/llms/qwen25_0_5b/qwen25_0_5b_weights.py:28 LlamaConfig")
        c = self.plans["llama32_1b"]["config"]
        self.assertEqual((c["emb_dim"], c["n_heads"], c["n_kv_heads"], c["head_dim"], c["hidden_dim"]),
                         (2048, 32, 8, 64, 8192))
        self.assertFalse(c["qkv_bias"] or c["qk_norm"])
        self.assertTrue(self.plans["qwen3_0_6b"]["config"]["qk_norm"])
        self.assertEqual(self.plans["smollm2_1_7b"]["config"]["n_kv_heads"], 32)
        self.assertEqual(self.plans["qwen3_4b"]["config"]["emb_dim"], 2560)

    def test_quantized_configs_follow_imports_and_builders(self):
        # int4: `from llama32_1b_weights import LlamaConfig` through the sys.path edit
        int4 = self.plans["llama32_1b_int4"]
        self.assertTrue(int4["config_source"].startswith("programming_examples/llms/llama32_1b/llama32_1b_weights.py"))
        # llama31_8b_q4nx: build_config() -> llama31_8b_config() -> LlamaConfig(emb_dim=4096, ...)
        self.assertEqual(self.plans["llama31_8b_q4nx"]["config"]["emb_dim"], 4096)
        # qwen25_3b_q4: LlamaConfig(n_layers=_N_LAYERS), a module constant
        self.assertEqual(self.plans["qwen25_3b_q4"]["config"]["n_layers"], 36)

    # -- what make diagnosis runs

    def test_defaults_from_makefile_and_verify_runner(self):
        d = self.plans["llama32_1b"]["defaults"]
        self.assertEqual(d["prompt"], "What is the capital of France?")
        self.assertEqual(d["prompt_source"], "programming_examples/llms/llama32_1b/Makefile:28 PROMPT")
        self.assertEqual((d["model_choice"], d["model_id"]), ("instruct", "meta-llama/Llama-3.2-1B-Instruct"))
        self.assertEqual(d["model_choice_source"], "programming_examples/llms/llama32_1b/Makefile:29 MODEL")
        self.assertIs(d["cpu_attn"], False)
        self.assertIn("verify_runner.py", d["cpu_attn_source"])
        self.assertIn("'on'", d["cpu_attn_source"])
        self.assertEqual(self.plans["llama32_1b"]["overrides"], [])

    def test_defaults_follow_the_recipe(self):
        q8 = self.plans["qwen3_8b_q4nx"]["defaults"]  # PROMPT ?= (empty) -> $(if ...,DIAG_PROMPT)
        self.assertEqual(q8["prompt"], "What is the capital of France?")
        self.assertTrue(q8["prompt_source"].endswith("DIAG_PROMPT"))
        self.assertTrue(q8["model_choice_source"].endswith("MODEL_CHOICE"))
        self.assertEqual(q8["model_id"], "Qwen/Qwen3-8B")
        q4 = self.plans["qwen25_3b_q4"]["defaults"]  # --prompt "$(GEN_PROMPT)"
        self.assertTrue(q4["prompt"].startswith("The capital city of France is called Paris"))
        self.assertTrue(q4["prompt_source"].endswith("GEN_PROMPT"))
        int4 = self.plans["llama32_1b_int4"]["defaults"]  # no --model: the adapter's DEFAULT_MODEL
        self.assertEqual(int4["prompt"], "The capital of France is")
        self.assertEqual(int4["model_choice"], "instruct")
        self.assertEqual(int4["model_id"], "amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead")
        self.assertIn("DEFAULT_MODEL", int4["model_choice_source"])
        self.assertIn("passes no --model", int4["model_choice_source"])

    def test_overrides_name_each_difference(self):
        p = self.plan("llama32_1b", cpu_attn=True, prompt="Hello there", model_choice="base")
        self.assertEqual(len(p["overrides"]), 3)
        self.assertIn("cpu_attn: True here, make diagnosis runs NPU attention (verify_runner --npu-attn on)",
                      p["overrides"])
        self.assertTrue(any(o.startswith("prompt: 'Hello there' here") for o in p["overrides"]))
        self.assertTrue(any("meta-llama/Llama-3.2-1B" in o and o.startswith("model: base") for o in p["overrides"]))
        self.assertEqual(p["defaults"]["prompt"], "What is the capital of France?")  # make diagnosis's own
        self.assertEqual(p["effective"]["model_id"], "meta-llama/Llama-3.2-1B")
        same = self.plan("llama32_1b", cpu_attn=False, prompt_style="base")
        self.assertEqual(len(same["overrides"]), 1)
        self.assertIn("verify/prompts/base.txt", same["effective"]["prompt_source"])

    # -- imports and preflight

    def test_import_closure(self):
        imp = self.plans["llama32_1b"]["imports"]
        for f in ("programming_examples/llms/llama32_1b/verify_adapter.py",
                  "programming_examples/llms/shared/__init__.py",
                  "programming_examples/llms/shared/infra/cache.py",
                  "programming_examples/llms/shared/builders/rms_gemms_rope_multi.py",  # a function-level import
                  "programming_examples/llms/verify/runners/hf_runner.py",
                  "programming_examples/llms/verify/runners/_records.py"):
            self.assertIn(f, imp["files"])
        self.assertEqual(imp["files"], sorted(imp["files"]))
        for pkg in ("numpy", "ml_dtypes", "torch", "transformers", "air"):
            self.assertIn(pkg, imp["packages"])
        for not_pkg in ("os", "sys", "pathlib", "shared", "llama32_1b_prefill", "runners"):
            self.assertNotIn(not_pkg, imp["packages"])
        smol = self.plans["smollm2_1_7b"]["imports"]["files"]
        self.assertIn("programming_examples/llms/llama32_1b/llama32_1b_prefill.py", smol)  # via a sys.path edit

    def test_python_version_finding(self):
        for m in BF16:
            with self.subTest(model=m):
                p = self.plans[m]
                f = by_id(p, "python-version")
                unparsed = [u for u in p["imports"]["unparsed"] if u["file"].endswith("shared/infra/cache.py")]
                if OLD_PYTHON:
                    self.assertEqual((f["status"], f["kind"]), ("fail", "environment"))
                    self.assertIn("needs Python >= 3.12", f["message"])
                    self.assertIn("programming_examples/llms/shared/infra/cache.py:276", f["message"])
                    self.assertIn("298", f["message"])
                    self.assertEqual({u["needs_python"] for u in unparsed}, {"3.12"})
                    self.assertEqual({u["source_line"] for u in unparsed}, {275, 298})
                else:
                    self.assertEqual(f["status"], "ok")
                self.assertIsNone(by_id(p, "tree-syntax"))

    def test_no_npu_and_no_hf_cache_here(self):
        p = self.plans["llama32_1b"]
        dev = by_id(p, "npu-device")
        self.assertEqual((dev["status"], dev["kind"]), ("fail", "environment"))
        self.assertIn("no NPU", dev["message"])
        hf = by_id(p, "hf-cache")
        self.assertEqual(hf["status"], "fail")
        self.assertIn("huggingface-cli download meta-llama/Llama-3.2-1B-Instruct", hf["fix"])
        self.assertIn("token", hf["fix"])
        self.assertTrue(p["hf_offline"])
        self.assertFalse(self.plan("llama32_1b", online=True)["hf_offline"])
        for pkg in ("numpy", "ml_dtypes", "transformers", "torch", "air", "pyxrt"):
            self.assertIsNotNone(by_id(p, f"package-{pkg}"), pkg)

    def test_npu_device_present(self):
        dev_dir = os.path.join(self.tmp, "devok")
        os.makedirs(dev_dir, exist_ok=True)
        open(os.path.join(dev_dir, "accel0"), "w").close()
        p = self.plan("llama32_1b", device_glob=os.path.join(dev_dir, "accel*"))
        self.assertEqual(by_id(p, "npu-device")["status"], "ok")

    def test_hf_cache_found(self):
        hub = os.path.join(self.tmp, "fakehub")
        snap = os.path.join(hub, "models--meta-llama--Llama-3.2-1B-Instruct", "snapshots", "0123abc")
        os.makedirs(snap, exist_ok=True)
        os.makedirs(os.path.join(hub, "models--meta-llama--Llama-3.2-1B-Instruct", "refs"), exist_ok=True)
        with open(os.path.join(hub, "models--meta-llama--Llama-3.2-1B-Instruct", "refs", "main"), "w") as f:
            f.write("0123abc\n")
        with open(os.path.join(snap, "config.json"), "w") as f:
            f.write("{}")
        env = dict(self.env, HF_HUB_CACHE=hub)
        self.assertEqual(by_id(self.plan("llama32_1b", environ=env), "hf-cache")["status"], "fail")  # no tokenizer
        with open(os.path.join(snap, "tokenizer.json"), "w") as f:
            f.write("{}")
        hf = by_id(self.plan("llama32_1b", environ=env), "hf-cache")
        self.assertEqual(hf["status"], "ok", hf)

    # -- Step 1

    def test_step1_llama32_1b(self):
        s = self.plans["llama32_1b"]["step1"]
        self.assertTrue(s["matches"])
        self.assertTrue(s["inheritance_allowed"])
        self.assertEqual(s["model_sequence"], s["llama_sequence"])
        self.assertEqual(s["llama_sequence"], step1.LLAMA_SEQUENCE)
        self.assertEqual(s["block"]["function"], "llama32_1b_prefill.run_transformer_block")
        self.assertEqual(s["block"]["where"], "own-prefill")
        self.assertIsNone(s["block"]["via"])
        self.assertEqual(s["block"]["compile"], "llama32_1b_prefill.compile_all_kernels")
        # The seed's rule: llama's sequence and llama's ELFs (here, llama's own block) -> inheritance.
        self.assertEqual(s["path"], "inheritance")
        self.assertEqual(s["defined_in"]["model"], "llama32_1b")

    def test_step1_smollm2_inherits_llama(self):
        s = self.plans["smollm2_1_7b"]["step1"]
        self.assertTrue(s["matches"])
        self.assertEqual(s["block"]["function"], "llama32_1b_prefill.run_transformer_block")
        self.assertEqual(s["block"]["file"], "programming_examples/llms/llama32_1b/llama32_1b_prefill.py")
        self.assertEqual(s["block"]["where"], "other-model-prefill")
        self.assertTrue(s["block"]["via"].startswith("programming_examples/llms/smollm2_1_7b/verify_adapter.py:"))
        self.assertEqual(s["block"]["compile"], "llama32_1b_prefill.compile_all_kernels")
        self.assertEqual(s["path"], "inheritance")
        self.assertIsNone(by_id(self.plans["smollm2_1_7b"], "step1-inheritance"))

    def test_step1_llama32_3b_runs_its_own_copy(self):
        s = self.plans["llama32_3b"]["step1"]
        self.assertTrue(s["matches"])
        self.assertEqual(s["block"]["function"], "llama32_3b_prefill.run_transformer_block")
        self.assertEqual(s["block"]["where"], "own-prefill")
        # Its own copy, forked only for head_dim-128 attention: llama's ELFs by llama's builders.
        self.assertEqual(s["path"], "inheritance")
        self.assertEqual(s["defined_in"], {"model": "llama32_3b", "file": s["block"]["file"], "line": s["block"]["line"],
                                           "where": "own-prefill", "via": None})
        self.assertTrue(s["llama_elfs"]["value"], s["llama_elfs"])

    def test_step1_qwen25_breaks_on_qkv_bias(self):
        for m in ("qwen25_0_5b", "qwen25_1_5b", "qwen25_3b"):
            with self.subTest(model=m):
                s = self.plans[m]["step1"]
                self.assertFalse(s["matches"])
                self.assertFalse(s["inheritance_allowed"])
                self.assertIn("a", rule_set(self.plans[m]))
                self.assertTrue(any("QKV bias" in b["detail"] for b in s["breaks"]))
                self.assertIn("QKV bias add", s["model_sequence"])
                self.assertEqual(s["block"]["function"], f"{m}_prefill.run_transformer_block_qwen25")
                self.assertEqual(s["path"], "kernel-first")

    def test_step1_qwen3_breaks_rules_a_and_b(self):
        for m in ("qwen3_0_6b", "qwen3_1_7b", "qwen3_4b"):
            with self.subTest(model=m):
                s = self.plans[m]["step1"]
                self.assertFalse(s["matches"])
                self.assertEqual(rule_set(self.plans[m]), {"a", "b"})
                seq = s["model_sequence"]
                self.assertEqual(seq.index("Q/K Norm"), seq.index("Q/K/V GEMM") + 1)
                self.assertEqual(seq.index("RoPE"), seq.index("Q/K Norm") + 1)
                self.assertEqual(s["block"]["function"], f"{m}_prefill.run_transformer_block_qwen3")

    def test_step1_int4_inherits_through_its_inference_module(self):
        s = self.plans["llama32_1b_int4"]["step1"]
        self.assertEqual(s["block"]["function"], "llama32_1b_prefill.run_transformer_block")
        self.assertEqual(s["block"]["where"], "inference")
        self.assertIn("llama32_1b_int4/llama32_1b_int4_inference.py:", s["block"]["via"])
        self.assertEqual(s["path"], "inheritance")

    # -- Step 2

    def test_step2_qwen25_0_5b_pads_and_adds_bias_on_device(self):
        s = self.plans["qwen25_0_5b"]["step2"]
        self.assertFalse(s["emb_dim_aligned"] or s["hidden_dim_aligned"])
        self.assertEqual({t["id"] for t in s["triggers"]}, {"non_1024_aligned", "qkv_bias"})
        workaround = {t["id"]: t["seed_workaround"] for t in s["triggers"]}
        self.assertIn("phantom Q heads", workaround["non_1024_aligned"])
        self.assertIn("post-RoPE", workaround["qkv_bias"])
        does = {t["id"]: t for t in s["tree_does"]}
        self.assertIn("rms_qkv_bias_rope", does["qkv_bias_on_device"]["detail"])
        self.assertIn("_padded_qkv_dims", does["zero_pad_gemm_n"]["detail"])
        self.assertIn("_padded_n_for_down", does["zero_pad_gemm_n"]["detail"])
        self.assertTrue(does["zero_pad_gemm_n"]["evidence"].startswith(
            "programming_examples/llms/qwen25_0_5b/qwen25_0_5b_prefill.py:"))
        self.assertEqual(s["prerequisite"],
                         "Phase 4/5 prerequisite: perf optimization must preserve the on-device QKV bias add "
                         "before RoPE (rms_qkv_bias_rope) and the zero-padding of GEMM N to 1024 "
                         "(qwen25_0_5b_prefill._padded_qkv_dims, qwen25_0_5b_prefill._padded_n_for_down)")

    def test_step2_other_qwen25_do_not_pad(self):
        for m in ("qwen25_1_5b", "qwen25_3b"):
            with self.subTest(model=m):
                s = self.plans[m]["step2"]
                ids = {t["id"] for t in s["tree_does"]}
                self.assertIn("qkv_bias_on_device", ids)
                self.assertNotIn("zero_pad_gemm_n", ids)
                self.assertIn("no_padding", ids)  # both have a non-1024-aligned dim
                self.assertIn("rms_qkv_bias_rope", s["prerequisite"])
                self.assertNotIn("_padded", s["prerequisite"])

    def test_step2_aligned_llama_has_no_trigger(self):
        s = self.plans["llama32_1b"]["step2"]
        self.assertEqual((s["triggers"], s["tree_does"], s["prerequisite"]), ([], [], None))
        self.assertEqual([t["id"] for t in self.plans["qwen3_4b"]["step2"]["triggers"]], ["non_1024_aligned"])

    # -- coverage

    def test_coverage_against_the_registry(self):
        cov = self.plans["qwen25_0_5b"]["coverage"]
        self.assertEqual(cov["model_names"], ["Qwen2.5-0.5B"])
        self.assertTrue(cov["registry_rows"])
        self.assertTrue(all("qwen2.5-0.5b" in r["used_by"].lower() for r in cov["registry_rows"]))
        wired = {w["kernel"]: w for w in cov["wired"]}
        self.assertEqual(wired["Q GEMM"]["row"]["shape"], "2048×896×896")
        self.assertEqual(wired["Down GEMM"]["row"]["shape"], "2048×4864×896")
        # Every verified block kernel is wired; decode GEMVs and the LM head are listed apart.
        self.assertEqual(cov["unwired"], [])
        self.assertTrue(all(r["reason"] for r in cov["outside_block"]))
        self.assertTrue(any(r["section"] == "GEMV" for r in cov["outside_block"]))
        llama = self.plans["llama32_1b"]["coverage"]
        self.assertEqual(llama["unregistered"], [])
        self.assertIn("FlashAttention", {w["kernel"] for w in llama["wired"]})  # NPU attention by default

    def test_a_verified_kernel_the_block_does_not_launch_is_listed(self):
        reg = os.path.join(self.root, "programming_examples", "kernel_registry", "supported_kernels.md")
        with open(reg, encoding="utf-8") as f:
            text = f.read()
        def restore():
            with open(reg, "w", encoding="utf-8") as f:
                f.write(text)
        self.addCleanup(restore)
        row = "| 2048×896×999 | — | **1000** | — | 9.4e-3 / — | Qwen2.5-0.5B extra proj | ✅ |\n"
        anchor = "| 2048×896×896 |"
        with open(reg, "w", encoding="utf-8") as f:
            f.write(text.replace(anchor, row + anchor, 1))
        cov = self.plan("qwen25_0_5b")["coverage"]
        self.assertEqual([(r["shape"], r["used_by"]) for r in cov["unwired"]], [("2048×896×999", "Qwen2.5-0.5B extra proj")])
        self.assertTrue(any("2048×896×999" in line for line in report.plan_lines(self.plan("qwen25_0_5b"))))

    # -- kernel cache

    def test_kernel_cache_inputs_for_smollm2(self):
        kc = self.plans["smollm2_1_7b"]["kernel_cache"]
        files = kc["inputs"]["files"]
        for f in ("programming_examples/llms/llama32_1b/llama32_1b_prefill.py",
                  "programming_examples/llms/shared/builders/rms_gemms_rope_multi.py",
                  "programming_examples/llms/shared/builders/o_ffn_multi.py",
                  "programming_examples/llms/shared/infra/external_kernels.py",
                  "programming_examples/flash_attention/kernel_fusion_based/attn_npu2_seqfirst.py",
                  "programming_examples/silu_and_mul/silu_and_mul.cc",
                  "programming_examples/rope_halfsplit/rope_halfsplit.cc",
                  "programming_examples/kernel_registry/details/GEMM_bf16_in_bf16_out.json"):
            self.assertIn(f, files)
        self.assertEqual(files, sorted(files))
        self.assertIn("TEMPORAL_CAUSAL_SKIP", kc["inputs"]["env"])
        self.assertIn("PEANO_INSTALL_DIR", kc["inputs"]["env"])
        self.assertEqual(kc["inputs"]["models"], ["llama32_1b"])
        self.assertEqual(kc["compile"], "llama32_1b_prefill.compile_all_kernels")
        self.assertEqual(self.plans["llama32_3b"]["kernel_cache"]["inputs"]["models"], ["llama32_1b"])
        self.assertEqual(self.plans["llama32_1b"]["kernel_cache"]["inputs"]["models"], [])

    def test_kernel_cache_build_dir_follows_peano(self):
        chess = self.plans["smollm2_1_7b"]["kernel_cache"]
        self.assertEqual(chess["build_dir"], "programming_examples/llms/smollm2_1_7b/build_chess")
        self.assertIsNone(chess["inputs"]["env"]["PEANO_INSTALL_DIR"])
        peano = self.plan("smollm2_1_7b", environ=dict(self.env, PEANO_INSTALL_DIR="/opt/peano"))["kernel_cache"]
        self.assertEqual(peano["build_dir"], "programming_examples/llms/smollm2_1_7b/build_peano")
        self.assertEqual(peano["dir"], "programming_examples/llms/smollm2_1_7b/build_peano/prefill_kernel_cache")
        self.assertEqual(peano["inputs"]["env"]["PEANO_INSTALL_DIR"], "/opt/peano")
        # Block 0 compiles where make does (build_chess without Peano); the adapter's own runner
        # opens build_peano/ whatever make's BUILD_DIR is, and the plan says so.
        self.assertEqual(chess["dir"], "programming_examples/llms/smollm2_1_7b/build_chess/prefill_kernel_cache")
        self.assertEqual(chess["adapter_dir"], "programming_examples/llms/smollm2_1_7b/build_peano/prefill_kernel_cache")
        self.assertEqual(by_id(self.plans["smollm2_1_7b"], "kernel-cache-dir")["status"], "warn")
        self.assertIsNone(by_id(self.plan("smollm2_1_7b", environ=dict(self.env, PEANO_INSTALL_DIR="/opt/peano")),
                                "kernel-cache-dir"))

    def test_kernel_cache_dir_of_quantized_models(self):
        self.assertEqual(self.plans["qwen25_3b_q4"]["kernel_cache"]["dir"],
                         "programming_examples/llms/qwen25_3b_q4/_q4_cache_seq2048")
        self.assertEqual(self.plan("qwen25_3b_q4", seq_len=1024)["kernel_cache"]["dir"],
                         "programming_examples/llms/qwen25_3b_q4/_q4_cache_seq1024")
        self.assertTrue(self.plans["llama32_1b_q4nx"]["kernel_cache"]["dir"].endswith("_q4nx_cache_seq2048"))
        # Issue 29.5: five q4nx dirs key their cache on which FlashAttention the run picks (`{_fa}`,
        # `{_att}` in the f-string): said in words with both choices, never printed unexpanded.
        for model, var, choices in (("llama32_3b_q4nx", "_fa", "tfa or hfa"), ("llama31_8b_q4nx", "_fa", "tfa or hfa"),
                                    ("phi4_mini_q4nx", "_fa", "tfa or hfa"), ("qwen3_8b_q4nx", "_att", "cpu or fa"),
                                    ("qwen25_7b_q4nx", "_att", "cpu or fa")):
            kc = self.plans[model]["kernel_cache"]
            self.assertNotIn("{", kc["dir"], model)
            self.assertIn(f"<{var}", kc["dir"], model)
            self.assertIn("chosen at run time", kc["dir"], model)
            if choices:
                self.assertIn(choices, kc["dir"], model)
            self.assertRegex(kc["dir_source"], rf"{var} is set at run time \(programming_examples/llms/{model}/{model}_prefill.py:\d+\)")

    def test_hf_config_alone_agrees_with_the_model_dir_plan(self):
        # Issue 29.6: for each real model, a config.json written from the tree's own config (the
        # plan's resolved LlamaConfig fields, and the per-layer facts of the model's code in HF's
        # keys) gives the same Step 1 path, breaks and Step 2 triggers as plan --model-dir.
        from npu_probe.plan.hfonly import plan_from_config  # noqa: PLC0415

        agree, without_config = [], []
        for model in self.models:
            p = self.plans[model]
            cfg = p.get("config") or {}
            if not cfg.get("emb_dim"):
                without_config.append(model)
                continue
            arch = p["step1"]["architecture"]
            hf = {"model_type": "gemma3_text" if arch["norms"]["value"]["sandwich"] else "qwen3" if cfg.get("qk_norm")
                  else "llama",
                  "hidden_size": cfg["emb_dim"], "intermediate_size": cfg["hidden_dim"],
                  "num_attention_heads": cfg["n_heads"], "num_key_value_heads": cfg["n_kv_heads"],
                  "head_dim": cfg["head_dim"], "num_hidden_layers": cfg.get("n_layers") or 1,
                  "attention_bias": bool(cfg.get("qkv_bias")),
                  "hidden_act": "gelu_pytorch_tanh" if arch["activation"]["value"] == "GeGLU" else "silu"}
            if arch["sliding_window"]["value"]:
                hf.update(sliding_window=arch["sliding_window"]["value"], use_sliding_window=True)
            if arch["rotary_dim"]["value"]:
                hf["partial_rotary_factor"] = arch["rotary_dim"]["value"] / cfg["head_dim"]
            path = os.path.join(self.tmp, f"{model}-config.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(hf, f)
            got = plan_from_config(path)
            self.assertEqual(got["step1"]["path"], p["step1"]["path"], model)
            self.assertEqual(sorted((b["rule"], b["op"]) for b in got["step1"]["breaks"]),
                             sorted((b["rule"], b["op"]) for b in p["step1"]["breaks"]), model)
            self.assertEqual([t["id"] for t in got["step2"]["triggers"]], [t["id"] for t in p["step2"]["triggers"]], model)
            agree.append(model)
        # every model the model-dir plan resolves a config for (smolvla's plan has none to write)
        self.assertEqual(without_config, ["smolvla"])
        self.assertEqual(len(agree), len(self.models) - 1)

    # -- a broken tree

    def test_real_syntax_error_is_a_tree_failure(self):
        broken = os.path.join(self.tmp, "broken")
        llms = os.path.join(broken, "programming_examples", "llms")
        os.makedirs(llms)
        for d in ("verify", "shared", "llama32_1b"):
            shutil.copytree(os.path.join(self.llms, d), os.path.join(llms, d))
        with open(os.path.join(llms, "llama32_1b", "llama32_1b_weights.py"), "a") as f:
            f.write("\ndef broken(:\n    pass\n")
        p = plan_of(os.path.join(llms, "llama32_1b"), environ=self.env, device_glob=self.no_device)
        bad = by_id(p, "tree-syntax")
        self.assertEqual((bad["status"], bad["kind"]), ("fail", "tree"))
        self.assertIn("llama32_1b/llama32_1b_weights.py:", bad["message"])
        self.assertEqual(report.plan_exit_code(p), 2)


class AirMiniPlanTest(unittest.TestCase):
    env = {"HOME": "/nonexistent-home"}

    def plan(self, model, **kw):
        kw.setdefault("environ", self.env)
        kw.setdefault("device_glob", "/nonexistent/accel*")
        return plan_of(os.path.join(AIR_MINI, "programming_examples", "llms", model), **kw)

    def test_tiny_llama(self):
        p = self.plan("tiny_llama")
        self.assertEqual(report.plan_exit_code(p), 0)
        self.assertTrue(p["emulated"])
        self.assertIsNone(p["refusal"])
        failing = [f["id"] for f in p["preflight"] if f["status"] == "fail"]
        self.assertEqual(failing, [])
        self.assertEqual(by_id(p, "npu-device")["message"], "emulated tree: no NPU needed")
        self.assertIsNone(by_id(p, "hf-cache"))
        for pkg in ("air", "aie", "pyxrt", "transformers", "torch"):
            self.assertIsNone(by_id(p, f"package-{pkg}"), pkg)
        self.assertEqual(p["config"]["emb_dim"], 256)
        self.assertIn("tiny_llama_weights.py", p["config_source"])
        self.assertEqual(p["step1"]["block"]["function"], "tiny_llama_prefill.run_transformer_block")
        self.assertTrue(p["step1"]["matches"])
        self.assertEqual(p["kernel_cache"]["dir"],
                         "programming_examples/llms/tiny_llama/build_peano/prefill_kernel_cache")
        self.assertEqual(p["kernel_cache"]["seq_len"], 128)  # the adapter's PREFILL_SEQ_LEN

    def test_tiny_llama_defaults_fall_back(self):
        d = self.plan("tiny_llama")["defaults"]
        with open(os.path.join(AIR_MINI, "programming_examples", "llms", "verify", "prompts", "instruct.txt")) as f:
            first = next(line.strip() for line in f if line.strip() and not line.startswith("#"))
        self.assertEqual(d["prompt"], first)
        self.assertTrue(d["prompt_source"].startswith("verify/prompts/instruct.txt:"))
        self.assertEqual((d["model_choice"], d["model_id"]), ("instruct", "air-mini/tiny-llama-instruct"))
        self.assertIn("DEFAULT_MODEL", d["model_choice_source"])
        self.assertIs(d["cpu_attn"], True)  # compile_all_kernels(cpu_attn=True): no verify_runner.py here
        self.assertIn("compile_all_kernels", d["cpu_attn_source"])

    def test_tiny_models_step1_and_step2(self):
        q3 = self.plan("tiny_qwen3")
        self.assertEqual(rule_set(q3), {"a", "b"})
        q25 = self.plan("tiny_qwen25")
        self.assertIn("qkv_bias_on_device", {t["id"] for t in q25["step2"]["tree_does"]})
        self.assertEqual(report.plan_exit_code(q25), 0)

    def test_bad_layouts_raise_probe_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(ProbeError):
                plan_of(tmp)  # no programming_examples/llms above it
            llms = os.path.join(tmp, "programming_examples", "llms")
            os.makedirs(os.path.join(llms, "m"))
            with self.assertRaises(ProbeError):  # no verify/
                plan_of(os.path.join(llms, "m"))
            os.makedirs(os.path.join(llms, "verify"))
            with self.assertRaises(ProbeError) as cm:  # no verify_adapter.py
                plan_of(os.path.join(llms, "m"))
            self.assertIn("verify_adapter.py", cm.exception.path)

    def test_an_import_that_resolves_nowhere_fails_the_plan_naming_it(self):
        """Issue 28: a deleted or renamed tree module is not a third-party package."""
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, "air")
            shutil.copytree(AIR_MINI, root)
            model = os.path.join(root, "programming_examples", "llms", "tiny_llama")
            with open(os.path.join(model, "tiny_llama_prefill.py"), "a") as f:
                f.write("\n\ndef _later():\n    from shared.infra.renamed_away import thing  # noqa\n"
                        "    import declared_pkg  # noqa\n"
                        "    try:\n        import optional_extra  # noqa\n    except ImportError:\n        pass\n")
            with open(os.path.join(model, "requirements.txt"), "w") as f:
                f.write("# extra\ndeclared-pkg>=1.0\n")
            p = plan_of(model, environ=self.env, device_glob="/nonexistent/accel*")
            fails = [f for f in p["preflight"] if f["id"] == "tree-import"]
            self.assertEqual(len(fails), 1, fails)
            self.assertEqual(fails[0]["status"], "fail")
            self.assertIn("imports shared.infra.renamed_away, which is neither a tree file nor an installed package",
                          fails[0]["message"])
            self.assertIn("tiny_llama_prefill.py:", fails[0]["message"])
            self.assertEqual([u["module"] for u in p["imports"]["unresolved"]], ["shared.infra.renamed_away"])
            self.assertEqual(report.plan_exit_code(p), 2)  # a broken tree, as a syntax error is

    def test_air_root_and_model_name(self):
        p = plan_of("tiny_qwen3", AIR_MINI, environ=self.env, device_glob="/nonexistent/accel*")
        self.assertEqual(p["model"]["name"], "tiny_qwen3")
        self.assertEqual(p["model"]["air_root"], os.path.abspath(AIR_MINI))


class StaticReadingTest(unittest.TestCase):
    def test_version_only_syntax(self):
        src = 'x = 1\nprint(f"{"a"}")\ny = f"{\'\\n\'}"\n'
        parsed = parse.parse_source(src)
        if OLD_PYTHON:
            self.assertEqual([(i.source_line, i.needs) for i in parsed.issues], [(2, (3, 12)), (3, (3, 12))])
            self.assertEqual(parsed.fallback, "blanked")
        else:
            self.assertEqual(parsed.issues, [])
        self.assertIsNotNone(parsed.tree)

    def test_other_syntax_error_falls_back_to_regex(self):
        parsed = parse.parse_source("import os\nfrom a.b import (c,\n    d)\ndef f(:\n    import zz\n")
        self.assertIsNone(parsed.tree)
        self.assertEqual(parsed.fallback, "regex")
        self.assertIsNone(parsed.issues[0].needs)
        refs = imports.imports_of(parsed)
        self.assertEqual([(r.module, r.names, r.top_level) for r in refs],
                         [("os", (), True), ("a.b", ("c", "d"), True), ("zz", (), False)])

    def test_make_expand_if(self):
        vars_ = {"PROMPT": ("", 1), "DIAG_PROMPT": ("Hi there", 2)}
        value, used = makefile.make_expand("$(if $(PROMPT),$(PROMPT),$(DIAG_PROMPT))", vars_, {})
        self.assertEqual(value, "Hi there")
        self.assertIn("DIAG_PROMPT", used)

    def test_path_eval_and_sys_path(self):
        src = ("import sys, os\nfrom pathlib import Path\n_HERE = Path(__file__).resolve().parent\n"
               "_LLMS = _HERE.parent\nfor _p in (str(_LLMS), str(_LLMS / 'other')):\n    sys.path.insert(0, _p)\n"
               "sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..'))\n")
        parsed = parse.parse_source(src, "/a/b/llms/m/x.py")
        self.assertEqual(paths.sys_path_additions(parsed), ["/a/b/llms", "/a/b/llms/other", "/a/b"])

    def test_env_reads(self):
        src = ("import os as _os\nv = _os.environ.get('A')\nw = os.getenv('B')\n"
               "for k, var in (('x', 'C'), ('y', 'D')):\n    os.environ.get(var, '')\n"
               "if 'E' in os.environ: pass\n# os.environ.get('NOT_CODE')\n")
        names = sorted({n for n, _ in paths.env_reads(parse.parse_source(src))})
        self.assertEqual(names, ["A", "B", "C", "D", "E"])


if __name__ == "__main__":
    unittest.main()


NO_REGISTRY = missing_real_tree(os.path.join("programming_examples", "kernel_registry", "supported_kernels.md"))


class HfConfigPlanTest(unittest.TestCase):
    """`plan --hf-config PATH|ID` (issue 29.6): no model dir, only a config.json."""

    QWEN25_05B = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
                  "num_key_value_heads": 2, "num_hidden_layers": 24, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
                  "tie_word_embeddings": True, "hidden_act": "silu", "vocab_size": 151936}

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="plan-hf-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, cfg, name="config.json"):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        return path

    def test_a_model_id_in_the_local_hf_cache(self):
        from test.python.support import run_probe  # noqa: PLC0415

        repo = os.path.join(self.tmp, "hub", "models--Qwen--Qwen2.5-0.5B")
        os.makedirs(os.path.join(repo, "refs"))
        os.makedirs(os.path.join(repo, "snapshots", "abc"))
        with open(os.path.join(repo, "refs", "main"), "w", encoding="utf-8") as f:
            f.write("abc")
        self.write(self.QWEN25_05B, os.path.join(repo, "snapshots", "abc", "config.json"))
        r = run_probe("plan", "--hf-config", "Qwen/Qwen2.5-0.5B", "--json",
                      env={"HF_HUB_CACHE": os.path.join(self.tmp, "hub"), "HOME": self.tmp})
        self.assertEqual(r.returncode, 0, r.stderr)
        plan = json.loads(r.stdout)
        self.assertEqual(plan["step1"]["path"], "kernel-first")
        self.assertEqual([t["id"] for t in plan["step2"]["triggers"]], ["non_1024_aligned", "qkv_bias"])
        self.assertEqual(sorted(f["id"] for f in plan["step2"]["config_facts"]), ["gqa", "tied_embeddings"])
        # the text form says the same, without a model dir
        t = run_probe("plan", "--hf-config", "Qwen/Qwen2.5-0.5B", env={"HF_HUB_CACHE": os.path.join(self.tmp, "hub"),
                                                                        "HOME": self.tmp})
        self.assertEqual(t.returncode, 0, t.stderr)
        self.assertIn("Step 1: kernel-first", t.stdout)
        self.assertIn("Step 2 triggers: non_1024_aligned, qkv_bias", t.stdout)

    def test_the_gqa_aware_padding_plan_is_the_seeds(self):
        from npu_probe.plan.hfonly import plan_from_config  # noqa: PLC0415

        pad = plan_from_config(self.write(self.QWEN25_05B))["step2"]["padding_plan"]
        # the seed's Step 2: n_heads to the fewest heads with a 1024-aligned q_dim that n_kv_heads divides
        # (14 -> 16 at head_dim 64), real Q head j of KV group k to slot k * g' + j (g 7 -> g' 8)
        self.assertEqual(pad["n_heads"], [14, 16])
        self.assertEqual(pad["q_dim"], [896, 1024])
        self.assertEqual(pad["emb_dim"], [896, 1024])
        self.assertEqual(pad["hidden_dim"], [4864, 5120])
        want = [k * 8 + j for k in range(2) for j in range(7)]
        self.assertEqual([s for g in pad["groups"] for s in g["slots"]], want)
        self.assertEqual([g["phantom_slots"] for g in pad["groups"]], [[7], [15]])
        self.assertEqual(pad["naive_end_misrouted"], 1)  # end-padding sends real head 7 to KV head 0
        # llama32_1b's sizes need no padding
        llama = dict(self.QWEN25_05B, model_type="llama", hidden_size=2048, intermediate_size=8192,
                     num_attention_heads=32, num_key_value_heads=8)
        self.assertIsNone(plan_from_config(self.write(llama))["step2"]["padding_plan"])

    @unittest.skipIf(NO_REGISTRY, NO_REGISTRY)
    def test_registry_rows_it_lacks_with_air_root(self):
        from npu_probe.plan.hfonly import plan_from_config  # noqa: PLC0415

        odd = dict(self.QWEN25_05B, hidden_size=1152, intermediate_size=6912, num_attention_heads=18)
        miss = plan_from_config(self.write(odd), find_mlir_air())["coverage"]["missing"]
        self.assertIn("Q GEMM", [m["kernel"] for m in miss])  # 2048x1152x1152 is in no registry table
        known = plan_from_config(self.write(self.QWEN25_05B), find_mlir_air())["coverage"]["missing"]
        self.assertNotIn("Q GEMM", [m["kernel"] for m in known])

    def test_bad_input_is_one_line_and_exit_2(self):
        from test.python.support import run_probe  # noqa: PLC0415

        for args, say in ((["--hf-config", os.path.join(self.tmp, "none.json")], "none.json: no such file"),
                          (["--hf-config", self.write({"hidden_size": 8})], "the config states no hidden_dim"),
                          ([], "give --model-dir DIR or --hf-config PATH|ID")):
            r = run_probe("plan", *args, env={"HF_HUB_CACHE": os.path.join(self.tmp, "hub"), "HOME": self.tmp})
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(say, r.stderr)
            self.assertNotIn("Traceback", r.stderr)
