import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);

// src/contract.ts
import { join } from "node:path";

// scripts/probe/contract.json
var contract_default = {
  comment: "Facts shared by the Python probe (npu_probe.core.contract, npu_probe.core.hfhub, npu_probe.reference.refcache) and the TypeScript side (src/contract.ts and the modules that import it). One source of truth: change them here only; test/contract.test.ts and test/python/test_contract.py hold each side's behaviour to this file.",
  exit: { ok: 0, fail: 1, input: 2, infra: 3, no_numpy: 4 },
  probe: {
    schema: "npu-block-gate/probe",
    version: 1,
    stages: ["config", "block"],
    keys_comment: "Every key probe.json may hold: an object declares a nested object's keys, null a leaf (any JSON value, including objects whose keys are data: config fields, timings, toolchain ids). The probe refuses to write a key not declared here (npu_probe.core.contract.probe_json); src/rundir/probe-spec.ts types each key and refuses to load if its keys and these differ.",
    keys: {
      schema: null,
      schema_version: null,
      stage: null,
      created_at: null,
      tool: { name: null, version: null },
      model: { name: null, dir: null, hf_id: null, config: null },
      prompt: {
        style: null,
        text: null,
        source: null,
        token_ids: null,
        real_len: null,
        padded_len: null,
        tokenizer: null,
        positions: null
      },
      defaults: { differs: null, make_diagnosis: null },
      integration: {
        path: null,
        entry: null,
        runner: null,
        reason: null,
        kernels: null,
        tiles: null,
        workarounds: null,
        cpu_attn: null,
        step1: null,
        step2: null,
        coverage: null,
        defined_in: null
      },
      reference: {
        kind: null,
        runner: null,
        lite_mode: null,
        dtype: null,
        model_id: null,
        transformers: null,
        torch: null,
        cache: null,
        hub_offline: null
      },
      environment: {
        python: null,
        python_executable: null,
        numpy: null,
        platform: null,
        device: null,
        xrt: null,
        npu: null,
        toolchain: null,
        git_commit: null,
        air_root: null
      },
      timings: null,
      kernel_cache: {
        dir: null,
        key: null,
        hit: null,
        seconds_saved: null,
        entries: null,
        seq_len: null,
        cpu_attn: null,
        toolchain: null,
        compile_command: null,
        compiled: null,
        reused: null,
        compile_seconds: null,
        manifest_loaded: null,
        inputs: null
      },
      tensors: { npu: null, ref: null, input: null },
      bisect: null,
      layers: null,
      boundaries: {
        source: null,
        table: null,
        emulated: null,
        reference: null,
        layout: null,
        entries: null,
        unpaired: null,
        fp32: null,
        twin: null,
        norm_eps: null
      },
      emulate: {
        runtime: null,
        inject: null,
        config_from: null,
        config_changes: null,
        artifacts: null,
        registry: null,
        launches: null,
        compile: null,
        twins: null
      },
      step2_sanity: null
    }
  },
  plan: { schema: "npu-block-gate/plan", version: 1 },
  run_files: {
    probe: "probe.json",
    npu: "block0.npu.npy",
    ref: "block0.ref.npy",
    input: "block0.input.npy",
    report: "report.json",
    markdown: "report.md",
    html: "report.html",
    probeLog: "probe.log"
  },
  layers_dir: "layers",
  bisect: {
    schema: "npu-block-gate/bisect",
    version: 1,
    dir: "bisect",
    json: "bisect.json",
    stage: "block",
    hook: "bisect_steps",
    cpu_steps_kw: "cpu_steps",
    step_keys: ["step", "kernel", "cpu_equivalent"],
    methods: ["hook", "twins"],
    rerun_comment: "Before any swap, block 0 runs once more exactly as the run judged it; its ffn_out is rerun.file and the judge requires block0.npu.npy back (bit for bit, or within tolerance_rel_l2 of it: the relative L2 of the difference), else the bisect is void.",
    rerun_file: "00-rerun.npy",
    rerun_tolerance_rel_l2: 1e-3
  },
  boundaries: {
    comment: "The lens (probe block/check): RUN_DIR/boundaries/NN-<name>.{npu,ref}.npy, NN = the boundary's block order (2 digits), declared in probe.json 'boundaries'; every file has the 'layout' below.",
    dir: "boundaries",
    layout: "seq-first float32 [real_len, features]: rows = the real positions, columns = features with heads contiguous (head h at h*head_dim..), padding columns sliced off",
    hf_capture: "hf-layer0-hooks/1",
    record_capture: "reference-layer0-record/1",
    fp32_comment: "The error budget's FP32 side: HF layer 0 in float32 from the same weights and tokens, NN-<name>.fp32.npy beside the pair (entries[].fp32, null when missing); a reference cache entry holds it as boundary_fp32.<name>.npy.",
    fp32_cache_prefix: "fp32.",
    twin_comment: "The error budget's expected side: the hardware twins (precision hw, the run's RMSNorm eps) run again over block 0's captured launches from the FP32 block input, NN-<name>.twin.npy beside an fp32 side (entries[].twin, null when no twin wrote that boundary); boundaries.twin says how they computed. The budget warns on error(NPU vs FP32) / error(twins vs FP32).",
    norm_eps_comment: "The tree's RMSNorm eps (the ELFs' constant, with its file and line) against the checkpoint config.json's rms_norm_eps (boundaries.norm_eps, null when either is unknown): a mismatch is a known upstream finding the lens accounts for."
  },
  emulate: {
    comment: "--emulate: the tree's own block on the probe's emulated air runtime (CPU twins of the ELFs), or on a tree whose NPU is itself emulated (the AIR_MINI marker: examples/air-mini) on that tree's own; probe.json 'emulate' is non-null and every report must mark the run emulated. --inject names one bug of the emulated NPU: the same names on both.",
    inject: ["transposed_q_weight", "missing_causal_mask", "interleaved_rope", "rope_k_only", "ignored_rmsnorm_weight", "ignored_ffn_norm_weight", "dropped_bias", "stale_tail", "nan_row", "nan_padded", "scale_drift"],
    twin_precision_comment: "How the CPU twins round (the emulated NPU's and the bisect's): hw, the default, bf16's roundings plus the BFP16 block-float operand cast (v64bfp16ebs8) on exactly the GEMMs and FlashAttention matmuls the tree compiles with bfp16=True; bf16, where the registry's kernels round in bf16 (each per programming_examples/kernel_registry/details/*, listed in npu_probe.emulate.numerics) with exact bf16 matmul operands; fp32, float32 inside a launch, bf16 only at the ELF's buffers. probe.json emulate.twins and bisect.json twins record it (with the RMSNorm eps: the ELFs' own, or with --twin-eps config the checkpoint config.json's rms_norm_eps); a record saying hardware (the name bf16 had before hw) is read through twin_precision_aliases.",
    twin_precision: ["fp32", "bf16", "hw"],
    twin_precision_aliases: { hardware: "bf16" },
    twin_eps: ["tree", "config"]
  },
  npu_lock: { path: "/tmp/mlir-air-npu.lock", env: "NPU_BLOCK_GATE_NPU_LOCK", timeout_seconds: 1800, progress_seconds: 15 },
  kernel_stamp: { file: "npu-block-gate.json", schema: "npu-block-gate/kernel-stamp" },
  reference_cache: {
    comment: 'The reference cache (DESIGN.md "Caches"): <root>/<key>/ holds layer_file per layer taken, boundary_file per lens boundary and meta (with meta_keys). The probe only reads it (npu_probe.reference.refcache); the trusted process writes an entry after the verdict (src/cache/reference.ts). root: --ref-cache, else env_root, else <env_cache_dir>/<subdir>, else ~/<default_root>; off_value turns it off.',
    env_root: "NPU_BLOCK_GATE_REF_CACHE",
    env_cache_dir: "NPU_BLOCK_GATE_CACHE_DIR",
    subdir: "reference",
    default_root: ".cache/npu-block-gate/reference",
    off_value: "none",
    key_hex_chars: 32,
    layer_file: "layer_{NN}.npy",
    boundary_file: "boundary_{name}.npy",
    meta: "meta.json",
    meta_keys: ["key", "inputs", "kind", "stored_layers", "stored_boundaries", "created_at"]
  },
  hf_hub: {
    comment: "The local HF hub cache, as huggingface_hub finds it: the first of cache_env that is set, else $<home_env>/<home_hub>, else ($<xdg_env> or ~/<user_cache>)/<xdg_subdir>/<home_hub>. A model is <repo_prefix><org><repo_sep><name>/<ref> naming a revision under <snapshots>/. Offline: any of offline_env true (true_values, any case); the probe sets offline_env and offline_also to 1 unless --online.",
    cache_env: ["HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"],
    home_env: "HF_HOME",
    home_hub: "hub",
    xdg_env: "XDG_CACHE_HOME",
    user_cache: ".cache",
    xdg_subdir: "huggingface",
    repo_prefix: "models--",
    repo_sep: "--",
    ref: "refs/main",
    snapshots: "snapshots",
    offline_env: ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"],
    offline_also: ["HF_HUB_DISABLE_XET"],
    true_values: ["1", "ON", "YES", "TRUE"]
  },
  integration_paths: ["kernel-first", "inheritance", "adapter"],
  reference_kinds: ["hf-bf16", "emulated"],
  control: {
    comment: "`probe check` talks to the TypeScript side on stderr lines starting with event_prefix (one JSON object each) and waits for one JSON line on stdin after the 'knobs' event (the tree's environment knobs; answer {env: {NAME: value}}, sent before any tree code runs) and after the 'config' event (answer {reuse_kernels: bool}).",
    event_prefix: "probe-event: "
  },
  npu: {
    comment: "NPU generations. pci: 'device:revision' of the AMD (1022) NPU, as amd/xdna-driver's amdxdna_pci_drv.c maps them to a driver family (npu1 ...); names: what the driver calls the device (sysfs vbnv, the xrt-smi device table). One rule on both sides (the agent, the probe, the records): the driver's board name first, then the PCI id (boards share PCI ids: amd/xdna-driver 01891bd5 names the board from the firmware, npu4_regs.c maps Strix, Krackan and Gorgon Point revisions to names). Hawk Point has Phoenix's PCI id and is told apart by the CPU model (cpu: a regular expression over /proc/cpuinfo's model name, the Ryzen 8040 series). A record names the generation by id; an emulated run names none.",
    generations: [
      { id: "phoenix", name: "Phoenix", family: "npu1", pci: ["1502:00"], names: ["RyzenAI-npu1", "NPU Phoenix"] },
      { id: "hawk-point", name: "Hawk Point", family: "npu1", pci: [], names: ["NPU Hawk Point"], refines: "phoenix", cpu: "\\b8[0-9]4[05](HS|H|U)?\\b" },
      { id: "npu2", name: "NPU2 (pre-production Strix)", family: "npu2", pci: ["17f0:00"], names: ["RyzenAI-npu2"] },
      { id: "strix", name: "Strix", family: "npu4", pci: ["17f0:10"], names: ["RyzenAI-npu4", "NPU Strix"] },
      { id: "strix-halo", name: "Strix Halo", family: "npu5", pci: ["17f0:11"], names: ["RyzenAI-npu5", "NPU Strix Halo"] },
      { id: "krackan", name: "Krackan", family: "npu6", pci: ["17f0:20"], names: ["RyzenAI-npu6", "NPU Krackan", "NPU Kracken"] },
      { id: "gorgon-point", name: "Gorgon Point", family: "npu4", pci: [], names: ["NPU Gorgon Point"] },
      { id: "npu3", name: "NPU3 (AIE4)", family: "npu3", pci: ["17f1:10", "17f2:10", "17f3:10", "1b0a:00", "1b0b:00", "1b0c:00"], names: ["RyzenAI-npu3"] },
      { id: "npu9", name: "NPU9", family: "npu9", pci: ["17f1:13", "17f2:13", "17f3:13"], names: ["RyzenAI-npu9"] },
      { id: "npu10", name: "NPU10", family: "npu10", pci: ["17f1:14", "17f2:14", "17f3:14"], names: ["RyzenAI-npu10"] },
      { id: "npu11", name: "NPU11", family: "npu11", pci: ["17f1:15", "17f2:15", "17f3:15"], names: ["RyzenAI-npu11"] }
    ]
  }
};

// src/contract.ts
var CONTRACT = contract_default;
var EXIT_CODES = contract_default.exit;
var PROBE = contract_default.probe;
var RUN_FILES_CONTRACT = contract_default.run_files;
var BISECT_CONTRACT = contract_default.bisect;
var NPU_LOCK = contract_default.npu_lock;
var EVENT_PREFIX = contract_default.control.event_prefix;
var PROBE_KEYS = contract_default.probe.keys;
var REF_CACHE = contract_default.reference_cache;
var HF_HUB = contract_default.hf_hub;
var FP32_PREFIX = contract_default.boundaries.fp32_cache_prefix;
function hfHome(env, home) {
  return env[HF_HUB.home_env] || join(env[HF_HUB.xdg_env] || join(home, HF_HUB.user_cache), HF_HUB.xdg_subdir);
}
function hfHubCache(env, home) {
  for (const v of HF_HUB.cache_env) if (env[v]) return env[v];
  return join(hfHome(env, home), HF_HUB.home_hub);
}
function hfOffline(env) {
  return HF_HUB.offline_env.some((v) => HF_HUB.true_values.includes((env[v] ?? "").trim().toUpperCase()));
}

// src/errors.ts
var EXIT = { pass: EXIT_CODES.ok, fail: EXIT_CODES.fail, input: EXIT_CODES.input, infra: EXIT_CODES.infra };
var EXIT_BUSY = 75;
function escapeControls(s) {
  return s.replace(/[ \t]*(\r\n|[\r\n\u2028\u2029])[ \t]*/g, " ").replace(/\t/g, " ").replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}
var GateError = class extends Error {
  exitCode;
  file;
  constructor(message, exitCode, file) {
    super(escapeControls(file ? `${file}: ${message}` : message));
    this.exitCode = exitCode;
    this.file = file;
  }
};
var InputError = class extends GateError {
  constructor(message, file) {
    super(message, EXIT.input, file);
    this.name = "InputError";
  }
};
var InfraError = class extends GateError {
  constructor(message, file) {
    super(message, EXIT.infra, file);
    this.name = "InfraError";
  }
};
var BusyError = class extends GateError {
  constructor(message, file) {
    super(message, EXIT_BUSY, file);
    this.name = "BusyError";
  }
};
function oneLine(err) {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.replace(/\s*\n\s*/g, " ").trim();
}
var INFRA_ERRNO = /* @__PURE__ */ new Set(["ENOSPC", "EDQUOT", "EIO", "EMFILE", "ENFILE", "ENOMEM", "EBUSY", "ETXTBSY"]);
function errnoWords(code2) {
  switch (code2) {
    case "ENOSPC":
      return "disk full";
    case "EDQUOT":
      return "disk quota exceeded";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EROFS":
      return "read-only file system";
    case "EISDIR":
      return "is a directory, not a file";
    case "ENOTDIR":
      return "a part of the path is a file, not a directory";
    case "EEXIST":
      return "already exists";
    case "ENOENT":
      return "no such file or directory";
    case "ELOOP":
      return "too many levels of symbolic links";
    case "ENAMETOOLONG":
      return "file name too long";
    case "EIO":
      return "input/output error";
    case "EMFILE":
    case "ENFILE":
      return "too many open files";
    case "ENOMEM":
      return "out of memory";
    case "EBUSY":
    case "ETXTBSY":
      return "file busy";
    case "EXDEV":
      return "crosses file systems";
    default:
      return code2 ? `system error ${code2}` : "unknown error";
  }
}
function fsError(err, path, doing, tail = "") {
  if (err instanceof GateError) return err;
  const code2 = err?.code;
  const msg = `${doing}: ${errnoWords(code2)}${tail}`;
  return code2 && !INFRA_ERRNO.has(code2) ? new InputError(msg, path) : new InfraError(msg, path);
}

// src/probe/env.ts
var BASE_NAMES = [
  "PATH",
  "HOME",
  "LANG",
  "LANGUAGE",
  "TZ",
  "TERM",
  "PYTHONPATH",
  "PYTHONHOME",
  "LD_LIBRARY_PATH",
  "HF_HOME",
  "HF_HUB_CACHE",
  "HUGGINGFACE_HUB_CACHE",
  "HF_HUB_OFFLINE",
  "TRANSFORMERS_OFFLINE",
  "HF_DATASETS_OFFLINE",
  "OMP_NUM_THREADS",
  "MKL_NUM_THREADS",
  "OPENBLAS_NUM_THREADS",
  // What the probe itself reads: the NPU lock (shared with the mlir-air skills), its umask under uid isolation.
  "NPU_BLOCK_GATE_NPU_LOCK",
  "NPU_BLOCK_GATE_UMASK"
];
var FAMILIES = /^(LC_[A-Z]+|XILINX\w*|XRT_\w+|AIE\w*|AIR_\w+|MLIR_\w+|PEANO_\w+|VITIS\w*)$/;
var CREDENTIAL_NAME = /(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|CREDS|API_?KEY|KEY|ACCESS_KEY(_ID)?|PRIVATE_KEY|AUTH|PAT)(_|$)/i;
var ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
function allowed(name, o = {}) {
  if (BASE_NAMES.includes(name) || o.names?.includes(name)) return true;
  if (CREDENTIAL_NAME.test(name)) return false;
  return FAMILIES.test(name) || !!o.knobs?.includes(name);
}
function probeEnv(env, o = {}) {
  const out = {};
  for (const [k, v] of Object.entries(env)) if (v !== void 0 && allowed(k, o)) out[k] = v;
  return out;
}
function hubHome(env, home) {
  const h = env.HOME || home;
  if (h) return h;
  const placed = HF_HUB.cache_env.some((v) => env[v]) || env[HF_HUB.home_env] || env[HF_HUB.xdg_env];
  return placed ? "" : null;
}
function hubCacheOf(env, home) {
  const h = hubHome(env, home);
  return h === null ? null : hfHubCache(env, h);
}
function hfHomeOf(env, home) {
  const h = env.HOME || home || (env[HF_HUB.home_env] || env[HF_HUB.xdg_env] ? "" : null);
  return h === null ? null : hfHome(env, h);
}
function parseEnvNames(raw) {
  const names = [];
  const bad = [];
  for (const n of raw.split(/[\s,]+/).filter(Boolean)) (ENV_NAME.test(n) ? names : bad).push(n);
  return { names: [...new Set(names)], bad };
}

// src/probe/python.ts
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync as readFileSync3, realpathSync as realpathSync3, statSync as statSync3 } from "node:fs";
import { delimiter, dirname as dirname3, isAbsolute, join as join3, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { constants as osConstants } from "node:os";

// src/probe/bounded.ts
import { spawn } from "node:child_process";
var EXIT_GRACE_MS = 2e3;
var killGroup = (pid, sig) => {
  if (!pid) return;
  try {
    process.kill(-pid, sig);
  } catch {
  }
};
function runBounded(command, args, o) {
  const grace = o.graceMs ?? EXIT_GRACE_MS;
  const cap = o.maxChars ?? 1 << 20;
  return new Promise((done) => {
    const r = { status: null, signal: null, stdout: "", stderr: "", timedOut: false, heldOpen: false, error: null, answered: false };
    let child;
    try {
      child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], cwd: o.cwd, env: o.env, detached: true });
    } catch (e) {
      r.error = e;
      return done(r);
    }
    let exited = false;
    let finished = false;
    let graceTimer = null;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      if (graceTimer) clearTimeout(graceTimer);
      killGroup(child.pid, "SIGKILL");
      child.stdout?.destroy();
      child.stderr?.destroy();
      done(r);
    };
    o.signal?.addEventListener("abort", () => {
      killGroup(child.pid, "SIGKILL");
      finish();
    }, { once: true });
    const timer = setTimeout(() => {
      r.timedOut = !exited;
      killGroup(child.pid, "SIGKILL");
      setTimeout(finish, 200).unref();
    }, o.timeoutMs);
    child.stdout.setEncoding("utf8").on("data", (d) => {
      if (r.stdout.length < cap) r.stdout += d;
      if (!exited && o.until?.(r.stdout)) {
        r.answered = true;
        finish();
      }
    });
    child.stderr.setEncoding("utf8").on("data", (d) => {
      if (r.stderr.length < cap) r.stderr += d;
    });
    child.on("error", (e) => {
      r.error ??= e;
      finish();
    });
    child.on("exit", (status, signal) => {
      exited = true;
      r.status = status;
      r.signal = signal;
      graceTimer = setTimeout(() => {
        r.heldOpen = true;
        finish();
      }, grace);
    });
    child.on("close", finish);
  });
}

// src/probe/answers.ts
import { closeSync as closeSync2, openSync as openSync2, readFileSync as readFileSync2, readSync as readSync2, realpathSync as realpathSync2, statSync as statSync2 } from "node:fs";

// src/fs/atomic.ts
import {
  closeSync,
  copyFileSync,
  fstatSync,
  fsyncSync,
  fchmodSync,
  fchownSync,
  linkSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync
} from "node:fs";
import { basename, dirname as dirname2, join as join2 } from "node:path";

// src/fs/read.ts
import { readSync } from "node:fs";
function readWhole(fd, size) {
  const buf = Buffer.alloc(size);
  let done = 0;
  while (done < size) {
    const n = readSync(fd, buf, done, size - done, done);
    if (n === 0) break;
    done += n;
  }
  return buf.subarray(0, done);
}
function kindOf(st) {
  if (st.isFile()) return "a regular file";
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO (named pipe)";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isSocket()) return "a socket";
  if (st.isSymbolicLink()) return "a symlink";
  return "a special file";
}

// src/fs/mkdir.ts
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
function makeDirs(dir) {
  try {
    return mkdirSync(dir, { recursive: true });
  } catch (e) {
    if (e.code !== "ENOENT") throw e;
  }
  const missing = [];
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    missing.unshift(d);
  }
  let first;
  for (const d of missing) {
    try {
      mkdirSync(d);
      first ??= d;
    } catch (e) {
      if (e.code === "EEXIST") continue;
      throw e;
    }
  }
  return first;
}

// src/fs/atomic.ts
var NOTHING_CHANGED = "; nothing was changed";
function resolveTarget(path, follow = true) {
  let l;
  try {
    l = lstatSync(path);
  } catch (e) {
    if (e.code === "ENOENT") return { path, real: path, stat: null };
    throw fsError(e, path, "cannot read");
  }
  let real = path;
  if (l.isSymbolicLink() && !follow) return { path, real: path, stat: null };
  if (l.isSymbolicLink()) {
    try {
      real = realpathSync(path);
    } catch (e) {
      const code2 = e.code;
      if (code2 === "ENOENT") throw new InputError("is a symlink to a missing file (npu-block-gate writes through a symlink, never replaces it)", path);
      throw fsError(e, path, "cannot resolve the symlink");
    }
  }
  const st = real === path ? l : statSync(real);
  if (!st.isFile()) throw new InputError(`is ${kindOf(st)}, not a regular file`, path);
  return { path, real, stat: st };
}
function stampOf(st) {
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs };
}
function stampNow(real) {
  try {
    return stampOf(statSync(real, { bigint: true }));
  } catch (e) {
    if (e.code === "ENOENT") return null;
    throw e;
  }
}
var sameStamp = (a, b) => a === null || b === null ? a === b : a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
function readStamped(path) {
  const t = resolveTarget(path);
  if (!t.stat) return null;
  let fd;
  try {
    fd = openSync(t.real, "r");
  } catch (e) {
    throw fsError(e, path, "cannot read");
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    return { data: readWhole(fd, Number(st.size)), stamp: stampOf(st) };
  } catch (e) {
    throw fsError(e, path, "cannot read");
  } finally {
    closeSync(fd);
  }
}
function readDocument(path) {
  return readStamped(path)?.data ?? null;
}
var ChangedSinceRead = class extends InfraError {
  constructor(path) {
    super(`changed since npu-block-gate read it (an edit saved while it was writing?)${NOTHING_CHANGED}`, path);
    this.name = "ChangedSinceRead";
  }
};
var writeHooks = {};
function mountOf(path) {
  let info;
  let real;
  try {
    real = realpathSync(path);
    info = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return null;
  }
  const unescape = (s) => s.replace(/\\([0-7]{3})/g, (_m, o) => String.fromCharCode(parseInt(o, 8)));
  let found = null;
  for (const line of info.split("\n")) {
    const f = line.split(" ");
    if (f.length > 5 && unescape(f[4]) === real) found = { ro: f[5].split(",").includes("ro") };
  }
  return found;
}
function checkWritable(t) {
  if (t.stat && (t.stat.mode & 146) === 0) {
    throw new InputError(`is read-only (mode ${(t.stat.mode & 4095).toString(8).padStart(4, "0")}); npu-block-gate never overwrites a read-only file: make it writable, or pass --no-docs${NOTHING_CHANGED}`, t.path);
  }
}
var tmpTag = () => Math.floor(Math.random() * 4294967296).toString(16).padStart(8, "0");
var TMP_TRIES = 8;
function writeAll(fd, data) {
  let done = 0;
  while (done < data.length) done += writeSync(fd, data, done, data.length - done);
}
function commitWrites(writes) {
  const prepared = [];
  const createdDirs = [];
  const undoPrepare = () => {
    for (const p of prepared) rmSync(p.tmp, { force: true });
    for (const d of createdDirs.reverse()) rmSync(d, { recursive: true, force: true });
  };
  const targets = writes.map((w) => {
    const t = resolveTarget(w.path, w.follow ?? true);
    if (w.mode === void 0) checkWritable(t);
    return { ...t, data: w.data, mode: w.mode, validate: w.validate, durable: w.durable ?? true, unchanged: w.unchanged };
  });
  try {
    for (const t of targets) {
      const dir = dirname2(t.real);
      try {
        const made = makeDirs(dir);
        if (made) createdDirs.push(made);
      } catch (e) {
        throw fsError(e, dir, "cannot create the directory", NOTHING_CHANGED);
      }
      let tmp;
      let fd;
      for (let tries = 1; ; tries++) {
        tmp = join2(dir, `.${basename(t.real)}.nbg-${process.pid}-${tmpTag()}.tmp`);
        try {
          fd = openSync(tmp, "wx", t.mode ?? (t.stat ? t.stat.mode & 511 : 438));
          break;
        } catch (e) {
          if (e.code === "EEXIST" && tries < TMP_TRIES) continue;
          throw fsError(e, t.path, `cannot write (in ${dir})`, NOTHING_CHANGED);
        }
      }
      prepared.push({ ...t, tmp, backup: null, placed: false });
      try {
        writeAll(fd, t.data);
        if (t.mode !== void 0) fchmodSync(fd, t.mode);
        else if (t.stat) fchmodSync(fd, t.stat.mode & 4095);
        if (t.stat) {
          if (process.getuid?.() === 0 && (t.stat.uid !== 0 || t.stat.gid !== 0)) fchownSync(fd, t.stat.uid, t.stat.gid);
        }
        if (t.durable) fsyncSync(fd);
      } catch (e) {
        throw fsError(e, t.path, "cannot write", NOTHING_CHANGED);
      } finally {
        closeSync(fd);
      }
      t.validate?.(tmp);
    }
  } catch (e) {
    undoPrepare();
    throw e instanceof GateError ? e : fsError(e, writes[prepared.length]?.path ?? "", "cannot write", NOTHING_CHANGED);
  }
  try {
    for (const p of prepared) {
      writeHooks.beforeReplace?.(p.path);
      if (p.unchanged !== void 0 && !sameStamp(p.unchanged, stampNow(p.real))) throw new ChangedSinceRead(p.path);
      if (p.stat) {
        p.backup = `${p.tmp}.bak`;
        try {
          linkSync(p.real, p.backup);
        } catch {
          copyFileSync(p.real, p.backup);
        }
      }
      renameSync(p.tmp, p.real);
      p.placed = true;
    }
  } catch (e) {
    const failed = prepared.find((p) => !p.placed);
    for (const p of prepared.filter((x) => x.placed).reverse()) {
      try {
        if (p.backup) renameSync(p.backup, p.real);
        else unlinkSync(p.real);
      } catch {
      }
    }
    undoPrepare();
    for (const p of prepared) if (p.backup) rmSync(p.backup, { force: true });
    if (e.code === "EBUSY") {
      const m = mountOf(failed.real);
      if (m) throw new InputError(`cannot replace: it is ${m.ro ? "a read-only bind mount" : "bind-mounted"} (a mount point of its own), and npu-block-gate replaces a document by renaming a new file over it; ${m.ro ? "mount it read-write and " : ""}bind-mount its directory instead of the file, or pass --no-docs${NOTHING_CHANGED}`, failed.path);
    }
    throw fsError(e, failed.path, "cannot replace", NOTHING_CHANGED);
  }
  for (const p of prepared) if (p.backup) rmSync(p.backup, { force: true });
}
var LEFTOVER = /^\.(.+)\.nbg-(\d+)-[0-9a-f]{8}\.tmp(\.bak)?$/;
function pidRunning(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}
function sweepLeftovers(dirs, exclusive) {
  const out = { removed: [], kept: [] };
  for (const dir of new Set(dirs)) {
    let names;
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const n of names) {
      const m = LEFTOVER.exec(n);
      if (!m) continue;
      const pid = Number(m[2]);
      if (!exclusive && pid !== process.pid && pidRunning(pid)) continue;
      const path = join2(dir, n);
      try {
        if (!lstatSync(path).isFile()) continue;
        rmSync(path, { force: true });
        out.removed.push(path);
      } catch (e) {
        out.kept.push(fsError(e, path, "cannot remove").message);
      }
    }
  }
  return out;
}
function writeAtomic(path, data, o = true) {
  const opts = typeof o === "boolean" ? { follow: o } : o;
  commitWrites([{ path, data: typeof data === "string" ? Buffer.from(data, "utf8") : data, ...opts }]);
}

// src/probe/answers.ts
function programId(path) {
  try {
    const real = realpathSync2(path);
    const st = statSync2(real);
    if (!st.isFile()) return null;
    const fd = openSync2(real, "r");
    const head = Buffer.alloc(4);
    try {
      readSync2(fd, head, 0, 4, 0);
    } finally {
      closeSync2(fd);
    }
    if (head.toString("latin1") !== "\x7FELF") return null;
    return { real, size: st.size, mtimeMs: st.mtimeMs };
  } catch {
    return null;
  }
}
function mtimeOf(path) {
  try {
    return statSync2(path).mtimeMs;
  } catch {
    return null;
  }
}
var MAX_ENTRIES = 32;
function load(file) {
  try {
    const f = JSON.parse(readFileSync2(file, "utf8"));
    if (f?.version === 1 && f.entries && typeof f.entries === "object") return f;
  } catch {
  }
  return { version: 1, entries: {} };
}
var same = (a, b) => {
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => a[k] === b[k]);
};
function keptAnswer(file, named, also) {
  const e = load(file).entries[named];
  if (!e) return null;
  const id2 = programId(named);
  if (!id2 || id2.real !== e.id.real || id2.size !== e.id.size || id2.mtimeMs !== e.id.mtimeMs) return null;
  return same(also(e.answer), e.also) ? e.answer : null;
}
function keepAnswer(file, named, answer, also) {
  const id2 = programId(named);
  if (!id2) return false;
  const f = load(file);
  delete f.entries[named];
  f.entries[named] = { id: id2, also, answer };
  const names = Object.keys(f.entries);
  for (const n of names.slice(0, Math.max(0, names.length - MAX_ENTRIES))) delete f.entries[n];
  try {
    writeAtomic(file, JSON.stringify(f), { durable: false });
    return true;
  } catch {
    return false;
  }
}

// src/probe/python.ts
var PROBE_SNIPPET = "import sys, numpy; print(sys.executable); print(sys.version.split()[0]); print(numpy.__version__); print(numpy.__file__)";
var TEST_TIMEOUT_MS = 3e4;
var TEST_CWD = "/";
var fromHere = (command) => command.includes("/") ? resolve(command) : command;
function signalWords(signal) {
  const n = osConstants.signals[signal];
  const words = { SIGSEGV: "segmentation fault", SIGABRT: "aborted", SIGBUS: "bus error", SIGILL: "illegal instruction", SIGFPE: "floating-point exception", SIGKILL: "killed", SIGTERM: "terminated" };
  return `${signal}${n ? ` (signal ${n}${words[signal] ? `: ${words[signal]}` : ""})` : ""}`;
}
function testResult(r) {
  if (r.error) {
    const why = r.error.code === "ENOENT" ? "not found" : r.error.code === "ETIMEDOUT" ? `timed out after ${TEST_TIMEOUT_MS / 1e3}s (it did not exit)` : r.error.message.replace(/^spawn(Sync)? /, "");
    return { ok: false, why };
  }
  if (r.status === null && r.signal) return { ok: false, why: `crashed: killed by ${signalWords(r.signal)}` };
  const held = r.heldOpen ? `a process it started kept its output open after it exited (stopped after ${EXIT_GRACE_MS / 1e3}s)` : null;
  if (r.status !== 0) {
    const last = (r.stderr || "").trim().split("\n").pop() ?? "";
    return { ok: false, why: /No module named ['"]?numpy/.test(last) ? "cannot import numpy" : last || `exit ${r.status}` };
  }
  const [executable, version, numpy, numpyFile] = r.stdout.trim().split("\n");
  return { ok: true, executable, version, numpy, ...numpyFile && isAbsolute(numpyFile) ? { numpyFile } : {}, ...held ? { note: held } : {} };
}
var testPython = (command) => {
  const r = spawnSync(fromHere(command), ["-c", PROBE_SNIPPET], { encoding: "utf8", timeout: TEST_TIMEOUT_MS, cwd: TEST_CWD });
  return testResult({ error: r.error, status: r.status, signal: r.signal, stdout: r.stdout ?? "", stderr: r.stderr ?? "" });
};
var testPythonAsync = async (command) => {
  const r = await runBounded(fromHere(command), ["-c", PROBE_SNIPPET], { cwd: TEST_CWD, timeoutMs: TEST_TIMEOUT_MS });
  const error = r.timedOut ? Object.assign(new Error(`${command} timed out`), { code: "ETIMEDOUT" }) : r.error ?? void 0;
  return testResult({ error, status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, heldOpen: r.heldOpen });
};
function programOf(command) {
  if (command.includes("/")) return fromHere(command);
  for (const d of (process.env.PATH ?? "").split(delimiter)) {
    if (!isAbsolute(d)) continue;
    const p = join3(d, command);
    try {
      if (statSync3(p).isFile()) return p;
    } catch {
    }
  }
  return null;
}
function keptTester(test, file) {
  const stamps = (t) => ({
    numpy: t.numpyFile ? mtimeOf(t.numpyFile) : null,
    PYTHONPATH: process.env.PYTHONPATH ?? null,
    PYTHONHOME: process.env.PYTHONHOME ?? null
  });
  return async (command) => {
    const program = programOf(command);
    const kept = program ? keptAnswer(file, program, stamps) : null;
    if (kept) return kept;
    const t = await test(command);
    if (program && t.ok && t.numpyFile && mtimeOf(t.numpyFile) !== null) keepAnswer(file, program, t, stamps(t));
    return t;
  };
}
var TREE_ENVS = [
  { dir: "sandbox", docs: "mlir-air's utils/setup_python_packages.sh" },
  { dir: "airenv", docs: "mlir-air's wheel install (docs/buildingRyzenLin.md)" },
  { dir: "ironenv", docs: "mlir-aie's setup" },
  { dir: "mlir-aie/ironenv", docs: "mlir-aie's setup" }
];
function realOr(p) {
  try {
    return realpathSync3(p);
  } catch {
    return resolve(p);
  }
}
function heldBy(path, dirs) {
  const named = resolve(path);
  const real = realOr(path);
  for (const d of dirs) {
    for (const dd of /* @__PURE__ */ new Set([resolve(d), realOr(d)])) {
      if (named === dd || named.startsWith(dd + sep) || real === dd || real.startsWith(dd + sep)) return d;
    }
  }
  return null;
}
var TREE_PYTHON = "inside the mlir-air tree or the model dir: plan runs outside the probe's sandbox and never runs a Python from there (check runs it in the sandbox)";
function outsideEnv(env, dirs) {
  const out = {};
  for (const k of ["PATH", "PYTHONPATH", "LD_LIBRARY_PATH"]) {
    const v = env[k];
    if (v === void 0) continue;
    out[k] = v.split(delimiter).filter((e) => isAbsolute(e) && !heldBy(e, dirs)).join(delimiter);
  }
  if (env.PYTHONHOME !== void 0 && (!isAbsolute(env.PYTHONHOME) || heldBy(env.PYTHONHOME, dirs))) out.PYTHONHOME = "";
  return out;
}
function toolRoot() {
  let dir = dirname3(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      if (JSON.parse(readFileSync3(join3(dir, "package.json"), "utf8")).name === "npu-block-gate") return dir;
    } catch {
    }
    dir = dirname3(dir);
  }
  return null;
}
var inside = (path, dir) => resolve(path).startsWith(resolve(dir) + sep);
function onPath(name, env, exists) {
  for (const d of (env.PATH ?? "").split(delimiter).filter(Boolean)) {
    const p = join3(d, name);
    if (exists(p)) return p;
  }
  return null;
}
function pythonCandidates(explicit, env = process.env, ctx = {}) {
  const exists = ctx.exists ?? existsSync;
  if (ctx.outside) return outsideCandidates(explicit, env, ctx, ctx.outside, exists);
  if (explicit) return [{ command: explicit, source: "option", why: "--python" }];
  if (env.NPU_BLOCK_GATE_PYTHON) return [{ command: env.NPU_BLOCK_GATE_PYTHON, source: "env", why: "$NPU_BLOCK_GATE_PYTHON" }];
  const tool = ctx.toolRoot === void 0 ? toolRoot() : ctx.toolRoot;
  const ownVenv = tool && !(ctx.modelDir && inside(ctx.modelDir, tool)) ? join3(tool, ".venv") : null;
  const own = (p) => ownVenv && inside(p, ownVenv) ? `the tool's own test venv (${ownVenv}), not your mlir-air environment` : void 0;
  const out = [];
  const add = (c) => {
    if (!out.some((o) => o.command === c.command)) out.push({ ...c, ...own(c.command) ? { skip: own(c.command) } : {} });
  };
  if (env.VIRTUAL_ENV) {
    const py = join3(env.VIRTUAL_ENV, "bin", "python");
    if (exists(py)) add({ command: py, source: "venv", why: `the active virtualenv ($VIRTUAL_ENV=${env.VIRTUAL_ENV})` });
  }
  if (ctx.airRoot) {
    for (const base of [ctx.airRoot, dirname3(ctx.airRoot)]) {
      for (const e of TREE_ENVS) {
        const py = join3(base, e.dir, "bin", "python3");
        if (exists(py)) add({ command: py, source: "tree", why: `${join3(base, e.dir)}, ${base === ctx.airRoot ? "in" : "beside"} the mlir-air tree (${e.docs})` });
      }
    }
  }
  const path = onPath("python3", env, exists);
  add({ command: "python3", source: "PATH", why: path ? `python3 on PATH (${path})` : "python3 on PATH", ...path && own(path) ? { skip: own(path) } : {} });
  add({ command: "/usr/bin/python3", source: "fallback", why: "/usr/bin/python3" });
  return out;
}
function outsideCandidates(explicit, env, ctx, dirs, exists) {
  const path = outsideEnv(env, dirs).PATH;
  const found = (cmd) => cmd.includes("/") ? cmd : onPath(cmd, { PATH: path }, exists);
  const named = explicit ? { command: explicit, flag: "--python", source: "option" } : env.NPU_BLOCK_GATE_PYTHON ? { command: env.NPU_BLOCK_GATE_PYTHON, flag: "NPU_BLOCK_GATE_PYTHON", source: "env" } : null;
  if (named) {
    const at = named.command.includes("/") ? named.command : onPath(named.command, env, exists);
    if (at && heldBy(at, dirs)) throw new InputError(`${named.flag} ${named.command}${at !== named.command ? ` (${at})` : ""}: ${TREE_PYTHON}; name a Python outside ${heldBy(at, dirs)}`);
    return [{ command: at ?? named.command, source: named.source, why: named.source === "option" ? "--python" : "$NPU_BLOCK_GATE_PYTHON" }];
  }
  return pythonCandidates(null, { ...env, PATH: path }, { ...ctx, outside: void 0 }).map((c) => {
    const at = found(c.command);
    if (c.skip || !at) return c;
    return heldBy(at, dirs) ? { ...c, skip: TREE_PYTHON } : { ...c, command: at };
  });
}
function take(c, t, tried) {
  if (t.ok) return { command: c.command, executable: t.executable, version: t.version, numpy: t.numpy, source: c.source, why: c.why, ...t.note ? { note: t.note } : {} };
  if (c.source === "option") throw new InputError(`--python ${c.command}: ${t.why}`);
  if (c.source === "env") throw new InputError(`NPU_BLOCK_GATE_PYTHON=${c.command}: ${t.why}`);
  tried.push(`${c.command} (${t.why})`);
  return null;
}
var noneFound = (tried) => new InfraError(`no Python with numpy found: tried ${tried.join(", ")}; pass --python or set NPU_BLOCK_GATE_PYTHON`);
async function findPythonAsync(explicit, env, test, ctx = {}) {
  const tried = [];
  for (const c of pythonCandidates(explicit, env, ctx)) {
    if (c.skip) {
      tried.push(`${c.command} (${c.skip})`);
      continue;
    }
    const p = take(c, await test(c.command), tried);
    if (p) return p;
  }
  throw noneFound(tried);
}
function describePython(p) {
  const why = p.why ?? (p.source === "option" ? "--python" : p.source === "env" ? "$NPU_BLOCK_GATE_PYTHON" : p.command);
  return `${p.executable} (Python ${p.version}, numpy ${p.numpy}; from ${why})`;
}

// src/probe/isolate.ts
import { spawnSync as spawnSync2 } from "node:child_process";
import { closeSync as closeSync3, constants, existsSync as existsSync2, fchmodSync as fchmodSync2, lstatSync as lstatSync2, openSync as openSync3, readdirSync as readdirSync2, readFileSync as readFileSync4, realpathSync as realpathSync4, statSync as statSync4 } from "node:fs";
import { userInfo } from "node:os";
import { join as join5, resolve as resolve3 } from "node:path";

// src/probe/sandbox.ts
import { dirname as dirname4, join as join4, resolve as resolve2, sep as sep2 } from "node:path";
var ROOT_SECRET_FILES = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers"];
var ROOT_SECRET_DIRS = ["/etc/sudoers.d", "/etc/ssh", "/var/lib/docker", "/var/lib/containerd"];
function inside2(p, dir) {
  return dir === "/" || p === dir || p.startsWith(dir.endsWith(sep2) ? dir : dir + sep2);
}
function strictlyInside(p, dir) {
  return p !== dir && inside2(p, dir);
}
function outermost(paths, view) {
  const uniq = [...new Set([...paths].map((p) => resolve2(p)))].filter((p) => p !== "/" && view.exists(p));
  return uniq.sort((a, b) => a.length - b.length).filter((p, i, all) => !all.slice(0, i).some((q) => strictlyInside(p, q)));
}
function runnerDirs(env, self, view) {
  const out = /* @__PURE__ */ new Set();
  const add = (p) => {
    if (p) out.add(resolve2(p));
  };
  const temp = env.RUNNER_TEMP ? resolve2(env.RUNNER_TEMP) : null;
  const work = [
    temp && dirname4(temp),
    env.RUNNER_WORKSPACE && dirname4(resolve2(env.RUNNER_WORKSPACE)),
    env.GITHUB_WORKSPACE && dirname4(dirname4(resolve2(env.GITHUB_WORKSPACE))),
    env.RUNNER_WORKSPACE
    // in case the work folder is laid out otherwise
  ].filter((p) => !!p);
  add(temp ?? void 0);
  for (const w of work) add(w);
  add(env.RUNNER_TOOL_CACHE);
  for (const v of ["GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY", "GITHUB_STATE"]) if (env[v]) add(dirname4(resolve2(env[v])));
  for (const start of [...work, env.RUNNER_TOOL_CACHE, self ? dirname4(self) : null]) {
    if (!start) continue;
    for (let d = resolve2(start); d !== "/"; d = dirname4(d)) {
      if (view.exists(join4(d, ".runner")) || view.exists(join4(d, ".credentials"))) {
        out.add(d);
        break;
      }
    }
  }
  return [...out].filter((d) => d !== "/");
}
function gitDirsAbove(dirs, view) {
  const gitDirs = /* @__PURE__ */ new Set();
  const gitFiles = /* @__PURE__ */ new Set();
  for (const d of dirs) {
    let up = d;
    while (up !== "/" && !view.exists(join4(up, ".git"))) up = dirname4(up);
    if (up === "/") continue;
    const g = join4(up, ".git");
    if (view.isDir(g)) {
      gitDirs.add(g);
      continue;
    }
    gitFiles.add(g);
    const m = /^gitdir:\s*(.+)$/m.exec(view.readText(g) ?? "");
    if (!m) continue;
    const real = resolve2(up, m[1].trim());
    if (view.isDir(real)) gitDirs.add(real);
    const common = view.readText(join4(real, "commondir"))?.trim();
    if (common) {
      const c = resolve2(real, common);
      if (view.isDir(c)) gitDirs.add(c);
    }
  }
  return { dirs: [...gitDirs], files: [...gitFiles] };
}
function sandboxArgs(s, view) {
  const a = [s.bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"];
  if (!s.network) a.push("--unshare-net");
  if (s.userns) {
    a.push("--unshare-user");
    if (s.userns.disableNested) a.push("--disable-userns");
    if (s.userns.uid !== null) a.push("--uid", String(s.userns.uid));
    if (s.userns.gid !== null) a.push("--gid", String(s.userns.gid));
  }
  if (s.capDrop) a.push("--cap-drop", "ALL");
  a.push("--ro-bind", "/", "/");
  a.push("--dev", "/dev", "--tmpfs", "/dev/shm");
  for (const n of view.list("/dev/accel") ?? []) a.push("--dev-bind", join4("/dev/accel", n), join4("/dev/accel", n));
  a.push("--proc", "/proc", "--tmpfs", "/tmp");
  const hubDir = hubCacheOf(s.env, s.home);
  const hfHome2 = hfHomeOf(s.env, s.home);
  const homes = ["/home", "/root", s.env.HOME, s.home].filter((p) => !!p);
  const sockets = ["/run", ...view.realpath("/var/run") === "/var/run" ? ["/var/run"] : []];
  const hide = outermost([...homes, ...sockets, ...runnerDirs(s.env, s.self, view), ...hfHome2 ? [hfHome2] : [], ...s.root ? ROOT_SECRET_DIRS : []], view).filter((d) => !inside2(d, "/tmp"));
  for (const d of hide) a.push("--tmpfs", d);
  const hiddenFiles = [...s.root ? ROOT_SECRET_FILES : [], ...s.env.HF_TOKEN_PATH ? [resolve2(s.env.HF_TOKEN_PATH)] : []].filter((f) => view.exists(f) && !view.isDir(f) && !hide.some((d) => inside2(f, d)));
  for (const f of hiddenFiles) a.push("--ro-bind", "/dev/null", f);
  const hub = hubDir && view.isDir(hubDir) && (s.canRead?.(hubDir) ?? true) ? [hubDir] : [];
  const ro = [...hub, ...s.readable].map(view.realpath).filter((d) => view.exists(d));
  const rw = s.writable.map(view.realpath).filter((d) => view.exists(d));
  const binder = (tmpfs) => {
    const bound = [];
    const made = /* @__PURE__ */ new Set();
    return (how, d, src = d) => {
      for (let up = dirname4(d), way = []; ; up = dirname4(up)) {
        if (bound.some((b) => inside2(up, b)) || !tmpfs.some((t) => strictlyInside(up, t))) {
          for (const w of way.reverse()) if (!made.has(w)) {
            made.add(w);
            a.push("--perms", "0755", "--dir", w);
          }
          break;
        }
        way.push(up);
      }
      a.push(how, src, d);
      bound.push(d);
    };
  };
  const bind = binder([...hide, "/tmp"]);
  const bindAt = (src, dest) => bind("--bind", dest, src);
  for (const d of ro) bind("--ro-bind", d);
  for (const d of rw) bind("--bind", d);
  const mounts = (s.mounts ?? []).map((m) => ({ src: view.realpath(m.src), dest: resolve2(m.dest) })).filter((m) => view.isDir(m.src));
  for (const m of mounts) bindAt(m.src, m.dest);
  for (const f of s.lockFiles) bind("--bind", f);
  const again = hide.filter((h) => [...ro, ...rw, ...mounts.map((m) => m.dest)].some((b) => strictlyInside(h, b)));
  for (const h of again) a.push("--tmpfs", h);
  const rebind = binder(again);
  for (const d of ro) if (again.some((h) => strictlyInside(d, h))) rebind("--ro-bind", d);
  for (const d of rw) if (again.some((h) => strictlyInside(d, h))) rebind("--bind", d);
  for (const m of mounts) if (again.some((h) => strictlyInside(m.dest, h))) rebind("--bind", m.dest, m.src);
  const git = gitDirsAbove([...ro, ...rw, ...mounts.map((m) => m.dest)], view);
  for (const g of git.dirs) a.push("--tmpfs", g);
  for (const f of git.files) a.push("--ro-bind", "/dev/null", f);
  if (s.network) {
    const resolv = view.realpath("/etc/resolv.conf");
    if (resolv !== "/etc/resolv.conf" && hide.some((d) => inside2(resolv, d)) && view.exists(resolv)) a.push("--ro-bind", resolv, resolv);
  }
  a.push("--chdir", s.cwd, "--");
  return { args: a, hidden: [...hide, ...hiddenFiles, ...git.dirs, ...git.files] };
}

// src/probe/namespaces.ts
function namespaceSteps(o) {
  const user = ["a user namespace", ["--unshare-user", ...o.uid !== null ? ["--uid", String(o.uid), "--gid", String(o.uid)] : []]];
  return [
    // As root bubblewrap makes a mount namespace without a user namespace (and the root sandbox has
    // none: setpriv drops to nobody instead); any other uid needs the user namespace first.
    ...o.root ? [["a mount namespace", []]] : [user],
    ["a PID namespace", ["--unshare-pid"]],
    ...o.network ? [] : [["a network namespace", ["--unshare-net"]]],
    ["an IPC namespace", ["--unshare-ipc"]],
    ["a UTS namespace", ["--unshare-uts"]]
  ];
}
function failedNamespace(works, bwrap, noop, o) {
  const flags = [];
  for (const [name, add] of namespaceSteps(o)) {
    flags.push(...add);
    if (!works([bwrap, "--ro-bind", "/", "/", ...flags, noop])) return name;
  }
  return null;
}

// src/probe/isolate.ts
var realView = {
  exists: (p) => existsSync2(p),
  isDir: (p) => {
    try {
      return statSync4(p).isDirectory();
    } catch {
      return false;
    }
  },
  realpath: (p) => {
    try {
      return realpathSync4(p);
    } catch {
      return resolve3(p);
    }
  },
  list: (d) => {
    try {
      return readdirSync2(d).sort();
    } catch {
      return null;
    }
  },
  readText: (p) => {
    try {
      return readFileSync4(p, "utf8").slice(0, 4096);
    } catch {
      return null;
    }
  }
};
function idOf(flag, user) {
  const r = spawnSync2("id", [flag, user], { encoding: "utf8", timeout: 5e3 });
  const n = Number(r.stdout?.trim());
  return r.status === 0 && r.stdout?.trim() !== "" && Number.isInteger(n) ? n : null;
}
var realHost = {
  which: (cmd) => {
    for (const dir of (process.env.PATH ?? "").split(":").filter(Boolean)) {
      const p = join5(dir, cmd);
      try {
        if (statSync4(p).isFile()) return p;
      } catch {
      }
    }
    return null;
  },
  works: (argv) => {
    const r = spawnSync2(argv[0], argv.slice(1), { stdio: "ignore", timeout: 2e4 });
    return r.status === 0;
  },
  uid: () => typeof process.getuid === "function" ? process.getuid() : -1,
  uidOf: (user) => idOf("-u", user),
  gidOf: (user) => idOf("-g", user),
  groupsOf: (user) => {
    const r = spawnSync2("id", ["-G", user], { encoding: "utf8", timeout: 5e3 });
    return r.status === 0 ? r.stdout.trim().split(/\s+/).map(Number).filter(Number.isInteger) : [];
  },
  myGroups: () => [.../* @__PURE__ */ new Set([process.getgid?.() ?? -1, ...process.getgroups?.() ?? []])].filter((g) => g >= 0),
  env: process.env,
  readFile: (path) => {
    try {
      return readFileSync4(path, "utf8");
    } catch {
      return null;
    }
  },
  view: realView,
  home: (() => {
    try {
      return userInfo().homedir || null;
    } catch {
      return null;
    }
  })(),
  self: process.execPath,
  lockFiles: (env) => lockFiles(env),
  processesOf: (uid) => processesOf(uid),
  sleep: (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
};
var SETUP_FILE = "/etc/npu-block-gate/probe-user";
function parseSetupFile(text2) {
  for (const line of (text2 ?? "").split(/\r?\n/)) {
    const t = line.trim();
    if (t && !t.startsWith("#")) return t;
  }
  return null;
}
function probeUser(req, host) {
  return req.user || host.env.NPU_BLOCK_GATE_PROBE_USER || parseSetupFile(host.readFile(SETUP_FILE));
}
var SANDBOX_UID = 65534;
var APPARMOR_FIX = "allow user namespaces for bubblewrap: an AppArmor profile for /usr/bin/bwrap with the userns rule (docs/action.md section 2), or sysctl kernel.apparmor_restrict_unprivileged_userns=0";
function lockFiles(env) {
  const configured = env[NPU_LOCK.env]?.trim();
  const paths = [configured && configured.toLowerCase() !== "none" ? configured : configured ? null : NPU_LOCK.path, "/tmp/npu.lock"];
  const out = [];
  for (const p of paths) {
    if (!p) continue;
    try {
      let st = lstatSync2(p, { throwIfNoEntry: false });
      if (!st) {
        const fd = openSync3(p, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 438);
        try {
          fchmodSync2(fd, 438);
        } finally {
          closeSync3(fd);
        }
        st = lstatSync2(p);
      }
      if (st.isFile()) out.push(realpathSync4(p));
    } catch {
    }
  }
  return out;
}
function processesOf(uid, proc = "/proc") {
  const out = [];
  let entries;
  try {
    entries = readdirSync2(proc);
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    let status;
    try {
      status = readFileSync4(join5(proc, e, "status"), "utf8");
    } catch {
      continue;
    }
    if (/^State:\s*[ZX]/m.test(status)) continue;
    const ids = /^Uid:\s*(\d+)\s+(\d+)/m.exec(status);
    if (ids && (Number(ids[1]) === uid || Number(ids[2]) === uid)) out.push(Number(e));
  }
  return out;
}
function uidSweeper(host, user, uid, asUser) {
  const kill = host.which("kill") ?? "/bin/kill";
  return () => {
    for (let round = 0; round < 6; round++) {
      if (!host.processesOf(uid).length) return;
      host.works([...asUser, kill, "-9", "--", "-1"]);
      host.sleep(50 * (round + 1));
    }
    const left = host.processesOf(uid);
    if (left.length) throw new InfraError(`processes of the probe user ${user} (uid ${uid}) cannot be ended (pids ${left.slice(0, 8).join(", ")}); refusing to run the probe beside them`);
  };
}
var FEATURE_CTX = (env) => ({ writable: [], readable: [], env, network: false, cwd: "/" });
function chooseIsolation(req, host = realHost, ctx) {
  const tried = [];
  const want = req.mode;
  const root = host.uid() === 0;
  const bwrap = want === "none" ? null : host.which("bwrap");
  const noop = host.which("true") ?? "/bin/true";
  const test = ctx ?? FEATURE_CTX(host.env);
  const spec = (c, o) => ({
    bwrap,
    ...o,
    writable: c.writable,
    mounts: c.mounts ?? [],
    readable: c.readable ?? [],
    lockFiles: host.lockFiles(c.env),
    env: c.env,
    home: host.home,
    self: host.self,
    network: c.network,
    cwd: c.cwd ?? c.writable[c.writable.length - 1] ?? "/"
  });
  const sandbox = (o, before = () => [], after = [], probe = [noop]) => {
    const variants = o.userns ? [{ ...o, userns: { ...o.userns, disableNested: true } }, { ...o, userns: { ...o.userns, disableNested: false } }] : [o];
    for (const v of variants) {
      const wrap = (argv, c) => [...before(c), ...sandboxArgs(spec(c, v), host.view).args, ...after, ...argv];
      if (host.works(wrap(probe, test))) return wrap;
    }
    return null;
  };
  let degraded = null;
  const notStarted = (asRoot, userFix) => {
    const failed = failedNamespace((a) => host.works(a), bwrap, noop, { root: asRoot, network: test.network, uid: null });
    if (!failed) return "bubblewrap: its sandbox does not start here, though each of its namespaces does (a dir it cannot bind?)";
    return `bubblewrap: cannot create ${failed} here${failed === "a user namespace" ? userFix : ""}`;
  };
  if (want === "auto" || want === "uid") {
    const user = probeUser(req, host);
    if (user) {
      if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(user)) throw new InputError(`probe user ${JSON.stringify(user)} is not a user name`);
      const uid = host.uidOf(user);
      const gid = host.gidOf(user);
      const setpriv = root ? host.which("setpriv") : null;
      const sudo = root ? null : host.which("sudo");
      if (uid === null || gid === null) tried.push(`uid ${user}: no such user (create it with \`npu-block-gate agent setup\`)`);
      else if (uid === 0) throw new InputError(`probe user ${user} has uid 0: it isolates nothing; set up another with \`npu-block-gate agent setup\``);
      else if (root && setpriv) {
        const drop = [setpriv, "--reuid", String(uid), "--regid", String(gid), "--init-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"];
        const inBwrap = bwrap ? sandbox({ userns: null, capDrop: false, root: true }, () => [], drop) : null;
        const owned = { probeOwner: { uid, gid, user }, share: { how: "chown" }, asProbe: null };
        if (inBwrap) return { mode: "uid", detail: `uid ${user} (setpriv) in bubblewrap: pid+mount+ipc+net namespaces, private /proc, /dev and /tmp, homes and runner files hidden, no capabilities`, degraded: null, pidNamespace: true, wrap: inBwrap, sweep: null, ...owned };
        const why = bwrap ? "bubblewrap cannot create its namespaces here" : "bubblewrap is not installed (apt install bubblewrap)";
        const unshare = host.which("unshare");
        const pidns = unshare ? [unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "--"] : null;
        const withPid = pidns && host.works([...pidns, ...drop, noop]) ? pidns : [];
        degraded = {
          mode: "uid",
          detail: `uid ${user} (setpriv)${withPid.length ? " in a PID namespace" : ""}, without its sandbox: ${why}`,
          degraded: `the probe user runs without its sandbox (${why}): the runner's files are hidden only by their permissions`,
          pidNamespace: withPid.length > 0,
          wrap: (argv) => [...withPid, ...drop, ...argv],
          sweep: uidSweeper(host, user, uid, [setpriv, "--reuid", String(uid), "--regid", String(gid), "--clear-groups", "--"]),
          ...owned
        };
      } else if (sudo && host.works([sudo, "-n", "-u", user, "--", noop])) {
        const asUser = [sudo, "-n", "-u", user, "--"];
        const mine = host.myGroups?.() ?? [];
        const common = (host.groupsOf?.(user) ?? [gid]).filter((g) => mine.includes(g));
        const shared = { probeOwner: { uid, gid, user }, share: common.length ? { how: "group", gid: common[0] } : null, asProbe: asUser };
        const envArgs = (c) => [host.which("env") ?? "/usr/bin/env", "-i", ...Object.entries(c.probeEnv ?? {}).filter(([, v]) => v !== void 0).map(([k, v]) => `${k}=${v}`)];
        const testCmd = host.which("test") ?? "/usr/bin/test";
        const readable = /* @__PURE__ */ new Map();
        const canRead = (d) => readable.get(d) ?? readable.set(d, host.works([...asUser, testCmd, "-r", d, "-a", "-x", d])).get(d);
        const hub = hubCacheOf(host.env, host.home);
        const hubNote = hub && host.view.isDir(hub) && !canRead(hub) ? `; the HF hub cache ${hub} is not readable by ${user}, so the probe runs without it (make it group-readable, or set HF_HUB_CACHE to a shared one)` : "";
        const nested = bwrap ? sandbox({ userns: { uid: null, gid: null, disableNested: true }, capDrop: true, root: false, canRead }, (c) => [...asUser, ...envArgs(c)]) : null;
        if (nested) return { mode: "uid", detail: `uid ${user} (sudo -n) + bubblewrap: user+pid+mount+ipc+net namespaces, private /proc, /dev and /tmp, homes and runner files hidden, no capabilities${hubNote}`, degraded: null, pidNamespace: true, wrap: nested, sweep: null, ...shared };
        const bare = bwrap && host.works([...asUser, bwrap, "--unshare-user", "--ro-bind", "/", "/", noop]);
        const why = !bwrap ? "bubblewrap is not installed (apt install bubblewrap)" : bare ? `bubblewrap runs as the probe user, but not with the dirs the probe needs bound (one the probe user cannot read: the tree, the run dir, the Python?)` : `the probe user cannot start bubblewrap (unprivileged user namespaces are restricted here: ${APPARMOR_FIX})`;
        degraded = {
          mode: "uid",
          detail: `uid ${user} (sudo -n), without its sandbox: ${why}`,
          degraded: `the probe user runs without its sandbox: ${why}`,
          pidNamespace: false,
          wrap: (argv, c) => [...asUser, ...envArgs(c), ...argv],
          sweep: uidSweeper(host, user, uid, asUser),
          ...shared
        };
      } else tried.push(`uid ${user}: cannot switch to it (${root ? "setpriv is missing" : "no sudoers rule: run `npu-block-gate agent setup`"})`);
    } else if (want === "uid") tried.push("uid: no probe user configured (NPU_BLOCK_GATE_PROBE_USER, or `npu-block-gate agent setup`)");
  }
  if ((want === "auto" || want === "namespace") && bwrap && root) {
    const setpriv = host.which("setpriv");
    if (setpriv) {
      const id2 = String(SANDBOX_UID);
      const drop = [setpriv, "--reuid", id2, "--regid", id2, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"];
      const dirs = test.readable ?? [];
      const opts = { userns: null, capDrop: false, root: true };
      const canRead = dirs.length ? sandbox(opts, () => [], drop, ["/bin/sh", "-c", 'for d do test -r "$d" && test -x "$d" || exit 1; done', "sh", ...dirs]) : null;
      const ns = canRead ?? sandbox(opts, () => [], drop);
      if (ns && (canRead || !dirs.length)) {
        return {
          mode: "namespace",
          detail: `bubblewrap: pid+mount+ipc+net namespaces, uid ${SANDBOX_UID} (nobody) inside and outside (setpriv), no capabilities, private /proc, /dev and /tmp, read-only root, homes, runner files and .git hidden`,
          degraded: null,
          pidNamespace: true,
          wrap: ns,
          sweep: null,
          probeOwner: { uid: SANDBOX_UID, gid: SANDBOX_UID, user: "nobody" },
          share: { how: "chown" },
          asProbe: null
        };
      }
      const culprits = ns && dirs.length > 1 ? dirs.filter((d) => !sandbox(opts, () => [], drop, ["/bin/sh", "-c", 'test -r "$1" && test -x "$1"', "sh", d])) : dirs;
      const named = culprits.length ? culprits : dirs;
      const unreadable = `uid ${SANDBOX_UID} (nobody) cannot read ${named.join(" and ")}: make ${named.length > 1 ? "them" : "it"} readable by others (chmod -R o+rX), or set up a probe user (\`npu-block-gate agent setup\`)`;
      if (ns && !req.untrusted) {
        const userns = sandbox({ userns: { uid: SANDBOX_UID, gid: SANDBOX_UID, disableNested: true }, capDrop: true, root: true });
        if (userns) {
          return {
            mode: "namespace",
            detail: `bubblewrap: user+pid+mount+ipc+net namespaces, uid ${SANDBOX_UID} inside but root's outside (trusted run; ${unreadable}), no capabilities, private /proc, /dev and /tmp, read-only root, homes, runner files and .git hidden`,
            degraded: null,
            pidNamespace: true,
            wrap: userns,
            sweep: null
          };
        }
      }
      tried.push(ns ? unreadable : notStarted(true, ""));
    } else tried.push(`setpriv (util-linux) is missing: as root the sandbox must drop to uid ${SANDBOX_UID} outside it, never run as root (apt install util-linux)`);
  } else if ((want === "auto" || want === "namespace") && bwrap) {
    let ns = sandbox({ userns: { uid: null, gid: null, disableNested: true }, capDrop: true, root: false });
    let how = "user+pid+mount+ipc+net namespaces";
    if (!ns) {
      ns = sandbox({ userns: null, capDrop: true, root: false });
      how = "pid+mount+ipc+net namespaces";
    }
    if (ns) {
      return {
        mode: "namespace",
        detail: `bubblewrap: ${how}, no capabilities, private /proc, /dev and /tmp, read-only root, homes, runner files and .git hidden`,
        degraded: null,
        pidNamespace: true,
        wrap: ns,
        sweep: null
      };
    }
    tried.push(notStarted(false, ` (${APPARMOR_FIX})`));
  } else if (want === "auto" || want === "namespace") tried.push("bubblewrap: not installed (apt install bubblewrap)");
  if (degraded) {
    if (req.untrusted && !req.allowUnisolated) {
      throw new InfraError(`refusing to run an untrusted event's model code: ${degraded.degraded} (or set allow-unisolated: true, unsafe)`);
    }
    return req.untrusted ? { ...degraded, detail: `${degraded.detail}; UNSAFE: allow-unisolated` } : degraded;
  }
  if (want === "none" || want === "auto") {
    if (req.untrusted && !req.allowUnisolated) {
      throw new InfraError(`refusing to run an untrusted event's model code without isolation (${tried.join("; ") || "isolation: none was asked for"}); set up the probe user with \`npu-block-gate agent setup\`, install bubblewrap, or set allow-unisolated: true (unsafe: the code can read this job's tokens)`);
    }
    const unshare = host.which("unshare");
    const pidns = unshare ? [unshare, ...root ? [] : ["--map-current-user"], "--pid", "--fork", "--kill-child", "--mount-proc", "--"] : null;
    const pid = pidns && host.works([...pidns, noop]) ? pidns : null;
    const notes = [...tried, pid ? "in a PID namespace" : "no PID namespace: a process that leaves the probe's tree may outlive it"];
    return {
      mode: "none",
      detail: `none (${notes.join("; ")})${req.untrusted ? "; UNSAFE: allow-unisolated" : ""}`,
      degraded: null,
      pidNamespace: !!pid,
      wrap: (argv) => [...pid ?? [], ...argv],
      sweep: null,
      unavailable: tried
    };
  }
  throw new InfraError(`isolation ${want} is not available here: ${tried.join("; ")}`);
}

// src/text/escape.ts
var ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;
var MAX_TEXT = 300;
var CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
function str(v) {
  if (v === null || v === void 0) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  try {
    return JSON.stringify(v) ?? "";
  } catch {
    return String(v);
  }
}
function cut(s, max) {
  const chars = [...s];
  return chars.length > max ? `${chars.slice(0, Math.max(1, max - 1)).join("")}\u2026` : s;
}
function plain(v, max = MAX_TEXT) {
  return cut(str(v).replace(/\r\n?/g, "\n").replace(CONTROLS, "\uFFFD"), max);
}
var HTML = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };
function html(v, max = MAX_TEXT) {
  return plain(v, max).replace(/[&<>"']/g, (c) => c === "'" ? "&#39;" : HTML[c]);
}
var ZWSP = "\u200B";
function text(v, max = MAX_TEXT) {
  return inline(plain(v, max).replace(/\s*\n\s*/g, " "));
}
function inline(s) {
  return s.replace(/[&<>"\\`*_{}[\]()#+\-!|~@]/g, (c, at) => {
    if (c in HTML) return HTML[c];
    const next = s[at + 1] ?? "";
    if (c === "@") return /[A-Za-z0-9_-]/.test(next) ? `@${ZWSP}` : "@";
    if (c === "#" && /\d/.test(next)) return `\\#${ZWSP}`;
    return `\\${c}`;
  }).replace(/\b(GH)\\-(?=\d)/gi, `$1${ZWSP}\\-`).replace(/:\/\//g, `:${ZWSP}//`).replace(/\bwww\./gi, (m) => `${m.slice(0, 3)}${ZWSP}.`);
}
function cell(v, max = MAX_TEXT) {
  return plain(v, max).split("\n").map((l) => inline(l.trim())).join("<br>");
}
function code(v, opts = {}) {
  let clean = plain(v, opts.max ?? MAX_TEXT).replace(/\s*\n\s*/g, " ");
  if (clean === "") return '`""`';
  if (opts.inTable) clean = clean.replace(/\|/g, "\\|");
  const longest = Math.max(0, ...(clean.match(/`+/g) ?? []).map((m) => m.length));
  const fence = "`".repeat(longest + 1);
  const pad = clean.startsWith("`") || clean.endsWith("`") ? " " : "";
  return `${fence}${pad}${clean}${pad}${fence}`;
}
function literal(v, opts = {}) {
  const s = str(v);
  if (/^[A-Za-z0-9_.\/+=:,@-]+$/.test(s) && s.length <= (opts.max ?? MAX_TEXT)) return code(s, opts);
  return text(s, opts.max);
}
function isId(v) {
  return typeof v === "string" && ID_RE.test(v);
}
function id(v, opts = {}) {
  if (isId(v)) return code(v, opts);
  return `${text(v, 64)} (not a valid id)`;
}
var LEADING = /^[\s\u0085\u180e\u200b-\u200d\u2060\ufeff]*/;
function logLine(v) {
  return str(v).split(/\r\n|\r|\n/).map((line) => {
    const l = line.replace(CONTROLS, "\uFFFD");
    const lead = LEADING.exec(l)[0];
    const rest = l.slice(lead.length);
    if (rest.startsWith("::") || rest.startsWith("##[")) return `${lead}${rest[0]}${ZWSP}${rest.slice(1)}`;
    return l;
  }).join("\n");
}

// src/rundir/schema.ts
var PROBE_SCHEMA = PROBE.schema;
var PROBE_SCHEMA_VERSION = PROBE.version;
var RUN_FILES = RUN_FILES_CONTRACT;
var RUN_DIRS = [
  [CONTRACT.layers_dir, /^layer_\d{2,}\.(npu|ref)\.npy$/],
  [CONTRACT.boundaries.dir, /^\d{2,}-[A-Za-z0-9_.-]+\.(npu|ref|fp32|twin)\.npy$/],
  [CONTRACT.bisect.dir, new RegExp(`^(${CONTRACT.bisect.json.replace(".", "\\.")}|\\d{2,}-.+\\.npy|launch-\\d{2,}-.+\\.npy)$`)]
];

// src/npu/generation.ts
var TABLE = CONTRACT.npu.generations;
var GENERATION_ID_RE = /^[a-z0-9][a-z0-9-]{0,31}$/;
var EMULATED = "emulated";
var UNKNOWN = "unknown";
function plain2(e) {
  return { id: e.id, name: e.name, family: e.family };
}
function refine(base, cpuModel) {
  if (cpuModel) {
    for (const e of TABLE) if (e.refines === base.id && e.cpu && new RegExp(e.cpu).test(cpuModel)) return plain2(e);
  }
  return plain2(base);
}
var hex = (s, width) => (s ?? "").trim().toLowerCase().replace(/^0x/, "").padStart(width, "0");
function generationOfPci(device, revision, cpuModel) {
  const key = `${hex(device, 4)}:${hex(revision, 2)}`;
  const e = TABLE.find((x) => x.pci.includes(key));
  return e ? refine(e, cpuModel) : null;
}
function generationOfName(name, cpuModel) {
  const n = (name ?? "").trim().toLowerCase();
  if (!n) return null;
  const all = TABLE.flatMap((e) => e.names.map((x) => ({ e, x: x.toLowerCase() }))).sort((a, b) => b.x.length - a.x.length);
  const hit = all.find(({ x }) => n === x || n.includes(x));
  return hit ? refine(hit.e, cpuModel) : null;
}
function generationById(id2) {
  const e = TABLE.find((x) => x.id === id2);
  return e ? plain2(e) : null;
}
function generationName(id2) {
  if (!id2) return UNKNOWN;
  if (id2 === EMULATED) return "emulated (no NPU)";
  return generationById(id2)?.name ?? id2;
}
function recordNpu(r) {
  if (r.emulate) return EMULATED;
  const g = r.environment?.npu?.generation;
  return typeof g === "string" && GENERATION_ID_RE.test(g) ? g : UNKNOWN;
}

export {
  CONTRACT,
  EXIT_CODES,
  RUN_FILES_CONTRACT,
  BISECT_CONTRACT,
  NPU_LOCK,
  EVENT_PREFIX,
  PROBE_KEYS,
  REF_CACHE,
  HF_HUB,
  FP32_PREFIX,
  hfHome,
  hfHubCache,
  hfOffline,
  EXIT,
  GateError,
  InputError,
  InfraError,
  BusyError,
  oneLine,
  errnoWords,
  fsError,
  ID_RE,
  str,
  plain,
  html,
  text,
  cell,
  code,
  literal,
  isId,
  id,
  logLine,
  ENV_NAME,
  allowed,
  probeEnv,
  hubCacheOf,
  parseEnvNames,
  readWhole,
  kindOf,
  makeDirs,
  resolveTarget,
  readStamped,
  readDocument,
  ChangedSinceRead,
  commitWrites,
  sweepLeftovers,
  writeAtomic,
  PROBE_SCHEMA,
  PROBE_SCHEMA_VERSION,
  RUN_FILES,
  RUN_DIRS,
  GENERATION_ID_RE,
  EMULATED,
  UNKNOWN,
  generationOfPci,
  generationOfName,
  generationName,
  recordNpu,
  runBounded,
  programId,
  mtimeOf,
  keptAnswer,
  keepAnswer,
  signalWords,
  testPython,
  testPythonAsync,
  keptTester,
  outsideEnv,
  toolRoot,
  pythonCandidates,
  findPythonAsync,
  describePython,
  realView,
  realHost,
  SETUP_FILE,
  parseSetupFile,
  chooseIsolation
};
