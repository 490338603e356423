"""The run-dir contract, Python side.

One source of truth for the probe: the schema name/version and the file names
inside a run dir. src/rundir/schema.ts holds the same values for TypeScript;
keep the two in step (test/rundir.test.ts compares them).
"""

PROBE_SCHEMA = "npu-block-gate/probe"
PROBE_SCHEMA_VERSION = 1

# Same keys as RUN_FILES in src/rundir/schema.ts.
RUN_FILES = {
    "probe": "probe.json",
    "npu": "block0.npu.npy",
    "ref": "block0.ref.npy",
    "input": "block0.input.npy",
    "report": "report.json",
    "markdown": "report.md",
    "probeLog": "probe.log",
}

PROBE_JSON = RUN_FILES["probe"]
NPU_NPY = RUN_FILES["npu"]
REF_NPY = RUN_FILES["ref"]
INPUT_NPY = RUN_FILES["input"]
PROBE_LOG = RUN_FILES["probeLog"]

TOOL_NAME = "npu-block-gate"
# Fallback when package.json is not beside the probe (probe copied on its own).
TOOL_VERSION_FALLBACK = "0.1.0"

STAGES = ("config", "block")

# `probe block --layers`: every layer's ffn_out, NPU (adapter runner) and HF,
# RUN_DIR/layers/layer_NN.{npu,ref}.npy (NN = layer index, 2 digits), listed in
# probe.json "layers" (null without --layers).
LAYERS_DIR = "layers"


def layer_file(li, side):
    """`layers/layer_03.npu.npy` (side: npu | ref), relative to the run dir."""
    return f"{LAYERS_DIR}/layer_{int(li):02d}.{side}.npy"

# `probe bisect` (seed Step 4): RUN_DIR/bisect/bisect.json plus one block
# output per swapped step, RUN_DIR/bisect/NN-<step>.npy (NN = index, 1-based).
BISECT_SCHEMA = "npu-block-gate/bisect"
BISECT_SCHEMA_VERSION = 1
BISECT_DIR = "bisect"
BISECT_JSON = "bisect.json"
BISECT_STAGE = "block"  # the probe.json stage bisect starts from
# The hook a model exposes in <model>_prefill.py (the contract lives in
# probe_bisect.py and scripts/probe/README.md "Bisect hook"):
#   bisect_steps(config, cpu_attn) -> [{"step", "kernel", "cpu_equivalent"}, ...]
#   <block entry>(..., cpu_steps={step, ...})
BISECT_HOOK = "bisect_steps"
BISECT_CPU_STEPS_KW = "cpu_steps"
BISECT_STEP_KEYS = ("step", "kernel", "cpu_equivalent")
INTEGRATION_PATHS = ("kernel-first", "inheritance", "adapter")
REFERENCE_KINDS = ("hf-bf16", "emulated")

# Exit codes shared with the TypeScript CLI (DESIGN.md "Outcome").
EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INFRA = 3

# mlir-air conventions.
LLMS_DIR_NAME = "llms"
PROGRAMMING_EXAMPLES = "programming_examples"
PROMPT_STYLES = ("base", "instruct")
DEFAULT_PROMPT_STYLE = "instruct"
SEQ_ALIGN = 64  # compile_all_kernels needs seq_len % 64 == 0
MAX_SEQ_DEFAULT = 2048  # production prefill ELFs are built for 2048
KERNEL_CACHE_SUBDIR = ("build_peano", "prefill_kernel_cache")
MANIFEST_FILE = "manifest.json"
# Written by the probe beside manifest.json after compile_all_kernels succeeds:
# {"schema", "compile_command"}. mlir-air's manifest does not know seq_len or
# cpu_attn; `block --reuse-kernels` refuses a cache whose stamp names another
# compile command (a cache without a stamp is trusted, as load_manifest does).
KERNEL_STAMP_FILE = "npu-block-gate.json"
KERNEL_STAMP_SCHEMA = "npu-block-gate/kernel-stamp"

# Seed Step 2 / "Update protocol": the line a workaround leaves for Phase 4/5.
WORKAROUND_PREREQUISITE = (
    "Phase 4/5 prerequisite: perf optimization must preserve the padded/bias wrappers"
)
