import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  airRootOf,
  esc,
  fmtCos,
  markdownTable,
  page,
  readDocs,
  readHistory,
  readTodo,
  runProbe,
  sparkline,
  swatch,
  table
} from "./chunk-AEVRNM6T.js";
import {
  InfraError,
  InputError,
  cell,
  code,
  commitWrites,
  fsError,
  generationName,
  oneLine,
  plain,
  pythonCandidates
} from "./chunk-7HMQRJMS.js";

// src/fleet/affected.ts
import { posix } from "node:path";
var LLMS = "programming_examples/llms";
var DOC_EXT = /\.(md|markdown|rst|adoc|png|jpe?g|gif|svg|pdf)$/i;
var DOC_NAMES = /^(LICENSE|LICENCE|NOTICE|AUTHORS|CODEOWNERS)(\.[A-Za-z]+)?$|^\.gitignore$/;
function isDoc(file) {
  const parts = file.split("/");
  return parts.slice(0, -1).includes("docs") || DOC_EXT.test(file) || DOC_NAMES.test(parts[parts.length - 1]);
}
function inTree(file, prefix) {
  const f = posix.normalize(file.replace(/\\/g, "/")).replace(/^\.\//, "");
  if (f.startsWith("../") || f.startsWith("/")) return null;
  if (!prefix) return f;
  const p = prefix.endsWith("/") ? prefix : `${prefix}/`;
  return f.startsWith(p) ? f.slice(p.length) : null;
}
var KIND_WORD = {
  import: "imports",
  compile: "compiles from",
  default: "takes make diagnosis's defaults from",
  prompt: "reads the prompt set"
};
function ownerOf(rel) {
  const m = /^programming_examples\/llms\/([^/]+)\//.exec(rel);
  return m ? m[1] : null;
}
function whyIn(m, models, hits) {
  const parts = [];
  for (const h of hits.slice(0, 3)) {
    if (h.kind === "unplaced") parts.push(`${h.rel} cannot be placed (every model is checked)`);
    else if (h.kind === "all") parts.push(h.rel);
    else if (h.kind === "plan-failed") parts.push(`its plan failed (${m.error}), so any change may affect it; changed: ${h.rel}`);
    else if (h.kind === "model-dir") parts.push(`${h.rel} is in its model dir`);
    else {
      const owner = ownerOf(h.rel);
      const inherited = owner && owner !== m.name && models.has(owner) ? ` (${m.block?.startsWith(`${owner}_`) ? `runs ${owner}'s block` : `inherits from ${owner}`})` : "";
      parts.push(`${KIND_WORD[h.kind]} ${h.rel}${inherited}`);
    }
  }
  if (hits.length > 3) parts.push(`and ${hits.length - 3} more changed files`);
  return parts.join("; ");
}
function affected(models, changedFiles, prefix = "", all = null) {
  const byName = new Map(models.map((m) => [m.name, m]));
  const names = new Set(byName.keys());
  const readers = /* @__PURE__ */ new Map();
  for (const m of models) for (const [f, kind] of m.inputs) {
    const list = readers.get(f) ?? [];
    list.push({ name: m.name, kind });
    readers.set(f, list);
  }
  const runnable = models.filter((m) => !m.refusal);
  const hits = /* @__PURE__ */ new Map();
  const hit = (name, rel, kind) => {
    const list = hits.get(name) ?? [];
    if (!list.some((h) => h.rel === rel)) list.push({ rel, kind });
    hits.set(name, list);
  };
  const changes = [];
  const files = [...new Set(changedFiles.map((f) => f.trim()).filter(Boolean))].sort();
  for (const file of files) {
    const rel = inTree(file, prefix);
    const who = rel !== null ? readers.get(rel) : void 0;
    let change;
    if (rel !== null && who?.length) {
      for (const r of who) hit(r.name, rel, r.kind);
      change = { file, kind: "input", models: [...new Set(who.map((r) => r.name))].sort() };
    } else if (isDoc(rel ?? file)) {
      change = { file, kind: "docs", models: [] };
    } else if (rel !== null && ownerOf(rel) && byName.has(ownerOf(rel))) {
      hit(ownerOf(rel), rel, "model-dir");
      change = { file, kind: "model-dir", models: [ownerOf(rel)] };
    } else if (rel !== null && rel.startsWith("programming_examples/")) {
      change = { file, kind: "unread", models: [] };
    } else {
      for (const m of runnable) hit(m.name, rel ?? file, "unplaced");
      change = { file, kind: "unplaced", models: runnable.map((m) => m.name) };
    }
    if (change.kind !== "docs") {
      for (const m of models) if (m.error && !change.models.includes(m.name)) {
        hit(m.name, rel ?? file, "plan-failed");
        change.models = [...change.models, m.name].sort();
      }
    }
    changes.push(change);
  }
  if (all) for (const m of runnable) hit(m.name, all, "all");
  const everything = !!all || changes.some((c) => c.kind === "unplaced");
  const keyOf = (name) => posix.join(prefix, LLMS, name);
  const rows = [...models].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0).map((m) => {
    const h = hits.get(m.name) ?? [];
    const touched = h.length > 0;
    const ok = !m.refusal;
    let why;
    if (!ok) why = `${touched ? `touched (${whyIn(m, names, h)}), but ` : ""}Phase 2 cannot run on it: ${m.refusal}`;
    else if (touched) why = whyIn(m, names, h);
    else why = files.length ? "no changed file is among its inputs" : "nothing changed";
    return { name: m.name, model: keyOf(m.name), in: ok && touched, touched, runnable: ok, why };
  });
  return { models: rows.filter((r) => r.in).map((r) => r.model), everything, changes, rows };
}
function matrixOf(models, runners) {
  if (!runners.length) return { model: models };
  return { include: models.flatMap((model) => runners.map((runner) => ({ model, runner }))) };
}

// src/fleet/changes.ts
import { execFileSync as execFileSync2 } from "node:child_process";
import { mkdtempSync, readFileSync as readFileSync2, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join as join2, relative, resolve as resolve2 } from "node:path";

// src/git/pinned.ts
import { execFile, execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
function checkoutAt(dir) {
  const dotGit = join(dir, ".git");
  try {
    if (statSync(dotGit).isDirectory()) return { workTree: dir, gitDir: dotGit };
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, "utf8"));
    if (m && statSync(resolve(dir, m[1])).isDirectory()) return { workTree: dir, gitDir: resolve(dir, m[1]) };
  } catch {
  }
  return null;
}
function findCheckout(from) {
  for (let up = resolve(from); ; up = dirname(up)) {
    const c = checkoutAt(up);
    if (c) return c;
    if (dirname(up) === up) return null;
  }
}
function modelCheckout(workspace, modelDir) {
  const m = resolve(modelDir);
  return findCheckout(m === resolve(workspace) ? m : dirname(m));
}
function pinnedConfig(c) {
  const pins = [
    // Only this checkout is trusted, whatever the user's global config says (an empty value
    // clears the list); git's subprocesses (a local remote's upload-pack) inherit it.
    "safe.directory=",
    `safe.directory=${c.workTree}`,
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.sshCommand=ssh",
    "core.askPass=",
    "core.editor=:",
    "core.pager=cat",
    "core.alternateRefsCommand=:",
    "credential.helper=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "push.gpgSign=false",
    "log.showSignature=false",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "protocol.ext.allow=never",
    // git:// runs core.gitProxy, a command (GitHub serves no git:// anyway).
    "protocol.git.allow=never",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "push.recurseSubmodules=no",
    // A fetch may start `git maintenance` / `gc` in the background: nothing of ours outlives the call.
    "gc.auto=0",
    "maintenance.auto=false"
  ];
  return pins.flatMap((p) => ["-c", p]);
}
function pinnedArgs(c, args) {
  return ["--no-pager", `--git-dir=${c.gitDir}`, `--work-tree=${c.workTree}`, ...pinnedConfig(c), ...transportPins(args)];
}
function transportPins(args) {
  if (args[0] === "fetch") return ["fetch", "--upload-pack=git-upload-pack", ...args.slice(1)];
  if (args[0] === "push") return ["push", "--receive-pack=git-receive-pack", ...args.slice(1)];
  if (args[0] === "ls-remote" || args[0] === "pull" || args[0] === "clone" || args[0] === "archive") throw new Error(`git ${args[0]} is not pinned here`);
  return args;
}
var DROPPED = /^GIT_(DIR|WORK_TREE|INDEX_FILE|OBJECT_DIRECTORY|ALTERNATE_OBJECT_DIRECTORIES|COMMON_DIR|NAMESPACE|CEILING_DIRECTORIES|DISCOVERY_ACROSS_FILESYSTEM|CONFIG|CONFIG_PARAMETERS|CONFIG_COUNT|CONFIG_KEY_\d+|CONFIG_VALUE_\d+|CONFIG_SYSTEM|EXTERNAL_DIFF|PAGER|EDITOR|SEQUENCE_EDITOR|PROXY_COMMAND|EXEC_PATH|TEMPLATE_DIR)$/;
function pinnedEnv(extra = {}, base = process.env) {
  const env = {};
  for (const [k, v] of Object.entries(base)) if (!DROPPED.test(k)) env[k] = v;
  return { ...env, GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0", LC_ALL: "C", ...extra };
}
function runPinned(c, args, o = {}) {
  return new Promise((done) => {
    execFile("git", pinnedArgs(c, args), { cwd: c.workTree, env: pinnedEnv(o.env), maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code2 = err ? typeof err.code === "number" ? err.code : 1 : 0;
      done({ code: code2, stdout: String(stdout), stderr: String(stderr || (err && !stderr ? err.message : "")) });
    });
  });
}
function runPinnedSync(c, args, o = {}) {
  return execFileSync("git", pinnedArgs(c, args), { cwd: c.workTree, encoding: "utf8", maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "pipe"], env: pinnedEnv(o.env) });
}

// src/fleet/changes.ts
function firstLine(e) {
  const err = e;
  return (err.stderr || err.message || String(e)).trim().split("\n").pop() ?? "";
}
function checkoutOf(dir) {
  return findCheckout(dir);
}
function prefixOf(airRoot, top) {
  if (!top) return "";
  const rel = relative(resolve2(top), resolve2(airRoot)).split("\\").join("/");
  return rel.startsWith("..") ? "" : rel;
}
var REV = /^[A-Za-z0-9._/@^~-]{1,200}$/;
function changedBetween(c, base, head) {
  for (const [name, rev] of [["base", base], ["head", head]]) {
    if (!REV.test(rev) || rev.startsWith("-")) throw new InputError(`${name} ${JSON.stringify(rev.slice(0, 80))} is not a commit or branch name`);
  }
  const diff = (range) => runPinnedSync(c, ["diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z", "--no-renames", ...range, "--"]).split("\0").filter(Boolean);
  try {
    return { files: diff([`${base}...${head}`]), note: null };
  } catch (e) {
    try {
      const files = diff([base, head]);
      return { files, note: `${base.slice(0, 12)} and ${head.slice(0, 12)} share no history in this clone (${firstLine(e)}); compared their trees instead, which also counts what changed on the base meanwhile` };
    } catch (e2) {
      throw new InputError(`git diff ${base}...${head} failed: ${firstLine(e2)} (are both commits fetched? actions/checkout needs fetch-depth: 0)`, c.workTree);
    }
  }
}
function hasCommit(c, rev) {
  try {
    runPinnedSync(c, ["cat-file", "-e", `${rev}^{commit}`]);
    return true;
  } catch {
    return false;
  }
}
function parseFileList(text) {
  return text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
}
function readFileList(path) {
  try {
    return parseFileList(readFileSync2(path, "utf8"));
  } catch (e) {
    throw fsError(e, path, "cannot read the list of changed files");
  }
}
function forkPoint(c, base, head) {
  try {
    return runPinnedSync(c, ["merge-base", base, head]).trim() || base;
  } catch {
    return base;
  }
}
function treeAt(c, rev, sub) {
  if (!REV.test(rev) || rev.startsWith("-")) throw new InputError(`${JSON.stringify(rev.slice(0, 80))} is not a commit or branch name`);
  const out = mkdtempSync(join2(tmpdir(), "npu-block-gate-base-"));
  try {
    const tar = execFileSync2(
      "git",
      ["--no-pager", `--git-dir=${c.gitDir}`, `--work-tree=${c.workTree}`, ...pinnedConfig(c), "archive", "--format=tar", rev, "--", sub || "."],
      { cwd: c.workTree, maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"], env: pinnedEnv() }
    );
    execFileSync2("tar", ["-x", "--no-same-owner", "--no-same-permissions", "-C", out], { input: tar, stdio: ["pipe", "ignore", "pipe"] });
    return out;
  } catch (e) {
    rmSync(out, { recursive: true, force: true });
    throw new InputError(`cannot read the tree at ${rev.slice(0, 40)}: ${firstLine(e)}`, c.workTree);
  }
}

// src/fleet/plans.ts
import { existsSync, readdirSync, rmSync as rmSync2, statSync as statSync2 } from "node:fs";
import { join as join3, posix as posix2, resolve as resolve3 } from "node:path";
function airRootAt(tree) {
  const dir = resolve3(tree);
  if (!existsSync(dir)) throw new InputError("no such directory", tree);
  if (existsSync(join3(dir, LLMS))) return dir;
  const up = airRootOf(dir);
  if (up) return up;
  throw new InputError(`not an mlir-air tree (no ${LLMS} here or above)`, tree);
}
function modelNames(airRoot) {
  const llms = join3(airRoot, LLMS);
  let names;
  try {
    names = readdirSync(llms);
  } catch {
    throw new InputError(`no ${LLMS} here; point --tree at an mlir-air checkout`, airRoot);
  }
  return names.filter((n) => !n.startsWith(".") && existsSync(join3(llms, n, "verify_adapter.py")) && statSync2(join3(llms, n)).isDirectory()).sort();
}
function promptSets(airRoot) {
  const dir = join3(airRoot, LLMS, "verify/prompts");
  try {
    return readdirSync(dir).filter((f) => f.endsWith(".txt")).sort().map((f) => posix2.join(LLMS, "verify/prompts", f));
  } catch {
    return [];
  }
}
var strings = (v) => Array.isArray(v) ? v.filter((x) => typeof x === "string") : [];
function sourceFile(src, airRoot) {
  if (typeof src !== "string") return null;
  const path = /^([^\s:]+):\d+/.exec(src)?.[1];
  if (!path || path.startsWith("/") || path.split("/").includes("..")) return null;
  for (const rel of [path, posix2.join(LLMS, path)]) if (existsSync(join3(airRoot, rel))) return rel;
  return null;
}
function factsOf(name, plan, airRoot, prompts) {
  const inputs = /* @__PURE__ */ new Map();
  const add = (f, kind) => {
    if (f && !inputs.has(f)) inputs.set(f, kind);
  };
  for (const f of strings(plan.imports?.files)) add(f, "import");
  for (const f of strings(plan.kernel_cache?.inputs?.files)) add(f, "compile");
  for (const obj of [plan.defaults, plan.kernel_cache]) {
    if (!obj || typeof obj !== "object") continue;
    for (const [k, v] of Object.entries(obj)) if (k.endsWith("_source")) add(sourceFile(v, airRoot), "default");
  }
  for (const p of prompts) add(p, "prompt");
  const inherits = new Set(strings(plan.kernel_cache?.inputs?.models));
  const blockFile = plan.step1?.block?.file;
  for (const f of [...inputs.keys(), ...typeof blockFile === "string" ? [blockFile] : []]) {
    const owner = /^programming_examples\/llms\/([^/]+)\//.exec(f)?.[1];
    if (owner && owner !== name && owner !== "shared" && owner !== "verify") inherits.add(owner);
  }
  const refusal = plan.refusal && typeof plan.refusal === "object" ? oneLine(plan.refusal.reason ?? "refused") : null;
  const fn = plan.step1?.block?.function;
  const gone = (Array.isArray(plan.imports?.unresolved) ? plan.imports.unresolved : []).filter((u) => u && typeof u.module === "string");
  const error = gone.length ? `${gone.map((u) => `${u.file}:${u.line} imports ${u.module}`).slice(0, 3).join(", ")}${gone.length > 3 ? ` and ${gone.length - 3} more` : ""}, which ${gone.length === 1 ? "is" : "are"} neither a tree file nor an installed package` : null;
  return { name, refusal, error, inputs, inherits: [...inherits].sort(), block: typeof fn === "string" ? fn : null };
}
function failedFacts(name, error) {
  return { name, refusal: null, error, inputs: /* @__PURE__ */ new Map(), inherits: [], block: null };
}
async function planFacts(airRoot, names, o) {
  if (!names.length) return [];
  const prompts = promptSets(airRoot);
  const dirs = names.map((n) => join3(airRoot, LLMS, n));
  const r = await runProbe(pythonCandidates(o.python), {
    subcommand: "plans",
    args: [...dirs.flatMap((d) => ["--model-dir", d]), "--air-root", airRoot],
    runDir: null,
    timeoutSec: o.timeoutSec
  }, { onLine: () => void 0 });
  let plans;
  try {
    plans = JSON.parse(r.stdout).plans;
    if (!Array.isArray(plans) || plans.length !== names.length) throw new Error("not one entry per model dir");
  } catch (e) {
    throw new InfraError(`probe plans did not answer with one plan per model dir (${oneLine(e)})`);
  }
  return names.map((name, i) => {
    const p = plans[i];
    if (p.plan && typeof p.plan === "object") return factsOf(name, p.plan, airRoot, prompts);
    const error = typeof p.error === "string" ? p.error : "no plan";
    o.log.warn(`plan of ${name} failed (${error}); it is kept in the matrix on any change`);
    return failedFacts(name, error);
  });
}
function withRemoved(head, base, gone) {
  const before = new Map(base.map((m) => [m.name, m]));
  return head.map((m) => {
    const b = before.get(m.name);
    if (!b) return m;
    const extra = [...b.inputs].filter(([f]) => gone.has(f) && !m.inputs.has(f));
    return extra.length ? { ...m, inputs: new Map([...m.inputs, ...extra]) } : m;
  });
}
function goneFiles(airRoot, changed, prefix) {
  const out = /* @__PURE__ */ new Set();
  for (const f of changed) {
    const rel = inTree(f, prefix);
    if (rel !== null && !existsSync(join3(airRoot, rel))) out.add(rel);
  }
  return out;
}
async function planWithBase(c, o) {
  const gone = goneFiles(c.airRoot, c.changed, c.prefix);
  if (!gone.size) return c.facts;
  const rev = forkPoint(c.top, c.base, c.head);
  const dir = treeAt(c.top, rev, c.prefix);
  try {
    const baseRoot = join3(dir, c.prefix);
    if (!existsSync(join3(baseRoot, LLMS))) return c.facts;
    const names = modelNames(baseRoot);
    o.log.step(`affected: ${gone.size} changed file${gone.size === 1 ? " is" : "s are"} gone from the head; planning the ${names.length} model dirs at ${rev.slice(0, 12)} for what read them`);
    return withRemoved(c.facts, await planFacts(baseRoot, names, o), gone);
  } finally {
    rmSync2(dir, { recursive: true, force: true });
  }
}

// src/fleet/legs.ts
var SCALAR = (v) => typeof v === "string" || typeof v === "number" || typeof v === "boolean";
function legOfValue(v, at) {
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new InputError(`${at} is not an object of matrix values`);
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    if (!SCALAR(x)) throw new InputError(`${at}.${k} is not a string, number or boolean (nested matrix values are not supported)`);
    out[k] = x;
  }
  return out;
}
var matches = (leg, part) => Object.entries(part).every(([k, v]) => leg[k] === v);
function expandMatrix(m, at = "legs") {
  if (Array.isArray(m)) return m.map((x, i) => legOfValue(x, `${at}[${i}]`));
  if (!m || typeof m !== "object") throw new InputError(`${at} is not a matrix (an object of vectors, or a list of legs)`);
  const o = m;
  const vectors = Object.entries(o).filter(([k]) => k !== "include" && k !== "exclude");
  let legs = [{}];
  for (const [k, v] of vectors) {
    if (!Array.isArray(v)) throw new InputError(`${at}.${k} is not a list`);
    if (!v.every(SCALAR)) throw new InputError(`${at}.${k} holds a value that is not a string, number or boolean`);
    legs = legs.flatMap((l) => v.map((x) => ({ ...l, [k]: x })));
  }
  if (!vectors.length || vectors.some(([, v]) => v.length === 0)) legs = [];
  const exclude = o.exclude === void 0 ? [] : Array.isArray(o.exclude) ? o.exclude.map((x, i) => legOfValue(x, `${at}.exclude[${i}]`)) : null;
  if (exclude === null) throw new InputError(`${at}.exclude is not a list`);
  legs = legs.filter((l) => !exclude.some((e) => matches(l, e)));
  const include = o.include === void 0 ? [] : Array.isArray(o.include) ? o.include.map((x, i) => legOfValue(x, `${at}.include[${i}]`)) : null;
  if (include === null) throw new InputError(`${at}.include is not a list`);
  const original = new Set(vectors.map(([k]) => k));
  const added = [];
  for (const inc of include) {
    const targets = legs.filter((l) => Object.entries(inc).every(([k, v]) => !original.has(k) || l[k] === v));
    if (targets.length) for (const t of targets) Object.assign(t, inc);
    else added.push({ ...inc });
  }
  return [...legs, ...added];
}
function legModel(leg) {
  const v = leg.model ?? leg["model-dir"];
  return typeof v === "string" && v.trim() ? v.trim().replace(/\/+$/, "") : null;
}
function legRunner(leg) {
  const v = leg.runner ?? leg["runs-on"] ?? leg.label;
  return typeof v === "string" && v ? v : null;
}
function parseLabels(values) {
  const out = [];
  for (const v of values) for (const l of v.split(/[,\n]/).map((s) => s.trim()).filter(Boolean)) {
    if (!/^[A-Za-z0-9._-]{1,100}$/.test(l)) throw new InputError(`runner label ${JSON.stringify(l.slice(0, 60))} is not a label (letters, digits, . _ -)`);
    if (!out.includes(l)) out.push(l);
  }
  return out;
}
var GITHUB_MATRIX_LIMIT = 256;
function matrixLimitNote(count) {
  if (count <= GITHUB_MATRIX_LIMIT) return null;
  return `${count} legs: GitHub Actions runs at most ${GITHUB_MATRIX_LIMIT} jobs from one matrix and fails the workflow on more; split the models over two matrix jobs, or give fewer --runners`;
}

// src/fleet/affected-text.ts
var legCount = (a, runners) => a.models.length * Math.max(1, runners.length);
var AFFECTED_SCHEMA = "npu-block-gate/affected";
function affectedJson(a, runners) {
  return JSON.stringify({
    schema: AFFECTED_SCHEMA,
    schema_version: 1,
    models: a.models,
    matrix: matrixOf(a.models, runners),
    count: a.models.length,
    everything: a.everything,
    changes: a.changes,
    rows: a.rows
  }, null, 2) + "\n";
}
function headline(a) {
  const n = a.models.length;
  const files = a.changes.length;
  if (a.everything && !a.changes.some((c) => c.kind === "unplaced")) return `Every model (${n}) is checked: ${a.rows.find((r) => r.in)?.why ?? "no change to compare"}.`;
  if (!files) return "No file changed: no model to check.";
  if (a.everything) {
    const un = a.changes.filter((c) => c.kind === "unplaced").map((c) => c.file);
    return `${un.length === 1 ? `${un[0]} is` : `${un.length} changed files are`} outside every model's inputs and cannot be placed: every model (${n}) is checked.`;
  }
  if (!n) return `${files} changed file${files === 1 ? "" : "s"}, none read by a model's check: no model to check.`;
  return `${n} model${n === 1 ? "" : "s"} to check for ${files} changed file${files === 1 ? "" : "s"}.`;
}
var KIND = {
  input: "read by",
  "model-dir": "in the model dir of",
  docs: "documentation",
  unread: "read by no model",
  unplaced: "cannot be placed: every model"
};
function affectedTerminal(a) {
  const width = Math.max(5, ...a.rows.map((r) => r.name.length));
  const lines = [headline(a), ""];
  for (const r of a.rows) lines.push(`  ${r.in ? "in " : "out"}  ${plain(r.name, 64).padEnd(width)}  ${plain(r.why, 400).replace(/\n/g, " ")}`);
  lines.push("", "changed:");
  for (const c of a.changes) lines.push(`  ${plain(c.file, 200)}: ${KIND[c.kind]}${c.kind === "input" || c.kind === "model-dir" ? ` ${c.models.join(", ")}` : ""}`);
  return lines.join("\n") + "\n";
}
function affectedMarkdown(a, runners) {
  const rows = [["model", "checked", "why"], ...a.rows.map((r) => [code(r.name, { inTable: true, max: 64 }), r.in ? "\u2705 in" : r.touched ? "\u2796 touched, not run" : "\u2796 out", cell(r.why, 600)])];
  const changes = a.changes.map((c) => `- ${code(c.file, { max: 200 })}: ${KIND[c.kind]}${c.kind === "input" || c.kind === "model-dir" ? ` ${c.models.map((m) => code(m, { max: 64 })).join(", ")}` : ""}`);
  const legs = runners.length ? ` on ${runners.map((r) => code(r, { max: 64 })).join(", ")} (${a.models.length * runners.length} legs)` : "";
  return [
    "## npu-block-gate: affected models",
    "",
    `${plain(headline(a), 400)}${a.models.length ? legs : ""}`,
    "",
    ...matrixLimitNote(legCount(a, runners)) ? [`> [!WARNING]
> ${plain(matrixLimitNote(legCount(a, runners)), 400)}`, ""] : [],
    markdownTable(rows),
    "",
    `<details><summary>${a.changes.length} changed file${a.changes.length === 1 ? "" : "s"}</summary>`,
    "",
    ...changes.length ? changes : ["(none)"],
    "",
    "</details>",
    ""
  ].join("\n");
}

// src/fleet/status.ts
import { dirname as dirname2, join as join4, resolve as resolve4 } from "node:path";
import { existsSync as existsSync2, statSync as statSync3 } from "node:fs";

// src/report/fleet-html.ts
function verdictClass(outcome) {
  const o = outcome.toUpperCase();
  return o.startsWith("PASS") ? "pass" : o.startsWith("FAIL") ? "fail" : "error";
}
var MARK = { pass: "\u2713", fail: "\u2717", error: "!" };
function cellOf(m, g) {
  if (!g) return '<td class="n" data-verdict="none">\u2013</td>';
  const k = verdictClass(g.outcome);
  const spark = sparkline(g.trend, "per-position min", { fmt: fmtCos, bar: g.threshold });
  return `<td class="cell-${k}" data-model="${esc(m.name, 120)}" data-npu="${esc(g.npu, 40)}" data-verdict="${k}"><strong class="${k === "pass" ? "ok" : k === "fail" ? "bad" : "err"}">${MARK[k]} <span data-outcome>${esc(g.outcome, 40)}</span></strong><br>cosine <span data-cosine>${g.cosine === null ? "n/a" : fmtCos(g.cosine)}</span><br><span data-date>${esc(g.date, 20)}</span> \xB7 <code>${esc(g.commit, 16)}</code>${spark ? `<br>${spark}` : ""}</td>`;
}
function renderFleetHtml(models, o) {
  const npus = [...new Set(models.flatMap((m) => m.generations.map((g) => g.npu)))].sort();
  const head = ["model", ...npus.map((n) => esc(generationName(n), 60)), "Phase 2", "open blockers"];
  const rows = models.map((m) => {
    const name = `<code>${esc(m.name, 120)}</code>${m.problem ? `<br><span class="err">unreadable: ${esc(m.problem, 300)}</span>` : !m.generations.length ? '<br><span class="note">never recorded</span>' : ""}`;
    const cells = npus.map((n) => cellOf(m, m.generations.find((g) => g.npu === n)));
    const done = m.phase2_done === null ? "?" : m.phase2_done ? "\u2611 done" : "\u2610 open";
    const blockers2 = m.blockers.length ? `<ul>${m.blockers.map((b) => `<li>${esc(b, 300)}</li>`).join("")}</ul>` : "none";
    return `<tr data-row="${esc(m.name, 120)}"><th scope="row">${name}</th>${cells.join("")}<td>${done}</td><td>${blockers2}</td></tr>`;
  });
  const count = (k) => models.reduce((a, m) => a + m.generations.filter((g) => verdictClass(g.outcome) === k).length, 0);
  const blockers = models.filter((m) => m.blockers.length);
  const body = `<main>
<h1>npu-block-gate: Phase 2 status of the fleet</h1>
<p>${esc(o.source, 400)}${o.note ? `<br>${esc(o.note, 400)}` : ""}</p>
<p><strong>${models.length}</strong> model dirs \xD7 <strong>${npus.length}</strong> NPU generation${npus.length === 1 ? "" : "s"}: <span class="ok">${count("pass")} passing</span>, <span class="bad">${count("fail")} failing</span>, <span class="err">${count("error")} errors</span> (the latest recorded run of each).</p>
<div class="legend">${swatch("cell-pass", "\u2713 PASS", ' data-class="pass"')}${swatch("cell-fail", "\u2717 FAIL", ' data-class="fail"')}${swatch("cell-error", "! ERROR", ' data-class="error"')}<span>the line: per-position min of the last runs on the same prompt; dashed: its threshold</span></div>
<div class="scroll"><table class="fleet"><thead><tr>${head.map((h) => `<th scope="col">${h}</th>`).join("")}</tr></thead><tbody>
${rows.join("\n")}
</tbody></table></div>
<section id="blockers"><h2>Blockers</h2>${blockers.length ? table(["model", "open blockers (TODO.md)"], blockers.map((m) => [`<code>${esc(m.name, 120)}</code>`, `<ul>${m.blockers.map((b) => `<li>${esc(b, 300)}</li>`).join("")}</ul>`])) : "<p>No open blockers.</p>"}</section>
</main>`;
  return page("npu-block-gate: fleet status", body);
}

// src/fleet/status.ts
var STATUS_SCHEMA = "npu-block-gate/status";
var TREND_RUNS = 5;
var num = (x) => Number.isFinite(x) ? x : null;
function generationStatus(npu, rows) {
  const order = rows.map((r, i) => ({ r, i })).sort((a, b) => a.r.date < b.r.date ? -1 : a.r.date > b.r.date ? 1 : a.i - b.i).map((x) => x.r);
  const last = order[order.length - 1];
  const same = order.filter((r) => r.prompt === last.prompt).slice(-TREND_RUNS);
  const trend = same.map((r) => num(r.minCosine));
  const first = trend.find((x) => x !== null) ?? null;
  const end = trend[trend.length - 1];
  return {
    npu,
    outcome: last.outcome,
    date: last.date,
    commit: last.commit,
    prompt: last.prompt,
    cosine: num(last.cosine),
    min_cosine: num(last.minCosine),
    threshold: num(last.threshold),
    trend,
    change: same.length > 1 && first !== null && end !== null ? end - first : null,
    runs: rows.length
  };
}
function modelStatus(airRoot, name, prefix = "") {
  return modelStatusAt(join4(airRoot, LLMS, name), name, [prefix, LLMS, name].filter(Boolean).join("/"));
}
function modelStatusAt(dir, name, model) {
  const base = { name, model, phase2_done: null, phase2_checkbox: null, generations: [], blockers: [], problem: null };
  try {
    const docs = readDocs(dir);
    const todo = readTodo(docs.todo);
    const history = readHistory(docs.phase2, docs.phase2Path);
    const byNpu = /* @__PURE__ */ new Map();
    for (const h of history) byNpu.set(h.npu, [...byNpu.get(h.npu) ?? [], h]);
    const generations = [...byNpu].map(([npu, rows]) => generationStatus(npu, rows)).sort((a, b) => a.npu < b.npu ? -1 : a.npu > b.npu ? 1 : 0);
    const done = generations.length ? generations.every((g) => g.outcome === "PASS") : todo.phase2Done;
    return { ...base, phase2_done: done, phase2_checkbox: todo.phase2Done, blockers: todo.blockers, generations };
  } catch (e) {
    return { ...base, problem: oneLine(e) };
  }
}
function treeStatus(airRoot, names, prefix = "") {
  return names.map((n) => modelStatus(airRoot, n, prefix));
}
function statusJson(models) {
  return JSON.stringify({ schema: STATUS_SCHEMA, schema_version: 1, models }, null, 2) + "\n";
}
var ARROW = (d) => d === null ? "" : d > 1e-4 ? " \u2191" : d < -1e-4 ? " \u2193" : " \u2192";
function trendText(g) {
  const vals = g.trend.map((x) => x === null ? "n/a" : x.toFixed(4));
  return `${vals.join(" \u2192 ")}${ARROW(g.change)}${g.change !== null ? ` (${g.change >= 0 ? "+" : ""}${g.change.toFixed(4)})` : ""}`;
}
var VERDICT = { PASS: "\u2705 PASS", FAIL: "\u274C FAIL", ERROR: "\u26A0\uFE0F ERROR" };
function statusMarkdown(models) {
  const rows = [["model", "NPU", "last verdict", "when", "commit", "per-pos min (threshold)", `trend (last ${TREND_RUNS} runs)`, "Phase 2", "open blockers"]];
  const done = (m) => m.phase2_done === null ? "?" : m.phase2_done ? "[x]" : "[ ]";
  const blockers = (m) => m.blockers.length ? m.blockers.map((b) => cell(b, 200)).join("<br>") : "none";
  let recorded = 0;
  for (const m of models) {
    const name = code(m.name, { inTable: true, max: 64 });
    if (m.problem) {
      rows.push([name, "", "\u26A0\uFE0F unreadable", "", "", "", "", done(m), cell(m.problem, 300)]);
      continue;
    }
    if (!m.generations.length) {
      rows.push([name, "", "never recorded", "", "", "", "", done(m), blockers(m)]);
      continue;
    }
    recorded++;
    m.generations.forEach((g, i) => rows.push([
      i === 0 ? name : "",
      cell(generationName(g.npu), 40),
      VERDICT[g.outcome] ?? cell(g.outcome, 20),
      /^\d{4}-\d{2}-\d{2}$/.test(g.date) ? g.date : cell(g.date, 20),
      code(g.commit, { inTable: true, max: 16 }),
      `${g.min_cosine === null ? "n/a" : fmtCos(g.min_cosine)} (${g.threshold ?? "n/a"})`,
      trendText(g),
      i === 0 ? done(m) : "",
      i === 0 ? blockers(m) : ""
    ]));
  }
  const failing = models.filter((m) => m.generations.some((g) => g.outcome === "FAIL")).length;
  return [
    "## Phase 2 status",
    "",
    `${models.length} model dirs; ${recorded} with a recorded result; ${failing} failing on at least one NPU generation.`,
    "",
    markdownTable(rows),
    ""
  ].join("\n");
}
function writeFleetPage(out, models, source, note) {
  const path = resolve4(out);
  if (existsSync2(path) && statSync3(path).isDirectory()) throw new InputError("is a directory; --html takes the file to write", path);
  if (!existsSync2(dirname2(path)) || !statSync3(dirname2(path)).isDirectory()) throw new InputError("is not a directory; --html writes into an existing one", dirname2(path));
  commitWrites([{ path, data: Buffer.from(renderFleetHtml(models, { source, note }), "utf8") }]);
  return path;
}

export {
  findCheckout,
  modelCheckout,
  runPinned,
  LLMS,
  affected,
  matrixOf,
  checkoutOf,
  prefixOf,
  changedBetween,
  hasCommit,
  parseFileList,
  readFileList,
  airRootAt,
  modelNames,
  planFacts,
  planWithBase,
  expandMatrix,
  legModel,
  legRunner,
  parseLabels,
  matrixLimitNote,
  legCount,
  affectedJson,
  affectedTerminal,
  affectedMarkdown,
  TREND_RUNS,
  modelStatusAt,
  treeStatus,
  statusJson,
  statusMarkdown,
  writeFleetPage
};
