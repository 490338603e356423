"""What a plan is asked (`PlanRequest`, from the command line) and the machine it is asked on
(`Host`: environment, NPU device glob, Python version), each built once and passed whole."""

import dataclasses
import os
import platform


@dataclasses.dataclass(frozen=True)
class PlanRequest:
    model_dir: str
    air_root: str = None
    online: bool = False  # HF hub calls allowed (the plan records hf_offline = not online)
    model_choice: str = None  # --hf-model
    prompt: str = None
    prompt_style: str = None
    cpu_attn: bool = None  # None: what make diagnosis runs
    seq_len: int = None
    emulate_npu: bool = False  # --emulate: the NPU packages and device are the probe's emulation


@dataclasses.dataclass(frozen=True)
class Host:
    """The machine the plan reads. Tests pass a fixed one so the answers do not depend on this host."""

    environ: dict = None  # None: this process's environment
    device_glob: str = "/dev/accel/accel*"
    python_version: str = None  # None: the running interpreter's

    def env(self):
        return dict(os.environ if self.environ is None else self.environ)

    def python(self):
        return self.python_version or platform.python_version()
