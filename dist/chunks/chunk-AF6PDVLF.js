import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  ITEMSIZE,
  KernelStore,
  SpecError,
  TENSOR_SPEC,
  TWINS_SPEC,
  any,
  bool,
  decodeInto,
  defaultCacheRoot,
  int,
  kernelCacheKey,
  list,
  nullable,
  num,
  obj,
  oneOf,
  openRunTensor,
  openTensor,
  optional,
  readProbeJson,
  readRegularFile,
  referenceRoot,
  runDirReal,
  runFile,
  storeReference,
  str,
  tensorPath,
  withDefault
} from "./chunk-HNFTTV67.js";
import {
  COMMAND,
  DOC_PATHS,
  ERROR_BUDGET_WARN,
  ERROR_MEASURE,
  EXPECTED_BUDGET_WARN,
  LENS_SCALE_WARN,
  MAX_ABS_REGRESSION,
  NORM_RATIO_WARN,
  TOOL,
  WHOLE_COSINE_MIN,
  acquireLock,
  askInterpreterEarly,
  baselineIn,
  blockArgs,
  cleanBar,
  documentedPlan,
  firstRunnable,
  fmtBudget,
  fmtCos,
  fmtRatio,
  fmtRun,
  fmtSci,
  formatThreshold,
  historyIn,
  installRoot,
  interpreterSaid,
  isDocsError,
  lockDocs,
  logDocs,
  modelArgs,
  modelDirAt,
  perPositionThreshold,
  planDocs,
  probeDir,
  processStart,
  readDocs,
  reportWrites,
  runDirUnwritable,
  runProbe,
  sweepDocs,
  wellBelow
} from "./chunk-AEVRNM6T.js";
import {
  BISECT_CONTRACT,
  BusyError,
  ChangedSinceRead,
  ENV_NAME,
  EXIT,
  GateError,
  InfraError,
  InputError,
  RUN_DIRS,
  RUN_FILES,
  allowed,
  chooseIsolation,
  commitWrites,
  describePython,
  fsError,
  isId,
  makeDirs,
  oneLine,
  outsideEnv,
  plain,
  programId,
  pythonCandidates,
  readDocument,
  realHost,
  writeAtomic
} from "./chunk-7HMQRJMS.js";

// src/check/probe.ts
import { spawnSync as spawnSync2 } from "node:child_process";
import { chmodSync as chmodSync2, existsSync as existsSync3, lstatSync as lstatSync4, readFileSync as readFileSync3, rmdirSync as rmdirSync2, statSync as statSync3, statfsSync } from "node:fs";
import { basename, dirname as dirname2, join as join5, resolve as resolve3 } from "node:path";

// src/probe/bytecode.ts
import { spawn } from "node:child_process";
import { accessSync, constants, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
function sourceStamp(root) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === "__pycache__") continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".py")) {
        const st = statSync(p);
        out.push(`${p} ${st.size} ${st.mtimeMs}`);
      }
    }
  };
  walk(root);
  return out.sort().join("\n");
}
var TAG = /^[a-z][a-z0-9_]*-\d+$/;
var stampPath = (pkg, tag) => join(pkg, "__pycache__", `.nbg-sources.${tag}`);
async function compileProbe(command, env, untrusted, answers, pkg = join(probeDir(), "npu_probe")) {
  try {
    const { path, run, said } = await interpreterSaid(command, env, untrusted, answers);
    if (!path || !run || run !== path) return { compiled: false, why: "the interpreter is not one this process runs (inside the tree, or reached through it)" };
    if (!programId(run)) return { compiled: false, why: "the interpreter is a wrapper, not a program (a shim)" };
    const tag = said.find((x) => typeof x === "object" && x !== null && "tag" in x)?.tag;
    if (typeof tag !== "string" || !TAG.test(tag)) return { compiled: false, why: "the interpreter named no bytecode cache tag" };
    try {
      accessSync(pkg, constants.W_OK);
    } catch {
      return { compiled: false, why: `${pkg} is not writable here` };
    }
    const stamp = sourceStamp(pkg);
    const file = stampPath(pkg, tag);
    let kept = null;
    try {
      kept = readFileSync(file, "utf8");
    } catch {
    }
    if (kept === stamp) return { compiled: false, why: "up to date" };
    const ok = await new Promise((done) => {
      let child;
      try {
        child = spawn(run, ["-I", "-m", "compileall", "-q", "-f", "--invalidation-mode", "checked-hash", pkg], { cwd: "/", env, stdio: "ignore", timeout: 12e4 });
      } catch {
        return done(false);
      }
      child.on("error", () => done(false));
      child.on("close", (code) => done(code === 0));
    });
    if (!ok) return { compiled: false, why: "compileall failed (a read-only install?)" };
    writeAtomic(file, stamp, { durable: false, follow: false });
    return { compiled: true, why: `compiled for ${tag}` };
  } catch (e) {
    return { compiled: false, why: e.message };
  }
}

// src/probe/staging.ts
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  closeSync,
  constants as constants2,
  copyFileSync,
  fstatSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync as readdirSync2,
  readFileSync as readFileSync2,
  readlinkSync,
  readSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync
} from "node:fs";
import { tmpdir } from "node:os";
import { join as join2, relative, resolve, sep } from "node:path";
var TAKE_MAX_BYTES = 2 * 1024 ** 3;
var MODEL_COPY_MAX_BYTES = 512 * 1024 ** 2;
var STAGING_PREFIX = "npu-block-gate-probe-";
var TAKEN_FILES = [RUN_FILES.probe, RUN_FILES.npu, RUN_FILES.ref, RUN_FILES.input, RUN_FILES.probeLog];
var within = (p, dir) => p === dir || p.startsWith(dir.endsWith(sep) ? dir : dir + sep);
function sizeOf(p, cap) {
  const st = lstatSync(p);
  if (!st.isDirectory()) return st.isFile() ? st.size : 0;
  let n = 0;
  for (const name of readdirSync2(p)) {
    if (name === ".git") continue;
    n += sizeOf(join2(p, name), cap - n);
    if (n > cap) break;
  }
  return n;
}
function copyEntry(s, d, st = lstatSync(s)) {
  if (st.isDirectory()) {
    mkdirSync(d, { mode: 493 });
    for (const name of readdirSync2(s)) if (name !== ".git") copyEntry(join2(s, name), join2(d, name));
  } else if (st.isFile()) copyFileSync(s, d);
  else if (st.isSymbolicLink()) symlinkSync(readlinkSync(s), d);
}
function shareTree(p, share, owner) {
  const st = lstatSync(p);
  if (share.how === "chown") lchownSync(p, owner.uid, owner.gid);
  else if (!st.isSymbolicLink()) {
    chownSync(p, -1, share.gid);
    chmodSync(p, st.mode & 511 | (st.isDirectory() ? 1528 : 432));
  }
  if (st.isDirectory()) for (const n of readdirSync2(p)) shareTree(join2(p, n), share, owner);
}
function copyOut(src, dest) {
  let fd;
  try {
    fd = openSync(src, constants2.O_RDONLY | constants2.O_NOFOLLOW | constants2.O_NONBLOCK);
  } catch (e) {
    const code = e.code;
    if (code === "ELOOP") return "a symlink (only regular files leave the sandbox)";
    if (code === "EACCES" || code === "EPERM") return "not readable";
    return `cannot be opened (${code ?? "error"})`;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return "not a regular file";
    if (st.size > TAKE_MAX_BYTES) return `over ${TAKE_MAX_BYTES / 1024 ** 3} GiB`;
    const tmp = `${dest}.nbg-take-${process.pid}`;
    const out = openSync(tmp, constants2.O_WRONLY | constants2.O_CREAT | constants2.O_TRUNC | constants2.O_NOFOLLOW, 420);
    let ok = false;
    try {
      const buf = Buffer.allocUnsafe(Math.min(8 << 20, Math.max(st.size, 1)));
      let left = st.size;
      while (left > 0) {
        const n = readSync(fd, buf, 0, Math.min(buf.length, left), null);
        if (n <= 0) break;
        let off = 0;
        while (off < n) off += writeSync(out, buf, off, n - off);
        left -= n;
      }
      ok = true;
    } finally {
      closeSync(out);
      if (!ok) try {
        unlinkSync(tmp);
      } catch {
      }
    }
    renameSync(tmp, dest);
    return null;
  } finally {
    closeSync(fd);
  }
}
var OWNER_FILE = "owner.json";
function sweepStaging(asProbe, base = tmpdir()) {
  const removed = [];
  let names;
  try {
    names = readdirSync2(base).filter((n) => n.startsWith(STAGING_PREFIX));
  } catch {
    return removed;
  }
  const me = process.getuid?.();
  for (const n of names) {
    const root = join2(base, n);
    let owner;
    try {
      const st = lstatSync(root);
      if (!st.isDirectory() || me !== 0 && st.uid !== me) continue;
      owner = JSON.parse(readFileSync2(join2(root, OWNER_FILE), "utf8"));
    } catch {
      continue;
    }
    if (typeof owner.pid !== "number") continue;
    const start = processStart(owner.pid);
    if (start !== null && start === owner.start) continue;
    if (Staging.left(root, asProbe).removeAll() === null) removed.push(root);
  }
  return removed;
}
function takeRunFiles(from, runDir, only) {
  const res = { files: [], refused: [] };
  const one = (rel) => {
    const src = join2(from, rel);
    let st;
    try {
      st = lstatSync(src);
    } catch {
      return;
    }
    if (st.isSymbolicLink()) {
      res.refused.push({ name: rel, why: "a symlink (only regular files leave the sandbox)" });
      return;
    }
    if (!st.isFile()) {
      res.refused.push({ name: rel, why: "not a regular file" });
      return;
    }
    const why = copyOut(src, join2(runDir, rel));
    if (why) res.refused.push({ name: rel, why });
    else res.files.push(rel);
  };
  try {
    for (const name of TAKEN_FILES) if (!only || only.top.includes(name)) one(name);
    if (!only || only.dirs) {
      for (const [dir, ours] of RUN_DIRS) {
        let st;
        try {
          st = lstatSync(join2(from, dir));
        } catch {
          continue;
        }
        if (!st.isDirectory()) {
          res.refused.push({ name: dir, why: "not a directory" });
          continue;
        }
        let names;
        try {
          names = readdirSync2(join2(from, dir)).filter((n) => ours.test(n)).sort();
        } catch {
          res.refused.push({ name: dir, why: "not readable" });
          continue;
        }
        if (!names.length) continue;
        mkdirSync(join2(runDir, dir), { recursive: true });
        for (const n of names) one(`${dir}/${n}`);
      }
    }
  } catch (e) {
    for (const f of res.files) try {
      unlinkSync(join2(runDir, f));
    } catch {
    }
    throw fsError(e, runDir, "cannot copy the probe's results into the run dir");
  }
  return res;
}
var live = /* @__PURE__ */ new Set();
var exitHooked = false;
var Staging = class _Staging {
  constructor(root, modelDir, copy, asProbe) {
    this.root = root;
    this.modelDir = modelDir;
    this.asProbe = asProbe;
    this.out = join2(root, "out");
    this.scratch = join2(root, "scratch");
    this.model = copy && modelDir ? join2(root, "model") : null;
  }
  root;
  modelDir;
  asProbe;
  out;
  scratch;
  /** The model dir's private copy (bound where the model dir is), or null (no sandbox: the model dir itself). */
  model;
  /** What the copy left out (a subdir over the budget is seen empty). */
  leftOut = [];
  removed = false;
  /** An area a run that is gone left behind (sweepStaging). */
  static left(root, asProbe) {
    return new _Staging(root, null, false, asProbe);
  }
  /**
   * A fresh staging area for one run. `iso` says whose the probe's files are: this process's own
   * (none, namespace as a non-root runner), another uid's made its owner (root: chown), or shared
   * through a group (sudo). The model dir is copied when the probe runs in a sandbox.
   */
  static create(o) {
    const sandboxed = o.iso.mode !== "none" && !!o.modelDir;
    const base = o.base ?? tmpdir();
    let root;
    try {
      root = mkdtempSync(join2(base, STAGING_PREFIX));
    } catch (e) {
      throw fsError(e, base, "cannot make the probe's staging dir");
    }
    const s = new _Staging(root, o.modelDir ? resolve(o.modelDir) : null, sandboxed, o.iso.asProbe ?? null);
    live.add(s);
    try {
      writeFileSync(join2(root, OWNER_FILE), JSON.stringify({ pid: process.pid, start: processStart(process.pid) }));
    } catch {
    }
    if (!exitHooked) {
      exitHooked = true;
      process.on("exit", () => {
        for (const l of live) l.remove();
      });
    }
    try {
      mkdirSync(s.out, { mode: 493 });
      mkdirSync(s.scratch, { mode: 448 });
      if (s.model) s.copyModel();
      const owner = o.iso.probeOwner;
      if (owner) {
        const share = o.iso.share;
        if (!share) throw new InfraError(`the probe user ${owner.user} shares no group with this user, so it could write no run dir; run \`npu-block-gate agent setup\` (it puts both in one group)`);
        if (share.how === "group") {
          chownSync(root, -1, share.gid);
          chmodSync(root, 1512);
        } else chmodSync(root, 457);
        for (const d of [s.out, s.scratch, ...s.model ? [s.model] : []]) shareTree(d, share, owner);
      } else chmodSync(root, 448);
    } catch (e) {
      s.remove();
      throw e instanceof InfraError ? e : fsError(e, root, "cannot prepare the probe's staging dir");
    }
    return s;
  }
  copyModel() {
    const src = this.modelDir;
    const dest = this.model;
    mkdirSync(dest, { mode: 493 });
    const entries = readdirSync2(src).filter((n) => n !== ".git").map((n) => ({ n, size: sizeOf(join2(src, n), MODEL_COPY_MAX_BYTES + 1) }));
    entries.sort((a, b) => a.size - b.size || (a.n < b.n ? -1 : 1));
    let budget = MODEL_COPY_MAX_BYTES;
    for (const { n, size } of entries) {
      const s = join2(src, n);
      const d = join2(dest, n);
      const st = lstatSync(s);
      if (size > budget) {
        this.leftOut.push(n);
        if (st.isDirectory()) mkdirSync(d, { mode: 493 });
        continue;
      }
      budget -= size;
      copyEntry(s, d, st);
    }
  }
  /** What the sandbox binds writable: the staging dirs at their paths, the model copy where the model dir is. */
  binds() {
    return { writable: [this.scratch, this.out], mounts: this.model ? [{ src: this.model, dest: this.modelDir }] : [] };
  }
  /** Where a path the probe sees under the model dir is on this host (in the copy); the path itself otherwise. */
  hostPath(p) {
    const abs = resolve(p);
    if (!this.model || !within(abs, this.modelDir)) return abs;
    return join2(this.model, relative(this.modelDir, abs));
  }
  /**
   * The one door: copies the run-dir contract's files from the probe's run dir into `runDir` (this
   * process's own): see takeRunFiles.
   */
  take(runDir, only) {
    return takeRunFiles(this.out, runDir, only);
  }
  /** Removes the whole area (through the probe user first, where its files are not this process's to
   * remove); the reason when something is left, else null. Idempotent. */
  remove() {
    if (this.removed) return null;
    return this.removeAll();
  }
  /** remove(), whether or not this process made the area (sweepStaging). */
  removeAll() {
    const gone = () => {
      try {
        lstatSync(this.root);
        return false;
      } catch {
        return true;
      }
    };
    const rm = () => {
      try {
        rmSync(this.root, { recursive: true, force: true });
      } catch {
      }
    };
    rm();
    if (!gone() && this.asProbe) {
      spawnSync(this.asProbe[0], [...this.asProbe.slice(1), "rm", "-rf", "--", this.out, this.scratch, join2(this.root, "model")], { stdio: "ignore", cwd: "/", timeout: 12e4 });
      rm();
    }
    if (!gone()) return `${this.root} could not be removed whole`;
    this.removed = true;
    live.delete(this);
    return null;
  }
};

// src/check/rundir.ts
import { existsSync, lstatSync as lstatSync2, readdirSync as readdirSync3, rmdirSync, rmSync as rmSync2, statSync as statSync2 } from "node:fs";
import { join as join3 } from "node:path";

// src/record/report.ts
var REPORT_SCHEMA = "npu-block-gate/report";
var REPORT_SCHEMA_VERSION = 1;

// src/check/rundir.ts
var RUN_ENTRIES = Object.values(RUN_FILES);
var RUN_LOCK = ".npu-block-gate-run.lock";
var isLockFile = (name) => name === RUN_LOCK || name === `${RUN_LOCK}.break`;
var RUN_WAIT_MS = 30 * 6e4;
var RUN_WAIT_PROGRESS_MS = 15e3;
function holderOf(o) {
  return o ? `pid ${o.pid} on ${o.host}, started ${o.since}` : "a run whose lock is not written yet";
}
async function holdRunDir(runDir, how, log, o = {}) {
  let made = false;
  if (how === "refuse" && !existsSync(runDir)) {
    try {
      made = makeDirs(runDir) !== void 0;
    } catch {
      return { release: () => void 0 };
    }
  }
  const path = join3(runDir, RUN_LOCK);
  const waitMs = o.waitMs ?? RUN_WAIT_MS;
  const progressMs = o.progressMs ?? RUN_WAIT_PROGRESS_MS;
  let holder = null;
  let started = 0;
  let said = 0;
  const lock = await acquireLock(path, {
    waiting: (who) => {
      holder = who;
      if (how === "refuse") throw new BusyError(`is in use by another run (${holderOf(who)}); wait for it to finish, or choose another --out`, runDir);
      started = said = Date.now();
      log.step(`run dir: waiting for ${runDir}: in use by another run (${holderOf(who)}), which is still writing it`);
    },
    broke: (who) => log.step(`run dir: removed a stale lock ${path} (${who ? `pid ${who.pid} on ${who.host} is no longer running` : "never written"})`),
    // The wait is bounded here (fs/lock's own deadline is past it), so the refusal names the holder.
    timeoutMs: waitMs + 6e4,
    pollMs: 100,
    sleep: async (ms) => {
      const now = Date.now();
      if (now - started > waitMs) throw new BusyError(`is still in use by another run (${holderOf(holder)}) after ${Math.round(waitMs / 1e3)}s of waiting; judge it when that run is done`, runDir);
      if (now - said >= progressMs) {
        said = now;
        log.step(`run dir: still waiting for ${runDir} (${Math.round((now - started) / 1e3)}s; ${holderOf(holder)})`);
      }
      await new Promise((r) => setTimeout(r, ms));
    }
  }).catch((e) => {
    if (made) try {
      rmdirSync(runDir);
    } catch {
    }
    throw e;
  });
  return {
    release: () => {
      lock?.release();
      if (made) try {
        rmdirSync(runDir);
      } catch {
      }
    }
  };
}
function removeOurs(dir, ours) {
  let names;
  try {
    if (!lstatSync2(dir).isDirectory()) return;
    names = readdirSync3(dir);
  } catch (e) {
    if (e.code === "ENOENT") return;
    throw fsError(e, dir, "cannot read what an earlier run left");
  }
  for (const n of names.filter((x) => ours.test(x))) {
    const p = join3(dir, n);
    try {
      if (!lstatSync2(p).isDirectory()) rmSync2(p, { force: true });
    } catch (e) {
      throw fsError(e, p, "cannot remove what an earlier run left");
    }
  }
  try {
    if (readdirSync3(dir).length === 0) rmSync2(dir, { recursive: true, force: true });
  } catch (e) {
    throw fsError(e, dir, "cannot remove what an earlier run left");
  }
}
function prepareRunDir(runDir, force) {
  let st;
  try {
    st = lstatSync2(runDir);
  } catch (e) {
    if (e.code !== "ENOENT") throw fsError(e, runDir, "cannot use as the run dir");
  }
  if (st && !st.isDirectory() && !(st.isSymbolicLink() && existsSync(runDir) && statSync2(runDir).isDirectory())) {
    throw new InputError("is an existing file, not a directory; the run dir (--out) must be a new or empty directory", runDir);
  }
  if (st) {
    let entries;
    try {
      entries = readdirSync3(runDir).filter((n) => !isLockFile(n));
    } catch (e) {
      throw fsError(e, runDir, "cannot read the run dir");
    }
    if (entries.length && force === false) {
      const isRun = entries.some((n) => n === RUN_FILES.probe || n === RUN_FILES.report || n === RUN_FILES.probeLog);
      throw new InputError(`${isRun ? "already holds a run" : "exists and is not empty"}; pass --force to replace ${isRun ? "it" : "the run files in it"}, or choose another --out`, runDir);
    }
    for (const name of RUN_ENTRIES) {
      const p = join3(runDir, name);
      try {
        if (lstatSync2(p, { throwIfNoEntry: false })?.isDirectory() === false) rmSync2(p, { force: true });
      } catch (e) {
        throw fsError(e, p, "cannot remove what an earlier run left");
      }
    }
    for (const [d, ours] of RUN_DIRS) removeOurs(join3(runDir, d), ours);
  }
  try {
    makeDirs(runDir);
  } catch (e) {
    throw fsError(e, runDir, "cannot create the run dir");
  }
}
function removeStaleReports(runDir) {
  const ours = existsSync(join3(runDir, RUN_FILES.probe)) || (() => {
    try {
      return JSON.parse(readDocument(join3(runDir, RUN_FILES.report))?.toString("utf8") ?? "{}").schema === REPORT_SCHEMA;
    } catch {
      return false;
    }
  })();
  const kept = [];
  if (!ours) return kept;
  for (const name of [RUN_FILES.report, RUN_FILES.markdown, RUN_FILES.html]) {
    const path = join3(runDir, name);
    let st;
    try {
      st = lstatSync2(path);
    } catch {
      continue;
    }
    if (st.isDirectory()) throw new InputError(`is a directory; the run dir's ${name} must be a file`, path);
    try {
      rmSync2(path, { force: true });
    } catch (e) {
      const code = e.code;
      if (code === "EROFS" || code === "EACCES" || code === "EPERM") kept.push(path);
      else throw fsError(e, path, "cannot remove the report of an earlier judge");
    }
  }
  return kept;
}

// src/check/kernels.ts
import { cpSync, existsSync as existsSync2, lstatSync as lstatSync3, mkdirSync as mkdirSync2, renameSync as renameSync2, rmSync as rmSync3 } from "node:fs";
import { dirname, isAbsolute, join as join4, relative as relative2, resolve as resolve2, sep as sep2 } from "node:path";
function kernelTarget(model, rel, hostOf = (p) => p) {
  if (!model.airRoot) return { refused: "the model dir is not inside an mlir-air tree (programming_examples/llms/<model>)" };
  if (isAbsolute(rel) || rel.split(/[\\/]/).includes("..")) return { refused: `kernel_cache.dir ${JSON.stringify(rel.slice(0, 200))} is not a relative path below the tree` };
  const target = resolve2(model.airRoot, rel);
  const inside = relative2(model.dir, target);
  if (!inside || inside.startsWith("..") || isAbsolute(inside)) return { refused: `kernel_cache.dir ${JSON.stringify(rel.slice(0, 200))} is not inside the model dir` };
  const hostDir = hostOf(model.dir);
  const hostTarget = join4(hostDir, inside);
  let at = hostDir;
  for (const part2 of inside.split(sep2)) {
    at = join4(at, part2);
    let st;
    try {
      st = lstatSync3(at);
    } catch {
      break;
    }
    if (st.isSymbolicLink()) return { refused: `${relative2(hostDir, at)} in the model dir is a symlink; the kernel cache is never restored through one` };
    if (at !== hostTarget && !st.isDirectory()) return { refused: `${relative2(hostDir, at)} in the model dir is not a directory` };
  }
  return { target, host: hostTarget };
}
var placeDirect = (staged, target) => {
  const tmp = `${target}.nbg-new-${process.pid}`;
  rmSync3(tmp, { recursive: true, force: true });
  mkdirSync2(dirname(target), { recursive: true });
  cpSync(staged, tmp, { recursive: true });
  rmSync3(target, { recursive: true, force: true });
  renameSync2(tmp, target);
};
var PLACE_SCRIPT = 'set -e; umask "$3"; mkdir -p -- "$(dirname -- "$1")"; rm -rf -- "$1.nbg-new"; cp -R -- "$2" "$1.nbg-new"; rm -rf -- "$1"; mv -- "$1.nbg-new" "$1"';
function restoreKernels(model, runDir, cacheRoot, log, place = placeDirect, hostOf) {
  const p = readProbeJson(runDir, false);
  if (p.emulate) {
    log.step("kernel cache: not used (emulated run: nothing compiles; the twins stand in for the ELFs)");
    return null;
  }
  const kc = p.kernel_cache;
  if (!kc?.dir) {
    log.step("kernel cache: not used (this model path keeps no prefill kernel cache dir)");
    return null;
  }
  const where = kernelTarget(model, kc.dir, hostOf);
  if ("refused" in where) {
    log.warn(`kernel cache: not used (${where.refused})`);
    return null;
  }
  const { key, files } = kernelCacheKey({
    airRoot: model.airRoot,
    modelDir: model.dir,
    config: p.model.config,
    seqLen: kc.seq_len ?? p.prompt.padded_len,
    cpuAttn: kc.cpu_attn ?? p.integration.cpu_attn,
    toolchain: kc.toolchain ?? null,
    compileCommand: kc.compile_command ?? null,
    inputs: kc.inputs ?? null
  });
  const store = new KernelStore(cacheRoot);
  const staged = store.stage(key, where.target, (why) => log.step(`kernel cache: entry ${key.slice(0, 12)} refused (${why}); kernels will compile`));
  let restored = null;
  if (staged) {
    try {
      place(staged.cache, where.target);
      restored = staged.meta;
    } catch (e) {
      log.warn(`kernel cache: hit ${key.slice(0, 12)} not restored (${oneLine(e)}); kernels will compile`);
    } finally {
      rmSync3(staged.dir, { recursive: true, force: true });
    }
  }
  log.step(restored ? `kernel cache: hit ${key.slice(0, 12)} (stored ${restored.created_at}${restored.compile_seconds ? `, saves about ${restored.compile_seconds.toFixed(1)}s of compile` : ""}) -> ${kc.dir}` : `kernel cache: miss ${key.slice(0, 12)} (${files} source files hashed); kernels will compile`);
  return { store, key, target: where.target, source: where.host, restored };
}
function recordKernels(runDir, c) {
  const p = readProbeJson(runDir);
  const kc = p.kernel_cache;
  const hit = !!c.restored && (kc.compiled ?? []).length === 0;
  const next = { ...p, kernel_cache: { ...kc, key: c.key, hit, seconds_saved: hit ? c.restored?.compile_seconds ?? null : null } };
  writeAtomic(join4(runDir, RUN_FILES.probe), JSON.stringify(next, null, 2) + "\n", false);
}
function storeKernels(c, p, now, log) {
  const compiled = p.kernel_cache.compiled ?? [];
  if (c.restored && compiled.length === 0) return;
  if (!existsSync2(c.source)) return;
  try {
    c.store.store(c.key, c.source, { model: p.model.name, created_at: now.toISOString(), compile_seconds: p.kernel_cache.compile_seconds ?? null });
    log.step(`kernel cache: stored ${c.key.slice(0, 12)} in ${c.store.root}`);
  } catch (e) {
    log.warn(`kernel cache: not stored (${e.code ? fsError(e, c.store.root, "cannot write").message : oneLine(e)})`);
  }
}

// src/check/probe.ts
var PYTHON_DIRS_ANSWERS = "python-dirs.json";
function cacheRootOf(plan) {
  return plan.cacheDir ?? defaultCacheRoot();
}
function checkCacheRoot(plan) {
  if (!plan.cache) return;
  const root = cacheRootOf(plan);
  const from = plan.cacheDir ? "--cache-dir" : process.env.NPU_BLOCK_GATE_CACHE_DIR ? "$NPU_BLOCK_GATE_CACHE_DIR" : "the kernel cache root";
  try {
    const st = statSync3(root);
    if (!st.isDirectory()) throw new InputError(`${from} is a file, not a directory; point it at a directory, or pass --no-cache`, root);
  } catch (e) {
    if (e instanceof GateError) throw e;
    if (e.code !== "ENOENT") throw fsError(e, root, `cannot use ${from}`);
  }
}
function diskFull(e, runDir) {
  const msg = oneLine(e);
  let free = Infinity;
  try {
    const fs = statfsSync(runDir);
    free = fs.bavail * fs.bsize;
  } catch {
  }
  const said = /No space left|ENOSPC|requested and \d+ written|disk full/i.test(msg);
  const likely = free < 64 * 1024 && !(e instanceof GateError && e.exitCode === EXIT.input) && !/timed out|timeout|interrupt|signal/i.test(msg);
  if (said || likely) return new InfraError(`disk full: the probe could not write the run dir (${msg})`, runDir);
  return null;
}
function modelOptions(plan, modelDir) {
  return { modelDir, promptStyle: plan.promptStyle, prompt: plan.prompt, model: plan.model ?? null, cpuAttn: plan.cpuAttn ?? null, online: plan.online };
}
function runOptions(plan) {
  const args = [];
  if (plan.positions !== void 0 && plan.positions !== null) args.push("--positions", String(plan.positions));
  if (plan.emulate) args.push("--emulate");
  if (plan.emulate && plan.inject) args.push(`--inject=${plan.inject}`);
  if (plan.emulate && plan.twinEps) args.push(`--twin-eps=${plan.twinEps}`);
  if (plan.twinPrecision) args.push(`--twin-precision=${plan.twinPrecision}`);
  if (plan.boundaries === false) args.push("--no-boundaries");
  if (plan.layers) args.push("--layers");
  return args;
}
function closeGitDirs(dir) {
  const uid = process.getuid?.();
  const close = (d) => {
    try {
      const st = lstatSync4(d);
      if (st.isDirectory() && st.uid === uid && st.mode & 63) chmodSync2(d, st.mode & 4032);
    } catch {
    }
  };
  for (let up = resolve3(dir); ; up = dirname2(up)) {
    const g = join5(up, ".git");
    let st;
    try {
      st = lstatSync4(g);
    } catch {
      st = null;
    }
    if (st?.isDirectory()) return close(g);
    if (st?.isFile()) {
      const m = /^gitdir:\s*(.+)$/m.exec(readFileSync3(g, "utf8"));
      if (!m) return;
      const real = resolve3(up, m[1].trim());
      close(real);
      try {
        close(resolve3(real, readFileSync3(join5(real, "commondir"), "utf8").trim()));
      } catch {
      }
      return;
    }
    if (up === "/") return;
  }
}
function refCacheRoot(plan) {
  if (!plan.cache || process.env.NPU_BLOCK_GATE_REF_CACHE?.trim().toLowerCase() === "none") return null;
  return referenceRoot(cacheRootOf(plan));
}
function knobsFor(ev, plan, log) {
  const names = (Array.isArray(ev.names) ? ev.names : []).filter((n) => typeof n === "string" && ENV_NAME.test(n));
  const admin = plan.probeEnvNames ?? [];
  const set = names.filter((n) => process.env[n] !== void 0 && !allowed(n, { names: admin }));
  if (!set.length) return { pass: [], env: {} };
  if (plan.isolation?.untrusted) {
    log.step(`probe env: the tree's knobs ${set.join(", ")} are set here but not passed to an untrusted run (list them in probe-env to pass them)`);
    return { pass: [], env: {} };
  }
  const pass = set.filter((n) => allowed(n, { knobs: set }));
  const held = set.filter((n) => !pass.includes(n));
  if (held.length) log.step(`probe env: the tree's knobs ${held.join(", ")} look like credentials and are not passed (list them in probe-env to pass them)`);
  return { pass, env: Object.fromEntries(pass.map((n) => [n, process.env[n]])) };
}
function sandboxedPlacer(iso, staging) {
  if (iso.mode === "none") return placeDirect;
  return (staged, target) => {
    const sh = ["/bin/sh", "-c", PLACE_SCRIPT, "sh", target, staged, iso.mode === "uid" ? "002" : "022"];
    const env = { PATH: "/usr/bin:/bin" };
    const argv = iso.wrap(sh, { ...staging.binds(), readable: [staged], env: process.env, probeEnv: env, network: false, cwd: staging.out });
    const r = spawnSync2(argv[0], argv.slice(1), { env, cwd: staging.out, encoding: "utf8", stdio: ["ignore", "ignore", "pipe"], timeout: 6e5 });
    if (r.status !== 0) throw new InfraError(`the copy into ${target} failed: ${oneLine(r.stderr?.trim().split("\n").pop() || r.error?.message || `exit ${r.status}`)}`);
  };
}
function probeUnfinished(runDir) {
  let text2;
  try {
    text2 = readFileSync3(join5(runDir, RUN_FILES.probe), "utf8");
  } catch (e) {
    return e.code === "ENOENT" ? `wrote no ${RUN_FILES.probe}` : null;
  }
  try {
    const stage = JSON.parse(text2).stage;
    return stage === "config" ? `${RUN_FILES.probe} is still at stage config (block 0 never finished)` : null;
  } catch {
    return null;
  }
}
function takeResults(staging, runDir, log, only) {
  const t = staging.take(runDir, only);
  for (const r of t.refused) log.warn(`probe result ${r.name} left in the sandbox: ${r.why}`);
}
async function probe(plan, log, host = realHost) {
  if (!plan.modelDir) throw new InputError("a model dir is required to run the probe (--model-dir)");
  const model = modelDirAt(plan.modelDir);
  const runDir = resolve3(plan.runDir);
  checkCacheRoot(plan);
  const request = plan.isolation ?? { mode: "auto", untrusted: false, allowUnisolated: false };
  const refRoot = refCacheRoot(plan);
  const readable = [...model.airRoot ? [model.airRoot] : [model.dir], ...refRoot && existsSync3(refRoot) ? [refRoot] : []];
  const fresh = !existsSync3(runDir);
  prepareRunDir(runDir, plan.force);
  const candidates = pythonCandidates(plan.python, process.env, { airRoot: model.airRoot, modelDir: model.dir });
  const envAllow = { names: plan.probeEnvNames ?? [] };
  const answers = join5(cacheRootOf(plan), PYTHON_DIRS_ANSWERS);
  const untrusted = { writable: [runDir], readable: [...readable, model.dir], envAllow, answers };
  const pyDirs = request.mode !== "none" ? await askInterpreterEarly(candidates, untrusted) : [];
  const first = firstRunnable(candidates, untrusted);
  const bytecode = first ? compileProbe(first.command, first.env, first.untrusted, answers) : Promise.resolve(null);
  let iso;
  let staging;
  try {
    iso = chooseIsolation(request, host, { writable: [], readable: [...readable, ...pyDirs, installRoot()], env: process.env, network: !!plan.online, cwd: "/" });
    staging = Staging.create({ modelDir: model.dir, iso });
  } catch (e) {
    if (fresh) try {
      rmdirSync2(runDir);
    } catch {
    }
    throw e;
  }
  const release = (l = log) => {
    const left = staging.remove();
    if (left) l.warn(`the probe's staging dir was not removed: ${left}`);
  };
  for (const d of sweepStaging(iso.asProbe ?? null)) log.step(`removed ${d}: the staging area of a run that was killed`);
  if (staging.leftOut.length) log.step(`model dir: the probe sees a private copy; left out of it (over ${MODEL_COPY_MAX_BYTES / 1024 ** 2} MiB, seen empty): ${staging.leftOut.join(", ")}`);
  if (iso.mode === "uid") closeGitDirs(model.dir);
  let kernels = null;
  let knobs = [];
  log.step(`probe: block 0 of ${basename(model.dir)}${plan.emulate ? " on the emulated NPU (CPU twins of its ELFs; no NPU runs)" : ""} -> ${runDir}`);
  log.step(`isolation: ${iso.detail}`);
  if (iso.degraded) log.warn(`isolation degraded: ${iso.degraded}`);
  const binds = staging.binds();
  const compiled = await bytecode;
  if (compiled?.compiled) log.step(`probe: its own package ${compiled.why}`);
  let python;
  try {
    ({ python } = await runProbe(candidates, {
      subcommand: "check",
      args: [...blockArgs(modelOptions(plan, model.dir), staging.out), "--events", ...runOptions(plan), "--ref-cache", refRoot ?? "none"],
      runDir,
      cwd: staging.out,
      timeoutSec: plan.timeoutSec,
      extraEnv: { ...iso.mode === "uid" ? { NPU_BLOCK_GATE_UMASK: "002" } : {}, TMPDIR: staging.scratch, ...plan.probeEnv },
      envAllow,
      // Readable inside the sandbox: the tree, and the reference cache (read only, wherever it lives).
      isolation: iso,
      ...binds,
      network: !!plan.online,
      readable,
      answers
    }, {
      onLine: (line) => log.step(`probe: ${line}`),
      onPython: (p) => log.step(`python: ${describePython(p)}`),
      onSkip: (c, why) => log.step(`python: passed over ${c.command}${c.why ? ` (${c.why})` : ""}: ${why}`),
      onEvent: (ev) => {
        if (ev.event === "knobs") {
          const k = knobsFor(ev, plan, log);
          knobs = k.pass;
          if (knobs.length) log.step(`probe env: the tree's knobs ${knobs.join(", ")} passed`);
          return { env: k.env };
        }
        if (ev.event !== "config") return;
        takeResults(staging, runDir, log, { top: [RUN_FILES.probe], dirs: false });
        kernels = plan.cache ? restoreKernels(model, runDir, cacheRootOf(plan), log, sandboxedPlacer(iso, staging), (p) => staging.hostPath(p)) : null;
        return { reuse_kernels: !!kernels?.restored };
      }
    }));
  } catch (e) {
    try {
      takeResults(staging, runDir, log);
    } catch {
    }
    release();
    throw diskFull(e, runDir) ?? e;
  }
  try {
    takeResults(staging, runDir, log);
  } catch (e) {
    release();
    throw e;
  }
  const unfinished = probeUnfinished(runDir);
  if (unfinished) {
    release();
    throw new InfraError(`probe check (${python.executable}) exited 0 but ${unfinished}: the probe, or the model code it ran, ended the process early (os._exit, sys.exit in the block?); log: ${join5(runDir, RUN_FILES.probeLog)}`, runDir);
  }
  if (kernels) recordKernels(runDir, kernels);
  const fellBack = iso.mode === "none" && request.mode !== "none" ? (iso.unavailable ?? []).join("; ") || "no isolation was available" : null;
  return {
    runDir,
    model,
    python,
    unisolatedFallback: fellBack,
    kernels,
    sandbox: iso,
    knobs,
    staging,
    release,
    isolation: { mode: iso.mode, detail: iso.detail, source: "this run", ...iso.degraded ? { degraded: iso.degraded } : {} }
  };
}
async function planModel(plan, json, log) {
  if (plan.hfConfig !== void 0) return planHfConfig(plan, plan.hfConfig, json, log);
  if (!plan.modelDir) throw new InputError("plan needs --model-dir DIR");
  const model = modelDirAt(plan.modelDir);
  const outside = [model.dir, ...model.airRoot ? [model.airRoot] : []];
  const r = await runProbe(pythonCandidates(plan.python, process.env, { airRoot: model.airRoot, modelDir: model.dir, outside }), {
    subcommand: "plan",
    args: [...modelArgs(modelOptions(plan, model.dir)), ...json ? ["--json"] : [], ...plan.sanity ? ["--sanity"] : []],
    runDir: null,
    timeoutSec: plan.timeoutSec,
    extraEnv: { ...outsideEnv(process.env, outside), ...plan.probeEnv },
    envAllow: { names: plan.probeEnvNames ?? [] }
  }, { onLine: () => void 0, onSkip: (c, why) => log?.step(`python: passed over ${c.command}${c.why ? ` (${c.why})` : ""}: ${why}`) });
  log?.step(`python: ${r.python.command} (from ${r.python.why ?? r.python.source})`);
  return r.stdout;
}
async function planHfConfig(plan, source, json, log) {
  const arg = existsSync3(source) ? resolve3(source) : source;
  const r = await runProbe(pythonCandidates(plan.python, process.env, {}), {
    subcommand: "plan",
    args: ["--hf-config", arg, ...json ? ["--json"] : []],
    runDir: null,
    timeoutSec: plan.timeoutSec,
    extraEnv: plan.probeEnv,
    envAllow: { names: plan.probeEnvNames ?? [] }
  }, { onLine: () => void 0, onSkip: (c, why) => log?.step(`python: passed over ${c.command}${c.why ? ` (${c.why})` : ""}: ${why}`) });
  return r.stdout;
}
async function bisectStep(plan, probed, runDir, log) {
  log.step("bisect: swapping kernels to their CPU equivalents (the model's hook, or the CPU twins of its ELFs)");
  const m = probed.model;
  const staging = probed.staging;
  try {
    await runProbe([{ command: probed.python.command, source: probed.python.source }], {
      subcommand: "bisect",
      args: ["--run-dir", staging.out, ...plan.twinPrecision ? [`--twin-precision=${plan.twinPrecision}`] : []],
      runDir,
      cwd: staging.out,
      timeoutSec: plan.timeoutSec,
      extraEnv: { ...probed.sandbox.mode === "uid" ? { NPU_BLOCK_GATE_UMASK: "002" } : {}, TMPDIR: staging.scratch, ...plan.probeEnv },
      envAllow: { names: plan.probeEnvNames ?? [], knobs: probed.knobs },
      isolation: probed.sandbox,
      ...staging.binds(),
      network: !!plan.online,
      readable: m.airRoot ? [m.airRoot] : [m.dir]
    }, { onLine: (line) => log.step(`probe: ${line}`) });
    return null;
  } catch (e) {
    log.warn(`bisect did not finish: ${oneLine(e)}`);
    return oneLine(e);
  } finally {
    try {
      takeResults(staging, runDir, log, { top: [], dirs: true });
    } catch (e) {
      log.warn(`bisect results not taken: ${oneLine(e)}`);
    }
  }
}

// src/check/index.ts
import { basename as basename2, isAbsolute as isAbsolute2, join as join9, resolve as resolve4 } from "node:path";
import { existsSync as existsSync5 } from "node:fs";

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
function createAccumulator(cols, realLen, npuRows, narrow = false) {
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
    narrow,
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
var NARROW_LANES = 16;
var NARROW_TINY = 2 ** -96;
var NARROW_BLOCK = 256;
var part = new Float64Array(7 * NARROW_LANES);
var lane = new Float64Array(7 * NARROW_LANES);
function narrowRow(npu, ref, o, cols, out) {
  const f = Math.fround;
  const floor = REL_FLOOR;
  lane.fill(0);
  let mA = 0;
  let mR = 0;
  for (let c0 = 0; c0 < cols; c0 += NARROW_BLOCK) {
    part.fill(0);
    const end = Math.min(cols, c0 + NARROW_BLOCK);
    for (let c = c0; c < end; c += NARROW_LANES) {
      for (let k = 0; k < NARROW_LANES; k++) {
        const inRow = c + k < end;
        const a = inRow ? npu[o + c + k] : 0;
        const b = inRow ? ref[o + c + k] : 0;
        const d = f(a - b);
        const ad = Math.abs(d);
        const ab = Math.abs(b);
        const rel = f(ad / (ab > floor ? ab : floor));
        part[k] = f(part[k] + f(a * b));
        part[16 + k] = f(part[16 + k] + f(a * a));
        part[32 + k] = f(part[32 + k] + f(b * b));
        part[48 + k] = f(part[48 + k] + ad);
        part[64 + k] = f(part[64 + k] + ab);
        part[80 + k] = f(part[80 + k] + f(d * d));
        part[96 + k] = f(part[96 + k] + rel);
        if (ad > mA) mA = ad;
        if (rel > mR) mR = rel;
      }
    }
    for (let i = 0; i < 7 * NARROW_LANES; i++) lane[i] += part[i];
  }
  for (let s = 0; s < 7; s++) {
    const l = s * NARROW_LANES;
    out[s] = lane[l] + lane[l + 1] + (lane[l + 2] + lane[l + 3]) + (lane[l + 4] + lane[l + 5] + (lane[l + 6] + lane[l + 7])) + (lane[l + 8] + lane[l + 9] + (lane[l + 10] + lane[l + 11]) + (lane[l + 12] + lane[l + 13] + (lane[l + 14] + lane[l + 15])));
  }
  out[7] = mA;
  out[8] = mR;
}
var narrowOut = new Float64Array(9);
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
      if (r < real && acc.narrow) {
        narrowRow(npu, ref, o, cols, narrowOut);
        const t = narrowOut[0] + narrowOut[1] + narrowOut[2] + narrowOut[3] + narrowOut[4] + narrowOut[5] + narrowOut[6];
        if (t - t === 0 && narrowOut[1] >= NARROW_TINY && narrowOut[2] >= NARROW_TINY) {
          rowDot[row] = narrowOut[0];
          rowA2[row] = narrowOut[1];
          rowB2[row] = narrowOut[2];
          sAB += narrowOut[0];
          sA2 += narrowOut[1];
          sB2 += narrowOut[2];
          sAbs += narrowOut[3];
          sAbsRef += narrowOut[4];
          sSq += narrowOut[5];
          sRel += narrowOut[6];
          if (narrowOut[7] > maxAbs || narrowOut[7] !== narrowOut[7]) maxAbs = narrowOut[7];
          if (narrowOut[8] > maxRel || narrowOut[8] !== narrowOut[8]) maxRel = narrowOut[8];
          continue;
        }
      }
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

// src/metrics/summary.ts
function nonFiniteTotal(nf) {
  return nf.nan.count + nf.posInf.count + nf.negInf.count;
}
function lowestCosine(c) {
  return Math.min(c.wholeCosine, c.perPositionMin);
}
function comparisonOf(m) {
  const pp = m.perPosition;
  const e = m.errors;
  return {
    rows: m.realLen,
    cols: m.cols,
    wholeCosine: m.wholeCosine,
    perPositionMin: pp.min,
    p5: pp.p5,
    median: pp.median,
    maxAbs: e.maxAbs,
    maxRel: e.maxRel,
    sqnrDb: e.sqnrDb,
    normRatio: e.normRatio,
    nonFinite: nonFiniteTotal(m.nonFinite)
  };
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
function rowCosines(acc) {
  const cosines = new Array(acc.realLen);
  for (let i = 0; i < acc.realLen; i++) cosines[i] = rowCosine(acc.rowDot[i], acc.rowA2[i], acc.rowB2[i]);
  return cosines;
}
function sqnrDb(sums) {
  return 10 * Math.log10(sums[SUM.b2] / sums[SUM.sqErr]);
}
function normRatio(sums) {
  return sums[SUM.b2] === 0 ? NaN : Math.sqrt(sums[SUM.a2]) / Math.sqrt(sums[SUM.b2]);
}
function finalizeComparison(acc) {
  const { sums } = acc;
  const s = summarize(rowCosines(acc));
  const nf = acc.nonFinite;
  return {
    rows: acc.realLen,
    cols: acc.cols,
    wholeCosine: rowCosine(sums[SUM.ab], sums[SUM.a2], sums[SUM.b2]),
    perPositionMin: s.min,
    p5: s.p5,
    median: s.median,
    maxAbs: sums[SUM.maxAbs],
    maxRel: sums[SUM.maxRel],
    sqnrDb: sqnrDb(sums),
    normRatio: normRatio(sums),
    nonFinite: nonFiniteTotal({ nan: firstOf(nf, NF.nan), posInf: firstOf(nf, NF.posInf), negInf: firstOf(nf, NF.negInf), rowsScanned: acc.rowsScanned })
  };
}
function finalize(acc, opts) {
  const { realLen, cols, sums } = acc;
  const cosines = rowCosines(acc);
  const rowNormRatios = new Array(realLen);
  const zeroRows = [];
  for (let i = 0; i < realLen; i++) {
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
      sqnrDb: sqnrDb(sums),
      normRatio: normRatio(sums),
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
import { existsSync as existsSync4 } from "node:fs";
import { createRequire } from "node:module";
import { dirname as dirname3, join as join6 } from "node:path";
import { fileURLToPath } from "node:url";
var NATIVE_PATH_ENV = "NPU_BLOCK_GATE_NATIVE";
var NATIVE_THREADS_ENV = "NPU_BLOCK_GATE_THREADS";
var NATIVE_ABI = 2;
var ADDON = "npu_block_gate.node";
var PREBUILT = `npu_block_gate-${process.platform}-${process.arch}.node`;
var DTYPE_CODE = { f32: 0, f16: 1, bf16: 2 };
var SYNC_MAX_ELEMENTS = 1 << 19;
function nativeCandidates(from = dirname3(fileURLToPath(import.meta.url)), env = process.env) {
  const explicit = env[NATIVE_PATH_ENV]?.trim();
  if (explicit) return [explicit];
  const dirs = [];
  for (let dir = from; ; ) {
    dirs.push(dir);
    if (existsSync4(join6(dir, "package.json"))) break;
    const up = dirname3(dir);
    if (up === dir) break;
    dir = up;
  }
  const built = dirs.map((d) => join6(d, "native", "build", "Release", ADDON));
  const prebuilt = process.platform === "linux" && process.arch === "x64" ? dirs.flatMap((d) => [join6(d, "dist", "native", PREBUILT), join6(d, "native", PREBUILT)]) : [];
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
    ...typeof addon.refRows === "function" && {
      refRows: (bytes, dtype, cols, count, finiteOnly, out) => addon.refRows(bytes, DTYPE_CODE[dtype], cols, count, finiteOnly, out)
    },
    ...scanFiles && {
      async scanFiles(acc, npu, ref) {
        const { rowDot, rowA2, rowB2, sums, nonFinite, cols, npuRows, realLen } = acc;
        const sync = npuRows * cols <= SYNC_MAX_ELEMENTS;
        await scanFiles(rowDot, rowA2, rowB2, sums, nonFinite, npu.fd, npu.offset, DTYPE_CODE[npu.dtype], ref.fd, ref.offset, DTYPE_CODE[ref.dtype], cols, npuRows, realLen, sync ? 1 : threads, sync, acc.narrow);
        acc.rowsScanned = npuRows;
      }
    },
    scanBlock(acc, npu, ref, start, count) {
      const real = realRows(acc, start, count);
      addon.scan(true, acc.rowDot, acc.rowA2, acc.rowB2, acc.sums, acc.nonFinite, npu, 0, ref, 0, acc.cols, start, count, real, threads, acc.narrow);
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
        threads,
        acc.narrow
      );
      acc.rowsScanned = start + count;
    }
  };
}
function tryLoadNative(candidates, env = process.env) {
  const require2 = createRequire(import.meta.url);
  const problems = [];
  for (const path of candidates) {
    if (!existsSync4(path)) continue;
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
function loadNativeKernel(env = process.env, warn = (line) => process.stderr.write(`${line}
`)) {
  if (!loaded) {
    loaded = tryLoadNative(nativeCandidates(void 0, env), env);
    const want = (env[ENGINE_ENV] ?? "").trim().toLowerCase();
    if (!loaded.kernel && want !== "js") warn(warningLine(loaded.reason));
  }
  return loaded.kernel;
}
registerNativeKernel(() => loadNativeKernel());

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
  const acc = await scanPair(npu, ref, opts.realLen, kernel);
  return finalize(acc, { threshold: opts.threshold, worstK: opts.worstK, engine: kernel.name });
}
async function compareSummary(npu, ref, opts = {}, kernel = selectEngine()) {
  return finalizeComparison(await scanPair(npu, ref, opts.realLen, kernel));
}
async function scanPair(npu, ref, realLenOpt, kernel) {
  const realLen = validatePair(npu, ref, realLenOpt);
  const acc = createAccumulator(npu.cols, realLen, npu.rows, npu.dtype !== "f32" && ref.dtype !== "f32");
  const files = kernel.scanFiles ? [npu.rawFile?.(), ref.rawFile?.()] : [];
  if (kernel.scanFiles && files[0] && files[1]) {
    try {
      await kernel.scanFiles(acc, files[0], files[1]);
    } catch (err) {
      const msg = oneLine(err);
      if (msg.startsWith("ref: ")) throw new InputError(msg.slice(5), ref.path);
      throw new InputError(msg.replace(/^npu: /, ""), npu.path);
    }
    return acc;
  }
  if (kernel.scanRawBlock) {
    await scanRaw(kernel, acc, npu, ref);
    return acc;
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
  return acc;
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

// src/gates/evaluate.ts
function gate(id, name, ok, value, bar, detail) {
  return { id, name, status: ok ? "pass" : "fail", passed: ok, value, bar, detail };
}
function g1Holds(wholeCosine, th) {
  return wholeCosine >= th.whole;
}
function g2Holds(perPositionMin, th) {
  return perPositionMin >= th.perPosition;
}
function g3Holds(nonFinite) {
  return nonFinite === 0;
}
function passesGates(c, th) {
  return g1Holds(c.wholeCosine, th) && g2Holds(c.perPositionMin, th) && g3Holds(c.nonFinite);
}
function metricGates(m, th) {
  const pp = m.perPosition;
  const g1 = gate(
    "G1",
    "whole-tensor cosine",
    g1Holds(m.wholeCosine, th),
    m.wholeCosine,
    `>= ${th.whole}`,
    `over ${m.realLen} real rows x ${m.cols}`
  );
  const runs = pp.badRuns.map((r) => fmtRun(r.start, r.end)).join(", ");
  const g2detail = Number.isNaN(pp.min) ? "per-position cosine is NaN for at least one real row" : pp.badRuns.length > 0 ? `rows under ${formatThreshold(th.perPosition)}: ${runs}` : `all ${m.realLen} real rows >= ${formatThreshold(th.perPosition)}`;
  const g2 = gate(
    "G2",
    `per-position min cosine (head_dim ${th.headDim})`,
    g2Holds(pp.min, th),
    pp.min,
    `>= ${formatThreshold(th.perPosition)}${th.overridden ? " (override)" : ""}`,
    g2detail
  );
  const nf = m.nonFinite;
  const bad = nonFiniteTotal(nf);
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
    g3Holds(bad),
    bad,
    "= 0",
    bad === 0 ? `all ${nf.rowsScanned} rows finite, padded rows included` : parts.join("; ")
  );
  return [g1, g2, g3];
}
function documentationGate(d) {
  if (d.failed) {
    return { id: "G4", name: "result documented", status: "skip", passed: true, value: null, bar: "phase2_block.md written", detail: `not written: ${d.failed.message}` };
  }
  if (d.refused !== void 0) {
    return { id: "G4", name: "result documented", status: "skip", passed: true, value: null, bar: "phase2_block.md written", detail: `not recorded: ${d.refused}` };
  }
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

// src/gates/reference.ts
var BLOCK_BYTES = 1 << 20;
var BITS = {
  f32: { exp: 2139095040, mant: 8388607, sign: 2147483648 | 0 },
  f16: { exp: 31744, mant: 1023, sign: 32768 },
  bf16: { exp: 32640, mant: 127, sign: 32768 }
};
function referenceFault(ref, realLen, finiteOnly = false, kernel = selectEngine()) {
  const rows = Math.min(realLen, ref.rows);
  const scan = { zeroRows: 0, firstZero: -1 };
  const fault = faultInBits(ref, rows, finiteOnly, scan, kernel) ?? faultInFloats(ref, rows, finiteOnly, scan);
  if (fault) return fault;
  if (scan.zeroRows === rows) return `every one of the reference's ${rows} real rows is all zero`;
  if (scan.zeroRows > 0) return `${scan.zeroRows} of the reference's real rows ${scan.zeroRows === 1 ? "is" : "are"} all zero (first: row ${scan.firstZero})`;
  return null;
}
function nonFiniteText(row, c, what) {
  return `row ${row}, column ${c} of the reference is ${what} (a real token)`;
}
function constantText(row, cols, first) {
  return `row ${row} of the reference is constant (every one of its ${cols} values is ${first}) on a real token`;
}
function faultInBits(ref, rows, finiteOnly, scan, kernel) {
  if (!ref.readRawRows) return null;
  const { cols, dtype } = ref;
  const item = ITEMSIZE[dtype];
  const per = Math.max(1, Math.floor(BLOCK_BYTES / (cols * item)));
  const buf = new Uint8Array(Math.min(per, rows) * cols * item);
  const { exp, mant, sign } = BITS[dtype];
  const magnitude = ~sign;
  const out = new Float64Array(6);
  for (let start = 0; start < rows; start += per) {
    const count = Math.min(per, rows - start);
    const raw = ref.readRawRows(start, count, buf);
    if (!raw) {
      scan.zeroRows = 0;
      scan.firstZero = -1;
      return null;
    }
    let bytes = raw.bytes;
    if (bytes.byteOffset % item !== 0) {
      buf.set(bytes);
      bytes = buf.subarray(0, bytes.length);
    }
    if (kernel.refRows) {
      kernel.refRows(bytes, dtype, cols, count, finiteOnly, out);
      if (out[4] > 0) {
        if (scan.firstZero < 0) scan.firstZero = start + out[5];
        scan.zeroRows += out[4];
      }
      if (out[0] === 1) return nonFiniteText(start + out[1], out[2], ["NaN", "+Inf", "-Inf"][out[3]]);
      if (out[0] === 2) {
        const o = out[1] * cols;
        const one = new Float32Array(1);
        decodeInto(bytes.subarray(o * item, (o + 1) * item), dtype, "le", one, 0, 1);
        return constantText(start + out[1], cols, one[0]);
      }
      continue;
    }
    const v = item === 4 ? new Int32Array(bytes.buffer, bytes.byteOffset, count * cols) : new Uint16Array(bytes.buffer, bytes.byteOffset, count * cols);
    for (let r = 0; r < count; r++) {
      const o = r * cols;
      const row = start + r;
      const first = v[o];
      const firstZero = (first & magnitude) === 0;
      let constant = true;
      let zero = true;
      let c = 0;
      for (; c < cols && (constant || zero); c++) {
        const x = v[o + c];
        if ((x & exp) === exp) break;
        const isZero = (x & magnitude) === 0;
        if (x !== first && !(isZero && firstZero)) constant = false;
        if (!isZero) zero = false;
      }
      for (; c < cols; c++) {
        const x = v[o + c];
        if ((x & exp) === exp) return nonFiniteText(row, c, (x & mant) !== 0 ? "NaN" : (x & sign) !== 0 ? "-Inf" : "+Inf");
      }
      if (finiteOnly) continue;
      if (zero) {
        scan.zeroRows++;
        if (scan.firstZero < 0) scan.firstZero = row;
      } else if (constant && cols > 1) {
        const one = new Float32Array(1);
        decodeInto(bytes.subarray(o * item, (o + 1) * item), dtype, "le", one, 0, 1);
        return constantText(row, cols, one[0]);
      }
    }
  }
  return "";
}
function faultInFloats(ref, rows, finiteOnly, scan) {
  const cols = ref.cols;
  const per = Math.max(1, Math.floor(BLOCK_BYTES / (cols * 4)));
  for (let start = 0; start < rows; start += per) {
    const count = Math.min(per, rows - start);
    const block = ref.readRows(start, count);
    for (let r = 0; r < count; r++) {
      const o = r * cols;
      const row = start + r;
      const first = block[o];
      let constant = true;
      let zero = true;
      for (let c = 0; c < cols; c++) {
        const v = block[o + c];
        if (!(v - v === 0)) return nonFiniteText(row, c, v !== v ? "NaN" : v > 0 ? "+Inf" : "-Inf");
        if (v !== first) constant = false;
        if (v !== 0) zero = false;
      }
      if (finiteOnly) continue;
      if (zero) {
        scan.zeroRows++;
        if (scan.firstZero < 0) scan.firstZero = row;
      } else if (constant && cols > 1) {
        return constantText(row, cols, first);
      }
    }
  }
  return "";
}
var REF_FP32_FACTOR = 8;
function referenceVsFp32(ref, fp32, realLen) {
  const rows = Math.min(realLen, ref.rows, fp32.rows);
  if (ref.cols !== fp32.cols) return null;
  const per = Math.max(1, Math.floor(BLOCK_BYTES / (ref.cols * 4)));
  for (let start = 0; start < rows; start += per) {
    const n = Math.min(per, rows - start);
    const a = ref.readRows(start, n);
    const t = fp32.readRows(start, n);
    for (let r = 0; r < n; r++) {
      const o = r * ref.cols;
      let top = 0;
      for (let c = 0; c < ref.cols; c++) top = Math.max(top, Math.abs(t[o + c]));
      if (!(top > 0)) continue;
      for (let c = 0; c < ref.cols; c++) {
        const off = Math.abs(a[o + c] - t[o + c]);
        if (off > REF_FP32_FACTOR * top) {
          const g = (v) => Number(v.toPrecision(6));
          return `row ${start + r}, column ${c} of the reference is ${g(a[o + c])} where the FP32 ground truth is ${g(t[o + c])} (${g(off / top)}x the largest |value| of that row in FP32; bf16 rounding stays far under 1x)`;
        }
      }
    }
  }
  return null;
}

// src/layers/judge.ts
async function judgeLayers(runDir, layers) {
  const rows = [];
  for (const [i, e] of layers.entries.entries()) {
    const npu = openRunTensor(runDir, e.npu, `layers.entries[${i}].npu`);
    try {
      const ref = openRunTensor(runDir, e.ref, `layers.entries[${i}].ref`);
      try {
        rows.push({ layer: e.layer, ...await compareSummary(npu, ref) });
      } finally {
        ref.close();
      }
    } finally {
      npu.close();
    }
  }
  return rows.sort((a, b) => a.layer - b.layer);
}

// src/seed/hints.ts
var HINTS = [
  { match: /qk_?norm/, hint: { boundary: "Q/K norm", cause: "per-head RMSNorm stitched wrong (weighted_rms_norm with heads as rows, shared (head_dim,) weight)", where: "check M=n_heads, N=head_dim and the weight broadcast" } },
  { match: /norm/, hint: { boundary: "RMSNorm", cause: "norm weight, eps or the row layout", where: "compare with <model>_cpu_helpers.rms_norm on the same input" } },
  { match: /resid|add|bias/, hint: { boundary: "residual add / bias", cause: "bias forgotten on the padded path, or a GQA reindex bug", where: "if padding + bias: re-run the CPU sanity test on the padded forward (seed Step 2)" } },
  { match: /(^|_)(q|k|v|qkv)(_proj|_gemm)?$|gemms?_rope|qkv/, hint: { boundary: "Q/K/V GEMM", cause: "weight loading or tensor layout (seq-first vs heads-first), a missing transpose", where: "compare the NPU output's shape with the reference's; check np.ascontiguousarray() after the weight load" } },
  { match: /attn|attention|flash|fa$/, hint: { boundary: "FlashAttention", cause: "causal masking missing or a wrong dk_chunks compile flag", where: "see the debug-fa-runtime-failure skill" } },
  { match: /rope/, hint: { boundary: "RoPE", cause: "RoPE pairing (half-split vs interleaved), the [cos|sin] LUT layout, or its frequencies (rope_theta, rope_scaling: a drift that grows with position)", where: "compare the LUT from generate_rope_lut with HF's rotate_half convention" } },
  { match: /down/, hint: { boundary: "Down GEMM", cause: "BF16 truncation: the low-precision (direct-codegen) tier instead of high-precision", where: "confirm fused-cast / drain (FP32 accumulate + one cast); see details/GEMM_bf16_in_bf16_out.md" } },
  { match: /gate|up|swiglu|silu|ffn|o_proj|^o$/, hint: { boundary: "O / FFN GEMM", cause: "weight layout or a dropped cast between fused launches", where: "compare the step's output shape and dtype with the reference's" } }
];
var NAN_HINT = { boundary: "output buffer", cause: "an uninitialised BO or a reused stale buffer", where: "see the debug-bo-corruption skill" };
var FA_DRIFT_HINT = { boundary: "FlashAttention", cause: "the FlashAttention kernel's own bf16 softmax (scores, running max, probabilities and accumulator carried in bf16 between 64-key chunks) on large attention logits, not a bug while nothing crosses the threshold; a missing causal mask or a wrong dk_chunks flag would", where: "compare with an --emulate run (its twins round the same way) or with --cpu-attn" };
var TAIL_HINT = { boundary: "last positions", cause: "one bad run of positions (a causal-mask edge case or a stale tail)", where: "print the per-position cosine and look for contiguous bad runs" };
var STEP_NAMES = {
  "rmsnorm": "attn_norm",
  "q/k/v gemm": "qkv",
  "q/k norm": "qk_norm",
  "rope": "rope",
  "flashattention": "attention",
  "o gemm": "o_proj",
  "residual add": "residual",
  "gate/up gemm": "gate",
  "swiglu": "swiglu",
  "down gemm": "down"
};
function hintForStep(step, name = "", kernel = "") {
  const known = STEP_NAMES[String(step ?? "").toLowerCase()];
  return (known ? hintFor(known) : null) ?? hintFor(name, kernel);
}
function hintFor(step, kernel = "") {
  const s = step.toLowerCase();
  for (const { match, hint } of HINTS) if (match.test(s)) return hint;
  const k = kernel.toLowerCase();
  for (const { match, hint } of HINTS) if (match.test(k)) return hint;
  return null;
}

// src/lens/judge.ts
var PROFILE_POINTS = 128;
function profileOf(cosines, points = PROFILE_POINTS, ratios) {
  const bucket = Math.max(1, Math.ceil(cosines.length / points));
  const out = [];
  const norms = [];
  for (let i = 0; i < cosines.length; i += bucket) {
    let lo = Infinity;
    let far = NaN;
    for (let j = i; j < Math.min(cosines.length, i + bucket); j++) {
      lo = Number.isNaN(cosines[j]) || Number.isNaN(lo) ? NaN : Math.min(lo, cosines[j]);
      const r = ratios?.[j];
      if (r !== void 0 && !Number.isNaN(r) && (Number.isNaN(far) || Math.abs(r - 1) > Math.abs(far - 1))) far = r;
    }
    out.push(lo);
    norms.push(far);
  }
  return ratios && ratios.length === cosines.length ? { bucket, points: out, norms } : { bucket, points: out };
}
function scaleIsOff(normRatio2) {
  return Number.isFinite(normRatio2) && Math.abs(normRatio2 - 1) > LENS_SCALE_WARN;
}
function rowOf(e, m, threshold) {
  const c = comparisonOf(m);
  const low = lowestCosine(c);
  return {
    name: e.name,
    order: e.order,
    step: e.step,
    launch: e.launch,
    producedBy: e.produced_by,
    ...c,
    below: !(low >= threshold),
    drifts: !(low >= cleanBar(threshold)),
    scaleOff: scaleIsOff(c.normRatio),
    badRuns: m.perPosition.badRuns.slice(0, 16),
    profile: profileOf(m.perPosition.cosines, PROFILE_POINTS, m.errors.rowNormRatios)
  };
}
function named(r) {
  return {
    name: r.name,
    order: r.order,
    step: r.step,
    launch: r.launch,
    producedBy: r.producedBy,
    wholeCosine: r.wholeCosine,
    perPositionMin: r.perPositionMin,
    hint: hintForStep(r.step, r.name, r.producedBy ?? r.launch ?? "")
  };
}
function onsetOf(r) {
  const n = named(r);
  return !r.below && n.hint?.boundary === "FlashAttention" ? { ...n, hint: FA_DRIFT_HINT } : n;
}
function errorRow(e, rows, cols, error) {
  return {
    name: e.name,
    order: e.order,
    step: e.step,
    launch: e.launch,
    producedBy: e.produced_by,
    rows,
    cols,
    wholeCosine: NaN,
    perPositionMin: NaN,
    p5: NaN,
    median: NaN,
    maxAbs: NaN,
    maxRel: NaN,
    sqnrDb: NaN,
    normRatio: NaN,
    nonFinite: 0,
    below: false,
    drifts: false,
    scaleOff: false,
    badRuns: [],
    profile: { bucket: 1, points: [] },
    error
  };
}
async function compareBoundaries(runDir, b, threshold) {
  const rows = [];
  const entries = [...b.entries.entries()].sort(([, x], [, y]) => x.order - y.order);
  for (const [i, e] of entries) {
    const npu = openRunTensor(runDir, e.npu, `boundaries.entries[${i}].npu`);
    try {
      const ref = openRunTensor(runDir, e.ref, `boundaries.entries[${i}].ref`);
      try {
        const fault = referenceFault(ref, ref.rows, true);
        if (fault) rows.push(errorRow(e, ref.rows, ref.cols, `the reference is broken: ${fault}; not a verdict on the NPU`));
        else {
          const row = rowOf(e, await compare(npu, ref, { threshold, worstK: 0 }), threshold);
          if (e.fp32) row.budget = await budgetOf(runDir, e, i, threshold, !!b.twin);
          if (e.twin) {
            const t = openRunTensor(runDir, e.twin, `boundaries.entries[${i}].twin`);
            try {
              row.twinNormRatio = comparisonOf(await compare(t, ref, { threshold, worstK: 0 })).normRatio;
            } finally {
              t.close();
            }
            if (epsInPlay(b) && Number.isFinite(row.twinNormRatio) && row.twinNormRatio > 0 && Number.isFinite(row.normRatio)) {
              row.accountedRatio = row.normRatio / row.twinNormRatio;
              row.scaleOff = Math.abs(row.accountedRatio - 1) > LENS_SCALE_WARN;
            }
          }
          rows.push(row);
        }
      } finally {
        ref.close();
      }
    } finally {
      npu.close();
    }
  }
  return rows;
}
function relL2(m) {
  return 10 ** (-m.errors.sqnrDb / 20);
}
var over0 = (a, b) => b > 0 ? a / b : a > 0 ? Infinity : NaN;
function budgetFrom(npu, bf16, bar = ERROR_BUDGET_WARN, expected, expectedBar = EXPECTED_BUDGET_WARN) {
  const ratio = over0(npu, bf16);
  if (expected === null) return { npu, bf16, ratio, over: false };
  if (expected === void 0 || Number.isNaN(expected)) return { npu, bf16, ratio, over: ratio > bar };
  const vsExpected = over0(npu, expected);
  return { npu, bf16, ratio, expected, expectedRatio: over0(expected, bf16), vsExpected, over: vsExpected > expectedBar };
}
function judgedBudget(b, bar = ERROR_BUDGET_WARN, expectedBar = EXPECTED_BUDGET_WARN) {
  return b.vsExpected !== void 0 ? { ratio: b.vsExpected, bar: expectedBar } : { ratio: b.ratio, bar };
}
function epsInPlay(b) {
  const ne = b.norm_eps;
  if (!ne) return null;
  const npu = b.emulated ? ne.twins : ne.tree;
  return Math.abs(npu - ne.config) > 1e-9 * Math.max(Math.abs(npu), Math.abs(ne.config)) ? ne : null;
}
function normEpsOf(b, rows) {
  const ne = epsInPlay(b);
  if (!ne) return null;
  const r = rows.find((x) => !x.error && x.name === "attn_norm") ?? rows.find((x) => !x.error && /^RMSNorm/i.test(x.step ?? ""));
  return {
    tree: ne.tree,
    config: ne.config,
    file: ne.file,
    line: ne.line,
    at: r ? { name: r.name, normRatio: r.normRatio, twinNormRatio: r.twinNormRatio ?? null } : null
  };
}
async function budgetOf(runDir, e, i, threshold, twinsRan) {
  const vsFp32 = async (side) => {
    const a = openRunTensor(runDir, e[side], `boundaries.entries[${i}].${side}`);
    try {
      const f = openRunTensor(runDir, e.fp32, `boundaries.entries[${i}].fp32`);
      try {
        return relL2(await compare(a, f, { threshold, worstK: 0 }));
      } finally {
        f.close();
      }
    } finally {
      a.close();
    }
  };
  return budgetFrom(await vsFp32("npu"), await vsFp32("ref"), ERROR_BUDGET_WARN, e.twin ? await vsFp32("twin") : twinsRan ? null : void 0);
}
function lensOf(b, rows, threshold, ffnOutPasses) {
  const first = rows.find((r) => r.below);
  const onset = rows.find((r) => r.drifts);
  const offs = scaleOnsetRows(rows);
  const off = offs[0];
  const scaled = (r) => ({
    ...named(r),
    normRatio: scaleRatio(r),
    bar: LENS_SCALE_WARN,
    cause: scaleCause(r),
    ...r.accountedRatio !== void 0 ? { accounted: { normRatio: r.normRatio, twinNormRatio: r.twinNormRatio } } : {}
  });
  const expected = rows.some((r) => r.budget?.expected !== void 0) && b.twin ? { bar: EXPECTED_BUDGET_WARN, precision: b.twin.precision, what: b.twin.what } : null;
  return {
    threshold,
    wellBelow: wellBelow(threshold),
    cleanBar: cleanBar(threshold),
    emulated: b.emulated,
    source: b.source,
    table: b.table,
    reference: b.reference,
    rows,
    unpaired: b.unpaired,
    firstBelow: first ? named(first) : null,
    onset: onset ? onsetOf(onset) : null,
    hiding: hidingOf(rows, threshold, ffnOutPasses),
    scale: off ? scaled(off) : null,
    scales: offs.map(scaled),
    budget: rows.some((r) => r.budget) ? { bar: ERROR_BUDGET_WARN, measure: ERROR_MEASURE, ...expected ? { expected } : {} } : null,
    normEps: normEpsOf(b, rows),
    budgetOnsets: budgetOnsetRows(rows).map((r) => r.name)
  };
}
function scaleRatio(r) {
  return r.accountedRatio ?? r.normRatio;
}
function stepBefore(rows) {
  const out = [];
  let before = null;
  let current = [];
  let step = null;
  for (const r of rows) {
    if (step !== null && r.step !== step) {
      before = current;
      current = [];
    }
    step = r.step;
    current.push(r);
    out.push(before);
  }
  return out;
}
function scaleOnsetRows(rows) {
  const judged2 = rows.filter((r) => !r.error);
  const before = stepBefore(judged2);
  return judged2.filter((r, i) => r.scaleOff && !(before[i] ?? []).some((p) => p.scaleOff && Math.abs(scaleRatio(r) / scaleRatio(p) - 1) <= LENS_SCALE_WARN));
}
function budgetOnsetRows(rows, bar = ERROR_BUDGET_WARN) {
  const judged2 = rows.filter((r) => !r.error && r.budget);
  const before = stepBefore(judged2);
  return judged2.filter((r, i) => {
    if (!r.budget.over) return false;
    const over = (before[i] ?? []).filter((p) => p.budget.over);
    if (!over.length) return true;
    const cur = judgedBudget(r.budget, bar);
    return cur.ratio > cur.bar * Math.max(...over.map((p) => judgedBudget(p.budget, bar).ratio));
  });
}
function laterOnset(lens) {
  const scales = lens.scales ?? (lens.scale ? [lens.scale] : []);
  if (scales.length > 1) return scales[1].name;
  const budgets = lens.budgetOnsets ?? [];
  return budgets.length > 1 ? budgets[1] : null;
}
function lensBudgetWarnings(lens) {
  const over = lens.rows.filter((r) => r.budget?.over);
  if (!over.length || !lens.budget) return [];
  const onsets = lens.budgetOnsets ? lens.rows.filter((r) => lens.budgetOnsets.includes(r.name)) : [over[0]];
  return onsets.map((r, i) => {
    const b = r.budget;
    const twins = b.vsExpected !== void 0 && lens.budget.expected;
    const label = `${isId(r.name) ? r.name : "(unnamed boundary)"}${r.step ? ` (${r.step})` : ""}`;
    const h = hintForStep(r.step, r.name, r.producedBy ?? r.launch ?? "");
    const also = i === 0 && over.some((x) => x.name === "ffn_out") && r.name !== "ffn_out" ? "; ffn_out is over the bar too" : "";
    const again = i > 0 ? ` (again, not carried from ${isId(onsets[i - 1].name) ? onsets[i - 1].name : "an earlier boundary"}: a second onset)` : "";
    const down = lens.firstBelow && r.order > lens.firstBelow.order ? downstream(lens.firstBelow) : null;
    return {
      id: "error_budget",
      message: twins ? `the error budget against FP32: boundary ${label}${again} has ${fmtBudget(b.vsExpected)} the error the hardware twins have (${lens.budget.measure}: NPU ${fmtSci(b.npu)}, hardware twins ${fmtSci(b.expected)} (precision ${lens.budget.expected.precision}), HF bf16 ${fmtSci(b.bf16)}; bar ${lens.budget.expected.bar}x): the NPU adds error of its own here, beyond what its number format costs${also}${down ?? (h ? `; likely ${h.cause}` : "")}` : `the error budget against FP32: boundary ${label}${again} has ${fmtBudget(b.ratio)} the error bf16 itself has (${lens.budget.measure}: NPU ${fmtSci(b.npu)}, HF bf16 ${fmtSci(b.bf16)}; bar ${lens.budget.bar}x): the NPU adds error of its own here${also}${down ?? (h ? `; likely ${h.cause}` : "")}`
    };
  });
}
function downstream(first) {
  return `; downstream of ${isId(first.name) ? first.name : "a boundary"}, which is under the threshold: no cause is guessed past it`;
}
function scaleCause(r) {
  const step = String(r.step ?? "").toLowerCase();
  const name = r.name.toLowerCase();
  if (step.includes("norm") || /norm/.test(name)) {
    return "the RMSNorm's eps or weight (an eps other than the config's rms_norm_eps moves the scale when mean(x^2) is small; an ignored, unfolded (1+w) or wrong weight moves it always)";
  }
  if (step.includes("attention") || /attn/.test(name)) return "a missing or doubled scale factor in attention (1/sqrt(head_dim), or a query pre-scaling)";
  if (step.includes("input") || name === "block_input") return "the embedding scale (Gemma multiplies the embeddings by sqrt(hidden_size)) or the embedding table";
  if (step.includes("add") || /res|ffn_out/.test(name)) return "a residual added twice or not at all, or a scale carried in from an earlier boundary";
  return "a missing scale factor: a weight scaled on load (a dequantisation scale, a folded norm), or a scale carried in from an earlier boundary";
}
function lensScaleWarnings(lens) {
  const all = lens.scales ?? (lens.scale ? [lens.scale] : []);
  return all.map((s, i) => {
    const pct = ((s.normRatio - 1) * 100).toFixed(2);
    const label = `${isId(s.name) ? s.name : "(unnamed boundary)"}${s.step ? ` (${s.step})` : ""}`;
    const again = i > 0 ? `, not the ${fmtRatio(all[i - 1].normRatio)} carried from ${isId(all[i - 1].name) ? all[i - 1].name : "an earlier boundary"}: a second onset` : "";
    const down = lens.firstBelow && s.order > lens.firstBelow.order ? downstream(lens.firstBelow) : null;
    const cause = down ?? `; likely ${s.cause}${s.hint ? `; the seed: ${s.hint.cause} (${s.hint.where})` : ""}`;
    const what = s.accounted ? `norm ratio |npu|/|twins| ${fmtRatio(s.normRatio)} with the tree's RMSNorm eps accounted for (|npu|/|ref| ${fmtRatio(s.accounted.normRatio)}, the hardware twins at the same eps ${fmtRatio(s.accounted.twinNormRatio)})` : `norm ratio |npu|/|ref| ${fmtRatio(s.normRatio)}`;
    return {
      id: "lens_scale",
      message: `the lens: boundary ${label} is off in scale: ${what} (${s.normRatio > 1 ? "+" : ""}${pct}%, more than ${s.bar * 100}% from 1${again}; cosine ${fmtCos(s.wholeCosine)} cannot see scale)${cause}`
    };
  });
}
function hidingOf(rows, threshold, ffnOutPasses) {
  if (!ffnOutPasses) return null;
  const well = wellBelow(threshold);
  const r = rows.find((x) => !x.error && !(lowestCosine(x) >= well));
  return r ? named(r) : null;
}
function lensWarning(lens) {
  const h0 = lens.hiding;
  if (!h0) return null;
  const label = (n) => `${isId(n.name) ? n.name : "(unnamed boundary)"}${n.step ? ` (${n.step})` : ""}`;
  const onset = lens.onset && lens.onset.order < h0.order ? lens.onset : null;
  const h = (onset ?? h0).hint;
  return {
    id: "lens",
    message: `the lens: boundary ${label(h0)} is well below the threshold (cosine ${fmtCos(h0.wholeCosine)}, per-position min ${fmtCos(h0.perPositionMin)}; threshold ${formatThreshold(lens.threshold)}) while ffn_out passes the gates: the ffn_out gate may be hiding a bug${onset ? `; the divergence begins at ${label(onset)}` : ""}${h ? `; likely ${h.cause}` : ""}`
  };
}
function fmtEps(v) {
  return Number.isFinite(v) && v > 0 && v < 1e-3 ? v.toExponential().replace(/\.?0*e([+-])0*/, "e$1").replace("e+", "e") : String(v);
}
function lensEpsWarning(lens) {
  const e = lens.normEps;
  if (!e) return null;
  const at = e.at ? `; at ${isId(e.at.name) ? e.at.name : "the first RMSNorm"} it moves the scale to a norm ratio of ${fmtRatio(e.at.normRatio)}${e.at.twinNormRatio !== null ? ` (the hardware twins at the tree's eps: ${fmtRatio(e.at.twinNormRatio)})` : ""}` : "";
  const judged2 = lens.rows.some((r) => r.accountedRatio !== void 0) ? "the lens judges scale and the error budget with it accounted for (against the hardware twins, which take the same eps)" : "the lens could not account for it (no hardware twins' pass in this run: no FP32 side), so scale warnings at the RMSNorm boundaries may be this";
  return {
    id: "norm_eps",
    message: `a known upstream mismatch: the tree's RMSNorm ELFs use eps ${fmtEps(e.tree)} (${e.file}:${e.line}) where the checkpoint's config.json says rms_norm_eps ${fmtEps(e.config)}${at}; ${judged2}`
  };
}

// src/bisect/judge.ts
import { join as join8 } from "node:path";

// src/rundir/bisect-spec.ts
import { lstatSync as lstatSync5 } from "node:fs";
import { join as join7 } from "node:path";
var BISECT_SCHEMA = BISECT_CONTRACT.schema;
var BISECT_SCHEMA_VERSION = BISECT_CONTRACT.version;
var BISECT_FILE = `${BISECT_CONTRACT.dir}/${BISECT_CONTRACT.json}`;
var BISECT_METHODS = BISECT_CONTRACT.methods;
var text = (max = 4096) => str({ max });
var relFile = str({
  max: 1024,
  what: "a relative path inside the run dir",
  pattern: /^(?![\\/])(?![A-Za-z]:)(?!.*(^|[\\/])\.\.([\\/]|$))[^\u0000]+$/
});
var STEP = obj({
  index: optional(int(0)),
  step: text(200),
  kernel: withDefault(text(200), () => ""),
  cpu_equivalent: withDefault(text(), () => ""),
  file: relFile,
  seconds: optional(num(0)),
  /** twins: the ELFs answered by their twins at this step. */
  swapped: optional(list(text(200), 256))
}, { declare: false, rest: any() });
var BUFFER = obj({
  buffer: text(200),
  arg: optional(nullable(int(0))),
  boundary: withDefault(nullable(text(200)), () => null),
  stage: withDefault(text(200), () => ""),
  step: withDefault(nullable(text(200)), () => null),
  rows: optional(list(int(0), 2)),
  npu: TENSOR_SPEC,
  twin: TENSOR_SPEC
}, { declare: false, rest: any() });
var LAUNCH = obj({
  index: int(0),
  launch: text(200),
  occurrence: withDefault(int(0), () => 0),
  kind: withDefault(text(200), () => ""),
  layout: optional(text(200)),
  twin: withDefault(text(), () => ""),
  buffers: list(BUFFER, 256)
}, { declare: false, rest: any() });
var BISECT_SPEC = obj({
  schema: text(100),
  schema_version: int(0),
  available: bool(),
  reason: withDefault(text(), () => ""),
  hook: withDefault(nullable(text()), () => null),
  /** Absent in bisect.json files written before the twins: a hook bisect then. */
  method: withDefault(nullable(oneOf(...BISECT_METHODS)), () => null),
  emulated: withDefault(bool(), () => false),
  steps: list(STEP, 1024),
  launches: withDefault(nullable(list(LAUNCH, 1024)), () => null),
  /** twins: how they computed (absent in older files: fp32 numerics). */
  twins: withDefault(nullable(TWINS_SPEC), () => null),
  /** Block 0 re-run unswapped before any swap (absent in older files: nothing to check it against). */
  rerun: withDefault(nullable(obj({ file: relFile, python: withDefault(text(), () => "") }, { declare: false, rest: any() })), () => null)
}, { declare: false, rest: any() });
var BISECT_JSON_MAX_BYTES = 16 << 20;
function readBisectJson(runDir) {
  const file = join7(runDir, BISECT_FILE);
  try {
    lstatSync5(file);
  } catch (e) {
    if (e.code === "ENOENT" || e.code === "ENOTDIR") return null;
    throw fsError(e, file, "cannot read");
  }
  const bytes = readRegularFile(runFile(runDir, BISECT_FILE, "bisect.json"), BISECT_JSON_MAX_BYTES);
  let o;
  try {
    o = JSON.parse(bytes.toString("utf8"));
  } catch (e) {
    throw new InputError(`not valid JSON (${e.message.split("\n")[0]})`, file);
  }
  if (o?.schema !== BISECT_SCHEMA) throw new InputError(`schema is ${JSON.stringify(o?.schema)}, expected ${JSON.stringify(BISECT_SCHEMA)}`, file);
  if (o.schema_version !== BISECT_SCHEMA_VERSION) throw new InputError(`schema_version ${JSON.stringify(o.schema_version)} is not supported (this npu-block-gate reads version ${BISECT_SCHEMA_VERSION})`, file);
  try {
    return BISECT_SPEC.check(o, "");
  } catch (e) {
    if (e instanceof SpecError) throw new InputError(e.message, file);
    throw e;
  }
}

// src/bisect/judge.ts
function situationOf(m, th) {
  if (!g3Holds(nonFiniteTotal(m.nonFinite))) return NAN_HINT;
  const runs = m.perPosition.badRuns;
  if (runs.length === 1 && runs[0].end === m.realLen - 1 && g1Holds(m.wholeCosine, th)) return TAIL_HINT;
  return null;
}
async function judgeSteps(runDir, b, refPath, realLen, th) {
  const steps = [];
  for (const [i, s] of b.steps.entries()) {
    runFile(runDir, s.file, `steps[${i}].file`, `missing (${BISECT_FILE} lists it)`);
    const npu = openTensor(join8(runDir, s.file));
    try {
      const ref = openTensor(refPath);
      try {
        const c = await compareSummary(npu, ref, { realLen });
        steps.push({
          step: s.step,
          kernel: s.kernel,
          cpuEquivalent: s.cpu_equivalent,
          ...s.swapped ? { swapped: s.swapped } : {},
          ...c,
          fixes: passesGates(c, th)
        });
      } finally {
        ref.close();
      }
    } finally {
      npu.close();
    }
  }
  return steps;
}
async function judgeLaunches(runDir, launches, threshold) {
  const clean = cleanBar(threshold);
  const rows = [];
  for (const [li, la] of launches.entries()) {
    const buffers = [];
    for (const [bi, bu] of la.buffers.entries()) {
      const at = `launches[${li}].buffers[${bi}]`;
      const npu = openRunTensor(runDir, bu.npu, `${BISECT_FILE} ${at}.npu`);
      try {
        const twin = openRunTensor(runDir, bu.twin, `${BISECT_FILE} ${at}.twin`);
        try {
          const c = await compareSummary(npu, twin);
          buffers.push({
            buffer: bu.buffer,
            boundary: bu.boundary,
            stage: bu.stage,
            step: bu.step,
            span: bu.rows && bu.rows.length === 2 ? [bu.rows[0], bu.rows[1]] : null,
            ...c,
            diverges: !(lowestCosine(c) >= threshold),
            drifts: !(lowestCosine(c) >= clean)
          });
        } finally {
          twin.close();
        }
      } finally {
        npu.close();
      }
    }
    rows.push({ index: la.index, launch: la.launch, kind: la.kind, occurrence: la.occurrence, buffers });
  }
  return rows.sort((a, b) => a.index - b.index);
}
function named2(la, bu) {
  return {
    index: la.index,
    launch: la.launch,
    kind: la.kind,
    buffer: bu.buffer,
    boundary: bu.boundary,
    stage: bu.stage,
    step: bu.step,
    wholeCosine: bu.wholeCosine,
    perPositionMin: bu.perPositionMin,
    strength: bu.diverges ? "diverges" : "drifts",
    hint: hintForStep(bu.step, bu.boundary ?? bu.buffer, la.kind || la.launch)
  };
}
function firstBuffer(launches, pick) {
  for (const la of launches) {
    const bu = la.buffers.find(pick);
    if (bu) return named2(la, bu);
  }
  return null;
}
function launchOffenderOf(launches) {
  return firstBuffer(launches, (b) => b.drifts || b.diverges);
}
function launchCrossingOf(launches, onset) {
  const c = firstBuffer(launches, (b) => b.diverges);
  return c && onset && (c.index !== onset.index || c.buffer !== onset.buffer) ? c : null;
}
var RERUN_TOLERANCE = BISECT_CONTRACT.rerun_tolerance_rel_l2;
function rerunOf(rerun, judged2, realLen, python) {
  if (rerun.rows !== judged2.rows || rerun.cols !== judged2.cols) {
    return { exact: false, relL2: NaN, tolerance: RERUN_TOLERANCE, reproduced: false, python };
  }
  let exact = true;
  let diff2 = 0;
  let ref2 = 0;
  for (let start = 0; start < judged2.rows; start += 256) {
    const n = Math.min(256, judged2.rows - start);
    const a = rerun.readRows(start, n);
    const b = judged2.readRows(start, n);
    const real = Math.max(0, Math.min(n, realLen - start)) * judged2.cols;
    for (let i = 0; i < a.length; i++) {
      if (!Object.is(a[i], b[i])) exact = false;
      if (i < real) {
        const d = a[i] - b[i];
        diff2 += d * d;
        ref2 += b[i] * b[i];
      }
    }
  }
  const relL22 = exact ? 0 : ref2 > 0 ? Math.sqrt(diff2 / ref2) : diff2 === 0 ? 0 : Infinity;
  return { exact, relL2: relL22, tolerance: RERUN_TOLERANCE, reproduced: exact || relL22 <= RERUN_TOLERANCE, python };
}
function voidWhy(r) {
  const by = Number.isFinite(r.relL2) ? `relative L2 ${r.relL2.toPrecision(3)}, tolerance ${r.tolerance}` : "a different shape or non-finite values";
  const who = r.command && r.command !== r.python ? `${r.command}${r.python ? ` (${r.python})` : ""}` : r.python || "its interpreter";
  return `the bisect is void: block 0 re-run unswapped under ${who} did not give back the judged ffn_out (${by}); it ran another block than the one judged (another interpreter or environment, a changed tree or checkpoint, or a nondeterministic NPU), so nothing it names can be trusted`;
}
function ranBy(b, command) {
  if (!b.rerun || !command) return b;
  const rerun = { ...b.rerun, command };
  if (!b.void) return { ...b, rerun };
  const why = voidWhy(rerun);
  return { ...b, rerun, void: why, reason: why };
}
async function judgeBisect(runDir, paths, realLen, th, block, blockPasses = false) {
  const b = readBisectJson(runDir);
  if (!b) return null;
  const situation = situationOf(block, th);
  const method = b.method ?? (b.available ? "hook" : null);
  const base = { hook: b.hook, method, emulated: b.emulated };
  if (!b.available) return { available: false, reason: b.reason, ...base, steps: [], offender: null, launches: null, launchOffender: null, situation };
  const rerun = b.rerun ? judgeRerun(runDir, b.rerun, paths.npu, realLen) : null;
  const steps = await judgeSteps(runDir, b, paths.ref, realLen, th);
  const launches = method === "twins" && b.launches ? await judgeLaunches(runDir, b.launches, th.perPosition) : null;
  if (rerun && !rerun.reproduced) {
    return { available: true, reason: voidWhy(rerun), ...base, steps, offender: null, launches, launchOffender: null, launchCrossing: null, rerun, void: voidWhy(rerun), situation };
  }
  const launchOffender = launches ? launchOffenderOf(launches) : null;
  const launchCrossing = launches ? launchCrossingOf(launches, launchOffender) : null;
  const first = blockPasses ? void 0 : steps.find((s) => s.fixes);
  const what = method === "twins" ? "ELF to its twin" : "step to the CPU";
  const reason = blockPasses ? `the block passes the gates as it is (the bisect ran because the lens named a boundary); the ${method === "twins" ? "launch-level table" : "step table"} is what locates it` : first ? `swapping ${first.step}${method === "twins" && first.swapped && first.swapped.length > 1 ? ` (with ${first.swapped.slice(0, -1).join(", ")} before it)` : ""} to ${method === "twins" ? "its twin" : "the CPU"} brings the block above threshold` : `no single ${what} swap brings the block above threshold (more than one boundary is wrong, or the bug is outside the exposed steps)`;
  return {
    available: true,
    reason,
    ...base,
    steps,
    offender: first ? { step: first.step, kernel: first.kernel, hint: hintFor(first.step, first.kernel) } : null,
    launches,
    launchOffender,
    launchCrossing,
    rerun,
    void: null,
    situation
  };
}
function judgeRerun(runDir, r, npuPath, realLen) {
  runFile(runDir, r.file, "rerun.file", `missing (${BISECT_FILE} lists it)`);
  const a = openTensor(join8(runDir, r.file));
  try {
    const b = openTensor(npuPath);
    try {
      return rerunOf(a, b, realLen, r.python);
    } finally {
      b.close();
    }
  } finally {
    a.close();
  }
}

// src/judge/measure.ts
function thresholdsFor(p, override) {
  const hd = p.model.config.head_dim;
  return { whole: WHOLE_COSINE_MIN, perPosition: override ?? perPositionThreshold(hd), headDim: hd, overridden: override !== null };
}
function blockFails(m) {
  return m.gates.some((g) => g.status === "fail");
}
function wantsBisect(m) {
  if (blockFails(m)) return "gate";
  return m.lens && (m.lens.firstBelow || laterOnset(m.lens)) ? "lens" : null;
}
async function againstFp32(runDir, p, ref) {
  const i = p.boundaries?.entries.findIndex((e2) => e2.name === "ffn_out" && e2.fp32) ?? -1;
  const e = i >= 0 ? p.boundaries.entries[i] : null;
  if (!e?.fp32 || e.fp32.shape.join("x") !== [ref.rows, ref.cols].join("x")) return null;
  const truth = openRunTensor(runDir, e.fp32, `boundaries.entries[${i}].fp32`);
  try {
    return referenceVsFp32(ref, truth, p.prompt.real_len);
  } finally {
    truth.close();
  }
}
async function measureBlock(runDir, p, th, log) {
  const realLen = p.prompt.real_len;
  const npu = openRunTensor(runDir, p.tensors.npu, "tensors.npu");
  try {
    const ref = openRunTensor(runDir, p.tensors.ref, "tensors.ref");
    try {
      if (ref.rows !== realLen) throw new InputError(`reference has ${ref.rows} rows but probe.json says real_len ${realLen}`, ref.path);
      const fault = referenceFault(ref, realLen) ?? await againstFp32(runDir, p, ref);
      if (fault) throw new InfraError(`the reference is broken: ${fault}; not a verdict on the NPU`, ref.path);
      log.step(`judge: comparing ${npu.rows}x${npu.cols} ${p.emulate ? "emulated-NPU (twins)" : "NPU"} rows against ${ref.rows} reference rows`);
      return await compare(npu, ref, { realLen, threshold: th.perPosition });
    } finally {
      ref.close();
    }
  } finally {
    npu.close();
  }
}
async function bisectOf(m) {
  const why = wantsBisect(m);
  if (!why) return null;
  const p = m.probe;
  const paths = { ref: tensorPath(m.runDir, p.tensors.ref), npu: tensorPath(m.runDir, p.tensors.npu) };
  return judgeBisect(m.runDir, paths, p.prompt.real_len, m.thresholds, m.metrics, why === "lens");
}
async function measure(runDir, threshold, log) {
  runDirReal(runDir);
  const p = readProbeJson(runDir);
  const thresholds = thresholdsFor(p, threshold);
  const metrics = await measureBlock(runDir, p, thresholds, log);
  log.step(`judge: engine ${metrics.engine}, whole cosine ${metrics.wholeCosine.toFixed(6)}, per-position min ${metrics.perPosition.min.toFixed(6)}`);
  const gates = metricGates(metrics, thresholds);
  const layers = p.layers ? await judgeLayers(runDir, p.layers) : null;
  if (layers) log.step(`judge: ${layers.length} layers (informational), lowest per-position min ${Math.min(...layers.map((l) => l.perPositionMin)).toFixed(6)}`);
  const lensRows = p.boundaries ? await compareBoundaries(runDir, p.boundaries, thresholds.perPosition) : null;
  const lens = p.boundaries && lensRows ? lensOf(p.boundaries, lensRows, thresholds.perPosition, !blockFails({ gates })) : null;
  if (lens?.rows.length) {
    const lowest = Math.min(...lens.rows.map((r) => Math.min(r.wholeCosine, r.perPositionMin)));
    log.step(`judge: lens: ${lens.rows.length} boundaries, lowest ${lowest.toFixed(6)}${lens.firstBelow ? `; first under the threshold: ${lens.firstBelow.name}` : ""}`);
  }
  const base = { runDir, probe: p, thresholds, metrics, gates, layers, lens };
  return { ...base, bisect: await bisectOf(base) };
}
async function withBisect(m, log) {
  const bisect = await bisectOf(m);
  if (bisect?.offender) log.step(`bisect: offending boundary ${bisect.offender.step} (${bisect.offender.kernel})`);
  if (bisect?.void) log.warn(bisect.void);
  if (bisect?.launchOffender) log.step(`bisect: the drift starts at ${bisect.launchOffender.launch} (${bisect.launchOffender.buffer})${bisect.launchCrossing ? `, crosses the threshold at ${bisect.launchCrossing.launch} (${bisect.launchCrossing.buffer})` : ""}`);
  return { ...m, bisect };
}

// src/judge/verdict.ts
function bisectOf2(m, ctx) {
  const why = wantsBisect(m);
  if (!why) return null;
  const situation = why === "gate" ? situationOf(m.metrics, m.thresholds) : null;
  const unavailable = (reason) => ({ available: false, reason, hook: null, steps: [], offender: null, situation });
  if (ctx.bisectFailed) return unavailable(`probe bisect failed: ${ctx.bisectFailed}`);
  if (m.bisect) return m.bisect;
  return why === "gate" ? unavailable(ctx.bisectUnavailable) : null;
}
function verdict(m, ctx) {
  const p = m.probe;
  const gates = [...m.gates, documentationGate(ctx.documented)];
  const outcome = outcomeOf(gates);
  const warnings = warningsFor(m.metrics, ctx.baseline);
  const lw = m.lens ? lensWarning(m.lens) : null;
  if (lw) warnings.push(lw);
  const ew = m.lens ? lensEpsWarning(m.lens) : null;
  if (ew) warnings.push(ew);
  if (m.lens) warnings.push(...lensScaleWarnings(m.lens), ...lensBudgetWarnings(m.lens));
  const sw = step2SanityWarning(p.step2_sanity);
  if (sw) warnings.push(sw);
  if (ctx.documented.refused !== void 0) warnings.push({ id: "docs", message: `G4: the documents were not recorded: ${ctx.documented.refused}` });
  const failed = ctx.documented.failed;
  if (failed) {
    warnings.push({ id: "docs", message: `G4: the documents were not written: ${failed.message}. The verdict stands; fix that and re-judge this run dir with \`${COMMAND} report --run-dir ${m.runDir}\` (add --no-docs to judge it without documents)` });
  }
  if (ctx.unwritten) warnings.push({ id: "run_dir", message: ctx.unwritten });
  if (ctx.unisolatedFallback) warnings.push({ id: "isolation", message: `the probe ran without isolation: ${ctx.unisolatedFallback}` });
  if (ctx.isolation?.degraded) warnings.push({ id: "isolation", message: `the probe ran with degraded isolation: ${ctx.isolation.degraded}` });
  return {
    schema: REPORT_SCHEMA,
    schema_version: REPORT_SCHEMA_VERSION,
    tool: { ...TOOL },
    created_at: ctx.now.toISOString(),
    outcome,
    exit_code: outcome === "pass" ? failed?.exitCode ?? EXIT.pass : EXIT.fail,
    emulated: !!p.emulate,
    error: null,
    model: { name: p.model.name, dir: p.model.dir, hf_id: p.model.hf_id, config: p.model.config },
    commit: ctx.commit,
    prompt: {
      style: p.prompt.style,
      text: p.prompt.text,
      source: p.prompt.source,
      real_len: p.prompt.real_len,
      padded_len: p.prompt.padded_len,
      ...p.prompt.positions ? { positions: p.prompt.positions } : {}
    },
    emulate: p.emulate ? { runtime: p.emulate.runtime, inject: p.emulate.inject } : null,
    thresholds: m.thresholds,
    gates,
    metrics: m.metrics,
    warnings,
    integration: p.integration,
    isolation: ctx.isolation,
    defaults: p.defaults ?? null,
    reference: p.reference,
    environment: p.environment,
    kernel_cache: p.kernel_cache ?? null,
    bisect: bisectOf2(m, ctx),
    layers: m.layers,
    lens: m.lens,
    step2_sanity: p.step2_sanity ?? null,
    timings: p.timings ?? {},
    docs: ctx.docs,
    run_dir: m.runDir
  };
}
function step2SanityWarning(s) {
  if (!s || s.skipped || s.ok !== false) return null;
  const bad = (s.rows ?? []).filter((r) => r.id !== "naive_end" && r.pass === false).map((r) => r.label);
  return {
    id: "step2_sanity",
    message: `Step 2 sanity: ${bad.join(" and ") || "the padded model"} does not reproduce the original model (cosine below ${s.gate}); fix the padding before trusting a padded block on the NPU`
  };
}
function errorVerdict(e) {
  return {
    schema: REPORT_SCHEMA,
    schema_version: REPORT_SCHEMA_VERSION,
    tool: { ...TOOL },
    created_at: e.now.toISOString(),
    outcome: "error",
    exit_code: e.exitCode,
    emulated: false,
    error: e.message,
    model: { name: e.model.name, dir: e.model.dir, hf_id: null, config: null },
    commit: e.commit,
    prompt: null,
    thresholds: { whole: WHOLE_COSINE_MIN, perPosition: e.threshold ?? NaN, headDim: NaN, overridden: e.threshold !== null },
    gates: [],
    metrics: null,
    warnings: [],
    integration: null,
    isolation: e.isolation,
    reference: null,
    environment: null,
    kernel_cache: null,
    bisect: null,
    layers: null,
    timings: {},
    docs: null,
    run_dir: e.runDir
  };
}

// src/check/index.ts
var CHANGED_TRIES = 5;
function checkModelName(p, modelDir) {
  const want = modelDirAt(modelDir).name;
  if (p.model.name !== want) {
    throw new InputError(`model.name ${JSON.stringify(plain(p.model.name, 64))} is not the model dir's name ${JSON.stringify(want)}; refusing a run dir for another model`, "probe.json");
  }
}
function docsModelDir(plan, p) {
  if (plan.modelDir) return modelDirAt(plan.modelDir).dir;
  const rel = p.model.dir;
  if (!p.environment.air_root || isAbsolute2(rel) || rel.split(/[\\/]/).includes("..")) return null;
  const candidate = join9(p.environment.air_root, rel);
  return existsSync5(candidate) ? candidate : null;
}
function andList(xs) {
  return xs.length > 1 ? `${xs.slice(0, -1).join(", ")} and ${xs[xs.length - 1]}` : xs.join("");
}
function commitOf(plan, p, env) {
  const sha = env.GITHUB_SHA;
  return plan.commit ?? p.environment.git_commit?.toLowerCase() ?? (sha && /^[0-9a-fA-F]{7,64}$/.test(sha) ? sha.toLowerCase() : null) ?? "uncommitted";
}
function storeCaches(plan, probed, p, now, log) {
  const c = probed.kernels;
  if (plan.cacheWrite === false) {
    if (c || p.reference.cache) log.step(`caches: read only (untrusted run${c?.restored || p.reference.cache?.hit ? "; cache hit" : ""}); nothing stored`);
    return;
  }
  if (c) storeKernels(c, p, now, log);
  const root = refCacheRoot(plan);
  const rc = p.reference.cache;
  if (!root || !rc || rc.hit) return;
  try {
    const r = storeReference(root, probed.runDir, p);
    if (r.stored) log.step(`reference cache: stored ${rc.key.slice(0, 12)} (layers ${r.layers.join(", ")}${r.boundaries ? `; ${r.boundaries.length} boundaries` : ""}) in ${root}`);
    else log.step(`reference cache: not stored (${r.why})`);
  } catch (e) {
    log.warn(`reference cache: not stored (${fsError(e, root, "cannot write").message})`);
  }
}
async function bisected(plan, probed, m, log) {
  if (!probed || plan.bisect === false || !wantsBisect(m)) return { m, failed: null };
  const failed = await bisectStep(plan, probed, m.runDir, log);
  if (failed) return { m, failed };
  const withB = await withBisect(m, log);
  return { m: withB.bisect ? { ...withB, bisect: ranBy(withB.bisect, probed.python.command) } : withB, failed: null };
}
async function check(plan, deps) {
  if (plan.mode === "probe") throw new InputError("mode probe only runs the probe (probe()); check() reaches a verdict");
  const runDir = resolve4(plan.runDir);
  const hold = await holdRunDir(runDir, plan.mode === "full" ? "refuse" : "wait", deps.log);
  try {
    return await checkHeld(plan, deps, runDir);
  } finally {
    hold.release();
  }
}
async function checkHeld(plan, deps, runDir) {
  const { log } = deps;
  const probed = plan.mode === "full" ? await probe(plan, log, deps.isolationHost) : null;
  try {
    return await judged(plan, deps, probed, runDir);
  } finally {
    probed?.release(log);
  }
}
async function judged(plan, deps, probed, runDir) {
  const { log } = deps;
  const now = deps.now ?? (() => /* @__PURE__ */ new Date());
  const env = deps.env ?? process.env;
  const staleKept = removeStaleReports(runDir);
  const measured = await measure(runDir, plan.threshold, log);
  if (plan.modelDir) checkModelName(measured.probe, plan.modelDir);
  const { m, failed } = await bisected(plan, probed, measured, log);
  const p = m.probe;
  const unwritable = runDirUnwritable(runDir);
  const unwritten = unwritable ? `${RUN_FILES.report}, ${RUN_FILES.markdown} and ${RUN_FILES.html} were not written (${unwritable})${staleKept.length ? `; an earlier judge's ${andList(staleKept.map((x) => basename2(x)))} could not be removed and may not match this verdict` : ""}` : null;
  if (unwritten) log.warn(unwritten);
  const docsDir = plan.writeDocs ? docsModelDir(plan, p) : null;
  let docsError = null;
  let lock = null;
  if (docsDir) {
    try {
      lock = await lockDocs(docsDir, log, { breakLock: plan.breakLock });
    } catch (e) {
      if (!isDocsError(e, docsDir, runDir)) throw e;
      docsError = e;
    }
  }
  try {
    sweepDocs(lock ? docsDir : null, runDir, log, !!plan.confineDocs);
    const commit = commitOf(plan, p, env);
    let old = null;
    try {
      old = docsDir && !docsError ? readDocs(docsDir, !!plan.confineDocs) : null;
    } catch (e) {
      if (!isDocsError(e, docsDir, runDir)) throw e;
      docsError = e;
    }
    const documented = documentedPlan(old, !!p.emulate, plan.writeDocs ? "model dir not available here; pass --model-dir to document" : plan.docsSkipped ?? "not written in this run (documents turned off: --no-docs)");
    const ctx = {
      now: now(),
      commit,
      isolation: probed?.isolation ?? deps.isolation ?? null,
      unisolatedFallback: probed?.unisolatedFallback ?? null,
      baseline: null,
      documented,
      docs: null,
      bisectFailed: failed,
      bisectUnavailable: plan.bisect === false ? "bisect turned off (--no-bisect)" : "bisect runs on the NPU host (mode full); this run dir holds no bisect/bisect.json",
      unwritten
    };
    try {
      ctx.baseline = baselineIn(old, { commit, prompt: p.prompt, emulate: p.emulate, environment: p.environment, metrics: m.metrics });
    } catch (e) {
      if (!isDocsError(e, docsDir, runDir)) throw e;
      docsError = e;
    }
    const withoutDocs = (e) => verdict(m, {
      ...ctx,
      docs: null,
      documented: { attempted: true, ok: false, path: DOC_PATHS.phase2, detail: e.message, failed: { message: e.message, exitCode: e.exitCode === EXIT.infra ? EXIT.infra : EXIT.input } }
    });
    const reportOnly = (r) => {
      const rw = reportWrites(r, runDir, historyIn(old));
      if (!unwritten) commitWrites(rw.writes);
      return rw;
    };
    const plannedFrom = (o) => {
      try {
        return planDocs(verdict(m, ctx), o, !p.emulate);
      } catch (e) {
        if (!isDocsError(e, docsDir, runDir)) throw e;
        docsError = e;
        return null;
      }
    };
    const placeDocs = (first, also) => {
      let planned2 = first;
      for (let tries = 1; ; tries++) {
        try {
          commitWrites([...planned2.writes, ...also(planned2.result)]);
          return planned2;
        } catch (e) {
          if (!(e instanceof ChangedSinceRead) || !docsDir) throw e;
          if (tries >= CHANGED_TRIES) throw new InfraError(`changed while npu-block-gate was writing it, ${tries} times in a row (an editor saving it over and over?); nothing was changed: save your edit, then re-judge this run dir`, e.file);
          log.step(`docs: ${e.file} changed since it was read (an edit saved meanwhile): reading it again and merging again`);
          const again = readDocs(docsDir, !!plan.confineDocs);
          const next = plannedFrom(again);
          if (!next) throw docsError;
          planned2 = next;
        }
      }
    };
    let report;
    let rendered;
    const planned = old && !docsError ? plannedFrom(old) : null;
    if (docsError) {
      report = withoutDocs(docsError);
      rendered = reportOnly(report);
    } else if (!planned || !deps.proposeDocs) {
      let rw = null;
      try {
        if (planned) {
          placeDocs(planned, (docs) => {
            report = verdict(m, { ...ctx, docs });
            rw = reportWrites(report, runDir, historyIn(old));
            return unwritten ? [] : rw.writes;
          });
        } else {
          report = verdict(m, { ...ctx, docs: null });
          rw = reportWrites(report, runDir, historyIn(old));
          if (!unwritten) commitWrites(rw.writes);
        }
        rendered = rw;
      } catch (e) {
        if (!isDocsError(e, docsDir, runDir)) throw e;
        docsError = e;
        report = withoutDocs(e);
        rendered = reportOnly(report);
      }
    } else {
      const placed = placeDocs(planned, () => []);
      report = verdict(m, { ...ctx, docs: placed.result });
      const refused = await deps.proposeDocs(placed.result, report);
      if (refused !== null) report = verdict(m, { ...ctx, docs: placed.result, documented: { ...documented, refused } });
      rendered = reportOnly(report);
    }
    logDocs(report.docs, log);
    if (probed) storeCaches(plan, probed, p, ctx.now, log);
    return { report, runDir, markdown: rendered.markdown, json: rendered.json, exitCode: report.exit_code, docs: report.docs, probed, docsError };
  } finally {
    lock?.release();
  }
}
function errorReport(plan, message, exitCode, o = {}) {
  return errorVerdict({
    now: o.now ?? /* @__PURE__ */ new Date(),
    message,
    exitCode,
    model: { name: plan.modelDir ? basename2(resolve4(plan.modelDir)) : "unknown", dir: plan.modelDir ?? "" },
    commit: plan.commit ?? (o.env ?? process.env).GITHUB_SHA ?? "uncommitted",
    threshold: plan.threshold,
    runDir: resolve4(plan.runDir),
    isolation: o.isolation ?? null
  });
}

export {
  takeRunFiles,
  probe,
  planModel,
  check,
  errorReport
};
