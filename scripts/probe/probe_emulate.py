"""`--emulate`: the real tree's block on an emulated NPU (the CPU twins).

An emulated `air` runtime stands in for the NPU packages the tree's own
`KernelCache.load_and_run` imports inside itself: `pyxrt` (buffer objects whose
`map()` is a writable view of host memory, so the cache's zero-copy views and
shared buffers behave as on the device; `run(kernel)` whose `wait2()` runs the
ELF's twin on those buffers), `air.backend.xrt` (`XRTBackend.load`,
`XRTCompileArtifact`) and `filelock` (records the lock path; /tmp/npu.lock is
never touched). The tree's KernelCache, block function, buffer reuse, padding
and argument order all run unchanged; only what an ELF computes is the twin
(probe_twins), looked up by ELF name in the model's entry of elf_boundaries.json.

What changes in the run (all recorded in probe.json `emulate`, and every
report marks the run as emulated):
- `compile_all_kernels` is not called: it builds MLIR with the air compiler.
  The KernelCache gets one artifact per ELF the table lists for the model
  (flash_attn only with NPU attention), in a temporary cache dir.
- the model config's dimensions come from the HF checkpoint's config.json, so a
  tiny checkpoint runs the tree's code at a tiny config;
- the kernel registry's GEMM lookups (kernel_registry.registry_lookup) answer a
  shape the registry lacks with the entry of the production shape it stands
  for (each tiny dimension mapped to the model's default LlamaConfig
  dimension); the registry's method decides which f32 scratch arguments the
  tree passes, so the argument layout stays the production one;
- an injected bug (`--inject NAME`, probe_twins.INJECTIONS) changes one stage
  of one ELF kind of the emulated NPU; the twins the bisect compares with stay
  clean.
"""

import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import types

import numpy as np

from npu_probe.core.errors import ProbeError
from probe_table import dims_of, elf_args, eval_shape, fa_layout
from probe_twins import bf16_bits, from_bf16_bits, run_twin

RUNTIME_NAME = "npu-block-gate emulated air runtime (CPU twins)"
MODULE_NAMES = ("pyxrt", "air", "air.backend", "air.backend.xrt", "filelock")
_MISSING = object()


class EmulatorError(RuntimeError):
    pass


def _dtype_code(dt):
    try:
        dt = np.dtype(dt)
    except TypeError:
        return "bf16"
    if dt.name == "bfloat16":
        return "bf16"
    if dt == np.float32:
        return "f32"
    return dt.str


class EmulatedNpu:
    """One emulated NPU for one model: its ELFs are the twins of the model's
    table entry. `hint` (set by probe_capture just before each load_and_run)
    gives the shapes and dtypes of the arrays the tree passed, so a twin sees
    them as the tree shaped them (head-first attention is 3-D)."""

    def __init__(self, spec, config, inject=None, real_len=None):
        self.spec = spec
        self.dims = dims_of(config)
        self.inject = inject
        self.real_len = real_len
        self.hint = None
        self.launches = []  # ELF names, in call order
        self.lock_paths = []
        self.modules = _build_modules(self)

    def elf_names(self, cpu_attn):
        return [n for n in self.spec["elfs"] if not (cpu_attn and n == "flash_attn")]

    def execute(self, name, bos):
        elf = self.spec["elfs"].get(name)
        if elf is None:
            raise EmulatorError(f"emulated NPU: no twin for ELF {name!r} (the table lists {sorted(self.spec['elfs'])})")
        raws = [np.frombuffer(b.map(), dtype=np.uint8) for b in bos]
        hint = self.hint if self.hint is not None and self.hint[0] == name and len(self.hint[1]) == len(bos) else None
        layout = fa_layout(elf, hint[1] if hint else None) if elf["kind"] == "flash_attn" else "seq-first"
        specs = {a["arg"]: a for a in elf_args(elf, layout)}
        dims = dict(self.dims)
        if hint:
            shapes, codes = hint[1], hint[2]
            dims["seq"] = _seq_from(specs, shapes, dims)
        else:
            dims["seq"] = _seq_from_bytes(specs, raws, dims)
            shapes = [eval_shape(specs[i]["shape"], dims) if i in specs else None for i in range(len(raws))]
            codes = ["bf16" if i in specs else "f32" for i in range(len(raws))]
        views, vals, prev = {}, {}, {}
        for i, raw in enumerate(raws):
            if i not in specs:
                continue
            a = specs[i]
            n = int(np.prod(shapes[i])) if shapes[i] is not None else None
            if codes[i] == "bf16":
                view = raw.view(np.uint16)[:n]
                val = from_bf16_bits(view)
            else:
                view = raw.view(np.float32)[:n]
                val = view
            views[a["role"]] = (view, codes[i], shapes[i])
            vals[a["role"]] = val.reshape(shapes[i])
            prev[a["role"]] = vals[a["role"]].copy()
        outs = run_twin(elf["kind"], vals, dims, layout=layout, inject=self.inject, real_len=self.real_len,
                        prev=prev)
        for role, value in outs.items():
            if role not in views:
                continue
            view, code, _shape = views[role]
            flat = np.asarray(value, dtype=np.float32).reshape(-1)
            view[:] = bf16_bits(flat) if code == "bf16" else flat
        self.launches.append(name)

    # -- the tree's KernelCache --------------------------------------------------

    def register_artifacts(self, cache, names):
        """cache.artifacts[name] = XRTCompileArtifact('<cache_dir>/<name>.elf', name, None):
        what load_and_run looks up; no file is written."""
        art = self.modules["air.backend.xrt"].XRTCompileArtifact
        for name in names:
            cache.artifacts[name] = art(os.path.join(str(getattr(cache, "cache_dir", ".")), f"{name}.elf"), name, None)
        return list(names)

    @contextlib.contextmanager
    def installed(self):
        """The emulated pyxrt / air / filelock in sys.modules; whatever was there is put back after."""
        saved = {n: sys.modules.get(n, _MISSING) for n in MODULE_NAMES}
        sys.modules.update(self.modules)
        try:
            yield self
        finally:
            for n, old in saved.items():
                if old is _MISSING:
                    sys.modules.pop(n, None)
                else:
                    sys.modules[n] = old


def _seq_from(specs, shapes, dims):
    for i, a in specs.items():
        if i < len(shapes) and "seq" in a["shape"] and shapes[i] is not None:
            pos = a["shape"].index("seq")
            if len(shapes[i]) == len(a["shape"]):
                return int(shapes[i][pos])
            rest = int(np.prod(eval_shape([e for e in a["shape"] if e != "seq"], dims))) if len(a["shape"]) > 1 else 1
            return int(np.prod(shapes[i])) // max(rest, 1)
    raise EmulatorError("emulated NPU: cannot tell seq_len from the arguments")


def _seq_from_bytes(specs, raws, dims):
    for i, a in specs.items():
        if "seq" in a["shape"] or any("seq" in e for e in a["shape"]):
            other = [e for e in a["shape"] if e != "seq"]
            per = int(np.prod(eval_shape(other, dims))) if other else 1
            if any("seq*" in e for e in a["shape"]):
                per = int(np.prod(eval_shape([e.replace("seq*", "") for e in a["shape"]], dims)))
            return raws[i].size // 2 // max(per, 1)
    raise EmulatorError("emulated NPU: cannot tell seq_len from the buffer sizes")


def _build_modules(npu):
    class Bo:
        host_only = "host_only"
        normal = "normal"

        def __init__(self, device, size, flags=None, group_id=None):
            self.size = int(size)
            self._buf = bytearray(self.size)

        def map(self):
            return memoryview(self._buf)

        def sync(self, direction, *args):
            pass

        def write(self, data, offset=0):
            mv = memoryview(data).cast("B")
            self._buf[offset:offset + len(mv)] = mv

        def read(self, size, offset=0):
            return bytes(self._buf[offset:offset + size])

    class Run:
        def __init__(self, kernel):
            self.kernel = kernel
            self.args = {}

        def set_arg(self, i, bo):
            self.args[i] = bo

        def start(self):
            pass

        def wait2(self, *args):
            n = max(self.args) + 1 if self.args else 0
            npu.execute(self.kernel.name, [self.args[i] for i in range(n)])

        wait = wait2

    class SyncDir:
        XCL_BO_SYNC_BO_TO_DEVICE = "to_device"
        XCL_BO_SYNC_BO_FROM_DEVICE = "from_device"

    pyxrt = types.ModuleType("pyxrt")
    pyxrt.__doc__ = RUNTIME_NAME
    pyxrt.bo = Bo
    pyxrt.run = Run
    pyxrt.xclBOSyncDirection = SyncDir
    pyxrt.ext = types.SimpleNamespace(bo=lambda device, size, *a, **k: Bo(device, size))

    @dataclasses.dataclass
    class XRTCompileArtifact:
        output_binary: str
        kernel: str
        insts: object = None

    class Handle:
        def wait(self, *args):
            pass

    class Kernel:
        def __init__(self, artifact):
            self.name = os.path.splitext(os.path.basename(str(artifact.output_binary)))[0]

        def group_id(self, i):
            return i

        def __call__(self, opcode, bo_instr, n_instr, *bos):  # xclbin-mode launch
            npu.execute(self.name, list(bos))
            return Handle()

    class XRTBackend:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            self.device = "emulated NPU"
            self.kernel = None
            self.bo_instr = None
            self.instr_v = []

        def compile(self, *args, **kwargs):
            raise EmulatorError("emulated air runtime: there is no compiler (--emulate registers artifacts instead)")

        def load(self, artifact):
            self.kernel = Kernel(artifact)
            return lambda *arrays: EmulatorError("emulated air runtime: the invoker is not used by KernelCache")

        def unload(self):
            pass

    air = types.ModuleType("air")
    air.__path__ = []
    air.__doc__ = RUNTIME_NAME
    backend = types.ModuleType("air.backend")
    backend.__path__ = []
    xrt_mod = types.ModuleType("air.backend.xrt")
    xrt_mod.XRTBackend = XRTBackend
    xrt_mod.XRTCompileArtifact = XRTCompileArtifact
    air.backend = backend
    backend.xrt = xrt_mod

    class FileLock:
        def __init__(self, lock_file, *args, **kwargs):
            self.lock_file = str(lock_file)

        def acquire(self, *args, **kwargs):
            npu.lock_paths.append(self.lock_file)
            return self

        def release(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self.acquire()

        def __exit__(self, *exc):
            return False

    # The real filelock's namespace (huggingface_hub imports BaseFileLock & co from it), with
    # FileLock replaced: KernelCache.load_and_run's /tmp/npu.lock is only recorded, never taken.
    filelock = types.ModuleType("filelock")
    try:
        import filelock as real  # noqa: PLC0415

        filelock.__dict__.update({k: v for k, v in vars(real).items() if not k.startswith("__")})
    except ImportError:
        filelock.Timeout = type("Timeout", (TimeoutError,), {})
    filelock.FileLock = FileLock
    return {"pyxrt": pyxrt, "air": air, "air.backend": backend, "air.backend.xrt": xrt_mod, "filelock": filelock}


# ---------------------------------------------------------------------------
# The model config from the checkpoint


CONFIG_MAP = (("n_layers", "num_hidden_layers"), ("emb_dim", "hidden_size"), ("n_heads", "num_attention_heads"),
              ("n_kv_heads", "num_key_value_heads"), ("hidden_dim", "intermediate_size"), ("vocab_size", "vocab_size"),
              ("rope_base", "rope_theta"))


def snapshot_config(hf_id, environ=None):
    """(config.json dict, path) of the local HF snapshot of `hf_id` (or a local dir), or (None, why)."""
    from probe_refcache import hub_dir, snapshot_revision  # noqa: PLC0415

    if isinstance(hf_id, str) and os.path.isdir(hf_id):
        path = os.path.join(hf_id, "config.json")
    else:
        rev = snapshot_revision(hf_id, environ)
        if rev is None:
            return None, f"no local HF snapshot of {hf_id}"
        path = os.path.join(hub_dir(environ), "models--" + hf_id.replace("/", "--"), "snapshots", rev, "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), path
    except (OSError, ValueError) as exc:
        return None, f"{path}: {exc}"


def config_from_checkpoint(config, hf_id):
    """Set the tree config's dimensions from the checkpoint's config.json (in place).
    Returns (changes {field: [old, new]}, source path or why not)."""
    hf, where = snapshot_config(hf_id)
    if hf is None:
        return {}, where
    wanted = {}
    for field, key in CONFIG_MAP:
        if key in hf and hf[key] is not None:
            wanted[field] = type(getattr(config, field, hf[key]))(hf[key]) if hasattr(config, field) else hf[key]
    heads = int(hf.get("num_attention_heads") or getattr(config, "n_heads", 1))
    wanted["head_dim"] = int(hf.get("head_dim") or int(hf.get("hidden_size", 0)) // max(heads, 1))
    if "num_key_value_heads" not in hf:
        wanted["n_kv_heads"] = heads
    changes = {}
    for field, value in wanted.items():
        if not hasattr(config, field):
            continue
        old = getattr(config, field)
        if old != value:
            try:
                setattr(config, field, value)
            except (AttributeError, TypeError) as exc:
                raise ProbeError(hf_id, f"--emulate cannot set config.{field} ({exc})") from exc
            changes[field] = [old, value]
    return changes, where


# ---------------------------------------------------------------------------
# The kernel registry at tiny shapes


class RegistryShim:
    """kernel_registry.registry_lookup.gemm_config / gemm_config_method, answering a
    shape the registry lacks with the production shape it stands for."""

    def __init__(self, tiny, prod, prod_seq=2048):
        self.map = {}
        for key in ("emb", "q_dim", "kv_dim", "hidden"):
            self.map.setdefault(tiny[key], prod[key])
        self.prod_seq = prod_seq
        self.lookups = []
        self._saved = None

    def _mapped(self, m, k, n):
        return (self.prod_seq, self.map.get(k, k), self.map.get(n, n))

    def install(self, module):
        orig, orig_m = module.gemm_config, getattr(module, "gemm_config_method", None)
        self._saved = (module, orig, orig_m)

        def gemm_config(M, K, N, output_dtype="bf16", precision="high"):
            try:
                return orig(M, K, N, output_dtype, precision)
            except KeyError:
                pm = self._mapped(M, K, N)
                rec = {"shape": [M, K, N], "as": list(pm), "dtype": output_dtype, "precision": precision}
                try:
                    out = orig(*pm, output_dtype, precision)
                except KeyError:
                    out = _fallback(precision)
                    rec["as"] = None
                rec["method"] = out["method"]
                if rec not in self.lookups:
                    self.lookups.append(rec)
                return out

        module.gemm_config = gemm_config
        if orig_m is not None:
            def gemm_config_method(M, K, N, output_dtype, method, precision="high"):
                try:
                    return orig_m(M, K, N, output_dtype, method, precision)
                except KeyError:
                    return orig_m(*self._mapped(M, K, N), output_dtype, method, precision)

            module.gemm_config_method = gemm_config_method

    def uninstall(self):
        if self._saved:
            module, orig, orig_m = self._saved
            module.gemm_config = orig
            if orig_m is not None:
                module.gemm_config_method = orig_m
            self._saved = None


def _fallback(precision):
    if precision == "low":
        return {"method": "direct", "tile": {"tile_m": 64, "tile_k_l2": 64, "tile_k_l1": 32, "tile_n": 64},
                "gflops": 0.0, "mean_rel_L1": 0.0}
    return {"method": "drain", "tile": {"tile_m": 32, "tile_k_l2": 64, "tile_k_l1": 32, "tile_n": 128},
            "gflops": 0.0, "mean_rel_L1": 0.0}


@dataclasses.dataclass
class Emulation:
    """One --emulate run: the emulated NPU, the registry shim and what to record."""

    npu: EmulatedNpu
    registry: object = None
    cache_dir: str = None
    config_changes: dict = dataclasses.field(default_factory=dict)
    config_source: str = None
    artifacts: list = dataclasses.field(default_factory=list)

    def record(self):
        return {
            "runtime": RUNTIME_NAME,
            "inject": self.npu.inject,
            "config_from": self.config_source,
            "config_changes": self.config_changes,
            "artifacts": self.artifacts,
            "registry": list(self.registry.lookups) if self.registry is not None else [],
            "launches": len(self.npu.launches),
            "compile": "not called: the emulated runtime registers one artifact per ELF of the table "
                       "(compile_all_kernels builds MLIR with the air compiler)",
        }

    def close(self):
        if self.registry is not None:
            self.registry.uninstall()
        if self.cache_dir and os.path.isdir(self.cache_dir):
            shutil.rmtree(self.cache_dir, ignore_errors=True)


def start(tree, config, spec, inject, real_len, prod_config=None):
    """An Emulation for this model (the registry shim installed when the tree has a registry)."""
    if spec is None:
        raise ProbeError(tree.model_dir, f"--emulate needs the model in the ELF boundary table "
                         f"(scripts/probe/elf_boundaries.json); {tree.model} is not there")
    npu = EmulatedNpu(spec, config, inject=inject, real_len=real_len)
    reg = None
    prog = os.path.dirname(tree.llms_dir)
    if prog not in sys.path:
        sys.path.insert(0, prog)
    try:
        import kernel_registry.registry_lookup as lookup  # noqa: PLC0415 - the tree's registry
    except ImportError:
        lookup = None
    if lookup is not None and callable(getattr(lookup, "gemm_config", None)):
        prod = dims_of(prod_config) if prod_config is not None else dims_of(config)
        reg = RegistryShim(dims_of(config), prod)
        reg.install(lookup)
    cache_dir = tempfile.mkdtemp(prefix="npu-block-gate-emulated-cache-")
    return Emulation(npu=npu, registry=reg, cache_dir=cache_dir)
