"""The real tree's HF reference (verify/runners/hf_runner.py) on tiny random checkpoints, offline.

For llama (Llama-3.2-1B-Instruct-like), qwen2 (Qwen2.5-0.5B-Instruct-like) and qwen3
(Qwen3-0.6B-like) checkpoints built by fakes/tiny_hf.py in a temp HF hub cache, a copy of
the real tree's verify/ runs its own `HfRunner(hf_id, config, max_seq=2048, lite_mode=False)`
(which calls from_pretrained itself) on `AutoTokenizer.from_pretrained(hf_id).encode(prompt)`,
as verify_runner does. Layer 0 ffn_out must equal, bit for bit, a direct transformers forward
of the same checkpoint (`hidden_states[1][0]`), and so must the probe's own
probe_reference.run_reference.

Everything that loads the checkpoints runs in ONE worker subprocess (this file with
--worker) whose environment has HF_HUB_OFFLINE=1 and HF_HUB_CACHE=<temp hub> from its start:
huggingface_hub reads both once, when it is imported, so setting them later in a process
that already imported transformers (this one: it builds the checkpoints) would not take.
This process's environment is never changed. The worker's HTTP(S)_PROXY point at a closed
127.0.0.1 port and an audit hook records every socket connect / getaddrinfo, so "no network
attempt" is checked, not assumed.

Needs torch and transformers (CI builds .venv with them, see .ci/run); skipped otherwise.
The real tree: NPU_BLOCK_GATE_MLIR_AIR, else shared/mlir-air beside the checkout (where CI
lays shared/), else /work/shared/mlir-air; skipped, saying so, when none has verify/.

run: .venv/bin/python -m unittest test.python.test_real_reference -v
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROBE = os.path.join(REPO, "scripts", "probe")



if REPO not in sys.path:  # this file also runs as the worker script, outside the test package
    sys.path.insert(0, REPO)
from test.python.support import find_mlir_air  # noqa: E402

MLIR_AIR = find_mlir_air()
REAL_VERIFY = os.path.join(MLIR_AIR, "programming_examples", "llms", "verify")
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from fakes import tiny_hf  # noqa: E402 - importable without torch

ARCHS = ("llama", "qwen2", "qwen3")
# verify/prompts/instruct.txt, second prompt: longer than the first, and its digits split
# differently in Llama 3 (up to 3 a token) and Qwen (1 a token).
PROMPT = "Briefly describe the major milestones in the development of artificial intelligence from 1950 to 2020."
MAX_SEQ = 2048
HF_PREFIXES = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_")
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def why_skip():
    """None when the tests can run, else why not. find_spec only: importing torch at
    discovery would cost seconds in every run of the suite (setUpClass imports for real)."""
    import importlib.util  # noqa: PLC0415

    missing = [n for n in ("numpy", "torch", "transformers", "tokenizers", "safetensors") if importlib.util.find_spec(n) is None]
    if missing:
        return (f"the real HF reference tests need torch and transformers; {sys.executable} has no "
                f"{', '.join(missing)}. Run them with .venv/bin/python (.ci/run builds it) or set NPU_BLOCK_GATE_PYTHON.")
    if not os.path.isfile(os.path.join(REAL_VERIFY, "runners", "hf_runner.py")):
        return f"the real mlir-air tree is not at {MLIR_AIR} (set NPU_BLOCK_GATE_MLIR_AIR)"
    return None


SKIP = why_skip()


def hf_vars(env):
    return {k: v for k, v in env.items() if k.startswith(HF_PREFIXES) or k in PROXY_VARS or k.lower() == "no_proxy"}


def closed_port():
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------------------
# The worker: runs in a fresh interpreter with the offline environment.


def probe_reference(tree_root, model, config, hf_id, tokens, prompt):
    """The probe's own reference path: npu_probe.reference.tokens.tokenize and
    npu_probe.reference.hf.run_reference.
    The one place that knows their signatures, so a restructured probe means editing only this."""
    if PROBE not in sys.path:
        sys.path.insert(0, PROBE)
    from npu_probe.core import tree as probe_tree  # noqa: PLC0415
    from npu_probe.core.context import Model, RunContext, RunSpec, RunState  # noqa: PLC0415
    from npu_probe.reference import hf, tokens as probe_tokens  # noqa: PLC0415

    llms = os.path.join(tree_root, "programming_examples", "llms")
    tree = probe_tree.Tree(
        air_root=tree_root,
        llms_dir=llms,
        verify_dir=os.path.join(llms, "verify"),
        model_dir=os.path.join(llms, model),
        model=model,
    )
    adapter = types.SimpleNamespace()  # no build_hf_model, no tokenize: the plain HfRunner path
    steps = []
    log = types.SimpleNamespace(step=steps.append, detail=steps.append, error=steps.append)
    ids, _label, _tok = probe_tokens.tokenize(tree, adapter, hf_id, prompt)
    # The run's spec and model as the config stage builds them, holding what the reference reads.
    spec = RunSpec(tree=tree, model_name=hf_id, hf_id=hf_id, tokens=tuple(tokens), seq_len=MAX_SEQ, cpu_attn=True,
                   cache_dir=tree.model_dir, build_dir=tree.model_dir)
    imported = Model(adapter=adapter, adapter_name=f"{model}.verify_adapter", config=config, cfg={}, entry=None)
    ctx = RunContext(options=None, spec=spec, model=imported, state=RunState(ref_kind="hf-bf16"), log=log)
    ref = hf.run_reference(ctx)[0]  # (array, seconds, kind, record, captured)
    return [int(t) for t in ids], ref, steps


def worker_arch(job, arch, np, torch):
    """Everything for one checkpoint; arrays and facts go to <out>/<arch>.npz / the result dict."""
    from safetensors.torch import load_file  # noqa: PLC0415
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415
    from transformers.utils.hub import cached_file  # noqa: PLC0415

    ck = job["checkpoints"][arch]
    hf_id = ck["hf_id"]
    config = tiny_hf.TreeConfig(**ck["config"])
    res = {"hf_id": hf_id}
    arrays = {}

    # Where from_pretrained resolves the id: the temp hub's snapshot, nowhere else.
    res["resolved_config"] = os.path.realpath(cached_file(hf_id, "config.json"))

    # Tokens as verify_runner gets them.
    tok = AutoTokenizer.from_pretrained(hf_id)
    tokens = [int(t) for t in tok.encode(PROMPT)]
    res["tokenizer_class"] = type(tok).__name__
    from tokenizers import Tokenizer  # noqa: PLC0415

    res["raw_tokens"] = Tokenizer.from_file(os.path.join(ck["snapshot"], "tokenizer.json")).encode(PROMPT).ids
    res["tokens"] = tokens
    res["bos_token_id"] = tok.bos_token_id

    # The tree's own HfRunner, loading the checkpoint itself.
    from runners.hf_runner import HfRunner  # noqa: PLC0415 - the temp tree's copy

    res["hf_runner_file"] = os.path.realpath(sys.modules["runners.hf_runner"].__file__)
    t = time.monotonic()
    runner = HfRunner(hf_id, config, max_seq=MAX_SEQ, lite_mode=False)
    rec = runner.prefill(np.asarray(tokens, dtype=np.int64))
    res["hf_runner_seconds"] = time.monotonic() - t
    res["n_intermediates"] = len(rec.layer_intermediates)
    for li, d in enumerate(rec.layer_intermediates):
        if "ffn_out" in d:
            arrays[f"runner_ffn_{li}"] = np.array(d["ffn_out"], copy=True)
    arrays["runner_final"] = np.array(rec.final_hidden_normed, copy=True)
    res["runner_model_dtype"] = str(runner.model.dtype)

    # A direct transformers forward of the same checkpoint.
    model = AutoModelForCausalLM.from_pretrained(hf_id, torch_dtype=torch.bfloat16)
    model.eval()
    with torch.no_grad():
        hs = model(torch.tensor([tokens], dtype=torch.long), output_hidden_states=True).hidden_states
    for i, h in enumerate(hs):
        arrays[f"direct_hs_{i}"] = h[0].float().numpy()
    res["direct_model_dtype"] = str(model.dtype)
    res["direct_class"] = type(model).__name__

    # What was loaded: every stored tensor, unchanged (a missing key would be random-initialised).
    stored = load_file(os.path.join(ck["snapshot"], "model.safetensors"))
    state = model.state_dict()
    res["stored_keys_missing_in_model"] = sorted(set(stored) - set(state))
    res["model_keys_not_stored"] = sorted(set(state) - set(stored))
    res["stored_tensors_differ"] = sorted(k for k in stored if k in state and not torch.equal(stored[k], state[k]))
    res["lm_head_tied"] = model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    attn = model.model.layers[0].self_attn
    res["bias"] = {p: None if getattr(attn, f"{p}_proj").bias is None
                   else float(getattr(attn, f"{p}_proj").bias.detach().float().abs().max()) for p in "qkvo"}
    res["q_proj_out"] = attn.q_proj.weight.shape[0]
    res["k_proj_out"] = attn.k_proj.weight.shape[0]
    for n in ("q_norm", "k_norm"):
        m = getattr(attn, n, None)
        res[n] = None if m is None else {"shape": list(m.weight.shape),
                                        "all_ones": bool(torch.all(m.weight.detach() == 1))}
    rp = getattr(model.config, "rope_parameters", None) or {}
    res["rope"] = {"theta": float(rp.get("rope_theta", getattr(model.config, "rope_theta", 0.0))),
                   "type": rp.get("rope_type")}
    res["hf_config"] = {k: getattr(model.config, k, None) for k in (
        "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
        "intermediate_size", "vocab_size", "tie_word_embeddings")}
    if res["hf_config"]["head_dim"] is None:  # Qwen2Config has no head_dim: hidden / heads
        res["hf_config"]["head_dim"] = model.config.hidden_size // model.config.num_attention_heads

    # The probe's reference path.
    probe_tokens, probe_ref, steps = probe_reference(job["tree"], f"tiny_{arch}", config, hf_id, tokens, PROMPT)
    res["probe_tokens"] = probe_tokens
    res["probe_steps"] = [str(s) for s in steps]
    arrays["probe_ffn_0"] = np.asarray(probe_ref)
    np.savez(os.path.join(job["out"], f"{arch}.npz"), **arrays)
    return res


def worker(job_path):
    attempts = []

    def audit(event, args):
        if event == "socket.connect":
            sock, address = args[0], args[1]
            if getattr(sock, "family", None) != getattr(socket, "AF_UNIX", None):
                attempts.append(f"connect {address!r}")
        elif event == "socket.getaddrinfo":
            attempts.append(f"getaddrinfo {args[0]!r}:{args[1]!r}")

    sys.addaudithook(audit)
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    llms = os.path.join(job["tree"], "programming_examples", "llms")
    # As verify_runner does: llms/ then verify/ at the front (hf_runner imports runners._records).
    sys.path.insert(0, llms)
    sys.path.insert(0, os.path.join(llms, "verify"))
    out = {"archs": {}, "errors": {}}
    t = time.monotonic()
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415
    import transformers  # noqa: PLC0415
    from huggingface_hub import constants  # noqa: PLC0415

    out["import_seconds"] = time.monotonic() - t
    out["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__}
    out["hub"] = {"cache": constants.HF_HUB_CACHE, "offline": bool(constants.HF_HUB_OFFLINE)}
    for arch in job["archs"]:
        try:
            out["archs"][arch] = worker_arch(job, arch, np, torch)
        except BaseException:  # one architecture's failure must not hide the others'
            out["errors"][arch] = traceback.format_exc()
    out["network_attempts"] = attempts
    with open(os.path.join(job["out"], "result.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, default=str)


# ---------------------------------------------------------------------------
# The tests (this process builds the checkpoints and reads the worker's results).


@unittest.skipIf(SKIP, SKIP)
class RealHfReferenceTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            import numpy as np  # noqa: PLC0415
            import torch  # noqa: F401, PLC0415
            import transformers  # noqa: F401, PLC0415
        except Exception as exc:  # installed but broken
            raise unittest.SkipTest(f"{sys.executable}: torch/transformers do not import ({type(exc).__name__}: {exc})") from exc

        cls.np = np
        cls.env_before = dict(os.environ)
        cls.tmp = tempfile.mkdtemp(prefix="npu-gate-real-ref-")
        cls.hub = os.path.join(cls.tmp, "hub")
        t = time.monotonic()
        cls.checkpoints = tiny_hf.build_all(cls.hub, ARCHS)
        cls.build_seconds = time.monotonic() - t
        # A copy of the real tree's verify/ (and empty model dirs named for the probe's Tree).
        cls.tree = os.path.join(cls.tmp, "air")
        llms = os.path.join(cls.tree, "programming_examples", "llms")
        shutil.copytree(REAL_VERIFY, os.path.join(llms, "verify"), ignore=shutil.ignore_patterns("__pycache__", "reports"))
        for arch in ARCHS:
            os.makedirs(os.path.join(llms, f"tiny_{arch}"))
        cls.out = os.path.join(cls.tmp, "out")
        os.makedirs(cls.out)
        job = {
            "tree": cls.tree,
            "out": cls.out,
            "archs": list(ARCHS),
            "checkpoints": {a: c.as_dict() for a, c in cls.checkpoints.items()},
        }
        job_path = os.path.join(cls.tmp, "job.json")
        with open(job_path, "w", encoding="utf-8") as f:
            json.dump(job, f)
        env = {k: v for k, v in os.environ.items()
               if k not in hf_vars(os.environ)}
        env.update(tiny_hf.offline_env(cls.hub))
        env["HF_HOME"] = os.path.join(cls.tmp, "hf_home")  # nothing into ~/.cache
        env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        cls.proxy = f"http://127.0.0.1:{closed_port()}"
        for k in PROXY_VARS:
            env[k] = cls.proxy
        cls.worker_env = env
        t = time.monotonic()
        cls.proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", job_path],
                                  capture_output=True, text=True, env=env, timeout=900)
        cls.worker_seconds = time.monotonic() - t
        try:
            with open(os.path.join(cls.out, "result.json"), encoding="utf-8") as f:
                cls.result = json.load(f)
        except (OSError, ValueError):
            cls.result = None

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def worker_result(self, arch=None):
        if self.result is None:
            self.fail(f"the worker wrote no result (exit {self.proc.returncode}):\n{self.proc.stderr[-4000:]}")
        if arch is None:
            return self.result
        if arch in self.result["errors"]:
            self.fail(f"{arch}: the worker failed:\n{self.result['errors'][arch]}")
        return self.result["archs"][arch]

    def arrays(self, arch):
        self.worker_result(arch)
        with self.np.load(os.path.join(self.out, f"{arch}.npz")) as z:
            return {k: z[k] for k in z.files}

    def assert_bits(self, a, b, what):
        np = self.np
        a = np.asarray(a)
        b = np.asarray(b)
        self.assertEqual(a.dtype, np.float32, f"{what}: {a.dtype}")
        self.assertEqual(b.dtype, np.float32, f"{what}: {b.dtype}")
        self.assertEqual(a.shape, b.shape, what)
        if not np.array_equal(a, b):
            diff = np.abs(a.astype(np.float64) - b)
            self.fail(f"{what}: not bit-identical ({int((a != b).sum())} of {a.size} differ, max |diff| {diff.max():.3g})")

    # -- HfRunner vs a direct transformers forward ------------------------------------------

    def check_hf_runner(self, arch):
        ck = self.checkpoints[arch]
        res = self.worker_result(arch)
        arr = self.arrays(arch)
        real_len = len(res["tokens"])
        self.assertGreater(real_len, 1)
        self.assertTrue(res["hf_runner_file"].startswith(os.path.realpath(self.tree)), res["hf_runner_file"])
        self.assertEqual(res["runner_model_dtype"], "torch.bfloat16")
        self.assertEqual(res["direct_model_dtype"], "torch.bfloat16")
        ffn0 = arr["runner_ffn_0"]
        self.assertEqual(ffn0.shape, (real_len, ck.config.emb_dim))
        self.assertTrue(self.np.isfinite(ffn0).all())
        self.assertGreater(float(self.np.abs(ffn0).max()), 0.0)
        self.assert_bits(ffn0, arr["direct_hs_1"], f"{arch} layer 0 ffn_out, HfRunner vs transformers")
        # The rest of the record follows the same convention (hidden_states[li+1], [-1] normed).
        n = ck.config.n_layers
        self.assertEqual(res["n_intermediates"], n)
        self.assertEqual(sorted(k for k in arr if k.startswith("runner_ffn_")), [f"runner_ffn_{i}" for i in range(n - 1)])
        for li in range(1, n - 1):
            self.assert_bits(arr[f"runner_ffn_{li}"], arr[f"direct_hs_{li + 1}"], f"{arch} layer {li} ffn_out")
        self.assertEqual(len([k for k in arr if k.startswith("direct_hs_")]), n + 1)
        self.assert_bits(arr["runner_final"], arr[f"direct_hs_{n}"], f"{arch} final_hidden_normed")

    def test_llama_hf_runner_bit_exact(self):
        self.check_hf_runner("llama")

    def test_qwen2_hf_runner_bit_exact(self):
        self.check_hf_runner("qwen2")

    def test_qwen3_hf_runner_bit_exact(self):
        self.check_hf_runner("qwen3")

    # -- the probe's own reference function -----------------------------------------------

    def check_probe_reference(self, arch):
        res = self.worker_result(arch)
        arr = self.arrays(arch)
        self.assertEqual(res["probe_tokens"], res["tokens"], "probe tokenize vs AutoTokenizer(...).encode")
        self.assert_bits(arr["probe_ffn_0"], arr["direct_hs_1"], f"{arch} probe run_reference vs transformers")
        self.assert_bits(arr["probe_ffn_0"], arr["runner_ffn_0"], f"{arch} probe run_reference vs HfRunner")

    def test_llama_probe_reference_bit_exact(self):
        self.check_probe_reference("llama")

    def test_qwen2_probe_reference_bit_exact(self):
        self.check_probe_reference("qwen2")

    def test_qwen3_probe_reference_bit_exact(self):
        self.check_probe_reference("qwen3")

    # -- the checkpoints are what they imitate ---------------------------------------------

    def check_checkpoint(self, arch):
        ck = self.checkpoints[arch]
        res = self.worker_result(arch)
        c = ck.config
        self.assertEqual(res["resolved_config"], os.path.realpath(os.path.join(ck.snapshot, "config.json")))
        self.assertEqual(res["stored_keys_missing_in_model"], [])
        self.assertEqual(res["stored_tensors_differ"], [])
        self.assertEqual(res["model_keys_not_stored"], ["lm_head.weight"])  # tied, as on the hub
        self.assertTrue(res["lm_head_tied"])
        self.assertEqual(res["hf_config"], {
            "hidden_size": c.emb_dim, "num_hidden_layers": c.n_layers, "num_attention_heads": c.n_heads,
            "num_key_value_heads": c.n_kv_heads, "head_dim": c.head_dim, "intermediate_size": c.hidden_dim,
            "vocab_size": c.vocab_size, "tie_word_embeddings": True,
        })
        self.assertLess(c.n_kv_heads, c.n_heads)  # GQA
        self.assertEqual(res["q_proj_out"], c.n_heads * c.head_dim)
        self.assertEqual(res["k_proj_out"], c.n_kv_heads * c.head_dim)
        self.assertEqual(res["rope"]["theta"], c.rope_base)
        # Tokenization: the class AutoTokenizer picked encodes as tokenizer.json does.
        self.assertEqual(res["tokens"], res["raw_tokens"], res["tokenizer_class"])
        self.assertLessEqual(max(res["tokens"]), c.vocab_size - 1)
        return res, c

    def test_llama_checkpoint(self):
        res, c = self.check_checkpoint("llama")
        self.assertEqual((c.head_dim, c.rope_base, c.qkv_bias, c.qk_norm), (64, 500000.0, False, False))
        self.assertEqual(res["rope"]["type"], "llama3")
        self.assertEqual(res["bias"], {"q": None, "k": None, "v": None, "o": None})
        self.assertEqual((res["q_norm"], res["k_norm"]), (None, None))
        self.assertEqual(res["tokens"][0], res["bos_token_id"], "Llama 3's tokenizer adds <|begin_of_text|>")

    def test_qwen2_checkpoint(self):
        res, c = self.check_checkpoint("qwen2")
        self.assertEqual((c.rope_base, c.qkv_bias, c.qk_norm), (1e6, True, False))
        for p in "qkv":
            self.assertIsNotNone(res["bias"][p], f"{p}_proj has no bias")
            self.assertGreater(res["bias"][p], 0.0, f"{p}_proj bias is all zero")
        self.assertIsNone(res["bias"]["o"])
        self.assertEqual((res["q_norm"], res["k_norm"]), (None, None))
        self.assertIsNone(res["bos_token_id"])
        self.assertEqual(res["tokenizer_class"], "Qwen2Tokenizer")  # transformers 5 overrides the hub class
        self.assertEqual(c.vocab_size % 128, 0)

    def test_qwen3_checkpoint(self):
        res, c = self.check_checkpoint("qwen3")
        self.assertEqual((c.head_dim, c.rope_base, c.qkv_bias, c.qk_norm), (128, 1e6, False, True))
        self.assertNotEqual(c.head_dim, c.emb_dim // c.n_heads)
        for n in ("q_norm", "k_norm"):
            self.assertEqual(res[n], {"shape": [c.head_dim], "all_ones": False}, n)
        self.assertEqual(res["bias"], {"q": None, "k": None, "v": None, "o": None})

    # -- offline ------------------------------------------------------------------------

    def test_offline_no_network_attempt(self):
        out = self.worker_result()
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr[-4000:])
        self.assertEqual(out["hub"], {"cache": self.hub, "offline": True})
        for k in PROXY_VARS:
            self.assertEqual(self.worker_env[k], self.proxy)
        self.assertEqual(out["network_attempts"], [], "with HF_HUB_OFFLINE=1 nothing may touch the network")
        # This process never sets them (torch itself adds TORCHINDUCTOR_CACHE_DIR when a model is built).
        self.assertEqual(hf_vars(os.environ), hf_vars(self.env_before), "this process's HF/proxy environment changed")

    # -- the builder ---------------------------------------------------------------------

    def test_checkpoints_are_deterministic(self):
        again = os.path.join(self.tmp, "hub-again")
        t = time.monotonic()
        ck = tiny_hf.build("qwen3", again)
        self.assertLess(time.monotonic() - t, 10.0)
        self.assertEqual(ck.revision, self.checkpoints["qwen3"].revision)
        with open(os.path.join(ck.repo_dir, "refs", "main"), encoding="utf-8") as f:
            self.assertEqual(f.read(), ck.revision)
        self.assertEqual(len(ck.revision), 40)
        names = sorted(os.listdir(ck.snapshot))
        for required in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
            self.assertIn(required, names)
        for name in names:
            with open(os.path.join(ck.snapshot, name), "rb") as f1, \
                    open(os.path.join(self.checkpoints["qwen3"].snapshot, name), "rb") as f2:
                self.assertEqual(f1.read(), f2.read(), name)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        unittest.main()
