"""One run's context, in parts: the frozen RunSpec (what block 0 runs on), the imported Model,
the PromptRecord and PlanFacts that only go into probe.json, and the RunState the run
accumulates. `probe check` builds them in its config stage (npu_probe.run.config); `probe
bisect` rebuilds the spec and the model from probe.json (npu_probe.bisect.rundir), so both
run block 0 from the same spec with the same code.

Plain records: nothing here imports numpy or the tree.
"""

import dataclasses
import time


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """What block 0 runs on, fixed once: the tree and model, the tokens, the padded length,
    attention, and where the kernels are compiled. probe.json records every field."""

    tree: object  # npu_probe.core.tree.Tree
    model_name: str  # what load_weights / build_runner take
    hf_id: str  # the HF reference id (None when the adapter names none)
    tokens: tuple  # the real token ids
    seq_len: int  # the padded length
    cpu_attn: bool
    cache_dir: str  # the prefill kernel cache dir the run compiles into
    build_dir: str  # where compile and run happen (make's BUILD_DIR)
    boundaries: bool = True  # the lens: NPU buffers read back, HF layer-0 hooks
    twins: object = None  # npu_probe.emulate.numerics.Numerics: how the CPU twins compute (None: the default)

    @property
    def real_len(self):
        return len(self.tokens)


@dataclasses.dataclass(frozen=True)
class Model:
    """The model as the tree's own code gives it, imported once."""

    adapter: object  # <model>.verify_adapter
    adapter_name: str
    config: object  # build_config()'s object (--emulate sets its dimensions from the checkpoint)
    cfg: dict  # probe.json model.config
    entry: object  # npu_probe.run.entry.Entry: the function that runs block 0
    prefill_mod: object = None  # <model>_prefill, if the file exists
    inference_mod: object = None  # <model>_inference, when there is no prefill module
    tokenizer: object = None  # the HF tokenizer the prompt went through (None: the adapter's tokenize)


@dataclasses.dataclass(frozen=True)
class PromptRecord:
    """probe.json `prompt`, but the token ids (RunSpec.tokens) and the lengths."""

    text: str
    source: str
    style: str
    tokenizer: str  # the tokenizer's label
    positions: dict = None  # --positions: how the N tokens were made


@dataclasses.dataclass(frozen=True)
class PlanFacts:
    """What the static plan found that probe.json repeats (npu_probe.plan.build.make_plan)."""

    defaults: dict = None  # probe.json `defaults`: make diagnosis, and where this run differs
    workarounds: tuple = ()  # seed Step 2 triggers, each with its prerequisite line
    step1: dict = None
    step2: dict = None
    coverage: dict = None
    compile_inputs: dict = None  # kernel_cache.inputs: what compile_all_kernels reads

    @classmethod
    def of(cls, plan, defaults=None, workarounds=()):
        plan = plan or {}
        return cls(defaults=defaults, workarounds=tuple(workarounds), step1=plan.get("step1"),
                   step2=plan.get("step2"), coverage=plan.get("coverage"),
                   compile_inputs=(plan.get("kernel_cache") or {}).get("inputs"))


@dataclasses.dataclass
class RunState:
    """What the run accumulates as it goes."""

    ref_kind: str  # hf-bf16 | emulated; the reference run may observe the other
    t_start: float = dataclasses.field(default_factory=time.monotonic)
    timings: dict = dataclasses.field(default_factory=dict)
    created_dirs: list = dataclasses.field(default_factory=list)  # dirs this run made in the tree
    emulation: object = None  # npu_probe.emulate.emulation.Emulation with --emulate
    # probe.json `emulate` for a tree that emulates its own NPU (air-mini) run with --emulate,
    # or with its bug variable set: the tree's own NPU ran, with this bug (no twins).
    own_emulation: dict = None


@dataclasses.dataclass(frozen=True)
class Started:
    """When the probe's clock started (probe.json timings.total counts from there, plan
    included) and how long the plan took; both None when not measured."""

    t0: float = None
    plan_seconds: float = None


@dataclasses.dataclass(frozen=True)
class RunContext:
    """Everything a stage takes, in place of the old 32-field RunContext."""

    options: object  # npu_probe.core.options.Options
    spec: RunSpec
    model: Model
    state: RunState
    log: object  # npu_probe.core.log.ProbeLog
    prompt: PromptRecord = None  # None in bisect (it writes no probe.json)
    facts: PlanFacts = PlanFacts()
