import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  EMULATED,
  EVENT_PREFIX,
  EXIT_CODES,
  GateError,
  InfraError,
  InputError,
  RUN_FILES,
  UNKNOWN,
  cell,
  fsError,
  generationName,
  hubCacheOf,
  id,
  isId,
  literal,
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
} from "./chunk-FN2RAJJI.js";

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
    "test:ts": "uvu -r tsx test",
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
var dirsAsked = /* @__PURE__ */ new Map();
var asking = new AbortController();
function stopAsking() {
  asking.abort();
  asking = new AbortController();
  dirsAsked.clear();
}
function interpreterDirs(command, env, untrusted = []) {
  const path = command.includes("/") ? resolve(command) : realHost.which(command);
  if (!path) return Promise.resolve([]);
  const key = `${path}\0${untrusted.join("\0")}`;
  const known = dirsAsked.get(key);
  if (known) return known;
  const asked = new Promise((done) => {
    const run = askable(path, untrusted);
    const dirs = (said) => {
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
      for (const p of [...said, ...(env.PYTHONPATH ?? "").split(":")]) if (typeof p === "string" && p && isAbsolute(p)) add(p);
      if (typeof said[0] === "string") {
        add(dirname(said[0]));
        add(dirname(dirname(said[0])));
      }
      return [...out];
    };
    if (!run) return done(dirs([]));
    const code = "import sys, json; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix] + sys.path))";
    const answer = (out) => {
      const line = out.slice(0, out.lastIndexOf("\n") + 1).split("\n").find((l) => l.startsWith("[") && l.trimEnd().endsWith("]"));
      try {
        return line ? JSON.parse(line) : null;
      } catch {
        return null;
      }
    };
    void runBounded(run, ["-I", "-c", code], { cwd: "/", env, timeoutMs: 3e4, until: (out) => answer(out) !== null, signal: asking.signal }).then((r) => {
      const said = r.answered || r.status === 0 ? answer(r.stdout) ?? [] : [];
      done(dirs(Array.isArray(said) ? said : []));
    });
  });
  dirsAsked.set(key, asked);
  return asked;
}
function askInterpreterEarly(candidates, a) {
  const first = candidates.find((c) => !c.skip && !missing(c.command) && !notAProgram(c.command));
  return first ? interpreterDirs(first.command, probeEnv(process.env, a.envAllow), untrustedOf(a)) : Promise.resolve([]);
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
  const asked = iso && iso.mode !== "none" ? await beforeDeadline(interpreterDirs(c.command, allowed, untrustedOf(a)), deadline) : [];
  if (asked === null) {
    stopAsking();
    throw timedOutError(a, ` while ${c.command} was asked where it lives (it did not answer)`);
  }
  const own = [dirname(dirname(probeDir())), ...asked];
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
    child.stdout.on("data", (d) => {
      stdout += d.toString("utf8");
    });
    child.stderr.on("data", takeErr);
    const doomed = /* @__PURE__ */ new Map();
    const watch = () => {
      if (child.pid) {
        for (const pid of descendants(child.pid)) if (!doomed.has(pid)) doomed.set(pid, startOf(pid) ?? "");
      }
    };
    const watcher = iso?.pidNamespace ? null : setInterval(watch, 200);
    watcher?.unref();
    const killGroup = (sig) => {
      if (!child.pid) return;
      watch();
      try {
        process.kill(-child.pid, sig);
      } catch {
      }
      for (const [pid, start] of doomed) {
        if (startOf(pid) !== start) continue;
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
function startOf(pid, proc = "/proc") {
  try {
    const stat = readFileSync2(join(proc, String(pid), "stat"), "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
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
  const out = lines.map(() => false);
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE_OPEN.exec(lines[i].text);
    if (!open || open[1][0] === "`" && open[2].includes("`")) continue;
    const ch = open[1][0];
    const close = new RegExp(`^ {0,3}${ch === "`" ? "`" : "~"}{${open[1].length},}[ \\t]*$`);
    let j = i + 1;
    while (j < lines.length && !close.test(lines[j].text)) j++;
    if (j === lines.length) continue;
    for (let k = i; k <= j; k++) out[k] = true;
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
function decodeDoc(buf) {
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
  const lines = [];
  let at = 0;
  while (at < text2.length) {
    const nl = text2.indexOf("\n", at);
    if (nl === -1) {
      lines.push({ text: text2.slice(at), eol: "" });
      break;
    }
    const cr = nl > at && text2[nl - 1] === "\r";
    lines.push({ text: text2.slice(at, cr ? nl - 1 : nl), eol: cr ? "\r\n" : "\n" });
    at = nl + 1;
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
  const positions = r.prompt?.positions ? `@${r.prompt.real_len}` : "";
  const inject = r.emulate?.inject && /^[A-Za-z0-9_.-]{1,64}$/.test(r.emulate.inject) ? `:${r.emulate.inject}` : "";
  const emulated = r.emulate ? `~emulated${inject}` : "";
  return { commit: r.commit.slice(0, 12), prompt: `${r.prompt?.style ?? "prompt"}:${hash}${positions}${emulated}`, npu: recordNpu(r) };
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
    if (fenced[i]) return;
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
  const fenced = fencedLines(lines);
  for (let i = from; i < lines.length; i++) {
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
function markdownTable(table, options) {
  const settings = options || {};
  const align = (settings.align || []).concat();
  const stringLength = settings.stringLength || defaultStringLength;
  const alignments = [];
  const cellMatrix = [];
  const sizeMatrix = [];
  const longestCellByColumn = [];
  let mostCellsPerRow = 0;
  let rowIndex = -1;
  while (++rowIndex < table.length) {
    const row2 = [];
    const sizes2 = [];
    let columnIndex2 = -1;
    if (table[rowIndex].length > mostCellsPerRow) {
      mostCellsPerRow = table[rowIndex].length;
    }
    while (++columnIndex2 < table[rowIndex].length) {
      const cell2 = serialize(table[rowIndex][columnIndex2]);
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

// src/report/markdown.ts
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
function lensSection(r) {
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
  out.push(markdownTable([
    ["#", "boundary", "step", "read from", "cosine", "per-pos min", "norm ratio", ...budget ? ["vs FP32"] : [], "max_abs", ""],
    ...lens.rows.map((x) => [
      String(x.order).padStart(2, "0"),
      id(x.name, { inTable: true }),
      cell(x.step ?? "", 40),
      x.launch ? id(x.launch, { inTable: true }) : "returned",
      ...x.error ? ["-", "-", "-", ...budget ? ["-"] : [], "-", `error: ${cell(x.error, 300)}`] : [
        fmtCos(x.wholeCosine),
        fmtCos(x.perPositionMin),
        fmtRatio(x.normRatio),
        ...budget ? [x.budget ? fmtBudget(x.budget.ratio) : ""] : [],
        fmtSci(x.maxAbs),
        [x.below ? `${ICON.fail} under` : x.order === onset ? "onset" : "", lens.scale?.order === x.order ? "\u26A0\uFE0F scale" : "", x.budget?.over ? "\u26A0\uFE0F error" : ""].filter(Boolean).join(" ")
      ]
    ])
  ]), "");
  if (lens.budget) out.push(`vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), each a ${lens.budget.measure}, against HF layer 0 run in FP32 from the same weights and tokens: about 1 is as good as bf16 allows; above ${lens.budget.bar}x the NPU adds error of its own (informational).`, "");
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
  if (sc) out.push(`**Scale: ${id(sc.name)}**${whereOf(sc)} has norm ratio ${fmtRatio(sc.normRatio)}, off 1 by more than ${sc.bar * 100}% (the first boundary to lose its scale; cosine cannot see it): likely ${text(sc.cause, 300)}.${sc.hint ? ` The seed: ${hintLine(sc.hint)}.` : ""}`, "");
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
  body.push(...lensSection(r));
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
function reportWrites(report, runDir) {
  const markdown = renderMarkdown(report, { flavor: "summary" });
  const json = toJson(report);
  return {
    markdown,
    json,
    writes: [
      { path: join3(runDir, RUN_FILES.markdown), data: Buffer.from(markdown, "utf8"), follow: false },
      { path: join3(runDir, RUN_FILES.report), data: Buffer.from(json, "utf8"), follow: false }
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
  acquireLock,
  ProbeInterrupted,
  modelArgs,
  blockArgs,
  runProbe,
  askInterpreterEarly,
  confineBelow,
  DOC_PATHS,
  readHistory,
  readTodo,
  markdownTable,
  isolationText,
  renderMarkdown,
  toJson,
  readDocs,
  baselineIn,
  documentedPlan,
  planDocs,
  reportWrites,
  logDocs,
  lockDocs,
  sweepDocs,
  isDocsError,
  runDirUnwritable
};
