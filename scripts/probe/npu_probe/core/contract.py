"""The run-dir contract, Python side: the constants shared with TypeScript and probe.json itself.

The constants come from scripts/probe/contract.json, which src/contract.ts reads too
(test/python/test_contract.py and test/contract.test.ts hold each side to it). probe.json is
built here, by `probe_json()`, which refuses any key contract.json's probe.keys (`PROBE_KEYS`)
does not declare, so a field cannot appear in a run dir without being declared.
"""

import json
import os

# scripts/probe: the package's parent, where contract.json and elf_boundaries.json live.
PROBE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CONTRACT_PATH = os.path.join(PROBE_DIR, "contract.json")
with open(_CONTRACT_PATH, encoding="utf-8") as _f:
    CONTRACT = json.load(_f)

PROBE_SCHEMA = CONTRACT["probe"]["schema"]
PROBE_SCHEMA_VERSION = CONTRACT["probe"]["version"]
STAGES = tuple(CONTRACT["probe"]["stages"])
PLAN_SCHEMA = CONTRACT["plan"]["schema"]
PLAN_SCHEMA_VERSION = CONTRACT["plan"]["version"]

RUN_FILES = dict(CONTRACT["run_files"])
PROBE_JSON = RUN_FILES["probe"]
NPU_NPY = RUN_FILES["npu"]
REF_NPY = RUN_FILES["ref"]
INPUT_NPY = RUN_FILES["input"]
PROBE_LOG = RUN_FILES["probeLog"]

TOOL_NAME = "npu-block-gate"
# Fallback when package.json is not beside the probe (probe copied on its own).
TOOL_VERSION_FALLBACK = "0.1.0"

# `--layers`: RUN_DIR/layers/layer_NN.{npu,ref}.npy, listed in probe.json "layers".
LAYERS_DIR = CONTRACT["layers_dir"]


def layer_file(li, side):
    """`layers/layer_03.npu.npy` (side: npu | ref), relative to the run dir."""
    return f"{LAYERS_DIR}/layer_{int(li):02d}.{side}.npy"


# `probe bisect` (seed Step 4): RUN_DIR/bisect/bisect.json plus NN-<step>.npy.
_B = CONTRACT["bisect"]
BISECT_SCHEMA = _B["schema"]
BISECT_SCHEMA_VERSION = _B["version"]
BISECT_DIR = _B["dir"]
BISECT_JSON = _B["json"]
BISECT_STAGE = _B["stage"]
BISECT_HOOK = _B["hook"]
BISECT_CPU_STEPS_KW = _B["cpu_steps_kw"]
BISECT_STEP_KEYS = tuple(_B["step_keys"])

BISECT_METHODS = tuple(_B["methods"])  # "hook" (bisect_steps, air-mini) | "twins" (CPU twins of the ELFs)
BISECT_RERUN = f"{BISECT_DIR}/{_B['rerun_file']}"  # block 0 re-run unswapped, before any swap


def launch_file(index, elf, buffer, side):
    """`bisect/launch-02-o_ffn-res1.npu.npy` (side: npu | twin); index is the launch's 1-based call order."""
    return f"{BISECT_DIR}/launch-{int(index):02d}-{_safe(elf)}-{_safe(buffer)}.{side}.npy"


def swap_file(index, elf):
    """`bisect/03-swap-o_ffn.npy`: ffn_out after swapping ELFs 1..index to their twins."""
    return f"{BISECT_DIR}/{int(index):02d}-swap-{_safe(elf)}.npy"


def _safe(name):
    import re  # noqa: PLC0415

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("._") or "x"


# The lens: RUN_DIR/boundaries/NN-<name>.{npu,ref}.npy, declared in probe.json "boundaries".
_L = CONTRACT["boundaries"]
BOUNDARIES_DIR = _L["dir"]
FP32_PREFIX = _L["fp32_cache_prefix"]  # the FP32 side's names in a reference cache entry (fp32.<name>)
BOUNDARY_LAYOUT = _L["layout"]
HF_CAPTURE = _L["hf_capture"]
# An emulated reference with no torch modules to hook gives layer 0's boundaries in its own record.
RECORD_CAPTURE = _L["record_capture"]


def boundary_file(order, name, side):
    """`boundaries/10-q_roped.npu.npy` (side: npu | ref), relative to the run dir."""
    return f"{BOUNDARIES_DIR}/{int(order):02d}-{_safe(name)}.{side}.npy"


EMULATE_INJECTIONS = tuple(CONTRACT["emulate"]["inject"])
TWIN_PRECISIONS = tuple(CONTRACT["emulate"]["twin_precision"])
TWIN_PRECISION_ALIASES = dict(CONTRACT["emulate"]["twin_precision_aliases"])
TWIN_EPS = tuple(CONTRACT["emulate"]["twin_eps"])

INTEGRATION_PATHS = tuple(CONTRACT["integration_paths"])
REFERENCE_KINDS = tuple(CONTRACT["reference_kinds"])

EXIT_OK = CONTRACT["exit"]["ok"]
EXIT_BAD_INPUT = CONTRACT["exit"]["input"]
EXIT_INFRA = CONTRACT["exit"]["infra"]
EXIT_NO_NUMPY = CONTRACT["exit"]["no_numpy"]

NPU_LOCK_PATH = CONTRACT["npu_lock"]["path"]
NPU_LOCK_ENV = CONTRACT["npu_lock"]["env"]
NPU_LOCK_TIMEOUT = float(CONTRACT["npu_lock"]["timeout_seconds"])
NPU_LOCK_PROGRESS = float(CONTRACT["npu_lock"]["progress_seconds"])

KERNEL_STAMP_FILE = CONTRACT["kernel_stamp"]["file"]
KERNEL_STAMP_SCHEMA = CONTRACT["kernel_stamp"]["schema"]
EVENT_PREFIX = CONTRACT["control"]["event_prefix"]

# mlir-air conventions.
LLMS_DIR_NAME = "llms"
PROGRAMMING_EXAMPLES = "programming_examples"
PROMPT_STYLES = ("base", "instruct")
SEQ_ALIGN = 64  # compile_all_kernels needs seq_len % 64 == 0
MAX_SEQ_DEFAULT = 2048  # production prefill ELFs are built for 2048
PREFILL_CACHE_NAME = "prefill_kernel_cache"
MANIFEST_FILE = "manifest.json"

# Seed Step 2 / "Update protocol": the line a workaround leaves for Phase 4/5,
# used when the plan cannot say what the tree's own code does.
WORKAROUND_PREREQUISITE = (
    "Phase 4/5 prerequisite: perf optimization must preserve the padded/bias wrappers"
)

# probe.json: every key it may hold (contract.json probe.keys). A dict value declares a nested
# object's keys; None a leaf (any JSON value, including objects whose keys are data: config
# fields, timings, toolchain ids). probe_json() refuses anything else; src/rundir/probe-spec.ts
# types the same keys.
PROBE_KEYS = CONTRACT["probe"]["keys"]

# The reference cache's layout and the HF hub's rules: npu_probe.reference.refcache and
# npu_probe.core.hfhub read them.
REF_CACHE = CONTRACT["reference_cache"]
HF_HUB = CONTRACT["hf_hub"]


def undeclared_keys(doc, decl=None, prefix=""):
    """Dotted paths of keys in `doc` that PROBE_KEYS does not declare."""
    decl = PROBE_KEYS if decl is None else decl
    out = []
    for key, value in doc.items():
        path = f"{prefix}{key}"
        if key not in decl:
            out.append(path)
        elif isinstance(decl[key], dict) and isinstance(value, dict):
            out.extend(undeclared_keys(value, decl[key], path + "."))
    return out


def probe_json(**parts):
    """probe.json from its parts, in the declared key order. Every key must be
    declared (a bug here is the probe's, so it raises rather than writes)."""
    doc = {"schema": PROBE_SCHEMA, "schema_version": PROBE_SCHEMA_VERSION}
    for key in PROBE_KEYS:
        if key in parts:
            doc[key] = parts.pop(key)
    if parts:
        raise KeyError(f"probe.json: undeclared top-level keys {sorted(parts)}")
    bad = undeclared_keys(doc)
    if bad:
        raise KeyError(f"probe.json: undeclared keys {bad}")
    return doc
