"""One --emulate run (`start`): the emulated NPU for the model's table entry, the registry shim,
a temporary kernel cache dir, and probe.json `emulate`."""

import dataclasses
import os
import shutil
import sys
import tempfile

from npu_probe.core.errors import ProbeError
from npu_probe.emulate.air_modules import RUNTIME_NAME
from npu_probe.emulate.registry import RegistryShim
from npu_probe.emulate.runtime import EmulatedNpu
from npu_probe.emulate.table import dims_of


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
            "twins": self.npu.num.record(),
        }

    def close(self):
        if self.registry is not None:
            self.registry.uninstall()
        if self.cache_dir and os.path.isdir(self.cache_dir):
            shutil.rmtree(self.cache_dir, ignore_errors=True)


def defaults_of(config):
    """The config class's own defaults (the production model), or None."""
    try:
        return type(config)()
    except Exception:  # not a dataclass with defaults: the registry shim maps nothing
        return None


def start(tree, config, spec, inject, run):
    """An Emulation for this model (the registry shim installed when the tree has a registry,
    mapping the config's tiny shapes to its class defaults' production shapes). `run` is
    (real_len, the twins' Numerics)."""
    real_len, num = run
    prod_config = defaults_of(config)
    if spec is None:
        raise ProbeError(tree.model_dir, f"--emulate needs the model in the ELF boundary table "
                         f"(scripts/probe/elf_boundaries.json); {tree.model} is not there")
    npu = EmulatedNpu(spec, config, inject=inject, real_len=real_len, num=num)
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
