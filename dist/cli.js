#!/usr/bin/env node
import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);

// src/cli.ts
import { parseArgs as parseArgs2 } from "node:util";
import { resolve as resolve6, basename as basename4 } from "node:path";

// scripts/probe/contract.json
var contract_default = {
  comment: "Constants shared by the Python probe (probe_schema.py) and the TypeScript side (src/contract.ts). One source of truth: change them here only; test/contract.test.ts and test/python/test_contract.py read this file from both sides.",
  exit: { ok: 0, fail: 1, input: 2, infra: 3, no_numpy: 4 },
  probe: {
    schema: "npu-block-gate/probe",
    version: 1,
    stages: ["config", "block"]
  },
  plan: { schema: "npu-block-gate/plan", version: 1 },
  run_files: {
    probe: "probe.json",
    npu: "block0.npu.npy",
    ref: "block0.ref.npy",
    input: "block0.input.npy",
    report: "report.json",
    markdown: "report.md",
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
    step_keys: ["step", "kernel", "cpu_equivalent"]
  },
  npu_lock: {
    path: "/tmp/mlir-air-npu.lock",
    env: "NPU_BLOCK_GATE_NPU_LOCK",
    timeout_seconds: 1800,
    progress_seconds: 15
  },
  kernel_stamp: { file: "npu-block-gate.json", schema: "npu-block-gate/kernel-stamp" },
  integration_paths: ["kernel-first", "inheritance", "adapter"],
  reference_kinds: ["hf-bf16", "emulated"],
  control: {
    comment: "`probe check` talks to the TypeScript side on stderr lines starting with event_prefix (one JSON object each) and waits for one JSON line on stdin after the 'config' event.",
    event_prefix: "probe-event: "
  }
};

// src/contract.ts
var EXIT_CODES = contract_default.exit;
var PROBE = contract_default.probe;
var RUN_FILES_CONTRACT = contract_default.run_files;
var BISECT_CONTRACT = contract_default.bisect;
var NPU_LOCK = contract_default.npu_lock;
var EVENT_PREFIX = contract_default.control.event_prefix;
var PLAN_CONTRACT = contract_default.plan;

// src/errors.ts
var EXIT = { pass: EXIT_CODES.ok, fail: EXIT_CODES.fail, input: EXIT_CODES.input, infra: EXIT_CODES.infra };
var GateError = class extends Error {
  exitCode;
  file;
  constructor(message, exitCode, file) {
    super(file ? `${file}: ${message}` : message);
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
function oneLine(err) {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.replace(/\s*\n\s*/g, " ").trim();
}

// src/plan.ts
var PROMPT_STYLES = ["base", "instruct"];
function parsePromptStyle(v, from) {
  if (PROMPT_STYLES.includes(v)) return v;
  throw new InputError(`${from} must be one of ${PROMPT_STYLES.join(", ")}, got ${JSON.stringify(v)}`);
}
function parseThreshold(v, from) {
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n) || n <= 0 || n > 1) throw new InputError(`${from} must be a number in (0, 1], got ${JSON.stringify(v)}`);
  return n;
}
function parseTimeout(v, from) {
  const n = Number(v);
  if (v.trim() === "" || !Number.isFinite(n) || n <= 0) throw new InputError(`${from} must be a positive number of seconds, got ${JSON.stringify(v)}`);
  return n;
}
function defaultRunDirName(model, now = /* @__PURE__ */ new Date()) {
  const ts = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `runs/${model}-${ts}`;
}

// src/pipeline.ts
import { existsSync as existsSync8, statSync as statSync3, mkdirSync as mkdirSync3, rmSync as rmSync3 } from "node:fs";
import { join as join8, resolve as resolve2, isAbsolute as isAbsolute4, basename as basename3 } from "node:path";

// package.json
var package_default = {
  name: "npu-block-gate",
  version: "0.1.0",
  description: "Phase 2 single-block validation gate for LLM deployments on AMD NPUs with Xilinx/mlir-air: CLI, GitHub Action and runner agent",
  type: "module",
  license: "MIT",
  engines: {
    node: ">=20"
  },
  bin: {
    "npu-block-gate": "dist/cli.js"
  },
  main: "dist/index.js",
  scripts: {
    build: "node scripts/build.mjs",
    typecheck: "tsc --noEmit",
    test: "node scripts/test.mjs",
    "test:ts": "uvu -r tsx test",
    demo: "node dist/cli.js check --model-dir examples/air-mini/programming_examples/llms/tiny_llama",
    install: 'node-gyp rebuild --directory=native || echo "npu-block-gate: native addon not built; the TypeScript engine will be used"',
    "build:native": "node-gyp rebuild --directory=native && node scripts/copy-native.mjs",
    bench: "tsx bench/bench.ts"
  },
  dependencies: {
    "@actions/artifact": "^6.2.1",
    "@actions/core": "^3.0.1",
    "@octokit/plugin-retry": "^8.1.1",
    "@octokit/plugin-throttling": "^11.0.5",
    "@octokit/rest": "^22.0.1",
    "markdown-table": "^3.1.0",
    "node-addon-api": "^8.9.2",
    undici: "^6.29.1"
  },
  devDependencies: {
    "@octokit/openapi": "^23.0.2",
    "@types/node": "^20.19.43",
    esbuild: "^0.28.2",
    "node-gyp": "^12.4.0",
    tsx: "^4.23.15",
    typescript: "^7.0.2",
    uvu: "^0.5.6"
  }
};

// src/probe/python.ts
import { spawnSync } from "node:child_process";
var PROBE_SNIPPET = "import sys, numpy; print(sys.executable); print(sys.version.split()[0]); print(numpy.__version__)";
var testPython = (command) => {
  const r = spawnSync(command, ["-c", PROBE_SNIPPET], { encoding: "utf8", timeout: 3e4 });
  if (r.error) return { ok: false, why: r.error.code === "ENOENT" ? "not found" : r.error.message };
  if (r.status !== 0) {
    const last = (r.stderr || "").trim().split("\n").pop() ?? "";
    return { ok: false, why: /No module named ['"]?numpy/.test(last) ? "cannot import numpy" : last || `exit ${r.status}` };
  }
  const [executable, version, numpy] = r.stdout.trim().split("\n");
  return { ok: true, executable, version, numpy };
};
function pythonCandidates(explicit, env = process.env) {
  if (explicit) return [{ command: explicit, source: "option" }];
  if (env.NPU_BLOCK_GATE_PYTHON) return [{ command: env.NPU_BLOCK_GATE_PYTHON, source: "env" }];
  return [{ command: "python3", source: "PATH" }, { command: "/usr/bin/python3", source: "fallback" }];
}
function findPython(explicit, env = process.env, test = testPython) {
  const tried = [];
  for (const { command, source } of pythonCandidates(explicit, env)) {
    const t = test(command);
    if (t.ok) return { command, executable: t.executable, version: t.version, numpy: t.numpy, source };
    if (source === "option") throw new InputError(`--python ${command}: ${t.why}`);
    if (source === "env") throw new InputError(`NPU_BLOCK_GATE_PYTHON=${command}: ${t.why}`);
    tried.push(`${command} (${t.why})`);
  }
  throw new InfraError(`no Python with numpy found: tried ${tried.join(", ")}; pass --python or set NPU_BLOCK_GATE_PYTHON`);
}
function describePython(p) {
  const why = p.source === "option" ? "--python" : p.source === "env" ? "$NPU_BLOCK_GATE_PYTHON" : p.command;
  return `${p.executable} (Python ${p.version}, numpy ${p.numpy}; from ${why})`;
}

// src/probe/run.ts
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
function probeDir() {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, "scripts", "probe");
    if (existsSync(join(candidate, "__main__.py"))) return candidate;
    dir = dirname(dir);
  }
  throw new InfraError("scripts/probe/__main__.py not found next to npu-block-gate; the installation is incomplete");
}
var SECRET_ENV = /^(INPUT_.*|ACTIONS_RUNTIME_TOKEN|ACTIONS_ID_TOKEN_REQUEST_(TOKEN|URL)|ACTIONS_RESULTS_URL|GITHUB_TOKEN|GH_TOKEN|GH_ENTERPRISE_TOKEN)$/i;
function probeEnv(env) {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !SECRET_ENV.test(k)));
}
function modelArgs(m) {
  const args = ["--model-dir", m.modelDir];
  if (m.promptStyle) args.push("--prompt-style", m.promptStyle);
  if (m.prompt !== null) args.push(`--prompt=${m.prompt}`);
  if (m.model) args.push(`--hf-model=${m.model}`);
  if (m.cpuAttn === true) args.push("--cpu-attn");
  if (m.cpuAttn === false) args.push("--npu-attn");
  if (m.online) args.push("--online");
  return args;
}
function blockArgs(m, runDir) {
  return [...modelArgs(m), "--out", runDir];
}
async function runProbe(python, a, h) {
  const candidates = Array.isArray(python) ? python : python && typeof python === "object" ? [{ command: python.executable, source: python.source }] : pythonCandidates(python);
  const tried = [];
  for (const c of candidates) {
    const r = await runOnce(c, a, h);
    if (r.kind === "ok") return { python: r.python, stdout: r.stdout };
    if (c.source === "option") throw new InputError(`--python ${c.command}: ${r.why}`);
    if (c.source === "env") throw new InputError(`NPU_BLOCK_GATE_PYTHON=${c.command}: ${r.why}`);
    tried.push(`${c.command} (${r.why})`);
  }
  throw new InfraError(`no Python with numpy found: tried ${tried.join(", ")}; pass --python or set NPU_BLOCK_GATE_PYTHON`);
}
function runOnce(c, a, h) {
  const args = [probeDir(), a.subcommand, ...a.args];
  const wantsEvents = a.args.includes("--events");
  return new Promise((resolve7, reject) => {
    const child = spawn(c.command, args, {
      stdio: [wantsEvents ? "pipe" : "ignore", "pipe", "pipe"],
      env: { ...probeEnv(process.env), PYTHONUNBUFFERED: "1", PYTHONDONTWRITEBYTECODE: "1", ...a.extraEnv },
      // Its own process group: a timeout or a cancel stops the probe and everything it started.
      detached: true
    });
    let python = { command: c.command, executable: c.command, version: "?", numpy: "?", source: c.source };
    let lastError = "";
    let failure = null;
    let timedOut = false;
    let stdout = "";
    let buf = "";
    let pending = Promise.resolve();
    const onEvent = (ev) => {
      if (ev.event === "python") {
        python = { command: c.command, executable: String(ev.executable), version: String(ev.version), numpy: String(ev.numpy), source: c.source };
        h.onPython?.(python);
      }
      if (!h.onEvent) return;
      pending = pending.then(async () => {
        const answer = await h.onEvent(ev);
        if (answer && child.stdin && !child.stdin.destroyed) child.stdin.write(JSON.stringify(answer) + "\n");
      }).catch((e) => {
        if (child.stdin && !child.stdin.destroyed) child.stdin.end();
        failure = e;
        killGroup("SIGTERM");
      });
    };
    const takeErr = (chunk) => {
      buf += chunk.toString("utf8");
      let nl;
      while ((nl = buf.indexOf("\n")) !== -1) {
        const line = buf.slice(0, nl).trimEnd();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        if (line.startsWith(EVENT_PREFIX)) {
          try {
            onEvent(JSON.parse(line.slice(EVENT_PREFIX.length)));
          } catch {
          }
        } else if (/^probe: error: /.test(line)) lastError = line.replace(/^probe: error: /, "");
        else h.onLine(line.replace(/^probe: /, ""));
      }
    };
    child.stdout.on("data", (d) => {
      stdout += d.toString("utf8");
    });
    child.stderr.on("data", takeErr);
    const killGroup = (sig) => {
      try {
        if (child.pid) process.kill(-child.pid, sig);
      } catch {
      }
    };
    const timer = a.timeoutSec ? setTimeout(() => {
      timedOut = true;
      killGroup("SIGTERM");
      setTimeout(() => killGroup("SIGKILL"), 5e3).unref();
    }, Math.min(a.timeoutSec * 1e3, 2 ** 31 - 1)) : null;
    child.on("error", (e) => {
      if (timer) clearTimeout(timer);
      if (e.code === "ENOENT") resolve7({ kind: "skip", why: "not found" });
      else reject(new InfraError(`cannot start ${c.command}: ${e.message}`));
    });
    child.on("close", (code2, signal) => {
      if (timer) clearTimeout(timer);
      if (buf.trim()) takeErr(Buffer.from("\n"));
      void pending.then(() => {
        if (failure) return reject(failure);
        if (timedOut) return reject(new InfraError(`probe ${a.subcommand} timed out after ${a.timeoutSec}s`));
        if (code2 === 0) return resolve7({ kind: "ok", python, stdout });
        if (code2 === EXIT_CODES.no_numpy) return resolve7({ kind: "skip", why: "cannot import numpy" });
        const why = lastError || (signal ? `killed by ${signal}` : `exited with status ${code2}`);
        if (code2 === EXIT_CODES.input) return reject(Object.assign(new InputError(why), { stdout }));
        const log = a.runDir ? ` (log: ${join(a.runDir, "probe.log")})` : "";
        reject(new InfraError(`probe ${a.subcommand} failed: ${why}${log}`));
      });
    });
  });
}

// src/rundir/read.ts
import { readFileSync, existsSync as existsSync2, statSync } from "node:fs";
import { join as join2, resolve, relative, isAbsolute } from "node:path";

// src/rundir/schema.ts
var PROBE_SCHEMA = PROBE.schema;
var PROBE_SCHEMA_VERSION = PROBE.version;
var RUN_FILES = RUN_FILES_CONTRACT;

// src/rundir/read.ts
function isObj(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
var Checker = class {
  constructor(file) {
    this.file = file;
  }
  file;
  fail(what) {
    throw new InputError(what, this.file);
  }
  obj(v, at) {
    if (!isObj(v)) this.fail(`${at} must be an object`);
    return v;
  }
  str(v, at) {
    if (typeof v !== "string") this.fail(`${at} must be a string`);
    return v;
  }
  strOrNull(v, at) {
    return v === null || v === void 0 ? null : this.str(v, at);
  }
  int(v, at, min = 0) {
    if (typeof v !== "number" || !Number.isInteger(v) || v < min) this.fail(`${at} must be an integer >= ${min}`);
    return v;
  }
  bool(v, at) {
    if (v === void 0 || v === null) return false;
    if (typeof v !== "boolean") this.fail(`${at} must be true or false`);
    return v;
  }
};
function tensorEntry(c, v, at, runDir) {
  if (v === null || v === void 0) return null;
  const o = c.obj(v, at);
  const file = c.str(o.file, `${at}.file`);
  if (isAbsolute(file) || file.split(/[\\/]/).includes("..")) c.fail(`${at}.file must be a relative path inside the run dir, got ${JSON.stringify(file)}`);
  const full = resolve(runDir, file);
  const rel = relative(resolve(runDir), full);
  if (rel.startsWith("..") || isAbsolute(rel)) c.fail(`${at}.file escapes the run dir`);
  const dtype = c.str(o.dtype, `${at}.dtype`);
  if (!["f32", "f16", "bf16"].includes(dtype)) c.fail(`${at}.dtype must be f32, f16 or bf16, got ${JSON.stringify(dtype)}`);
  if (!Array.isArray(o.shape)) c.fail(`${at}.shape must be a list of integers`);
  const shape = o.shape.map((d, i) => c.int(d, `${at}.shape[${i}]`, 0));
  return { file, dtype, shape };
}
function readProbeJson(runDir, requireBlock = true) {
  const file = join2(runDir, RUN_FILES.probe);
  if (!existsSync2(runDir) || !statSync(runDir).isDirectory()) throw new InputError("run dir does not exist", runDir);
  if (!existsSync2(file)) throw new InputError("missing: the probe did not finish writing this run dir", file);
  let raw;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new InputError(`not valid JSON (${e.message.split("\n")[0]})`, file);
  }
  const c = new Checker(file);
  const o = c.obj(raw, "probe.json");
  if (o.schema !== PROBE_SCHEMA) c.fail(`schema is ${JSON.stringify(o.schema)}, expected ${JSON.stringify(PROBE_SCHEMA)}`);
  if (o.schema_version !== PROBE_SCHEMA_VERSION) {
    c.fail(`schema_version ${JSON.stringify(o.schema_version)} is not supported (this npu-block-gate reads version ${PROBE_SCHEMA_VERSION})`);
  }
  const stage = c.str(o.stage, "stage");
  if (stage !== "config" && stage !== "block") c.fail(`stage must be "config" or "block", got ${JSON.stringify(stage)}`);
  const model = c.obj(o.model, "model");
  c.str(model.name, "model.name");
  c.str(model.dir, "model.dir");
  const cfg = c.obj(model.config, "model.config");
  for (const k of ["n_layers", "emb_dim", "n_heads", "n_kv_heads", "head_dim", "hidden_dim"]) c.int(cfg[k], `model.config.${k}`, 1);
  cfg.qkv_bias = c.bool(cfg.qkv_bias, "model.config.qkv_bias");
  cfg.qk_norm = c.bool(cfg.qk_norm, "model.config.qk_norm");
  const prompt = c.obj(o.prompt, "prompt");
  c.str(prompt.style, "prompt.style");
  c.str(prompt.text, "prompt.text");
  const realLen = c.int(prompt.real_len, "prompt.real_len", 1);
  if (prompt.padded_len !== null && prompt.padded_len !== void 0) {
    const padded = c.int(prompt.padded_len, "prompt.padded_len", 1);
    if (padded < realLen) c.fail(`prompt.padded_len ${padded} is less than prompt.real_len ${realLen}`);
  }
  const integ = c.obj(o.integration, "integration");
  const path = c.str(integ.path, "integration.path");
  if (!["kernel-first", "inheritance", "adapter"].includes(path)) c.fail(`integration.path must be kernel-first, inheritance or adapter, got ${JSON.stringify(path)}`);
  c.str(integ.entry, "integration.entry");
  if (!Array.isArray(integ.workarounds)) integ.workarounds = [];
  if (!Array.isArray(integ.kernels)) integ.kernels = [];
  const ref = c.obj(o.reference, "reference");
  c.str(ref.kind, "reference.kind");
  c.obj(o.environment, "environment");
  const tensors = c.obj(o.tensors ?? {}, "tensors");
  const npu = tensorEntry(c, tensors.npu, "tensors.npu", runDir);
  const refT = tensorEntry(c, tensors.ref, "tensors.ref", runDir);
  tensorEntry(c, tensors.input, "tensors.input", runDir);
  if (requireBlock && (stage !== "block" || !npu || !refT)) {
    c.fail('holds no block tensors (stage "config"): run `probe block`, or `npu-block-gate check`, first');
  }
  if (o.layers !== null && o.layers !== void 0) {
    const layers = c.obj(o.layers, "layers");
    c.str(layers.source, "layers.source");
    if (!Array.isArray(layers.entries)) c.fail("layers.entries must be a list");
    layers.entries.forEach((e, i) => {
      const entry = c.obj(e, `layers.entries[${i}]`);
      c.int(entry.layer, `layers.entries[${i}].layer`, 0);
      if (!tensorEntry(c, entry.npu, `layers.entries[${i}].npu`, runDir) || !tensorEntry(c, entry.ref, `layers.entries[${i}].ref`, runDir)) {
        c.fail(`layers.entries[${i}] needs both npu and ref tensors`);
      }
    });
  }
  if (!isObj(o.timings)) o.timings = {};
  return o;
}
function tensorPath(runDir, entry) {
  return join2(runDir, entry.file);
}

// src/tensor/index.ts
import { extname } from "node:path";

// src/tensor/bytes.ts
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
var FileBytes = class {
  constructor(path) {
    this.path = path;
    try {
      this.#fd = openSync(path, "r");
    } catch (err) {
      const code2 = err.code;
      throw new InputError(code2 === "ENOENT" ? "no such file" : `cannot open (${code2 ?? String(err)})`, path);
    }
    try {
      const st = fstatSync(this.#fd);
      if (!st.isFile()) throw new InputError("not a regular file", path);
      this.size = st.size;
    } catch (err) {
      this.close();
      throw err;
    }
  }
  path;
  size;
  #fd;
  get fd() {
    return this.#fd;
  }
  read(offset, length) {
    return this.fill(offset, Buffer.allocUnsafe(length));
  }
  readInto(offset, target) {
    return this.fill(offset, target);
  }
  fill(offset, buf) {
    const length = buf.length;
    if (this.#fd === null) throw new InputError("read after close", this.path);
    if (offset < 0 || offset + length > this.size) {
      throw new InputError(`truncated: needs bytes ${offset}..${offset + length} but the file has ${this.size}`, this.path);
    }
    let done = 0;
    while (done < length) {
      const n = readSync(this.#fd, buf, done, Math.min(length - done, 1073741824), offset + done);
      if (n === 0) throw new InputError(`truncated: file ended at byte ${offset + done}`, this.path);
      done += n;
    }
    return buf;
  }
  close() {
    if (this.#fd !== null) {
      closeSync(this.#fd);
      this.#fd = null;
    }
  }
};
var BufferBytes = class {
  constructor(path, buf) {
    this.path = path;
    this.buf = buf;
    this.size = buf.length;
  }
  path;
  buf;
  size;
  read(offset, length) {
    if (offset < 0 || offset + length > this.size) {
      throw new InputError(`truncated: needs bytes ${offset}..${offset + length} but there are ${this.size}`, this.path);
    }
    return this.buf.subarray(offset, offset + length);
  }
  close() {
  }
};

// src/tensor/dtype.ts
import { endianness } from "node:os";
var ITEMSIZE = { f32: 4, f16: 2, bf16: 2 };
var HOST_LE = endianness() === "LE";
function f16ToF32(h) {
  const sign = h & 32768 ? -1 : 1;
  const exp = h >> 10 & 31;
  const mant = h & 1023;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
var f16Table = null;
function halfTable() {
  if (!f16Table) {
    f16Table = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) f16Table[i] = f16ToF32(i);
  }
  return f16Table;
}
function decodeInto(bytes, dtype, order, out, outOffset, count) {
  const size = ITEMSIZE[dtype];
  if (bytes.length < count * size) throw new RangeError("decodeInto: short buffer");
  const nativeOrder = order === "le" === HOST_LE;
  if (dtype === "f32") {
    if (nativeOrder) {
      new Uint8Array(out.buffer, out.byteOffset + outOffset * 4, count * 4).set(bytes.subarray(0, count * 4));
      return;
    }
    const dv = new DataView(bytes.buffer, bytes.byteOffset, count * 4);
    const le = order === "le";
    for (let i = 0; i < count; i++) out[outOffset + i] = dv.getFloat32(i * 4, le);
    return;
  }
  const lo = order === "le" ? 0 : 1;
  const hi = 1 - lo;
  if (dtype === "f16") {
    const t = halfTable();
    for (let i = 0, j = 0; i < count; i++, j += 2) out[outOffset + i] = t[bytes[j + lo] | bytes[j + hi] << 8];
    return;
  }
  const u32 = new Uint32Array(out.buffer, out.byteOffset + outOffset * 4, count);
  for (let i = 0, j = 0; i < count; i++, j += 2) u32[i] = (bytes[j + lo] | bytes[j + hi] << 8) << 16 >>> 0;
}

// src/tensor/raw.ts
function rowsCols(shape) {
  const cols = shape[shape.length - 1];
  let rows = 1;
  for (let i = 0; i < shape.length - 1; i++) rows *= shape[i];
  return { rows, cols };
}
function shapeText(shape) {
  return `(${shape.join(", ")}${shape.length === 1 ? "," : ""})`;
}
function checkShape(path, shape, dtype, payloadBytes) {
  if (shape.length === 0) throw new InputError("0-d tensor (a scalar); expected rows x columns", path);
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) throw new InputError(`bad dimension ${d} in shape ${shapeText(shape)}`, path);
  }
  if (shape.some((d) => d === 0)) throw new InputError(`zero-length tensor, shape ${shapeText(shape)}`, path);
  const elements = shape.reduce((a, b) => a * b, 1);
  const need = elements * ITEMSIZE[dtype];
  if (!Number.isSafeInteger(need)) throw new InputError(`shape ${shapeText(shape)} is too large`, path);
  if (payloadBytes < need) {
    throw new InputError(`truncated: shape ${shapeText(shape)} ${dtype} needs ${need} payload bytes, found ${payloadBytes}`, path);
  }
  if (payloadBytes > need) {
    throw new InputError(`payload is ${payloadBytes} bytes but shape ${shapeText(shape)} ${dtype} needs ${need} (header disagrees with data)`, path);
  }
}
var RawTensor = class {
  constructor(path, src, layout) {
    this.path = path;
    this.src = src;
    this.layout = layout;
    this.dtype = layout.dtype;
    this.shape = Object.freeze([...layout.shape]);
    ({ rows: this.rows, cols: this.cols } = rowsCols(layout.shape));
    this.item = ITEMSIZE[layout.dtype];
    if (layout.fortran && layout.shape.length > 2) {
      throw new InputError(`fortran_order array with ${layout.shape.length} dimensions is not supported; save it C-contiguous`, path);
    }
  }
  path;
  src;
  layout;
  dtype;
  shape;
  rows;
  cols;
  item;
  readRows(start, count) {
    if (!Number.isInteger(start) || !Number.isInteger(count) || start < 0 || count < 0 || start + count > this.rows) {
      throw new RangeError(`${this.path}: rows [${start}, ${start + count}) outside 0..${this.rows}`);
    }
    const { cols, item, layout } = this;
    const out = new Float32Array(count * cols);
    if (count === 0) return out;
    if (!layout.fortran || this.rows === 1 || cols === 1) {
      const bytes = this.src.read(layout.offset + start * cols * item, count * cols * item);
      decodeInto(bytes, layout.dtype, layout.order, out, 0, count * cols);
      return out;
    }
    const col = new Float32Array(count);
    for (let c = 0; c < cols; c++) {
      const bytes = this.src.read(layout.offset + (c * this.rows + start) * item, count * item);
      decodeInto(bytes, layout.dtype, layout.order, col, 0, count);
      for (let r = 0; r < count; r++) out[r * cols + c] = col[r];
    }
    return out;
  }
  readRawRows(start, count, into) {
    if (!Number.isInteger(start) || !Number.isInteger(count) || start < 0 || count < 0 || start + count > this.rows) {
      throw new RangeError(`${this.path}: rows [${start}, ${start + count}) outside 0..${this.rows}`);
    }
    const { cols, item, layout } = this;
    const columnMajor = layout.fortran && this.rows > 1 && cols > 1;
    if (columnMajor || layout.order !== "le" || !HOST_LE) return null;
    const offset = layout.offset + start * cols * item;
    const length = count * cols * item;
    if (into && into.length >= length && this.src.readInto) {
      return { dtype: layout.dtype, bytes: this.src.readInto(offset, into.subarray(0, length)) };
    }
    return { dtype: layout.dtype, bytes: this.src.read(offset, length) };
  }
  rawFile() {
    const { cols, layout } = this;
    const columnMajor = layout.fortran && this.rows > 1 && cols > 1;
    const fd = this.src.fd;
    if (columnMajor || layout.order !== "le" || !HOST_LE || fd === void 0 || fd === null) return null;
    return { dtype: layout.dtype, fd, offset: layout.offset };
  }
  close() {
    this.src.close();
  }
};

// src/tensor/npy.ts
var MAGIC = Buffer.from([147, 78, 85, 77, 80, 89]);
function parsePyLiteral(text) {
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const fail2 = (what) => {
    throw new Error(`${what} at character ${i}`);
  };
  const value = () => {
    ws();
    const ch = text[i];
    if (ch === "{") {
      i++;
      const obj = {};
      for (; ; ) {
        ws();
        if (text[i] === "}") {
          i++;
          return obj;
        }
        const k = value();
        if (typeof k !== "string") fail2("dict key is not a string");
        ws();
        if (text[i] !== ":") fail2("expected ':'");
        i++;
        obj[k] = value();
        ws();
        if (text[i] === ",") i++;
        else if (text[i] !== "}") fail2("expected ',' or '}'");
      }
    }
    if (ch === "(" || ch === "[") {
      const close = ch === "(" ? ")" : "]";
      i++;
      const arr = [];
      for (; ; ) {
        ws();
        if (text[i] === close) {
          i++;
          return arr;
        }
        arr.push(value());
        ws();
        if (text[i] === ",") i++;
        else if (text[i] !== close) fail2(`expected ',' or '${close}'`);
      }
    }
    if (ch === "'" || ch === '"') {
      const end = text.indexOf(ch, i + 1);
      if (end < 0) fail2("unterminated string");
      const s = text.slice(i + 1, end);
      i = end + 1;
      return s;
    }
    const m = /^(True|False|None|-?\d+L?)/.exec(text.slice(i, i + 32));
    if (!m) fail2("unexpected token");
    i += m[0].length;
    if (m[0] === "True") return true;
    if (m[0] === "False") return false;
    if (m[0] === "None") return null;
    return Number(m[0].replace("L", ""));
  };
  const v = value();
  ws();
  if (i !== text.length) fail2("trailing text");
  return v;
}
function parseDescr(descr, opts, path) {
  if (typeof descr !== "string") throw new InputError(`unsupported dtype ${JSON.stringify(descr)} (structured arrays are not tensors)`, path);
  if (descr === "bfloat16" || descr === "<V2" || descr === "|V2" || descr === "V2") return { dtype: "bf16", order: "le" };
  const m = /^([<>|=]?)([a-zA-Z])(\d+)$/.exec(descr);
  if (!m) throw new InputError(`unknown dtype '${descr}'`, path);
  const [, bo, kind, sizeText] = m;
  const order = bo === ">" ? "be" : "le";
  const code2 = kind + sizeText;
  if (code2 === "f4") return { dtype: "f32", order };
  if (code2 === "f2") return { dtype: "f16", order };
  if (code2 === "u2") {
    if (opts.u2IsBf16) return { dtype: "bf16", order };
    throw new InputError(`dtype '${descr}' (uint16) is read only as bf16, when the run dir says so`, path);
  }
  throw new InputError(`unknown dtype '${descr}'; expected float32, float16 or bfloat16`, path);
}
function openNpyAt(src, path, opts, base = 0, length = src.size - base) {
  if (length < 10) throw new InputError(`truncated: ${length} bytes is too short for an .npy header`, path);
  const pre = src.read(base, 10);
  if (!pre.subarray(0, 6).equals(MAGIC)) throw new InputError("bad magic: not an .npy file", path);
  const major = pre[6];
  let headerLen;
  let headerStart;
  if (major === 1) {
    headerLen = pre.readUInt16LE(8);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    if (length < 12) throw new InputError("truncated .npy header", path);
    headerLen = src.read(base + 8, 4).readUInt32LE(0);
    headerStart = 12;
  } else {
    throw new InputError(`unsupported .npy format version ${major}.${pre[7]}`, path);
  }
  if (headerStart + headerLen > length) {
    throw new InputError(`truncated: header claims ${headerLen} bytes, file has ${length - headerStart} after the preamble`, path);
  }
  const text = src.read(base + headerStart, headerLen).toString(major === 3 ? "utf8" : "latin1");
  let header;
  try {
    header = parsePyLiteral(text.trim());
  } catch (err) {
    throw new InputError(`unparseable .npy header (${err.message})`, path);
  }
  if (!header || typeof header !== "object" || Array.isArray(header)) throw new InputError("unparseable .npy header (not a dict)", path);
  const { descr, fortran_order: fortran, shape } = header;
  if (descr === void 0 || fortran === void 0 || shape === void 0) {
    throw new InputError("unparseable .npy header (needs descr, fortran_order and shape)", path);
  }
  if (typeof fortran !== "boolean") throw new InputError("unparseable .npy header (fortran_order is not a bool)", path);
  if (!Array.isArray(shape) || shape.some((d) => typeof d !== "number")) {
    throw new InputError("unparseable .npy header (shape is not a tuple of integers)", path);
  }
  const { dtype, order } = parseDescr(descr, opts, path);
  const dataStart = headerStart + headerLen;
  const dims = shape;
  checkShape(path, dims, dtype, length - dataStart);
  return new RawTensor(path, src, { dtype, order, shape: dims, offset: base + dataStart, fortran });
}

// src/tensor/npz.ts
import { inflateRawSync } from "node:zlib";

// src/tensor/crc32.ts
var TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 3988292384 ^ c >>> 1 : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();
function crc32(buf) {
  let c = 4294967295;
  for (let i = 0; i < buf.length; i++) c = TABLE[(c ^ buf[i]) & 255] ^ c >>> 8;
  return (c ^ 4294967295) >>> 0;
}

// src/tensor/npz.ts
var EOCD_SIG = 101010256;
var ZIP64_LOCATOR_SIG = 117853008;
var ZIP64_EOCD_SIG = 101075792;
var CDH_SIG = 33639248;
var LFH_SIG = 67324752;
function u64(buf, at) {
  const v = buf.readBigUInt64LE(at);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError("64-bit value too large");
  return Number(v);
}
function readZipDirectory(src, path) {
  const bad = (what) => {
    throw new InputError(`not a valid .npz (zip): ${what}`, path);
  };
  if (src.size < 22) bad("file too short for a zip end record");
  const tailLen = Math.min(src.size, 22 + 65535);
  const tailStart = src.size - tailLen;
  const tail = src.read(tailStart, tailLen);
  let eocd = -1;
  for (let i = tailLen - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD_SIG) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) bad("no end-of-central-directory record");
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  if (count === 65535 || cdSize === 4294967295 || cdOffset === 4294967295) {
    const locAt = tailStart + eocd - 20;
    if (locAt < 0) bad("Zip64 locator missing");
    const loc = src.read(locAt, 20);
    if (loc.readUInt32LE(0) !== ZIP64_LOCATOR_SIG) bad("Zip64 locator missing");
    const z64At = u64(loc, 8);
    if (z64At + 56 > src.size) bad("Zip64 end record out of range");
    const z = src.read(z64At, 56);
    if (z.readUInt32LE(0) !== ZIP64_EOCD_SIG) bad("bad Zip64 end record");
    count = u64(z, 32);
    cdSize = u64(z, 40);
    cdOffset = u64(z, 48);
  }
  if (cdOffset + cdSize > src.size) bad("central directory out of range (truncated file?)");
  const cd = src.read(cdOffset, cdSize);
  const entries = [];
  let p = 0;
  for (let n = 0; n < count; n++) {
    if (p + 46 > cd.length || cd.readUInt32LE(p) !== CDH_SIG) bad("corrupt central directory");
    const flags = cd.readUInt16LE(p + 8);
    const crc = cd.readUInt32LE(p + 16);
    const method = cd.readUInt16LE(p + 10);
    let compressedSize = cd.readUInt32LE(p + 20);
    let size = cd.readUInt32LE(p + 24);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    let localHeaderOffset = cd.readUInt32LE(p + 42);
    if (p + 46 + nameLen + extraLen + commentLen > cd.length) bad("corrupt central directory");
    const name = cd.subarray(p + 46, p + 46 + nameLen).toString(flags & 2048 ? "utf8" : "latin1");
    let e = p + 46 + nameLen;
    const eEnd = e + extraLen;
    while (e + 4 <= eEnd) {
      const id = cd.readUInt16LE(e);
      const len = cd.readUInt16LE(e + 2);
      if (id === 1) {
        let q = e + 4;
        const take = () => {
          if (q + 8 > e + 4 + len) bad("short Zip64 extra field");
          const v = u64(cd, q);
          q += 8;
          return v;
        };
        if (size === 4294967295) size = take();
        if (compressedSize === 4294967295) compressedSize = take();
        if (localHeaderOffset === 4294967295) localHeaderOffset = take();
      }
      e += 4 + len;
    }
    entries.push({ name, method, compressedSize, size, localHeaderOffset, flags, crc });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}
function openNpz(src, path, opts) {
  const entries = readZipDirectory(src, path).filter((e) => !e.name.endsWith("/"));
  const keyOf = (e) => e.name.replace(/\.npy$/, "");
  let entry;
  if (opts.key !== void 0) {
    entry = entries.find((e) => e.name === opts.key || keyOf(e) === opts.key);
    if (!entry) throw new InputError(`no member '${opts.key}' (has: ${entries.map(keyOf).join(", ") || "none"})`, path);
  } else {
    if (entries.length !== 1) {
      throw new InputError(`holds ${entries.length} arrays (${entries.map(keyOf).join(", ")}); say which one with a key`, path);
    }
    entry = entries[0];
  }
  const where = `${path}[${keyOf(entry)}]`;
  if (entry.flags & 1) throw new InputError(`member '${entry.name}' is encrypted`, path);
  if (entry.localHeaderOffset + 30 > src.size) throw new InputError(`truncated: member '${entry.name}' header out of range`, path);
  const lfh = src.read(entry.localHeaderOffset, 30);
  if (lfh.readUInt32LE(0) !== LFH_SIG) throw new InputError(`corrupt local header for member '${entry.name}'`, path);
  const dataStart = entry.localHeaderOffset + 30 + lfh.readUInt16LE(26) + lfh.readUInt16LE(28);
  if (dataStart + entry.compressedSize > src.size) throw new InputError(`truncated: member '${entry.name}' runs past the end of the file`, path);
  if (entry.method === 0) {
    return openNpyAt(src, where, opts, dataStart, entry.compressedSize);
  }
  if (entry.method !== 8) throw new InputError(`member '${entry.name}' uses zip method ${entry.method}; only stored and deflated are supported`, path);
  let data;
  try {
    data = inflateRawSync(src.read(dataStart, entry.compressedSize));
  } catch (err) {
    throw new InputError(`member '${entry.name}' does not inflate (${err.message})`, path);
  }
  if (data.length !== entry.size) throw new InputError(`member '${entry.name}' inflated to ${data.length} bytes, directory says ${entry.size}`, path);
  if (crc32(data) !== entry.crc) throw new InputError(`member '${entry.name}' fails its CRC-32 check (corrupt archive)`, path);
  src.close();
  return openNpyAt(new BufferBytes(where, data), where, opts);
}

// src/tensor/safetensors.ts
var DTYPES = { F32: "f32", F16: "f16", BF16: "bf16" };
function openSafetensors(src, path, opts) {
  if (src.size < 8) throw new InputError(`truncated: ${src.size} bytes is too short for a safetensors header`, path);
  const n = src.read(0, 8).readBigUInt64LE(0);
  if (n > BigInt(src.size - 8)) throw new InputError(`truncated: header claims ${n} bytes, file has ${src.size - 8}`, path);
  const headerLen = Number(n);
  let header;
  try {
    header = JSON.parse(src.read(8, headerLen).toString("utf8"));
  } catch (err) {
    throw new InputError(`unparseable safetensors header (${err.message})`, path);
  }
  if (!header || typeof header !== "object" || Array.isArray(header)) throw new InputError("unparseable safetensors header (not an object)", path);
  const names = Object.keys(header).filter((k) => k !== "__metadata__");
  let name;
  if (opts.key !== void 0) {
    if (!names.includes(opts.key)) throw new InputError(`no tensor '${opts.key}' (has: ${names.join(", ") || "none"})`, path);
    name = opts.key;
  } else {
    if (names.length !== 1) throw new InputError(`holds ${names.length} tensors (${names.join(", ")}); say which one with a key`, path);
    name = names[0];
  }
  const where = names.length === 1 ? path : `${path}[${name}]`;
  const e = header[name];
  if (!e || typeof e !== "object" || typeof e.dtype !== "string" || !Array.isArray(e.shape) || !Array.isArray(e.data_offsets)) {
    throw new InputError(`unparseable safetensors entry '${name}'`, path);
  }
  const dtype = DTYPES[e.dtype];
  if (!dtype) throw new InputError(`tensor '${name}' has unknown dtype '${e.dtype}'; expected F32, F16 or BF16`, path);
  const [begin, end] = e.data_offsets;
  const payload = src.size - 8 - headerLen;
  if (!Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || begin < 0 || end < begin) {
    throw new InputError(`tensor '${name}' has bad data_offsets [${begin}, ${end}]`, path);
  }
  if (end > payload) throw new InputError(`truncated: tensor '${name}' ends at payload byte ${end}, payload has ${payload}`, path);
  if (e.shape.some((d) => typeof d !== "number")) throw new InputError(`tensor '${name}' has a bad shape`, path);
  checkShape(where, e.shape, dtype, end - begin);
  return new RawTensor(where, src, { dtype, order: "le", shape: e.shape, offset: 8 + headerLen + begin });
}

// src/tensor/index.ts
var TENSOR_EXTENSIONS = [".npy", ".npz", ".safetensors"];
function openTensor(path, opts = {}) {
  const ext = extname(path).toLowerCase();
  if (!TENSOR_EXTENSIONS.includes(ext)) {
    throw new InputError(`unknown tensor file extension '${ext}'; expected ${TENSOR_EXTENSIONS.join(", ")}`, path);
  }
  const src = new FileBytes(path);
  try {
    if (ext === ".npy") return openNpyAt(src, path, opts);
    if (ext === ".npz") return openNpz(src, path, opts);
    return openSafetensors(src, path, opts);
  } catch (err) {
    src.close();
    throw err;
  }
}

// src/metrics/accumulator.ts
var SUM = {
  /** Whole-tensor cosine numerator and norms (sumB2 also feeds SQNR). */
  ab: 0,
  a2: 1,
  b2: 2,
  /** sum |a-b| (mean_abs and mean_rel_L1 numerator) and max |a-b|. */
  absErr: 3,
  maxAbs: 4,
  /** sum and max of |a-b| / max(|b|, 1e-6). */
  relErr: 5,
  maxRel: 6,
  /** sum |b| (mean_rel_L1 denominator). */
  absRef: 7,
  /** sum (a-b)^2 (SQNR noise). */
  sqErr: 8
};
var SUM_SLOTS = 9;
var NF = { nan: 0, posInf: 3, negInf: 6 };
var NF_SLOTS = 9;
function createAccumulator(cols, realLen, npuRows) {
  const nonFinite = new Float64Array(NF_SLOTS);
  for (const base of [NF.nan, NF.posInf, NF.negInf]) {
    nonFinite[base + 1] = -1;
    nonFinite[base + 2] = -1;
  }
  return {
    cols,
    realLen,
    npuRows,
    rowDot: new Float64Array(realLen),
    rowA2: new Float64Array(realLen),
    rowB2: new Float64Array(realLen),
    sums: new Float64Array(SUM_SLOTS),
    nonFinite,
    rowsScanned: 0
  };
}

// src/metrics/kernel-js.ts
var REL_FLOOR = Math.fround(1e-6);
function noteNonFinite(nf, base, row, col) {
  if (nf[base] === 0) {
    nf[base + 1] = row;
    nf[base + 2] = col;
  }
  nf[base]++;
}
function noteRow(nf, npu, o, cols, row) {
  for (let c = 0; c < cols; c++) {
    const a = npu[o + c];
    if (!(a - a === 0)) noteNonFinite(nf, a !== a ? NF.nan : a > 0 ? NF.posInf : NF.negInf, row, c);
  }
}
var jsKernel = {
  name: "js",
  scanBlock(acc, npu, ref, start, count) {
    const { cols, realLen, rowDot, rowA2, rowB2, sums, nonFinite } = acc;
    const real = Math.max(0, Math.min(count, realLen - start));
    if (ref.length < real * cols) throw new RangeError(`scanBlock: reference block has ${ref.length / cols} rows, needs ${real}`);
    if (npu.length < count * cols) throw new RangeError(`scanBlock: NPU block has ${npu.length / cols} rows, needs ${count}`);
    let sAB = sums[SUM.ab];
    let sA2 = sums[SUM.a2];
    let sB2 = sums[SUM.b2];
    let sAbs = sums[SUM.absErr];
    let sRel = sums[SUM.relErr];
    let sAbsRef = sums[SUM.absRef];
    let sSq = sums[SUM.sqErr];
    let maxAbs = sums[SUM.maxAbs];
    let maxRel = sums[SUM.maxRel];
    const n4 = cols - (cols & 3);
    const tailA = new Float32Array(4);
    const tailB = new Float32Array(4);
    for (let r = 0; r < count; r++) {
      const row = start + r;
      const o = r * cols;
      if (r < real) {
        let d0 = 0, d1 = 0, d2 = 0, d3 = 0;
        let p0 = 0, p1 = 0, p2 = 0, p3 = 0;
        let q0 = 0, q1 = 0, q2 = 0, q3 = 0;
        let e0 = 0, e1 = 0, e2 = 0, e3 = 0;
        let f0 = 0, f1 = 0, f2 = 0, f3 = 0;
        let g0 = 0, g1 = 0, g2 = 0, g3 = 0;
        let h0 = 0, h1 = 0, h2 = 0, h3 = 0;
        for (let c = 0; c < cols; c += 4) {
          let A = npu;
          let B = ref;
          let i = o + c;
          if (c >= n4) {
            for (let k = 0; k < 4; k++) {
              tailA[k] = c + k < cols ? npu[i + k] : 0;
              tailB[k] = c + k < cols ? ref[i + k] : 0;
            }
            A = tailA;
            B = tailB;
            i = 0;
          }
          {
            const a = A[i];
            const b = B[i];
            d0 += a * b;
            p0 += a * a;
            q0 += b * b;
            const d = a - b;
            const ad = Math.abs(d);
            const ab = Math.abs(b);
            const rel = ad / (ab > REL_FLOOR ? ab : REL_FLOOR);
            e0 += ad;
            f0 += ab;
            g0 += d * d;
            h0 += rel;
            if (ad > maxAbs || ad !== ad) maxAbs = ad;
            if (rel > maxRel || rel !== rel) maxRel = rel;
          }
          {
            const a = A[i + 1];
            const b = B[i + 1];
            d1 += a * b;
            p1 += a * a;
            q1 += b * b;
            const d = a - b;
            const ad = Math.abs(d);
            const ab = Math.abs(b);
            const rel = ad / (ab > REL_FLOOR ? ab : REL_FLOOR);
            e1 += ad;
            f1 += ab;
            g1 += d * d;
            h1 += rel;
            if (ad > maxAbs || ad !== ad) maxAbs = ad;
            if (rel > maxRel || rel !== rel) maxRel = rel;
          }
          {
            const a = A[i + 2];
            const b = B[i + 2];
            d2 += a * b;
            p2 += a * a;
            q2 += b * b;
            const d = a - b;
            const ad = Math.abs(d);
            const ab = Math.abs(b);
            const rel = ad / (ab > REL_FLOOR ? ab : REL_FLOOR);
            e2 += ad;
            f2 += ab;
            g2 += d * d;
            h2 += rel;
            if (ad > maxAbs || ad !== ad) maxAbs = ad;
            if (rel > maxRel || rel !== rel) maxRel = rel;
          }
          {
            const a = A[i + 3];
            const b = B[i + 3];
            d3 += a * b;
            p3 += a * a;
            q3 += b * b;
            const d = a - b;
            const ad = Math.abs(d);
            const ab = Math.abs(b);
            const rel = ad / (ab > REL_FLOOR ? ab : REL_FLOOR);
            e3 += ad;
            f3 += ab;
            g3 += d * d;
            h3 += rel;
            if (ad > maxAbs || ad !== ad) maxAbs = ad;
            if (rel > maxRel || rel !== rel) maxRel = rel;
          }
        }
        const a2 = p0 + p1 + (p2 + p3);
        rowDot[row] = d0 + d1 + (d2 + d3);
        rowA2[row] = a2;
        rowB2[row] = q0 + q1 + (q2 + q3);
        sAB += rowDot[row];
        sA2 += a2;
        sB2 += rowB2[row];
        sAbs += e0 + e1 + (e2 + e3);
        sAbsRef += f0 + f1 + (f2 + f3);
        sSq += g0 + g1 + (g2 + g3);
        sRel += h0 + h1 + (h2 + h3);
        if (!(a2 - a2 === 0)) noteRow(nonFinite, npu, o, cols, row);
      } else {
        noteRow(nonFinite, npu, o, cols, row);
      }
    }
    sums[SUM.ab] = sAB;
    sums[SUM.a2] = sA2;
    sums[SUM.b2] = sB2;
    sums[SUM.absErr] = sAbs;
    sums[SUM.maxAbs] = maxAbs;
    sums[SUM.relErr] = sRel;
    sums[SUM.maxRel] = maxRel;
    sums[SUM.absRef] = sAbsRef;
    sums[SUM.sqErr] = sSq;
    acc.rowsScanned = start + count;
  }
};

// src/metrics/engine.ts
var ENGINE_ENV = "NPU_BLOCK_GATE_ENGINE";
var nativeLoader = null;
function registerNativeKernel(loader) {
  nativeLoader = loader;
}
function loadNative() {
  try {
    return nativeLoader ? nativeLoader() : null;
  } catch {
    return null;
  }
}
function selectEngine(env = process.env) {
  const want = (env[ENGINE_ENV] ?? "auto").trim().toLowerCase() || "auto";
  if (want === "js") return jsKernel;
  if (want === "native") {
    const k = loadNative();
    if (!k) throw new InfraError(`${ENGINE_ENV}=native but the native comparison addon is not available`);
    return k;
  }
  if (want === "auto") return loadNative() ?? jsKernel;
  throw new InputError(`${ENGINE_ENV} must be js, native or auto, not '${want}'`);
}

// src/metrics/stats.ts
function sorted(values) {
  return Float64Array.from(values).sort();
}
function hasNaN(values) {
  for (let i = 0; i < values.length; i++) if (values[i] !== values[i]) return true;
  return false;
}
function lerp(a, b, t) {
  const diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}
function percentileSorted(s, q) {
  const n = s.length;
  if (n === 0) return NaN;
  const idx = (n - 1) * (q / 100);
  const lo = Math.floor(idx);
  const hi = Math.min(lo + 1, n - 1);
  return lerp(s[lo], s[hi], idx - lo);
}
function medianSorted(s) {
  const n = s.length;
  if (n === 0) return NaN;
  const m = n >> 1;
  return n % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
function summarize(values) {
  if (values.length === 0 || hasNaN(values)) return { min: NaN, p5: NaN, median: NaN, mean: NaN };
  const s = sorted(values);
  let sum = 0;
  for (let i = 0; i < s.length; i++) sum += values[i];
  return { min: s[0], p5: percentileSorted(s, 5), median: medianSorted(s), mean: sum / s.length };
}

// src/metrics/finalize.ts
var DEFAULT_WORST_K = 5;
function rowCosine(dot, a2, b2) {
  if (dot !== dot || a2 !== a2 || b2 !== b2) return NaN;
  if (a2 === 0 || b2 === 0) return 0;
  return dot / (Math.sqrt(a2) * Math.sqrt(b2));
}
function findBadRuns(cosines, threshold) {
  const runs = [];
  let start = -1;
  for (let i = 0; i <= cosines.length; i++) {
    const bad = i < cosines.length && !(cosines[i] >= threshold);
    if (bad && start < 0) start = i;
    if (!bad && start >= 0) {
      runs.push({ start, end: i - 1, length: i - start });
      start = -1;
    }
  }
  return runs;
}
function worstRows(cosines, k) {
  const before = (x, y) => {
    const cx = cosines[x];
    const cy = cosines[y];
    const nx = cx !== cx;
    const ny = cy !== cy;
    if (nx !== ny) return nx;
    if (!nx && cx !== cy) return cx < cy;
    return x < y;
  };
  const keep = Math.max(0, Math.min(k, cosines.length));
  const top = [];
  for (let i = 0; i < cosines.length && keep > 0; i++) {
    if (top.length === keep && !before(i, top[keep - 1])) continue;
    let j = top.length < keep ? top.length : keep - 1;
    if (top.length < keep) top.push(i);
    while (j > 0 && before(i, top[j - 1])) {
      top[j] = top[j - 1];
      j--;
    }
    top[j] = i;
  }
  return top.map((row) => ({ row, cosine: cosines[row] }));
}
function firstOf(nf, base) {
  const count = nf[base];
  return { count, first: count > 0 ? { row: nf[base + 1], col: nf[base + 2] } : null };
}
function finalize(acc, opts) {
  const { realLen, cols, sums } = acc;
  const cosines = new Array(realLen);
  const rowNormRatios = new Array(realLen);
  const zeroRows = [];
  for (let i = 0; i < realLen; i++) {
    cosines[i] = rowCosine(acc.rowDot[i], acc.rowA2[i], acc.rowB2[i]);
    rowNormRatios[i] = acc.rowB2[i] === 0 ? NaN : Math.sqrt(acc.rowA2[i]) / Math.sqrt(acc.rowB2[i]);
    if (acc.rowA2[i] === 0 || acc.rowB2[i] === 0) zeroRows.push(i);
  }
  const n = realLen * cols;
  const s = summarize(cosines);
  return {
    engine: opts.engine,
    realLen,
    npuRows: acc.npuRows,
    cols,
    wholeCosine: rowCosine(sums[SUM.ab], sums[SUM.a2], sums[SUM.b2]),
    perPosition: {
      cosines,
      ...s,
      worst: worstRows(cosines, opts.worstK ?? DEFAULT_WORST_K),
      zeroRows,
      badRuns: findBadRuns(cosines, opts.threshold)
    },
    errors: {
      maxAbs: sums[SUM.maxAbs],
      meanAbs: sums[SUM.absErr] / n,
      maxRel: sums[SUM.maxRel],
      meanRel: sums[SUM.relErr] / n,
      meanRelL1: sums[SUM.absErr] / sums[SUM.absRef],
      sqnrDb: 10 * Math.log10(sums[SUM.b2] / sums[SUM.sqErr]),
      normRatio: sums[SUM.b2] === 0 ? NaN : Math.sqrt(sums[SUM.a2]) / Math.sqrt(sums[SUM.b2]),
      rowNormRatios
    },
    nonFinite: {
      nan: firstOf(acc.nonFinite, NF.nan),
      posInf: firstOf(acc.nonFinite, NF.posInf),
      negInf: firstOf(acc.nonFinite, NF.negInf),
      rowsScanned: acc.rowsScanned
    }
  };
}

// src/metrics/native.ts
import { existsSync as existsSync3 } from "node:fs";
import { createRequire } from "node:module";
import { dirname as dirname2, join as join3 } from "node:path";
import { fileURLToPath as fileURLToPath2 } from "node:url";
var NATIVE_PATH_ENV = "NPU_BLOCK_GATE_NATIVE";
var NATIVE_THREADS_ENV = "NPU_BLOCK_GATE_THREADS";
var NATIVE_ABI = 1;
var ADDON = "npu_block_gate.node";
var PREBUILT = `npu_block_gate-${process.platform}-${process.arch}.node`;
var DTYPE_CODE = { f32: 0, f16: 1, bf16: 2 };
function nativeCandidates(from = dirname2(fileURLToPath2(import.meta.url)), env = process.env) {
  const explicit = env[NATIVE_PATH_ENV]?.trim();
  if (explicit) return [explicit];
  const dirs = [];
  for (let dir = from; ; ) {
    dirs.push(dir);
    if (existsSync3(join3(dir, "package.json"))) break;
    const up = dirname2(dir);
    if (up === dir) break;
    dir = up;
  }
  const built = dirs.map((d) => join3(d, "native", "build", "Release", ADDON));
  const prebuilt = process.platform === "linux" && process.arch === "x64" ? dirs.flatMap((d) => [join3(d, "dist", "native", PREBUILT), join3(d, "native", PREBUILT)]) : [];
  return [...built, ...prebuilt];
}
function threadsFrom(env) {
  const n = Number(env[NATIVE_THREADS_ENV] ?? 0);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 64) : 0;
}
function realRows(acc, start, count) {
  return Math.max(0, Math.min(count, acc.realLen - start));
}
function nativeKernel(addon, path, threads = 0, rawBlockBytes = 4 << 20, files = true) {
  const scanFiles = files && typeof addon.scanFiles === "function" ? addon.scanFiles.bind(addon) : null;
  return {
    name: "native",
    path,
    isa: addon.isa,
    threads,
    addon,
    rawBlockBytes,
    tuned: (o) => nativeKernel(addon, path, o.threads ?? threads, o.rawBlockBytes ?? rawBlockBytes, o.files ?? files),
    ...scanFiles && {
      async scanFiles(acc, npu, ref) {
        const { rowDot, rowA2, rowB2, sums, nonFinite, cols, npuRows, realLen } = acc;
        await scanFiles(rowDot, rowA2, rowB2, sums, nonFinite, npu.fd, npu.offset, DTYPE_CODE[npu.dtype], ref.fd, ref.offset, DTYPE_CODE[ref.dtype], cols, npuRows, realLen, threads);
        acc.rowsScanned = npuRows;
      }
    },
    scanBlock(acc, npu, ref, start, count) {
      const real = realRows(acc, start, count);
      addon.scan(true, acc.rowDot, acc.rowA2, acc.rowB2, acc.sums, acc.nonFinite, npu, 0, ref, 0, acc.cols, start, count, real, threads);
      acc.rowsScanned = start + count;
    },
    async scanRawBlock(acc, npu, ref, start, count) {
      const real = realRows(acc, start, count);
      await addon.scan(
        false,
        acc.rowDot,
        acc.rowA2,
        acc.rowB2,
        acc.sums,
        acc.nonFinite,
        npu.bytes,
        DTYPE_CODE[npu.dtype],
        ref.bytes,
        DTYPE_CODE[ref.dtype],
        acc.cols,
        start,
        count,
        real,
        threads
      );
      acc.rowsScanned = start + count;
    }
  };
}
function tryLoadNative(candidates, env = process.env) {
  const require2 = createRequire(import.meta.url);
  const problems = [];
  for (const path of candidates) {
    if (!existsSync3(path)) continue;
    try {
      const addon = require2(path);
      if (addon?.abi !== NATIVE_ABI || typeof addon.scan !== "function") {
        problems.push(`${path} is stale (ABI ${String(addon?.abi)}, expected ${NATIVE_ABI})`);
        continue;
      }
      return { kernel: nativeKernel(addon, path, threadsFrom(env)) };
    } catch (err) {
      const first = String(err?.message ?? err).split("\n")[0].trim();
      problems.push(`${path}: ${first}`);
    }
  }
  if (problems.length) return { kernel: null, reason: problems.join("; ") };
  return { kernel: null, reason: `no addon found (looked for ${candidates.join(", ") || "nothing"})` };
}
function warningLine(reason) {
  return `npu-block-gate: warning: native engine unavailable (${reason}); using the TypeScript engine`;
}
var loaded = null;
function loadNativeKernel(env = process.env, warn2 = (line) => process.stderr.write(`${line}
`)) {
  if (!loaded) {
    loaded = tryLoadNative(nativeCandidates(void 0, env), env);
    const want = (env[ENGINE_ENV] ?? "").trim().toLowerCase();
    if (!loaded.kernel && want !== "js") warn2(warningLine(loaded.reason));
  }
  return loaded.kernel;
}
registerNativeKernel(() => loadNativeKernel());

// src/metrics/json.ts
function encode(v) {
  if (typeof v === "number") return Number.isFinite(v) ? v : Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
  if (Array.isArray(v)) return v.map(encode);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, encode(x)]));
  return v;
}
var toJsonSafe = (v) => encode(v);

// src/metrics/index.ts
var BLOCK_ROWS = 256;
function validatePair(npu, ref, realLenOpt) {
  if (npu.cols !== ref.cols) {
    throw new InputError(`${npu.cols} columns per row but the reference ${ref.path} has ${ref.cols}`, npu.path);
  }
  if (ref.rows > npu.rows) {
    throw new InputError(`reference has ${ref.rows} rows, more than the ${npu.rows} of the NPU tensor ${npu.path}`, ref.path);
  }
  const realLen = realLenOpt ?? ref.rows;
  if (!Number.isInteger(realLen) || realLen < 1) {
    throw new InputError(`real length must be a positive whole number of rows, got ${realLen} (comparing ${npu.path})`, ref.path);
  }
  if (realLen > ref.rows) throw new InputError(`real length ${realLen} exceeds the reference's ${ref.rows} rows`, ref.path);
  if (realLen > npu.rows) throw new InputError(`real length ${realLen} exceeds the NPU tensor's ${npu.rows} rows`, npu.path);
  return realLen;
}
async function compare(npu, ref, opts, kernel = selectEngine()) {
  const realLen = validatePair(npu, ref, opts.realLen);
  const acc = createAccumulator(npu.cols, realLen, npu.rows);
  const files = kernel.scanFiles ? [npu.rawFile?.(), ref.rawFile?.()] : [];
  if (kernel.scanFiles && files[0] && files[1]) {
    try {
      await kernel.scanFiles(acc, files[0], files[1]);
    } catch (err) {
      const msg = oneLine(err);
      if (msg.startsWith("ref: ")) throw new InputError(msg.slice(5), ref.path);
      throw new InputError(msg.replace(/^npu: /, ""), npu.path);
    }
    return finalize(acc, { threshold: opts.threshold, worstK: opts.worstK, engine: kernel.name });
  }
  if (kernel.scanRawBlock) {
    await scanRaw(kernel, acc, npu, ref);
    return finalize(acc, { threshold: opts.threshold, worstK: opts.worstK, engine: kernel.name });
  }
  const empty = new Float32Array(0);
  const blockBytes = Math.min(BLOCK_ROWS, npu.rows) * acc.cols * 4;
  const bufs = [takeBuffer(blockBytes), takeBuffer(blockBytes), takeBuffer(blockBytes), takeBuffer(blockBytes)];
  try {
    for (let start = 0; start < npu.rows; start += BLOCK_ROWS) {
      const count = Math.min(BLOCK_ROWS, npu.rows - start);
      const real = Math.max(0, Math.min(count, realLen - start));
      const a = f32Rows(npu, start, count, bufs[0], bufs[1]);
      const b = real > 0 ? f32Rows(ref, start, real, bufs[2], bufs[3]) : empty;
      kernel.scanBlock(acc, a, b, start, count);
      if (start / BLOCK_ROWS % 16 === 15) await new Promise((r) => setImmediate(r));
    }
  } finally {
    giveBack(bufs);
  }
  return finalize(acc, { threshold: opts.threshold, worstK: opts.worstK, engine: kernel.name });
}
var RAW_BLOCK_BYTES = 4 << 20;
var EMPTY_RAW = { dtype: "f32", bytes: new Uint8Array(0) };
var bufferPool = [];
var POOL_MAX = 8;
function takeBuffer(bytes) {
  const i = bufferPool.findIndex((b) => b.length >= bytes);
  if (i >= 0) return bufferPool.splice(i, 1)[0];
  return new Uint8Array(bytes);
}
function giveBack(bufs) {
  bufferPool.push(...bufs);
  bufferPool.sort((x, y) => y.length - x.length);
  bufferPool.length = Math.min(bufferPool.length, POOL_MAX);
}
function rawRows(src, start, count, into) {
  const raw = src.readRawRows?.(start, count, into);
  if (raw) return raw;
  const f = src.readRows(start, count);
  return { dtype: "f32", bytes: new Uint8Array(f.buffer, f.byteOffset, f.byteLength) };
}
function f32Rows(src, start, count, raw, wide) {
  const got = src.readRawRows?.(start, count, raw);
  if (!got) return src.readRows(start, count);
  const n = count * src.cols;
  if (got.dtype === "f32" && got.bytes.byteOffset % 4 === 0) return new Float32Array(got.bytes.buffer, got.bytes.byteOffset, n);
  const out = new Float32Array(wide.buffer, wide.byteOffset, n);
  decodeInto(got.bytes, got.dtype, "le", out, 0, n);
  return out;
}
async function scanRaw(kernel, acc, npu, ref) {
  const rowsPer = Math.max(1, Math.floor((kernel.rawBlockBytes ?? RAW_BLOCK_BYTES) / (acc.cols * 4)));
  const blockBytes = Math.min(rowsPer, npu.rows) * acc.cols * 4;
  const bufs = [takeBuffer(blockBytes), takeBuffer(blockBytes), takeBuffer(blockBytes), takeBuffer(blockBytes)];
  let flip = 0;
  const read = (start) => {
    const count = Math.min(rowsPer, npu.rows - start);
    const real = Math.max(0, Math.min(count, acc.realLen - start));
    const a = rawRows(npu, start, count, bufs[flip]);
    const b = real > 0 ? rawRows(ref, start, real, bufs[flip + 2]) : EMPTY_RAW;
    flip ^= 1;
    return { start, count, a, b };
  };
  try {
    let cur = read(0);
    for (; ; ) {
      const scanning = kernel.scanRawBlock(acc, cur.a, cur.b, cur.start, cur.count);
      const nextStart = cur.start + cur.count;
      let next = null;
      try {
        next = nextStart < npu.rows ? read(nextStart) : null;
      } catch (err) {
        await scanning.catch(() => {
        });
        throw err;
      }
      await scanning;
      if (!next) return;
      cur = next;
    }
  } finally {
    giveBack(bufs);
  }
}

// src/gates/thresholds.ts
var WHOLE_COSINE_MIN = 0.99;
var SQNR_GOOD_DB = 40;
var NORM_RATIO_WARN = 0.01;
var MAX_ABS_REGRESSION = 1.5;
function perPositionThreshold(headDim) {
  if (!Number.isFinite(headDim) || headDim <= 0) throw new RangeError(`head_dim must be a positive number, got ${headDim}`);
  const t = 0.99 - 0.01 * Math.log2(headDim / 64);
  return Math.min(0.99, Math.max(0.97, t));
}
function formatThreshold(t) {
  return Number(t.toFixed(4)).toString();
}

// src/report/format.ts
function fmtCos(x) {
  if (x === null || x === void 0) return "n/a";
  if (Number.isNaN(x)) return "NaN";
  return x.toFixed(6);
}
function fmtSci(x, digits = 3) {
  if (x === null || x === void 0) return "n/a";
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Inf" : "-Inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  return a >= 1e-3 && a < 1e4 ? Number(x.toPrecision(digits + 1)).toString() : x.toExponential(digits);
}
function fmtDb(x) {
  if (x === null || x === void 0) return "n/a";
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "inf dB" : "-inf dB";
  return `${x.toFixed(1)} dB`;
}
function fmtRatio(x) {
  if (x === null || x === void 0) return "n/a";
  if (Number.isNaN(x)) return "NaN";
  return x.toFixed(4);
}
function fmtSeconds(s) {
  return s < 10 ? `${s.toFixed(2)}s` : `${s.toFixed(1)}s`;
}
function fmtRun(start, end) {
  return start === end ? `${start}` : `${start}-${end}`;
}
function fmtSqnr(x, goodDb) {
  const s = fmtDb(x);
  return typeof x === "number" && Number.isFinite(x) && x < goodDb ? `${s} (< ${goodDb} dB)` : s;
}

// src/gates/evaluate.ts
function gate(id, name, ok2, value, bar, detail) {
  return { id, name, status: ok2 ? "pass" : "fail", passed: ok2, value, bar, detail };
}
function metricGates(m, th) {
  const pp = m.perPosition;
  const g1 = gate(
    "G1",
    "whole-tensor cosine",
    m.wholeCosine >= th.whole,
    m.wholeCosine,
    `>= ${th.whole}`,
    `over ${m.realLen} real rows x ${m.cols}`
  );
  const runs = pp.badRuns.map((r) => fmtRun(r.start, r.end)).join(", ");
  const g2detail = Number.isNaN(pp.min) ? "per-position cosine is NaN for at least one real row" : pp.badRuns.length > 0 ? `rows under ${formatThreshold(th.perPosition)}: ${runs}` : `all ${m.realLen} real rows >= ${formatThreshold(th.perPosition)}`;
  const g2 = gate(
    "G2",
    `per-position min cosine (head_dim ${th.headDim})`,
    pp.min >= th.perPosition,
    pp.min,
    `>= ${formatThreshold(th.perPosition)}${th.overridden ? " (override)" : ""}`,
    g2detail
  );
  const nf = m.nonFinite;
  const bad = nf.nan.count + nf.posInf.count + nf.negInf.count;
  const parts = [];
  for (const [label, c] of [["NaN", nf.nan], ["+Inf", nf.posInf], ["-Inf", nf.negInf]]) {
    if (c.count > 0) {
      const where = c.first ? ` (first at row ${c.first.row}, col ${c.first.col}${c.first.row >= m.realLen ? ", a padded row" : ""})` : "";
      parts.push(`${c.count} ${label}${where}`);
    }
  }
  const g3 = gate(
    "G3",
    "no NaN/Inf in NPU output",
    bad === 0,
    bad,
    "= 0",
    bad === 0 ? `all ${nf.rowsScanned} rows finite, padded rows included` : parts.join("; ")
  );
  return [g1, g2, g3];
}
function documentationGate(d) {
  if (!d.attempted) {
    return { id: "G4", name: "result documented", status: "skip", passed: true, value: null, bar: "phase2_block.md written", detail: d.detail };
  }
  return gate("G4", "result documented", d.ok, d.path, "phase2_block.md written", d.detail);
}
function outcomeOf(gates) {
  return gates.some((g) => g.status === "fail") ? "fail" : "pass";
}
function warningsFor(m, baseline) {
  const w = [];
  const r = m.errors.normRatio;
  if (Number.isFinite(r) && Math.abs(r - 1) > NORM_RATIO_WARN) {
    const pct = ((r - 1) * 100).toFixed(1);
    w.push({ id: "norm_ratio", message: `norm ratio |npu|/|ref| = ${fmtRatio(r)} (${r > 1 ? "+" : ""}${pct}%): the NPU output is scaled; cosine cannot see scale` });
  }
  if (m.perPosition.zeroRows.length > 0) {
    const rows = m.perPosition.zeroRows;
    w.push({ id: "zero_rows", message: `${rows.length} real row(s) are all zero in one tensor (cosine 0 by convention): ${rows.slice(0, 10).join(", ")}${rows.length > 10 ? ", ..." : ""}` });
  }
  if (baseline && Number.isFinite(m.errors.maxAbs) && m.errors.maxAbs > MAX_ABS_REGRESSION * baseline.maxAbs) {
    w.push({ id: "max_abs_regression", message: `max_abs ${fmtSci(m.errors.maxAbs)} exceeds ${MAX_ABS_REGRESSION}x the baseline ${fmtSci(baseline.maxAbs)} recorded at ${baseline.commit}` });
  }
  return w;
}

// src/report/types.ts
var REPORT_SCHEMA = "npu-block-gate/report";
var REPORT_SCHEMA_VERSION = 1;

// node_modules/markdown-table/index.js
function defaultStringLength(value) {
  return value.length;
}
function markdownTable(table2, options) {
  const settings = options || {};
  const align = (settings.align || []).concat();
  const stringLength = settings.stringLength || defaultStringLength;
  const alignments = [];
  const cellMatrix = [];
  const sizeMatrix = [];
  const longestCellByColumn = [];
  let mostCellsPerRow = 0;
  let rowIndex = -1;
  while (++rowIndex < table2.length) {
    const row2 = [];
    const sizes2 = [];
    let columnIndex2 = -1;
    if (table2[rowIndex].length > mostCellsPerRow) {
      mostCellsPerRow = table2[rowIndex].length;
    }
    while (++columnIndex2 < table2[rowIndex].length) {
      const cell2 = serialize(table2[rowIndex][columnIndex2]);
      if (settings.alignDelimiters !== false) {
        const size = stringLength(cell2);
        sizes2[columnIndex2] = size;
        if (longestCellByColumn[columnIndex2] === void 0 || size > longestCellByColumn[columnIndex2]) {
          longestCellByColumn[columnIndex2] = size;
        }
      }
      row2.push(cell2);
    }
    cellMatrix[rowIndex] = row2;
    sizeMatrix[rowIndex] = sizes2;
  }
  let columnIndex = -1;
  if (typeof align === "object" && "length" in align) {
    while (++columnIndex < mostCellsPerRow) {
      alignments[columnIndex] = toAlignment(align[columnIndex]);
    }
  } else {
    const code2 = toAlignment(align);
    while (++columnIndex < mostCellsPerRow) {
      alignments[columnIndex] = code2;
    }
  }
  columnIndex = -1;
  const row = [];
  const sizes = [];
  while (++columnIndex < mostCellsPerRow) {
    const code2 = alignments[columnIndex];
    let before = "";
    let after = "";
    if (code2 === 99) {
      before = ":";
      after = ":";
    } else if (code2 === 108) {
      before = ":";
    } else if (code2 === 114) {
      after = ":";
    }
    let size = settings.alignDelimiters === false ? 1 : Math.max(
      1,
      longestCellByColumn[columnIndex] - before.length - after.length
    );
    const cell2 = before + "-".repeat(size) + after;
    if (settings.alignDelimiters !== false) {
      size = before.length + size + after.length;
      if (size > longestCellByColumn[columnIndex]) {
        longestCellByColumn[columnIndex] = size;
      }
      sizes[columnIndex] = size;
    }
    row[columnIndex] = cell2;
  }
  cellMatrix.splice(1, 0, row);
  sizeMatrix.splice(1, 0, sizes);
  rowIndex = -1;
  const lines = [];
  while (++rowIndex < cellMatrix.length) {
    const row2 = cellMatrix[rowIndex];
    const sizes2 = sizeMatrix[rowIndex];
    const cellsInRow = settings.fillRows === false ? Math.max(1, cellMatrix[rowIndex === 1 ? 0 : rowIndex].length) : mostCellsPerRow;
    columnIndex = -1;
    const line = [];
    while (++columnIndex < cellsInRow) {
      const cell2 = row2[columnIndex] || "";
      let before = "";
      let after = "";
      if (settings.alignDelimiters !== false) {
        const size = longestCellByColumn[columnIndex] - (sizes2[columnIndex] || 0);
        const code2 = alignments[columnIndex];
        if (code2 === 114) {
          before = " ".repeat(size);
        } else if (code2 === 99) {
          const half = size / 2;
          if (size % 2) {
            before = " ".repeat(half + 0.5);
            after = " ".repeat(half - 0.5);
          } else {
            before = " ".repeat(half);
            after = before;
          }
        } else {
          after = " ".repeat(size);
        }
      }
      if (settings.delimiterStart !== false && !columnIndex) {
        line.push("|");
      }
      if (settings.padding !== false && // Don’t add the opening space if we’re not aligning and the cell is
      // empty: there will be a closing space.
      !(settings.alignDelimiters === false && cell2 === "") && (settings.delimiterStart !== false || columnIndex)) {
        line.push(" ");
      }
      if (settings.alignDelimiters !== false) {
        line.push(before);
      }
      line.push(cell2);
      if (settings.alignDelimiters !== false) {
        line.push(after);
      }
      if (settings.padding !== false) {
        line.push(" ");
      }
      if (settings.delimiterEnd !== false || columnIndex !== cellsInRow - 1) {
        line.push("|");
      }
    }
    lines.push(
      settings.delimiterEnd === false ? line.join("").replace(/ +$/, "") : line.join("")
    );
  }
  return lines.join("\n");
}
function serialize(value) {
  return value === null || value === void 0 ? "" : String(value);
}
function toAlignment(value) {
  const code2 = typeof value === "string" ? value.codePointAt(0) : 0;
  return code2 === 67 || code2 === 99 ? 99 : code2 === 76 || code2 === 108 ? 108 : code2 === 82 || code2 === 114 ? 114 : 0;
}

// src/report/escape.ts
var HTML = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };
function escapeHtml(s) {
  return s.replace(/[&<>"]/g, (c) => HTML[c]);
}
function cell(value) {
  const s = value === null || value === void 0 ? "" : String(value);
  return escapeHtml(s).replace(/\|/g, "\\|").replace(/\r?\n/g, "<br>");
}
function code(s) {
  const clean = s.replace(/\r?\n/g, " ");
  const longest = Math.max(0, ...(clean.match(/`+/g) ?? []).map((m) => m.length));
  const fence = "`".repeat(longest + 1);
  const pad2 = clean.startsWith("`") || clean.endsWith("`") ? " " : "";
  return `${fence}${pad2}${clean}${pad2}${fence}`;
}

// src/report/markdown.ts
var ICON = { pass: "\u2705", fail: "\u274C", skip: "\u2796", error: "\u26A0\uFE0F" };
function verdictLine(r) {
  if (r.outcome === "error") return `${ICON.error} **Phase 2 ERROR** (${escapeHtml(r.model.name)}): could not judge; this is not a FAIL verdict`;
  const failed = r.gates.filter((g) => g.status === "fail").map((g) => g.id);
  return r.outcome === "pass" ? `${ICON.pass} **Phase 2 PASS** (${escapeHtml(r.model.name)})` : `${ICON.fail} **Phase 2 FAIL** (${escapeHtml(r.model.name)}): ${failed.join(", ")} failed`;
}
function gateValue(g) {
  if (typeof g.value === "number") return g.id === "G3" ? String(g.value) : fmtCos(g.value);
  return g.value ?? "";
}
function gatesTable(r) {
  return markdownTable([
    ["gate", "check", "measured", "bar", "result", "detail"],
    ...r.gates.map((g) => [g.id, cell(g.name), cell(gateValue(g)), cell(g.bar), `${ICON[g.status]} ${g.status}`, cell(g.detail)])
  ]);
}
function cosineChart(r, maxPoints = 120) {
  const m = r.metrics;
  if (!m || m.perPosition.cosines.length === 0) return "";
  const cos = m.perPosition.cosines;
  const bucket = Math.max(1, Math.ceil(cos.length / maxPoints));
  const pts = [];
  for (let i = 0; i < cos.length; i += bucket) {
    let lo = Infinity;
    for (let j = i; j < Math.min(cos.length, i + bucket); j++) lo = Math.min(lo, Number.isNaN(cos[j]) ? -Infinity : cos[j]);
    pts.push(lo);
  }
  const t = r.thresholds.perPosition;
  const finite = pts.filter(Number.isFinite);
  const floorRaw = Math.min(t, ...finite.length ? finite : [t]) - 5e-3;
  const yMin = Math.max(-1, Math.floor(floorRaw * 1e3) / 1e3);
  const shown = pts.map((p) => (Number.isFinite(p) ? p : yMin).toFixed(4));
  const xLabel = bucket > 1 ? `position (min per ${bucket} rows)` : "position";
  return [
    "```mermaid",
    "xychart-beta",
    '  title "Per-position cosine, layer 0 ffn_out"',
    `  x-axis "${xLabel}" 0 --> ${pts.length - 1}`,
    `  y-axis "cosine" ${yMin} --> 1`,
    `  line [${shown.join(", ")}]`,
    `  line [${pts.map(() => t.toFixed(4)).join(", ")}]`,
    "```"
  ].join("\n");
}
function metricsSection(r) {
  const m = r.metrics;
  if (!m) return [];
  const e = m.errors;
  const pp = m.perPosition;
  const out = [
    "### Error metrics (informational)",
    "",
    markdownTable([
      ["max_abs", "mean_abs", "max_rel", "mean_rel", "mean_rel_L1", "SQNR", "norm ratio"],
      [fmtSci(e.maxAbs), fmtSci(e.meanAbs), fmtSci(e.maxRel), fmtSci(e.meanRel), fmtSci(e.meanRelL1), fmtSqnr(e.sqnrDb, SQNR_GOOD_DB), fmtRatio(e.normRatio)]
    ]),
    "",
    "### Per-position cosine (real tokens only)",
    "",
    markdownTable([
      ["min", "p5", "median", "mean", "rows", "threshold"],
      [fmtCos(pp.min), fmtCos(pp.p5), fmtCos(pp.median), fmtCos(pp.mean), `${m.realLen} of ${m.npuRows}`, formatThreshold(r.thresholds.perPosition)]
    ]),
    ""
  ];
  if (pp.worst.length) {
    out.push(`Worst positions: ${pp.worst.map((w) => `${w.row} (${fmtCos(w.cosine)})`).join(", ")}`, "");
  }
  if (pp.badRuns.length) {
    const tail = (end) => end === m.realLen - 1 ? ", at the tail of the prompt" : "";
    out.push("Contiguous runs under the threshold:", "");
    for (const b of pp.badRuns) out.push(`- rows ${fmtRun(b.start, b.end)} (${b.length} row${b.length > 1 ? "s" : ""}${tail(b.end)})`);
    out.push("");
  }
  return out;
}
function integrationSection(r, flavor) {
  const out = [];
  const i = r.integration;
  if (i) {
    out.push("### Integration", "");
    out.push(`- path: **${escapeHtml(i.path)}**, entry ${code(i.entry)}`);
    if (i.reason) out.push(`- why: ${escapeHtml(i.reason)}`);
    const s1 = i.step1;
    if (s1 && s1.matches !== void 0) {
      out.push(s1.matches ? "- Step 1: the per-layer kernel sequence matches llama's, so inheritance is allowed" : `- Step 1: the kernel sequence differs from llama's; kernel-first is forced by ${(s1.breaks ?? []).map((b) => `(${escapeHtml(b.rule)}) ${escapeHtml(b.detail)}`).join("; ")}`);
      if (s1.block) out.push(`- block 0 runs in ${code(s1.block.function)} (${escapeHtml(s1.block.where)}${s1.block.file ? `, ${code(s1.block.file)}` : ""})`);
    }
    const unwired = i.coverage?.unwired ?? [];
    if (unwired.length) {
      out.push("- Phase 1 kernels that name this model but are not wired:");
      for (const u of unwired) out.push(`  - ${escapeHtml([u.section, u.shape].filter(Boolean).join(" "))}${u.used_by ? ` (${escapeHtml(u.used_by)})` : ""}`);
    }
    if (i.kernels.length) out.push(`- kernels: ${i.kernels.map(code).join(" \u2192 ")}`);
    if (i.cpu_attn !== null && i.cpu_attn !== void 0) out.push(`- attention: ${i.cpu_attn ? "CPU `attention_reference`" : "NPU flash attention"}`);
    const tiles = Object.entries(i.tiles ?? {});
    if (tiles.length) out.push(`- tiles: ${tiles.map(([k, v]) => `${code(k)} ${escapeHtml(String(v))}`).join(", ")}`);
    if (i.workarounds.length) {
      out.push("- workarounds (Phase 4/5 prerequisites):");
      for (const w of i.workarounds) out.push(`  - ${code(w.id)}: ${escapeHtml(w.detail)}. ${escapeHtml(w.prerequisite)}`);
    } else out.push("- workarounds: none needed");
    for (const d of r.defaults?.differs ?? []) out.push(`- differs from \`make diagnosis\`: ${escapeHtml(d)}`);
    out.push("");
  }
  const ref = r.reference;
  const env = r.environment;
  const rows = [["", ""]];
  if (ref) rows.push(["reference", cell(`${ref.kind} via ${ref.runner} (lite_mode=False, ${ref.dtype})${ref.transformers ? `, transformers ${ref.transformers}` : ""}${ref.torch ? `, torch ${ref.torch}` : ""}`)]);
  if (r.prompt) rows.push(["prompt", cell(`${r.prompt.style} (${r.prompt.source}): ${r.prompt.real_len} tokens${r.prompt.padded_len ? `, padded to ${r.prompt.padded_len}` : ""}`)]);
  if (env) {
    rows.push(["python", cell(`${env.python} (${env.python_executable}), numpy ${env.numpy}`)]);
    rows.push(["device", cell(env.device ?? "not detected")]);
    if (env.xrt) rows.push(["XRT", cell(env.xrt)]);
    rows.push(["air tree commit", cell(env.git_commit ?? "not a git checkout")]);
  }
  if (flavor !== "doc") {
    const rc = r.reference?.cache;
    if (rc) rows.push(["reference cache", cell(`${rc.hit ? "hit" : "miss, stored"} ${rc.key.slice(0, 12)}`)]);
    if (r.kernel_cache) rows.push(["kernel cache", cell(`${r.kernel_cache.hit ? "hit" : "compiled"}${r.kernel_cache.entries.length ? `: ${r.kernel_cache.entries.join(", ")}` : ""}`)]);
    const t = Object.entries(r.timings);
    if (t.length) rows.push(["timings", cell(t.map(([k, v]) => `${k} ${fmtSeconds(v)}`).join(", "))]);
    rows.push(["engine", cell(r.metrics ? r.metrics.engine : "n/a")]);
  }
  if (rows.length > 1) out.push("### Environment", "", markdownTable(rows), "");
  return out;
}
function layersSection(r) {
  if (!r.layers || r.layers.length === 0) return [];
  return [
    "### Every layer (informational, as `make diagnosis`; only layer 0 is gated)",
    "",
    markdownTable([
      ["layer", "whole cosine", "per-pos min", "p5", "median", "max_abs", "max_rel", "SQNR", "NaN/Inf"],
      ...r.layers.map((l) => [String(l.layer), fmtCos(l.wholeCosine), fmtCos(l.perPositionMin), fmtCos(l.p5), fmtCos(l.median), fmtSci(l.maxAbs), fmtSci(l.maxRel), fmtDb(l.sqnrDb), String(l.nonFinite)])
    ]),
    ""
  ];
}
function hintLine(h) {
  return `${escapeHtml(h.boundary)}: likely ${escapeHtml(h.cause)}; ${escapeHtml(h.where)}`;
}
function bisectSection(r) {
  const b = r.bisect;
  if (!b) return [];
  const out = ["### Bisect (seed Step 4: one kernel at a time on the CPU)", ""];
  if (!b.available) out.push(`Bisect unavailable: ${escapeHtml(b.reason)}`, "");
  else {
    out.push(markdownTable([
      ["step", "kernel", "CPU equivalent", "whole cosine", "per-pos min", "NaN/Inf", "block passes"],
      ...b.steps.map((s) => [cell(s.step), cell(s.kernel), cell(s.cpuEquivalent), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), String(s.nonFinite), s.fixes ? "\u2705 yes" : "no"])
    ]), "");
    if (b.offender) {
      out.push(`**Offending boundary: ${code(b.offender.step)}** (kernel ${code(b.offender.kernel)}).${b.offender.hint ? ` ${hintLine(b.offender.hint)}.` : ""}`, "");
    } else out.push(escapeHtml(b.reason), "");
  }
  if (b.situation) out.push(`Failure shape: ${hintLine(b.situation)}.`, "");
  return out;
}
function renderMarkdown(r, opts) {
  const out = [`${opts.flavor === "doc" ? "###" : "##"} ${verdictLine(r)}`, ""];
  if (r.outcome === "error") {
    out.push(`> ${escapeHtml(r.error ?? "unknown error")}`, "", "The check could not run to a verdict (infrastructure or input problem). Fix the cause and re-run; no gate was judged.", "");
    if (opts.artifactUrl) out.push(`Run dir and logs: [artifact](${opts.artifactUrl})`, "");
    return out.join("\n");
  }
  const p = r.prompt;
  out.push(`Layer-0 \`ffn_out\` of block 0 on the NPU vs the ${r.reference?.kind === "hf-bf16" ? "HuggingFace bf16" : "emulated bf16"} reference${p ? `, ${escapeHtml(p.style)} prompt (${p.real_len} tokens)` : ""}, commit ${code(r.commit.slice(0, 12))}.`, "");
  out.push(gatesTable(r), "");
  if (r.warnings.length) {
    out.push("**Warnings**", "");
    for (const w of r.warnings) out.push(`- \u26A0\uFE0F ${escapeHtml(w.message)}`);
    out.push("");
  }
  const body = [];
  body.push(...metricsSection(r));
  const chart = cosineChart(r, opts.chartPoints);
  if (chart) body.push(chart, "");
  body.push(...bisectSection(r));
  body.push(...layersSection(r));
  body.push(...integrationSection(r, opts.flavor));
  out.push(...opts.flavor === "doc" ? body.map((l) => l.startsWith("### ") ? `#${l}` : l) : body);
  if (opts.artifactUrl) out.push(`Full run dir and report: [artifact](${opts.artifactUrl})`, "");
  return out.join("\n");
}

// src/report/json.ts
function toJson(value) {
  return JSON.stringify(toJsonSafe(value), null, 2) + "\n";
}

// src/docs/fs.ts
import { mkdirSync, renameSync, writeFileSync, rmSync, readFileSync as readFileSync2, existsSync as existsSync4 } from "node:fs";
import { dirname as dirname3, basename, join as join4 } from "node:path";
function writeAtomic(path, data) {
  mkdirSync(dirname3(path), { recursive: true });
  const tmp = join4(dirname3(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
function readIfExists(path) {
  return existsSync4(path) ? readFileSync2(path, "utf8") : null;
}

// src/docs/markers.ts
var MARK = {
  latestBegin: "<!-- npu-block-gate:latest:begin -->",
  latestEnd: "<!-- npu-block-gate:latest:end -->",
  historyBegin: "<!-- npu-block-gate:history:begin -->",
  historyEnd: "<!-- npu-block-gate:history:end -->",
  /** Suffix of the one TODO.md line we own under "## Active blockers". */
  blocker: "<!-- npu-block-gate:phase2-blocker -->",
  /** Suffix of a TODO.md Phase 4/5 prerequisite line, followed by the workaround id. */
  prereq: (id) => `<!-- npu-block-gate:prereq:${id} -->`,
  prereqPrefix: "<!-- npu-block-gate:prereq:"
};
var DOC_PATHS = {
  phase2: "docs/development_progress/phase2_block.md",
  todo: "TODO.md"
};

// src/docs/phase2.ts
import { createHash } from "node:crypto";
var HISTORY_HEADER = [
  "| date | commit | prompt | outcome | whole cosine | per-pos min | threshold | max_abs | max_rel | SQNR | shape | integration |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|"
];
function historyKey(r) {
  const text = r.prompt?.text ?? "";
  const hash = createHash("sha256").update(text).digest("hex").slice(0, 8);
  return { commit: r.commit.slice(0, 12), prompt: `${r.prompt?.style ?? "prompt"}:${hash}` };
}
function shapeOf(r) {
  return r.metrics ? `${r.metrics.realLen}x${r.metrics.cols}` : "n/a";
}
function historyRow(r) {
  const k = historyKey(r);
  const m = r.metrics;
  const cells = [
    r.created_at.slice(0, 10),
    k.commit,
    k.prompt,
    r.outcome.toUpperCase(),
    fmtCos(m?.wholeCosine),
    fmtCos(m?.perPosition.min),
    formatThreshold(r.thresholds.perPosition),
    fmtSci(m?.errors.maxAbs),
    fmtSci(m?.errors.maxRel),
    fmtDb(m?.errors.sqnrDb),
    shapeOf(r),
    r.integration?.path ?? "n/a"
  ];
  return `| ${cells.join(" | ")} |`;
}
function tableCells(line) {
  const t = line.trim();
  if (!t.startsWith("|")) return null;
  const cells = [];
  let cur = "";
  for (let i = 1; i < t.length; i++) {
    const ch = t[i];
    if (ch === "\\" && t[i + 1] === "|") {
      cur += "|";
      i++;
      continue;
    }
    if (ch === "|") {
      cells.push(cur.trim());
      cur = "";
      continue;
    }
    cur += ch;
  }
  if (cur.trim() !== "") cells.push(cur.trim());
  return cells;
}
function findBlock(text, begin, end, file) {
  const b = text.indexOf(begin);
  const e = text.indexOf(end);
  if (b === -1 && e === -1) return null;
  if (b === -1 || e === -1 || e < b) {
    throw new InputError(`marker ${b === -1 ? begin : end} has no matching ${b === -1 ? "begin" : "end"} marker; fix or remove it by hand, nothing was changed`, file);
  }
  if (text.indexOf(begin, b + 1) !== -1) throw new InputError(`marker ${begin} appears twice; nothing was changed`, file);
  return { begin: b + begin.length, end: e, inner: text.slice(b + begin.length, e) };
}
function splice(text, blk, inner) {
  return text.slice(0, blk.begin) + inner + text.slice(blk.end);
}
function eol(text) {
  return text.includes("\r\n") ? "\r\n" : "\n";
}
function updateHistoryInner(inner, r, nl = "\n") {
  const k = historyKey(r);
  const row = historyRow(r);
  const lines = inner.split(/\r?\n/);
  const isOurs = (line) => {
    const c = tableCells(line);
    return !!c && c[1] === k.commit && c[2] === k.prompt;
  };
  const at = lines.findIndex(isOurs);
  if (at !== -1) {
    lines[at] = row;
    return lines.join(nl);
  }
  let last = -1;
  lines.forEach((l, i) => {
    if (tableCells(l)) last = i;
  });
  if (last === -1) {
    const body = lines.join(nl);
    return `${nl}${HISTORY_HEADER.join(nl)}${nl}${row}${body.startsWith(nl) ? "" : nl}${body}`;
  }
  lines.splice(last + 1, 0, row);
  return lines.join(nl);
}
function readHistory(text, file) {
  if (!text) return [];
  const blk = findBlock(text, MARK.historyBegin, MARK.historyEnd, file);
  if (!blk) return [];
  const out = [];
  for (const line of blk.inner.split(/\r?\n/)) {
    const c = tableCells(line);
    if (!c || c.length < 11 || c[0] === "date" || /^-+$/.test(c[0].replace(/:/g, ""))) continue;
    out.push({ date: c[0], commit: c[1], prompt: c[2], outcome: c[3], maxAbs: Number(c[7]), shape: c[10] });
  }
  return out;
}
function baselineFor(history, r) {
  const k = historyKey(r);
  const shape = shapeOf(r);
  const hit = history.find((h) => h.outcome === "PASS" && h.prompt === k.prompt && h.shape === shape && h.commit !== k.commit && Number.isFinite(h.maxAbs) && h.maxAbs > 0);
  return hit ? { maxAbs: hit.maxAbs, commit: hit.commit } : null;
}
function newPhase2Doc(model, nl = "\n") {
  return [
    `# Phase 2: single-block validation (${model})`,
    "",
    "Layer-0 `ffn_out` of the transformer block on the NPU, compared with the HuggingFace bf16 reference",
    "on the canonical prompt. The text between `npu-block-gate` markers is generated by npu-block-gate;",
    "write your own notes anywhere else in this file (or inside the history block, outside table rows) and they are kept.",
    "",
    "## Latest result",
    "",
    MARK.latestBegin,
    MARK.latestEnd,
    "",
    "## History",
    "",
    MARK.historyBegin,
    MARK.historyEnd,
    "",
    "## Notes",
    ""
  ].join(nl);
}
function updatePhase2(existing, r, latestMarkdown, file) {
  let text = existing ?? newPhase2Doc(r.model.name);
  const nl = eol(text);
  let latest = findBlock(text, MARK.latestBegin, MARK.latestEnd, file);
  let history = findBlock(text, MARK.historyBegin, MARK.historyEnd, file);
  if (!latest || !history) {
    const add = [];
    if (!latest) add.push("## Latest result (npu-block-gate)", "", MARK.latestBegin, MARK.latestEnd, "");
    if (!history) add.push("## History (npu-block-gate)", "", MARK.historyBegin, MARK.historyEnd, "");
    text = text + (text.endsWith("\n") || text === "" ? "" : nl) + (text === "" ? "" : nl) + add.join(nl);
    latest = findBlock(text, MARK.latestBegin, MARK.latestEnd, file);
    history = findBlock(text, MARK.historyBegin, MARK.historyEnd, file);
  }
  const body = latestMarkdown.trim().split(/\r?\n/).join(nl);
  const blocks = [
    { blk: latest, inner: `${nl}${body}${nl}` },
    { blk: history, inner: updateHistoryInner(history.inner, r, nl) }
  ].sort((a, b) => b.blk.begin - a.blk.begin);
  for (const { blk, inner } of blocks) text = splice(text, blk, inner);
  return text;
}

// src/docs/todo.ts
var PHASE2 = /^(\s*[-*]\s+\[)([^\]]*)(\]\s*(?:Phase\s+)?2\s*[:.)-]\s*Single[- ]Block Validation\b.*)$/i;
var PHASE_N = (n) => new RegExp(`^\\s*[-*]\\s+\\[[^\\]]*\\]\\s*(?:Phase\\s+)?${n}\\s*[:.)-]`, "i");
var BLOCKERS = /^##\s+Active blockers\s*$/i;
var HEADING = /^#{1,2}\s/;
function todoTemplate(model, hfId, cfg, nl = "\n") {
  const c = cfg;
  return [
    `# Deployment: ${model}${hfId && hfId !== model ? `  (${hfId})` : ""}`,
    "",
    "## Phase status",
    "- [ ] 0: Build CPU Oracle",
    "- [ ] 1: Kernel Validation",
    "- [ ] 2: Single-Block Validation",
    "- [ ] 3: Full-Model Validation",
    "- [ ] 4: Prefill Optimization",
    "- [ ] 5: Decode Optimization",
    "- [ ] 6: Finalize & Learn",
    "- [ ] 7: Independent Evaluation",
    "",
    "## Active blockers",
    "(none yet)",
    "",
    "## Resolved config (pulled from HF)",
    c ? `n_layers: ${c.n_layers}, emb_dim: ${c.emb_dim}, n_heads: ${c.n_heads}, n_kv_heads: ${c.n_kv_heads},${nl}head_dim: ${c.head_dim}, hidden_dim: ${c.hidden_dim}, vocab_size: ${c.vocab_size ?? "?"}, rope_theta: ${c.rope_base ?? "?"}` : "n_layers: ?, emb_dim: ?, n_heads: ?, n_kv_heads: ?," + nl + "head_dim: ?, hidden_dim: ?, vocab_size: ?, rope_theta: ?",
    ""
  ].join(nl);
}
function blockerLine(r) {
  const failed = r.gates.filter((g) => g.status === "fail" && g.id !== "G4");
  const what = failed.map((g) => `${g.id} ${g.name}: ${typeof g.value === "number" ? fmtCos(g.value) : g.value} (bar ${g.bar})`).join("; ");
  return `- Phase 2 single-block validation FAILS at ${r.commit.slice(0, 12)} (${r.created_at.slice(0, 10)}): ${what}. See docs/development_progress/phase2_block.md. ${MARK.blocker}`;
}
function prereqLine(id, prerequisite, detail) {
  return `  - ${prerequisite} (${detail}) ${MARK.prereq(id)}`;
}
function updateTodo(existing, r) {
  const text = existing ?? todoTemplate(r.model.name, r.model.hf_id, r.model.config);
  const nl = text.includes("\r\n") ? "\r\n" : "\n";
  const lines = text.split(/\r?\n/);
  if (r.outcome === "pass") {
    const i = lines.findIndex((l) => PHASE2.test(l));
    if (i !== -1) lines[i] = lines[i].replace(PHASE2, (_m, a, _b, c) => `${a}x${c}`);
  }
  const bi = lines.findIndex((l) => l.includes(MARK.blocker));
  if (r.outcome === "pass" && bi !== -1) lines.splice(bi, 1);
  if (r.outcome === "fail") {
    const line = blockerLine(r);
    if (bi !== -1) lines[bi] = line;
    else {
      let h = lines.findIndex((l) => BLOCKERS.test(l));
      if (h === -1) {
        while (lines.length && lines[lines.length - 1] === "") lines.pop();
        lines.push("", "## Active blockers");
        h = lines.length - 1;
        lines.push(line, "");
      } else {
        let end = h + 1;
        while (end < lines.length && !HEADING.test(lines[end])) end++;
        let at = end;
        while (at > h + 1 && lines[at - 1].trim() === "") at--;
        lines.splice(at, 0, line);
      }
    }
  }
  for (const w of r.integration?.workarounds ?? []) {
    const line = prereqLine(w.id, w.prerequisite, w.detail);
    const existingAt = lines.findIndex((l) => l.includes(MARK.prereq(w.id)));
    if (existingAt !== -1) {
      lines[existingAt] = line;
      continue;
    }
    let anchor = lines.findIndex((l) => PHASE_N(4).test(l));
    if (anchor === -1) anchor = lines.findIndex((l) => PHASE2.test(l));
    if (anchor === -1) {
      lines.push(line);
      continue;
    }
    let at = anchor + 1;
    while (at < lines.length && lines[at].includes(MARK.prereqPrefix)) at++;
    lines.splice(at, 0, line);
  }
  return lines.join(nl);
}

// src/bisect/judge.ts
import { existsSync as existsSync5, readFileSync as readFileSync3 } from "node:fs";
import { join as join5, isAbsolute as isAbsolute2 } from "node:path";

// src/bisect/types.ts
var BISECT_SCHEMA = BISECT_CONTRACT.schema;
var BISECT_SCHEMA_VERSION = BISECT_CONTRACT.version;
var BISECT_DIR = BISECT_CONTRACT.dir;
var BISECT_FILE = `${BISECT_CONTRACT.dir}/${BISECT_CONTRACT.json}`;

// src/bisect/hints.ts
var HINTS = [
  { match: /qk_?norm/, hint: { boundary: "Q/K norm", cause: "per-head RMSNorm stitched wrong (weighted_rms_norm with heads as rows, shared (head_dim,) weight)", where: "check M=n_heads, N=head_dim and the weight broadcast" } },
  { match: /norm/, hint: { boundary: "RMSNorm", cause: "norm weight, eps or the row layout", where: "compare with <model>_cpu_helpers.rms_norm on the same input" } },
  { match: /resid|add|bias/, hint: { boundary: "residual add / bias", cause: "bias forgotten on the padded path, or a GQA reindex bug", where: "if padding + bias: re-run the CPU sanity test on the padded forward (seed Step 2)" } },
  { match: /(^|_)(q|k|v|qkv)(_proj|_gemm)?$|gemms?_rope|qkv/, hint: { boundary: "Q/K/V GEMM", cause: "weight loading or tensor layout (seq-first vs heads-first), a missing transpose", where: "compare the NPU output's shape with the reference's; check np.ascontiguousarray() after the weight load" } },
  { match: /attn|attention|flash|fa$/, hint: { boundary: "FlashAttention", cause: "causal masking missing or a wrong dk_chunks compile flag", where: "see the debug-fa-runtime-failure skill" } },
  { match: /rope/, hint: { boundary: "RoPE", cause: "RoPE pairing (half-split vs interleaved) or the [cos|sin] LUT layout", where: "compare the LUT from generate_rope_lut with HF's rotate_half convention" } },
  { match: /down/, hint: { boundary: "Down GEMM", cause: "BF16 truncation: the low-precision (direct-codegen) tier instead of high-precision", where: "confirm fused-cast / drain (FP32 accumulate + one cast); see details/GEMM_bf16_in_bf16_out.md" } },
  { match: /gate|up|swiglu|silu|ffn|o_proj|^o$/, hint: { boundary: "O / FFN GEMM", cause: "weight layout or a dropped cast between fused launches", where: "compare the step's output shape and dtype with the reference's" } }
];
var NAN_HINT = { boundary: "output buffer", cause: "an uninitialised BO or a reused stale buffer", where: "see the debug-bo-corruption skill" };
var TAIL_HINT = { boundary: "last positions", cause: "one bad run of positions (a causal-mask edge case or a stale tail)", where: "print the per-position cosine and look for contiguous bad runs" };
function hintFor(step, kernel = "") {
  const s = step.toLowerCase();
  for (const { match, hint } of HINTS) if (match.test(s)) return hint;
  const k = kernel.toLowerCase();
  for (const { match, hint } of HINTS) if (match.test(k)) return hint;
  return null;
}

// src/bisect/judge.ts
function readBisectJson(runDir) {
  const file = join5(runDir, BISECT_FILE);
  if (!existsSync5(file)) return null;
  let o;
  try {
    o = JSON.parse(readFileSync3(file, "utf8"));
  } catch (e) {
    throw new InputError(`not valid JSON (${e.message.split("\n")[0]})`, file);
  }
  if (o?.schema !== BISECT_SCHEMA) throw new InputError(`schema is ${JSON.stringify(o?.schema)}, expected ${JSON.stringify(BISECT_SCHEMA)}`, file);
  if (o.schema_version !== BISECT_SCHEMA_VERSION) throw new InputError(`schema_version ${JSON.stringify(o.schema_version)} is not supported (this npu-block-gate reads version ${BISECT_SCHEMA_VERSION})`, file);
  if (typeof o.available !== "boolean" || !Array.isArray(o.steps)) throw new InputError('needs "available" (true/false) and "steps" (a list)', file);
  for (const [i, s] of o.steps.entries()) {
    if (typeof s?.step !== "string" || typeof s.file !== "string") throw new InputError(`steps[${i}] needs "step" and "file"`, file);
    if (isAbsolute2(s.file) || s.file.split(/[\\/]/).includes("..")) throw new InputError(`steps[${i}].file must stay inside the run dir`, file);
  }
  return o;
}
function situationOf(m) {
  const nf = m.nonFinite;
  if (nf.nan.count + nf.posInf.count + nf.negInf.count > 0) return NAN_HINT;
  const runs = m.perPosition.badRuns;
  if (runs.length === 1 && runs[0].end === m.realLen - 1 && m.wholeCosine >= 0.99) return TAIL_HINT;
  return null;
}
async function judgeBisect(runDir, refPath, realLen, th, block) {
  const b = readBisectJson(runDir);
  if (!b) return null;
  const situation = situationOf(block);
  if (!b.available) return { available: false, reason: b.reason, hook: b.hook ?? null, steps: [], offender: null, situation };
  const steps = [];
  for (const s of b.steps) {
    const npu = openTensor(join5(runDir, s.file));
    const ref = openTensor(refPath);
    try {
      const m = await compare(npu, ref, { realLen, threshold: th.perPosition });
      const nonFinite = m.nonFinite.nan.count + m.nonFinite.posInf.count + m.nonFinite.negInf.count;
      steps.push({
        step: s.step,
        kernel: s.kernel ?? "",
        cpuEquivalent: s.cpu_equivalent ?? "",
        wholeCosine: m.wholeCosine,
        perPositionMin: m.perPosition.min,
        nonFinite,
        fixes: m.wholeCosine >= th.whole && m.perPosition.min >= th.perPosition && nonFinite === 0
      });
    } finally {
      npu.close();
      ref.close();
    }
  }
  const first = steps.find((s) => s.fixes);
  return {
    available: true,
    reason: first ? `swapping ${first.step} to the CPU brings the block above threshold` : "no single CPU swap brings the block above threshold (more than one boundary is wrong, or the bug is outside the exposed steps)",
    hook: b.hook ?? null,
    steps,
    offender: first ? { step: first.step, kernel: first.kernel, hint: hintFor(first.step, first.kernel) } : null,
    situation
  };
}

// src/layers/judge.ts
import { join as join6 } from "node:path";
import { existsSync as existsSync6 } from "node:fs";
async function judgeLayers(runDir, layers, threshold) {
  const rows = [];
  for (const e of layers.entries) {
    const paths = [join6(runDir, e.npu.file), join6(runDir, e.ref.file)];
    for (const p of paths) if (!existsSync6(p)) throw new InputError(`layer ${e.layer} tensor is missing (probe.json lists it)`, p);
    const npu = openTensor(paths[0], { u2IsBf16: e.npu.dtype === "bf16" });
    try {
      const ref = openTensor(paths[1], { u2IsBf16: e.ref.dtype === "bf16" });
      try {
        const m = await compare(npu, ref, { threshold });
        const nf = m.nonFinite;
        rows.push({
          layer: e.layer,
          rows: m.realLen,
          wholeCosine: m.wholeCosine,
          perPositionMin: m.perPosition.min,
          p5: m.perPosition.p5,
          median: m.perPosition.median,
          maxAbs: m.errors.maxAbs,
          maxRel: m.errors.maxRel,
          sqnrDb: m.errors.sqnrDb,
          normRatio: m.errors.normRatio,
          nonFinite: nf.nan.count + nf.posInf.count + nf.negInf.count
        });
      } finally {
        ref.close();
      }
    } finally {
      npu.close();
    }
  }
  return rows.sort((a, b) => a.layer - b.layer);
}

// src/cache/kernel.ts
import { createHash as createHash2 } from "node:crypto";
import { cpSync, existsSync as existsSync7, mkdirSync as mkdirSync2, readdirSync, readFileSync as readFileSync4, renameSync as renameSync2, rmSync as rmSync2, statSync as statSync2, utimesSync, writeFileSync as writeFileSync2 } from "node:fs";
import { homedir } from "node:os";
import { basename as basename2, dirname as dirname4, isAbsolute as isAbsolute3, join as join7, relative as relative2, sep } from "node:path";
var KERNEL_CACHE_VERSION = 1;
var DEFAULT_MAX_BYTES = 20 * 1024 ** 3;
function defaultCacheRoot(env = process.env) {
  if (env.NPU_BLOCK_GATE_CACHE_DIR) return env.NPU_BLOCK_GATE_CACHE_DIR;
  const base = env.XDG_CACHE_HOME || join7(homedir(), ".cache");
  return join7(base, "npu-block-gate");
}
var SKIP_DIR = /^(build_[^/]*|docs|__pycache__|\.git|air_project|node_modules)$/;
var SKIP_FILE = /(\.pyc|\.md|~|\.swp)$|^\.gitignore$/;
function listFiles(dir, out = []) {
  if (!existsSync7(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join7(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIP_DIR.test(e.name)) listFiles(p, out);
    } else if (e.isFile() && !SKIP_FILE.test(e.name)) out.push(p);
  }
  return out;
}
function fallbackFiles(k) {
  const roots = [k.modelDir, join7(k.airRoot, "programming_examples/llms/shared"), join7(k.airRoot, "programming_examples/kernel_registry")];
  return roots.flatMap((root) => listFiles(root).sort()).map((f) => relative2(k.airRoot, f).split(sep).join("/"));
}
function insideRoot(airRoot, rel) {
  if (!rel || isAbsolute3(rel) || rel.split(/[\\/]/).includes("..")) return null;
  return join7(airRoot, rel);
}
function kernelCacheKey(k) {
  const h = createHash2("sha256");
  h.update(`npu-block-gate kernel cache v${KERNEL_CACHE_VERSION}
`);
  const rels = k.inputs ? [...new Set(k.inputs.files)].sort() : fallbackFiles(k);
  for (const rel of rels) {
    const abs = insideRoot(k.airRoot, rel);
    let digest = "missing";
    if (abs && existsSync7(abs) && statSync2(abs).isFile()) digest = createHash2("sha256").update(readFileSync4(abs)).digest("hex");
    h.update(`${rel}\0${digest}
`);
  }
  const env = k.inputs ? Object.fromEntries(Object.entries(k.inputs.env ?? {}).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)) : null;
  h.update(JSON.stringify({ config: k.config, seqLen: k.seqLen, cpuAttn: k.cpuAttn, toolchain: k.toolchain ?? null, compile: k.compileCommand, env }));
  return { key: h.digest("hex").slice(0, 32), files: rels.length };
}
function rebaseManifest(dir, target) {
  const file = join7(dir, "manifest.json");
  if (!existsSync7(file)) return { ok: true, rewritten: 0 };
  let m;
  try {
    m = JSON.parse(readFileSync4(file, "utf8"));
  } catch {
    return { ok: false, why: "manifest.json is not JSON" };
  }
  if (!m || typeof m !== "object" || m.entries !== void 0 && (typeof m.entries !== "object" || m.entries === null)) return { ok: false, why: "manifest.json has no entries object" };
  let rewritten = 0;
  for (const [name, e] of Object.entries(m.entries ?? {})) {
    for (const field of ["output_binary", "insts"]) {
      const v = e?.[field];
      if (v === null || v === void 0) continue;
      if (typeof v !== "string" || !v) return { ok: false, why: `entry ${name}: ${field} is not a path` };
      const base = basename2(v.replace(/\\/g, "/"));
      if (!existsSync7(join7(dir, base))) return { ok: false, why: `entry ${name}: ${base} is not in the stored cache` };
      const now = join7(target, base);
      if (v !== now) {
        e[field] = now;
        rewritten++;
      }
    }
  }
  writeFileSync2(file, JSON.stringify(m, null, 2));
  return { ok: true, rewritten };
}
function dirBytes(dir) {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join7(dir, e.name);
    n += e.isDirectory() ? dirBytes(p) : statSync2(p).size;
  }
  return n;
}
var KernelStore = class {
  constructor(root, maxBytes = DEFAULT_MAX_BYTES) {
    this.root = root;
    this.maxBytes = maxBytes;
  }
  root;
  maxBytes;
  entry(key) {
    if (!/^[0-9a-f]{16,64}$/.test(key)) throw new Error(`bad kernel cache key ${key}`);
    return join7(this.root, "kernels", key);
  }
  meta(key) {
    const f = join7(this.entry(key), "meta.json");
    if (!existsSync7(f)) return null;
    try {
      return JSON.parse(readFileSync4(f, "utf8"));
    } catch {
      return null;
    }
  }
  /**
   * Replaces target with the stored entry, its manifest's paths rewritten to target; null on a miss
   * or when the stored manifest cannot be pointed at this checkout (`refused` says why). The target
   * is never left half-copied, and a miss creates nothing in the model dir.
   */
  restore(key, target, refused) {
    const meta = this.meta(key);
    const src = join7(this.entry(key), "cache");
    if (!meta || !existsSync7(src)) return null;
    const parent = dirname4(target);
    const made = existsSync7(parent) ? null : mkdirSync2(parent, { recursive: true }) ?? parent;
    const tmp = `${target}.nbg-restore-${process.pid}`;
    rmSync2(tmp, { recursive: true, force: true });
    cpSync(src, tmp, { recursive: true });
    const rebased = rebaseManifest(tmp, target);
    if (!rebased.ok) {
      rmSync2(tmp, { recursive: true, force: true });
      if (made) rmSync2(made, { recursive: true, force: true });
      refused?.(rebased.why);
      return null;
    }
    rmSync2(target, { recursive: true, force: true });
    renameSync2(tmp, target);
    const now = /* @__PURE__ */ new Date();
    utimesSync(join7(this.entry(key), "meta.json"), now, now);
    return meta;
  }
  /** Stores source under key (atomically: copied aside, then renamed into place), then trims the store. */
  store(key, source, meta) {
    const dest = this.entry(key);
    const existing = this.meta(key);
    if (existing) return existing;
    const tmp = join7(this.root, "kernels", `.tmp-${key}-${process.pid}`);
    rmSync2(tmp, { recursive: true, force: true });
    mkdirSync2(tmp, { recursive: true });
    cpSync(source, join7(tmp, "cache"), { recursive: true });
    const full = { key, ...meta, bytes: dirBytes(join7(tmp, "cache")) };
    writeFileSync2(join7(tmp, "meta.json"), JSON.stringify(full, null, 2) + "\n");
    try {
      renameSync2(tmp, dest);
    } catch (e) {
      rmSync2(tmp, { recursive: true, force: true });
      if (!this.meta(key)) throw e;
    }
    this.gc();
    return full;
  }
  list() {
    const dir = join7(this.root, "kernels");
    if (!existsSync7(dir)) return [];
    const out = [];
    for (const name of readdirSync(dir)) {
      if (name.startsWith(".")) continue;
      const m = this.meta(name);
      if (m) out.push({ ...m, used: statSync2(join7(dir, name, "meta.json")).mtimeMs });
    }
    return out;
  }
  /** Drops least recently used entries until the store fits under maxBytes. */
  gc() {
    const all = this.list().sort((a, b) => a.used - b.used);
    let total = all.reduce((n, m) => n + m.bytes, 0);
    const dropped = [];
    for (const m of all) {
      if (total <= this.maxBytes) break;
      rmSync2(this.entry(m.key), { recursive: true, force: true });
      total -= m.bytes;
      dropped.push(m.key);
    }
    return dropped;
  }
};

// src/pipeline.ts
var TOOL = { name: "npu-block-gate", version: package_default.version };
function requireModelDir(dir) {
  const abs = resolve2(dir);
  if (!existsSync8(abs)) throw new InputError("model dir does not exist", dir);
  if (!statSync3(abs).isDirectory()) throw new InputError("model dir is not a directory", dir);
  return abs;
}
function modelOptions(plan, modelDir) {
  return { modelDir, promptStyle: plan.promptStyle, prompt: plan.prompt, model: plan.model ?? null, cpuAttn: plan.cpuAttn ?? null, online: plan.online };
}
async function probe(plan, log) {
  if (!plan.modelDir) throw new InputError("a model dir is required to run the probe (--model-dir)");
  const modelDir = requireModelDir(plan.modelDir);
  const runDir = resolve2(plan.runDir);
  mkdirSync3(runDir, { recursive: true });
  rmSync3(join8(runDir, BISECT_FILE), { force: true });
  let cache = null;
  log.step(`probe: block 0 of ${basename3(modelDir)} -> ${runDir}`);
  const { python } = await runProbe(pythonCandidates(plan.python), {
    subcommand: "check",
    args: [
      ...blockArgs(modelOptions(plan, modelDir), runDir),
      "--events",
      ...plan.layers ? ["--layers"] : [],
      ...refCacheArgs(plan)
    ],
    runDir,
    timeoutSec: plan.timeoutSec,
    extraEnv: plan.probeEnv
  }, {
    onLine: (line) => log.step(`probe: ${line}`),
    onPython: (p) => log.step(`python: ${describePython(p)}`),
    onEvent: (ev) => {
      if (ev.event !== "config") return;
      cache = plan.cache ? restoreKernels(plan, runDir, log) : null;
      return { reuse_kernels: !!cache?.restored };
    }
  });
  if (cache) recordKernels(plan, runDir, cache, log);
  return { runDir, python };
}
async function planModel(plan, json2) {
  if (!plan.modelDir) throw new InputError("plan needs --model-dir DIR");
  const modelDir = requireModelDir(plan.modelDir);
  const r = await runProbe(pythonCandidates(plan.python), {
    subcommand: "plan",
    args: [...modelArgs(modelOptions(plan, modelDir)), ...json2 ? ["--json"] : []],
    runDir: null,
    timeoutSec: plan.timeoutSec,
    extraEnv: plan.probeEnv
  }, { onLine: () => void 0 });
  return r.stdout;
}
function refCacheArgs(plan) {
  if (!plan.cache) return ["--ref-cache", "none"];
  return plan.cacheDir ? ["--ref-cache", join8(plan.cacheDir, "reference")] : [];
}
function restoreKernels(plan, runDir, log) {
  const p = readProbeJson(runDir, false);
  const kc = p.kernel_cache;
  const airRoot = p.environment.air_root;
  if (!kc?.dir || !airRoot || isAbsolute4(kc.dir) || kc.dir.split(/[\\/]/).includes("..")) {
    log.step("kernel cache: not used (this model path keeps no prefill kernel cache dir)");
    return null;
  }
  const { key, files } = kernelCacheKey({
    airRoot,
    modelDir: join8(airRoot, p.model.dir),
    config: p.model.config,
    seqLen: kc.seq_len ?? p.prompt.padded_len,
    cpuAttn: kc.cpu_attn ?? p.integration.cpu_attn,
    toolchain: kc.toolchain ?? null,
    compileCommand: kc.compile_command ?? null,
    inputs: kc.inputs ?? null
  });
  const store = new KernelStore(plan.cacheDir ?? defaultCacheRoot());
  const target = join8(airRoot, kc.dir);
  const restored = store.restore(key, target, (why) => log.step(`kernel cache: entry ${key.slice(0, 12)} refused (${why}); kernels will compile`));
  log.step(restored ? `kernel cache: hit ${key.slice(0, 12)} (stored ${restored.created_at}${restored.compile_seconds ? `, saves about ${restored.compile_seconds.toFixed(1)}s of compile` : ""}) -> ${kc.dir}` : `kernel cache: miss ${key.slice(0, 12)} (${files} source files hashed); kernels will compile`);
  return { store, key, target, restored };
}
function recordKernels(plan, runDir, c, log) {
  const p = readProbeJson(runDir);
  const kc = p.kernel_cache;
  const compiled = kc.compiled ?? [];
  const hit = !!c.restored && compiled.length === 0;
  if (!c.restored || compiled.length > 0) {
    if (plan.cacheWrite === false) log.step("kernel cache: not stored (untrusted run)");
    else if (existsSync8(c.target)) {
      c.store.store(c.key, c.target, { model: p.model.name, created_at: (/* @__PURE__ */ new Date()).toISOString(), compile_seconds: kc.compile_seconds ?? null });
      log.step(`kernel cache: stored ${c.key.slice(0, 12)} in ${c.store.root}`);
    }
  }
  p.kernel_cache = { ...kc, key: c.key, hit, seconds_saved: hit ? c.restored?.compile_seconds ?? null : null };
  writeAtomic(join8(runDir, RUN_FILES.probe), JSON.stringify(p, null, 2) + "\n");
}
async function runBisect(plan, python, runDir, log) {
  log.step("bisect: swapping one kernel at a time to its CPU equivalent");
  try {
    await runProbe(
      python,
      { subcommand: "bisect", args: ["--run-dir", runDir], runDir, timeoutSec: plan.timeoutSec, extraEnv: plan.probeEnv },
      { onLine: (line) => log.step(`probe: ${line}`) }
    );
    return null;
  } catch (e) {
    log.warn(`bisect did not finish: ${oneLine(e)}`);
    return oneLine(e);
  }
}
function openChecked(runDir, entry, what) {
  const path = tensorPath(runDir, entry);
  if (!existsSync8(path)) throw new InputError(`${what} tensor is missing (probe.json lists it)`, path);
  const t = openTensor(path, { u2IsBf16: entry.dtype === "bf16" });
  const declared = entry.shape.join("x");
  if (declared !== t.shape.join("x")) {
    t.close();
    throw new InputError(`shape ${t.shape.join("x")} disagrees with probe.json (${declared})`, path);
  }
  return t;
}
function docsModelDir(plan, p) {
  if (plan.modelDir) return requireModelDir(plan.modelDir);
  const rel = p.model.dir;
  if (isAbsolute4(rel) || rel.split(/[\\/]/).includes("..")) return null;
  const candidate = join8(p.environment.air_root ?? "", rel);
  return p.environment.air_root && existsSync8(candidate) ? candidate : null;
}
function commitOf(plan, p) {
  return plan.commit ?? p.environment.git_commit ?? process.env.GITHUB_SHA ?? "uncommitted";
}
async function judge(plan, log, python = null) {
  const runDir = resolve2(plan.runDir);
  const p = readProbeJson(runDir);
  const cfg = p.model.config;
  const thresholds = {
    whole: WHOLE_COSINE_MIN,
    perPosition: plan.threshold ?? perPositionThreshold(cfg.head_dim),
    headDim: cfg.head_dim,
    overridden: plan.threshold !== null
  };
  const npu = openChecked(runDir, p.tensors.npu, "NPU");
  let metrics;
  try {
    const ref = openChecked(runDir, p.tensors.ref, "reference");
    try {
      if (ref.rows !== p.prompt.real_len) {
        throw new InputError(`reference has ${ref.rows} rows but probe.json says real_len ${p.prompt.real_len}`, ref.path);
      }
      log.step(`judge: comparing ${npu.rows}x${npu.cols} NPU rows against ${ref.rows} reference rows`);
      metrics = await compare(npu, ref, { realLen: p.prompt.real_len, threshold: thresholds.perPosition });
    } finally {
      ref.close();
    }
  } finally {
    npu.close();
  }
  log.step(`judge: engine ${metrics.engine}, whole cosine ${metrics.wholeCosine.toFixed(6)}, per-position min ${metrics.perPosition.min.toFixed(6)}`);
  const gates = metricGates(metrics, thresholds);
  const layers = p.layers ? await judgeLayers(runDir, p.layers, thresholds.perPosition) : null;
  if (layers) log.step(`judge: ${layers.length} layers (informational), lowest per-position min ${Math.min(...layers.map((l) => l.perPositionMin)).toFixed(6)}`);
  const bisect = gates.some((g) => g.status === "fail") ? await bisectFailure(plan, p, runDir, thresholds, metrics, python, log) : null;
  const modelDir = plan.writeDocs ? docsModelDir(plan, p) : null;
  const phase2Path = modelDir ? join8(modelDir, DOC_PATHS.phase2) : null;
  const todoPath = modelDir ? join8(modelDir, DOC_PATHS.todo) : null;
  const oldPhase2 = phase2Path ? readIfExists(phase2Path) : null;
  const oldTodo = todoPath ? readIfExists(todoPath) : null;
  const report = {
    schema: REPORT_SCHEMA,
    schema_version: REPORT_SCHEMA_VERSION,
    tool: TOOL,
    created_at: (/* @__PURE__ */ new Date()).toISOString(),
    outcome: "pass",
    exit_code: EXIT.pass,
    error: null,
    model: { name: p.model.name, dir: p.model.dir, hf_id: p.model.hf_id, config: cfg },
    commit: commitOf(plan, p),
    prompt: { style: p.prompt.style, text: p.prompt.text, source: p.prompt.source, real_len: p.prompt.real_len, padded_len: p.prompt.padded_len },
    thresholds,
    gates,
    metrics,
    warnings: [],
    integration: p.integration,
    defaults: p.defaults ?? null,
    reference: p.reference,
    environment: p.environment,
    kernel_cache: p.kernel_cache ?? null,
    bisect,
    layers,
    timings: p.timings ?? {},
    docs: null,
    run_dir: runDir
  };
  const baseline = phase2Path ? baselineFor(readHistory(oldPhase2, phase2Path), report) : null;
  report.warnings = warningsFor(metrics, baseline);
  const documented = modelDir ? { attempted: true, ok: true, path: DOC_PATHS.phase2, detail: "latest result and history row written" } : { attempted: false, ok: false, path: "", detail: plan.writeDocs ? "model dir not available here; pass --model-dir to document" : "not written in this run (documents turned off, or a pull request)" };
  report.gates = [...gates, documentationGate(documented)];
  report.outcome = outcomeOf(report.gates);
  report.exit_code = report.outcome === "pass" ? EXIT.pass : EXIT.fail;
  const docs = phase2Path && todoPath ? writeDocuments(report, phase2Path, oldPhase2, todoPath, oldTodo, log) : null;
  report.docs = docs;
  const markdown = renderMarkdown(report, { flavor: "summary" });
  writeAtomic(join8(runDir, RUN_FILES.markdown), markdown);
  writeAtomic(join8(runDir, RUN_FILES.report), toJson(report));
  return { report, runDir, markdown, exitCode: report.exit_code, docs };
}
async function bisectFailure(plan, p, runDir, th, metrics, python, log) {
  const unavailable = (reason) => ({ available: false, reason, hook: null, steps: [], offender: null, situation: situationOf(metrics) });
  if (python && plan.bisect !== false) {
    const crashed = await runBisect(plan, python, runDir, log);
    if (crashed) return unavailable(`probe bisect failed: ${crashed}`);
  }
  const b = await judgeBisect(runDir, tensorPath(runDir, p.tensors.ref), p.prompt.real_len, th, metrics);
  if (!b) {
    return unavailable(plan.bisect === false ? "bisect turned off (--no-bisect)" : "bisect runs on the NPU host (mode full); this run dir holds no bisect/bisect.json");
  }
  if (b.offender) log.step(`bisect: offending boundary ${b.offender.step} (${b.offender.kernel})`);
  return b;
}
function writeDocuments(report, phase2Path, oldPhase2, todoPath, oldTodo, log) {
  const newPhase2 = updatePhase2(oldPhase2, report, renderMarkdown(report, { flavor: "doc" }), phase2Path);
  const newTodo = updateTodo(oldTodo, report);
  if (newPhase2 !== oldPhase2) writeAtomic(phase2Path, newPhase2);
  if (newTodo !== oldTodo) writeAtomic(todoPath, newTodo);
  const changed = newPhase2 !== oldPhase2 || newTodo !== oldTodo;
  log.step(`docs: ${changed ? "updated" : "unchanged"} ${phase2Path} and ${todoPath}`);
  return { phase2: phase2Path, todo: todoPath, changed };
}
async function runCheck(plan, log) {
  const { python } = await probe(plan, log);
  return judge(plan, log, python);
}
function errorReport(plan, message, exitCode) {
  return {
    schema: REPORT_SCHEMA,
    schema_version: REPORT_SCHEMA_VERSION,
    tool: TOOL,
    created_at: (/* @__PURE__ */ new Date()).toISOString(),
    outcome: "error",
    exit_code: exitCode,
    error: message,
    model: { name: plan.modelDir ? basename3(resolve2(plan.modelDir)) : "unknown", dir: plan.modelDir ?? "", hf_id: null, config: null },
    commit: plan.commit ?? process.env.GITHUB_SHA ?? "uncommitted",
    prompt: null,
    thresholds: { whole: WHOLE_COSINE_MIN, perPosition: plan.threshold ?? NaN, headDim: NaN, overridden: plan.threshold !== null },
    gates: [],
    metrics: null,
    warnings: [],
    integration: null,
    reference: null,
    environment: null,
    kernel_cache: null,
    bisect: null,
    layers: null,
    timings: {},
    docs: null,
    run_dir: resolve2(plan.runDir)
  };
}

// src/log.ts
function stderrLog(now = () => performance.now(), write = (s) => process.stderr.write(s)) {
  const t0 = now();
  const stamp = () => `[${((now() - t0) / 1e3).toFixed(1).padStart(6)}s]`;
  return {
    step: (msg) => write(`${stamp()} ${msg}
`),
    warn: (msg) => write(`${stamp()} warning: ${msg}
`)
  };
}

// src/report/terminal.ts
function pad(rows) {
  const w = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length)));
  return rows.map((r) => r.map((s, c) => c === r.length - 1 ? s : s.padEnd(w[c])).join("  ").trimEnd());
}
function renderTerminal(r) {
  const out = [];
  if (r.outcome === "error") {
    out.push(`ERROR  ${r.model.name}: could not judge (not a FAIL verdict)`, `  ${r.error ?? ""}`);
    return out.join("\n");
  }
  out.push(`${r.outcome === "pass" ? "PASS" : "FAIL"}  ${r.model.name}  (head_dim ${r.thresholds.headDim}, per-position threshold ${formatThreshold(r.thresholds.perPosition)}${r.thresholds.overridden ? ", overridden" : ""})`);
  out.push("");
  const rows = [["gate", "check", "measured", "bar", "result"]];
  for (const g of r.gates) {
    const v = typeof g.value === "number" ? g.id === "G3" ? String(g.value) : fmtCos(g.value) : g.value ?? "";
    rows.push([g.id, g.name, v, g.bar, g.status.toUpperCase()]);
  }
  out.push(...pad(rows).map((l) => `  ${l}`));
  for (const g of r.gates) if (g.status === "fail") out.push(`  ${g.id}: ${g.detail}`);
  const m = r.metrics;
  if (m) {
    const e = m.errors;
    const pp = m.perPosition;
    out.push("");
    out.push(`  per-position cosine  min ${fmtCos(pp.min)}  p5 ${fmtCos(pp.p5)}  median ${fmtCos(pp.median)}  mean ${fmtCos(pp.mean)}  (${m.realLen} real rows of ${m.npuRows})`);
    out.push(`  errors  max_abs ${fmtSci(e.maxAbs)}  mean_abs ${fmtSci(e.meanAbs)}  max_rel ${fmtSci(e.maxRel)}  mean_rel ${fmtSci(e.meanRel)}  mean_rel_L1 ${fmtSci(e.meanRelL1)}  SQNR ${fmtSqnr(e.sqnrDb, SQNR_GOOD_DB)}  norm ratio ${fmtRatio(e.normRatio)}`);
    if (pp.badRuns.length) out.push(`  rows under threshold: ${pp.badRuns.map((b2) => fmtRun(b2.start, b2.end)).join(", ")}${pp.badRuns.some((b2) => b2.end === m.realLen - 1) ? " (tail of the prompt)" : ""}`);
    if (pp.worst.length) out.push(`  worst rows: ${pp.worst.map((w) => `${w.row}=${fmtCos(w.cosine)}`).join(" ")}`);
  }
  for (const w of r.warnings) out.push(`  warning: ${w.message}`);
  const b = r.bisect;
  if (b) {
    if (!b.available) out.push(`  bisect: unavailable (${b.reason})`);
    else {
      out.push("", "  bisect (one kernel at a time on the CPU):");
      const rows2 = [["step", "kernel", "whole", "per-pos min", "passes"]];
      for (const s of b.steps) rows2.push([s.step, s.kernel, fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), s.fixes ? "yes" : "no"]);
      out.push(...pad(rows2).map((l) => `    ${l}`));
      out.push(b.offender ? `  offending boundary: ${b.offender.step} (${b.offender.kernel})${b.offender.hint ? `: likely ${b.offender.hint.cause}; ${b.offender.hint.where}` : ""}` : `  ${b.reason}`);
    }
    if (b.situation) out.push(`  failure shape: ${b.situation.cause}; ${b.situation.where}`);
  }
  if (r.layers?.length) {
    out.push("", "  every layer (informational):");
    const rows2 = [["layer", "whole", "per-pos min", "max_abs", "SQNR"]];
    for (const l of r.layers) rows2.push([String(l.layer), fmtCos(l.wholeCosine), fmtCos(l.perPositionMin), fmtSci(l.maxAbs), fmtSqnr(l.sqnrDb, SQNR_GOOD_DB)]);
    out.push(...pad(rows2).map((l) => `    ${l}`));
  }
  if (r.integration) {
    out.push("", `  integration: ${r.integration.path} via ${r.integration.entry}${r.integration.workarounds.length ? `; workarounds: ${r.integration.workarounds.map((w) => w.id).join(", ")}` : ""}`);
    const s1 = r.integration.step1;
    if (s1?.breaks?.length) out.push(`  step 1: kernel-first forced by ${s1.breaks.map((b2) => `(${b2.rule}) ${b2.detail}`).join("; ")}`);
    const unwired = r.integration.coverage?.unwired ?? [];
    if (unwired.length) out.push(`  phase 1 coverage: ${unwired.length} verified kernel row(s) naming this model are not launched by the block`);
  }
  for (const d of r.defaults?.differs ?? []) out.push(`  differs from make diagnosis: ${d}`);
  if (r.docs) out.push(`  documented: ${r.docs.phase2}${r.docs.changed ? "" : " (unchanged)"}`);
  return out.join("\n");
}

// src/agent/cli.ts
import { parseArgs } from "node:util";

// src/agent/machine.ts
import { spawnSync as spawnSync2 } from "node:child_process";
import { existsSync as existsSync9, readdirSync as readdirSync2, readFileSync as readFileSync5, statfsSync, statSync as statSync4 } from "node:fs";
import { join as join9, resolve as resolve3 } from "node:path";
import { homedir as homedir2 } from "node:os";
var DEFAULT_TIMEOUT_MS = 15e3;
function spawnOne(cmd, args, env, timeoutMs) {
  const r = spawnSync2(cmd, args, { encoding: "utf8", env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });
  if (r.error) {
    const code2 = r.error.code;
    if (code2 === "ENOENT") return { status: null, stdout: "", stderr: "", missing: true, error: "not found" };
    if (code2 === "ETIMEDOUT") return { status: null, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: `timed out after ${timeoutMs / 1e3}s` };
    return { status: null, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error.message };
  }
  return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}
var Machine = class {
  root;
  env;
  python;
  statfs;
  cwd;
  sleep;
  now;
  commands;
  spawn;
  timeoutMs;
  constructor(o = {}) {
    this.root = resolve3(o.root ?? "/");
    this.env = o.env ?? process.env;
    this.commands = o.commands ?? {};
    this.spawn = o.spawn ?? true;
    this.timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.python = o.python ?? testPython;
    this.statfs = o.statfs ?? ((p) => {
      const s = statfsSync(p);
      return { bavail: Number(s.bavail), bsize: Number(s.bsize), blocks: Number(s.blocks) };
    });
    this.cwd = o.cwd ?? process.cwd();
    this.sleep = o.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.now = o.now ?? (() => /* @__PURE__ */ new Date());
  }
  /** A system path under the root prefix: path('/proc/locks'). */
  path(p) {
    return this.root === "/" ? p : join9(this.root, p);
  }
  exists(p) {
    return existsSync9(this.path(p));
  }
  read(p) {
    try {
      return readFileSync5(this.path(p), "utf8");
    } catch {
      return null;
    }
  }
  readBytes(p) {
    try {
      return readFileSync5(this.path(p));
    } catch {
      return null;
    }
  }
  list(p) {
    try {
      return readdirSync2(this.path(p)).sort();
    } catch {
      return null;
    }
  }
  inode(p) {
    try {
      return statSync4(this.path(p)).ino;
    } catch {
      return null;
    }
  }
  /** timeoutMs: this call's limit (default the machine's, 15 s). */
  run(cmd, args = [], timeoutMs) {
    const stub = this.commands[cmd];
    if (stub) return stub(args);
    if (!this.spawn) return { status: null, stdout: "", stderr: "", missing: true, error: "not found" };
    return spawnOne(cmd, args, this.env, timeoutMs ?? this.timeoutMs);
  }
  home() {
    return this.env.HOME || homedir2();
  }
};

// src/agent/doctor.ts
import { accessSync, constants, existsSync as existsSync10, readdirSync as readdirSync3 } from "node:fs";
import { dirname as dirname5, join as join10, resolve as resolve4 } from "node:path";

// src/agent/parse.ts
function parseXrtSmi(text) {
  const info = { xrt: null, amdxdna: null, firmware: null, devices: [] };
  let section = "";
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+$/, "");
    if (/^\S/.test(line)) section = line.trim();
    const kv = /^\s+([^:|]+?)\s*:\s*(.+)$/.exec(line);
    if (kv) {
      const [, k, v] = kv;
      const key = k.toLowerCase();
      if (section === "XRT" && key === "version") info.xrt = v.trim();
      else if (key === "amdxdna version") info.amdxdna = v.split(",")[0].trim();
      else if (/firmware version$/.test(key) && !info.firmware) info.firmware = v.trim();
    }
    const dev = /^\|\s*\[([0-9a-fA-F:.]+)\]\s*\|\s*([^|]*?)\s*\|/.exec(line);
    if (dev) info.devices.push({ bdf: dev[1], name: dev[2] });
  }
  return info;
}
var SIGNATURES = [
  { id: "smu-power", severity: "fail", what: "SMU could not power the NPU (aie2_smu_start: Access power failed)", re: /Access power failed/i },
  { id: "ctx-connect", severity: "fail", what: "hardware context could not connect (aie2_ctx_connect failed)", re: /aie2_ctx_connect\b.*(fail|err|ret\s*-?\d)|\*ERROR\*\s*aie2_ctx_connect/i },
  { id: "channel-bad-state", severity: "fail", what: "mailbox channel in bad state", re: /Channel in bad state/i },
  { id: "bad-message-id", severity: "fail", what: "mailbox got a bad message ID", re: /Bad message ID/i },
  { id: "command-timeout", severity: "warn", what: "NPU command timed out", re: /\b(time[d ]?\s?out|timeout)\b/i }
];
function classifyKernelLine(line) {
  if (!/amdxdna|aie2_/i.test(line)) return null;
  for (const s of SIGNATURES) if (s.re.test(line)) return { id: s.id, severity: s.severity, what: s.what };
  return null;
}
function isDriverLoad(line) {
  return /Initialized amdxdna/i.test(line);
}
function scanKernelLog(text) {
  const lines = text.split(/\r?\n/).filter((l) => /amdxdna|aie2_/i.test(l));
  let start = 0;
  lines.forEach((l, i) => {
    if (isDriverLoad(l)) start = i + 1;
  });
  const byId = /* @__PURE__ */ new Map();
  let cleared = 0;
  lines.forEach((l, i) => {
    const w = classifyKernelLine(l);
    if (!w) return;
    if (i < start) {
      cleared++;
      return;
    }
    const prev = byId.get(w.id);
    byId.set(w.id, { ...w, count: (prev?.count ?? 0) + 1, last: l.trim() });
  });
  const order = SIGNATURES.map((s) => s.id);
  const found = [...byId.values()].sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id));
  return { lines: lines.length, found, cleared, reloaded: start > 0 };
}
function parseMemlock(limits) {
  const m = /^Max locked memory\s+(\S+)\s+(\S+)/m.exec(limits);
  if (!m) return null;
  return m[1] === "unlimited" ? "unlimited" : Number(m[1]);
}
function parseProcLocks(text) {
  const out = [];
  for (const line of text.split(/\r?\n/)) {
    const parts = line.trim().split(/\s+/);
    const blocked = parts[1] === "->";
    const p = blocked ? [parts[0], ...parts.slice(2)] : parts;
    if (p.length < 6) continue;
    const pid = Number(p[4]);
    const inode = Number(p[5].split(":").pop());
    if (!Number.isInteger(pid) || !Number.isInteger(inode)) continue;
    out.push({ kind: p[1], mode: p[2], access: p[3], pid, inode, blocked });
  }
  return out;
}
function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}
function parseSize(s) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$/i.exec(s);
  if (!m) return null;
  const mult = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2].toLowerCase()];
  const n = Number(m[1]) * mult;
  return Number.isFinite(n) ? Math.floor(n) : null;
}

// src/agent/lock.ts
var DEFAULT_NPU_LOCK = NPU_LOCK.path;
var DEFAULT_WAIT_SECONDS = NPU_LOCK.timeout_seconds;
var PROGRESS_EVERY_MS = NPU_LOCK.progress_seconds * 1e3;
var POLL_MS = 1e3;
function npuLockPath(env, explicit) {
  const p = explicit || env[NPU_LOCK.env] || DEFAULT_NPU_LOCK;
  return p.trim().toLowerCase() === "none" ? null : p;
}
function lockState(m, path = npuLockPath(m.env)) {
  if (!path) return { path, holder: null, waiters: 0, exists: false };
  const ino = m.inode(path);
  if (ino === null) return { path, holder: null, waiters: 0, exists: false };
  const locks = parseProcLocks(m.read("/proc/locks") ?? "").filter((l) => l.inode === ino);
  const h = locks.find((l) => !l.blocked);
  const holder = h ? { pid: h.pid, cmdline: (m.readBytes(`/proc/${h.pid}/cmdline`)?.toString("utf8") ?? "").replace(/\0/g, " ").trim().slice(0, 120) } : null;
  return { path, holder, waiters: locks.filter((l) => l.blocked).length, exists: true };
}
function describeHolder(s) {
  if (!s.holder) return "free";
  return `held by pid ${s.holder.pid}${s.holder.cmdline ? ` (${s.holder.cmdline})` : ""}${s.waiters ? `, ${s.waiters} waiting` : ""}`;
}
function renderLockStatus(s) {
  if (!s.path) return "NPU lock off (NPU_BLOCK_GATE_NPU_LOCK=none)\n";
  const who = s.holder ? `held by pid ${s.holder.pid}${s.holder.cmdline ? ` (${s.holder.cmdline})` : ""}` : `free${s.exists ? "" : " (no lock file yet)"}`;
  return `${s.path}: ${who}; ${s.waiters} waiting
`;
}
var secs = (ms) => String(Math.round(ms) / 1e3);
async function waitLock(m, path, timeoutMs, progress) {
  if (!lockState(m, path).exists) return { path, free: true, waited_s: 0, method: "none", holder: null };
  let waited = 0;
  const start = m.now().getTime();
  const done = (free, method) => ({
    path,
    free,
    waited_s: Math.round(waited / 100) / 10,
    method,
    holder: free ? null : describeHolder(lockState(m, path))
  });
  const tell = () => progress(`waiting for ${path}: ${describeHolder(lockState(m, path))} (${secs(waited)}s of ${secs(timeoutMs)}s)`);
  for (; ; ) {
    const slice = Math.min(PROGRESS_EVERY_MS - waited % PROGRESS_EVERY_MS, timeoutMs - waited);
    const r = m.run("flock", ["-w", secs(slice), m.path(path), "true"], slice + 1e4);
    if (r.status === 0) {
      waited = Math.max(waited, Math.min(timeoutMs, m.now().getTime() - start));
      return done(true, "flock");
    }
    if (r.status !== 1) break;
    waited += slice;
    if (waited >= timeoutMs) return done(false, "flock");
    tell();
  }
  let next = (Math.floor(waited / PROGRESS_EVERY_MS) + 1) * PROGRESS_EVERY_MS;
  for (; ; ) {
    if (!lockState(m, path).holder) return done(true, "poll");
    if (waited >= timeoutMs) return done(false, "poll");
    const step = Math.min(POLL_MS, timeoutMs - waited);
    await m.sleep(step);
    waited += step;
    if (waited >= next && waited < timeoutMs) {
      tell();
      next += PROGRESS_EVERY_MS;
    }
  }
}

// src/agent/doctor.ts
var MIN_FREE_BYTES = 5 * 1024 ** 3;
var RELOAD = "sudo modprobe -r amdxdna && sudo modprobe amdxdna";
var ok = (id, detail) => ({ id, status: "ok", detail, fix: null });
var warn = (id, detail, fix) => ({ id, status: "warn", detail, fix });
var fail = (id, detail, fix) => ({ id, status: "fail", detail, fix });
function deviceNodes(m) {
  return (m.list("/dev/accel") ?? []).map((n) => `/dev/accel/${n}`);
}
function checkDevice(m) {
  const nodes = deviceNodes(m);
  if (!nodes.length) {
    return fail(
      "device",
      `no /dev/accel device: the amdxdna driver could not probe the NPU`,
      "power-cycle the runner (a warm reboot does not always bring the NPU back)"
    );
  }
  const denied = nodes.filter((n) => {
    try {
      accessSync(m.path(n), constants.R_OK | constants.W_OK);
      return false;
    } catch {
      return true;
    }
  });
  if (denied.length === nodes.length) {
    return warn(
      "device",
      `${nodes.join(", ")} present but not readable and writable by this user`,
      "add the runner user to the render group (sudo usermod -aG render $USER), then log in again"
    );
  }
  return ok("device", nodes.join(", "));
}
function driverVersion(m) {
  return m.read("/sys/module/amdxdna/version")?.trim() || null;
}
function checkDriver(m) {
  if (!m.exists("/sys/module/amdxdna")) {
    return fail("driver", "amdxdna module not loaded", "sudo modprobe amdxdna (needs Linux >= 6.14 or the xrt-plugin-amdxdna package)");
  }
  const v = driverVersion(m);
  return ok("driver", `amdxdna loaded${v ? ` (version ${v})` : " (in-tree, no version file)"}`);
}
function runXrtSmi(m) {
  let r = m.run("xrt-smi", ["examine"]);
  const bundled = "/opt/xilinx/xrt/bin/xrt-smi";
  if (r.missing && m.exists(bundled)) r = m.run(m.path(bundled), ["examine"]);
  return r;
}
function checkXrt(m) {
  const r = runXrtSmi(m);
  if (r.missing) return warn("xrt-smi", "xrt-smi not found", "source /opt/xilinx/xrt/setup.sh (or install XRT) so xrt-smi is on PATH");
  if (r.status !== 0) {
    const why = r.error ?? (`${r.stderr}
${r.stdout}`.trim().split("\n").pop() || `exit ${r.status}`);
    return warn("xrt-smi", `xrt-smi examine failed: ${oneLine(why)}`, "check the XRT install and the amdxdna driver (xrt-smi examine by hand)");
  }
  const x = parseXrtSmi(r.stdout);
  const versions = [x.xrt && `XRT ${x.xrt}`, x.amdxdna && `amdxdna ${x.amdxdna}`, x.firmware && `firmware ${x.firmware}`].filter(Boolean).join(", ");
  if (!x.devices.length) return warn("xrt-smi", `no device listed${versions ? ` (${versions})` : ""}`, "the driver sees no NPU: reload it, else power-cycle the runner");
  const devs = x.devices.map((d) => `${d.name} [${d.bdf}]`).join(", ");
  return ok("xrt-smi", `${devs}${versions ? `; ${versions}` : ""}`);
}
function kernelLog(m, hours = 2) {
  const j = m.run("journalctl", ["-k", "--since", `-${hours}h`, "--no-pager"]);
  if (j.status === 0 && !/No journal files were opened|insufficient permissions/i.test(j.stderr)) return { text: j.stdout, source: `journalctl -k (last ${hours}h)` };
  const d = m.run("dmesg", []);
  if (d.status === 0) return { text: d.stdout, source: "dmesg" };
  const why = [j, d].map((r) => r.error ?? (r.stderr.trim().split("\n").pop() || `exit ${r.status}`)).join("; ");
  return { error: `could not read the kernel log (journalctl, dmesg: ${oneLine(why)})` };
}
function checkKernelLog(m) {
  const log = kernelLog(m);
  if ("error" in log) return warn("kernel-log", log.error, "add the runner user to the systemd-journal (or adm) group to read the kernel log");
  const scan = scanKernelLog(log.text);
  const clearedNote = scan.cleared ? `; ${scan.cleared} older signature line(s) cleared by a driver reload` : "";
  if (!scan.found.length) return ok("kernel-log", `${log.source}: no wedge signatures in ${scan.lines} amdxdna line(s)${clearedNote}`);
  const worst = scan.found[0];
  const detail = `${log.source}: ${scan.found.map((w) => `${w.what} x${w.count}`).join("; ")}; last: ${worst.last}${clearedNote}`;
  if (worst.id === "smu-power") return fail("kernel-log", detail, `${RELOAD}, else power-cycle the runner`);
  if (worst.severity === "fail") return fail("kernel-log", detail, `the NPU is wedged (userspace sees EXEC_CMD err=-5): ${RELOAD}, else power-cycle`);
  return warn("kernel-log", detail, `if runs fail with DRM_IOCTL_AMDXDNA_EXEC_CMD err=-5: ${RELOAD}`);
}
function checkMemlock(m) {
  const text = m.read("/proc/self/limits");
  const fix = "sudo prlimit -lunlimited --pid $$ (in the job shell), or LimitMEMLOCK=infinity in the runner service";
  if (text === null) return warn("memlock", "cannot read /proc/self/limits", fix);
  const v = parseMemlock(text);
  if (v === null) return warn("memlock", 'no "Max locked memory" line in /proc/self/limits', fix);
  if (v === "unlimited") return ok("memlock", "Max locked memory: unlimited");
  return warn("memlock", `Max locked memory: ${formatBytes(v)} (NPU buffers need it unlimited)`, fix);
}
function freeBytes(m, path) {
  let p = resolve4(path);
  while (!existsSync10(p) && dirname5(p) !== p) p = dirname5(p);
  try {
    const s = m.statfs(p);
    return { path: p, free: s.bavail * s.bsize };
  } catch {
    return null;
  }
}
function checkDisk(m, id, label, path, min) {
  const f = freeBytes(m, path);
  if (!f) return warn(id, `${label} ${path}: cannot stat the file system`, "check the path exists and is readable");
  const detail = `${label} ${path}: ${formatBytes(f.free)} free`;
  if (f.free < min) return warn(id, `${detail} (under ${formatBytes(min)})`, `free space: npu-block-gate agent cache gc --max-bytes 5G, and clear old runs/ and build_peano/ dirs`);
  return ok(id, detail);
}
function hfHubCache(env, home) {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return join10(env.HF_HOME, "hub");
  return join10(env.XDG_CACHE_HOME || join10(home, ".cache"), "huggingface", "hub");
}
function checkHfCache(m) {
  const dir = hfHubCache(m.env, m.home());
  const offline = /^(1|true|yes|on)$/i.test(m.env.HF_HUB_OFFLINE ?? "");
  let entries = [];
  try {
    entries = readdirSync3(dir).filter((n) => !n.startsWith("."));
  } catch {
  }
  if (entries.length) {
    const models = entries.filter((n) => n.startsWith("models--")).length;
    return ok("hf-cache", `${dir}: ${models} model(s)${offline ? " (HF_HUB_OFFLINE=1)" : ""}`);
  }
  if (offline) return warn("hf-cache", `${dir} missing or empty and HF_HUB_OFFLINE=1: reference runs cannot load a model`, "warm the cache once online (huggingface-cli download <model>), or set HF_HOME to the warm cache");
  return ok("hf-cache", `${dir} missing or empty (models download on first use)`);
}
function checkPython(m, explicit) {
  try {
    const p = findPython(explicit, m.env, m.python);
    return ok("python", `${p.executable} (Python ${p.version}, numpy ${p.numpy}; from ${p.source})`);
  } catch (e) {
    return fail("python", oneLine(e), "pass --python, or set NPU_BLOCK_GATE_PYTHON to the mlir-air environment (e.g. /opt/mlir-air/ironenv/bin/python)");
  }
}
function checkLock(m) {
  const s = lockState(m);
  if (!s.path) return ok("npu-lock", "off (NPU_BLOCK_GATE_NPU_LOCK=none)");
  if (!s.holder) return ok("npu-lock", `${s.path}: free${s.exists ? "" : " (no lock file yet)"}`);
  return warn("npu-lock", `${s.path}: ${describeHolder(s)}`, `a run is using the NPU; wait for it (the kernel drops the lock when pid ${s.holder.pid} exits)`);
}
function doctor(m, o = {}) {
  const min = o.minFreeBytes ?? MIN_FREE_BYTES;
  const cacheRoot = o.cacheDir ?? defaultCacheRoot(m.env);
  const workspace = o.workspace ?? m.env.GITHUB_WORKSPACE ?? m.cwd;
  return [
    checkDevice(m),
    checkDriver(m),
    checkXrt(m),
    checkKernelLog(m),
    checkMemlock(m),
    checkDisk(m, "disk-cache", "kernel cache", cacheRoot, min),
    checkDisk(m, "disk-workspace", "workspace", workspace, min),
    checkHfCache(m),
    checkPython(m, o.python ?? null),
    checkLock(m)
  ];
}
function summarize2(checks) {
  const s = { ok: 0, warn: 0, fail: 0 };
  for (const c of checks) s[c.status]++;
  return s;
}
function renderChecks(checks, root) {
  const w = Math.max(...checks.map((c) => c.id.length));
  const lines = [`npu-block-gate agent doctor${root === "/" ? "" : ` (root ${root})`}`];
  for (const c of checks) {
    lines.push(`  ${(c.status === "ok" ? "ok" : c.status.toUpperCase()).padEnd(4)}  ${c.id.padEnd(w)}  ${c.detail}`);
    if (c.fix) lines.push(`  ${"".padEnd(4)}  ${"".padEnd(w)}  fix: ${c.fix}`);
  }
  const s = summarize2(checks);
  lines.push(`${s.ok} ok, ${s.warn} warn, ${s.fail} fail${s.fail ? ": this runner cannot run NPU jobs (exit 3)" : ""}`);
  return lines.join("\n") + "\n";
}

// src/agent/status.ts
import { existsSync as existsSync11, readdirSync as readdirSync4, readFileSync as readFileSync6, statSync as statSync5 } from "node:fs";
import { join as join11 } from "node:path";
function lastRuns(dir, n = 3) {
  if (!existsSync11(dir)) return [];
  const dirs = readdirSync4(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => ({ p: join11(dir, e.name), t: statSync5(join11(dir, e.name)).mtimeMs })).sort((a, b) => b.t - a.t).slice(0, n);
  return dirs.map(({ p }) => {
    try {
      const r = JSON.parse(readFileSync6(join11(p, "report.json"), "utf8"));
      return { dir: p, outcome: r.outcome ?? null, model: r.model?.name ?? null, created_at: r.created_at ?? null };
    } catch {
      return { dir: p, outcome: null, model: null, created_at: null };
    }
  });
}
function status(m, o = {}) {
  const lock = lockState(m);
  const cacheRoot = o.cacheDir ?? defaultCacheRoot(m.env);
  const entries = new KernelStore(cacheRoot).list();
  return {
    root: m.root,
    device: deviceNodes(m),
    driver: { loaded: m.exists("/sys/module/amdxdna"), version: driverVersion(m) },
    lock: { path: lock.path, holder: lock.path ? describeHolder(lock) : "off" },
    cache: { root: cacheRoot, entries: entries.length, bytes: entries.reduce((n, e) => n + e.bytes, 0) },
    runs: lastRuns(o.runsDir ?? join11(m.cwd, "runs"))
  };
}
function renderStatus(s) {
  const lines = [
    `device:  ${s.device.length ? s.device.join(", ") : "none (no /dev/accel: power-cycle the runner)"}`,
    `driver:  ${s.driver.loaded ? `amdxdna${s.driver.version ? ` ${s.driver.version}` : ""}` : "amdxdna not loaded"}`,
    `lock:    ${s.lock.path ? `${s.lock.path}: ${s.lock.holder}` : "off"}`,
    `cache:   ${s.cache.root}: ${s.cache.entries} entr${s.cache.entries === 1 ? "y" : "ies"}, ${formatBytes(s.cache.bytes)}`
  ];
  if (s.runs.length) {
    lines.push("runs:");
    for (const r of s.runs) lines.push(`  ${r.outcome ?? "?"}`.padEnd(9) + `${r.model ?? ""}${r.model ? "  " : ""}${r.dir}`);
  }
  return lines.join("\n") + "\n";
}

// src/agent/cache.ts
function cacheStats(root, maxBytes = DEFAULT_MAX_BYTES) {
  const entries = new KernelStore(root, maxBytes).list().sort((a, b) => b.used - a.used).map((e) => ({ key: e.key, model: e.model, bytes: e.bytes, created_at: e.created_at, last_used: new Date(e.used).toISOString() }));
  return { root, entries, total_bytes: entries.reduce((n, e) => n + e.bytes, 0), max_bytes: maxBytes };
}
function cacheGc(root, maxBytes) {
  const before = new Map(cacheStats(root, maxBytes).entries.map((e) => [e.key, e]));
  const dropped = new KernelStore(root, maxBytes).gc().map((k) => before.get(k)).filter(Boolean);
  const after = cacheStats(root, maxBytes);
  return { root, max_bytes: maxBytes, dropped, kept: after.entries.length, total_bytes: after.total_bytes };
}
var short = (t) => t.replace(/\.\d+Z$/, "Z").replace("T", " ");
function table(rows) {
  const head = ["key", "model", "size", "created", "last used"];
  const cells = rows.map((e) => [e.key.slice(0, 16), e.model, formatBytes(e.bytes), short(e.created_at), short(e.last_used)]);
  const w = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  return [head, ...cells].map((c) => "  " + c.map((x, i) => x.padEnd(w[i])).join("  ").trimEnd());
}
function renderStats(s) {
  const lines = [`kernel cache ${s.root}: ${s.entries.length} entr${s.entries.length === 1 ? "y" : "ies"}, ${formatBytes(s.total_bytes)} of ${formatBytes(s.max_bytes)}`];
  if (s.entries.length) lines.push(...table(s.entries));
  return lines.join("\n") + "\n";
}
function renderGc(g) {
  const lines = [`kernel cache ${g.root}: dropped ${g.dropped.length} (${formatBytes(g.dropped.reduce((n, e) => n + e.bytes, 0))}), kept ${g.kept} (${formatBytes(g.total_bytes)} of ${formatBytes(g.max_bytes)})`];
  if (g.dropped.length) lines.push(...table(g.dropped));
  return lines.join("\n") + "\n";
}

// src/agent/hooks.ts
import { chmodSync, existsSync as existsSync12, mkdirSync as mkdirSync4, readdirSync as readdirSync5, readFileSync as readFileSync7, renameSync as renameSync3, rmSync as rmSync4, statSync as statSync6, writeFileSync as writeFileSync3, appendFileSync } from "node:fs";
import { join as join12, resolve as resolve5 } from "node:path";
var HOOK_VARS = { "job-started": "ACTIONS_RUNNER_HOOK_JOB_STARTED", "job-completed": "ACTIONS_RUNNER_HOOK_JOB_COMPLETED" };
var LOG_DAYS = 14;
function selfCommand() {
  const script = resolve5(process.argv[1] ?? "dist/cli.js");
  return { node: process.execPath, execArgv: script.endsWith(".ts") ? process.execArgv : [], script };
}
var defaultHooksDir = (m) => join12(m.home(), ".npu-block-gate", "hooks");
var sq = (s) => /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
function hookScript(self, name, args) {
  const cmd = [self.node, ...self.execArgv, self.script, "agent", "hook", name, ...args].map(sq).join(" ");
  return `#!/bin/sh
# ${name} hook of the GitHub Actions runner, written by \`npu-block-gate agent hooks install\`.
exec ${cmd} "$@"
`;
}
function writeAtomic2(path, text, mode) {
  try {
    if (readFileSync7(path, "utf8") === text && (statSync6(path).mode & 511) === mode) return false;
  } catch {
  }
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync3(tmp, text, { mode });
  chmodSync(tmp, mode);
  renameSync3(tmp, path);
  return true;
}
function updateEnv(text, lines) {
  const parts = text.length ? text.split(/(?<=\n)/) : [];
  const seen = /* @__PURE__ */ new Set();
  const out = [];
  for (const p of parts) {
    const key = Object.keys(lines).find((k) => p.startsWith(`${k}=`));
    if (!key) {
      out.push(p);
      continue;
    }
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(`${key}=${lines[key]}${p.endsWith("\r\n") ? "\r\n" : "\n"}`);
  }
  const missing = Object.keys(lines).filter((k) => !seen.has(k));
  if (missing.length && out.length && !out[out.length - 1].endsWith("\n")) out[out.length - 1] += "\n";
  for (const k of missing) out.push(`${k}=${lines[k]}
`);
  return out.join("");
}
function installHooks(o) {
  const dir = resolve5(o.dir);
  mkdirSync4(dir, { recursive: true });
  const report = [];
  const paths = { "job-started": join12(dir, "job-started.sh"), "job-completed": join12(dir, "job-completed.sh") };
  const args = {
    "job-started": ["--fork-policy", o.forkPolicy],
    "job-completed": ["--dir", dir, ...o.cacheMaxBytes ? ["--cache-max-bytes", o.cacheMaxBytes] : []]
  };
  for (const name of ["job-started", "job-completed"]) {
    const changed = writeAtomic2(paths[name], hookScript(o.self, name, args[name]), 493);
    report.push(`${changed ? "wrote    " : "unchanged"} ${paths[name]}`);
  }
  const lines = { [HOOK_VARS["job-started"]]: paths["job-started"], [HOOK_VARS["job-completed"]]: paths["job-completed"] };
  if (o.runnerDir) {
    const runner = resolve5(o.runnerDir);
    if (!existsSync12(runner)) throw new InputError(`--runner-dir ${runner}: no such directory`);
    const env = join12(runner, ".env");
    let text = "";
    let mode = 420;
    try {
      text = readFileSync7(env, "utf8");
      mode = statSync6(env).mode & 511;
    } catch {
    }
    const next = updateEnv(text, lines);
    const changed = next !== text && writeAtomic2(env, next, mode);
    report.push(`${changed ? "updated  " : "unchanged"} ${env} (${Object.keys(lines).join(", ")})`);
    if (changed) report.push("restart the runner service (sudo ./svc.sh stop && sudo ./svc.sh start) so it reads .env");
  } else {
    report.push(`add these lines to the runner's .env (in its install dir), then restart the runner:`);
    for (const [k, v] of Object.entries(lines)) report.push(`  ${k}=${v}`);
  }
  return report.join("\n") + "\n";
}
function forkVerdict(env, policy) {
  if (policy === "allow") return null;
  const p = env.GITHUB_EVENT_PATH;
  if (!p) return null;
  let ev;
  try {
    ev = JSON.parse(readFileSync7(p, "utf8"));
  } catch (e) {
    return `npu-block-gate: fork policy deny: cannot read the job's event ${p} (${oneLine(e)}); refusing to run`;
  }
  const pr = ev?.pull_request;
  if (!pr) return null;
  const head = pr.head?.repo?.full_name ?? null;
  const base = pr.base?.repo?.full_name ?? null;
  if (head && base && head === base) return null;
  return `npu-block-gate: fork policy deny: pull request from ${head ?? "a deleted fork"} into ${base ?? "this repository"} runs untrusted code on this runner's NPU; refusing the job`;
}
function jobStarted(m, o) {
  const checks = doctor(m, o);
  let out = renderChecks(checks, m.root);
  if (summarize2(checks).fail) return { code: 1, out: out + "npu-block-gate: job-started hook: the runner is not healthy; failing the job before it runs\n" };
  const why = forkVerdict(m.env, o.forkPolicy);
  if (why) return { code: 1, out: out + why + "\n" };
  out += `npu-block-gate: job-started hook: runner healthy${o.forkPolicy === "deny" ? ", fork policy deny: ok" : ""}
`;
  return { code: 0, out };
}
var day = (d) => d.toISOString().slice(0, 10);
function recordDiagnostics(m, dir) {
  const logs = join12(resolve5(dir), "logs");
  mkdirSync4(logs, { recursive: true });
  const now = m.now();
  const e = m.env;
  const parts = [`=== job-completed ${now.toISOString()}${e.GITHUB_REPOSITORY ? ` ${e.GITHUB_REPOSITORY}` : ""}${e.GITHUB_RUN_ID ? ` run ${e.GITHUB_RUN_ID}` : ""}${e.GITHUB_JOB ? ` job ${e.GITHUB_JOB}` : ""} ===`];
  const k = kernelLog(m, 1);
  if ("error" in k) parts.push(`--- kernel log: ${k.error}`);
  else {
    const lines = k.text.split(/\r?\n/).filter((l) => /amdxdna|aie2_/i.test(l));
    parts.push(`--- kernel log, amdxdna lines (${k.source}): ${lines.length}`, ...lines);
  }
  const x = runXrtSmi(m);
  if (x.missing) parts.push("--- xrt-smi examine: not found");
  else parts.push(`--- xrt-smi examine (exit ${x.status ?? x.error})`, (x.stdout + x.stderr).trimEnd());
  const log = join12(logs, `${day(now)}.log`);
  appendFileSync(log, parts.join("\n") + "\n");
  const oldest = day(new Date(now.getTime() - (LOG_DAYS - 1) * 864e5));
  const pruned = [];
  for (const n of readdirSync5(logs)) {
    const m2 = /^(\d{4}-\d{2}-\d{2})\.log$/.exec(n);
    if (m2 && m2[1] < oldest) {
      rmSync4(join12(logs, n), { force: true });
      pruned.push(n);
    }
  }
  return { log, pruned };
}
function jobCompleted(m, o) {
  let out = "";
  try {
    const d = recordDiagnostics(m, o.dir);
    out += `npu-block-gate: diagnostics appended to ${d.log}${d.pruned.length ? ` (dropped ${d.pruned.length} log(s) older than ${LOG_DAYS} days)` : ""}
`;
  } catch (e) {
    out += `npu-block-gate: diagnostics not recorded: ${oneLine(e)}
`;
  }
  out += renderGc(cacheGc(o.cacheDir ?? defaultCacheRoot(m.env), o.maxBytes));
  return { code: 0, out };
}

// src/agent/cli.ts
var AGENT_HELP = `npu-block-gate agent: the self-hosted NPU runner side

Usage:
  npu-block-gate agent doctor [--json] [--root DIR] [--python P] [--cache-dir DIR]
      health checks: /dev/accel device, amdxdna module, xrt-smi examine, kernel-log wedge
      signatures (journalctl -k, last 2h; else dmesg), memlock limit, free disk (kernel cache,
      workspace), HF offline cache, Python with numpy, the NPU lock holder.
      Exit 0 when nothing fails, 3 when a check fails (the runner cannot run NPU jobs).
  npu-block-gate agent status [--json] [--root DIR] [--cache-dir DIR]
      one screen: device, driver, NPU lock holder, kernel cache size, last run dirs (runs/)
  npu-block-gate agent cache stats [--cache-dir DIR] [--json]
      kernel cache entries (key, model, size, created, last used) and the total
  npu-block-gate agent cache gc [--max-bytes N] [--cache-dir DIR] [--json]
      trim the kernel cache to N bytes (e.g. 20G, 500M; default 20G), least recently used first
  npu-block-gate agent lock status [--path P] [--root DIR] [--json]
      the NPU lock: free, or held by pid N (its command line), and how many wait
  npu-block-gate agent lock wait [--path P] [--timeout S] [--root DIR] [--json]
      wait until the lock is free (flock -w, else polling /proc/locks), a line every 15 s naming
      the holder; exit 0 when free, 3 after S seconds (default 1800). Does not take the lock.
  npu-block-gate agent hooks install [--dir DIR] [--runner-dir D] [--fork-policy allow|deny] [--cache-max-bytes N]
      write the runner's job hooks into DIR (default ~/.npu-block-gate/hooks): job-started runs
      doctor (a failed check fails the job before it runs) and the fork policy (deny, the default:
      fail pull requests from another repository); job-completed appends the amdxdna kernel log of
      the last hour and xrt-smi examine to DIR/logs/<date>.log (14 days kept) and runs cache gc.
      With --runner-dir, sets ACTIONS_RUNNER_HOOK_JOB_STARTED/_COMPLETED in its .env; else prints them.
  npu-block-gate agent hook job-started|job-completed [...]
      what the hook scripts run (exit 1 from job-started fails the job)

Options:
  --root DIR        read /dev, /sys, /proc, /tmp and /opt under DIR (default /; for tests and containers)
  --cache-dir DIR   kernel cache root (default $NPU_BLOCK_GATE_CACHE_DIR or ~/.cache/npu-block-gate)
  --python P        Python to check (default: $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)
  --path P          the lock file (default $NPU_BLOCK_GATE_NPU_LOCK or /tmp/mlir-air-npu.lock)
  --json            machine-readable output

The NPU lock is $NPU_BLOCK_GATE_NPU_LOCK or /tmp/mlir-air-npu.lock (the mlir-air skills' flock).
Exit codes: 0 ok, 1 a job-started hook refused the job, 2 usage, 3 infrastructure (a doctor
check failed, lock wait timed out).
`;
var OPTIONS = {
  json: { type: "boolean" },
  root: { type: "string" },
  "cache-dir": { type: "string" },
  "max-bytes": { type: "string" },
  python: { type: "string" },
  path: { type: "string" },
  timeout: { type: "string" },
  dir: { type: "string" },
  "runner-dir": { type: "string" },
  "fork-policy": { type: "string" },
  "cache-max-bytes": { type: "string" },
  help: { type: "boolean", short: "h" }
};
var ALLOWED = {
  doctor: ["json", "root", "python", "cache-dir", "help"],
  status: ["json", "root", "cache-dir", "help"],
  "cache stats": ["json", "cache-dir", "help"],
  "cache gc": ["json", "cache-dir", "max-bytes", "help"],
  "lock status": ["json", "root", "path", "help"],
  "lock wait": ["json", "root", "path", "timeout", "help"],
  "hooks install": ["dir", "runner-dir", "fork-policy", "cache-max-bytes", "help"],
  "hook job-started": ["root", "python", "cache-dir", "fork-policy", "help"],
  "hook job-completed": ["root", "dir", "cache-dir", "cache-max-bytes", "help"]
};
var GROUPS = {
  cache: ["stats", "gc"],
  lock: ["status", "wait"],
  hooks: ["install"],
  hook: ["job-started", "job-completed"]
};
function parseAgent(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new InputError(`${oneLine(e).replace(/^TypeError \[[A-Z_]+\]: /, "")} (see npu-block-gate agent --help)`);
  }
  const values = parsed.values;
  const pos = parsed.positionals;
  if (!pos.length) return { sub: "help", values };
  if (pos[0] === "help") return { sub: "help", values };
  let sub = pos[0];
  let rest = pos.slice(1);
  const group = GROUPS[sub];
  if (group) {
    if (!rest.length) {
      if (values.help) return { sub: "help", values };
      throw new InputError(`agent ${sub} needs ${group.join(" or ")} (see npu-block-gate agent --help)`);
    }
    if (!group.includes(rest[0])) throw new InputError(`unknown ${sub} command ${JSON.stringify(rest[0])} (agent ${sub}: ${group.join(", ")})`);
    sub = `${sub} ${rest[0]}`;
    rest = rest.slice(1);
  }
  if (!(sub in ALLOWED)) throw new InputError(`unknown agent command ${JSON.stringify(sub)} (agent commands: doctor, status, cache stats|gc, lock status|wait, hooks install)`);
  if (rest.length) throw new InputError(`unexpected argument ${JSON.stringify(rest[0])} (see npu-block-gate agent --help)`);
  for (const k of Object.keys(values)) {
    if (!ALLOWED[sub].includes(k)) throw new InputError(`option --${k} does not apply to agent ${sub} (see npu-block-gate agent --help)`);
  }
  return { sub, values };
}
function sizeOption(name, v) {
  if (v === void 0) return DEFAULT_MAX_BYTES;
  const n = parseSize(v);
  if (n === null) throw new InputError(`--${name} ${JSON.stringify(v)}: not a size (bytes, or a number with K, M, G or T)`);
  return n;
}
function forkPolicy(v) {
  if (v === void 0) return "deny";
  if (v !== "allow" && v !== "deny") throw new InputError(`--fork-policy ${JSON.stringify(v)}: allow or deny`);
  return v;
}
var json = (x) => JSON.stringify(x, null, 2) + "\n";
async function agentMain(argv, out = process.stdout, err = process.stderr, deps = {}) {
  try {
    const { sub, values } = parseAgent(argv);
    if (sub === "help" || values.help) {
      out.write(AGENT_HELP);
      return EXIT.pass;
    }
    const m = new Machine({ ...deps, root: values.root ?? deps.root });
    const env = m.env;
    const cacheDir = values["cache-dir"] ?? null;
    switch (sub) {
      case "doctor": {
        const checks = doctor(m, { cacheDir, python: values.python ?? null });
        const s = summarize2(checks);
        const code2 = s.fail ? EXIT.infra : EXIT.pass;
        out.write(values.json ? json({ root: m.root, checks, summary: s, exit_code: code2 }) : renderChecks(checks, m.root));
        return code2;
      }
      case "status": {
        const s = status(m, { cacheDir });
        out.write(values.json ? json(s) : renderStatus(s));
        return EXIT.pass;
      }
      case "cache stats": {
        const s = cacheStats(cacheDir ?? defaultCacheRoot(env));
        out.write(values.json ? json(s) : renderStats(s));
        return EXIT.pass;
      }
      case "cache gc": {
        const g = cacheGc(cacheDir ?? defaultCacheRoot(env), sizeOption("max-bytes", values["max-bytes"]));
        out.write(values.json ? json(g) : renderGc(g));
        return EXIT.pass;
      }
      case "lock status": {
        const s = lockState(m, npuLockPath(env, values.path));
        out.write(values.json ? json({ ...s, free: !s.holder }) : renderLockStatus(s));
        return EXIT.pass;
      }
      case "lock wait": {
        const path = npuLockPath(env, values.path);
        const t = values.timeout === void 0 ? DEFAULT_WAIT_SECONDS : Number(values.timeout);
        if (!Number.isFinite(t) || t < 0 || values.timeout?.trim() === "") throw new InputError(`--timeout ${JSON.stringify(values.timeout)}: seconds (a number >= 0)`);
        if (!path) {
          out.write(values.json ? json({ path, free: true, waited_s: 0, method: "none", holder: null }) : "NPU lock off (NPU_BLOCK_GATE_NPU_LOCK=none)\n");
          return EXIT.pass;
        }
        const progress = values.json ? err : out;
        const r = await waitLock(m, path, Math.round(t * 1e3), (line) => progress.write(line + "\n"));
        out.write(values.json ? json(r) : r.free ? `${path}: free${r.waited_s ? ` after ${r.waited_s}s` : ""}
` : `${path}: still ${r.holder} after ${r.waited_s}s (timeout)
`);
        return r.free ? EXIT.pass : EXIT.infra;
      }
      case "hooks install": {
        const report = installHooks({
          dir: values.dir ?? defaultHooksDir(m),
          runnerDir: values["runner-dir"] ?? null,
          forkPolicy: forkPolicy(values["fork-policy"]),
          cacheMaxBytes: values["cache-max-bytes"] === void 0 ? null : (sizeOption("cache-max-bytes", values["cache-max-bytes"]), values["cache-max-bytes"]),
          self: deps.self ?? selfCommand()
        });
        out.write(report);
        return EXIT.pass;
      }
      case "hook job-started": {
        const r = jobStarted(m, { cacheDir, python: values.python ?? null, forkPolicy: forkPolicy(values["fork-policy"]) });
        out.write(r.out);
        return r.code;
      }
      case "hook job-completed": {
        const r = jobCompleted(m, { dir: values.dir ?? defaultHooksDir(m), cacheDir, maxBytes: sizeOption("cache-max-bytes", values["cache-max-bytes"]) });
        out.write(r.out);
        return r.code;
      }
    }
    throw new InputError(`unknown agent command ${JSON.stringify(sub)}`);
  } catch (e) {
    const code2 = e instanceof GateError ? e.exitCode : EXIT.infra;
    err.write(`npu-block-gate: ${code2 === EXIT.input ? "error" : "error (infrastructure)"}: ${oneLine(e)}
`);
    return code2;
  }
}

// src/cli.ts
var HELP = `npu-block-gate ${TOOL.version}: Phase 2 single-block validation for LLMs on AMD NPUs (Xilinx/mlir-air)

Usage:
  npu-block-gate plan   --model-dir DIR [options]   Steps 1-2 without an NPU: what the run needs, integration path, workarounds
  npu-block-gate check  --model-dir DIR [options]   run block 0 on the NPU and the HF bf16 reference, judge, document
  npu-block-gate report --run-dir DIR [options]     judge an existing run dir (no Python needed)
  npu-block-gate agent doctor|status|lock|hooks|cache ...  runner side: health, NPU lock, job hooks, kernel cache (agent --help)
  npu-block-gate help [command] | --help | --version

plan options (plan reads the model dir without importing it: Python + numpy, no NPU, no network, seconds):
  --model-dir DIR        the model dir (required)
  --json                 print the plan as JSON
  --prompt, --prompt-style, --model, --cpu-attn, --npu-attn, --python   as for check

check options:
  --model-dir DIR        the model dir, programming_examples/llms/<model> in an mlir-air tree (required)
  --prompt TEXT          use TEXT as the prompt (default: the one \`make diagnosis\` uses, the Makefile's PROMPT)
  --prompt-style S       base | instruct: use the first prompt of verify/prompts/<S>.txt instead
  --model CHOICE         MODEL_CHOICES key (base, instruct) or HF id (default: make diagnosis's MODEL)
  --cpu-attn, --npu-attn attention on the CPU or the NPU (default: NPU, as make diagnosis)
  --online               allow HuggingFace hub calls (default: offline, the local HF cache only)
  --python P             Python that imports numpy (default: $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)
  --out RUN_DIR          where the run dir goes (default runs/<model>-<UTC time>)
  --threshold X          per-position cosine threshold instead of T(head_dim)
  --timeout SECONDS      stop the probe after this long (outcome error, exit 3)
  --no-docs              do not write phase2_block.md / TODO.md (gate G4 is then skipped)
  --no-bisect            on a failed gate, do not bisect kernel by kernel
  --layers               also compare every layer (informational table, as make diagnosis; runs the full prefill)
  --no-cache             compile every kernel; do not restore or store the kernel cache
  --cache-dir DIR        kernel cache root (default $NPU_BLOCK_GATE_CACHE_DIR or ~/.cache/npu-block-gate)
  --commit SHA           key the history row by SHA (default: the tree's git HEAD)
  --json                 print report.json to stdout instead of the table

report options:
  --run-dir DIR          the run dir to judge (required)
  --model-dir DIR        write the documents into this model dir (default: the one recorded, when present)
  --threshold X, --no-docs, --commit SHA, --json   as for check

Exit codes: 0 pass, 1 fail (a gate), 2 usage or bad input, 3 infrastructure (could not judge).
Gates: G1 whole cosine >= 0.99; G2 per-position min >= T(head_dim) on real tokens (0.99 at 64, 0.98 at 128,
0.97 at 256); G3 no NaN/Inf in the NPU output; G4 result documented in phase2_block.md.
`;
var COMMAND_HELP = { check: HELP, report: HELP, plan: HELP };
var OPTIONS2 = {
  "model-dir": { type: "string" },
  "run-dir": { type: "string" },
  "prompt-style": { type: "string" },
  prompt: { type: "string" },
  python: { type: "string" },
  out: { type: "string" },
  threshold: { type: "string" },
  timeout: { type: "string" },
  commit: { type: "string" },
  "no-docs": { type: "boolean" },
  "no-bisect": { type: "boolean" },
  layers: { type: "boolean" },
  "no-cache": { type: "boolean" },
  "cache-dir": { type: "string" },
  model: { type: "string" },
  "cpu-attn": { type: "boolean" },
  "npu-attn": { type: "boolean" },
  online: { type: "boolean" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" }
};
var ALLOWED2 = {
  check: ["model-dir", "prompt-style", "prompt", "python", "out", "threshold", "timeout", "commit", "no-docs", "no-bisect", "no-cache", "cache-dir", "layers", "model", "cpu-attn", "npu-attn", "online", "json", "help"],
  plan: ["model-dir", "prompt-style", "prompt", "python", "model", "cpu-attn", "npu-attn", "online", "timeout", "json", "help"],
  report: ["run-dir", "model-dir", "threshold", "commit", "no-docs", "json", "help"]
};
function parseCli(argv) {
  let parsed;
  try {
    parsed = parseArgs2({ args: argv, options: OPTIONS2, allowPositionals: true, strict: true });
  } catch (e) {
    throw new InputError(`${oneLine(e).replace(/^TypeError \[[A-Z_]+\]: /, "")} (see npu-block-gate --help)`);
  }
  const values = parsed.values;
  const [command = values.version ? "version" : "help", ...rest] = parsed.positionals;
  if (command === "help" || command === "version") return { command, values };
  if (!(command in ALLOWED2)) throw new InputError(`unknown command ${JSON.stringify(command)} (commands: plan, check, report, agent, help)`);
  if (rest.length) throw new InputError(`unexpected argument ${JSON.stringify(rest[0])} (see npu-block-gate ${command} --help)`);
  for (const k of Object.keys(values)) {
    if (!ALLOWED2[command].includes(k) && k !== "version") throw new InputError(`option --${k} does not apply to ${command} (see npu-block-gate ${command} --help)`);
  }
  return { command, values };
}
function planFrom(command, v, now = /* @__PURE__ */ new Date()) {
  if ((command === "check" || command === "plan") && !v["model-dir"]) throw new InputError(`${command} needs --model-dir DIR (see npu-block-gate ${command} --help)`);
  if (v["cpu-attn"] && v["npu-attn"]) throw new InputError("--cpu-attn and --npu-attn exclude each other");
  if (command === "report" && !v["run-dir"]) throw new InputError("report needs --run-dir DIR (see npu-block-gate report --help)");
  const modelDir = v["model-dir"] ?? null;
  const runDir = command === "report" ? v["run-dir"] : v.out ?? defaultRunDirName(basename4(resolve6(modelDir)), now);
  return {
    mode: command === "report" ? "report" : "full",
    modelDir,
    promptStyle: v["prompt-style"] !== void 0 ? parsePromptStyle(v["prompt-style"], "--prompt-style") : null,
    prompt: v.prompt ?? null,
    model: v.model ?? null,
    cpuAttn: v["cpu-attn"] ? true : v["npu-attn"] ? false : null,
    online: !!v.online,
    python: v.python ?? null,
    runDir,
    threshold: v.threshold !== void 0 ? parseThreshold(v.threshold, "--threshold") : null,
    writeDocs: !v["no-docs"],
    bisect: !v["no-bisect"],
    layers: !!v.layers,
    cache: command === "check" && !v["no-cache"],
    cacheDir: v["cache-dir"] ?? null,
    cacheWrite: true,
    timeoutSec: v.timeout !== void 0 ? parseTimeout(v.timeout, "--timeout") : null,
    commit: v.commit ?? null
  };
}
async function printPlan(plan, json2, out, err) {
  try {
    out.write(await planModel(plan, json2));
    return EXIT.pass;
  } catch (e) {
    const stdout = e.stdout;
    if (e instanceof InputError && stdout) {
      err.write(`npu-block-gate: error: ${oneLine(e)}
`);
      out.write(stdout);
      return EXIT.input;
    }
    throw e;
  }
}
async function main(argv, out = process.stdout, err = process.stderr) {
  let json2 = false;
  let plan = null;
  if (argv[0] === "agent" || argv[0] === "help" && argv[1] === "agent") return agentMain(argv[0] === "agent" ? argv.slice(1) : ["--help"], out, err);
  try {
    const { command, values } = parseCli(argv);
    if (command === "version") {
      out.write(`${TOOL.version}
`);
      return EXIT.pass;
    }
    if (command === "help" || values.help) {
      out.write(COMMAND_HELP[command] ?? HELP);
      return EXIT.pass;
    }
    json2 = !!values.json;
    plan = planFrom(command, values);
    if (command === "plan") return await printPlan(plan, json2, out, err);
    const log = stderrLog(void 0, (s) => err.write(s));
    const result = plan.mode === "report" ? await judge(plan, log) : await runCheck(plan, log);
    out.write(json2 ? toJson(result.report) : `
${renderTerminal(result.report)}
  run dir: ${result.runDir}
`);
    return result.exitCode;
  } catch (e) {
    const code2 = e instanceof GateError ? e.exitCode : EXIT.infra;
    const kind = code2 === EXIT.input ? "error" : "error (infrastructure, not a verdict)";
    err.write(`npu-block-gate: ${kind}: ${oneLine(e)}
`);
    if (json2 && plan) out.write(toJson(errorReport(plan, oneLine(e), code2)));
    if (!(e instanceof GateError) && process.env.NPU_BLOCK_GATE_DEBUG) err.write(`${e.stack}
`);
    return code2;
  }
}
var invoked = process.argv[1] ? resolve6(process.argv[1]) : "";
if (invoked.endsWith("cli.js") || invoked.endsWith("cli.ts") || basename4(invoked) === "npu-block-gate") {
  main(process.argv.slice(2)).then((code2) => {
    process.exitCode = code2;
  });
}
export {
  main,
  parseCli,
  planFrom
};
