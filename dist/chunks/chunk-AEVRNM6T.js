import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  EMULATED,
  EVENT_PREFIX,
  EXIT_CODES,
  GateError,
  InfraError,
  InputError,
  RUN_FILES,
  RUN_FILES_CONTRACT,
  UNKNOWN,
  cell,
  fsError,
  generationName,
  html,
  hubCacheOf,
  id,
  isId,
  keepAnswer,
  keptAnswer,
  literal,
  mtimeOf,
  plain,
  probeEnv,
  pythonCandidates,
  readStamped,
  realHost,
  realView,
  recordNpu,
  resolveTarget,
  runBounded,
  signalWords,
  str,
  sweepLeftovers,
  text
} from "./chunk-7HMQRJMS.js";

// package.json
var package_default = {
  name: "npu-block-gate",
  version: "0.1.0",
  description: "Phase 2 single-block validation gate for LLM deployments on AMD NPUs with Xilinx/mlir-air: CLI, GitHub Action and runner agent",
  type: "module",
  license: "MIT",
  engines: {
    node: "^20.17.0 || >=22.9.0"
  },
  bin: {
    "npu-block-gate": "dist/cli.js"
  },
  main: "dist/index.js",
  scripts: {
    build: "node scripts/build.mjs",
    typecheck: "tsc --noEmit",
    test: "node scripts/test.mjs",
    "test:fast": "node scripts/test.mjs --fast",
    "test:ts": "node scripts/test.mjs ts",
    demo: "node scripts/demo.mjs",
    install: "node scripts/install-native.mjs",
    "build:native": "node-gyp rebuild --directory=native && node scripts/copy-native.mjs",
    bench: "tsx bench/bench.ts",
    mutate: "tsx bench/mutate.ts",
    fuzz: "tsx bench/fuzz.ts"
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
    "playwright-core": "^1.65.2",
    tsx: "^4.23.15",
    typescript: "^7.0.2",
    uvu: "^0.5.6"
  },
  overrides: {
    "content-type": "2.1.0"
  }
};

// src/tool.ts
var TOOL = { name: "npu-block-gate", version: package_default.version };
var COMMAND = "npx npu-block-gate";

// src/fs/lock.ts
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
var LockHeld = class extends InfraError {
  constructor(message, path) {
    super(message, path);
    this.name = "LockHeld";
  }
};
var FOREIGN_STALE_MS = 30 * 6e4;
var UNWRITTEN_STALE_MS = 1e4;
var CANNOT_LOCK = /* @__PURE__ */ new Set(["EROFS", "EACCES", "EPERM", "ENOENT", "ENOTDIR"]);
function bootId() {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || null;
  } catch {
    return null;
  }
}
function processStart(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}
function readOwner(path) {
  let text2;
  let mtime;
  try {
    mtime = statSync(path).mtimeMs;
    text2 = readFileSync(path, "utf8");
  } catch (e) {
    if (e.code === "ENOENT") return null;
    throw fsError(e, path, "cannot read the lock");
  }
  let owner = null;
  try {
    const o = JSON.parse(text2);
    if (Number.isSafeInteger(o.pid) && typeof o.host === "string" && typeof o.nonce === "string") {
      owner = { pid: o.pid, host: o.host, boot: typeof o.boot === "string" ? o.boot : null, start: typeof o.start === "string" ? o.start : null, since: String(o.since ?? ""), nonce: o.nonce };
    }
  } catch {
  }
  return { owner, ageMs: Date.now() - mtime };
}
var minutes = (ms) => `${Math.round(ms / 6e4)} min`;
function judge(owner, ageMs, breakLock) {
  if (!owner) {
    if (breakLock) return { stale: true, why: "it names no owner; broken as --break-lock asks" };
    return ageMs > UNWRITTEN_STALE_MS ? { stale: true, why: `it names no owner and is ${Math.round(ageMs / 1e3)} s old` } : { stale: false, foreign: false };
  }
  if (owner.host !== hostname()) {
    if (ageMs > FOREIGN_STALE_MS) return { stale: true, why: `pid ${owner.pid} on another host, ${owner.host}, took it ${minutes(ageMs)} ago; a lock from another host is stale after ${minutes(FOREIGN_STALE_MS)}` };
    if (breakLock) return { stale: true, why: `pid ${owner.pid} on another host, ${owner.host}, took it ${minutes(ageMs)} ago; broken as --break-lock asks` };
    return { stale: false, foreign: true, staleAt: Date.now() - ageMs + FOREIGN_STALE_MS };
  }
  const boot = bootId();
  if (owner.boot && boot && owner.boot !== boot) return { stale: true, why: `pid ${owner.pid} took it before this machine restarted` };
  try {
    process.kill(owner.pid, 0);
  } catch (e) {
    if (e.code === "ESRCH") return { stale: true, why: `pid ${owner.pid} is no longer running` };
  }
  const start = processStart(owner.pid);
  if (owner.start !== null && start !== null && start !== owner.start) return { stale: true, why: `pid ${owner.pid} is no longer running (the pid is another process's now)` };
  return { stale: false, foreign: false };
}
function writeFile(path, text2) {
  let fd;
  try {
    fd = openSync(path, "wx", 420);
  } catch (e) {
    if (e.code === "EEXIST") return "exists";
    throw e;
  }
  try {
    writeSync(fd, text2);
  } catch (e) {
    closeSync(fd);
    try {
      unlinkSync(path);
    } catch {
    }
    throw e;
  }
  closeSync(fd);
  return "ok";
}
function breakStale(path, seen, breakLock) {
  const breaker = `${path}.break`;
  if (writeFile(breaker, String(process.pid)) === "exists") {
    try {
      if (Date.now() - statSync(breaker).mtimeMs > UNWRITTEN_STALE_MS) unlinkSync(breaker);
    } catch {
    }
    return false;
  }
  try {
    const now = readOwner(path);
    if (!now) return true;
    const same = now.owner && seen.owner ? now.owner.nonce === seen.owner.nonce : now.owner === seen.owner;
    if (!same || !judge(now.owner, now.ageMs, breakLock).stale) return false;
    unlinkSync(path);
    return true;
  } finally {
    try {
      unlinkSync(breaker);
    } catch {
    }
  }
}
async function acquireLock(path, w) {
  const now = w.now ?? Date.now;
  const sleep = w.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  const poll = w.pollMs ?? 50;
  const deadline = now() + (w.timeoutMs ?? 10 * 6e4);
  const me = { pid: process.pid, host: hostname(), boot: bootId(), start: processStart(process.pid), since: (/* @__PURE__ */ new Date()).toISOString(), nonce: randomBytes(8).toString("hex") };
  let said = false;
  for (; ; ) {
    let made;
    try {
      made = writeFile(path, JSON.stringify(me) + "\n");
    } catch (e) {
      if (CANNOT_LOCK.has(e.code ?? "")) return null;
      throw fsError(e, path, "cannot create the lock");
    }
    if (made === "ok") return { path, release: () => release(path, me) };
    const held = readOwner(path);
    if (!held) continue;
    const j = judge(held.owner, held.ageMs, !!w.breakLock);
    if (j.stale) {
      let broke;
      try {
        broke = breakStale(path, held, !!w.breakLock);
      } catch (e) {
        throw fsError(e, path, `cannot break the stale lock (${j.why})`);
      }
      if (broke) w.broke(held.owner, j.why);
      continue;
    }
    const o = held.owner;
    const who = o ? `pid ${o.pid} on ${o.host} since ${o.since}` : "an unknown process";
    if (j.foreign) {
      throw new LockHeld(`held by ${who}: another host, so whether that run still goes on cannot be checked from here; the lock counts as stale ${minutes(FOREIGN_STALE_MS)} after it was taken (at ${new Date(j.staleAt).toISOString()}); if no run holds it, pass --break-lock`, path);
    }
    if (!said) {
      w.waiting(o);
      said = true;
    }
    if (now() > deadline) {
      throw new LockHeld(`gave up waiting for the lock held by ${who} (a live process on this host); if no run holds it, remove the file`, path);
    }
    await sleep(poll);
  }
}
function release(path, me) {
  try {
    if (readOwner(path)?.owner?.nonce === me.nonce) unlinkSync(path);
  } catch {
  }
}

// src/probe/run.ts
import { spawn } from "node:child_process";
import { accessSync, constants, existsSync, readdirSync, readFileSync as readFileSync2, realpathSync, statSync as statSync2 } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { constants as osConstants } from "node:os";
var PIPE_GRACE_MS = 2e3;
function probeDir() {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, "scripts", "probe");
    if (existsSync(join(candidate, "__main__.py"))) return candidate;
    dir = dirname(dir);
  }
  throw new InfraError("scripts/probe/__main__.py not found next to npu-block-gate; the installation is incomplete");
}
function installRoot() {
  return dirname(dirname(probeDir()));
}
var ProbeInterrupted = class extends InfraError {
  constructor(signal, what) {
    super(`interrupted by ${signal} while the probe ran ${what}; the probe and everything it started were stopped`);
    this.signal = signal;
    this.status = 128 + (signal === "SIGINT" ? 2 : 15);
  }
  signal;
  status;
};
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
  const candidates = Array.isArray(python) ? python : python && typeof python === "object" ? [{ command: python.executable, source: python.source, why: python.why }] : pythonCandidates(python);
  const tried = [];
  const deadline = a.timeoutSec ? Date.now() + a.timeoutSec * 1e3 : null;
  for (const c of candidates) {
    const r = c.skip ? { kind: "skip", why: c.skip } : await runOnce(c, a, h, deadline);
    if (r.kind === "ok") return { python: r.python, stdout: r.stdout };
    if (c.source === "option") throw new InputError(`--python ${c.command}: ${r.why}`);
    if (c.source === "env") throw new InputError(`NPU_BLOCK_GATE_PYTHON=${c.command}: ${r.why}`);
    tried.push(`${c.command} (${r.why})`);
    h.onSkip?.(c, r.why);
  }
  throw new InfraError(`no Python with numpy found: tried ${tried.join(", ")}; activate your mlir-air environment (e.g. source airenv/bin/activate), pass --python or set NPU_BLOCK_GATE_PYTHON`);
}
function notAProgram(command) {
  if (!command.includes("/")) return null;
  try {
    const st = statSync2(command);
    if (st.isDirectory()) return "is a directory, not a Python";
    if (!st.isFile()) return "is not a regular file, not a Python";
    accessSync(command, constants.X_OK);
    return null;
  } catch (e) {
    const code = e.code;
    return code === "ENOENT" ? "not found" : code === "EACCES" ? "is not executable, not a Python" : null;
  }
}
function missing(command) {
  if (command.includes("/")) return !existsSync(command);
  return realHost.which(command) === null;
}
function homes() {
  const out = ["/root", "/home", process.env.HOME, realHost.home].filter((h) => !!h).map((h) => resolve(h));
  try {
    for (const n of readdirSync("/home")) out.push(join("/home", n));
  } catch {
  }
  return out;
}
var within = (path, dir) => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
var holdsHome = (d, hs) => hs.some((h) => within(h, d));
function askable(path, untrusted) {
  const roots = untrusted.map(realView.realpath);
  const target = realView.realpath(path);
  if (roots.some((r) => within(target, r))) return null;
  if (!roots.some((r) => within(resolve(path), r))) return path;
  return /^python[0-9.]*$/.test(basename(target)) ? target : null;
}
var untrustedOf = (a) => [...a.writable ?? [], ...a.readable ?? [], ...(a.mounts ?? []).flatMap((m) => [m.src, m.dest])];
var saidAsked = /* @__PURE__ */ new Map();
var QUESTION = "import sys, json; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix] + sys.path + [{'tag': sys.implementation.cache_tag}]))";
var saidStamps = (said) => Object.fromEntries(said.filter((p) => typeof p === "string" && isAbsolute(p)).map((p) => [p, mtimeOf(p)]));
var asking = new AbortController();
function stopAsking() {
  asking.abort();
  asking = new AbortController();
  saidAsked.clear();
}
function ask(run, env) {
  const answer = (out) => {
    const line = out.slice(0, out.lastIndexOf("\n") + 1).split("\n").find((l) => l.startsWith("[") && l.trimEnd().endsWith("]"));
    try {
      return line ? JSON.parse(line) : null;
    } catch {
      return null;
    }
  };
  return runBounded(run, ["-I", "-c", QUESTION], { cwd: "/", env, timeoutMs: 3e4, until: (out) => answer(out) !== null, signal: asking.signal }).then((r) => {
    const said = r.answered || r.status === 0 ? answer(r.stdout) ?? [] : [];
    return Array.isArray(said) ? said : [];
  });
}
async function interpreterDirs(command, env, untrusted = [], answers = null) {
  const { path, said } = await interpreterSaid(command, env, untrusted, answers);
  if (!path) return [];
  const dirs = (said2) => {
    const hs = homes();
    const out = /* @__PURE__ */ new Set();
    const add = (p) => {
      let d;
      try {
        d = realpathSync(p);
        if (!statSync2(d).isDirectory()) d = dirname(d);
      } catch {
        return;
      }
      if (d !== "/" && !holdsHome(d, hs)) out.add(d);
    };
    add(dirname(path));
    add(dirname(dirname(path)));
    for (const p of [...said2, ...(env.PYTHONPATH ?? "").split(":")]) if (typeof p === "string" && p && isAbsolute(p)) add(p);
    if (typeof said2[0] === "string") {
      add(dirname(said2[0]));
      add(dirname(dirname(said2[0])));
    }
    return [...out];
  };
  return dirs(said);
}
function interpreterSaid(command, env, untrusted = [], answers = null) {
  const path = command.includes("/") ? resolve(command) : realHost.which(command);
  if (!path) return Promise.resolve({ path: null, run: null, said: [] });
  const run = askable(path, untrusted);
  if (!run) return Promise.resolve({ path, run: null, said: [] });
  const key = `${run}\0${JSON.stringify(env)}`;
  let said = saidAsked.get(key);
  if (!said) {
    const keep = answers && run === path ? answers : null;
    const kept = keep ? keptAnswer(keep, run, saidStamps) : null;
    said = kept?.some((x) => typeof x === "object" && x !== null && "tag" in x) ? Promise.resolve(kept) : ask(run, env).then((s) => {
      if (keep && s.length) keepAnswer(keep, run, s, saidStamps(s));
      return s;
    });
    saidAsked.set(key, said);
  }
  return said.then((s) => ({ path, run, said: s }));
}
function askInterpreterEarly(candidates, a) {
  const first = firstRunnable(candidates, a);
  return first ? interpreterDirs(first.command, first.env, first.untrusted, a.answers ?? null) : Promise.resolve([]);
}
function firstRunnable(candidates, a) {
  const first = candidates.find((c) => !c.skip && !missing(c.command) && !notAProgram(c.command));
  return first ? { command: first.command, env: probeEnv(process.env, a.envAllow), untrusted: untrustedOf(a) } : null;
}
var timedOutError = (a, what) => new InfraError(`probe ${a.subcommand} timed out after ${a.timeoutSec}s${what}; its process group was stopped`);
function beforeDeadline(p, deadline) {
  if (deadline === null) return p;
  return new Promise((done) => {
    const t = setTimeout(() => done(null), Math.max(0, deadline - Date.now()));
    void p.then((v) => {
      clearTimeout(t);
      done(v);
    });
  });
}
async function runOnce(c, a, h, deadline = null) {
  if (a.isolation && missing(c.command)) return { kind: "skip", why: "not found" };
  const notRunnable = notAProgram(c.command);
  if (notRunnable) return { kind: "skip", why: notRunnable };
  const iso = a.isolation;
  const runner = { ...process.env };
  const allowed = probeEnv(runner, a.envAllow);
  const base = { ...allowed, PYTHONUNBUFFERED: "1", PYTHONDONTWRITEBYTECODE: "1" };
  const hub = iso && iso.mode !== "none" ? hubCacheOf(runner, realHost.home) : null;
  const env = { ...base, ...hub && existsSync(hub) ? { HF_HUB_CACHE: realpathSync(hub) } : {}, ...a.extraEnv };
  const plain2 = [c.command, probeDir(), a.subcommand, ...a.args];
  const asked = iso && iso.mode !== "none" ? await beforeDeadline(interpreterDirs(c.command, allowed, untrustedOf(a), a.answers ?? null), deadline) : [];
  if (asked === null) {
    stopAsking();
    throw timedOutError(a, ` while ${c.command} was asked where it lives (it did not answer)`);
  }
  const own = [installRoot(), ...asked];
  const cwd = a.cwd ?? a.runDir ?? a.writable?.[a.writable.length - 1];
  const argv = iso ? iso.wrap(plain2, { writable: a.writable ?? [], mounts: a.mounts, readable: [...own, ...a.readable ?? []], env: runner, probeEnv: env, network: !!a.network, cwd }) : plain2;
  iso?.sweep?.();
  const wantsEvents = a.args.includes("--events");
  return new Promise((resolve4, reject) => {
    const child = spawn(argv[0], argv.slice(1), {
      stdio: [wantsEvents ? "pipe" : "ignore", "pipe", "pipe"],
      env,
      ...iso && cwd ? { cwd } : {},
      // Its own process group: a timeout or a cancel stops the probe and everything it started.
      detached: true
    });
    let python = { command: c.command, executable: c.command, version: "?", numpy: "?", source: c.source, why: c.why };
    let lastError = "";
    let failure = null;
    let timedOut = false;
    let stdout = "";
    let buf = "";
    let spoke = false;
    let pending = Promise.resolve();
    const onEvent = (ev) => {
      if (ev.event === "python") {
        python = { command: c.command, executable: String(ev.executable), version: String(ev.version), numpy: String(ev.numpy), source: c.source, why: c.why };
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
      if (chunk.length) spoke = true;
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
    let watchedAt = 0;
    const glance = () => {
      if (!iso?.pidNamespace && Date.now() - watchedAt >= 20) {
        watchedAt = Date.now();
        watch();
      }
    };
    child.stdout.on("data", (d) => {
      stdout += d.toString("utf8");
      glance();
    });
    child.stderr.on("data", (d) => {
      takeErr(d);
      glance();
    });
    const doomed = /* @__PURE__ */ new Map();
    const watch = () => {
      if (child.pid) {
        for (const pid of descendants(child.pid)) if (!doomed.has(pid)) doomed.set(pid, processStart(pid) ?? "");
      }
    };
    const watcher = iso?.pidNamespace ? null : setInterval(watch, 100);
    watcher?.unref();
    const killGroup = (sig) => {
      if (!child.pid) return;
      watch();
      try {
        process.kill(-child.pid, sig);
      } catch {
      }
      for (const [pid, start] of doomed) {
        if (processStart(pid) !== start) continue;
        try {
          process.kill(pid, sig);
        } catch {
        }
      }
    };
    const stop = () => {
      killGroup("SIGTERM");
      setTimeout(() => killGroup("SIGKILL"), 5e3).unref();
    };
    const timer = deadline !== null ? setTimeout(() => {
      timedOut = true;
      stop();
    }, Math.min(Math.max(0, deadline - Date.now()), 2 ** 31 - 1)) : null;
    let interrupted = null;
    const onSignal = (sig) => () => {
      interrupted = interrupted ?? sig;
      stop();
    };
    const onInt = onSignal("SIGINT");
    const onTerm = onSignal("SIGTERM");
    process.on("SIGINT", onInt);
    process.on("SIGTERM", onTerm);
    const cleanup = () => {
      if (timer) clearTimeout(timer);
      if (watcher) clearInterval(watcher);
      process.removeListener("SIGINT", onInt);
      process.removeListener("SIGTERM", onTerm);
    };
    child.on("error", (e) => {
      cleanup();
      if (e.code === "ENOENT") resolve4({ kind: "skip", why: "not found" });
      else reject(new InfraError(`cannot start ${argv[0]}: ${e.message}`));
    });
    let closed = false;
    child.on("exit", () => {
      setTimeout(() => {
        if (closed) return;
        h.onLine(`the probe exited, but a process it started kept its output open; stopped after ${PIPE_GRACE_MS / 1e3}s`);
        child.stdout?.destroy();
        child.stderr?.destroy();
        child.stdin?.destroy();
      }, PIPE_GRACE_MS).unref();
    });
    child.on("close", (code, signal) => {
      closed = true;
      if (!iso?.pidNamespace) killGroup("SIGKILL");
      cleanup();
      let swept = null;
      try {
        iso?.sweep?.();
      } catch (e) {
        swept = e;
      }
      if (buf.trim()) takeErr(Buffer.from("\n"));
      void pending.then(() => {
        if (failure) return reject(failure);
        if (swept) return reject(swept);
        if (interrupted) return reject(new ProbeInterrupted(interrupted, a.subcommand));
        if (timedOut) return reject(timedOutError(a, ""));
        if (!spoke && !stdout.trim()) {
          const sig = signal ?? (code !== null && code > 128 && code < 160 ? signalName(code - 128) : null);
          if (sig) return resolve4({ kind: "skip", why: `crashed before the probe said a word: killed by ${signalWords(sig)}${signal ? "" : ` (exit status ${code})`}` });
          return resolve4({ kind: "skip", why: `is not a Python: it ${code === 0 ? "exited 0" : `exited with status ${code}`} without a word from the probe` });
        }
        if (code === 0 && wantsEvents && python.version === "?") {
          return resolve4({ kind: "skip", why: "is not a Python: it exited 0 without saying which Python it is (the probe's first line)" });
        }
        if (code === 0) return resolve4({ kind: "ok", python, stdout });
        if (code === EXIT_CODES.no_numpy) return resolve4({ kind: "skip", why: "cannot import numpy" });
        const why = lastError || (signal ? `killed by ${signal}` : `exited with status ${code}`);
        if (code === EXIT_CODES.input) return reject(Object.assign(new InputError(why), { stdout }));
        const log = a.runDir ? ` (log: ${join(a.runDir, "probe.log")})` : "";
        reject(new InfraError(`probe ${a.subcommand} failed: ${why}${log}`));
      });
    });
  });
}
function signalName(n) {
  return Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0] ?? null;
}
function descendants(pid, proc = "/proc") {
  const parentOf = /* @__PURE__ */ new Map();
  let entries;
  try {
    entries = readdirSync(proc);
  } catch {
    return [];
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync2(join(proc, e, "stat"), "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parentOf.set(Number(e), ppid);
    } catch {
    }
  }
  const out = [];
  const frontier = [pid];
  while (frontier.length) {
    const p = frontier.pop();
    for (const [c, pp] of parentOf) if (pp === p && !out.includes(c)) {
      out.push(c);
      frontier.push(c);
    }
  }
  return out;
}

// src/metrics/json.ts
function encode(v) {
  if (typeof v === "number") return Number.isFinite(v) ? v : Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
  if (Array.isArray(v)) return v.map(encode);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, encode(x)]));
  return v;
}
var toJsonSafe = (v) => encode(v);

// src/report/json.ts
function toJson(value) {
  return JSON.stringify(toJsonSafe(value), null, 2) + "\n";
}

// src/seed/thresholds.ts
var WHOLE_COSINE_MIN = 0.99;
var SQNR_GOOD_DB = 40;
var NORM_RATIO_WARN = 0.01;
var ERROR_BUDGET_WARN = 3;
var ERROR_MEASURE = "relative L2 error ||x - fp32|| / ||fp32|| over the real rows";
var EXPECTED_BUDGET_WARN = 3;
var LENS_SCALE_WARN = 5e-3;
var MAX_ABS_REGRESSION = 1.5;
function perPositionThreshold(headDim) {
  if (!Number.isFinite(headDim) || headDim <= 0) throw new RangeError(`head_dim must be a positive number, got ${headDim}`);
  const t = 0.99 - 0.01 * Math.log2(headDim / 64);
  return Math.min(0.99, Math.max(0.97, t));
}
function formatThreshold(t) {
  return Number(t.toFixed(4)).toString();
}
function wellBelow(threshold) {
  return 1 - 2 * (1 - threshold);
}
function cleanBar(threshold) {
  return 1 - (1 - threshold) / 10;
}

// src/text/format.ts
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
function fmtBudget(ratio) {
  if (Number.isNaN(ratio)) return "n/a";
  if (!Number.isFinite(ratio)) return "inf";
  return `${ratio < 10 ? ratio.toFixed(2) : ratio.toFixed(0)}x`;
}

// src/check/model-dir.ts
import { realpathSync as realpathSync2, statSync as statSync3 } from "node:fs";
import { basename as basename2, dirname as dirname2, resolve as resolve2 } from "node:path";
function airRootOf(path) {
  let d = resolve2(path);
  while (d !== dirname2(d)) {
    if (basename2(d) === "llms" && basename2(dirname2(d)) === "programming_examples") return dirname2(dirname2(d));
    d = dirname2(d);
  }
  return null;
}
function modelDirAt(path) {
  const dir = resolve2(path);
  let st;
  try {
    st = statSync3(dir);
  } catch (e) {
    if (e.code === "ENOENT") throw new InputError("model dir does not exist", path);
    throw fsError(e, path, "cannot read the model dir");
  }
  if (!st.isDirectory()) throw new InputError("model dir is not a directory", path);
  let real;
  try {
    real = realpathSync2(dir);
  } catch (e) {
    throw fsError(e, path, "cannot resolve the model dir");
  }
  return { dir: real, name: basename2(real), airRoot: airRootOf(real) };
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
  prereq: (id2) => `<!-- npu-block-gate:prereq:${id2} -->`,
  prereqPrefix: "<!-- npu-block-gate:prereq:",
  /** Suffix of an "## Active blockers" heading npu-block-gate added (removed again once the section is empty). */
  blockersHeading: "<!-- npu-block-gate:blockers -->",
  /** What every marker starts with. */
  prefix: "<!-- npu-block-gate:"
};
var BLOCK_MARKERS = [MARK.latestBegin, MARK.latestEnd, MARK.historyBegin, MARK.historyEnd];
function withoutCodeSpans(line) {
  if (!line.includes("`")) return line;
  return line.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (m) => " ".repeat(m.length));
}
function markersOn(rawLine) {
  if (!rawLine.includes(MARK.prefix)) return [];
  const line = withoutCodeSpans(rawLine);
  const out = [];
  let at = line.indexOf(MARK.prefix);
  while (at !== -1) {
    const end = line.indexOf("-->", at);
    out.push(end === -1 ? line.slice(at) : line.slice(at, end + 3));
    at = line.indexOf(MARK.prefix, at + MARK.prefix.length);
  }
  return out;
}
var FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})(.*)$/;
function fencedLines(lines) {
  const out = new Uint8Array(lines.length);
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i].text;
    let s = 0;
    while (s < 3 && t.charCodeAt(s) === 32) s++;
    if (t.charCodeAt(s) !== 96 && t.charCodeAt(s) !== 126) continue;
    const open = FENCE_OPEN.exec(t);
    if (!open || open[1][0] === "`" && open[2].includes("`")) continue;
    const ch = open[1][0];
    const close = new RegExp(`^ {0,3}${ch === "`" ? "`" : "~"}{${open[1].length},}[ \\t]*$`);
    let j = i + 1;
    while (j < lines.length && !close.test(lines[j].text)) j++;
    if (j === lines.length) continue;
    out.fill(1, i, j + 1);
    i = j;
  }
  return out;
}
var DOC_PATHS = {
  phase2: "docs/development_progress/phase2_block.md",
  todo: "TODO.md"
};

// src/docs/phase2.ts
import { createHash } from "node:crypto";

// src/docs/text.ts
import { isUtf8 } from "node:buffer";
function decodeDoc(buf) {
  if (isUtf8(buf)) return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString("utf8");
  let out = "";
  let chunk = [];
  const flush = () => {
    if (chunk.length) out += String.fromCharCode(...chunk);
    chunk = [];
  };
  const push = (u) => {
    chunk.push(u);
    if (chunk.length >= 4096) flush();
  };
  const n = buf.length;
  let i = 0;
  while (i < n) {
    const b = buf[i];
    if (b < 128) {
      push(b);
      i++;
      continue;
    }
    let need = 0;
    let cp = 0;
    let min = 0;
    if (b >= 194 && b <= 223) {
      need = 1;
      cp = b & 31;
      min = 128;
    } else if (b >= 224 && b <= 239) {
      need = 2;
      cp = b & 15;
      min = 2048;
    } else if (b >= 240 && b <= 244) {
      need = 3;
      cp = b & 7;
      min = 65536;
    }
    let ok = need > 0 && i + need < n;
    if (ok) {
      for (let k = 1; k <= need; k++) {
        const c = buf[i + k];
        if ((c & 192) !== 128) {
          ok = false;
          break;
        }
        cp = cp << 6 | c & 63;
      }
    }
    if (ok && (cp < min || cp >= 55296 && cp <= 57343 || cp > 1114111)) ok = false;
    if (!ok) {
      push(56320 + b);
      i++;
      continue;
    }
    if (cp >= 65536) {
      const v = cp - 65536;
      push(55296 + (v >> 10));
      push(56320 + (v & 1023));
    } else push(cp);
    i += need + 1;
  }
  flush();
  return out;
}
function encodeDoc(text2) {
  if (text2.isWellFormed()) return Buffer.from(text2, "utf8");
  const out = Buffer.allocUnsafe(text2.length * 3);
  let o = 0;
  for (let i = 0; i < text2.length; i++) {
    const u = text2.charCodeAt(i);
    if (u < 128) {
      out[o++] = u;
      continue;
    }
    if (u >= 55296 && u <= 56319 && i + 1 < text2.length) {
      const lo = text2.charCodeAt(i + 1);
      if (lo >= 56320 && lo <= 57343) {
        const cp = 65536 + (u - 55296 << 10) + (lo - 56320);
        out[o++] = 240 | cp >> 18;
        out[o++] = 128 | cp >> 12 & 63;
        out[o++] = 128 | cp >> 6 & 63;
        out[o++] = 128 | cp & 63;
        i++;
        continue;
      }
    }
    if (u >= 56448 && u <= 56575) {
      out[o++] = u - 56320;
      continue;
    }
    if (u >= 55296 && u <= 57343) {
      out[o++] = 239;
      out[o++] = 191;
      out[o++] = 189;
      continue;
    }
    if (u < 2048) {
      out[o++] = 192 | u >> 6;
      out[o++] = 128 | u & 63;
      continue;
    }
    out[o++] = 224 | u >> 12;
    out[o++] = 128 | u >> 6 & 63;
    out[o++] = 128 | u & 63;
  }
  return Buffer.from(out.subarray(0, o));
}
function splitLines(text2) {
  const parts = text2.split("\n");
  const lines = new Array(parts.length - (parts[parts.length - 1] === "" ? 1 : 0));
  for (let i = 0; i < lines.length; i++) {
    const t = parts[i];
    if (i === parts.length - 1) lines[i] = { text: t, eol: "" };
    else if (t.charCodeAt(t.length - 1) === 13) lines[i] = { text: t.slice(0, -1), eol: "\r\n" };
    else lines[i] = { text: t, eol: "\n" };
  }
  return lines;
}
function joinLines(lines) {
  let s = "";
  for (const l of lines) s += l.text + l.eol;
  return s;
}
function dominantEol(lines) {
  let crlf = 0;
  let lf = 0;
  for (const l of lines) {
    if (l.eol === "\r\n") crlf++;
    else if (l.eol === "\n") lf++;
  }
  return crlf > lf ? "\r\n" : "\n";
}
function insertLines(lines, after, texts) {
  if (!texts.length) return;
  const dom = dominantEol(lines);
  const anchor = after >= 0 ? lines[after] : null;
  let eol = anchor?.eol || (after + 1 < lines.length ? lines[after + 1].eol || dom : dom);
  let lastEol = eol;
  if (anchor && anchor.eol === "") {
    anchor.eol = dom;
    eol = dom;
    lastEol = "";
  }
  lines.splice(after + 1, 0, ...texts.map((text2, i) => ({ text: text2, eol: i === texts.length - 1 ? lastEol : eol })));
}
function removeLines(lines, from, count) {
  const endsFile = from + count === lines.length;
  const lastEol = count > 0 ? lines[from + count - 1].eol : "\n";
  lines.splice(from, count);
  if (endsFile && lastEol === "" && from > 0) lines[from - 1].eol = "";
}

// src/docs/phase2.ts
var HISTORY_HEADER = [
  "| date | commit | prompt | outcome | whole cosine | per-pos min | threshold | max_abs | max_rel | SQNR | shape | integration | npu |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
];
var OLD_HEADER = HISTORY_HEADER[0].replace(" npu |", "");
function historyKey(r) {
  const text2 = r.prompt?.text ?? "";
  const hash = createHash("sha256").update(text2).digest("hex").slice(0, 8);
  const positions2 = r.prompt?.positions ? `@${r.prompt.real_len}` : "";
  const inject = r.emulate?.inject && /^[A-Za-z0-9_.-]{1,64}$/.test(r.emulate.inject) ? `:${r.emulate.inject}` : "";
  const emulated = r.emulate ? `~emulated${inject}` : "";
  return { commit: r.commit.slice(0, 12), prompt: `${r.prompt?.style ?? "prompt"}:${hash}${positions2}${emulated}`, npu: recordNpu(r) };
}
function shapeOf(r) {
  return r.metrics ? `${r.metrics.realLen}x${r.metrics.cols}` : "n/a";
}
function sameCommit(a, b) {
  if (a === b) return true;
  const hex = /^[0-9a-f]{7,64}$/;
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return hex.test(x) && hex.test(y) && (x.startsWith(y) || y.startsWith(x));
}
function outcomeCell(r) {
  return `${r.outcome.toUpperCase()}${r.emulate ? " (emulated)" : ""}`;
}
function historyRow(r, commitCell) {
  const k = historyKey(r);
  const m = r.metrics;
  const cells = [
    r.created_at.slice(0, 10),
    commitCell ?? k.commit,
    k.prompt,
    outcomeCell(r),
    fmtCos(m?.wholeCosine),
    fmtCos(m?.perPosition.min),
    formatThreshold(r.thresholds.perPosition),
    fmtSci(m?.errors.maxAbs),
    fmtSci(m?.errors.maxRel),
    fmtDb(m?.errors.sqnrDb),
    shapeOf(r),
    r.integration?.path ?? "n/a",
    k.npu
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
function findBlocks(lines, file) {
  const refuse = (i, problem) => {
    throw new InputError(`line ${i + 1}: ${problem}; fix it by hand, nothing was changed`, file);
  };
  const seen = /* @__PURE__ */ new Map();
  const fenced = fencedLines(lines);
  lines.forEach((l, i) => {
    if (fenced[i]) return;
    for (const m of markersOn(l.text)) {
      if (!BLOCK_MARKERS.includes(m)) refuse(i, `${shown(m)} is not an npu-block-gate marker of this file`);
      if (l.text.trim() !== m) refuse(i, `marker ${m} must stand on a line of its own`);
      const first = seen.get(m);
      if (first !== void 0) refuse(i, `marker ${m} appears again (first on line ${first + 1}): duplicated marker`);
      seen.set(m, i);
    }
  });
  const pair = (begin, end) => {
    const b = seen.get(begin);
    const e = seen.get(end);
    if (b === void 0 && e === void 0) return null;
    if (b === void 0) return refuse(e, `marker ${end} has no ${begin} before it: unbalanced markers`);
    if (e === void 0) return refuse(b, `marker ${begin} has no ${end} after it: unbalanced markers`);
    if (e < b) return refuse(e, `marker ${end} comes before its ${begin} (line ${b + 1}): unbalanced markers`);
    return { begin: b, end: e };
  };
  const latest = pair(MARK.latestBegin, MARK.latestEnd);
  const history = pair(MARK.historyBegin, MARK.historyEnd);
  if (latest && history) {
    const [a, b, an, bn] = latest.begin < history.begin ? [latest, history, "latest", "history"] : [history, latest, "history", "latest"];
    if (b.begin < a.end) {
      refuse(b.begin, b.end < a.end ? `the ${bn} block (lines ${b.begin + 1}-${b.end + 1}) is nested inside the ${an} block (lines ${a.begin + 1}-${a.end + 1})` : `the ${bn} block (lines ${b.begin + 1}-${b.end + 1}) overlaps the ${an} block (lines ${a.begin + 1}-${a.end + 1})`);
    }
  }
  return { latest, history };
}
function shown(s) {
  return JSON.stringify(s.length > 60 ? `${s.slice(0, 57)}...` : s);
}
function updateHistoryLines(lines, blk, r) {
  const k = historyKey(r);
  const row = historyRow(r);
  for (let i = blk.begin + 1; i < blk.end; i++) {
    const c = tableCells(lines[i].text);
    if (c && c[2] === k.prompt && rowNpu(c) === k.npu && sameCommit(c[1], k.commit)) {
      lines[i].text = c[1].length > k.commit.length ? historyRow(r, c[1]) : row;
      return;
    }
  }
  upgradeHeader(lines, blk);
  let last = -1;
  for (let i = blk.begin + 1; i < blk.end; i++) if (tableCells(lines[i].text)) last = i;
  if (last === -1) insertLines(lines, blk.begin, [...HISTORY_HEADER, row]);
  else insertLines(lines, last, [row]);
}
function rowNpu(cells) {
  return cells[12] || UNKNOWN;
}
function upgradeHeader(lines, blk) {
  for (let i = blk.begin + 1; i < blk.end - 1; i++) {
    if (lines[i].text.trim() !== OLD_HEADER) continue;
    lines[i].text = HISTORY_HEADER[0];
    if (/^\|(-+\|)+$/.test(lines[i + 1].text.trim())) lines[i + 1].text = HISTORY_HEADER[1];
    return;
  }
}
function readHistory(text2, file) {
  if (!text2) return [];
  const lines = splitLines(text2);
  const { history } = findBlocks(lines, file);
  if (!history) return [];
  const out = [];
  for (let i = history.begin + 1; i < history.end; i++) {
    const c = tableCells(lines[i].text);
    if (!c || c.length < 11 || c[0] === "date" || /^-+$/.test(c[0].replace(/:/g, ""))) continue;
    out.push({ date: c[0], commit: c[1], prompt: c[2], outcome: c[3], maxAbs: Number(c[7]), shape: c[10], cosine: Number(c[4]), minCosine: Number(c[5]), threshold: Number(c[6]), npu: rowNpu(c) });
  }
  return out;
}
function baselineFor(history, r) {
  const k = historyKey(r);
  const shape = shapeOf(r);
  const hit = history.find((h) => /^PASS( \(emulated\))?$/.test(h.outcome) && h.prompt === k.prompt && h.npu === k.npu && h.shape === shape && !sameCommit(h.commit, k.commit) && Number.isFinite(h.maxAbs) && h.maxAbs > 0);
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
  const lines = splitLines(existing ?? newPhase2Doc(r.model.name));
  let { latest, history } = findBlocks(lines, file);
  if (!latest || !history) {
    const add = [];
    if (lines.length && lines[lines.length - 1].text.trim() !== "") add.push("");
    if (!latest) add.push("## Latest result (npu-block-gate)", "", MARK.latestBegin, MARK.latestEnd);
    if (!history) add.push(...latest ? [] : [""], "## History (npu-block-gate)", "", MARK.historyBegin, MARK.historyEnd);
    const dom = dominantEol(lines);
    if (lines.length && lines[lines.length - 1].eol === "") lines[lines.length - 1].eol = dom;
    lines.push(...add.map((text2) => ({ text: text2, eol: dom })));
    ({ latest, history } = findBlocks(lines, file));
  }
  const body = latestMarkdown.trim().split(/\r?\n/);
  const edits = [
    { at: latest.begin, apply: () => {
      const eol = lines[latest.begin].eol;
      lines.splice(latest.begin + 1, latest.end - latest.begin - 1, ...body.map((text2) => ({ text: text2, eol })));
    } },
    { at: history.begin, apply: () => updateHistoryLines(lines, history, r) }
  ].sort((a, b) => b.at - a.at);
  for (const e of edits) e.apply();
  return joinLines(lines);
}

// src/docs/todo.ts
var PHASE2 = /^(\s*[-*]\s+\[)([^\]]*)(\]\s*(?:Phase\s+)?2\s*[:.)-]\s*Single[- ]Block Validation\b.*)$/i;
var PHASE_N = (n) => new RegExp(`^\\s*[-*]\\s+\\[[^\\]]*\\]\\s*(?:Phase\\s+)?${n}\\s*[:.)-]`, "i");
var HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
var PHASE_STATUS = /^phase status\b/i;
var ACTIVE_BLOCKERS = /^active blockers\b/i;
var PHASE_STATUS_HEADING = "## Phase status";
var PHASE2_LINE = "- [ ] 2: Single-Block Validation";
function todoTemplate(model, _hfId, cfg, nl = "\n") {
  const c = cfg;
  return [
    `# Deployment: ${model}`,
    "",
    PHASE_STATUS_HEADING,
    "- [ ] 0: Build CPU Reference",
    "- [ ] 1: Kernel Validation",
    PHASE2_LINE,
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
var blockerMark = (npu) => MARK.blocker.replace(/ -->$/, `:${npu} -->`);
var BLOCKER_PREFIX = MARK.blocker.replace(/ -->$/, "");
function blockerLine(r) {
  const failed = r.gates.filter((g) => g.status === "fail" && g.id !== "G4");
  const what = failed.map((g) => `${g.id} ${g.name}: ${typeof g.value === "number" ? fmtCos(g.value) : g.value} (bar ${g.bar})`).join("; ");
  const npu = recordNpu(r);
  const on = npu === UNKNOWN || npu === EMULATED ? "" : ` on ${generationName(npu)}`;
  return `- Phase 2 single-block validation FAILS at ${r.commit.slice(0, 12)}${on} (${r.created_at.slice(0, 10)}): ${what}. See docs/development_progress/phase2_block.md. ${blockerMark(npu)}`;
}
function prereqLine(id2, prerequisite, detail) {
  return `  - ${prerequisite} (${detail}) ${MARK.prereq(id2)}`;
}
function sections(lines) {
  const heads = [];
  const fenced = fencedLines(lines);
  lines.forEach((l, i) => {
    if (fenced[i] || !l.text.includes("#")) return;
    const h = HEADING.exec(l.text);
    if (h) heads.push({ heading: i, level: h[1].length, title: (h[2] ?? "").replace(/\s*<!--.*?-->\s*/g, " ").replace(/[ \t]#+$/, "").trim() });
  });
  return heads.map((h, k) => {
    const next = heads.slice(k + 1).find((o) => o.level <= h.level);
    return { ...h, end: next ? next.heading : lines.length };
  });
}
function checkMarkers(lines, file) {
  const seen = /* @__PURE__ */ new Map();
  const fenced = fencedLines(lines);
  lines.forEach((l, i) => {
    if (fenced[i]) return;
    for (const m of new Set(markersOn(l.text))) {
      const first = seen.get(m);
      if (first !== void 0) throw new InputError(`line ${i + 1}: marker ${m} appears again (first on line ${first + 1}): duplicated marker; fix it by hand, nothing was changed`, file);
      seen.set(m, i);
    }
  });
}
function markedLine(lines, marker, from = 0) {
  let fenced = null;
  for (let i = from; i < lines.length; i++) {
    if (!lines[i].text.includes(marker)) continue;
    fenced ??= fencedLines(lines);
    if (!fenced[i] && markersOn(lines[i].text).some((m) => m.startsWith(marker))) return i;
  }
  return -1;
}
function lastContent(lines, s) {
  let at = s.end - 1;
  while (at > s.heading && lines[at].text.trim() === "") at--;
  return at;
}
function updateTodo(existing, r, file = "TODO.md") {
  const lines = splitLines(existing ?? todoTemplate(r.model.name, r.model.hf_id, r.model.config));
  const notes = [];
  checkMarkers(lines, file);
  const status = () => sections(lines).find((s) => PHASE_STATUS.test(s.title)) ?? null;
  const inStatus = (re) => {
    const s = status();
    if (!s) return -1;
    for (let i = s.heading + 1; i < s.end; i++) if (re.test(lines[i].text)) return i;
    return -1;
  };
  const mine = blockerMark(recordNpu(r));
  let bi = markedLine(lines, mine);
  if (bi === -1) bi = markedLine(lines, MARK.blocker);
  if (r.outcome === "pass" && bi !== -1) {
    removeLines(lines, bi, 1);
    removeEmptyBlockersHeading(lines);
  }
  if (r.outcome === "fail") {
    const line = blockerLine(r);
    if (bi !== -1) lines[bi].text = line;
    else addBlocker(lines, line, status());
  }
  const tick = (mark) => {
    const i = inStatus(PHASE2);
    if (i !== -1) lines[i].text = lines[i].text.replace(PHASE2, (_m, a, _b, c) => `${a}${mark}${c}`);
    return i;
  };
  const verb = r.outcome === "pass" ? "ticked" : "unticked";
  if (r.outcome === "pass" || r.outcome === "fail") {
    const open = r.outcome === "pass" ? markedLine(lines, BLOCKER_PREFIX) : -1;
    const i = open !== -1 ? -2 : tick(r.outcome === "pass" ? "x" : " ");
    if (i === -2) notes.push(`Phase 2 was not ticked: another NPU generation's blocker is still open (${lines[open].text.replace(/\s*<!--.*?-->\s*/g, " ").trim().slice(0, 160)})`);
    else if (i === -1 && !status()) notes.push(`${file} has no "${PHASE_STATUS_HEADING}" section (the deploy-new-llm template's), so Phase 2 was not ${verb}`);
    else if (i === -1) notes.push(`${file} has no "${PHASE2_LINE}" line under "${PHASE_STATUS_HEADING}", so Phase 2 was not ${verb}`);
  }
  for (const w of r.integration?.workarounds ?? []) {
    const line = prereqLine(w.id, w.prerequisite, w.detail);
    const existingAt = markedLine(lines, MARK.prereq(w.id));
    if (existingAt !== -1) {
      lines[existingAt].text = line;
      continue;
    }
    let anchor = inStatus(PHASE_N(4));
    if (anchor === -1) anchor = inStatus(PHASE_N(5));
    if (anchor === -1) {
      const s = status();
      if (!s) {
        notes.push(`${file} has no "${PHASE_STATUS_HEADING}" section, so the Phase 4/5 prerequisite for ${w.id} was not written: ${w.prerequisite}`);
        continue;
      }
      anchor = lastContent(lines, s);
    }
    let at = anchor;
    while (at + 1 < lines.length && markedLine(lines, MARK.prereqPrefix, at + 1) === at + 1) at++;
    insertLines(lines, at, [line]);
  }
  return { text: joinLines(lines), notes };
}
function addBlocker(lines, line, status) {
  const blockers = sections(lines).find((s) => ACTIVE_BLOCKERS.test(s.title));
  if (blockers) {
    insertLines(lines, lastContent(lines, blockers), [line]);
    return;
  }
  const heading = `## Active blockers ${MARK.blockersHeading}`;
  if (status && status.end < lines.length) {
    insertLines(lines, status.end - 1, lines[status.end - 1].text.trim() === "" ? [heading, line, ""] : ["", heading, line]);
    return;
  }
  insertLines(lines, lines.length - 1, lines.length ? ["", heading, line] : [heading, line]);
}
function removeEmptyBlockersHeading(lines) {
  const s = sections(lines).find((x) => markersOn(lines[x.heading].text).includes(MARK.blockersHeading));
  if (!s) return;
  for (let i = s.heading + 1; i < s.end; i++) if (lines[i].text.trim() !== "") return;
  let from = s.heading;
  if ((s.end - s.heading === 1 || s.end === lines.length) && from > 0 && lines[from - 1].text.trim() === "") from--;
  removeLines(lines, from, s.end - from);
}
function readTodo(text2) {
  if (text2 === null) return { phase2Done: null, blockers: [] };
  const lines = splitLines(text2);
  const all = sections(lines);
  let phase2Done = null;
  const status = all.find((s) => PHASE_STATUS.test(s.title));
  for (let i = status ? status.heading + 1 : lines.length; status && i < status.end; i++) {
    const m = PHASE2.exec(lines[i].text);
    if (m) {
      phase2Done = m[2].trim().toLowerCase() === "x";
      break;
    }
  }
  const blockers = [];
  for (const s of all.filter((x) => ACTIVE_BLOCKERS.test(x.title))) {
    for (let i = s.heading + 1; i < s.end; i++) {
      const t = lines[i].text;
      if (/^\s*[-*]\s+(?!\[[xX]\])/.test(t)) blockers.push(t.replace(/^\s*[-*]\s+(\[ \]\s*)?/, "").replace(/\s*<!--.*?-->\s*/g, " ").trim());
    }
  }
  return { phase2Done, blockers };
}

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
    const code = toAlignment(align);
    while (++columnIndex < mostCellsPerRow) {
      alignments[columnIndex] = code;
    }
  }
  columnIndex = -1;
  const row = [];
  const sizes = [];
  while (++columnIndex < mostCellsPerRow) {
    const code = alignments[columnIndex];
    let before = "";
    let after = "";
    if (code === 99) {
      before = ":";
      after = ":";
    } else if (code === 108) {
      before = ":";
    } else if (code === 114) {
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
        const code = alignments[columnIndex];
        if (code === 114) {
          before = " ".repeat(size);
        } else if (code === 99) {
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
  const code = typeof value === "string" ? value.codePointAt(0) : 0;
  return code === 67 || code === 99 ? 99 : code === 76 || code === 108 ? 108 : code === 82 || code === 114 ? 114 : 0;
}

// src/report/heatmap.ts
var CELL_CLASSES = ["clean", "drift", "under", "well", "nan", "none"];
var TEXT_COLUMNS = 32;
var CELL_CHAR = { clean: "\xB7", drift: "-", under: "\u2592", well: "\u2588", nan: "!", none: " " };
function cellClass(c, lens) {
  if (Number.isNaN(c)) return "nan";
  if (c >= lens.cleanBar) return "clean";
  if (c >= lens.threshold) return "drift";
  if (c >= lens.wellBelow) return "under";
  return "well";
}
function classMeaning(k, lens) {
  const t = formatThreshold(lens.threshold);
  switch (k) {
    case "clean":
      return `>= ${formatThreshold(lens.cleanBar)} (clean)`;
    case "drift":
      return `>= ${t}, under ${formatThreshold(lens.cleanBar)} (drifts, above the threshold)`;
    case "under":
      return `< ${t} (under the threshold)`;
    case "well":
      return `< ${formatThreshold(lens.wellBelow)} (well below the threshold)`;
    case "nan":
      return "NaN in the bucket";
    case "none":
      return "not judged";
  }
}
function rowLabel(r) {
  return isId(r.name) ? r.name : `#${r.order}`;
}
function rowCells(r, lens, columns = Infinity) {
  const p = r.profile;
  if (r.error || !p || !Array.isArray(p.points) || !p.points.length) return [];
  const per = Math.max(1, Math.ceil(p.points.length / columns));
  const out = [];
  for (let i = 0; i < p.points.length; i += per) {
    let lo = Infinity;
    let far = null;
    for (let j = i; j < Math.min(p.points.length, i + per); j++) {
      const v = Number(p.points[j]);
      lo = Number.isNaN(v) || Number.isNaN(lo) ? NaN : Math.min(lo, v);
      const n = p.norms?.[j];
      if (typeof n === "number" && !Number.isNaN(n) && (far === null || Math.abs(n - 1) > Math.abs(far - 1))) far = n;
    }
    const start = i * p.bucket;
    const end = Math.min(r.rows, (i + per) * p.bucket) - 1;
    out.push({ start, end, cosine: lo, norm: far, klass: cellClass(lo, lens) });
  }
  return out;
}
function positions(c) {
  return c.start === c.end ? String(c.start) : `${c.start}-${c.end}`;
}
function textHeatmap(lens, columns = TEXT_COLUMNS) {
  const rows = lens.rows.filter((r) => !r.error && r.profile?.points?.length);
  if (!rows.length) return "";
  const n = rows[0].rows;
  const cellsOf = lens.rows.map((r) => ({ r, cells: rowCells(r, lens, columns) }));
  const width = Math.max(...cellsOf.map((x) => x.cells.length));
  const labelW = Math.max(8, ...lens.rows.map((r) => [...rowLabel(r)].length)) + 2;
  const span = cellsOf.find((x) => x.cells.length === width).cells;
  const per = span.length ? span[0].end - span[0].start + 1 : 1;
  const first = lens.firstBelow?.order ?? null;
  const onset = lens.onset && (first === null || lens.onset.order < first) ? lens.onset.order : null;
  const last = String(n - 1);
  const axis = `${" ".repeat(labelW)}0${" ".repeat(Math.max(1, width - 1 - last.length))}${last}`;
  const lines = [axis];
  for (const { r, cells } of cellsOf) {
    const body = r.error ? "(not judged)" : cells.map((c) => CELL_CHAR[c.klass]).join("");
    const mark = r.order === first ? "  \u25C0 first under the threshold" : r.order === onset ? "  \u25C0 onset" : "";
    lines.push(`${rowLabel(r).padEnd(labelW)}${body}${mark}`.trimEnd());
  }
  const shown2 = ["clean", "drift", "under", "well", "nan"];
  return [
    `Per-position cosine by boundary: ${n} positions, ${per === 1 ? "one" : `the lowest of ${per}`} per column.`,
    "",
    "```text",
    ...lines,
    "```",
    "",
    `Legend: ${shown2.map((k) => `\`${CELL_CHAR[k]}\` ${classMeaning(k, lens)}`).join(" \xB7 ")}.`
  ].join("\n");
}

// src/report/markdown.ts
var RUN_FILES_HTML = RUN_FILES_CONTRACT.html;
var ICON = { pass: "\u2705", fail: "\u274C", skip: "\u2796", error: "\u26A0\uFE0F" };
function list(v) {
  return Array.isArray(v) ? v : [];
}
function plainOf(v, max = 120) {
  return plain(v, max).replace(/\s*\n\s*/g, " ");
}
function deviceText(r) {
  const env = r.environment;
  if (r.emulate) return "none: emulated run (no NPU ran)";
  const n = env?.npu;
  if (!n) return plainOf(env?.device ?? "not detected");
  const what = [n.name, n.pci].filter(Boolean).map((x) => plainOf(x, 80)).join(", ");
  const versions = [n.driver && `amdxdna ${plainOf(n.driver, 60)}`, n.firmware && `firmware ${plainOf(n.firmware, 60)}`, n.xrt && `XRT ${plainOf(n.xrt, 60)}`].filter(Boolean).join(", ");
  return `${generationName(recordNpu(r))}${what ? ` (${what})` : ""}${versions ? `; ${versions}` : ""}`;
}
function verdictLine(r) {
  const name = text(r.model.name, 64);
  if (r.outcome === "error") return `${ICON.error} **Phase 2 ERROR** (${name}): could not judge; this is not a FAIL verdict`;
  const failed = r.gates.filter((g) => g.status === "fail").map((g) => g.id);
  const emulated = r.emulate ? " \xB7 **EMULATED** (no NPU ran)" : "";
  return r.outcome === "pass" ? `${ICON.pass} **Phase 2 PASS** (${name})${emulated}` : `${ICON.fail} **Phase 2 FAIL** (${name}): ${failed.join(", ")} failed${emulated}`;
}
function emulatedNote(r) {
  const e = r.emulate;
  if (!e) return [];
  return [
    "> [!WARNING]",
    `> **EMULATED**: no NPU ran. The tree's own block ran on an emulated NPU (${text(e.runtime, 120)}), so this checks the integration code (argument order, layouts, padding, buffer reuse), not the NPU.${e.inject ? ` Injected bug: ${id(e.inject)}.` : ""}`,
    ""
  ];
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
  const shown2 = pts.map((p) => (Number.isFinite(p) ? p : yMin).toFixed(4));
  const xLabel = bucket > 1 ? `position (min per ${bucket} rows)` : "position";
  const xMax = bucket > 1 ? cos.length - 1 : pts.length - 1;
  return [
    "```mermaid",
    "xychart-beta",
    '  title "Per-position cosine, layer 0 ffn_out"',
    `  x-axis "${xLabel}" 0 --> ${xMax}`,
    `  y-axis "cosine" ${yMin} --> 1`,
    `  line [${shown2.join(", ")}]`,
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
    ...budgetLine(r),
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
function budgetLine(r) {
  const fb = r.lens?.rows.find((x) => x.name === "ffn_out")?.budget;
  if (!fb || !r.lens?.budget) return [];
  const ex = r.lens.budget.expected;
  if (fb.vsExpected !== void 0 && ex) {
    return [`Error budget against FP32 (${r.lens.budget.measure}): NPU ${fmtSci(fb.npu)}, HF bf16 ${fmtSci(fb.bf16)}, ratio ${fmtBudget(fb.ratio)}; expected ratio ${fmtBudget(fb.expectedRatio)} (the hardware twins, precision ${text(ex.precision, 20)}: ${fmtSci(fb.expected)}); NPU over expected **${fmtBudget(fb.vsExpected)}** (bar ${ex.bar}x${fb.over ? ": over it, the NPU adds error of its own, beyond what its number format costs" : ""}).`, ""];
  }
  return [`Error budget against FP32 (${r.lens.budget.measure}): NPU ${fmtSci(fb.npu)}, HF bf16 ${fmtSci(fb.bf16)}, ratio **${fmtBudget(fb.ratio)}** (bar ${r.lens.budget.bar}x${fb.over ? ": over it, the NPU adds error of its own" : ""}).`, ""];
}
function integrationSection(r, flavor) {
  const out = [];
  const i = r.integration;
  if (i) {
    out.push("### Integration", "");
    out.push(`- path: **${text(i.path, 32)}**, entry ${literal(i.entry)}${i.defined_in?.file ? `, defined in ${literal(i.defined_in.file)}` : ""}`);
    if (i.step1?.path_why) out.push(`- the seed's rule: ${text(i.step1.path_why)}`);
    if (i.reason) out.push(`- why: ${text(i.reason)}`);
    const s1 = i.step1;
    if (s1 && s1.matches !== void 0) {
      out.push(s1.matches ? "- Step 1: the per-layer kernel sequence matches llama's, so inheritance is allowed" : `- Step 1: the kernel sequence differs from llama's; kernel-first is forced by ${list(s1.breaks).slice(0, 20).map((b) => `(${text(b?.rule, 8)}) ${text(b?.detail)}`).join("; ")}`);
      if (s1.block) out.push(`- block 0 runs in ${literal(s1.block.function)} (${text(s1.block.where)}${s1.block.file ? `, ${literal(s1.block.file)}` : ""})`);
    }
    const unwired = list(i.coverage?.unwired);
    if (unwired.length) {
      out.push("- Phase 1 kernels that name this model but are not wired:");
      for (const u of unwired.slice(0, 50)) out.push(`  - ${text([str(u?.section), str(u?.shape)].filter(Boolean).join(" "))}${u?.used_by ? ` (${text(u.used_by)})` : ""}`);
    }
    const kernels = list(i.kernels);
    if (kernels.length) out.push(`- kernels: ${kernels.slice(0, 64).map((k) => id(k)).join(" \u2192 ")}`);
    if (i.cpu_attn !== null && i.cpu_attn !== void 0) out.push(`- attention: ${i.cpu_attn ? "CPU `attention_reference`" : "NPU flash attention"}`);
    const tiles = Object.entries(i.tiles && typeof i.tiles === "object" ? i.tiles : {});
    if (tiles.length) out.push(`- tiles: ${tiles.slice(0, 32).map(([k, v]) => `${id(k)} ${text(v, 64)}`).join(", ")}`);
    const workarounds = list(i.workarounds);
    if (workarounds.length) {
      out.push("- workarounds (Phase 4/5 prerequisites):");
      for (const w of workarounds.slice(0, 20)) out.push(`  - ${id(w?.id)}: ${text(w?.detail)}. ${text(w?.prerequisite)}`);
    } else out.push("- workarounds: none needed");
    for (const d of list(r.defaults?.differs).slice(0, 20)) out.push(`- differs from \`make diagnosis\`: ${text(d)}`);
    out.push("");
  }
  const ref = r.reference;
  const env = r.environment;
  const rows = [["", ""]];
  if (ref) rows.push(["reference", cell(`${ref.kind} via ${ref.runner} (lite_mode=False, ${ref.dtype})${ref.transformers ? `, transformers ${ref.transformers}` : ""}${ref.torch ? `, torch ${ref.torch}` : ""}`)]);
  if (r.prompt) rows.push(["prompt", cell(`${plainOf(r.prompt.style)} (${plainOf(r.prompt.source)}): ${r.prompt.real_len} tokens${r.prompt.padded_len ? `, padded to ${r.prompt.padded_len}` : ""}${positionsNote(r)}`)]);
  if (env) {
    rows.push(["python", cell(`${env.python} (${env.python_executable}), numpy ${env.numpy}`)]);
    rows.push(["device", cell(deviceText(r))]);
    if (env.xrt) rows.push(["XRT", cell(env.xrt)]);
    rows.push(["air tree commit", cell(env.git_commit ?? "not a git checkout")]);
  }
  rows.push(["probe isolation", cell(isolationText(r))]);
  if (flavor !== "doc") {
    const rc = r.reference?.cache;
    if (rc) rows.push(["reference cache", cell(`${rc.hit ? "hit" : "miss, stored"} ${rc.key.slice(0, 12)}`)]);
    if (r.kernel_cache) {
      const entries = list(r.kernel_cache.entries).slice(0, 16).map((e) => plainOf(e, 64));
      rows.push(["kernel cache", cell(`${r.emulate ? "emulated, nothing compiled" : r.kernel_cache.hit ? "hit" : "compiled"}${entries.length ? `: ${entries.join(", ")}` : ""}`)]);
    }
    const t = Object.entries(r.timings && typeof r.timings === "object" ? r.timings : {}).filter(([, v]) => typeof v === "number");
    if (t.length) rows.push(["timings", cell(t.slice(0, 16).map(([k, v]) => `${plainOf(k, 32)} ${fmtSeconds(v)}`).join(", "))]);
    rows.push(["engine", cell(r.metrics ? r.metrics.engine : "n/a")]);
  }
  if (rows.length > 1) out.push("### Environment", "", markdownTable(rows), "");
  return out;
}
function isolationText(r) {
  const i = r.isolation;
  if (!i) return "not known (this judge did not run the probe, and no record it trusts says how it ran)";
  return `${plainOf(i.mode, 16)}: ${plainOf(i.detail, 300)}${i.source === "probe job" ? " (as the probe job reported)" : ""}`;
}
function positionsNote(r) {
  const pos = r.prompt?.positions;
  if (!pos) return "";
  const how = { prompt: "the prompt itself", truncated: "the prompt truncated", continued: "the prompt continued with the prompt set", repeated: `the prompt continued with the prompt set, repeated (${pos.cycles} cycles)` }[pos.method] ?? plainOf(pos.method, 40);
  return `; --positions ${pos.requested}: ${how}${pos.set ? ` (${plainOf(pos.set, 120)}, ${pos.prompts_used} prompts)` : ""}, from ${pos.prompt_tokens} prompt tokens`;
}
function cos7(v) {
  return typeof v === "number" && Number.isFinite(v) ? v.toFixed(7) : "-";
}
function step2SanitySection(r) {
  const s = r.step2_sanity;
  if (!s) return [];
  const out = ["### Step 2 sanity: padded vs original on the CPU (informational)", ""];
  if (s.skipped) return [...out, `Not run: ${text(s.skipped, 600)}.`, ""];
  const o = s.original ?? {};
  const p = s.padded ?? {};
  out.push(`Both forwards in ${text(s.dtype ?? "float32", 16)} on the prompt's ${s.tokens ?? "?"} tokens; gate: both cosines >= ${s.gate}. Padded sizes: emb_dim ${o.emb_dim} \u2192 ${p.emb_dim}, hidden_dim ${o.hidden_dim} \u2192 ${p.hidden_dim}, n_heads ${o.n_heads} \u2192 ${p.n_heads} (${o.n_kv_heads} KV groups of ${o.group_size} \u2192 ${p.group_size}).`, "");
  out.push(markdownTable([
    ["padding", "layer-0 ffn_out cosine", "logits cosine", "result"],
    ...list(s.rows).map((x) => x.skipped ? [cell(plainOf(x.label, 120)), "-", "-", cell(`not run: ${plainOf(x.skipped, 300)}`)] : [cell(plainOf(x.label, 120)), cos7(x.ffn_out_cosine), cos7(x.logits_cosine), x.pass ? `${ICON.pass} pass` : `${ICON.fail} fail`])
  ]), "");
  if (s.why) out.push(`Why the reindexing matters: ${text(s.why, 600)}.`, "");
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
  return `${text(h.boundary)}: likely ${text(h.cause)}; ${text(h.where)}`;
}
function yFloor(values, t) {
  const finite = values.filter(Number.isFinite);
  const floorRaw = Math.min(t, ...finite.length ? finite : [t]) - 5e-3;
  return Math.max(-1, Math.floor(floorRaw * 1e3) / 1e3);
}
var label = (name, order) => `"${isId(name) ? name : `#${order}`}"`;
function lensChart(all) {
  const lens = { ...all, rows: all.rows.filter((r) => !r.error) };
  if (lens.rows.length < 2) return "";
  const t = lens.threshold;
  const y = yFloor(lens.rows.flatMap((r) => [r.wholeCosine, r.perPositionMin]), t);
  const pts = (f) => lens.rows.map((r) => (Number.isFinite(f(r)) ? f(r) : y).toFixed(4)).join(", ");
  return [
    "```mermaid",
    "xychart-beta",
    '  title "Cosine along block 0: whole, per-position min, threshold"',
    `  x-axis [${lens.rows.map((r) => label(r.name, r.order)).join(", ")}]`,
    `  y-axis "cosine" ${y} --> 1`,
    `  line [${pts((r) => r.wholeCosine)}]`,
    `  line [${pts((r) => r.perPositionMin)}]`,
    `  line [${lens.rows.map(() => t.toFixed(4)).join(", ")}]`,
    "```"
  ].join("\n");
}
function profileChart(name, order, profile, rows, t) {
  if (profile.points.length === 0) return "";
  const y = yFloor(profile.points, t);
  const shown2 = profile.points.map((p) => (Number.isFinite(p) ? p : y).toFixed(4));
  return [
    "```mermaid",
    "xychart-beta",
    `  title "Per-position cosine against position, boundary ${label(name, order).slice(1, -1)}"`,
    `  x-axis "position${profile.bucket > 1 ? ` (min per ${profile.bucket} rows)` : ""}" 0 --> ${Math.max(1, rows - 1)}`,
    `  y-axis "cosine" ${y} --> 1`,
    `  line [${shown2.join(", ")}]`,
    `  line [${shown2.map(() => t.toFixed(4)).join(", ")}]`,
    "```"
  ].join("\n");
}
function profiled(lens) {
  const judged = lens.rows.filter((r) => !r.error);
  if (!judged.length) return null;
  const named = lens.firstBelow ? judged.find((r) => r.order === lens.firstBelow.order) : void 0;
  return named ?? [...judged].sort((a, b) => Number.isNaN(a.perPositionMin) ? -1 : Number.isNaN(b.perPositionMin) ? 1 : a.perPositionMin - b.perPositionMin)[0];
}
function whereOf(n) {
  const parts = [n.step ? text(n.step, 40) : "", n.producedBy ? `written by ${literal(n.producedBy, { max: 80 })}` : ""].filter(Boolean);
  return parts.length ? ` (${parts.join(", ")})` : "";
}
function namedLine(n, t) {
  return `**First boundary under the threshold ${formatThreshold(t)}: ${id(n.name)}**${whereOf(n)}: cosine ${fmtCos(n.wholeCosine)}, per-position min ${fmtCos(n.perPositionMin)}.${n.hint ? ` ${hintLine(n.hint)}.` : ""}`;
}
function lensSection(r, opts) {
  const lens = r.lens;
  if (!lens) return [];
  const out = ["### The lens: every boundary inside block 0 (informational)", ""];
  const unpaired = list(lens.unpaired);
  if (!lens.rows.length) {
    const reasons = [...new Set(unpaired.map((u) => plainOf(u.reason, 200)))];
    out.push(`No boundary pairs to judge${unpaired.length ? `: ${unpaired.length} boundar${unpaired.length === 1 ? "y has" : "ies have"} one side only (${reasons.slice(0, 4).map((x) => text(x)).join("; ")})` : ""}.`, "");
    return out;
  }
  const rowsN = lens.rows[0].rows;
  const n = lens.firstBelow;
  const onset = lens.onset && (!n || lens.onset.order < n.order) ? lens.onset.order : null;
  out.push(`Each boundary on the ${lens.emulated ? "emulated NPU" : "NPU"} against the ${lens.reference ? "HF layer-0 hooks" : "reference"}, in block order, over the ${rowsN} real rows, with the gate's engine. The seed's gates stay the gates; a boundary under the threshold ${formatThreshold(lens.threshold)} is named.`, "");
  const budget = !!lens.budget;
  const ex = lens.budget?.expected ?? null;
  const cols = budget ? ex ? ["vs FP32", "expected", "NPU/exp"] : ["vs FP32"] : [];
  const cells = (b) => !budget ? [] : !b ? cols.map(() => "") : ex ? [fmtBudget(b.ratio), b.expectedRatio !== void 0 ? fmtBudget(b.expectedRatio) : "", b.vsExpected !== void 0 ? fmtBudget(b.vsExpected) : ""] : [fmtBudget(b.ratio)];
  out.push(markdownTable([
    ["#", "boundary", "step", "read from", "cosine", "per-pos min", "norm ratio", ...cols, "max_abs", ""],
    ...lens.rows.map((x) => [
      String(x.order).padStart(2, "0"),
      id(x.name, { inTable: true }),
      cell(x.step ?? "", 40),
      x.launch ? id(x.launch, { inTable: true }) : "returned",
      ...x.error ? ["-", "-", "-", ...cols.map(() => "-"), "-", `error: ${cell(x.error, 300)}`] : [
        fmtCos(x.wholeCosine),
        fmtCos(x.perPositionMin),
        fmtRatio(x.normRatio),
        ...cells(x.budget),
        fmtSci(x.maxAbs),
        [x.below ? `${ICON.fail} under` : x.order === onset ? "onset" : "", lens.scale?.order === x.order ? "\u26A0\uFE0F scale" : "", x.budget?.over ? "\u26A0\uFE0F error" : ""].filter(Boolean).join(" ")
      ]
    ])
  ]), "");
  if (lens.budget && ex) out.push(`vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), each a ${lens.budget.measure}, against HF layer 0 run in FP32 from the same weights and tokens. expected: the same ratio for the hardware twins (precision ${text(ex.precision, 20)}: bf16's roundings plus BFP16 where the tree compiles it), run again over the same launches from the FP32 block input: what the number format costs. NPU/exp: error(NPU) / error(hardware twins), about 1 for a right integration; above ${ex.bar}x the NPU adds error of its own (informational).`, "");
  else if (lens.budget) out.push(`vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), each a ${lens.budget.measure}, against HF layer 0 run in FP32 from the same weights and tokens: about 1 is as good as bf16 allows; above ${lens.budget.bar}x the NPU adds error of its own (informational).`, "");
  const heat = opts.flavor === "doc" ? "" : textHeatmap(lens);
  if (heat) {
    out.push(heat, "");
    out.push(`Every cell with its numbers, on a scale anchored at the threshold: ${opts.artifactUrl ? `\`${RUN_FILES_HTML}\` in the [run dir artifact](${opts.artifactUrl})` : `\`${RUN_FILES_HTML}\` in the run dir`}.`, "");
  }
  if (lens.firstBelow) {
    out.push(namedLine(lens.firstBelow, lens.threshold), "");
    const o = lens.onset;
    if (o && o.order < lens.firstBelow.order) {
      out.push(`The divergence begins earlier, at ${id(o.name)}${whereOf(o)}: cosine ${fmtCos(o.wholeCosine)}, per-position min ${fmtCos(o.perPositionMin)}, under the clean bar ${formatThreshold(lens.cleanBar)}.${o.hint ? ` ${hintLine(o.hint)}.` : ""}`, "");
    }
  } else if (lens.onset) {
    const o = lens.onset;
    out.push(`Every boundary is at or above the threshold ${formatThreshold(lens.threshold)}, **but a drift begins at ${id(o.name)}**${whereOf(o)}: cosine ${fmtCos(o.wholeCosine)}, per-position min ${fmtCos(o.perPositionMin)}, under the clean bar ${formatThreshold(lens.cleanBar)}.${o.hint ? ` ${hintLine(o.hint)}.` : ""}`, "");
  } else out.push(`Every boundary is at or above the threshold ${formatThreshold(lens.threshold)}.`, "");
  const sc = lens.scale;
  if (sc) out.push(`**Scale: ${id(sc.name)}**${whereOf(sc)} has norm ratio ${sc.accounted ? `|npu|/|twins| ${fmtRatio(sc.normRatio)} (the tree's RMSNorm eps accounted for; |npu|/|ref| ${fmtRatio(sc.accounted.normRatio)})` : fmtRatio(sc.normRatio)}, off 1 by more than ${sc.bar * 100}% (the first boundary to lose its scale; cosine cannot see it): likely ${text(sc.cause, 300)}.${sc.hint ? ` The seed: ${hintLine(sc.hint)}.` : ""}`, "");
  if (unpaired.length) {
    out.push("Not judged (one side only):", "");
    for (const u of unpaired.slice(0, 32)) out.push(`- ${id(u.name)} (${u.side === "both" ? "both sides, different shapes" : `${u.side} side only`}): ${text(u.reason, 200)}`);
    out.push("");
  }
  const chart = lensChart(lens);
  if (chart) out.push(chart, "");
  const pr = r.prompt?.positions ? profiled(lens) : null;
  if (pr) out.push(`Per-position cosine of ${id(pr.name)} against position, all ${pr.rows} positions${pr.profile.bucket > 1 ? ` (the lowest of each ${pr.profile.bucket})` : ""}:`, "", profileChart(pr.name, pr.order, pr.profile, pr.rows, lens.threshold), "");
  return out;
}
function rerunSection(b) {
  const r = b.rerun;
  if (b.void) return ["> [!WARNING]", `> **Bisect void**: ${text(b.void, 600)}`, ""];
  if (!r) return [];
  return [`Re-run: block 0 unswapped under ${literal(r.python, { max: 200 })} gave back the judged \`ffn_out\` ${r.exact ? "bit for bit" : `within tolerance (relative L2 ${fmtSci(r.relL2)} <= ${r.tolerance})`}, so the bisect ran the block that was judged.`, ""];
}
function launchSection(b) {
  const launches = list(b.launches);
  if (!launches.length) return [];
  const out = [
    "Launch level: each launch's buffers on the NPU against its CPU twin, computed from that launch's own captured inputs (numpy, FP32 accumulate, bf16 at the ELF's buffers).",
    "",
    markdownTable([
      ["launch", "ELF", "buffer", "boundary", "stage", "cosine", "per-pos min", "max_abs", ""],
      ...launches.slice(0, 64).flatMap((la) => list(la.buffers).slice(0, 64).map((bu) => [
        String(la.index),
        id(la.launch, { inTable: true }),
        id(bu.buffer, { inTable: true }),
        bu.boundary ? id(bu.boundary, { inTable: true }) : "",
        cell(bu.stage, 60),
        fmtCos(bu.wholeCosine),
        fmtCos(bu.perPositionMin),
        fmtSci(bu.maxAbs),
        bu.diverges ? `${ICON.fail} off its twin` : b.launchOffender && b.launchOffender.index === la.index && b.launchOffender.buffer === bu.buffer ? "drift starts" : ""
      ]))
    ]),
    ""
  ];
  const o = b.launchOffender;
  const at = (x) => `${id(x.launch)}** (launch ${x.index}), buffer ${id(x.buffer)}${x.boundary && x.boundary !== x.buffer ? ` (boundary ${id(x.boundary)})` : ""}${x.stage ? `, stage ${text(x.stage, 60)}` : ""}: cosine ${fmtCos(x.wholeCosine)}, per-position min ${fmtCos(x.perPositionMin)}.`;
  const c = b.launchCrossing;
  if (b.void) return out;
  if (o && c) {
    out.push(`**The drift starts at ${at(o)}${o.hint ? ` ${hintLine(o.hint)}.` : ""} It first crosses the threshold at **${at(c)}`, "");
  } else if (o) {
    out.push(`**${o.strength === "diverges" ? "First launch off its twin" : "No launch is under the threshold; the first that drifts"}: ${at(o)}${o.hint ? ` ${hintLine(o.hint)}.` : ""}`, "");
  } else out.push("Every launch matches its twin: the launches are right given their inputs (look at what feeds the block, or between the launches on the host).", "");
  return out;
}
function bisectSection(r) {
  const b = r.bisect;
  if (!b) return [];
  if (b.available && b.method === "twins") return twinsSection(b);
  const out = ["### Bisect (seed Step 4: one kernel at a time on the CPU)", "", ...rerunSection(b)];
  if (!b.available) out.push(`Bisect unavailable: ${text(b.reason)}`, "");
  else {
    out.push(markdownTable([
      ["step", "kernel", "CPU equivalent", "whole cosine", "per-pos min", "NaN/Inf", "block passes"],
      ...b.steps.slice(0, 64).map((s) => [id(s.step, { inTable: true }), s.kernel ? id(s.kernel, { inTable: true }) : "", cell(s.cpuEquivalent, 80), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), String(s.nonFinite), s.fixes ? "\u2705 yes" : "no"])
    ]), "");
    if (b.offender) {
      out.push(`**Offending boundary: ${id(b.offender.step)}** (kernel ${id(b.offender.kernel)}).${b.offender.hint ? ` ${hintLine(b.offender.hint)}.` : ""}`, "");
    } else if (!b.void) out.push(text(b.reason), "");
  }
  if (b.situation) out.push(`Failure shape: ${hintLine(b.situation)}.`, "");
  return out;
}
function twinsSection(b) {
  const out = [`### Bisect (seed Step 4 on the real tree: the CPU twins of its ELFs${b.emulated ? ", on the emulated NPU" : ""})`, ""];
  out.push(...rerunSection(b));
  out.push(...launchSection(b));
  out.push("Swap forward: `ffn_out` when ELFs 1 to i, in launch order, are answered by their twins instead of the NPU.", "");
  out.push(markdownTable([
    ["step", "ELF swapped", "swapped so far", "whole cosine", "per-pos min", "NaN/Inf", "block passes"],
    ...b.steps.slice(0, 64).map((s, i) => [String(i + 1), id(s.step, { inTable: true }), list(s.swapped).slice(0, 16).map((x) => id(x, { inTable: true })).join(", "), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), String(s.nonFinite), s.fixes ? "\u2705 yes" : "no"])
  ]), "");
  if (b.offender) out.push(`**Offending ELF (swap forward): ${id(b.offender.step)}**: swapping it to its twin brings the block above threshold.`, "");
  else if (!b.void) out.push(text(b.reason), "");
  if (b.situation) out.push(`Failure shape: ${hintLine(b.situation)}.`, "");
  return out;
}
function renderMarkdown(r, opts) {
  const out = [`${opts.flavor === "doc" ? "###" : "##"} ${verdictLine(r)}`, ""];
  if (r.outcome === "error") {
    out.push(`> ${text(r.error ?? "unknown error", 1e3)}`, "", "The check could not run to a verdict (infrastructure or input problem). Fix the cause and re-run; no gate was judged.", "");
    if (opts.artifactUrl) out.push(`Run dir and logs: [artifact](${opts.artifactUrl})`, "");
    return out.join("\n");
  }
  const p = r.prompt;
  const tokens = p?.positions ? `, ${text(p.style, 32)} prompt extended to ${p.real_len} positions (--positions)` : p ? `, ${text(p.style, 32)} prompt (${p.real_len} tokens)` : "";
  out.push(`Layer-0 \`ffn_out\` of block 0 on the ${r.emulate ? "emulated NPU" : "NPU"} vs the ${r.reference?.kind === "hf-bf16" ? "HuggingFace bf16" : "emulated bf16"} reference${tokens}, commit ${literal(str(r.commit).slice(0, 12))}.`, "");
  out.push(...emulatedNote(r));
  out.push(gatesTable(r), "");
  if (r.warnings.length) {
    out.push("**Warnings**", "");
    for (const w of r.warnings) out.push(`- \u26A0\uFE0F ${text(w.message, 600)}`);
    out.push("");
  }
  const body = [];
  body.push(...metricsSection(r));
  const chart = cosineChart(r, opts.chartPoints);
  if (chart) body.push(chart, "");
  body.push(...lensSection(r, opts));
  body.push(...bisectSection(r));
  body.push(...step2SanitySection(r));
  body.push(...layersSection(r));
  body.push(...integrationSection(r, opts.flavor));
  out.push(...opts.flavor === "doc" ? body.map((l) => l.startsWith("### ") ? `#${l}` : l) : body);
  if (opts.artifactUrl) out.push(`Full run dir and report: [artifact](${opts.artifactUrl})`, "");
  return out.join("\n");
}

// src/check/documents.ts
import { dirname as dirname3, join as join3, relative as relative2, isAbsolute as isAbsolute3 } from "node:path";
import { closeSync as closeSync2, openSync as openSync2, realpathSync as realpathSync3, unlinkSync as unlinkSync2 } from "node:fs";
import { randomBytes as randomBytes2 } from "node:crypto";

// src/fs/confine.ts
import { lstatSync } from "node:fs";
import { isAbsolute as isAbsolute2, join as join2, relative, resolve as resolve3, sep as sep2 } from "node:path";
function confineBelow(dir, path, what) {
  const root = resolve3(dir);
  const target = resolve3(path);
  const rel = relative(root, target);
  if (!rel || rel.startsWith("..") || isAbsolute2(rel)) throw new InputError(`${what} is not inside ${root}; refusing to write it`, path);
  let at = root;
  const parts = rel.split(sep2);
  for (let i = 0; i < parts.length; i++) {
    at = join2(at, parts[i]);
    let st;
    try {
      st = lstatSync(at);
    } catch (e) {
      if (e.code === "ENOENT") return;
      throw fsError(e, at, "cannot read");
    }
    if (st.isSymbolicLink()) throw new InputError(`${relative(root, at)} is a symlink; ${what} is never written through one (a pull request's code may have left it)`, at);
    if (i < parts.length - 1 && !st.isDirectory()) throw new InputError(`${relative(root, at)} is not a directory`, at);
  }
}

// src/report/html-kit.ts
import { createHash as createHash2 } from "node:crypto";
var PALETTE = {
  clean: "#d1e5f0",
  drift: "#fdb863",
  under: "#e66101",
  well: "#5e1d01",
  nan: "#542788",
  none: "#f0f0f0",
  pass: "#2166ac",
  fail: "#b35806",
  error: "#4d4d4d",
  line: "#08306b",
  threshold: "#b35806",
  shade: "#fee0b6"
};
var CSS = `
:root{color-scheme:light;--fg:#1a1a1a;--muted:#555;--rule:#ccc;--bg:#fff}
*{box-sizing:border-box}
body{margin:0 auto;padding:16px;max-width:1240px;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:1.35rem;margin:.2rem 0 .6rem}h2{font-size:1.1rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--rule);padding-bottom:.2rem}
h3{font-size:1rem;margin:1rem 0 .4rem}
p{margin:.4rem 0}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.92em;overflow-wrap:anywhere}
td code{overflow-wrap:normal;white-space:nowrap}
.banner{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;padding:.7rem 1rem;border-radius:6px;color:#fff;margin:.2rem 0 1rem}
.banner .verdict{font-size:1.5rem;font-weight:700;letter-spacing:.03em}
.banner.pass{background:${PALETTE.pass}}.banner.fail{background:${PALETTE.fail}}.banner.error{background:${PALETTE.error}}
.tag{display:inline-block;border:2px solid currentColor;border-radius:4px;padding:0 .4rem;font-weight:700}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;margin:.3rem 0}
.facts dt{color:var(--muted)}.facts dd{margin:0;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.4rem 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--rule);padding:.2rem .5rem;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;white-space:nowrap}
th{background:#f4f4f4}
tr.first-below td{font-weight:700}
.ok,.bad,.err{white-space:nowrap}
.ok{color:${PALETTE.pass};font-weight:700}.bad{color:${PALETTE.fail};font-weight:700}.err{color:${PALETTE.error};font-weight:700}
.gatebar{display:block;width:140px;height:10px;margin-top:3px}
.note{color:var(--muted);font-size:.9em}
.warn{border-left:4px solid ${PALETTE.fail};padding:.3rem .7rem;background:#fff7ec;margin:.5rem 0}
svg{display:block;width:100%;height:auto;max-width:1200px}
svg.chart{min-width:620px}svg.heat{min-width:760px}svg.spark{width:160px;min-width:160px;display:inline-block;vertical-align:middle}
svg text{font:11px system-ui,"DejaVu Sans",sans-serif;fill:#1a1a1a}
svg .axis{stroke:#888;stroke-width:1}svg .grid{stroke:#e5e5e5;stroke-width:1}
.k-clean{fill:${PALETTE.clean}}.k-drift{fill:${PALETTE.drift}}.k-under{fill:${PALETTE.under}}.k-well{fill:${PALETTE.well}}.k-nan{fill:${PALETTE.nan}}.k-none{fill:${PALETTE.none}}
.legend{display:flex;flex-wrap:wrap;gap:.3rem 1.1rem;margin:.4rem 0;font-size:.9em}
.legend span{display:inline-flex;align-items:center;gap:.35rem}
.legend svg{width:18px;height:14px;min-width:18px;display:inline-block}
.readout{min-height:1.5em;font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.9em;background:#f7f7f7;padding:.2rem .5rem;border-radius:4px}
[data-cell]:focus{outline:none}
svg[data-heatmap]:focus{outline:2px solid ${PALETTE.line};outline-offset:2px}
.cursor{fill:none;stroke:#000;stroke-width:2}
details{margin:.4rem 0}summary{cursor:pointer;color:var(--muted)}
.cell-pass{background:#e8f1f8}.cell-fail{background:#fdebd6}.cell-error{background:#eee}
rect.cell-pass{fill:#e8f1f8}rect.cell-fail{fill:#fdebd6}rect.cell-error{fill:#eee}
.fleet td{min-width:9rem}
@media (max-width:640px){body{padding:8px;font-size:14px}.banner .verdict{font-size:1.2rem}h1{font-size:1.15rem}}
@media print{body{max-width:none;padding:0;font-size:11pt}.scroll{overflow:visible}svg.chart,svg.heat{min-width:0}
.readout,.noprint{display:none}h2{break-after:avoid}table,svg,figure{break-inside:avoid}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}a{color:inherit;text-decoration:none}}
`;
var SCRIPT = `(function(){
"use strict";
function readout(el){var s=el.closest("figure");return s?s.querySelector("[data-readout]"):null;}
function show(el){var t=el.querySelector("title"),r=readout(el);if(t&&r){r.textContent=t.textContent;}}
function cellOf(e){return e.target&&e.target.closest?e.target.closest("[data-cell]"):null;}
document.addEventListener("pointerover",function(e){var c=cellOf(e);if(c)show(c);});
document.addEventListener("focusin",function(e){var c=cellOf(e);if(c)show(c);});
Array.prototype.forEach.call(document.querySelectorAll("svg[data-heatmap]"),function(svg){
var rows=Array.prototype.map.call(svg.querySelectorAll("[data-row]"),function(g){return g.querySelectorAll("[data-cell]");}).filter(function(x){return x.length;});
if(!rows.length)return;
var r=0,c=0,cur=document.createElementNS("http://www.w3.org/2000/svg","rect");cur.setAttribute("class","cursor");cur.setAttribute("visibility","hidden");svg.appendChild(cur);
function put(){var row=rows[r],el=row[Math.min(c,row.length-1)];["x","y","width","height"].forEach(function(k){cur.setAttribute(k,el.getAttribute(k));});cur.setAttribute("visibility","visible");show(el);}
svg.addEventListener("focus",put);
svg.addEventListener("blur",function(){cur.setAttribute("visibility","hidden");});
svg.addEventListener("keydown",function(e){var k=e.key;
if(k==="ArrowRight")c=Math.min(c+1,rows[r].length-1);else if(k==="ArrowLeft")c=Math.max(c-1,0);
else if(k==="ArrowDown")r=Math.min(r+1,rows.length-1);else if(k==="ArrowUp")r=Math.max(r-1,0);
else if(k==="Home")c=0;else if(k==="End")c=rows[r].length-1;else return;
e.preventDefault();put();});
});
})();`;
var sha256 = (s) => `'sha256-${createHash2("sha256").update(s, "utf8").digest("base64")}'`;
var CSP = `default-src 'none'; style-src ${sha256(CSS)}; script-src ${sha256(SCRIPT)}; img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; worker-src 'none'; manifest-src 'none'; base-uri 'none'; form-action 'none'`;
function page(title, body) {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${CSS}</style>
</head>
<body>
${body}
<script>${SCRIPT}</script>
</body>
</html>
`;
}
var esc = html;
function n2(x) {
  return Number.isFinite(x) ? String(Math.round(x * 100) / 100) : "0";
}
function table(head, rows, o = {}) {
  const num2 = new Set(o.num ?? []);
  const th = head.map((h, i) => `<th scope="col"${num2.has(i) ? ' class="n"' : ""}>${h}</th>`).join("");
  const body = rows.map((r, ri) => {
    const cls = o.rowClass?.(ri);
    return `<tr${cls ? ` class="${cls}"` : ""}>${r.map((c, i) => `<td${num2.has(i) ? ' class="n"' : ""}>${c}</td>`).join("")}</tr>`;
  }).join("\n");
  return `<div class="scroll"><table>${o.caption ? `<caption>${o.caption}</caption>` : ""}<thead><tr>${th}</tr></thead><tbody>
${body}
</tbody></table></div>`;
}
function swatch(klass, label2, attrs = "") {
  return `<span${attrs}><svg viewBox="0 0 18 14" aria-hidden="true"><rect width="18" height="14" class="${klass}" stroke="#777" stroke-width="1"/></svg>${label2}</span>`;
}
function sparkline(values, label2, o = { fmt: String }) {
  const pts = values.map((v, i) => ({ v: typeof v === "number" && Number.isFinite(v) ? v : null, i }));
  const finite = pts.filter((p) => p.v !== null).map((p) => p.v);
  if (!finite.length) return "";
  const W = 160;
  const H = 32;
  let lo = Math.min(...finite, o.bar ?? Infinity);
  let hi = Math.max(...finite, o.bar ?? -Infinity);
  if (hi - lo < 1e-12) {
    lo -= 1e-6;
    hi += 1e-6;
  }
  const x = (i) => values.length === 1 ? W / 2 : 4 + i * (W - 8) / (values.length - 1);
  const y = (v) => 4 + (hi - v) * (H - 8) / (hi - lo);
  const segs = [];
  let cur = [];
  for (const p of pts) {
    if (p.v === null) {
      if (cur.length) segs.push(cur.join(" "));
      cur = [];
      continue;
    }
    cur.push(`${n2(x(p.i))},${n2(y(p.v))}`);
  }
  if (cur.length) segs.push(cur.join(" "));
  const lines = segs.map((s) => `<polyline points="${s}" fill="none" stroke="${PALETTE.line}" stroke-width="1.5"/>`).join("");
  const dots = pts.filter((p) => p.v !== null).map((p) => `<circle cx="${n2(x(p.i))}" cy="${n2(y(p.v))}" r="2" fill="${PALETTE.line}"/>`).join("");
  const bar = typeof o.bar === "number" && Number.isFinite(o.bar) ? `<line x1="0" x2="${W}" y1="${n2(y(o.bar))}" y2="${n2(y(o.bar))}" stroke="${PALETTE.threshold}" stroke-dasharray="3 2"/>` : "";
  const title = `${label2}: ${values.length} run${values.length === 1 ? "" : "s"}, ${o.fmt(Math.min(...finite))} to ${o.fmt(Math.max(...finite))}, last ${o.fmt(finite[finite.length - 1])}`;
  return `<svg class="spark" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}"><title>${esc(title)}</title>${bar}${lines}${dots}</svg>`;
}

// src/report/html.ts
var CHART_POINTS = 1e3;
var VERDICT = { pass: "PASS", fail: "FAIL", error: "ERROR" };
function list2(v) {
  return Array.isArray(v) ? v : [];
}
var num = (x) => typeof x === "number" ? x : NaN;
function banner(r) {
  const v = VERDICT[r.outcome] ?? "ERROR";
  const cls = r.outcome === "pass" || r.outcome === "fail" ? r.outcome : "error";
  const failed = r.gates.filter((g) => g.status === "fail").map((g) => g.id);
  const npu = r.emulate ? "none: emulated (no NPU ran)" : generationName(recordNpu(r));
  const facts2 = [
    ["model", `<code>${esc(r.model.name, 120)}</code>${r.model.hf_id ? ` (${esc(r.model.hf_id, 120)})` : ""}`],
    ["commit", `<code>${esc(str(r.commit).slice(0, 12), 12)}</code>`],
    ["NPU generation", esc(npu, 80)],
    ["isolation", esc(isolationText(r), 400)],
    ["judged", esc(r.created_at, 40)]
  ];
  return `<header>
<h1>npu-block-gate: Phase 2 single-block validation</h1>
<div class="banner ${cls}" data-verdict="${cls}"><span class="verdict">${v}</span>${r.emulate ? '<span class="tag" data-emulated>EMULATED</span>' : ""}<span>${cls === "fail" ? `${esc(failed.join(", "))} failed` : cls === "error" ? "could not judge: this is not a FAIL verdict" : "every gate passes"}</span></div>
<dl class="facts">${facts2.map(([k, v2]) => `<dt>${k}</dt><dd>${v2}</dd>`).join("")}</dl>
${r.emulate ? `<p class="warn"><strong>EMULATED</strong>: no NPU ran. The tree's own block ran on an emulated NPU (${esc(r.emulate.runtime, 120)})${r.emulate.inject ? `, with the injected bug <code>${esc(r.emulate.inject, 64)}</code>` : ""}: this checks the integration code, not the NPU.</p>` : ""}
</header>`;
}
function gateBar(g, r) {
  if (typeof g.value !== "number" || g.id !== "G1" && g.id !== "G2") return "";
  const bar = g.id === "G1" ? r.thresholds.whole : r.thresholds.perPosition;
  const lo = Math.max(-1, Math.min(bar - 0.02, g.value) - 2e-3);
  const x = (v2) => (Math.max(lo, Math.min(1, v2)) - lo) / (1 - lo) * 140;
  const v = Number.isFinite(g.value) ? g.value : lo;
  return `<svg class="gatebar" viewBox="0 0 140 10" role="img" aria-label="${esc(`${fmtCos(g.value)} against the bar ${bar}`)}"><rect width="140" height="10" fill="#eee"/><rect width="${n2(x(v))}" height="10" fill="${g.status === "fail" ? PALETTE.fail : PALETTE.pass}"/><line x1="${n2(x(bar))}" x2="${n2(x(bar))}" y1="0" y2="10" stroke="#000" stroke-width="2"/></svg>`;
}
function gateValue2(g) {
  if (typeof g.value === "number") return g.id === "G3" ? String(g.value) : fmtCos(g.value);
  return str(g.value);
}
function gatesSection(r) {
  if (!r.gates.length) return "";
  const mark = (g) => g.status === "pass" ? '<span class="ok">\u2713 pass</span>' : g.status === "fail" ? '<span class="bad">\u2717 fail</span>' : '<span class="err">\u2013 skip</span>';
  return `<section id="gates"><h2>Gates</h2>
${table(["gate", "check", "measured", "bar", "result", "detail"], r.gates.map((g) => [
    `<span data-gate="${esc(g.id, 4)}">${esc(g.id, 4)}</span>`,
    esc(g.name, 120),
    `${esc(gateValue2(g), 200)}${gateBar(g, r)}`,
    esc(g.bar, 60),
    mark(g),
    esc(g.detail, 600)
  ]), { num: [2] })}
${r.warnings.length ? `<h3>Warnings</h3><ul>${r.warnings.map((w) => `<li>${esc(w.message, 800)}</li>`).join("")}</ul>` : ""}
</section>`;
}
function yRange(values, t) {
  const finite = values.filter(Number.isFinite);
  const lo = Math.min(t, ...finite.length ? finite : [t]) - 5e-3;
  return Math.max(-1, Math.floor(lo * 1e3) / 1e3);
}
function ffnOutChart(r) {
  const m = r.metrics;
  if (!m || !m.perPosition.cosines.length) return "";
  const cos = m.perPosition.cosines.map(num);
  const t = r.thresholds.perPosition;
  const N = cos.length;
  const bucket = Math.max(1, Math.ceil(N / CHART_POINTS));
  const pts = [];
  for (let i = 0; i < N; i += bucket) {
    let lo = Infinity;
    for (let j = i; j < Math.min(N, i + bucket); j++) lo = Math.min(lo, Number.isNaN(cos[j]) ? -Infinity : cos[j]);
    pts.push({ i: Math.min(N - 1, i + (bucket - 1) / 2), v: lo });
  }
  const yMin = yRange(pts.map((p) => p.v), t);
  const W = 1e3;
  const H = 280;
  const L = 64;
  const R = 16;
  const T = 14;
  const B = 40;
  const x = (i) => L + (N === 1 ? (W - L - R) / 2 : i * (W - L - R) / (N - 1));
  const y = (v) => T + (1 - Math.max(yMin, Math.min(1, v))) * (H - T - B) / (1 - yMin);
  const shade = list2(m.perPosition.badRuns).map((b) => {
    const x0 = x(b.start) - (N > 1 ? (W - L - R) / (N - 1) / 2 : 4);
    const x1 = x(b.end) + (N > 1 ? (W - L - R) / (N - 1) / 2 : 4);
    return `<rect class="badrun" x="${n2(Math.max(L, x0))}" y="${T}" width="${n2(Math.max(2, Math.min(W - R, x1) - Math.max(L, x0)))}" height="${H - T - B}" fill="${PALETTE.shade}"><title>${esc(`positions ${fmtRun(b.start, b.end)} under the threshold (${b.length} rows)`)}</title></rect>`;
  }).join("");
  const line = pts.map((p) => `${n2(x(p.i))},${n2(y(p.v))}`).join(" ");
  const ticksX = [.../* @__PURE__ */ new Set([0, Math.round((N - 1) / 4), Math.round((N - 1) / 2), Math.round(3 * (N - 1) / 4), N - 1])];
  const ticksY = [1, t, yMin].filter((v, i, a) => a.slice(0, i).every((u) => Math.abs(y(u) - y(v)) >= 14));
  const axes = [
    `<line class="axis" x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/><line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/>`,
    ...ticksX.map((i) => `<text x="${n2(x(i))}" y="${H - B + 16}" text-anchor="middle">${i}</text>`),
    ...ticksY.map((v) => `<line class="grid" x1="${L}" x2="${W - R}" y1="${n2(y(v))}" y2="${n2(y(v))}"/><text x="${L - 6}" y="${n2(y(v) + 4)}" text-anchor="end">${v.toFixed(3)}</text>`),
    `<text x="${(L + W - R) / 2}" y="${H - 6}" text-anchor="middle">position${bucket > 1 ? ` (the lowest of each ${bucket})` : ""}</text>`
  ].join("");
  const tl = `<line x1="${L}" x2="${W - R}" y1="${n2(y(t))}" y2="${n2(y(t))}" stroke="${PALETTE.threshold}" stroke-width="1.5" stroke-dasharray="6 4"/><text x="${W - R - 4}" y="${n2(y(t) - 5)}" text-anchor="end" fill="${PALETTE.threshold}">T(head_dim ${r.thresholds.headDim}) = ${esc(formatThreshold(t))}${r.thresholds.overridden ? " (--threshold)" : ""}</text>`;
  const pp = m.perPosition;
  return `<section id="ffn-out"><h2>Per-position cosine of ffn_out</h2>
<p>Layer-0 <code>ffn_out</code> over the ${m.realLen} real positions: min ${fmtCos(pp.min)}, p5 ${fmtCos(pp.p5)}, median ${fmtCos(pp.median)}, mean ${fmtCos(pp.mean)}; ${pp.badRuns.length ? `${pp.badRuns.length} run${pp.badRuns.length === 1 ? "" : "s"} under the threshold (shaded)` : "no position under the threshold"}.</p>
<figure><div class="scroll"><svg class="chart" data-chart="ffn_out" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(`Per-position cosine of ffn_out against position, ${N} positions, threshold ${formatThreshold(t)}`)}">${shade}${axes}${tl}<polyline points="${line}" fill="none" stroke="${PALETTE.line}" stroke-width="1.5"/></svg></div></figure>
<div class="legend"><span><svg viewBox="0 0 18 14" aria-hidden="true"><line x1="0" x2="18" y1="7" y2="7" stroke="${PALETTE.line}" stroke-width="2"/></svg>per-position cosine</span><span><svg viewBox="0 0 18 14" aria-hidden="true"><line x1="0" x2="18" y1="7" y2="7" stroke="${PALETTE.threshold}" stroke-width="2" stroke-dasharray="4 3"/></svg>threshold</span><span><svg viewBox="0 0 18 14" aria-hidden="true"><rect width="18" height="14" fill="${PALETTE.shade}"/></svg>runs under the threshold</span></div>
${errorMetrics(r)}
<details><summary>Every position's cosine and norm ratio (${N} rows)</summary>
${table(["position", "cosine", "norm ratio |npu|/|ref|"], cos.map((c, i) => [String(i), fmtCos(c), fmtRatio(num(m.errors.rowNormRatios?.[i]))]), { num: [0, 1, 2] })}
</details>
</section>`;
}
function errorMetrics(r) {
  const e = r.metrics?.errors;
  if (!e) return "";
  return `<h3>Error metrics (informational)</h3>${table(["max_abs", "mean_abs", "max_rel", "mean_rel", "mean_rel_L1", "SQNR", "norm ratio"], [[fmtSci(e.maxAbs), fmtSci(e.meanAbs), fmtSci(e.maxRel), fmtSci(e.meanRel), fmtSci(e.meanRelL1), fmtDb(e.sqnrDb), fmtRatio(e.normRatio)]], { num: [0, 1, 2, 3, 4, 5, 6] })}`;
}
function marksOf(lens, x) {
  const first = lens.firstBelow?.order;
  const onset = lens.onset && (first === void 0 || lens.onset.order < first) ? lens.onset.order : null;
  const out = [];
  if (x.order === first) out.push({ key: "first-below", text: "\u25C0 first under" });
  if (x.order === onset) out.push({ key: "onset", text: "\u25C0 onset" });
  if (lens.scale?.order === x.order) out.push({ key: "scale", text: "scale off" });
  if (x.budget?.over) out.push({ key: "budget", text: "over budget" });
  return out;
}
function cellTitle(x, c, budget) {
  return `${rowLabel(x)} \xB7 positions ${positions(c)} \xB7 cosine ${fmtCos(c.cosine)} \xB7 norm ratio ${c.norm === null ? fmtRatio(x.normRatio) : fmtRatio(c.norm)}${budget ? ` \xB7 vs FP32 ${x.budget ? fmtBudget(x.budget.ratio) : "n/a"}` : ""}`;
}
function heatmap(lens) {
  const rows = lens.rows;
  const budget = !!lens.budget;
  const n = rows.find((x2) => !x2.error)?.rows ?? 0;
  const W = 1e3;
  const L = 130;
  const rightCols = budget ? [["norm ratio", 70], ["vs FP32", 64], ["", 150]] : [["norm ratio", 70], ["", 150]];
  const Rw = rightCols.reduce((a, [, w]) => a + w, 0);
  const gridW = W - L - Rw - 8;
  const rowH = 20;
  const T = 30;
  const H = T + rows.length * rowH + 28;
  const x = (p) => L + (n ? p * gridW / n : 0);
  const body = [];
  rows.forEach((r, ri) => {
    const y = T + ri * rowH;
    const cells = rowCells(r, lens);
    const marks = marksOf(lens, r);
    const rects = r.error ? `<rect x="${L}" y="${y + 1}" width="${n2(gridW)}" height="${rowH - 2}" class="k-none"><title>${esc(`${rowLabel(r)}: not judged: ${r.error}`, 400)}</title></rect>` : cells.map((c) => `<rect data-cell x="${n2(x(c.start))}" y="${y + 1}" width="${n2(Math.max(0.5, x(c.end + 1) - x(c.start)))}" height="${rowH - 2}" class="k-${c.klass}"><title>${esc(cellTitle(r, c, budget))}</title></rect>`).join("");
    let cx = L + gridW + 8;
    const right = rightCols.map(([head, w], ci) => {
      const val = head === "norm ratio" ? r.error ? "-" : fmtRatio(r.normRatio) : head === "vs FP32" ? r.budget ? fmtBudget(r.budget.ratio) : "-" : marks.map((mk) => mk.text).join(", ");
      const t = `<text x="${n2(ci === rightCols.length - 1 ? cx + 4 : cx + w - 6)}" y="${y + 14}" text-anchor="${ci === rightCols.length - 1 ? "start" : "end"}"${marks.length && ci === rightCols.length - 1 ? ' font-weight="700"' : ""}>${esc(val, 100)}</text>`;
      cx += w;
      return t;
    }).join("");
    const outline = marks.some((mk) => mk.key === "first-below") ? `<rect x="${L - 1}" y="${y}" width="${n2(gridW + 2)}" height="${rowH}" fill="none" stroke="#000" stroke-width="2"/>` : "";
    body.push(`<g data-row="${esc(rowLabel(r), 64)}"${marks.map((mk) => ` data-mark-${mk.key}`).join("")}><text x="${L - 6}" y="${y + 14}" text-anchor="end"${marks.length ? ' font-weight="700"' : ""}>${esc(rowLabel(r), 64)}</text>${rects}${outline}${right}</g>`);
  });
  let hx = L + gridW + 8;
  const heads = rightCols.map(([head, w], ci) => {
    const t = head ? `<text x="${n2(ci === rightCols.length - 1 ? hx + 4 : hx + w - 6)}" y="${T - 8}" text-anchor="end" font-weight="700">${head}</text>` : "";
    hx += w;
    return t;
  }).join("");
  const ticks = n ? [.../* @__PURE__ */ new Set([0, Math.round(n / 4), Math.round(n / 2), Math.round(3 * n / 4), n - 1])].map((p) => `<line class="axis" x1="${n2(x(p + 0.5))}" x2="${n2(x(p + 0.5))}" y1="${T + rows.length * rowH}" y2="${T + rows.length * rowH + 4}"/><text x="${n2(x(p + 0.5))}" y="${T + rows.length * rowH + 16}" text-anchor="middle">${p}</text>`).join("") : "";
  const bucket = rows.find((x2) => !x2.error)?.profile.bucket ?? 1;
  return `<figure>
<div class="scroll"><svg class="heat" data-heatmap tabindex="0" shape-rendering="crispEdges" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(`Lens heatmap: ${rows.length} boundaries by ${n} positions, coloured by per-position cosine against the threshold ${formatThreshold(lens.threshold)}`)}">
<text x="${L}" y="${T - 8}" font-weight="700">position (${bucket > 1 ? `the lowest cosine of each ${bucket}` : "one per column"})</text>${heads}
${body.join("\n")}
${ticks}
<text x="${L + gridW / 2}" y="${H - 2}" text-anchor="middle">position</text>
</svg></div>
<p class="readout" data-readout aria-live="polite">Hover a cell, or focus the heatmap and use the arrow keys, for its numbers; every value is in the tables below.</p>
</figure>
<div class="legend" data-legend>${CELL_CLASSES.filter((k) => k !== "none").map((k) => swatch(`k-${k}`, esc(classMeaning(k, lens)), ` data-class="${k}"`)).join("")}</div>`;
}
function lensSection2(r) {
  const lens = r.lens;
  if (!lens) return "";
  const budget = !!lens.budget;
  if (!lens.rows.length) return `<section id="lens"><h2>The lens</h2><p>No boundary pairs to judge${lens.unpaired.length ? `: ${lens.unpaired.length} boundaries have one side only` : ""}.</p></section>`;
  const first = lens.firstBelow;
  const named = first ? `<p data-first-below="${esc(rowLabel(first), 64)}"><strong>First boundary under the threshold ${esc(formatThreshold(lens.threshold))}: <code>${esc(rowLabel(first), 64)}</code></strong>${first.step ? ` (${esc(first.step, 60)})` : ""}: cosine ${fmtCos(first.wholeCosine)}, per-position min ${fmtCos(first.perPositionMin)}.${first.hint ? ` Likely ${esc(first.hint.cause, 300)}; ${esc(first.hint.where, 300)}.` : ""}</p>` : `<p>Every boundary is at or above the threshold ${esc(formatThreshold(lens.threshold))}.</p>`;
  const onset = lens.onset && (!first || lens.onset.order < first.order) ? `<p data-onset="${esc(rowLabel(lens.onset), 64)}">The drift begins at <code>${esc(rowLabel(lens.onset), 64)}</code>${lens.onset.step ? ` (${esc(lens.onset.step, 60)})` : ""}: the first boundary under the clean bar ${esc(formatThreshold(lens.cleanBar))}.</p>` : "";
  const rowsTable = table(
    ["#", "boundary", "step", "read from", "cosine", "per-pos min", "p5", "norm ratio", ...budget ? ["vs FP32"] : [], "max_abs", "runs under the threshold", "mark"],
    lens.rows.map((x) => [
      String(x.order),
      `<code>${esc(rowLabel(x), 64)}</code>`,
      esc(x.step ?? "", 60),
      x.launch ? `<code>${esc(x.launch, 64)}</code>` : "returned",
      ...x.error ? ["-", "-", "-", "-", ...budget ? ["-"] : [], "-", "-", `not judged: ${esc(x.error, 300)}`] : [
        fmtCos(x.wholeCosine),
        fmtCos(x.perPositionMin),
        fmtCos(x.p5),
        fmtRatio(x.normRatio),
        ...budget ? [x.budget ? fmtBudget(x.budget.ratio) : "-"] : [],
        fmtSci(x.maxAbs),
        list2(x.badRuns).map((b) => fmtRun(b.start, b.end)).join(", "),
        esc(marksOf(lens, x).map((m) => m.text).join(", "))
      ]
    ]),
    { num: [0, 4, 5, 6, 7, ...budget ? [8, 9] : [8]], rowClass: (i) => lens.rows[i].order === first?.order ? "first-below" : "" }
  );
  const judged = lens.rows.filter((x) => !x.error);
  const cols = judged.map((x) => ({ x, cells: rowCells(x, lens) }));
  const longest = cols.reduce((a, c) => c.cells.length > a.length ? c.cells : a, []);
  const valueRows = longest.map((c, i) => [positions(c), ...cols.map(({ cells }) => cells[i] ? `${fmtCos(cells[i].cosine)}${cells[i].norm !== null ? ` / ${fmtRatio(cells[i].norm)}` : ""}` : "-")]);
  return `<section id="lens"><h2>The lens: every boundary inside block 0</h2>
<p>Each boundary on the ${lens.emulated ? "emulated NPU" : "NPU"} against the ${lens.reference ? "HF layer-0 hooks" : "reference"}, in block order, coloured by per-position cosine on a scale anchored at the threshold ${esc(formatThreshold(lens.threshold))} (clean bar ${esc(formatThreshold(lens.cleanBar))}, well below ${esc(formatThreshold(lens.wellBelow))}). Informational: the gates stay the gates.</p>
${named}${onset}
${heatmap(lens)}
${rowsTable}
${budget && lens.budget ? `<p class="note">vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), each a ${esc(lens.budget.measure, 80)}: about 1 is as good as bf16 allows; above ${lens.budget.bar}x the NPU adds error of its own.</p>` : ""}
<details><summary>Every heatmap cell: the lowest cosine of its positions / the norm ratio farthest from 1</summary>
${table(["positions", ...cols.map(({ x }) => `<code>${esc(rowLabel(x), 64)}</code>`)], valueRows, { num: cols.map((_, i) => i + 1) })}
</details>
</section>`;
}
function bisectSection2(b) {
  if (!b) return "";
  const parts = [`<section id="bisect"><h2>Bisect${b.method === "twins" ? ": CPU twins of the ELFs" : ""}</h2>`];
  if (b.void) parts.push(`<p class="warn"><strong>Bisect void</strong>: ${esc(b.void, 600)}</p>`);
  if (!b.available) parts.push(`<p>Bisect unavailable: ${esc(b.reason, 600)}</p>`);
  const launches = list2(b.launches);
  if (launches.length) {
    parts.push("<h3>Launch level: each buffer against its twin</h3>", table(
      ["launch", "ELF", "buffer", "boundary", "stage", "cosine", "per-pos min", "max_abs", ""],
      launches.slice(0, 64).flatMap((la) => list2(la.buffers).slice(0, 64).map((bu) => [String(la.index), `<code>${esc(la.launch, 64)}</code>`, `<code>${esc(bu.buffer, 64)}</code>`, bu.boundary ? `<code>${esc(bu.boundary, 64)}</code>` : "", esc(bu.stage, 60), fmtCos(bu.wholeCosine), fmtCos(bu.perPositionMin), fmtSci(bu.maxAbs), bu.diverges ? '<span class="bad">off its twin</span>' : bu.drifts ? "drifts" : ""])),
      { num: [0, 5, 6, 7] }
    ));
    const o = b.launchOffender;
    if (o && !b.void) parts.push(`<p><strong>${o.strength === "diverges" ? "First launch off its twin" : "The drift starts at"}: <code>${esc(o.launch, 64)}</code></strong> (launch ${o.index}), buffer <code>${esc(o.buffer, 64)}</code>: cosine ${fmtCos(o.wholeCosine)}, per-position min ${fmtCos(o.perPositionMin)}.${o.hint ? ` Likely ${esc(o.hint.cause, 300)}.` : ""}</p>`);
  }
  if (b.steps.length) {
    parts.push(`<h3>${b.method === "twins" ? "Swap forward" : "One kernel at a time on the CPU"}</h3>`, table(
      ["step", "kernel", "whole cosine", "per-pos min", "NaN/Inf", "block passes"],
      b.steps.slice(0, 64).map((s) => [`<code>${esc(s.step, 64)}</code>`, s.kernel ? `<code>${esc(s.kernel, 64)}</code>` : "", fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), String(s.nonFinite), s.fixes ? '<span class="ok">yes</span>' : "no"]),
      { num: [2, 3, 4] }
    ));
  }
  if (b.offender && !b.void) parts.push(`<p data-offender><strong>Offending ${b.method === "twins" ? "ELF" : "boundary"}: <code>${esc(b.offender.step, 64)}</code></strong>${b.offender.kernel ? ` (kernel <code>${esc(b.offender.kernel, 64)}</code>)` : ""}.${b.offender.hint ? ` Likely ${esc(b.offender.hint.cause, 300)}; ${esc(b.offender.hint.where, 300)}.` : ""}</p>`);
  else if (b.available && !b.void) parts.push(`<p>${esc(b.reason, 600)}</p>`);
  if (b.situation) parts.push(`<p>Failure shape: ${esc(b.situation.cause, 300)}; ${esc(b.situation.where, 300)}.</p>`);
  parts.push("</section>");
  return parts.join("\n");
}
function step2Section(r) {
  const s = r.step2_sanity;
  if (!s) return "";
  if (s.skipped) return `<section id="step2"><h2>Step 2 sanity: padded vs original on the CPU</h2><p>Not run: ${esc(s.skipped, 600)}.</p></section>`;
  const c7 = (v) => typeof v === "number" && Number.isFinite(v) ? v.toFixed(7) : "-";
  return `<section id="step2"><h2>Step 2 sanity: padded vs original on the CPU</h2>
<p>Both forwards in ${esc(s.dtype ?? "float32", 16)} on the prompt's ${esc(s.tokens ?? "?", 12)} tokens; gate: both cosines &gt;= ${esc(s.gate, 16)}.</p>
${table(["padding", "layer-0 ffn_out cosine", "logits cosine", "result"], list2(s.rows).map((x) => x.skipped ? [esc(x.label, 120), "-", "-", `not run: ${esc(x.skipped, 300)}`] : [esc(x.label, 120), c7(x.ffn_out_cosine), c7(x.logits_cosine), x.pass ? '<span class="ok">pass</span>' : '<span class="bad">fail</span>']), { num: [1, 2] })}
</section>`;
}
function historyOf(r, rows) {
  const k = historyKey(r);
  const earlier = rows.filter((h) => h.npu === k.npu && !(h.commit === k.commit && h.prompt === k.prompt)).map((h) => ({ date: h.date, commit: h.commit, outcome: h.outcome, cosine: h.cosine, maxAbs: h.maxAbs, current: false }));
  const now = { date: str(r.created_at).slice(0, 10), commit: k.commit, outcome: VERDICT[r.outcome] ?? "ERROR", cosine: num(r.metrics?.wholeCosine), maxAbs: num(r.metrics?.errors.maxAbs), current: true };
  return [...earlier.sort((a, b) => a.date < b.date ? -1 : a.date > b.date ? 1 : 0), now];
}
function historySection(r, rows) {
  const h = historyOf(r, rows);
  const npu = generationName(historyKey(r).npu);
  return `<section id="history"><h2>History on ${esc(npu, 80)}</h2>
<p>Whole cosine ${sparkline(h.map((x) => x.cosine), "whole cosine", { fmt: fmtCos, bar: r.thresholds.whole })} &nbsp; max_abs ${sparkline(h.map((x) => x.maxAbs), "max_abs", { fmt: (v) => fmtSci(v) })}</p>
${table(["date", "commit", "verdict", "whole cosine", "max_abs"], h.map((x) => [esc(x.date, 20), `<code>${esc(x.commit, 16)}</code>${x.current ? " (this run)" : ""}`, esc(x.outcome, 24), fmtCos(x.cosine), fmtSci(x.maxAbs)]), { num: [3, 4] })}
</section>`;
}
function facts(r) {
  const rows = [];
  const p = r.prompt;
  if (p) rows.push(["prompt", `${esc(p.style, 32)} (${esc(p.source, 120)}): ${p.real_len} tokens${p.padded_len ? `, padded to ${p.padded_len}` : ""}${p.positions ? `, extended to ${p.positions.requested} positions (--positions)` : ""}`]);
  if (r.reference) rows.push(["reference", esc(`${r.reference.kind} via ${r.reference.runner} (${r.reference.dtype})`, 300)]);
  rows.push(["device", esc(deviceText(r), 300)]);
  const i = r.integration;
  if (i) rows.push(["integration", `${esc(i.path, 32)}, entry <code>${esc(i.entry, 200)}</code>; workarounds: ${list2(i.workarounds).length ? list2(i.workarounds).map((w) => `<code>${esc(w?.id, 64)}</code>`).join(", ") : "none"}`]);
  rows.push(["run dir", `<code>${esc(r.run_dir, 400)}</code>`]);
  rows.push(["tool", esc(`${r.tool.name} ${r.tool.version}`, 80)]);
  return `<section id="run"><h2>The run</h2>${table(["", ""], rows.map(([k, v]) => [k, v]))}</section>`;
}
function layersSection2(r) {
  if (!r.layers?.length) return "";
  return `<section id="layers"><h2>Every layer (informational; only layer 0 is gated)</h2>${table(["layer", "whole cosine", "per-pos min", "max_abs", "NaN/Inf"], r.layers.map((l) => [String(l.layer), fmtCos(l.wholeCosine), fmtCos(l.perPositionMin), fmtSci(l.maxAbs), String(l.nonFinite)]), { num: [0, 1, 2, 3, 4] })}</section>`;
}
function renderHtml(r, o = {}) {
  const title = `${VERDICT[r.outcome] ?? "ERROR"} ${esc(r.model.name, 80)}: npu-block-gate report`;
  const parts = [banner(r)];
  if (r.outcome === "error") {
    parts.push(`<section id="error"><h2>Could not judge</h2><p data-error>${esc(r.error ?? "unknown error", 1e3)}</p><p>The check could not run to a verdict (infrastructure or input problem). Fix the cause and re-run; no gate was judged.</p></section>`);
  } else {
    parts.push(gatesSection(r), ffnOutChart(r), lensSection2(r), bisectSection2(r.bisect), step2Section(r), layersSection2(r), historySection(r, o.history ?? []));
  }
  parts.push(facts(r));
  return page(title, `<main>
${parts.filter(Boolean).join("\n")}
</main>`);
}

// src/check/documents.ts
function readDoc(path) {
  const r = readStamped(path);
  return r === null ? { text: null, stamp: null } : { text: decodeDoc(r.data), stamp: r.stamp };
}
function readDocs(modelDir, confined = false) {
  const phase2Path = join3(modelDir, DOC_PATHS.phase2);
  const todoPath = join3(modelDir, DOC_PATHS.todo);
  if (confined) for (const p of [phase2Path, todoPath]) confineBelow(modelDir, p, "a document");
  const phase2 = readDoc(phase2Path);
  const todo = readDoc(todoPath);
  return { phase2Path, todoPath, phase2: phase2.text, todo: todo.text, stamps: { phase2: phase2.stamp, todo: todo.stamp }, confined };
}
function baselineIn(old, view) {
  return old ? baselineFor(readHistory(old.phase2, old.phase2Path), view) : null;
}
function documentedPlan(old, emulated, why) {
  return old ? { attempted: true, ok: true, path: DOC_PATHS.phase2, detail: `latest result and history row written${emulated ? " (emulated run, marked so; TODO.md left as it is: no NPU ran)" : ""}` } : { attempted: false, ok: false, path: "", detail: why };
}
function planDocs(report, old, withTodo) {
  const newPhase2 = updatePhase2(old.phase2, report, renderMarkdown(report, { flavor: "doc" }), old.phase2Path);
  const todo = withTodo ? updateTodo(old.todo, report, old.todoPath) : null;
  const writes = [];
  const follow = !old.confined;
  if (newPhase2 !== old.phase2) writes.push({ path: old.phase2Path, data: encodeDoc(newPhase2), follow, unchanged: old.stamps?.phase2 });
  if (todo && todo.text !== old.todo) writes.push({ path: old.todoPath, data: encodeDoc(todo.text), follow, unchanged: old.stamps?.todo });
  return {
    writes,
    result: {
      phase2: old.phase2Path,
      todo: old.todoPath,
      changed: writes.length > 0,
      written: writes.map((w) => w.path),
      ...withTodo ? {} : { todo_left: "emulated run: no NPU ran, so Phase 2 is neither done nor blocked by it" },
      ...todo?.notes.length ? { notes: todo.notes } : {}
    }
  };
}
function historyIn(old) {
  if (!old) return [];
  try {
    return readHistory(old.phase2, old.phase2Path);
  } catch {
    return [];
  }
}
function reportWrites(report, runDir, history = []) {
  const markdown = renderMarkdown(report, { flavor: "summary" });
  const json = toJson(report);
  const html2 = renderHtml(report, { history });
  return {
    markdown,
    json,
    html: html2,
    writes: [
      { path: join3(runDir, RUN_FILES.markdown), data: Buffer.from(markdown, "utf8"), follow: false },
      { path: join3(runDir, RUN_FILES.report), data: Buffer.from(json, "utf8"), follow: false },
      { path: join3(runDir, RUN_FILES.html), data: Buffer.from(html2, "utf8"), follow: false }
    ]
  };
}
function logDocs(docs, log) {
  if (!docs) return;
  const written = docs.written ?? (docs.changed ? [docs.phase2, docs.todo] : []);
  const unchanged = [docs.phase2, ...docs.todo_left ? [] : [docs.todo]].filter((p) => !written.includes(p));
  const parts = [
    written.length ? `updated ${written.join(" and ")}` : "",
    unchanged.length ? `unchanged ${unchanged.join(" and ")}` : "",
    docs.todo_left ? `${docs.todo} left as it is (${docs.todo_left})` : ""
  ];
  log.step(`docs: ${parts.filter(Boolean).join("; ")}`);
  for (const n of docs.notes ?? []) log.warn(`docs: ${n}`);
}
var DOCS_LOCK = ".npu-block-gate.lock";
function lockDocs(modelDir, log, o = {}) {
  const path = join3(modelDir, DOCS_LOCK);
  return acquireLock(path, {
    timeoutMs: o.timeoutMs,
    breakLock: o.breakLock,
    waiting: (who) => log.step(`docs: waiting for the lock on ${modelDir} (another run is writing its documents${who ? `: pid ${who.pid} since ${who.since}` : ""})`),
    broke: (_who, why) => log.warn(`docs: removed a stale lock ${path} (${why})`)
  });
}
function docsDirsOf(modelDir, confined) {
  const dirs = [modelDir, join3(modelDir, "docs/development_progress")];
  if (confined) {
    let real;
    try {
      real = realpathSync3(modelDir);
    } catch {
      return [];
    }
    return dirs.filter((d) => {
      try {
        return realpathSync3(d) === join3(real, relative2(modelDir, d));
      } catch {
        return false;
      }
    });
  }
  for (const rel of [DOC_PATHS.phase2, DOC_PATHS.todo]) {
    try {
      dirs.push(dirname3(resolveTarget(join3(modelDir, rel)).real));
    } catch {
    }
  }
  return dirs;
}
function sweepDocs(modelDir, runDir, log, confined = false) {
  const said = (s) => {
    if (s.removed.length) log.step(`docs: removed ${s.removed.length} file(s) an interrupted write left: ${s.removed.join(", ")}`);
    for (const k of s.kept) log.warn(`an interrupted write left a file that could not be removed: ${k}; remove it by hand`);
  };
  if (modelDir) said(sweepLeftovers(docsDirsOf(modelDir, confined), true));
  said(sweepLeftovers([runDir], false));
}
function isDocsError(e, modelDir, runDir) {
  if (!(e instanceof GateError) || !e.file || !modelDir) return false;
  const inside = (dir) => {
    const r = relative2(dir, e.file);
    return r === "" || !r.startsWith("..") && !isAbsolute3(r);
  };
  return inside(modelDir) && !inside(runDir);
}
function runDirUnwritable(runDir) {
  const probe = join3(runDir, `.nbg-write-check-${process.pid}-${randomBytes2(4).toString("hex")}`);
  try {
    closeSync2(openSync2(probe, "wx"));
    unlinkSync2(probe);
    return null;
  } catch (e) {
    const code = e.code;
    if (code === "EROFS" || code === "EACCES" || code === "EPERM") return fsError(e, runDir, "cannot write").message;
    return null;
  }
}

export {
  WHOLE_COSINE_MIN,
  SQNR_GOOD_DB,
  NORM_RATIO_WARN,
  ERROR_BUDGET_WARN,
  ERROR_MEASURE,
  EXPECTED_BUDGET_WARN,
  LENS_SCALE_WARN,
  MAX_ABS_REGRESSION,
  perPositionThreshold,
  formatThreshold,
  wellBelow,
  cleanBar,
  fmtCos,
  fmtSci,
  fmtDb,
  fmtRatio,
  fmtRun,
  fmtSqnr,
  fmtBudget,
  TOOL,
  COMMAND,
  airRootOf,
  modelDirAt,
  FOREIGN_STALE_MS,
  processStart,
  acquireLock,
  probeDir,
  installRoot,
  ProbeInterrupted,
  modelArgs,
  blockArgs,
  runProbe,
  interpreterSaid,
  askInterpreterEarly,
  firstRunnable,
  confineBelow,
  DOC_PATHS,
  readHistory,
  readTodo,
  markdownTable,
  isolationText,
  renderMarkdown,
  toJson,
  page,
  esc,
  table,
  swatch,
  sparkline,
  readDocs,
  baselineIn,
  documentedPlan,
  planDocs,
  historyIn,
  reportWrites,
  logDocs,
  lockDocs,
  sweepDocs,
  isDocsError,
  runDirUnwritable
};
