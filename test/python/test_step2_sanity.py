"""Step 2's padded-vs-original sanity check (npu_probe.reference.step2_sanity, `probe plan --sanity`).

The arithmetic (padded sizes, where each Q head goes, the tree helper run alone) needs nothing;
the forwards need torch and transformers (skipped otherwise); the CLI test also needs the real
tree (its qwen25_0_5b dir, whose padding helper the check runs) and a tiny qwen2 checkpoint
built in a temp HF hub cache.

run: .venv/bin/python -m unittest test.python.test_step2_sanity -v
"""

import json
import os
import shutil
import sys
import tempfile
import unittest

from test.python.support import (PROBE, find_mlir_air, missing_modules, missing_real_tree, needs,
                                 python_without_transformers, run_probe)

sys.path.insert(0, PROBE)

from npu_probe.reference import step2_sanity as sanity  # noqa: E402

NO_TORCH = missing_modules(("numpy", "torch", "transformers"))
NO_TREE = missing_real_tree(os.path.join("programming_examples", "llms", "qwen25_0_5b"))
QWEN25 = {"emb_dim": 896, "hidden_dim": 4864, "n_heads": 14, "n_kv_heads": 2, "head_dim": 64, "group_size": 7}


class ArithmeticTests(unittest.TestCase):
    def test_qwen25_0_5b_padded_sizes(self):
        pad = sanity.padded_dims(QWEN25)
        self.assertEqual((pad["emb_dim"], pad["hidden_dim"], pad["n_heads"], pad["group_size"]), (1024, 5120, 16, 8))
        self.assertEqual(pad["phantom_heads_per_group"], 1)

    def test_heads_stay_in_their_group_only_when_reindexed(self):
        pad = sanity.padded_dims(QWEN25)
        slots = sanity.head_slots(QWEN25, pad, reindexed=True)
        self.assertEqual(slots, [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14])  # slot 7 and 15: phantoms
        self.assertEqual([s // pad["group_size"] for s in slots], [i // 7 for i in range(14)])
        # Naive end-padding: head 7 (group 1's first) lands in group 0.
        self.assertEqual(sanity.misrouted_heads(QWEN25, pad), 1)

    def test_heads_rounded_to_a_multiple_of_kv_heads(self):
        dims = {"emb_dim": 96, "hidden_dim": 160, "n_heads": 6, "n_kv_heads": 4, "head_dim": 48, "group_size": 1}
        pad = sanity.padded_dims(dims)
        self.assertEqual((pad["n_heads"] * 48) % 1024, 0)
        self.assertEqual(pad["n_heads"] % 4, 0)

    @unittest.skipIf(NO_TREE, NO_TREE)
    def test_tree_helper_runs_alone(self):
        path = os.path.join(find_mlir_air(), "programming_examples", "llms", "qwen25_0_5b", "qwen25_0_5b_prefill.py")
        widths = sanity.tree_helper_widths(path, ["qwen25_0_5b_prefill._padded_qkv_dims",
                                                  "qwen25_0_5b_prefill._padded_n_for_down"], QWEN25)
        self.assertEqual(widths, {"self_attn.q_proj": 1024, "self_attn.k_proj": 1024, "self_attn.v_proj": 1024,
                                  "self_attn.o_proj": 1024, "mlp.down_proj": 1024})

    def test_tree_helper_that_needs_more_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m_prefill.py")
            with open(path, "w") as f:
                f.write("import os\ndef _pad(emb_dim):\n    return os.cpu_count() * 1024\n"
                        "def _pad2(n_tiles):\n    return 1024\n")
            with self.assertRaisesRegex(ValueError, r"does not run on its own here \(not plain arithmetic: a call at line 3\)"):
                sanity.tree_helper_widths(path, ["m_prefill._pad"], QWEN25)
            with self.assertRaisesRegex(ValueError, "cannot tell which GEMM n_tiles sizes"):
                sanity.tree_helper_widths(path, ["m_prefill._pad2"], QWEN25)
            with open(path, "w") as f:
                f.write("def _pad(emb_dim):\n    return EMB_PAD\n")
            with self.assertRaisesRegex(ValueError, r"does not run on its own here \(NameError"):
                sanity.tree_helper_widths(path, ["m_prefill._pad"], QWEN25)

    def test_tree_helper_that_escapes_its_builtins_is_never_run(self):
        # `plan --sanity` runs outside the probe's sandbox: restricted builtins are no sandbox (an
        # attribute chain from a literal reaches os.system), so a helper that is not plain
        # arithmetic is refused before it runs. Each of these would create the marker if run.
        with tempfile.TemporaryDirectory() as tmp:
            marker = os.path.join(tmp, "ran")
            path = os.path.join(tmp, "m_prefill.py")
            reach = ("[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
                     f".__init__.__globals__['system']('touch {marker}')")
            bodies = {
                "attribute chain": f"    {reach}\n    return 1024\n",
                "dunder name": f"    x = __builtins__\n    return 1024\n",
                "default value": None,
            }
            for what, body in bodies.items():
                with self.subTest(what):
                    src = (f"def _pad(emb_dim=({reach})):\n    return 1024\n" if body is None
                           else f"def _pad(emb_dim):\n{body}")
                    with open(path, "w") as f:
                        f.write(src)
                    with self.assertRaisesRegex(ValueError, "not plain arithmetic"):
                        sanity.tree_helper_widths(path, ["m_prefill._pad"], QWEN25)
                    self.assertFalse(os.path.exists(marker), f"{what}: the helper ran")
            # The same escape through exec with the helper's builtins alone does run: the check above is what stops it.
            ns = {"__builtins__": dict(sanity._HELPER_BUILTINS)}
            exec(compile(f"def _pad(emb_dim):\n    {reach}\n    return 1024\n", path, "exec"), ns)  # noqa: S102
            ns["_pad"](896)
            self.assertTrue(os.path.exists(marker), "the escape does not work here: this test proves nothing")

    def test_tree_helper_that_never_ends_or_eats_memory_is_stopped(self):
        # Issue 25: plain arithmetic can run without end (9**9**9**2) or fill the memory, and
        # `plan --sanity` runs outside the sandbox: the helper runs in a child Python bounded in CPU
        # time, memory and wall time, and each ends as one line saying what stopped it.
        from npu_probe.reference import helper_run  # noqa: PLC0415

        cases = {
            "9**9**9**2": r"does not run on its own here \(stopped at its CPU time limit of \d+ s, signal (24|9)\)$",
            "len((0,) * 10**9)": r"does not run on its own here \(MemoryError: over its memory limit of \d+ MiB\)$",
            "10**9": r"returned \(1000000000,\), not one padded width per size",
        }
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m_prefill.py")
            for body, want in cases.items():
                with self.subTest(body):
                    with open(path, "w") as f:
                        f.write(f"def _pad(emb_dim):\n    return {body}\n")
                    with self.assertRaisesRegex(ValueError, want) as ctx:
                        sanity.tree_helper_widths(path, ["m_prefill._pad"], QWEN25)
                    self.assertNotIn("\n", str(ctx.exception))
            # The wall-clock bound holds too (here shorter than the CPU one).
            with open(path, "w") as f:
                f.write("def _pad(emb_dim):\n    return 9**9**9**2\n")
            saved = helper_run.HELPER_WALL_SECONDS
            helper_run.HELPER_WALL_SECONDS = 0.5
            try:
                with self.assertRaisesRegex(ValueError, r"\(stopped after 0.5 s, its time limit\)$"):
                    sanity.tree_helper_widths(path, ["m_prefill._pad"], QWEN25)
            finally:
                helper_run.HELPER_WALL_SECONDS = saved
            # A plain helper still gives its widths from the child.
            with open(path, "w") as f:
                f.write("def _pad(emb_dim):\n    return max(emb_dim, 1024)\n")
            self.assertEqual(sanity.tree_helper_widths(path, ["m_prefill._pad"], QWEN25),
                             {"self_attn.o_proj": 1024, "mlp.down_proj": 1024})


def tiny_qwen2(hidden=96, inter=160, heads=6, kv=2, seed=0):
    """A random bf16 Qwen2 with non-1024-aligned sizes; norms and biases perturbed so that
    skipping them (or the padded norms' scale) would show."""
    import torch  # noqa: PLC0415
    from transformers import Qwen2Config, Qwen2ForCausalLM  # noqa: PLC0415

    torch.manual_seed(seed)
    cfg = Qwen2Config(hidden_size=hidden, intermediate_size=inter, num_attention_heads=heads, num_key_value_heads=kv,
                      num_hidden_layers=2, vocab_size=300, tie_word_embeddings=True, rms_norm_eps=1e-6)
    m = Qwen2ForCausalLM(cfg).to(torch.bfloat16).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name or "bias" in name:
                p.add_(torch.randn_like(p) * 0.2)
    return m


@unittest.skipIf(NO_TORCH, NO_TORCH)
class ForwardTests(unittest.TestCase):
    TOKENS = [5, 17, 42, 99, 3, 250, 7, 64, 128, 11, 12, 13]

    def test_reindexed_passes_and_naive_end_padding_does_not(self):
        s = sanity.run_sanity(tiny_qwen2(), self.TOKENS)
        rows = {r["id"]: r for r in s["rows"]}
        self.assertEqual((s["original"]["group_size"], s["padded"]["group_size"]), (3, 32))
        self.assertGreaterEqual(rows["reindexed"]["ffn_out_cosine"], sanity.GATE)
        self.assertGreaterEqual(rows["reindexed"]["logits_cosine"], sanity.GATE)
        self.assertTrue(rows["reindexed"]["pass"])
        self.assertLess(rows["naive_end"]["ffn_out_cosine"], 0.999)
        self.assertLess(rows["naive_end"]["logits_cosine"], 0.999)
        self.assertFalse(rows["naive_end"]["pass"])
        self.assertIn("no padding helper", rows["tree_helper"]["skipped"])
        self.assertTrue(s["ok"])
        self.assertEqual(s["misrouted_heads"], 3)  # heads 3, 4, 5 of group 1 read group 0's K/V
        text = "\n".join(sanity.sanity_lines(s))
        self.assertIn("naive end-padding (phantom Q heads at the end)", text)
        self.assertIn("step2 sanity: PASS", text)

    def test_gate_sees_a_padded_rmsnorm_without_its_scale(self):
        # The padded RMSNorm must see the same mean over E' zero-padded features: drop the
        # sqrt(E/E') weight scale and the reindexed model no longer matches.
        real = sanity.math.sqrt
        sanity.math.sqrt = lambda x: 1.0
        try:
            s = sanity.run_sanity(tiny_qwen2(), self.TOKENS)
        finally:
            sanity.math.sqrt = real
        self.assertFalse(s["rows"][0]["pass"])
        self.assertFalse(s["ok"])

    def test_tree_helper_row_pads_gemm_n(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m_prefill.py")
            with open(path, "w") as f:
                f.write("def _padded_qkv_dims(q_dim, kv_dim):\n    return 1024, 1024\n"
                        "def _pad_hidden(hidden_dim):\n    return ((hidden_dim + 1023) // 1024) * 1024\n")
            s = sanity.run_sanity(tiny_qwen2(), self.TOKENS, helper=(path, ["m_prefill._padded_qkv_dims",
                                                                            "m_prefill._pad_hidden"]))
        row = [r for r in s["rows"] if r["id"] == "tree_helper"][0]
        self.assertEqual(row["pads"], {"self_attn.q_proj": 1024, "self_attn.k_proj": 1024, "self_attn.v_proj": 1024,
                                       "mlp.gate_proj": 1024, "mlp.up_proj": 1024})
        self.assertGreaterEqual(row["ffn_out_cosine"], sanity.GATE)
        self.assertTrue(row["pass"])

    def test_aligned_model_is_skipped(self):
        s = sanity.run_sanity(tiny_qwen2(hidden=1024, inter=2048, heads=16, kv=4), self.TOKENS[:4])
        self.assertIn("1024-aligned", s["skipped"])


@unittest.skipIf(NO_TORCH or NO_TREE, NO_TORCH or NO_TREE)
class PlanSanityCliTests(unittest.TestCase):
    """`probe plan --sanity` on a copy of the real tree's programming_examples, with a tiny qwen2
    checkpoint as the model (--hf-model) in a temp HF hub cache."""

    @classmethod
    def setUpClass(cls):
        from test.python.fakes import tiny_hf  # noqa: PLC0415

        cls.tmp = tempfile.mkdtemp(prefix="step2-sanity-")
        cls.root = os.path.join(cls.tmp, "mlir-air")
        shutil.copytree(os.path.join(find_mlir_air(), "programming_examples"),
                        os.path.join(cls.root, "programming_examples"))
        cls.hub = os.path.join(cls.tmp, "hub")
        ck = tiny_hf.build("qwen2", cls.hub)
        cls.env = dict(tiny_hf.offline_env(cls.hub), HF_HOME=os.path.join(cls.tmp, "hf_home"))
        cls.args = ("plan", "--model-dir", os.path.join(cls.root, "programming_examples", "llms", "qwen25_0_5b"),
                    "--hf-model", ck.hf_id, "--sanity")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_json_has_the_three_rows(self):
        r = run_probe(*self.args, "--json", env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = json.loads(r.stdout)["step2_sanity"]
        rows = {x["id"]: x for x in s["rows"]}
        self.assertEqual(list(rows), ["reindexed", "tree_helper", "naive_end"])
        self.assertTrue(rows["reindexed"]["pass"])
        self.assertTrue(rows["tree_helper"]["pass"], rows["tree_helper"])
        self.assertIn("qwen25_0_5b_prefill._padded_qkv_dims", rows["tree_helper"]["label"])
        self.assertLess(rows["naive_end"]["logits_cosine"], 0.999)
        self.assertTrue(s["ok"])

    def test_text_names_each_row(self):
        r = run_probe(*self.args, env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"GQA-aware reindexed .*: ffn_out cosine 1\.0000000, logits cosine 1\.0000000  PASS")
        self.assertRegex(r.stdout, r"naive end-padding .*: ffn_out cosine 0\.\d+, logits cosine -?0\.\d+  FAIL")
        self.assertIn("step2 sanity: PASS", r.stdout)

    def test_without_transformers_is_one_line_exit_3(self):
        py = python_without_transformers()
        if py is None:
            self.skipTest(needs("python-without-transformers", "no Python with numpy but without transformers here"))
        r = run_probe(*self.args, env=self.env, python=py)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertRegex(r.stderr, r"^probe: error: plan --sanity: needs torch and transformers")
        self.assertNotIn("Traceback", r.stderr)


if __name__ == "__main__":
    unittest.main()
