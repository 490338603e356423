"""The plan's config sources and Step 1 from the model's own code (npu_probe.plan.sources,
.architecture, .elfs, .step1), on a temp copy of the real mlir-air tree and on air-mini.

- the config comes from the weights module's config, the local HF config.json, and the adapter's
  class, in that order (the checkpoint's first with --emulate), and the plan names the source it
  used and every field the sources disagree on;
- the kernel sequence comes from the model's code: gemma3_4b_q4nx's four norms, GeGLU, Q/K norm
  and sliding window are each a named break; qwen25_7b_q4nx's QKV bias and qwen3_8b_q4nx's Q/K
  norm come from their weights modules' configs, which their adapter classes lack;
- the path label follows the seed's rule (llama's sequence and llama's ELFs: inheritance),
  whatever file holds the block function; where it is defined is a field of its own.

Standard library only (nothing of the tree is imported): python3 -m unittest test.python.test_probe_plan_sources
"""

import json
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts", "probe"))

from npu_probe.plan import build, report  # noqa: E402
from npu_probe.plan.request import Host, PlanRequest  # noqa: E402
from test.python.support import find_mlir_air, missing_real_tree  # noqa: E402

REAL_TREE = find_mlir_air()
AIR_MINI = os.path.join(REPO, "examples", "air-mini")
REV = "0123456789abcdef0123456789abcdef01234567"


def write_snapshot(hub, hf_id, config):
    """A hub-cache snapshot holding only config.json (all the plan reads)."""
    repo = os.path.join(hub, "models--" + hf_id.replace("/", "--"))
    snap = os.path.join(repo, "snapshots", REV)
    os.makedirs(snap, exist_ok=True)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    with open(os.path.join(repo, "refs", "main"), "w", encoding="utf-8") as f:
        f.write(REV)
    with open(os.path.join(snap, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)


QWEN2_TINY = {"model_type": "qwen2", "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
              "intermediate_size": 512, "num_hidden_layers": 3, "vocab_size": 1024, "rope_theta": 1000000.0,
              "rms_norm_eps": 1e-06, "hidden_act": "silu", "sliding_window": 32768, "use_sliding_window": False}


@unittest.skipIf(missing_real_tree(os.path.join("programming_examples", "llms")),
                 missing_real_tree(os.path.join("programming_examples", "llms")))
class RealTreeSources(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="plan-sources-")
        cls.root = os.path.join(cls.tmp, "mlir-air")
        shutil.copytree(REAL_TREE, cls.root, ignore=shutil.ignore_patterns("__pycache__"))
        cls.llms = os.path.join(cls.root, "programming_examples", "llms")
        cls.hub = os.path.join(cls.tmp, "hub")
        cls.env = {"HOME": cls.tmp, "HF_HUB_CACHE": cls.hub}
        cls.plans = {m: cls.plan(m) for m in ("gemma3_4b_q4nx", "qwen25_7b_q4nx", "qwen3_8b_q4nx", "llama32_3b",
                                               "smollm2_1_7b", "qwen25_0_5b", "phi4_mini_q4nx")}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def plan(cls, model, **request):
        return build.make_plan(PlanRequest(os.path.join(cls.llms, model), None, **request),
                               Host(cls.env, os.path.join(cls.tmp, "no-accel*")))

    def finding(self, plan, fid):
        return next((f for f in plan["preflight"] if f["id"] == fid), None)

    # -- Step 1 from the model's own code

    def test_gemma3_is_kernel_first_with_each_break_named(self):
        p = self.plans["gemma3_4b_q4nx"]
        s = p["step1"]
        self.assertIsNotNone(p["refusal"], "the q4nx dirs stay refused for Phase 2 runs")
        self.assertEqual(s["path"], "kernel-first")
        self.assertFalse(s["matches"])
        arch = s["architecture"]
        self.assertEqual(arch["norms"]["value"]["per_layer"], 4)
        self.assertIn("pre_feedforward_layernorm", arch["norms"]["evidence"])
        self.assertEqual(arch["activation"]["value"], "GeGLU")
        self.assertTrue(arch["qk_norm"]["value"])
        self.assertEqual(arch["sliding_window"]["value"], 1024)
        self.assertIn("gemma3_4b_q4nx_weights.py", arch["sliding_window"]["evidence"])
        ops = {(b["rule"], b["op"]) for b in s["breaks"]}
        for want in [("a", "Q/K Norm"), ("b", "Q/K Norm"), ("a", "GeGLU"), ("a", "sliding-window attention"),
                     ("b", "RMSNorm (post-attention)"), ("b", "RMSNorm (post-FFN)"), ("c", "RMSNorm (post-norm)")]:
            self.assertIn(want, ops)
        seq = s["model_sequence"]
        self.assertEqual(seq.index("RMSNorm (post-attention)"), seq.index("O GEMM") + 1)
        self.assertIn("GeGLU", seq)
        self.assertNotIn("SwiGLU", seq)
        lines = report.plan_lines(p)
        self.assertTrue(any(line.startswith("step1 break (c) RMSNorm (post-norm):") for line in lines))
        self.assertTrue(any(line.startswith("step1: path kernel-first (the kernel sequence differs") for line in lines))

    def test_qwen25_7b_takes_qkv_bias_from_its_weights_module(self):
        p = self.plans["qwen25_7b_q4nx"]
        self.assertTrue(p["config"]["qkv_bias"])
        self.assertEqual(p["config_sources"]["used"], "weights")
        self.assertIn("qwen25_7b_q4nx_weights.py:", p["config_source"])
        self.assertIn("qwen25_7b_config()", p["config_source"])
        d = {x["field"]: x["values"] for x in p["config_sources"]["disagree"]}
        self.assertEqual(d["qkv_bias"], {"weights": True, "adapter": False})
        f = self.finding(p, "config-sources")
        self.assertEqual(f["status"], "warn")
        self.assertIn("qkv_bias", f["message"])
        s = p["step1"]
        self.assertIn("QKV bias add", s["model_sequence"])
        self.assertEqual(s["path"], "kernel-first")
        self.assertIn("qkv_bias", {t["id"] for t in p["step2"]["triggers"]})
        # it runs qwen25_3b's block, whose sequence is now the same: no warning about that any more
        self.assertIsNone(self.finding(p, "step1-inheritance"))
        self.assertEqual(s["defined_in"]["model"], "qwen25_3b")

    def test_qwen3_8b_takes_qk_norm_from_its_weights_module(self):
        p = self.plans["qwen3_8b_q4nx"]
        self.assertTrue(p["config"]["qk_norm"])
        self.assertEqual({x["field"]: x["values"] for x in p["config_sources"]["disagree"]}["qk_norm"],
                         {"weights": True, "adapter": False})
        seq = p["step1"]["model_sequence"]
        self.assertEqual(seq.index("Q/K Norm"), seq.index("Q/K/V GEMM") + 1)
        self.assertEqual({b["rule"] for b in p["step1"]["breaks"]}, {"a", "b"})
        self.assertIsNone(self.finding(p, "step1-inheritance"))

    def test_partial_rotary_is_a_break(self):
        s = self.plans["phi4_mini_q4nx"]["step1"]
        self.assertEqual(s["architecture"]["rotary_dim"]["value"], 96)
        self.assertIn(("a", "partial RoPE"), {(b["rule"], b["op"]) for b in s["breaks"]})
        self.assertEqual(s["path"], "kernel-first")

    # -- the path label by the rule, and where the function lives

    def test_llama32_3b_inherits_although_its_prefill_holds_the_block(self):
        s = self.plans["llama32_3b"]["step1"]
        self.assertEqual(s["path"], "inheritance")
        self.assertEqual(s["defined_in"]["model"], "llama32_3b")
        self.assertEqual(s["defined_in"]["where"], "own-prefill")
        self.assertIn("llama's builders", s["llama_elfs"]["why"])
        self.assertIn("matches llama's", s["path_why"])

    def test_smollm2_inherits_llama32_1b_block(self):
        s = self.plans["smollm2_1_7b"]["step1"]
        self.assertEqual(s["path"], "inheritance")
        self.assertEqual(s["defined_in"]["model"], "llama32_1b")
        self.assertEqual(s["defined_in"]["where"], "other-model-prefill")

    def test_qwen25_is_kernel_first_by_its_sequence(self):
        s = self.plans["qwen25_0_5b"]["step1"]
        self.assertEqual(s["path"], "kernel-first")
        self.assertFalse(s["llama_elfs"]["value"])
        self.assertIn("QKV bias add", s["path_why"])

    # -- the order of the sources

    def test_hf_config_fills_what_the_weights_module_does_not_say(self):
        write_snapshot(self.hub, "npu-block-gate-tests/tiny-qwen2", QWEN2_TINY)
        p = self.plan("qwen25_0_5b", model_choice="npu-block-gate-tests/tiny-qwen2")
        rec = p["config_sources"]
        self.assertEqual(rec["order"], ["weights", "hf-config", "adapter"])
        self.assertEqual(rec["used"], "weights")
        self.assertEqual(p["config"]["emb_dim"], 896)
        self.assertEqual(p["config"]["rms_norm_eps"], 1e-06)
        self.assertEqual(rec["filled"], {"rms_norm_eps": "hf-config"})
        d = {x["field"]: x["values"] for x in rec["disagree"]}
        self.assertEqual(d["emb_dim"], {"weights": 896, "hf-config": 256, "adapter": 896})
        self.assertNotIn("qkv_bias", d)  # config.json's model_type qwen2 says bias too
        self.assertEqual(self.finding(p, "config-sources")["status"], "warn")
        # --emulate runs at the checkpoint's dimensions: config.json first, and that is no warning
        e = self.plan("qwen25_0_5b", model_choice="npu-block-gate-tests/tiny-qwen2", emulate_npu=True)
        self.assertEqual(e["config_sources"]["used"], "hf-config")
        self.assertEqual(e["config"]["emb_dim"], 256)
        self.assertEqual(self.finding(e, "config-sources")["status"], "ok")

    def test_hf_config_when_the_weights_module_has_none(self):
        cfg = dict(QWEN2_TINY, model_type="gemma3_text", hidden_activation="gelu_pytorch_tanh", sliding_window=512,
                   layer_types=["sliding_attention"] * 5 + ["full_attention"], head_dim=64)
        cfg.pop("use_sliding_window")
        write_snapshot(self.hub, "npu-block-gate-tests/tiny-gemma3", {"model_type": "gemma3", "text_config": cfg})
        p = self.plan("llama32_1b_q4nx", model_choice="npu-block-gate-tests/tiny-gemma3")
        self.assertEqual(p["config_sources"]["order"], ["weights", "hf-config", "adapter"])
        self.assertFalse(p["config_sources"]["sources"][0]["complete"])
        self.assertEqual(p["config_sources"]["used"], "hf-config")
        arch = p["step1"]["architecture"]
        self.assertEqual(arch["activation"]["value"], "GeGLU")
        self.assertIn("hidden_activation=gelu_pytorch_tanh", arch["activation"]["evidence"])
        self.assertEqual(arch["sliding_window"]["value"], 512)
        self.assertTrue(arch["norms"]["value"]["sandwich"])
        self.assertTrue(arch["qk_norm"]["value"])


class AirMiniSources(unittest.TestCase):
    def test_no_llama_exemplar_keeps_kernel_first(self):
        p = build.make_plan(PlanRequest(os.path.join(AIR_MINI, "programming_examples", "llms", "tiny_llama"), None),
                            Host({"HOME": "/nonexistent"}, "/nonexistent/accel*"))
        s = p["step1"]
        self.assertTrue(s["matches"])
        self.assertIsNone(s["llama_elfs"]["value"])
        self.assertIn("no llama32_1b exemplar", s["llama_elfs"]["why"])
        self.assertEqual(s["path"], "kernel-first")
        self.assertEqual(s["defined_in"]["model"], "tiny_llama")


if __name__ == "__main__":
    unittest.main()
