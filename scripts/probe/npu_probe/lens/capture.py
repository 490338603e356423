"""NPU-side capture: the probe's own KernelCache, its `load_and_run` wrapped.

`LaunchRecorder.install(cache)` replaces `load_and_run` on THIS instance only
(an instance attribute; the tree and its class are untouched). For an ELF the
boundary table covers, each call:
- copies every argument the tree passes, except the static ones (weights,
  LUTs: host arrays the tree never rewrites, kept by reference), before the
  launch: that is what the launch is given;
- asks the real load_and_run to read back every non-static buffer (the
  intermediate ones too: `output_indices` extended; the real cache syncs only
  the indices listed there), and copies each at once, because the next launch
  reuses those buffers (shared_nonstatic=True);
- returns exactly what the tree asked for: the requested indices as the cache
  returned them, empty arrays elsewhere.
For an ELF the table does not cover (or with capture off) it only notes the
name. `swap` (the swap-forward bisect) answers named ELFs with their clean CPU
twin instead of the NPU.

npu_probe.lens.boundaries turns the captured launches into lens boundaries.
"""
import dataclasses

import numpy as np

from npu_probe.emulate.table import launch_dims
from npu_probe.emulate.twins import input_roles, run_twin


@dataclasses.dataclass
class Launch:
    index: int  # 0-based, call order within the recorder's lifetime
    name: str  # ELF name
    occurrence: int  # how many launches of this ELF came before it
    shapes: list
    dtypes: list
    static: set
    inputs: dict  # arg index -> array given to the launch (copies; statics by reference)
    outputs: dict  # arg index -> copy of the buffer read back after the launch (non-static args)
    swapped: bool = False  # answered by the CPU twin (swap-forward)


def _copy(a):
    return np.array(a, copy=True)


class LaunchRecorder:
    def __init__(self, spec=None, config=None, capture=True, emulator=None, num=None):
        self.spec = spec  # the model's table entry, or None
        self.num = num  # how the swap-forward twins compute (npu_probe.emulate.numerics.Numerics)
        self.config = config
        self.capture = bool(capture and spec is not None)
        self.emulator = emulator
        self.names = []  # every load_and_run name, in call order
        self.launches = []  # captured launches
        self.swap = set()  # ELF names answered by their clean twin
        self._orig = None

    def covered(self, name):
        return self.spec is not None and name in self.spec.get("elfs", {})

    def install(self, cache):
        orig = getattr(cache, "load_and_run", None)
        if not callable(orig):
            return False
        self._orig = orig

        def load_and_run(*args, **kwargs):
            return self.load_and_run(*args, **kwargs)

        try:
            cache.load_and_run = load_and_run
        except (AttributeError, TypeError):
            return False
        return True

    def reset(self):
        self.names, self.launches = [], []

    def load_and_run(self, name, backend_kwargs, *inputs, **kwargs):
        """As KernelCache.load_and_run(name, backend_kwargs, *inputs, output_indices=None,
        static_input_indices=None, intermediate_indices=None, ...)."""
        output_indices = kwargs.pop("output_indices", None)
        static_input_indices = kwargs.pop("static_input_indices", None)
        kwargs.setdefault("intermediate_indices", None)
        self.names.append(name)
        covered = isinstance(name, str) and self.covered(name)
        if covered and name in self.swap:
            return self._twin_call(name, inputs, output_indices)
        if not covered or not self.capture:
            if covered and self.emulator is not None:
                self.emulator.hint = (name, [np.shape(a) for a in inputs], [_code(a) for a in inputs])
            return self._orig(name, backend_kwargs, *inputs, output_indices=output_indices,
                              static_input_indices=static_input_indices, **kwargs)
        static = set(static_input_indices or ())
        n = len(inputs)
        requested = {n - 1} if output_indices is None else set(output_indices)
        given = {i: (a if i in static else _copy(a)) for i, a in enumerate(inputs)}
        readback = sorted(set(range(n)) - static | requested)
        if self.emulator is not None:
            self.emulator.hint = (name, [np.shape(a) for a in inputs], [_code(a) for a in inputs])
        results = self._orig(name, backend_kwargs, *inputs, output_indices=readback,
                             static_input_indices=static_input_indices, **kwargs)
        outputs = {i: _copy(results[i]) for i in readback if i < len(results)}
        self.launches.append(Launch(
            index=len(self.launches), name=name, occurrence=sum(1 for la in self.launches if la.name == name),
            shapes=[tuple(np.shape(a)) for a in inputs], dtypes=[_code(a) for a in inputs], static=static,
            inputs=given, outputs=outputs))
        return tuple(results[i] if i in requested else np.empty(0, dtype=np.asarray(inputs[i]).dtype)
                     for i in range(len(results)))

    def _twin_call(self, name, inputs, output_indices):
        """The clean twin instead of the NPU: what load_and_run would return (1-D
        arrays of the argument's dtype at the requested indices, empty elsewhere)."""
        elf = self.spec["elfs"][name]
        shapes = [tuple(np.shape(a)) for a in inputs]
        outs, specs = twin_launch(elf, {i: a for i, a in enumerate(inputs)}, shapes, self.config, self.num)
        n = len(inputs)
        requested = {n - 1} if output_indices is None else set(output_indices)
        by_arg = {specs[r]["arg"]: v for r, v in outs.items() if r in specs}
        res = []
        for i, a in enumerate(inputs):
            dt = np.asarray(a).dtype
            if i not in requested:
                res.append(np.empty(0, dtype=dt))
            elif i in by_arg:
                res.append(np.asarray(by_arg[i], dtype=np.float32).reshape(-1).astype(dt))
            else:
                res.append(np.array(a, copy=True).reshape(-1))
        self.launches.append(Launch(index=len(self.launches), name=name,
                                    occurrence=sum(1 for la in self.launches if la.name == name), shapes=shapes,
                                    dtypes=[_code(a) for a in inputs], static=set(), inputs={}, outputs={},
                                    swapped=True))
        return tuple(res)


def _code(a):
    dt = np.asarray(a).dtype
    if dt.name == "bfloat16":
        return "bf16"
    if dt == np.float32:
        return "f32"
    return dt.str


def twin_launch(elf, given, shapes, config, num=None):
    """The clean twin of one launch from the arrays it was given: ({role: f32 array}, {role: arg spec});
    `num` how the twin computes (None: the default numerics)."""
    dims, layout, specs = launch_dims(elf, shapes, config)
    vals = {r: np.asarray(given[specs[r]["arg"]]).reshape(shapes[specs[r]["arg"]])
            for r in input_roles(elf["kind"]) if r in specs and specs[r]["arg"] in given}
    return run_twin(elf["kind"], vals, dims, layout=layout, **({"num": num} if num is not None else {})), specs
