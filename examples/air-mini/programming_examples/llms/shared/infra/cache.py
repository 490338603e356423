"""Emulated KernelCache for air-mini.

Same surface as mlir-air's `shared/infra/cache.py` KernelCache, with numpy
standing in for the NPU:

* `compile_and_cache(name, mlir_module, backend_kwargs, output_binary_name="air")`
  "compiles" an `EmuModule` (see emu_kernels.build_module): it writes
  `<cache_dir>/<name>.elf` (a JSON description of the kernel: kind, seq_len,
  argument shapes) and `<name>.insts.bin` (a digest of that description),
  registers the artifact and rewrites `manifest.json`
  `{"_toolchain": {...}, "entries": {name: {output_binary, kernel, insts}}}`.
* `load_manifest()` restores artifacts from disk; False when the manifest is
  missing, the toolchain id differs or a binary is missing (and, as in the real
  cache, nothing else - not seq_len, not config - invalidates it).
* `load_and_run(name, backend_kwargs, *inputs, ...)` runs the numpy emulation
  of the compiled kernel and returns a tuple with one array per argument
  (outputs filled in). Shapes must match the compiled ones (pad to seq_len).

Buffer semantics follow the real cache closely enough to reproduce its
footguns:
* `static_input_indices` + `bo_key`: static arrays are captured on the first
  call for that (kernel, bo_key) and reused afterwards (write-once-read-many
  weights). Passing different weights later under the same bo_key silently
  keeps the first ones, as on the device; recompiling the kernel drops them.
* `shared_nonstatic=True`: every non-static argument lives in one buffer per
  (kernel, arg index, size), shared by all bo_keys, and the returned arrays
  are views of those buffers. The next call of the same kernel overwrites
  them: a caller must copy (np.array(x, copy=True)) what it wants to keep.
"""

import hashlib
import json
import platform
import time
from pathlib import Path

import numpy as np

from . import emu_kernels

EMULATOR_VERSION = "air-mini-emu/1"


class Profiler:
    """Minimal stand-in for the real profiler (records timings only)."""

    def __init__(self, enabled=False):
        self.enabled = enabled
        self.compile_times = {}
        self.kernel_times = {}
        self.cpu_times = {}

    def record_compile(self, name, duration):
        self.compile_times[name] = duration

    def record_kernel(self, name, duration):
        self.kernel_times.setdefault(name, []).append(duration)

    def record_cpu(self, name, duration):
        self.cpu_times.setdefault(name, []).append(duration)

    def time_cpu(self, name):
        prof = self

        class _T:
            def __enter__(self):
                self.t0 = time.perf_counter()

            def __exit__(self, *exc):
                prof.record_cpu(name, time.perf_counter() - self.t0)
                return False

        return _T()


class _Artifact:
    def __init__(self, output_binary, kernel, insts):
        self.output_binary = str(output_binary)
        self.kernel = kernel
        self.insts = str(insts) if insts else None


class KernelCache:
    MANIFEST_FILE = "manifest.json"

    def __init__(self, cache_dir=None, verbose=False, profiler=None):
        if cache_dir is None:
            cache_dir = Path(__file__).resolve().parent / "kernel_cache"
        self.cache_dir = Path(cache_dir)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.verbose = verbose
        self.profiler = profiler or Profiler()
        self.artifacts = {}  # name -> _Artifact
        self._specs = {}  # name -> description dict (parsed .elf)
        self._static = {}  # (name, bo_key, arg index) -> captured static array
        self._private = {}  # (bo_key, arg index) -> non-shared buffer
        self._shared_bos = {}  # (name, arg index, nbytes) -> shared buffer

    def _log(self, msg):
        if self.verbose:
            print(f"  [KernelCache] {msg}")

    @staticmethod
    def _toolchain_id():
        return {
            "emulator": EMULATOR_VERSION,
            "numpy": np.__version__.split(".")[0] + "." + np.__version__.split(".")[1],
            "python": ".".join(platform.python_version_tuple()[:2]),
        }

    def _save_manifest(self):
        entries = {
            name: {"output_binary": a.output_binary, "kernel": a.kernel, "insts": a.insts}
            for name, a in sorted(self.artifacts.items())
        }
        manifest = {"_toolchain": self._toolchain_id(), "entries": entries}
        with open(self.cache_dir / self.MANIFEST_FILE, "w") as f:
            json.dump(manifest, f, indent=2)
        self._log(f"saved manifest with {len(entries)} entries")

    def load_manifest(self):
        """Restore compiled artifacts from manifest.json; True on success."""
        path = self.cache_dir / self.MANIFEST_FILE
        if not path.exists():
            return False
        try:
            manifest = json.loads(path.read_text())
        except (OSError, ValueError):
            return False
        if manifest.get("_toolchain") != self._toolchain_id():
            print("  [KernelCache] toolchain changed since this cache was built; recompiling")
            return False
        artifacts, specs = {}, {}
        for name, info in manifest.get("entries", {}).items():
            binary = Path(info["output_binary"])
            if not binary.exists():
                print(f"  WARNING: cached binary not found: {binary}")
                return False
            try:
                specs[name] = json.loads(binary.read_text())
            except (OSError, ValueError):
                return False
            artifacts[name] = _Artifact(binary, info.get("kernel"), info.get("insts"))
        self.artifacts.update(artifacts)
        self._specs.update(specs)
        self._log(f"loaded manifest with {len(artifacts)} entries")
        return True

    def compile_and_cache(self, name, mlir_module, backend_kwargs, output_binary_name="air"):
        """'Compile' an emulated module and record it in the manifest."""
        if not isinstance(mlir_module, emu_kernels.EmuModule):
            raise TypeError(
                f"air-mini can only compile emulated modules (got {type(mlir_module).__name__})")
        t0 = time.perf_counter()
        desc = mlir_module.describe()
        desc["name"] = name
        desc["backend_kwargs"] = {k: v for k, v in sorted((backend_kwargs or {}).items())
                                  if isinstance(v, (str, int, float, bool))}
        text = json.dumps(desc, indent=1, sort_keys=True) + "\n"
        elf = self.cache_dir / f"{name}.elf"
        insts = self.cache_dir / f"{name}.insts.bin"
        elf.write_text(text)
        insts.write_bytes(hashlib.sha256(text.encode()).digest())
        self.artifacts[name] = _Artifact(elf, "MLIR_AIE", insts)
        self._specs[name] = desc
        # Recompiling invalidates resident buffers of that kernel.
        self._shared_bos = {k: v for k, v in self._shared_bos.items() if k[0] != name}
        self._static = {k: v for k, v in self._static.items() if k[0] != name}
        self._save_manifest()
        self.profiler.record_compile(name, time.perf_counter() - t0)
        self._log(f"compiled {name} ({desc['kind']}, seq_len={desc['seq_len']})")
        return self.artifacts[name]

    def load_and_run(self, name, backend_kwargs, *inputs, output_indices=None,
                     static_input_indices=None, intermediate_indices=None, bo_key=None,
                     shared_nonstatic=False, shared_alias=None):
        """Run the emulated kernel `name`; returns one array per argument."""
        if name not in self.artifacts or name not in self._specs:
            raise RuntimeError(
                f"kernel {name!r} is not compiled in {self.cache_dir}: call the model's "
                "compile_all_kernels(cache, config, seq_len) or cache.load_manifest() first")
        spec = self._specs[name]
        shapes = [tuple(a["shape"]) for a in spec["args"]]
        if len(inputs) != len(shapes):
            raise ValueError(f"kernel {name!r} takes {len(shapes)} arguments, got {len(inputs)}")
        static = set(static_input_indices or ())
        bo_key = bo_key or name
        t0 = time.perf_counter()
        bufs = []
        for i, (arr, shape) in enumerate(zip(inputs, shapes)):
            nm = spec["args"][i]["name"]
            if i in static and (name, bo_key, i) in self._static:
                bufs.append(self._static[(name, bo_key, i)])
                continue
            if arr is None:
                raise ValueError(f"kernel {name!r} argument {i} ({nm}) is None")
            a = np.asarray(arr, dtype=np.float32)
            if a.size != int(np.prod(shape)):
                raise ValueError(
                    f"kernel {name!r} argument {i} ({nm}) has shape {a.shape} but the "
                    f"kernel was compiled for {shape} (seq_len={spec['seq_len']}); "
                    "pad the input to the compiled seq_len")
            if i in static:
                buf = np.array(a.reshape(shape), copy=True)
                self._static[(name, bo_key, i)] = buf
            elif shared_nonstatic:
                key = (name, i, a.nbytes)
                buf = self._shared_bos.get(key)
                if buf is None:
                    buf = self._shared_bos[key] = np.zeros(shape, np.float32)
                buf[...] = a.reshape(shape)
            else:
                key = (bo_key, name, i)
                buf = self._private.get(key)
                if buf is None or buf.shape != shape:
                    buf = self._private[key] = np.zeros(shape, np.float32)
                buf[...] = a.reshape(shape)
            bufs.append(buf)
        run_kwargs = dict(backend_kwargs or {})
        emu_kernels.run_kernel(spec["kind"], bufs, run_kwargs, spec)
        self.profiler.record_kernel(name, time.perf_counter() - t0)
        if shared_nonstatic:
            return tuple(bufs)
        # Without shared buffers the caller gets its own copies of the outputs.
        outs = set(output_indices) if output_indices is not None else {len(bufs) - 1}
        return tuple(np.array(b, copy=True) if i in outs else b for i, b in enumerate(bufs))
