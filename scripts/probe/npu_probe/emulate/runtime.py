"""`--emulate`: the real tree's block on an emulated NPU (the CPU twins).

An emulated `air` runtime stands in for the NPU packages the tree's own
`KernelCache.load_and_run` imports inside itself: `pyxrt` (buffer objects whose
`map()` is a writable view of host memory, so the cache's zero-copy views and
shared buffers behave as on the device; `run(kernel)` whose `wait2()` runs the
ELF's twin on those buffers), `air.backend.xrt` (`XRTBackend.load`,
`XRTCompileArtifact`) and `filelock` (records the lock path; /tmp/npu.lock is
never touched). The tree's KernelCache, block function, buffer reuse, padding
and argument order all run unchanged; only what an ELF computes is the twin
(npu_probe.emulate.twins), looked up by ELF name in the model's entry of elf_boundaries.json.

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
- an injected bug (`--inject NAME`, twins.INJECTIONS) changes one stage
  of one ELF kind of the emulated NPU; the twins the bisect compares with stay
  clean.
"""


import contextlib
import os
import sys

import numpy as np

from npu_probe.emulate.air_modules import EmulatorError, build_modules
from npu_probe.emulate.table import eval_shape, launch_dims
from npu_probe.emulate import numerics
from npu_probe.emulate.twins import Injected, bf16_bits, from_bf16_bits, run_twin

MODULE_NAMES = ("pyxrt", "air", "air.backend", "air.backend.xrt", "filelock")
_MISSING = object()


class EmulatedNpu:
    """One emulated NPU for one model: its ELFs are the twins of the model's
    table entry. `hint` (set by npu_probe.lens.capture just before each load_and_run)
    gives the shapes and dtypes of the arrays the tree passed, so a twin sees
    them as the tree shaped them (head-first attention is 3-D)."""

    def __init__(self, spec, config, inject=None, real_len=None, num=None):
        self.spec = spec
        self.num = num if num is not None else numerics.DEFAULT
        self.config = config
        self.inject = inject
        self.real_len = real_len
        self.hint = None
        self.launches = []  # ELF names, in call order
        self.lock_paths = []
        self.modules = build_modules(self)

    def elf_names(self, cpu_attn):
        return [n for n in self.spec["elfs"] if not (cpu_attn and n == "flash_attn")]

    def execute(self, name, bos):
        elf = self.spec["elfs"].get(name)
        if elf is None:
            raise EmulatorError(f"emulated NPU: no twin for ELF {name!r} (the table lists {sorted(self.spec['elfs'])})")
        raws = [np.frombuffer(b.map(), dtype=np.uint8) for b in bos]
        hint = self.hint if self.hint is not None and self.hint[0] == name and len(self.hint[1]) == len(bos) else None
        dims, layout, roles = launch_dims(elf, hint[1] if hint else None, self.config)
        specs = {a["arg"]: a for a in roles.values()}
        if hint:
            shapes, codes = hint[1], hint[2]
            if "seq" not in dims:
                raise EmulatorError("emulated NPU: cannot tell seq_len from the arguments")
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
        bug = Injected(self.inject, self.real_len, prev) if self.inject is not None else None
        outs = run_twin(elf["kind"], vals, dims, layout=layout, bug=bug, num=self.num)
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


def _seq_from_bytes(specs, raws, dims):
    for i, a in specs.items():
        if "seq" in a["shape"] or any("seq" in e for e in a["shape"]):
            other = [e for e in a["shape"] if e != "seq"]
            per = int(np.prod(eval_shape(other, dims))) if other else 1
            if any("seq*" in e for e in a["shape"]):
                per = int(np.prod(eval_shape([e.replace("seq*", "") for e in a["shape"]], dims)))
            return raws[i].size // 2 // max(per, 1)
    raise EmulatorError("emulated NPU: cannot tell seq_len from the buffer sizes")

