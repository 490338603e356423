"""The emulated NPU packages the tree's KernelCache imports inside load_and_run: `pyxrt` (buffer
objects whose map() is host memory; a run's wait2() executes the ELF's twin), `air.backend.xrt`
(XRTBackend, XRTCompileArtifact) and `filelock` (the lock path is only recorded)."""

import dataclasses
import os
import types

RUNTIME_NAME = "npu-block-gate emulated air runtime (CPU twins)"


class EmulatorError(RuntimeError):
    pass


def build_modules(npu):
    """{module name: module} of the emulated runtime; `npu.execute(name, bos)` runs a launch."""
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
