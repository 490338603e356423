"""A fake NPU runtime, just enough for the real mlir-air `KernelCache.load_and_run`.

The real tree's KernelCache (programming_examples/llms/shared/infra/cache.py) talks to
the NPU through four imports done inside `load_and_run`: `filelock`, `pyxrt`,
`air.backend.xrt.XRTBackend` (and `XRTCompileArtifact` for its artifacts). This module
builds stand-ins for all of them, bound to one `FakeRuntime`:

- `pyxrt`: buffer objects (`bo`, `ext.bo`) backed by a bytearray whose `map()` is a
  writable memoryview (so the cache's zero-copy views really alias the buffer, as on
  an NPU), `sync` a no-op, `xclBOSyncDirection`, `bo.host_only`, and `run(kernel)` with
  `set_arg` / `start` / `wait2`. `wait2` executes the emulated kernel on numpy views of
  the bound buffers. (The xclbin path, `kernel(3, bo_instr, n, *bos).wait()`, works too.)
- `air`, `air.backend`, `air.backend.xrt`: `XRTBackend(**kwargs)` with `load(artifact)`,
  `.device`, `.kernel`, `unload()`, and a `compile()` that refuses (there is no compiler
  here: put artifacts into `cache.artifacts` with `FakeRuntime.populate`);
  `XRTCompileArtifact(output_binary, kernel, insts)`.
- `filelock`: `FileLock(path)` as a context manager that only records the path (the real
  /tmp/npu.lock is never touched).

Kernels are looked up by ELF name: the stem of the artifact's `output_binary`
("rms_gemms_rope" for .../rms_gemms_rope.elf), in `FakeRuntime.kernels`, a plain dict
name -> kernel. A kernel is either an `EmulatedKernel` (a function of a list of typed
numpy arrays, one per kernel argument, each a writable view of that argument's
buffer; bf16 buffers hold int16 bits and are viewed as ml_dtypes.bfloat16), or any
callable taking the list of raw uint8 views (`typed(view, "bf16")` reinterprets one).
Outputs are written in place into those views. So a real CPU twin of an ELF can be
registered later with `runtime.register(name, fn, dtypes=[...])`.

`llama_prefill_kernels(config)` gives simple, deterministic numpy versions of the bf16
Llama prefill ELFs (rms_gemms_rope, o_ffn, flash_attn) with the argument layout of
llama32_1b_prefill.run_transformer_block. Every launch is logged (`runtime.launches`)
with copies of the arguments the kernel declares as outputs, taken right after it ran.

Usage:
    rt = FakeRuntime(llama_prefill_kernels(cfg))
    with rt.installed():                 # sys.modules gets the fakes, restored after
        cache = KernelCache(tmp_dir)     # the tree's own class
        rt.populate(cache)               # cache.artifacts[name] = XRTCompileArtifact(...)
        cache.load_and_run("o_ffn", {...}, *args, ...)
"""

import contextlib
import dataclasses
import os
import sys
import types

import numpy as np

FAKE_MODULE_NAMES = ("pyxrt", "air", "air.backend", "air.backend.xrt", "filelock")


def _bfloat16():
    from ml_dtypes import bfloat16  # noqa: PLC0415 - only kernels that use bf16 need it

    return bfloat16


def dtype_of(spec):
    """numpy dtype for "bf16" / "f32" / "i16" / "i32" / "u8" / "i8", or a dtype itself."""
    names = {"f32": np.float32, "i16": np.int16, "i32": np.int32, "u8": np.uint8, "i8": np.int8}
    if isinstance(spec, str):
        if spec == "bf16":
            return np.dtype(_bfloat16())
        return np.dtype(names[spec])
    return np.dtype(spec)


def typed(raw, spec):
    """A uint8 view of a buffer reinterpreted as `spec` (no copy; writes reach the buffer)."""
    dt = dtype_of(spec)
    n = raw.size // dt.itemsize
    return raw[: n * dt.itemsize].view(dt)


@dataclasses.dataclass
class EmulatedKernel:
    """fn(args): args[i] is a writable 1-D view of argument i, of dtype dtypes[i]
    (`extra` for indices past the list, e.g. the f32 C-scratch args some ELFs take).
    `outputs`: argument indices the launch log copies after each run."""

    fn: object
    dtypes: tuple = ()
    extra: str = "f32"
    outputs: tuple = ()

    def views(self, raws):
        return [typed(r, self.dtypes[i] if i < len(self.dtypes) else self.extra) for i, r in enumerate(raws)]


@dataclasses.dataclass
class Launch:
    name: str  # ELF name
    kernel: str  # artifact.kernel
    bos: list  # the FakeBo objects bound, in argument order
    outputs: dict  # {arg index: copy of that argument right after the run}


class FakeError(RuntimeError):
    pass


class FakeRuntime:
    """One fake NPU: its kernels (ELF name -> kernel), launch log, buffers and locks."""

    def __init__(self, kernels=None, log_outputs=True):
        self.kernels = dict(kernels or {})
        self.log_outputs = log_outputs
        self.launches = []
        self.lock_paths = []
        self.loaded = []  # artifacts passed to XRTBackend.load
        self.bos = []  # every buffer allocated
        self.syncs = 0
        self._modules = None

    # -- kernels ---------------------------------------------------------------

    def register(self, name, fn, dtypes=(), extra="f32", outputs=()):
        """Register (or replace) the kernel run for ELF `name`."""
        self.kernels[name] = EmulatedKernel(fn, tuple(dtypes), extra, tuple(outputs))
        return self.kernels[name]

    def execute(self, artifact, bos):
        name = os.path.splitext(os.path.basename(str(artifact.output_binary)))[0]
        kern = self.kernels.get(name)
        if kern is None:
            raise FakeError(f"fake NPU: no emulated kernel for ELF {name!r} (have {sorted(self.kernels)})")
        raws = [np.frombuffer(b.map(), dtype=np.uint8) for b in bos]
        if isinstance(kern, EmulatedKernel):
            args = kern.views(raws)
            kern.fn(args)
            outs = kern.outputs
        else:
            args = raws
            kern(args)
            outs = ()
        self.launches.append(Launch(
            name=name,
            kernel=str(artifact.kernel),
            bos=list(bos),
            outputs={i: np.array(args[i], copy=True) for i in outs} if self.log_outputs else {},
        ))

    def launches_of(self, name):
        return [la for la in self.launches if la.name == name]

    # -- artifacts ---------------------------------------------------------------

    def artifact(self, name, cache_dir="."):
        """XRTCompileArtifact("<cache_dir>/<name>.elf", name, None): no file is written,
        the fake backend never reads it."""
        xrt_mod = self.modules()["air.backend.xrt"]
        return xrt_mod.XRTCompileArtifact(os.path.join(str(cache_dir), f"{name}.elf"), name, None)

    def populate(self, cache, names=None):
        """Give a real KernelCache the artifacts load_and_run looks up (no compile)."""
        for name in (self.kernels if names is None else names):
            cache.artifacts[name] = self.artifact(name, getattr(cache, "cache_dir", "."))
        return cache

    # -- modules -------------------------------------------------------------------

    def modules(self):
        if self._modules is None:
            self._modules = _build_modules(self)
        return self._modules

    @contextlib.contextmanager
    def installed(self):
        """Put the fake pyxrt / air / filelock into sys.modules; put back what was there after."""
        mods = self.modules()
        saved = {n: sys.modules.get(n, _MISSING) for n in FAKE_MODULE_NAMES}
        sys.modules.update(mods)
        try:
            yield self
        finally:
            for n, old in saved.items():
                if old is _MISSING:
                    sys.modules.pop(n, None)
                else:
                    sys.modules[n] = old


_MISSING = object()


def _build_modules(rt):
    # ---- pyxrt ----
    class FakeBo:
        host_only = "host_only"
        normal = "normal"

        def __init__(self, device, size, flags=None, group_id=None):
            self.device = device
            self.size = int(size)
            self.flags = flags
            self.group_id = group_id
            self._buf = bytearray(self.size)
            rt.bos.append(self)

        def map(self):
            return memoryview(self._buf)

        def sync(self, direction, *args):
            rt.syncs += 1

        def write(self, data, offset=0):
            mv = memoryview(data).cast("B")
            self._buf[offset:offset + len(mv)] = mv

        def read(self, size, offset=0):
            return bytes(self._buf[offset:offset + size])

        def __repr__(self):
            return f"<FakeBo {self.size} bytes>"

    class FakeRun:
        def __init__(self, kernel):
            self.kernel = kernel
            self.args = {}

        def set_arg(self, i, bo):
            self.args[i] = bo

        def start(self):
            pass

        def wait2(self, *args):
            n = max(self.args) + 1 if self.args else 0
            missing = [i for i in range(n) if i not in self.args]
            if missing:
                raise FakeError(f"fake NPU: run without args {missing}")
            rt.execute(self.kernel.artifact, [self.args[i] for i in range(n)])

        wait = wait2

    class SyncDir:
        XCL_BO_SYNC_BO_TO_DEVICE = "to_device"
        XCL_BO_SYNC_BO_FROM_DEVICE = "from_device"

    pyxrt = types.ModuleType("pyxrt")
    pyxrt.__doc__ = "fake pyxrt (npu-block-gate test/python/fakes/fake_air.py)"
    pyxrt.bo = FakeBo
    pyxrt.run = FakeRun
    pyxrt.xclBOSyncDirection = SyncDir
    pyxrt.ext = types.SimpleNamespace(bo=lambda device, size, *a, **k: FakeBo(device, size))

    # ---- air.backend.xrt ----
    @dataclasses.dataclass
    class XRTCompileArtifact:
        output_binary: str
        kernel: str
        insts: object = None

    class FakeDevice:
        def __repr__(self):
            return "<fake NPU device>"

    class FakeHandle:
        def wait(self, *args):
            pass

    class FakeKernel:
        def __init__(self, artifact):
            self.artifact = artifact

        def group_id(self, i):
            return i

        def __call__(self, opcode, bo_instr, n_instr, *bos):  # xclbin-mode launch
            rt.execute(self.artifact, list(bos))
            return FakeHandle()

    class XRTBackend:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            self.device = None
            self.kernel = None
            self.bo_instr = None
            self.instr_v = []
            self.unloaded = False

        def compile(self, *args, **kwargs):
            raise FakeError("fake air backend: no compiler; put artifacts into cache.artifacts (FakeRuntime.populate)")

        def load(self, artifact):
            rt.loaded.append(artifact)
            self.device = FakeDevice()
            self.kernel = FakeKernel(artifact)

            def invoker(*arrays):
                bos = []
                for a in arrays:
                    a = np.ascontiguousarray(a)
                    bo = FakeBo(self.device, a.nbytes)
                    np.frombuffer(bo.map(), dtype=np.uint8)[:] = np.frombuffer(a.tobytes(), dtype=np.uint8)
                    bos.append(bo)
                rt.execute(artifact, bos)
                return tuple(np.frombuffer(bytes(b.map()), dtype=a.dtype).reshape(a.shape) for b, a in zip(bos, arrays))

            return invoker

        def compile_and_load(self, *args, **kwargs):
            self.compile(*args, **kwargs)

        def unload(self):
            self.unloaded = True

    air = types.ModuleType("air")
    air.__path__ = []  # a package, with nothing on disk (KernelCache._toolchain_id globs air.__path__)
    backend = types.ModuleType("air.backend")
    backend.__path__ = []
    xrt_mod = types.ModuleType("air.backend.xrt")
    xrt_mod.XRTBackend = XRTBackend
    xrt_mod.XRTCompileArtifact = XRTCompileArtifact
    air.backend = backend
    backend.xrt = xrt_mod

    # ---- filelock ----
    class FileLock:
        def __init__(self, lock_file, *args, **kwargs):
            self.lock_file = str(lock_file)
            self.is_locked = False

        def acquire(self, *args, **kwargs):
            rt.lock_paths.append(self.lock_file)
            self.is_locked = True
            return self

        def release(self, *args, **kwargs):
            self.is_locked = False

        def __enter__(self):
            return self.acquire()

        def __exit__(self, *exc):
            self.release()
            return False

    filelock = types.ModuleType("filelock")
    filelock.FileLock = FileLock
    filelock.SoftFileLock = FileLock
    filelock.Timeout = type("Timeout", (TimeoutError,), {})

    return {"pyxrt": pyxrt, "air": air, "air.backend": backend, "air.backend.xrt": xrt_mod, "filelock": filelock}


# ---------------------------------------------------------------------------
# Emulated bf16 Llama prefill ELFs (argument layout of llama32_1b_prefill.py)


def _f32(a):
    return np.asarray(a, dtype=np.float32)


def _store(dst, value):
    """Write `value` into the argument view `dst` (rounding to its dtype)."""
    dst[:] = np.asarray(value, dtype=np.float32).reshape(-1).astype(dst.dtype)


def _rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rope_halfsplit(x, lut, head_dim):
    """Half-split RoPE: rows of head_dim, LUT rows [cos..., sin...] (generate_rope_lut)."""
    x = x.reshape(-1, head_dim)
    lut = lut.reshape(-1, head_dim)
    half = head_dim // 2
    cos, sin = lut[:, :half], lut[:, half:]
    x1, x2 = x[:, :half], x[:, half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=1)


def _bf(x):
    """Round to bf16 and back (what a bf16 buffer between two launches does)."""
    return np.asarray(x, dtype=np.float32).astype(_bfloat16()).astype(np.float32)


def llama_prefill_kernels(config, eps=1e-5):
    """{ELF name: EmulatedKernel} for the bf16 Llama prefill block
    (llama32_1b_prefill.run_transformer_block): rms_gemms_rope, o_ffn, flash_attn.
    Deterministic numpy math: RMSNorm, y = x @ W GEMMs, half-split RoPE, causal GQA
    attention, SwiGLU FFN, each buffer rounded to bf16. Dims from `config`
    (emb_dim, n_heads, n_kv_heads, head_dim, hidden_dim); seq_len from the buffer size."""
    emb = int(config.emb_dim)
    n_heads, n_kv, hd = int(config.n_heads), int(config.n_kv_heads), int(config.head_dim)
    hidden = int(config.hidden_dim)
    kv = n_kv * hd

    def rms_gemms_rope(a):
        # 0 x, 1 attn_norm, 2 normed, 3 wq, 4 q, 5 wk, 6 k, 7 wv, 8 v, 9 lut_q, 10 lut_k,
        # 11 q_roped, 12 k_roped, 13.. f32 GEMM scratch (registry-driven; left alone)
        x = _f32(a[0]).reshape(-1, emb)
        normed = _bf(_rms(x, _f32(a[1]), eps))
        q = _bf(normed @ _f32(a[3]).reshape(emb, emb))
        k = _bf(normed @ _f32(a[5]).reshape(emb, kv))
        v = _bf(normed @ _f32(a[7]).reshape(emb, kv))
        for i, val in ((2, normed), (4, q), (6, k), (8, v)):
            _store(a[i], val)
        _store(a[11], _rope_halfsplit(q, _f32(a[9]), hd))
        _store(a[12], _rope_halfsplit(k, _f32(a[10]), hd))

    def o_ffn(a):
        # 0 attn_out, 1 wo, 2 proj, 3 x_residual, 4 res1, 5 ffn_norm, 6 normed2, 7 w_gate,
        # 8 gate, 9 w_up, 10 up, 11 swiglu, 12 w_down, 13 down, 14 output,
        # 15..18 f32 C-scratch (proj, gate, up, down)
        attn = _f32(a[0]).reshape(-1, emb)
        proj32 = attn @ _f32(a[1]).reshape(emb, emb)
        proj = _bf(proj32)
        res1 = _bf(_f32(a[3]).reshape(-1, emb) + proj)
        n2 = _bf(_rms(res1, _f32(a[5]), eps))
        gate32 = n2 @ _f32(a[7]).reshape(emb, hidden)
        up32 = n2 @ _f32(a[9]).reshape(emb, hidden)
        gate, up = _bf(gate32), _bf(up32)
        sw = _bf(gate / (1.0 + np.exp(-gate)) * up)
        down32 = sw @ _f32(a[12]).reshape(hidden, emb)
        down = _bf(down32)
        for i, val in ((2, proj), (4, res1), (6, n2), (8, gate), (10, up), (11, sw), (13, down), (14, res1 + down)):
            _store(a[i], val)
        for i, val in ((15, proj32), (16, gate32), (17, up32), (18, down32)):
            if i < len(a) and a[i].size == val.size:
                _store(a[i], val)

    def flash_attn(a):
        # 0 q (seq, n_heads*hd), 1 k (seq, kv), 2 v (seq, kv), 3 out (seq, n_heads*hd)
        q = _f32(a[0]).reshape(-1, n_heads, hd).transpose(1, 0, 2)
        k = _f32(a[1]).reshape(-1, n_kv, hd).transpose(1, 0, 2)
        v = _f32(a[2]).reshape(-1, n_kv, hd).transpose(1, 0, 2)
        seq = q.shape[1]
        mask = np.triu(np.full((seq, seq), -np.inf, dtype=np.float32), k=1)
        group = n_heads // n_kv
        out = np.empty_like(q)
        for h in range(n_heads):
            s = q[h] @ k[h // group].T / np.sqrt(hd) + mask
            p = np.exp(s - s.max(axis=-1, keepdims=True))
            out[h] = (p / p.sum(axis=-1, keepdims=True)) @ v[h // group]
        _store(a[3], out.transpose(1, 0, 2))

    bf = "bf16"
    return {
        "rms_gemms_rope": EmulatedKernel(rms_gemms_rope, (bf,) * 13, "f32", (8, 11, 12)),
        "o_ffn": EmulatedKernel(o_ffn, (bf,) * 15, "f32", (14,)),
        "flash_attn": EmulatedKernel(flash_attn, (bf,) * 4, "f32", (3,)),
    }
