import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  CONTRACT,
  FP32_PREFIX,
  GENERATION_ID_RE,
  ID_RE,
  InputError,
  PROBE_KEYS,
  PROBE_SCHEMA,
  PROBE_SCHEMA_VERSION,
  REF_CACHE,
  RUN_FILES,
  fsError,
  isId,
  kindOf,
  makeDirs,
  readWhole
} from "./chunk-7HMQRJMS.js";

// src/cache/kernel.ts
import { chmodSync, cpSync, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
var KERNEL_CACHE_VERSION = 1;
var DEFAULT_MAX_BYTES = 20 * 1024 ** 3;
function defaultCacheRoot(env = process.env) {
  if (env.NPU_BLOCK_GATE_CACHE_DIR) return env.NPU_BLOCK_GATE_CACHE_DIR;
  const base = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(base, "npu-block-gate");
}
var SKIP_DIR = /^(build_[^/]*|docs|__pycache__|\.git|air_project|node_modules)$/;
var SKIP_FILE = /(\.pyc|\.md|~|\.swp)$|^\.gitignore$/;
function listFiles(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIP_DIR.test(e.name)) listFiles(p, out);
    } else if (e.isFile() && !SKIP_FILE.test(e.name)) out.push(p);
  }
  return out;
}
function fallbackFiles(k) {
  const roots = [k.modelDir, join(k.airRoot, "programming_examples/llms/shared"), join(k.airRoot, "programming_examples/kernel_registry")];
  return roots.flatMap((root) => listFiles(root).sort()).map((f) => relative(k.airRoot, f).split(sep).join("/"));
}
var sha256 = () => process.getBuiltinModule("node:crypto").createHash("sha256");
function insideRoot(airRoot, rel) {
  if (!rel || isAbsolute(rel) || rel.split(/[\\/]/).includes("..")) return null;
  return join(airRoot, rel);
}
function kernelCacheKey(k) {
  const h = sha256();
  h.update(`npu-block-gate kernel cache v${KERNEL_CACHE_VERSION}
`);
  const rels = k.inputs ? [...new Set(k.inputs.files)].sort() : fallbackFiles(k);
  for (const rel of rels) {
    const abs = insideRoot(k.airRoot, rel);
    let digest = "missing";
    if (abs && existsSync(abs) && statSync(abs).isFile()) digest = sha256().update(readFileSync(abs)).digest("hex");
    h.update(`${rel}\0${digest}
`);
  }
  const env = k.inputs ? Object.fromEntries(Object.entries(k.inputs.env ?? {}).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)) : null;
  const emulated = existsSync(join(k.airRoot, "AIR_MINI")) ? realpathSync(k.airRoot) : null;
  h.update(JSON.stringify({ config: k.config, seqLen: k.seqLen, cpuAttn: k.cpuAttn, toolchain: k.toolchain ?? null, compile: k.compileCommand, env, emulated }));
  return { key: h.digest("hex").slice(0, 32), files: rels.length };
}
function rebaseManifest(dir, target) {
  const file = join(dir, "manifest.json");
  if (!existsSync(file)) return { ok: true, rewritten: 0 };
  let m;
  try {
    m = JSON.parse(readFileSync(file, "utf8"));
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
      const base = basename(v.replace(/\\/g, "/"));
      if (!existsSync(join(dir, base))) return { ok: false, why: `entry ${name}: ${base} is not in the stored cache` };
      const now = join(target, base);
      if (v !== now) {
        e[field] = now;
        rewritten++;
      }
    }
  }
  writeFileSync(file, JSON.stringify(m, null, 2));
  return { ok: true, rewritten };
}
function notPlain(dir, rel = "") {
  const st = lstatSync(join(dir, rel));
  if (st.isFile()) return null;
  if (!st.isDirectory()) return rel || ".";
  for (const name of readdirSync(join(dir, rel)).sort()) {
    const odd = notPlain(dir, rel ? join(rel, name) : name);
    if (odd) return odd;
  }
  return null;
}
function dirBytes(dir) {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    n += e.isDirectory() ? dirBytes(p) : statSync(p).size;
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
    return join(this.root, "kernels", key);
  }
  meta(key) {
    const f = join(this.entry(key), "meta.json");
    if (!existsSync(f)) return null;
    try {
      return JSON.parse(readFileSync(f, "utf8"));
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
    const src = join(this.entry(key), "cache");
    if (!meta || !existsSync(src)) return null;
    const parent = dirname(target);
    const made = existsSync(parent) ? null : makeDirs(parent) ?? parent;
    const tmp = `${target}.nbg-restore-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    cpSync(src, tmp, { recursive: true });
    const rebased = rebaseManifest(tmp, target);
    if (!rebased.ok) {
      rmSync(tmp, { recursive: true, force: true });
      if (made) rmSync(made, { recursive: true, force: true });
      refused?.(rebased.why);
      return null;
    }
    rmSync(target, { recursive: true, force: true });
    renameSync(tmp, target);
    const now = /* @__PURE__ */ new Date();
    utimesSync(join(this.entry(key), "meta.json"), now, now);
    return meta;
  }
  /**
   * The stored entry, copied into a fresh dir of this process's own (0755: a probe user reads it)
   * with its manifest pointed at `target`, for the caller to put in place: the model dir is the
   * probe's, so the copy into it is made inside the probe's own sandbox (check/kernels.ts). Null on
   * a miss or a refused manifest (`refused` says why). The caller removes `dir` when done.
   */
  stage(key, target, refused) {
    const meta = this.meta(key);
    const src = join(this.entry(key), "cache");
    if (!meta || !existsSync(src)) return null;
    const dir = mkdtempSync(join(tmpdir(), "nbg-kernels-"));
    chmodSync(dir, 493);
    const cache = join(dir, "cache");
    try {
      cpSync(src, cache, { recursive: true });
      const rebased = rebaseManifest(cache, target);
      if (!rebased.ok) {
        rmSync(dir, { recursive: true, force: true });
        refused?.(rebased.why);
        return null;
      }
    } catch (e) {
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    const now = /* @__PURE__ */ new Date();
    utimesSync(join(this.entry(key), "meta.json"), now, now);
    return { dir, cache, meta };
  }
  /** Stores source under key (atomically: copied aside, then renamed into place), then trims the store.
   * Only plain files and directories are stored: a symlink in the build dir (a pull request may have
   * left one pointing at a secret) would put its target where every later run reads it. */
  store(key, source, meta) {
    const dest = this.entry(key);
    const existing = this.meta(key);
    if (existing) return existing;
    const odd = notPlain(source);
    if (odd) throw new Error(`${odd} in ${source} is not a regular file or directory; nothing stored`);
    const tmp = join(this.root, "kernels", `.tmp-${key}-${process.pid}`);
    rmSync(tmp, { recursive: true, force: true });
    makeDirs(tmp);
    cpSync(source, join(tmp, "cache"), { recursive: true });
    const full = { key, ...meta, bytes: dirBytes(join(tmp, "cache")) };
    writeFileSync(join(tmp, "meta.json"), JSON.stringify(full, null, 2) + "\n");
    try {
      renameSync(tmp, dest);
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true });
      if (!this.meta(key)) throw e;
    }
    this.gc();
    return full;
  }
  list() {
    const dir = join(this.root, "kernels");
    if (!existsSync(dir)) return [];
    const out = [];
    for (const name of readdirSync(dir)) {
      if (name.startsWith(".")) continue;
      const m = this.meta(name);
      if (m) out.push({ ...m, used: statSync(join(dir, name, "meta.json")).mtimeMs });
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
      rmSync(this.entry(m.key), { recursive: true, force: true });
      total -= m.bytes;
      dropped.push(m.key);
    }
    return dropped;
  }
};

// src/cache/reference.ts
import { chmodSync as chmodSync2, copyFileSync, existsSync as existsSync2, lstatSync as lstatSync3, mkdtempSync as mkdtempSync2, readFileSync as readFileSync2, renameSync as renameSync2, rmSync as rmSync2, writeFileSync as writeFileSync2 } from "node:fs";
import { isAbsolute as isAbsolute3, join as join3, resolve } from "node:path";

// src/rundir/read.ts
import { closeSync as closeSync2, constants as constants2, fstatSync as fstatSync2, openSync as openSync2, realpathSync as realpathSync2, statSync as statSync2, lstatSync as lstatSync2 } from "node:fs";
import { join as join2, isAbsolute as isAbsolute2 } from "node:path";

// src/rundir/spec.ts
var SpecError = class extends Error {
  constructor(field, problem) {
    super(`${field} ${problem}`);
    this.field = field;
    this.problem = problem;
  }
  field;
  problem;
};
function shown(v) {
  let s;
  try {
    s = v === void 0 ? "nothing" : JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  s = s.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
var fail = (at, want, v) => {
  throw new SpecError(at, `must be ${want}, got ${shown(v)}`);
};
function make(describe, check) {
  return { describe, check };
}
var str = (opts = {}) => {
  const what = opts.what ?? (opts.line ? "a one-line string" : "a string");
  return make(what, (v, at) => {
    if (typeof v !== "string") return fail(at, what, v);
    if (opts.max !== void 0 && v.length > opts.max) throw new SpecError(at, `is ${v.length} characters long; at most ${opts.max} are accepted`);
    if (opts.line && /[\u0000-\u001f\u007f\u2028\u2029]/.test(v)) throw new SpecError(at, `must be one line without control characters, got ${shown(v)}`);
    if (opts.pattern && !opts.pattern.test(v)) return fail(at, what, v);
    return v;
  });
};
var oneOf = (...values) => {
  const what = `one of ${values.map((x) => JSON.stringify(x)).join(", ")}`;
  return make(what, (v, at) => values.includes(v) ? v : fail(at, what, v));
};
var int = (min = 0, max = Number.MAX_SAFE_INTEGER) => {
  const what = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer in [${min}, ${max}]`;
  return make(what, (v, at) => typeof v === "number" && Number.isSafeInteger(v) && v >= min && v <= max ? v : fail(at, what, v));
};
var num = (min = -Infinity) => {
  const what = min === -Infinity ? "a finite number" : `a finite number >= ${min}`;
  return make(what, (v, at) => typeof v === "number" && Number.isFinite(v) && v >= min ? v : fail(at, what, v));
};
var bool = () => make("true or false", (v, at) => typeof v === "boolean" ? v : fail(at, "true or false", v));
var literal = (value) => make(JSON.stringify(value), (v, at) => v === value ? value : fail(at, JSON.stringify(value), v));
var any = () => make("any value", (v) => v);
var scalar = () => make("a string, number, true/false or null", (v, at) => v === null || typeof v === "string" || typeof v === "boolean" || typeof v === "number" && Number.isFinite(v) ? v : fail(at, "a string, number, true/false or null", v));
function nullable(s) {
  return { describe: `${s.describe} or null`, keys: s.keys, check: (v, at) => v === null ? null : s.check(v, at) };
}
function withDefault(s, value) {
  return { ...s, absent: { value } };
}
function optional(s) {
  return { ...s, absent: { optional: true } };
}
function list(item, max = 1 << 20) {
  const what = `a list of ${item.describe}`;
  return make(what, (v, at) => {
    if (!Array.isArray(v)) return fail(at, what, v);
    if (v.length > max) throw new SpecError(at, `holds ${v.length} items; at most ${max} are accepted`);
    return v.map((x, i) => item.check(x, `${at}[${i}]`));
  });
}
var isObj = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
function record(value) {
  const what = `an object of ${value.describe}`;
  return make(what, (v, at) => {
    if (!isObj(v)) return fail(at, what, v);
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = value.check(x, `${at}.${k}`);
    return out;
  });
}
function obj(props, opts = {}) {
  const rest = opts.rest ?? "refuse";
  const keys = {};
  for (const [k, s] of Object.entries(props)) keys[k] = s.keys ?? null;
  return {
    describe: "an object",
    keys: opts.declare === false ? void 0 : keys,
    check: (v, at) => {
      if (!isObj(v)) return fail(at, "an object", v);
      const out = {};
      for (const [k, s] of Object.entries(props)) {
        const field = at ? `${at}.${k}` : k;
        const x = v[k];
        if (x === void 0) {
          if (!s.absent) throw new SpecError(field, `is missing (${s.describe} is required)`);
          if ("value" in s.absent) out[k] = s.absent.value();
          continue;
        }
        out[k] = s.check(x, field);
      }
      for (const [k, x] of Object.entries(v)) {
        if (k in props) continue;
        const field = at ? `${at}.${k}` : k;
        if (rest === "refuse") throw new SpecError(field, "is not a field of this schema (written by another version of npu-block-gate?)");
        out[k] = rest.check(x, field);
      }
      return out;
    }
  };
}
function keyTree(s) {
  return s.keys ?? null;
}

// src/rundir/probe-spec.ts
var COMMIT_RE = /^[0-9a-fA-F]{7,64}$/;
var line = (max = 4096) => str({ line: true, max });
var PROMPT_MAX = 1 << 20;
var DIFFERS_MAX = 2 * 10 * PROMPT_MAX + 4096;
var text = (max = 1 << 20) => str({ max });
var strList = (max = 1 << 16) => list(line(), max);
var nullStr = () => withDefault(nullable(line()), () => null);
var runFile = str({
  line: true,
  max: 1024,
  what: "a relative path inside the run dir",
  pattern: /^(?![\\/])(?![A-Za-z]:)(?!.*(^|[\\/])\.\.([\\/]|$)).+$/
});
var TENSOR_SPEC = obj({
  file: runFile,
  dtype: oneOf("f32", "f16", "bf16"),
  shape: list(int(1), 8)
}, { declare: false });
var TWINS_SPEC = obj({
  precision: oneOf(...[...CONTRACT.emulate.twin_precision, ...Object.keys(CONTRACT.emulate.twin_precision_aliases)]),
  rms_eps: num(0),
  qk_eps: num(0),
  eps_from: withDefault(line(40), () => "tree")
}, { declare: false, rest: any() });
var workaround = obj({ id: line(200), detail: line(), prerequisite: line() }, { declare: false, rest: any() });
var step1 = obj({
  path: optional(oneOf("kernel-first", "inheritance")),
  matches: optional(bool()),
  inheritance_allowed: optional(bool()),
  llama_sequence: optional(strList()),
  model_sequence: optional(strList()),
  breaks: optional(list(obj({ rule: line(), op: optional(line(200)), detail: line() }, { declare: false, rest: any() }))),
  path_why: optional(nullable(line())),
  block: optional(nullable(obj({
    function: line(),
    file: withDefault(nullable(line()), () => null),
    line: optional(nullable(int(0))),
    where: line(),
    via: withDefault(nullable(line()), () => null),
    compile: withDefault(nullable(line()), () => null)
  }, { declare: false, rest: any() })))
}, { declare: false, rest: any() });
var step2 = obj({
  triggers: optional(list(obj({ id: line(), detail: line(), seed_workaround: optional(line()) }, { declare: false, rest: any() }))),
  tree_does: optional(list(obj({ id: line(), detail: line(), evidence: optional(line()) }, { declare: false, rest: any() }))),
  prerequisite: optional(nullable(line()))
}, { declare: false, rest: any() });
var coverageRow = obj({
  section: optional(nullable(line())),
  shape: optional(nullable(line())),
  used_by: optional(nullable(line())),
  reason: optional(nullable(line()))
}, { declare: false, rest: any() });
var coverage = obj({ unwired: optional(list(coverageRow)) }, { declare: false, rest: any() });
var config = obj({
  n_layers: int(1),
  emb_dim: int(1),
  n_heads: int(1),
  n_kv_heads: int(1),
  head_dim: int(1),
  hidden_dim: int(1),
  vocab_size: optional(int(1)),
  rope_base: optional(num(0)),
  qkv_bias: withDefault(bool(), () => false),
  qk_norm: withDefault(bool(), () => false)
}, { declare: false, rest: any() });
var refCache = obj({
  key: line(200),
  hit: bool(),
  dir: line(),
  root: optional(line()),
  kind: optional(nullable(line())),
  inputs: optional(nullable(obj({ layers: optional(list(int(0))) }, { declare: false, rest: any() })))
}, { declare: false, rest: any() });
var compileInputs = obj({
  files: list(line()),
  env: record(nullable(str())),
  models: optional(strList())
}, { declare: false, rest: any() });
var nullableNum = () => optional(nullable(num(0)));
var boundaryName = str({ pattern: ID_RE, what: "a boundary name (1-64 of A-Z a-z 0-9 _ . -)" });
var PROBE_SPEC = obj({
  schema: literal(PROBE_SCHEMA),
  schema_version: literal(PROBE_SCHEMA_VERSION),
  stage: oneOf(...CONTRACT.probe.stages),
  created_at: withDefault(line(100), () => ""),
  tool: withDefault(obj({ name: line(100), version: line(100) }), () => ({ name: "npu-block-gate", version: "unknown" })),
  model: obj({
    // The model dir's basename: it titles the documents, so nothing that is not a name gets in.
    name: str({ line: true, max: 200, pattern: /^(?!\.\.?$)(?!.*<!--)(?!.*-->)[^/\\]+$/, what: 'a directory name (no / or \\, not . or .., no "<!--" or "-->")' }),
    dir: line(),
    hf_id: nullStr(),
    config
  }),
  prompt: obj({
    // The style keys the history row: a word, never a table cell breaker.
    style: str({ line: true, max: 40, pattern: /^[A-Za-z0-9_.:+-]+$/, what: "a word (letters, digits, _ . : + -)" }),
    text: text(PROMPT_MAX),
    source: withDefault(line(), () => ""),
    token_ids: withDefault(list(int(0), 1 << 20), () => []),
    real_len: int(1),
    padded_len: withDefault(nullable(int(1)), () => null),
    tokenizer: withDefault(line(), () => ""),
    positions: optional(nullable(obj({
      requested: int(1),
      real_len: int(1),
      prompt_tokens: int(0),
      method: oneOf("prompt", "truncated", "continued", "repeated"),
      set: nullable(line()),
      prompts_used: int(0),
      cycles: int(0),
      text_chars: int(0)
    }, { declare: false })))
  }),
  defaults: optional(nullable(obj({
    make_diagnosis: obj({ prompt: nullable(text()), model_choice: nullable(line()), cpu_attn: nullable(bool()) }, { declare: false, rest: any() }),
    // One line per difference, quoting both prompts whole: as long as two prompts (prompt.text's limit each), escaped.
    differs: list(line(DIFFERS_MAX))
  }))),
  integration: obj({
    path: oneOf(...CONTRACT.integration_paths),
    entry: line(),
    runner: optional(oneOf("single", "block", "adapter")),
    reason: withDefault(line(), () => ""),
    kernels: withDefault(strList(), () => []),
    tiles: withDefault(record(line(200)), () => ({})),
    workarounds: withDefault(list(workaround, 64), () => []),
    cpu_attn: withDefault(nullable(bool()), () => null),
    step1: optional(nullable(step1)),
    step2: optional(nullable(step2)),
    coverage: optional(nullable(coverage)),
    defined_in: optional(nullable(obj({
      module: line(),
      file: nullable(line()),
      model: nullable(line())
    }, { declare: false, rest: any() })))
  }),
  reference: obj({
    kind: oneOf(...CONTRACT.reference_kinds),
    runner: withDefault(line(), () => ""),
    // The seed's reference is HfRunner with lite_mode=False; anything else is not the reference.
    lite_mode: withDefault(literal(false), () => false),
    dtype: withDefault(line(100), () => ""),
    model_id: nullStr(),
    transformers: nullStr(),
    torch: nullStr(),
    cache: optional(nullable(refCache)),
    hub_offline: optional(bool())
  }),
  environment: obj({
    python: withDefault(line(200), () => ""),
    python_executable: withDefault(line(), () => ""),
    numpy: withDefault(line(200), () => ""),
    platform: withDefault(line(), () => ""),
    device: nullStr(),
    xrt: nullStr(),
    // The NPU and its generation (npu_probe.core.npu); absent in older run dirs, null when none was found or the run was emulated.
    npu: optional(nullable(obj({
      generation: nullable(str({ pattern: GENERATION_ID_RE, what: "a generation id" })),
      name: nullStr(),
      pci: nullStr(),
      bdf: nullStr(),
      driver: nullStr(),
      firmware: nullStr(),
      xrt: nullStr(),
      source: oneOf("pci", "name", "none")
    }, { declare: false }))),
    toolchain: withDefault(nullable(record(scalar())), () => null),
    git_commit: withDefault(nullable(str({ pattern: COMMIT_RE, what: "a hex commit id" })), () => null),
    air_root: withDefault(line(), () => "")
  }),
  timings: withDefault(record(num(0)), () => ({})),
  kernel_cache: withDefault(obj({
    dir: withDefault(nullable(line()), () => null),
    key: withDefault(nullable(line(200)), () => null),
    hit: withDefault(nullable(bool()), () => null),
    seconds_saved: withDefault(nullable(num(0)), () => null),
    entries: withDefault(strList(), () => []),
    seq_len: optional(nullable(int(1))),
    cpu_attn: optional(nullable(bool())),
    toolchain: optional(any()),
    compile_command: optional(nullable(line())),
    compiled: optional(strList()),
    reused: optional(strList()),
    compile_seconds: nullableNum(),
    manifest_loaded: optional(nullable(bool())),
    inputs: optional(nullable(compileInputs))
  }), () => ({ dir: null, key: null, hit: null, seconds_saved: null, entries: [] })),
  tensors: withDefault(obj({
    npu: withDefault(nullable(TENSOR_SPEC), () => null),
    ref: withDefault(nullable(TENSOR_SPEC), () => null),
    input: withDefault(nullable(TENSOR_SPEC), () => null)
  }), () => ({ npu: null, ref: null, input: null })),
  bisect: withDefault(nullable(obj({
    available: bool(),
    reason: line(),
    steps: list(obj({ step: line(), cosine: num() }, { declare: false, rest: any() }))
  }, { declare: false, rest: any() })), () => null),
  layers: optional(nullable(obj({
    source: line(),
    entries: list(obj({ layer: int(0), npu: TENSOR_SPEC, ref: TENSOR_SPEC }, { declare: false }), 4096)
  }, { declare: false }))),
  // The lens (scripts/probe/README.md "Boundaries"): every pair's files are opened through
  // openRunTensor (regular files inside the run dir, of the declared dtype and shape).
  boundaries: optional(nullable(obj({
    source: nullable(oneOf("launches", "returned", "launches+returned")),
    table: nullable(line()),
    emulated: bool(),
    reference: nullable(line(200)),
    layout: line(),
    entries: list(obj({
      name: boundaryName,
      order: int(0, 99),
      step: nullable(line(100)),
      launch: nullable(line(200)),
      arg: nullable(int(0)),
      source: oneOf("launch", "returned"),
      produced_by: nullable(line(200)),
      npu: TENSOR_SPEC,
      ref: TENSOR_SPEC,
      fp32: optional(nullable(TENSOR_SPEC)),
      twin: optional(nullable(TENSOR_SPEC))
    }, { declare: false }), 256),
    unpaired: list(obj({ name: boundaryName, side: oneOf("npu", "ref", "both"), reason: line() }, { declare: false }), 256),
    fp32: optional(nullable(obj({ dtype: line(40), what: line() }, { declare: false, rest: any() }))),
    // The error budget's expected side (npu_probe.lens.expected): how the hardware twins computed.
    twin: optional(nullable(obj({
      precision: oneOf(...CONTRACT.emulate.twin_precision),
      rms_eps: num(0),
      qk_eps: num(0),
      eps_from: line(40),
      what: line()
    }, { declare: false, rest: any() }))),
    // The tree's RMSNorm eps against the checkpoint's (npu_probe.lens.eps): a known upstream finding.
    norm_eps: optional(nullable(obj({
      tree: num(0),
      file: str({ pattern: /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*\.py$/, max: 200, what: "a .py path inside the tree" }),
      line: int(1),
      config: num(0),
      config_from: line(400),
      twins: num(0),
      twins_from: line(40)
    }, { declare: false, rest: any() })))
  }))),
  // --emulate (scripts/probe/README.md "Emulated NPU"): no NPU ran; every report marks the run.
  emulate: optional(nullable(obj({
    runtime: line(200),
    inject: nullable(oneOf(...CONTRACT.emulate.inject)),
    config_from: nullable(line()),
    config_changes: record(list(scalar(), 2)),
    artifacts: strList(),
    registry: list(obj({
      shape: list(int(0), 8),
      as: nullable(list(int(0), 8)),
      dtype: line(40),
      precision: nullable(line(40)),
      method: nullable(line(40))
    }, { declare: false, rest: any() }), 4096),
    launches: int(0),
    compile: line(),
    twins: optional(nullable(TWINS_SPEC))
  }))),
  // Step 2's padded-vs-original check (scripts/probe/README.md "Step 2 sanity"): informational.
  step2_sanity: optional(nullable(obj({
    gate: num(0),
    skipped: optional(line()),
    dtype: optional(line(40)),
    tokens: optional(int(0)),
    model_id: optional(nullable(line())),
    original: optional(record(int(0))),
    padded: optional(record(int(0))),
    rows: optional(list(obj({
      id: oneOf("reindexed", "tree_helper", "naive_end"),
      label: line(),
      ffn_out_cosine: optional(num()),
      logits_cosine: optional(num()),
      pass: optional(bool()),
      skipped: optional(line())
    }, { declare: false, rest: any() }), 8)),
    ok: optional(bool()),
    why: optional(line()),
    misrouted_heads: optional(int(0))
  }, { declare: false, rest: any() })))
});
function keyDrift(spec, contract, prefix = "") {
  const out = [];
  const a = spec ?? {};
  const b = contract ?? {};
  for (const k of Object.keys(a)) if (!(k in b)) out.push(`spec: ${prefix}${k}`);
  for (const k of Object.keys(b)) if (!(k in a)) out.push(`contract: ${prefix}${k}`);
  for (const k of Object.keys(a)) {
    if (!(k in b)) continue;
    const x = a[k], y = b[k];
    if (x === null !== (y === null)) out.push(`${x === null ? "contract" : "spec"}: ${prefix}${k}.* (an object there, a leaf on the other side)`);
    else if (x && y) out.push(...keyDrift(x, y, `${prefix}${k}.`));
  }
  return out;
}
var drift = keyDrift(keyTree(PROBE_SPEC), PROBE_KEYS);
if (drift.length) {
  throw new Error(`src/rundir/probe-spec.ts and scripts/probe/contract.json probe.keys declare different probe.json keys: ${drift.join(", ")}`);
}

// src/tensor/index.ts
import { extname } from "node:path";

// src/tensor/bytes.ts
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
var OPEN_ERRORS = {
  ENOENT: "no such file",
  EACCES: "cannot open: permission denied",
  EPERM: "cannot open: permission denied",
  EISDIR: "is a directory, not a regular file",
  ELOOP: "cannot open: too many levels of symbolic links",
  ENOTDIR: "cannot open: a part of the path is a file, not a directory"
};
var FileBytes = class {
  constructor(path) {
    this.path = path;
    try {
      this.#fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    } catch (err) {
      const code = err.code;
      throw new InputError(OPEN_ERRORS[code ?? ""] ?? `cannot open (${code ?? String(err)})`, path);
    }
    try {
      const st = fstatSync(this.#fd);
      if (!st.isFile()) throw new InputError(`is ${kindOf(st)}, not a regular file`, path);
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
function parsePyLiteral(text2) {
  let i = 0;
  const ws = () => {
    while (i < text2.length && /\s/.test(text2[i])) i++;
  };
  const fail2 = (what) => {
    throw new Error(`${what} at character ${i}`);
  };
  const value = () => {
    ws();
    const ch = text2[i];
    if (ch === "{") {
      i++;
      const obj2 = {};
      for (; ; ) {
        ws();
        if (text2[i] === "}") {
          i++;
          return obj2;
        }
        const k = value();
        if (typeof k !== "string") fail2("dict key is not a string");
        ws();
        if (text2[i] !== ":") fail2("expected ':'");
        i++;
        obj2[k] = value();
        ws();
        if (text2[i] === ",") i++;
        else if (text2[i] !== "}") fail2("expected ',' or '}'");
      }
    }
    if (ch === "(" || ch === "[") {
      const close = ch === "(" ? ")" : "]";
      i++;
      const arr = [];
      for (; ; ) {
        ws();
        if (text2[i] === close) {
          i++;
          return arr;
        }
        arr.push(value());
        ws();
        if (text2[i] === ",") i++;
        else if (text2[i] !== close) fail2(`expected ',' or '${close}'`);
      }
    }
    if (ch === "'" || ch === '"') {
      const end = text2.indexOf(ch, i + 1);
      if (end < 0) fail2("unterminated string");
      const s = text2.slice(i + 1, end);
      i = end + 1;
      return s;
    }
    const m = /^(True|False|None|-?\d+L?)/.exec(text2.slice(i, i + 32));
    if (!m) fail2("unexpected token");
    i += m[0].length;
    if (m[0] === "True") return true;
    if (m[0] === "False") return false;
    if (m[0] === "None") return null;
    return Number(m[0].replace("L", ""));
  };
  const v = value();
  ws();
  if (i !== text2.length) fail2("trailing text");
  return v;
}
function parseDescr(descr, opts, path) {
  if (typeof descr !== "string") throw new InputError(`unsupported dtype ${JSON.stringify(descr)} (structured arrays are not tensors)`, path);
  if (descr === "bfloat16" || descr === "<V2" || descr === "|V2" || descr === "V2") return { dtype: "bf16", order: "le" };
  const m = /^([<>|=]?)([a-zA-Z])(\d+)$/.exec(descr);
  if (!m) throw new InputError(`unknown dtype '${descr}'`, path);
  const [, bo, kind, sizeText] = m;
  const order = bo === ">" ? "be" : "le";
  const code = kind + sizeText;
  if (code === "f4") return { dtype: "f32", order };
  if (code === "f2") return { dtype: "f16", order };
  if (code === "u2") {
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
  const text2 = src.read(base + headerStart, headerLen).toString(major === 3 ? "utf8" : "latin1");
  let header;
  try {
    header = parsePyLiteral(text2.trim());
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
  return crc32Update(0, buf);
}
function crc32Update(crc, buf) {
  let c = crc ^ 4294967295;
  for (let i = 0; i < buf.length; i++) c = TABLE[(c ^ buf[i]) & 255] ^ c >>> 8;
  return (c ^ 4294967295) >>> 0;
}

// src/tensor/zip.ts
var EOCD_SIG = 101010256;
var ZIP64_LOCATOR_SIG = 117853008;
var ZIP64_EOCD_SIG = 101075792;
var CDH_SIG = 33639248;
var U16 = 65535;
var U32 = 4294967295;
function readZipDirectory(src, bad, rules = {}) {
  const u64 = (buf, at) => {
    const v = buf.readBigUInt64LE(at);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) bad(`a 64-bit size or offset (${v}) is beyond any real file`);
    return Number(v);
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
  const eocdAt = tailStart + eocd;
  if (rules.singleDisk && (tail.readUInt16LE(eocd + 4) !== 0 || tail.readUInt16LE(eocd + 6) !== 0)) bad("multi-disk zips are not supported");
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  let cdEnd = eocdAt;
  if (count === U16 || cdSize === U32 || cdOffset === U32) {
    if (eocdAt < 20) bad("Zip64 locator missing");
    const loc = src.read(eocdAt - 20, 20);
    if (loc.readUInt32LE(0) !== ZIP64_LOCATOR_SIG) bad("Zip64 locator missing");
    const z64At = u64(loc, 8);
    if (z64At + 56 > eocdAt - 20) bad("Zip64 end record out of range");
    const z = src.read(z64At, 56);
    if (z.readUInt32LE(0) !== ZIP64_EOCD_SIG) bad("bad Zip64 end record");
    count = u64(z, 32);
    cdSize = u64(z, 40);
    cdOffset = u64(z, 48);
    cdEnd = z64At;
  }
  if (rules.maxEntries !== void 0 && count > rules.maxEntries) bad(`the zip has ${count} entries; at most ${rules.maxEntries}`);
  if (cdOffset + cdSize > cdEnd || rules.maxDirectoryBytes !== void 0 && cdSize > rules.maxDirectoryBytes) bad("central directory out of range (truncated file?)");
  const cd = src.read(cdOffset, cdSize);
  const entries = [];
  let p = 0;
  for (let n = 0; n < count; n++) {
    if (p + 46 > cd.length || cd.readUInt32LE(p) !== CDH_SIG) bad("corrupt central directory");
    const madeBy = cd.readUInt16LE(p + 4);
    const flags = cd.readUInt16LE(p + 8);
    const method = cd.readUInt16LE(p + 10);
    const crc = cd.readUInt32LE(p + 16);
    let compressedSize = cd.readUInt32LE(p + 20);
    let size = cd.readUInt32LE(p + 24);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    const attrs = cd.readUInt32LE(p + 38);
    let localHeaderOffset = cd.readUInt32LE(p + 42);
    const end = p + 46 + nameLen + extraLen + commentLen;
    if (end > cd.length) bad("corrupt central directory");
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
        if (size === U32) size = take();
        if (compressedSize === U32) compressedSize = take();
        if (localHeaderOffset === U32) localHeaderOffset = take();
      }
      e += 4 + len;
    }
    entries.push({ name, method, compressedSize, size, localHeaderOffset, flags, crc, madeBy, attrs });
    p = end;
  }
  return { entries, cdOffset };
}

// src/tensor/npz.ts
var LFH_SIG = 67324752;
function npzMembers(src, path) {
  return readZipDirectory(src, (what) => {
    throw new InputError(`not a valid .npz (zip): ${what}`, path);
  }).entries;
}
var NPZ_MAX_INFLATED = 1 << 30;
var PEEK_BYTES = 512;
function inflateMember(src, entry, dataStart, path, where, opts) {
  const { constants: zlibConstants, inflateRawSync } = process.getBuiltinModule("node:zlib");
  const name = entry.name;
  if (entry.size > NPZ_MAX_INFLATED) {
    throw new InputError(`member '${name}' declares ${entry.size} bytes uncompressed; at most ${NPZ_MAX_INFLATED} are inflated in memory (save large tensors as .npy, or with np.savez, uncompressed)`, path);
  }
  if (entry.compressedSize > entry.size + Math.ceil(entry.size / 1e3) + 1024) {
    throw new InputError(`member '${name}' is ${entry.compressedSize} bytes compressed, more than its declared ${entry.size} bytes uncompressed allow`, path);
  }
  const peek = (() => {
    try {
      return inflateRawSync(src.read(dataStart, Math.min(entry.compressedSize, PEEK_BYTES)), { finishFlush: zlibConstants.Z_SYNC_FLUSH, maxOutputLength: 1 << 20 });
    } catch {
      return null;
    }
  })();
  if (peek && headerComplete(peek)) {
    try {
      openNpyAt(new BufferBytes(where, peek), where, opts, 0, entry.size);
    } catch (err) {
      const why = err.message.replace(`${where}: `, "");
      throw new InputError(`member '${name}' is refused before inflating: ${why} (a corrupt archive, or not a tensor)`, path);
    }
  }
  try {
    return inflateRawSync(src.read(dataStart, entry.compressedSize), { maxOutputLength: Math.max(entry.size, 1) });
  } catch (err) {
    if (err.code === "ERR_BUFFER_TOO_LARGE" || err instanceof RangeError) {
      throw new InputError(`member '${name}' inflates to more than the ${entry.size} bytes its directory entry declares (stopped there)`, path);
    }
    throw new InputError(`member '${name}' does not inflate (${err.message})`, path);
  }
}
function headerComplete(head) {
  if (head.length < 10) return false;
  if (head[0] !== 147) return true;
  const major = head[6];
  if (major === 1) return head.length >= 10 + head.readUInt16LE(8);
  if (major === 2 || major === 3) return head.length >= 12 && head.length >= 12 + head.readUInt32LE(8);
  return true;
}
function openNpz(src, path, opts) {
  const entries = npzMembers(src, path).filter((e) => !e.name.endsWith("/"));
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
  const data = inflateMember(src, entry, dataStart, path, where, opts);
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

// src/rundir/read.ts
var PROBE_JSON_MAX_BYTES = 64 << 20;
function openRegularFile(path) {
  let fd;
  try {
    fd = openSync2(path, constants2.O_RDONLY | constants2.O_NONBLOCK | constants2.O_NOCTTY);
  } catch (e) {
    const code = e.code;
    if (code === "ENOENT") throw new InputError("no such file", path);
    throw fsError(e, path, "cannot open");
  }
  try {
    const st = fstatSync2(fd);
    if (!st.isFile()) throw new InputError(`is ${kindOf(st)}, not a regular file`, path);
    return { fd, size: st.size };
  } catch (e) {
    closeSync2(fd);
    throw fsError(e, path, "cannot stat");
  }
}
function readRegularFile(path, max) {
  const { fd, size } = openRegularFile(path);
  try {
    if (size > max) throw new InputError(`is ${size} bytes; at most ${max} are accepted`, path);
    return readWhole(fd, size);
  } catch (e) {
    throw fsError(e, path, "cannot read");
  } finally {
    closeSync2(fd);
  }
}
function runDirReal(runDir) {
  let st;
  try {
    st = statSync2(runDir);
  } catch (e) {
    if (e.code === "ENOENT") throw new InputError("run dir does not exist", runDir);
    throw fsError(e, runDir, "cannot read the run dir");
  }
  if (!st.isDirectory()) throw new InputError(`run dir is ${st.isFile() ? "a file" : kindOf(st)}, not a directory`, runDir);
  return realpathSync2(runDir);
}
var RUN_DIR_LINK = "is a symlink: a run dir's files are read only as regular files inside it, never through a link (not followed)";
function runFile2(runDir, rel, field, missing = `missing (probe.json ${field} lists it)`) {
  const shown2 = join2(runDir, rel);
  if (isAbsolute2(rel) || rel.split(/[\\/]/).includes("..")) throw new InputError(`${field} must be a relative path inside the run dir, got ${JSON.stringify(rel)}`, join2(runDir, RUN_FILES.probe));
  const root = runDirReal(runDir);
  const parts = rel.split(/[\\/]/).filter((p) => p !== "" && p !== ".");
  if (!parts.length) throw new InputError(`${field} must name a file inside the run dir, got ${JSON.stringify(rel)}`, join2(runDir, RUN_FILES.probe));
  let st = null;
  for (let i = 0; i < parts.length; i++) {
    const at = join2(root, ...parts.slice(0, i + 1));
    try {
      st = lstatSync2(at);
    } catch (e) {
      const code = e.code;
      if (code === "ENOENT" || code === "ENOTDIR") throw new InputError(missing, shown2);
      throw fsError(e, join2(runDir, ...parts.slice(0, i + 1)), "cannot read");
    }
    if (st.isSymbolicLink()) throw new InputError(RUN_DIR_LINK, join2(runDir, ...parts.slice(0, i + 1)));
    if (i < parts.length - 1 && !st.isDirectory()) throw new InputError(missing, shown2);
  }
  if (!st.isFile()) throw new InputError(`is ${kindOf(st)}, not a regular file`, shown2);
  return join2(root, ...parts);
}
function readProbeJson(runDir, requireBlock = true) {
  const file = join2(runDir, RUN_FILES.probe);
  runDirReal(runDir);
  const real = runFile2(runDir, RUN_FILES.probe, "probe.json", "missing: the probe did not finish writing this run dir");
  let raw;
  try {
    raw = JSON.parse(readRegularFile(real, PROBE_JSON_MAX_BYTES).toString("utf8"));
  } catch (e) {
    if (e instanceof InputError) throw new InputError(e.message.replace(`${real}: `, ""), file);
    throw new InputError(`not valid JSON (${e.message.split("\n")[0]})`, file);
  }
  const o = typeof raw === "object" && raw !== null && !Array.isArray(raw) ? raw : {};
  if (o.schema !== PROBE_SCHEMA) throw new InputError(`schema is ${JSON.stringify(o.schema ?? null)}, expected ${JSON.stringify(PROBE_SCHEMA)}`, file);
  if (o.schema_version !== PROBE_SCHEMA_VERSION) {
    throw new InputError(`schema_version ${JSON.stringify(o.schema_version ?? null)} is not supported (this npu-block-gate reads version ${PROBE_SCHEMA_VERSION})`, file);
  }
  let p;
  try {
    p = PROBE_SPEC.check(raw, "");
    crossCheck(p, requireBlock);
  } catch (e) {
    if (e instanceof SpecError) throw new InputError(e.message, file);
    throw e;
  }
  return p;
}
function crossCheck(p, requireBlock) {
  const f = (field, problem) => {
    throw new SpecError(field, problem);
  };
  headDimAgrees(p.model.config, f);
  const realLen = p.prompt.real_len;
  if (p.prompt.padded_len !== null && p.prompt.padded_len < realLen) f("prompt.padded_len", `${p.prompt.padded_len} is less than prompt.real_len ${realLen}`);
  if (p.prompt.token_ids.length > 0 && p.prompt.token_ids.length !== realLen) {
    f("prompt.token_ids", `holds ${p.prompt.token_ids.length} ids but prompt.real_len is ${realLen}`);
  }
  const { npu, ref } = p.tensors;
  if (requireBlock && (p.stage !== "block" || !npu || !ref)) {
    f("stage", `is "${p.stage}" and the file holds no block tensors (stage "config"): run \`probe block\`, or \`npu-block-gate check\`, first`);
  }
  const rows = (t) => t.shape.slice(0, -1).reduce((a, b) => a * b, 1);
  const cols = (t) => t.shape[t.shape.length - 1];
  for (const [name, t] of [["npu", npu], ["ref", ref], ["input", p.tensors.input]]) {
    if (t && t.shape.length < 1) f(`tensors.${name}.shape`, "must list at least one dimension");
  }
  if (ref && rows(ref) !== realLen) f("tensors.ref.shape", `says ${rows(ref)} rows but prompt.real_len is ${realLen} (the reference holds the real tokens only)`);
  if (npu && rows(npu) < realLen) f("tensors.npu.shape", `says ${rows(npu)} rows, fewer than prompt.real_len ${realLen}`);
  if (npu && ref && cols(npu) !== cols(ref)) f("tensors.npu.shape", `has ${cols(npu)} columns but tensors.ref.shape has ${cols(ref)}`);
  p.layers?.entries.forEach((e, i) => {
    if (cols(e.npu) !== cols(e.ref)) f(`layers.entries[${i}].npu.shape`, `has ${cols(e.npu)} columns but its ref has ${cols(e.ref)}`);
  });
  const pos = p.prompt.positions;
  if (pos && pos.real_len !== realLen) f("prompt.positions.real_len", `is ${pos.real_len} but prompt.real_len is ${realLen}`);
  p.boundaries?.entries.forEach((e, i) => {
    for (const side of ["npu", "ref"]) {
      const t = e[side];
      if (t.shape.length !== 2 || t.shape[0] !== realLen) {
        f(`boundaries.entries[${i}].${side}.shape`, `is [${t.shape.join(", ")}]; a boundary is [real_len, features] with real_len ${realLen}`);
      }
    }
    if (e.npu.shape.join("x") !== e.ref.shape.join("x")) f(`boundaries.entries[${i}].ref.shape`, `is [${e.ref.shape.join(", ")}] but its npu side is [${e.npu.shape.join(", ")}]`);
    if (e.fp32 && e.fp32.shape.join("x") !== e.ref.shape.join("x")) f(`boundaries.entries[${i}].fp32.shape`, `is [${e.fp32.shape.join(", ")}] but its ref side is [${e.ref.shape.join(", ")}]`);
    if (e.twin && e.twin.shape.join("x") !== e.ref.shape.join("x")) f(`boundaries.entries[${i}].twin.shape`, `is [${e.twin.shape.join(", ")}] but its ref side is [${e.ref.shape.join(", ")}]`);
  });
}
var HEAD_DIM_MAX = 1024;
function headDimAgrees(c, f) {
  const hd = c.head_dim;
  if (hd * c.n_heads === c.emb_dim) return;
  if (c.head_dim_explicit !== true) {
    f("model.config.head_dim", `${hd} does not agree with emb_dim ${c.emb_dim} / n_heads ${c.n_heads} = ${c.emb_dim / c.n_heads} (and the config declares no head_dim of its own: head_dim_explicit)`);
  }
  if (hd % 2 !== 0 || hd > HEAD_DIM_MAX || hd * c.n_heads > 4 * c.emb_dim) {
    f("model.config.head_dim", `${hd} is not a plausible head size (even, at most ${HEAD_DIM_MAX}, n_heads x head_dim within 4x emb_dim ${c.emb_dim})`);
  }
}
function tensorPath(runDir, entry) {
  return join2(runDir, entry.file);
}
function openRunTensor(runDir, entry, field) {
  const shown2 = tensorPath(runDir, entry);
  runFile2(runDir, entry.file, `${field}.file`);
  const t = openTensor(shown2, { u2IsBf16: entry.dtype === "bf16" });
  try {
    if (t.dtype !== entry.dtype) throw new InputError(`holds ${t.dtype} but probe.json ${field}.dtype says ${entry.dtype}`, shown2);
    const declared = entry.shape.join("x");
    if (declared !== t.shape.join("x")) throw new InputError(`shape ${t.shape.join("x")} disagrees with probe.json ${field}.shape (${declared})`, shown2);
  } catch (e) {
    t.close();
    throw e;
  }
  return t;
}

// src/cache/reference.ts
var KEY = new RegExp(`^[0-9a-f]{${REF_CACHE.key_hex_chars}}$`);
var layerFile = (li) => REF_CACHE.layer_file.replace("{NN}", String(li).padStart(2, "0"));
var boundaryFile = (name) => REF_CACHE.boundary_file.replace("{name}", name);
function metaKey(name) {
  if (!REF_CACHE.meta_keys.includes(name)) throw new Error(`contract.json reference_cache.meta_keys has no ${name}`);
  return name;
}
var META = {
  key: metaKey("key"),
  inputs: metaKey("inputs"),
  kind: metaKey("kind"),
  storedLayers: metaKey("stored_layers"),
  storedBoundaries: metaKey("stored_boundaries"),
  createdAt: metaKey("created_at")
};
function boundarySources(runDir, p) {
  const out = /* @__PURE__ */ new Map();
  for (const [i, e] of (p.boundaries?.entries ?? []).entries()) {
    if (!isId(e.name) || e.name.startsWith(".")) return `boundary ${JSON.stringify(e.name)} is not a name the cache can hold`;
    if (e.ref.dtype !== "f32" || e.ref.shape.length !== 2 || e.ref.shape[0] !== p.prompt.real_len) return `boundary ${e.name}'s reference is not f32 [real_len, features]`;
    if (e.fp32 && e.fp32.dtype === "f32" && e.fp32.shape.length === 2 && e.fp32.shape[0] === p.prompt.real_len && isId(`${FP32_PREFIX}${e.name}`)) {
      try {
        out.set(`${FP32_PREFIX}${e.name}`, runFile2(runDir, e.fp32.file, `boundaries.entries[${i}].fp32.file`));
      } catch {
      }
    }
    try {
      out.set(e.name, runFile2(runDir, e.ref.file, `boundaries.entries[${i}].ref.file`));
    } catch (err) {
      return `boundary ${e.name}'s reference tensor is not usable (${err.message})`;
    }
  }
  return out.size ? out : "the run dir holds no boundary pairs";
}
function storeReference(root, runDir, p) {
  const rec = p.reference?.cache;
  if (!rec) return { stored: false, why: "the run kept no reference cache record (cache off, or not cacheable)" };
  if (rec.hit) return { stored: false, why: "hit: already stored" };
  if (typeof rec.key !== "string" || !KEY.test(rec.key)) return { stored: false, why: "the recorded key is not a cache key" };
  const wanted = Array.isArray(rec.inputs?.layers) && rec.inputs.layers.every((l) => Number.isInteger(l) && l >= 0) ? rec.inputs.layers : [0];
  const sources = /* @__PURE__ */ new Map();
  if (p.tensors.ref) sources.set(0, tensorPath(runDir, p.tensors.ref));
  for (const e of p.layers?.entries ?? []) if (e.layer !== 0 && wanted.includes(e.layer)) sources.set(e.layer, tensorPath(runDir, e.ref));
  for (const li of wanted) {
    const src = sources.get(li);
    if (!src || !existsSync2(src) || !lstatSync3(src).isFile()) return { stored: false, why: `layer ${li}'s reference tensor is not in the run dir` };
  }
  let bounds = null;
  if (rec.inputs?.boundaries) {
    const b = boundarySources(runDir, p);
    if (typeof b === "string") return { stored: false, why: `${b} (the key covers the lens's reference side)` };
    bounds = b;
  }
  const names = bounds ? [...bounds.keys()] : [];
  const dest = join3(root, rec.key);
  if (existsSync2(dest) && sound(dest, rec.key, wanted, names)) return { stored: false, why: "an entry for this key is already there" };
  makeDirs(root);
  const tmp = mkdtempSync2(join3(root, `.${rec.key}.`));
  chmodSync2(tmp, 493);
  try {
    for (const li of wanted) copyFileSync(sources.get(li), join3(tmp, layerFile(li)));
    for (const [name, src] of bounds ?? []) copyFileSync(src, join3(tmp, boundaryFile(name)));
    writeFileSync2(join3(tmp, REF_CACHE.meta), JSON.stringify({
      [META.key]: rec.key,
      [META.inputs]: rec.inputs ?? null,
      [META.kind]: rec.kind ?? p.reference.kind,
      [META.storedLayers]: wanted,
      ...bounds ? { [META.storedBoundaries]: names } : {},
      [META.createdAt]: (/* @__PURE__ */ new Date()).toISOString().replace(/\.\d+Z$/, "Z")
    }, null, 2) + "\n");
    if (existsSync2(dest)) {
      const old = `${dest}.old-${process.pid}`;
      renameSync2(dest, old);
      try {
        renameSync2(tmp, dest);
      } finally {
        rmSync2(old, { recursive: true, force: true });
      }
    } else {
      try {
        renameSync2(tmp, dest);
      } catch (e) {
        if (!existsSync2(dest)) throw e;
      }
    }
  } finally {
    rmSync2(tmp, { recursive: true, force: true });
  }
  return { stored: true, dir: dest, layers: wanted, ...bounds ? { boundaries: names } : {} };
}
function referenceRoot(cacheRoot, env = process.env) {
  const r = env[REF_CACHE.env_root];
  if (r && r.trim().toLowerCase() !== REF_CACHE.off_value) return resolve(r);
  return isAbsolute3(cacheRoot) ? join3(cacheRoot, REF_CACHE.subdir) : resolve(cacheRoot, REF_CACHE.subdir);
}
function sound(dir, key, layers, boundaries) {
  try {
    const meta = JSON.parse(readFileSync2(join3(dir, REF_CACHE.meta), "utf8"));
    if (meta?.[META.key] !== key) return false;
    const stored = meta[META.storedBoundaries];
    if (boundaries.length && !(Array.isArray(stored) && boundaries.every((n) => stored.includes(n)))) return false;
    const npy = (f) => readFileSync2(join3(dir, f)).subarray(0, 6).toString("latin1") === "\x93NUMPY";
    return layers.every((li) => npy(layerFile(li))) && boundaries.every((n) => npy(boundaryFile(n)));
  } catch {
    return false;
  }
}

export {
  crc32,
  crc32Update,
  FileBytes,
  readZipDirectory,
  SpecError,
  str,
  oneOf,
  int,
  num,
  bool,
  any,
  nullable,
  withDefault,
  optional,
  list,
  obj,
  TENSOR_SPEC,
  TWINS_SPEC,
  ITEMSIZE,
  decodeInto,
  openTensor,
  readRegularFile,
  runDirReal,
  runFile2 as runFile,
  readProbeJson,
  tensorPath,
  openRunTensor,
  storeReference,
  referenceRoot,
  DEFAULT_MAX_BYTES,
  defaultCacheRoot,
  kernelCacheKey,
  KernelStore
};
