"""`probe block --reuse-kernels` and probe.json `kernel_cache`
(run: python3 -m unittest discover -s test/python -t .).

End-to-end runs work on a temp copy of examples/air-mini (kernel caches land
under build_peano/, which must stay out of the repo) or on a small fake tree
whose KernelCache notes every compile.
"""

import json
import os
import shutil
import sys
import tempfile
import textwrap
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(REPO, "scripts", "probe")
AIR_MINI = os.path.join(REPO, "examples", "air-mini")
AIR_MINI_LLMS = os.path.join(AIR_MINI, "programming_examples", "llms")
sys.path.insert(0, PROBE)
sys.path.insert(0, os.path.join(REPO, "test", "python"))
from support import run_probe  # noqa: E402

from npu_probe.run import kernels as probe_kernels  # noqa: E402
from fakes import fake_tree  # noqa: E402

KC_FIELDS = ("dir", "key", "hit", "seconds_saved", "entries", "seq_len", "cpu_attn", "toolchain",
             "compile_command", "compiled", "reused", "compile_seconds")




def load_probe(out):
    with open(os.path.join(out, "probe.json"), encoding="utf-8") as f:
        return json.load(f)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class TempDirCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="probe-cache-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)


# ---------------------------------------------------------------------------
# track_compiles on its own (in-process)


class _Art:
    def __init__(self, output_binary):
        self.output_binary = output_binary


class _Cache:
    def __init__(self):
        self.artifacts = {}
        self.calls = []

    def compile_and_cache(self, name, mlir_module, backend_kwargs, output_binary_name="air"):
        self.calls.append(name)
        return "compiled"


class TrackCompilesTests(TempDirCase):
    def elf(self, name):
        path = os.path.join(self.tmp, name + ".elf")
        with open(path, "w") as f:
            f.write("elf")
        return path

    def test_without_reuse_everything_compiles_and_is_noted(self):
        c = _Cache()
        c.artifacts["a"] = _Art(self.elf("a"))
        orig = vars(_Cache)["compile_and_cache"]
        rec = probe_kernels.track_compiles(c, reuse=False)
        self.assertEqual(c.compile_and_cache("a", None, {}), "compiled")
        c.compile_and_cache(name="b", mlir_module=None, backend_kwargs={})
        self.assertEqual((c.calls, rec.compiled, rec.reused), (["a", "b"], ["a", "b"], []))
        self.assertIs(vars(_Cache)["compile_and_cache"], orig)  # the class is untouched
        self.assertIn("compile_and_cache", vars(c))

    def test_reuse_skips_loaded_names_with_binaries_only(self):
        c = _Cache()
        c.artifacts["a"] = _Art(self.elf("a"))
        c.artifacts["gone"] = _Art(os.path.join(self.tmp, "gone.elf"))  # binary missing
        c.artifacts["d"] = {"output_binary": self.elf("d")}  # dict-shaped artifacts too
        rec = probe_kernels.track_compiles(c, reuse=True)
        self.assertIsNone(c.compile_and_cache("a", None, {}))  # mlir-air's compile_and_cache returns None
        self.assertEqual(c.compile_and_cache("gone", None, {}), "compiled")
        self.assertEqual(c.compile_and_cache("new", None, {}), "compiled")
        self.assertIsNone(c.compile_and_cache("d", None, {}))
        self.assertEqual(c.calls, ["gone", "new"])
        self.assertEqual((rec.compiled, rec.reused), (["gone", "new"], ["a", "d"]))

    def test_unwrappable_cache_is_untracked(self):
        class Slotted:
            __slots__ = ("artifacts",)

            def compile_and_cache(self, name, *a):
                return None

        rec = probe_kernels.track_compiles(Slotted(), reuse=True)
        self.assertFalse(rec.tracked)

    def test_toolchain_of(self):
        class C:
            def _toolchain_id(self):
                return {"mlir_aie": "1.2", "llvm-aie": "19", "nested": {"x": 1}}

        self.assertEqual(probe_kernels.toolchain_of(C()),
                         {"llvm-aie": "19", "mlir_aie": "1.2", "nested": '{"x": 1}'})
        self.assertIsNone(probe_kernels.toolchain_of(object()))


# ---------------------------------------------------------------------------
# A fake tree whose compile_all_kernels sets module state the block needs


CACHE = '''
import json, os

def _note(what):
    with open(os.environ["FAKE_CALLS"], "a") as f:
        f.write(what + "\\n")

class _Artifact:
    def __init__(self, output_binary):
        self.output_binary = output_binary

class KernelCache:
    def __init__(self, cache_dir=None, verbose=False, profiler=None):
        self.cache_dir = cache_dir
        os.makedirs(cache_dir, exist_ok=True)
        self.artifacts = {}
    def _toolchain_id(self):
        return {"fake": "1"}
    def _manifest(self):
        return os.path.join(self.cache_dir, "manifest.json")
    def load_manifest(self):
        if not os.path.exists(self._manifest()):
            return False
        with open(self._manifest()) as f:
            m = json.load(f)
        if m["_toolchain"] != self._toolchain_id():
            return False
        for name, info in m["entries"].items():
            if not os.path.exists(info["output_binary"]):
                return False
            self.artifacts[name] = _Artifact(info["output_binary"])
        return True
    def compile_and_cache(self, name, mlir_module, backend_kwargs, output_binary_name="air"):
        _note("compile_and_cache " + name)
        path = os.path.join(self.cache_dir, name + ".elf")
        with open(path, "w") as f:
            json.dump(mlir_module, f)
        self.artifacts[name] = _Artifact(path)
        entries = {n: {"output_binary": a.output_binary, "kernel": "k", "insts": None}
                   for n, a in sorted(self.artifacts.items())}
        with open(self._manifest(), "w") as f:
            json.dump({"_toolchain": self._toolchain_id(), "entries": entries}, f)
    def load_and_run(self, name, backend_kwargs, *inputs, **kw):
        if name not in self.artifacts:
            raise RuntimeError("kernel %r not compiled" % name)
        return inputs
'''

PREFILL = '''
import os
import numpy as np
import {model}_block_math as M
from shared.infra.cache import _note

# As qwen3's _FUSED_SCRATCH_FOR: filled while compile_all_kernels builds the
# modules, read by the block. Skipping compile_all_kernels breaks the block.
_FUSED_SCRATCH_FOR = {{}}

def compile_all_kernels(cache, config, seq_len, cpu_attn=True):
    _note("compile_all_kernels %d" % seq_len)
    _FUSED_SCRATCH_FOR[seq_len] = np.zeros((seq_len, config.emb_dim), np.float32)
    cache.compile_and_cache("rms_gemms_rope", {{"seq_len": seq_len}}, {{}})
    cache.compile_and_cache("o_ffn", {{"seq_len": seq_len}}, {{}})

def run_transformer_block(x_bf16, layer_weights, rope_lut_bf16, config, cache, layer_idx=0, cpu_attn=True):
    scratch = _FUSED_SCRATCH_FOR[x_bf16.shape[0]]  # KeyError unless compile_all_kernels ran
    cache.load_and_run("rms_gemms_rope", {{}}, x_bf16)
    cache.load_and_run("o_ffn", {{}}, x_bf16)
    scratch[...] = M.block(x_bf16, layer_weights)
    return scratch
'''


class ModuleStateTests(TempDirCase):
    def setUp(self):
        super().setUp()
        self.mdir = fake_tree.build(self.tmp)
        llms = os.path.dirname(self.mdir)
        with open(os.path.join(llms, "shared", "infra", "cache.py"), "w") as f:
            f.write(textwrap.dedent(CACHE).lstrip())
        with open(os.path.join(self.mdir, "fake_m_prefill.py"), "w") as f:
            f.write(textwrap.dedent(PREFILL.format(model="fake_m")).lstrip())
        self.calls = os.path.join(self.tmp, "calls.log")

    def block(self, out, *extra):
        if os.path.exists(self.calls):
            os.unlink(self.calls)
        res = run_probe("block", "--model-dir", self.mdir, "--out", os.path.join(self.tmp, out), *extra,
                        env={"FAKE_CALLS": self.calls})
        self.assertEqual(res.returncode, 0, res.stderr)
        with open(self.calls, encoding="utf-8") as f:
            return load_probe(os.path.join(self.tmp, out))["kernel_cache"], f.read().splitlines()

    def test_compile_all_kernels_still_runs_under_reuse(self):
        kc, calls = self.block("cold")
        self.assertEqual(calls, ["compile_all_kernels 64", "compile_and_cache rms_gemms_rope", "compile_and_cache o_ffn"])
        self.assertEqual((kc["compiled"], kc["reused"], kc["hit"]), (["rms_gemms_rope", "o_ffn"], [], False))
        self.assertEqual(kc["toolchain"], {"fake": "1"})
        kc, calls = self.block("warm", "--reuse-kernels")
        # The module state came from compile_all_kernels (the block would KeyError
        # without it); only the real compiles were skipped.
        self.assertEqual(calls, ["compile_all_kernels 64"])
        self.assertEqual((kc["compiled"], kc["reused"], kc["hit"]), ([], ["rms_gemms_rope", "o_ffn"], True))
        # Without the flag the same warm cache compiles again (unchanged behaviour).
        kc, calls = self.block("again")
        self.assertEqual(len(calls), 3)
        self.assertEqual((kc["compiled"], kc["reused"], kc["hit"]), (["rms_gemms_rope", "o_ffn"], [], False))
        self.assertIs(kc["manifest_loaded"], True)

    def test_a_missing_binary_makes_reuse_compile_everything(self):
        self.block("cold")
        os.unlink(os.path.join(self.mdir, "build_peano", "prefill_kernel_cache", "o_ffn.elf"))
        # load_manifest() is False when a binary is missing: everything compiles.
        kc, calls = self.block("warm", "--reuse-kernels")
        self.assertEqual(calls[1:], ["compile_and_cache rms_gemms_rope", "compile_and_cache o_ffn"])
        self.assertEqual((kc["reused"], kc["hit"], kc["manifest_loaded"]), ([], False, False))


# ---------------------------------------------------------------------------
# End to end against a copy of examples/air-mini


def _air_mini_ready():
    return all(
        os.path.isfile(os.path.join(AIR_MINI_LLMS, m, "verify_adapter.py"))
        for m in ("tiny_llama", "tiny_qwen3", "tiny_qwen25")
    ) and os.path.isdir(os.path.join(AIR_MINI_LLMS, "verify"))


@unittest.skipUnless(_air_mini_ready(), "examples/air-mini not present")
class AirMiniReuseTests(TempDirCase):
    MODEL = "tiny_qwen3"  # the model whose compile_all_kernels matters beyond compiling

    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.tmp, "air")
        shutil.copytree(AIR_MINI, self.root, ignore=shutil.ignore_patterns("build_peano", "__pycache__"))
        self.mdir = os.path.join(self.root, "programming_examples", "llms", self.MODEL)
        self.cache_dir = os.path.join(self.mdir, "build_peano", "prefill_kernel_cache")

    def probe(self, stage, out, *extra):
        out = os.path.join(self.tmp, out)
        res = run_probe(stage, "--model-dir", self.mdir, "--out", out, *extra)
        self.assertEqual(res.returncode, 0, res.stderr)
        return load_probe(out), out, res.stderr

    def test_cold_then_reuse_is_bit_identical(self):
        p, cold, _ = self.probe("block", "cold")
        kc = p["kernel_cache"]
        self.assertEqual(tuple(kc)[: len(KC_FIELDS)], KC_FIELDS)
        self.assertTrue(kc["compiled"])
        self.assertEqual(sorted(kc["compiled"]), sorted(kc["entries"]))
        self.assertEqual(kc["reused"], [])
        self.assertIs(kc["hit"], False)
        self.assertIsInstance(kc["compile_seconds"], float)
        self.assertEqual(kc["seq_len"], p["prompt"]["padded_len"])
        self.assertIs(kc["cpu_attn"], True)
        self.assertEqual(kc["compile_command"],
                         f"{self.MODEL}_prefill.compile_all_kernels(cache, config, seq_len={kc['seq_len']}, cpu_attn=True)")
        self.assertIsInstance(kc["toolchain"], dict)

        p2, warm, err = self.probe("block", "warm", "--reuse-kernels")
        kc2 = p2["kernel_cache"]
        self.assertEqual(kc2["compiled"], [])
        self.assertEqual(kc2["reused"], kc["compiled"])
        self.assertIs(kc2["hit"], True)
        self.assertEqual((kc2["compile_command"], kc2["toolchain"], kc2["entries"]),
                         (kc["compile_command"], kc["toolchain"], kc["entries"]))
        self.assertIn("reused 2", err)
        for name in ("block0.npu.npy", "block0.ref.npy", "block0.input.npy"):
            self.assertEqual(read_bytes(os.path.join(cold, name)), read_bytes(os.path.join(warm, name)), name)

    def test_reuse_without_manifest_compiles_everything(self):
        p, _, _ = self.probe("block", "cold")
        os.unlink(os.path.join(self.cache_dir, "manifest.json"))
        p2, _, err = self.probe("block", "warm", "--reuse-kernels")
        kc = p2["kernel_cache"]
        self.assertEqual(kc["compiled"], p["kernel_cache"]["compiled"])
        self.assertEqual(kc["reused"], [])
        self.assertIs(kc["hit"], False)
        self.assertIs(kc["manifest_loaded"], False)
        self.assertIn("no loadable manifest", err)

    def test_reuse_refuses_a_cache_built_by_another_compile(self):
        self.probe("block", "cold")  # cpu attention
        p, _, err = self.probe("block", "npu", "--reuse-kernels", "--npu-attn")
        kc = p["kernel_cache"]
        self.assertIn("flash_attn", kc["compiled"])
        self.assertEqual(kc["reused"], [])
        self.assertIs(kc["hit"], False)
        self.assertIn("cpu_attn=False", kc["compile_command"])
        self.assertIn("not reusing", err)

    def test_config_fills_the_key_inputs_without_compiling(self):
        p, _, _ = self.probe("config", "cfg", "--npu-attn", "--seq-len", "192")
        kc = p["kernel_cache"]
        self.assertEqual((kc["seq_len"], kc["cpu_attn"]), (192, False))
        self.assertEqual(p["prompt"]["padded_len"], 192)
        self.assertIs(p["integration"]["cpu_attn"], False)
        self.assertEqual(kc["toolchain"]["emulator"], "air-mini-emu/1")
        self.assertEqual(kc["compile_command"],
                         f"{self.MODEL}_prefill.compile_all_kernels(cache, config, seq_len=192, cpu_attn=False)")
        self.assertEqual((kc["compiled"], kc["reused"], kc["hit"], kc["compile_seconds"]), ([], [], None, None))
        self.assertFalse(os.path.exists(os.path.join(self.mdir, "build_peano")))
        # block with the same options states the same key inputs.
        b, _, _ = self.probe("block", "blk", "--npu-attn", "--seq-len", "192")
        for field in ("seq_len", "cpu_attn", "toolchain", "compile_command"):
            self.assertEqual(b["kernel_cache"][field], kc[field], field)
        # config's defaults match block's defaults.
        d, _, _ = self.probe("config", "cfg-default")
        self.assertIs(d["kernel_cache"]["cpu_attn"], True)


if __name__ == "__main__":
    unittest.main()
