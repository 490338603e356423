// Runs the Python probe (scripts/probe) as a child process and turns its exit into our error classes.
// One process per check: the probe itself finds out whether the Python has numpy (exit
// EXIT_CODES.no_numpy, then the next candidate is tried), says which Python it is on an event
// line, and pauses once after its config stage so the kernel cache can be restored.
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError, InfraError } from '../errors.ts';
import { EVENT_PREFIX, EXIT_CODES } from '../contract.ts';
import { constants as osConstants } from 'node:os';
import { pythonCandidates, signalWords, type PythonCandidate, type PythonInfo } from './python.ts';
import { realHost, realView, type Isolation } from './isolate.ts';
import { hubCacheOf, probeEnv, type ProbeEnvOptions } from './env.ts';
import { runBounded } from './bounded.ts';
import { processStart } from '../fs/lock.ts';
import { keepAnswer, keptAnswer, mtimeOf } from './answers.ts';

export { probeEnv } from './env.ts';

/** After the probe exits, how long its output pipes may stay open (a grandchild that escaped
 * its process group holding them) before they are closed on it. */
const PIPE_GRACE_MS = 2000;

/** scripts/probe, found from this module whether it runs from src/ (tsx) or from dist/ (bundle). */
export function probeDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'scripts', 'probe');
    if (existsSync(join(candidate, '__main__.py'))) return candidate;
    dir = dirname(dir);
  }
  throw new InfraError('scripts/probe/__main__.py not found next to npu-block-gate; the installation is incomplete');
}

/** This installation's root (the dir holding scripts/probe): the probe reads it, so the sandbox's uid must be able to. */
export function installRoot(): string {
  return dirname(dirname(probeDir()));
}

type Subcommand = 'plan' | 'plans' | 'config' | 'block' | 'check' | 'bisect';

interface ProbeArgs {
  subcommand: Subcommand;
  /** How the probe is kept from this process (src/probe/isolate.ts); none when absent. */
  isolation?: Isolation;
  /** Directories the isolated probe may write (the run's staging dirs). */
  writable?: string[];
  /** Directories it writes seen at another path (the model dir's private copy, where the model dir is). */
  mounts?: { src: string; dest: string }[];
  /** Its working directory (default: the run dir). */
  cwd?: string;
  /** Directories it must be able to read (the mlir-air tree root). */
  readable?: string[];
  /** The probe may use the network (HF --online). */
  network?: boolean;
  /** Arguments after the subcommand. */
  args: string[];
  /** The run dir, for the log's path in error messages (null for `plan`). */
  runDir: string | null;
  timeoutSec: number | null;
  /** Which of this process's variables the probe sees beyond the fixed allow-list (env.ts). */
  envAllow?: ProbeEnvOptions;
  /** Variables set for the probe whatever the allow-list says (the caller's own: a umask, a test's knob). */
  extraEnv?: Record<string, string>;
  /** Where trusted interpreters' answers about their dirs are kept (interpreterDirs); none when absent. */
  answers?: string | null;
}

/** A line the probe printed with the event prefix, parsed. */
type ProbeEvent = { event: string } & Record<string, unknown>;

interface ProbeHandlers {
  /** Each `probe: ...` progress line, prefix removed. */
  onLine: (line: string) => void;
  /** Each event; an answer it returns is written to the probe's stdin as one JSON line. */
  onEvent?: (ev: ProbeEvent) => Promise<object | void> | object | void;
  /** The Python the probe runs on, as soon as it says (check --events). */
  onPython?: (p: PythonInfo) => void;
  /** A candidate Python passed over, and why (the next is tried). */
  onSkip?: (c: PythonCandidate, why: string) => void;
}

export interface ProbeResult {
  python: PythonInfo;
  /** What the probe printed on stdout (`plan --json`, `plan`). */
  stdout: string;
}

/** The run was stopped by a signal to this process (Ctrl-C, a CI cancel): the probe's whole process
 * group was stopped too. `status` is what a shell expects: 128 + the signal number. */
export class ProbeInterrupted extends InfraError {
  readonly status: number;
  constructor(readonly signal: 'SIGINT' | 'SIGTERM', what: string) {
    super(`interrupted by ${signal} while the probe ran ${what}; the probe and everything it started were stopped`);
    this.status = 128 + (signal === 'SIGINT' ? 2 : 15);
  }
}

export interface ModelArgs {
  modelDir: string;
  promptStyle: string | null;
  prompt: string | null;
  model?: string | null;
  cpuAttn?: boolean | null;
  online?: boolean;
}

/** The model options every probe subcommand but bisect takes. Defaults are the probe's (make diagnosis's). */
export function modelArgs(m: ModelArgs): string[] {
  const args = ['--model-dir', m.modelDir];
  if (m.promptStyle) args.push('--prompt-style', m.promptStyle);
  // `=` form: a prompt that starts with "--" is still the prompt.
  if (m.prompt !== null) args.push(`--prompt=${m.prompt}`);
  if (m.model) args.push(`--hf-model=${m.model}`);
  if (m.cpuAttn === true) args.push('--cpu-attn');
  if (m.cpuAttn === false) args.push('--npu-attn');
  if (m.online) args.push('--online');
  return args;
}

/** Arguments of `probe config|block|check` for a model, prompt and run dir. */
export function blockArgs(m: ModelArgs, runDir: string): string[] {
  return [...modelArgs(m), '--out', runDir];
}

/**
 * Runs the probe with the first candidate Python that has numpy. A candidate that is missing or
 * lacks numpy is skipped, unless it was asked for by name (--python, $NPU_BLOCK_GATE_PYTHON).
 */
export async function runProbe(python: PythonInfo | PythonCandidate[] | string | null, a: ProbeArgs, h: ProbeHandlers): Promise<ProbeResult> {
  const candidates = Array.isArray(python) ? python
    : python && typeof python === 'object' ? [{ command: python.executable, source: python.source, why: python.why }]
      : pythonCandidates(python);
  const tried: string[] = [];
  // --timeout bounds the whole probe: every candidate, and the questions asked of it first.
  const deadline = a.timeoutSec ? Date.now() + a.timeoutSec * 1000 : null;
  for (const c of candidates) {
    const r = c.skip ? { kind: 'skip' as const, why: c.skip } : await runOnce(c, a, h, deadline);
    if (r.kind === 'ok') return { python: r.python, stdout: r.stdout };
    if (c.source === 'option') throw new InputError(`--python ${c.command}: ${r.why}`);
    if (c.source === 'env') throw new InputError(`NPU_BLOCK_GATE_PYTHON=${c.command}: ${r.why}`);
    tried.push(`${c.command} (${r.why})`);
    h.onSkip?.(c, r.why);
  }
  throw new InfraError(`no Python with numpy found: tried ${tried.join(', ')}; activate your mlir-air environment (e.g. source airenv/bin/activate), pass --python or set NPU_BLOCK_GATE_PYTHON`);
}

type Once = { kind: 'ok'; python: PythonInfo; stdout: string } | { kind: 'skip'; why: string };

/** Why a candidate named by path cannot be run at all (a directory, a file without the execute bit), or null. */
function notAProgram(command: string): string | null {
  if (!command.includes('/')) return null;
  try {
    const st = statSync(command);
    if (st.isDirectory()) return 'is a directory, not a Python';
    if (!st.isFile()) return 'is not a regular file, not a Python';
    accessSync(command, constants.X_OK);
    return null;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? 'not found' : code === 'EACCES' ? 'is not executable, not a Python' : null;
  }
}

/** A candidate that cannot start: checked here, because behind a wrapper (bwrap, setpriv) a
 * missing interpreter is the wrapper's exit status, not a spawn error. */
function missing(command: string): boolean {
  if (command.includes('/')) return !existsSync(command);
  return realHost.which(command) === null;
}

/** Homes: a bind that holds one would give back what the sandbox hides. */
function homes(): string[] {
  const out = ['/root', '/home', process.env.HOME, realHost.home].filter((h): h is string => !!h).map((h) => resolve(h));
  try { for (const n of readdirSync('/home')) out.push(join('/home', n)); } catch { /* none */ }
  return out;
}

/** `path` is `dir` or inside it. */
const within = (path: string, dir: string) => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);

const holdsHome = (d: string, hs: string[]) => hs.some((h) => within(h, d));

/** What to run to ask an interpreter for its dirs, outside the sandbox, or null when nothing may be run. */
export function askable(path: string, untrusted: string[]): string | null {
  const roots = untrusted.map(realView.realpath);
  const target = realView.realpath(path);
  // A program the pull request controls (in the tree, the model dir or the run dir) never runs
  // outside the sandbox: it runs inside, with what it can read there.
  if (roots.some((r) => within(target, r))) return null;
  if (!roots.some((r) => within(resolve(path), r))) return path;
  // A venv in the tree whose python is a link out of it: its base interpreter, run by its real path
  // (so the link cannot be swapped in between), and only if it is a Python by name.
  return /^python[0-9.]*$/.test(basename(target)) ? target : null;
}

/** The dirs whose Python is never run outside the sandbox: every dir the run binds in (the tree, the
 * model dir, the run dir) is one the pull request may control. */
const untrustedOf = (a: Pick<ProbeArgs, 'writable' | 'readable' | 'mounts'>): string[] =>
  [...(a.writable ?? []), ...(a.readable ?? []), ...(a.mounts ?? []).flatMap((m) => [m.src, m.dest])];

/** What an interpreter said (its executable, prefixes and sys.path), asked once per program run and environment in a process. */
const saidAsked = new Map<string, Promise<unknown[]>>();

// Its dirs, then (an object, not a path) its bytecode cache tag: bytecode.ts compiles the probe's
// own package for it.
const QUESTION = "import sys, json; print(json.dumps([sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix] + sys.path + [{'tag': sys.implementation.cache_tag}]))";

/** The stamps a kept answer stands on beyond the program itself: every dir it named (a .pth file
 * added to or removed from site-packages changes its dir's mtime, and with it sys.path). */
const saidStamps = (said: unknown[]) => Object.fromEntries(said.filter((p): p is string => typeof p === 'string' && isAbsolute(p)).map((p) => [p, mtimeOf(p)]));

/** Stops the questions still running (a probe that timed out waits for none of them). */
let asking = new AbortController();
function stopAsking(): void {
  asking.abort();
  asking = new AbortController();
  saidAsked.clear();
}

/**
 * Runs the question (-I, from /); [] when the interpreter cannot say. Bounded whatever the command
 * leaves running (a wrapper's background child holding stdout): its answer is one line of JSON,
 * taken as soon as it is printed (a wrapper that lingers after its Python exited costs nothing).
 */
function ask(run: string, env: NodeJS.ProcessEnv): Promise<unknown[]> {
  const answer = (out: string): unknown[] | null => {
    const line = out.slice(0, out.lastIndexOf('\n') + 1).split('\n').find((l) => l.startsWith('[') && l.trimEnd().endsWith(']'));
    try { return line ? JSON.parse(line) as unknown[] : null; } catch { return null; }
  };
  return runBounded(run, ['-I', '-c', QUESTION], { cwd: '/', env, timeoutMs: 30_000, until: (out) => answer(out) !== null, signal: asking.signal }).then((r) => {
    const said = r.answered || r.status === 0 ? answer(r.stdout) ?? [] : [];
    return Array.isArray(said) ? said : [];
  });
}

/**
 * What the interpreter needs readable inside the sandbox, which hides homes and the runner's tool
 * cache (where a pyenv or setup-python install lives): its own dir and install root, its prefixes,
 * every sys.path entry and every PYTHONPATH entry. Asked of the interpreter itself in isolated mode
 * (-I: neither the working dir nor PYTHONPATH, which may point into a checkout where a planted
 * json.py would run here, unsandboxed), from /; nothing when it cannot say. An interpreter inside
 * `untrusted` (dirs the pull request controls) is never run here (askable). Asked once per program
 * and environment in a process (a check asks before its isolation tests; the probe's start and
 * every bisect run reuse the answer), and, with `answers` (a file under the cache root), once per
 * trusted interpreter across processes (answers.ts: kept while the program, its size and mtime and
 * the mtime of every dir it named are unchanged; never for an interpreter reached through a link in
 * the untrusted dirs, nor a wrapper script such as a pyenv shim, which is asked every time).
 */
export async function interpreterDirs(command: string, env: NodeJS.ProcessEnv, untrusted: string[] = [], answers: string | null = null): Promise<string[]> {
  const { path, said } = await interpreterSaid(command, env, untrusted, answers);
  if (!path) return [];
  const dirs = (said: unknown[]) => {
    const hs = homes();
    const out = new Set<string>();
    const add = (p: string) => {
      let d: string;
      try {
        d = realpathSync(p);
        if (!statSync(d).isDirectory()) d = dirname(d);
      } catch { return; }
      if (d !== '/' && !holdsHome(d, hs)) out.add(d);
    };
    add(dirname(path));
    add(dirname(dirname(path))); // a venv's root, or pyenv's (its shims run libexec/pyenv)
    for (const p of [...said, ...(env.PYTHONPATH ?? '').split(':')]) if (typeof p === 'string' && p && isAbsolute(p)) add(p);
    if (typeof said[0] === 'string') { add(dirname(said[0] as string)); add(dirname(dirname(said[0] as string))); }
    return [...out];
  };
  return dirs(said);
}

/**
 * What the interpreter `command` said (interpreterDirs: asked once per program and environment in
 * a process, kept across processes for a trusted one): `path` as named (null: not found), `run`
 * the program actually asked (null: one inside `untrusted`, never run here; said is then []).
 */
export function interpreterSaid(command: string, env: NodeJS.ProcessEnv, untrusted: string[] = [], answers: string | null = null): Promise<{ path: string | null; run: string | null; said: unknown[] }> {
  const path = command.includes('/') ? resolve(command) : realHost.which(command);
  if (!path) return Promise.resolve({ path: null, run: null, said: [] });
  const run = askable(path, untrusted);
  if (!run) return Promise.resolve({ path, run: null, said: [] });
  const key = `${run}\0${JSON.stringify(env)}`;
  let said = saidAsked.get(key);
  if (!said) {
    // Kept across processes only for the interpreter as named outside every untrusted dir (run === path).
    const keep = answers && run === path ? answers : null;
    const kept = keep ? keptAnswer<unknown[]>(keep, run, saidStamps) : null;
    // An answer kept before the question named the cache tag is asked again.
    said = kept?.some((x) => typeof x === 'object' && x !== null && 'tag' in x) ? Promise.resolve(kept) : ask(run, env).then((s) => {
      if (keep && s.length) keepAnswer(keep, run, s, saidStamps(s));
      return s;
    });
    saidAsked.set(key, said);
  }
  return said.then((s) => ({ path, run, said: s }));
}

/**
 * Asks the Python a run will try first for its dirs (interpreterDirs) before the isolation is
 * chosen (its answer is among the dirs the sandbox's uid must be able to read); the probe's own
 * start reuses the answer. `answers`: the file trusted interpreters' answers are kept in.
 */
export function askInterpreterEarly(candidates: PythonCandidate[], a: Pick<ProbeArgs, 'writable' | 'readable' | 'mounts' | 'envAllow' | 'answers'>): Promise<string[]> {
  const first = firstRunnable(candidates, a);
  return first ? interpreterDirs(first.command, first.env, first.untrusted, a.answers ?? null) : Promise.resolve([]);
}

/** The Python a run tries first, with the environment and the untrusted dirs it is asked with. */
export function firstRunnable(candidates: PythonCandidate[], a: Pick<ProbeArgs, 'writable' | 'readable' | 'mounts' | 'envAllow'>): { command: string; env: NodeJS.ProcessEnv; untrusted: string[] } | null {
  const first = candidates.find((c) => !c.skip && !missing(c.command) && !notAProgram(c.command));
  return first ? { command: first.command, env: probeEnv(process.env, a.envAllow), untrusted: untrustedOf(a) } : null;
}

const timedOutError = (a: ProbeArgs, what: string) => new InfraError(`probe ${a.subcommand} timed out after ${a.timeoutSec}s${what}; its process group was stopped`);

/** `p`, unless the deadline comes first (then null). */
function beforeDeadline<T>(p: Promise<T>, deadline: number | null): Promise<T | null> {
  if (deadline === null) return p;
  return new Promise((done) => {
    const t = setTimeout(() => done(null), Math.max(0, deadline - Date.now()));
    void p.then((v) => { clearTimeout(t); done(v); });
  });
}

async function runOnce(c: PythonCandidate, a: ProbeArgs, h: ProbeHandlers, deadline: number | null = null): Promise<Once> {
  if (a.isolation && missing(c.command)) return { kind: 'skip', why: 'not found' };
  const notRunnable = notAProgram(c.command);
  if (notRunnable) return { kind: 'skip', why: notRunnable };
  const iso = a.isolation;
  // This process's environment as it is now: the sandbox is built from it after an await below.
  const runner = { ...process.env };
  const allowed = probeEnv(runner, a.envAllow);
  const base = { ...allowed, PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' };
  // Inside the sandbox the HF hub cache is where it is outside (bound back read-only), whatever HOME says:
  // by its real path, which is what the sandbox binds (a hub that is a symlink to another disk).
  const hub = iso && iso.mode !== 'none' ? hubCacheOf(runner, realHost.home) : null;
  const env = { ...base, ...(hub && existsSync(hub) ? { HF_HUB_CACHE: realpathSync(hub) } : {}), ...a.extraEnv };
  const plain = [c.command, probeDir(), a.subcommand, ...a.args];
  // The sandbox hides homes and has a private /tmp: the probe's own code and the interpreter (a venv
  // may sit in a checkout under /tmp, pyenv in a home) are bound back read-only.
  const asked = iso && iso.mode !== 'none' ? await beforeDeadline(interpreterDirs(c.command, allowed, untrustedOf(a), a.answers ?? null), deadline) : [];
  if (asked === null) {
    stopAsking();
    throw timedOutError(a, ` while ${c.command} was asked where it lives (it did not answer)`);
  }
  const own = [installRoot(), ...asked];
  const cwd = a.cwd ?? a.runDir ?? a.writable?.[a.writable.length - 1];
  const argv = iso ? iso.wrap(plain, { writable: a.writable ?? [], mounts: a.mounts, readable: [...own, ...(a.readable ?? [])], env: runner, probeEnv: env, network: !!a.network, cwd }) : plain;
  iso?.sweep?.(); // a process of the probe user left from before (uid mode without its sandbox)
  const wantsEvents = a.args.includes('--events');
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), {
      stdio: [wantsEvents ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env,
      ...(iso && cwd ? { cwd } : {}),
      // Its own process group: a timeout or a cancel stops the probe and everything it started.
      detached: true,
    });
    let python: PythonInfo = { command: c.command, executable: c.command, version: '?', numpy: '?', source: c.source, why: c.why };
    let lastError = '';
    let failure: unknown = null;
    let timedOut = false;
    let stdout = '';
    let buf = '';
    // Whether the probe said anything at all: a program that is not a Python says nothing.
    let spoke = false;
    let pending: Promise<unknown> = Promise.resolve();
    const onEvent = (ev: ProbeEvent) => {
      if (ev.event === 'python') {
        python = { command: c.command, executable: String(ev.executable), version: String(ev.version), numpy: String(ev.numpy), source: c.source, why: c.why };
        h.onPython?.(python);
      }
      if (!h.onEvent) return;
      pending = pending.then(async () => {
        const answer = await h.onEvent!(ev);
        if (answer && child.stdin && !child.stdin.destroyed) child.stdin.write(JSON.stringify(answer) + '\n');
      }).catch((e) => {
        if (child.stdin && !child.stdin.destroyed) child.stdin.end();
        failure = e;
        killGroup('SIGTERM');
      });
    };
    const takeErr = (chunk: Buffer) => {
      if (chunk.length) spoke = true;
      buf += chunk.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl).trimEnd();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        if (line.startsWith(EVENT_PREFIX)) {
          try { onEvent(JSON.parse(line.slice(EVENT_PREFIX.length)) as ProbeEvent); } catch { /* not ours */ }
        } else if (/^probe: error: /.test(line)) lastError = line.replace(/^probe: error: /, '');
        else h.onLine(line.replace(/^probe: /, ''));
      }
    };
    // Output is a sign of life: the tree is looked at then too (at most every 20 ms), so a probe that
    // finishes between two ticks of the watcher below still has its escaped children seen.
    let watchedAt = 0;
    const glance = () => { if (!iso?.pidNamespace && Date.now() - watchedAt >= 20) { watchedAt = Date.now(); watch(); } };
    child.stdout!.on('data', (d: Buffer) => { stdout += d.toString('utf8'); glance(); });
    child.stderr!.on('data', (d: Buffer) => { takeErr(d); glance(); });
    // The probe's group, plus every descendant that left it (setsid), found while they are
    // still our descendants: after their parent dies they belong to init and are out of reach. In a
    // PID namespace the kernel ends them all with the probe; without one, the tree is watched while
    // the probe runs, so a double fork seen once is still ended (pid and start time, never a reused pid).
    const doomed = new Map<number, string>();
    const watch = () => { if (child.pid) for (const pid of descendants(child.pid)) if (!doomed.has(pid)) doomed.set(pid, processStart(pid) ?? ''); };
    const watcher = iso?.pidNamespace ? null : setInterval(watch, 100);
    watcher?.unref();
    const killGroup = (sig: NodeJS.Signals) => {
      if (!child.pid) return;
      watch();
      try { process.kill(-child.pid, sig); } catch { /* already gone */ }
      for (const [pid, start] of doomed) {
        if (processStart(pid) !== start) continue;
        try { process.kill(pid, sig); } catch { /* already gone */ }
      }
    };
    const stop = () => {
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), 5000).unref();
    };
    const timer = deadline !== null ? setTimeout(() => {
      timedOut = true;
      stop();
    }, Math.min(Math.max(0, deadline - Date.now()), 2 ** 31 - 1)) : null;
    // A cancel (SIGTERM) or Ctrl-C (SIGINT) to us stops the probe's whole group first, so nothing
    // keeps the NPU lock or writes a run dir nobody judges.
    let interrupted: 'SIGINT' | 'SIGTERM' | null = null;
    const onSignal = (sig: 'SIGINT' | 'SIGTERM') => () => { interrupted = interrupted ?? sig; stop(); };
    const onInt = onSignal('SIGINT');
    const onTerm = onSignal('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    const cleanup = () => {
      if (timer) clearTimeout(timer);
      if (watcher) clearInterval(watcher);
      process.removeListener('SIGINT', onInt);
      process.removeListener('SIGTERM', onTerm);
    };
    child.on('error', (e: NodeJS.ErrnoException) => {
      cleanup();
      if (e.code === 'ENOENT') resolve({ kind: 'skip', why: 'not found' });
      else reject(new InfraError(`cannot start ${argv[0]}: ${e.message}`));
    });
    // 'close' waits for the pipes; a grandchild that left the group could hold them forever.
    let closed = false;
    child.on('exit', () => {
      setTimeout(() => {
        if (closed) return;
        h.onLine(`the probe exited, but a process it started kept its output open; stopped after ${PIPE_GRACE_MS / 1000}s`);
        child.stdout?.destroy(); child.stderr?.destroy(); child.stdin?.destroy();
      }, PIPE_GRACE_MS).unref();
    });
    child.on('close', (code, signal) => {
      closed = true;
      // Nothing the probe started outlives it: what is left of its group and its watched tree, then
      // (uid mode without its sandbox) every process of the probe user.
      if (!iso?.pidNamespace) killGroup('SIGKILL');
      cleanup();
      let swept: unknown = null;
      try { iso?.sweep?.(); } catch (e) { swept = e; }
      if (buf.trim()) takeErr(Buffer.from('\n'));
      void pending.then(() => {
        if (failure) return reject(failure);
        if (swept) return reject(swept);
        if (interrupted) return reject(new ProbeInterrupted(interrupted, a.subcommand));
        if (timedOut) return reject(timedOutError(a, ''));
        if (!spoke && !stdout.trim()) {
          // Not a word from the probe (a check says which Python it is first): a program that crashed
          // (a signal; through a shell or the sandbox, status 128 + the signal), else not a Python at all.
          const sig = signal ?? (code !== null && code > 128 && code < 160 ? signalName(code - 128) : null);
          if (sig) return resolve({ kind: 'skip', why: `crashed before the probe said a word: killed by ${signalWords(sig)}${signal ? '' : ` (exit status ${code})`}` });
          return resolve({ kind: 'skip', why: `is not a Python: it ${code === 0 ? 'exited 0' : `exited with status ${code}`} without a word from the probe` });
        }
        if (code === 0 && wantsEvents && python.version === '?') {
          return resolve({ kind: 'skip', why: 'is not a Python: it exited 0 without saying which Python it is (the probe\'s first line)' });
        }
        if (code === 0) return resolve({ kind: 'ok', python, stdout });
        if (code === EXIT_CODES.no_numpy) return resolve({ kind: 'skip', why: 'cannot import numpy' });
        const why = lastError || (signal ? `killed by ${signal}` : `exited with status ${code}`);
        if (code === EXIT_CODES.input) return reject(Object.assign(new InputError(why), { stdout }));
        const log = a.runDir ? ` (log: ${join(a.runDir, 'probe.log')})` : '';
        reject(new InfraError(`probe ${a.subcommand} failed: ${why}${log}`));
      });
    });
  });
}

/** The name of signal number n (SIGSEGV for 11), or null. */
function signalName(n: number): string | null {
  return Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0] ?? null;
}

/** Every live descendant of pid (children first found through /proc/<pid>/stat's ppid field). */
export function descendants(pid: number, proc = '/proc'): number[] {
  const parentOf = new Map<number, number>();
  let entries: string[];
  try { entries = readdirSync(proc); } catch { return []; }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(join(proc, e, 'stat'), 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses; ppid follows the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(e), ppid);
    } catch { /* gone */ }
  }
  const out: number[] = [];
  const frontier = [pid];
  while (frontier.length) {
    const p = frontier.pop()!;
    for (const [c, pp] of parentOf) if (pp === p && !out.includes(c)) { out.push(c); frontier.push(c); }
  }
  return out;
}
