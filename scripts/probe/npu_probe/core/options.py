"""The command line, read once into one frozen Options (every stage reads it, nothing changes it).
Standard library only: `plan` and `--help` run on an interpreter without numpy."""

import dataclasses

from npu_probe.core.contract import NPU_LOCK_TIMEOUT


@dataclasses.dataclass(frozen=True)
class Options:
    command: str
    # the model (every command but bisect)
    model_dir: str = None
    hf_config: str = None  # plan --hf-config
    air_root: str = None
    prompt: str = None
    prompt_style: str = None
    hf_model: str = None
    cpu_attn: bool = None  # None: what make diagnosis runs
    online: bool = False
    json: bool = False  # plan --json
    sanity: bool = False  # plan --sanity: Step 2's padded-vs-original check (torch)
    model_dirs: tuple = ()  # plans
    # config / block / check
    out: str = None
    seq_len: int = None
    verbose: bool = False
    positions: int = None
    emulate: bool = False
    inject: str = None
    boundaries: bool = True  # the lens (--no-boundaries turns it off)
    reuse_kernels: bool = False
    layers: bool = False
    ref_cache: str = None
    events: bool = False
    # how the CPU twins compute (the emulated NPU's, and the bisect's)
    twin_precision: str = "hw"
    twin_eps: str = "tree"
    # block / check / bisect
    npu_lock: str = None
    lock_timeout: float = NPU_LOCK_TIMEOUT
    # bisect
    run_dir: str = None

    @classmethod
    def from_args(cls, ns):
        """From argparse's namespace: each subcommand sets only its own options, the rest keep
        the defaults above."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in vars(ns).items() if k in known}
        if values.get("model_dirs") is not None:
            values["model_dirs"] = tuple(values["model_dirs"])
        return cls(**values)
