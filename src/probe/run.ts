// Runs the Python probe (scripts/probe) as a child process and turns its exit into our error classes.
// One process per check: the probe itself finds out whether the Python has numpy (exit
// EXIT_CODES.no_numpy, then the next candidate is tried), says which Python it is on an event
// line, and pauses once after its config stage so the kernel cache can be restored.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError, InfraError } from '../errors.ts';
import { EVENT_PREFIX, EXIT_CODES } from '../contract.ts';
import { pythonCandidates, type PythonCandidate, type PythonInfo } from './python.ts';
import { realHost, type Isolation } from './isolate.ts';

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

export type Subcommand = 'plan' | 'plans' | 'config' | 'block' | 'check' | 'bisect';

export interface ProbeArgs {
  subcommand: Subcommand;
  /** How the probe is kept from this process (src/probe/isolate.ts); none when absent. */
  isolation?: Isolation;
  /** Directories the isolated probe may write (the model dir, the run dir). */
  writable?: string[];
  /** Directories it must be able to read (the mlir-air tree root). */
  readable?: string[];
  /** The probe may use the network (HF --online). */
  network?: boolean;
  /** Arguments after the subcommand. */
  args: string[];
  /** The run dir, for the log's path in error messages (null for `plan`). */
  runDir: string | null;
  timeoutSec: number | null;
  extraEnv?: Record<string, string>;
}

/** A line the probe printed with the event prefix, parsed. */
export type ProbeEvent = { event: string } & Record<string, unknown>;

export interface ProbeHandlers {
  /** Each `probe: ...` progress line, prefix removed. */
  onLine: (line: string) => void;
  /** Each event; an answer it returns is written to the probe's stdin as one JSON line. */
  onEvent?: (ev: ProbeEvent) => Promise<object | void> | object | void;
  /** The Python the probe runs on, as soon as it says (check --events). */
  onPython?: (p: PythonInfo) => void;
}

export interface ProbeResult {
  python: PythonInfo;
  /** What the probe printed on stdout (`plan --json`, `plan`). */
  stdout: string;
}

// The probe runs the model's own Python (in a PR, code we did not review): it gets no credential
// the Action holds and no way to write what the runner reads back. Left out of its environment:
// Action inputs (INPUT_GITHUB-TOKEN), every ACTIONS_* variable (runtime and OIDC tokens, their
// URLs), the file-command files (GITHUB_OUTPUT, _ENV, _PATH, _STEP_SUMMARY, _STATE: writing them
// would set our outputs or the job summary), and any variable named like a credential.
const SECRET_ENV = /^(INPUT_.*|ACTIONS_.*|GITHUB_(TOKEN|OUTPUT|ENV|PATH|STEP_SUMMARY|STATE)|GH_TOKEN|GH_ENTERPRISE_TOKEN|RUNNER_TRACKING_ID)$/i;
const CREDENTIAL_NAME = /(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|API_?KEY|ACCESS_KEY(_ID)?|PRIVATE_KEY|AUTH)(_|$)/i;

export function probeEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !SECRET_ENV.test(k) && !CREDENTIAL_NAME.test(k)));
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
    : python && typeof python === 'object' ? [{ command: python.executable, source: python.source }]
      : pythonCandidates(python);
  const tried: string[] = [];
  for (const c of candidates) {
    const r = await runOnce(c, a, h);
    if (r.kind === 'ok') return { python: r.python, stdout: r.stdout };
    if (c.source === 'option') throw new InputError(`--python ${c.command}: ${r.why}`);
    if (c.source === 'env') throw new InputError(`NPU_BLOCK_GATE_PYTHON=${c.command}: ${r.why}`);
    tried.push(`${c.command} (${r.why})`);
  }
  throw new InfraError(`no Python with numpy found: tried ${tried.join(', ')}; pass --python or set NPU_BLOCK_GATE_PYTHON`);
}

type Once = { kind: 'ok'; python: PythonInfo; stdout: string } | { kind: 'skip'; why: string };

/** A candidate that cannot start: checked here, because behind a wrapper (bwrap, setpriv) a
 * missing interpreter is the wrapper's exit status, not a spawn error. */
function missing(command: string): boolean {
  if (command.includes('/')) return !existsSync(command);
  return realHost.which(command) === null;
}

function runOnce(c: PythonCandidate, a: ProbeArgs, h: ProbeHandlers): Promise<Once> {
  if (a.isolation && missing(c.command)) return Promise.resolve({ kind: 'skip', why: 'not found' });
  const env = { ...probeEnv(process.env), PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1', ...a.extraEnv };
  const plain = [c.command, probeDir(), a.subcommand, ...a.args];
  // The sandbox has a private /tmp: the probe's own code and the interpreter's prefix (a venv may sit
  // in a checkout under /tmp) are bound back read-only.
  const own = [dirname(dirname(probeDir())), ...(c.command.includes('/') ? [dirname(dirname(c.command))] : [])];
  const argv = a.isolation ? a.isolation.wrap(plain, { writable: a.writable ?? [], readable: [...own, ...(a.readable ?? [])], env: process.env, probeEnv: env, network: !!a.network }) : plain;
  const wantsEvents = a.args.includes('--events');
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), {
      stdio: [wantsEvents ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env,
      // Its own process group: a timeout or a cancel stops the probe and everything it started.
      detached: true,
    });
    let python: PythonInfo = { command: c.command, executable: c.command, version: '?', numpy: '?', source: c.source };
    let lastError = '';
    let failure: unknown = null;
    let timedOut = false;
    let stdout = '';
    let buf = '';
    let pending: Promise<unknown> = Promise.resolve();
    const onEvent = (ev: ProbeEvent) => {
      if (ev.event === 'python') {
        python = { command: c.command, executable: String(ev.executable), version: String(ev.version), numpy: String(ev.numpy), source: c.source };
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
    child.stdout!.on('data', (d: Buffer) => { stdout += d.toString('utf8'); });
    child.stderr!.on('data', takeErr);
    // The probe's group, plus every descendant that left it (setsid), found while they are
    // still our descendants: after their parent dies they belong to init and are out of reach.
    let doomed: number[] = [];
    const killGroup = (sig: NodeJS.Signals) => {
      if (!child.pid) return;
      if (!doomed.length) doomed = descendants(child.pid);
      try { process.kill(-child.pid, sig); } catch { /* already gone */ }
      for (const pid of doomed) {
        try { process.kill(pid, sig); } catch { /* already gone */ }
      }
    };
    const stop = () => {
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), 5000).unref();
    };
    const timer = a.timeoutSec ? setTimeout(() => {
      timedOut = true;
      stop();
    }, Math.min(a.timeoutSec * 1000, 2 ** 31 - 1)) : null;
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
      process.removeListener('SIGINT', onInt);
      process.removeListener('SIGTERM', onTerm);
    };
    child.on('error', (e: NodeJS.ErrnoException) => {
      cleanup();
      if (e.code === 'ENOENT') resolve({ kind: 'skip', why: 'not found' });
      else reject(new InfraError(`cannot start ${argv[0]}: ${e.message}`));
    });
    // 'close' waits for the pipes; a grandchild that left the group could hold them forever.
    child.on('exit', () => {
      setTimeout(() => { child.stdout?.destroy(); child.stderr?.destroy(); child.stdin?.destroy(); }, PIPE_GRACE_MS).unref();
    });
    child.on('close', (code, signal) => {
      cleanup();
      if (buf.trim()) takeErr(Buffer.from('\n'));
      void pending.then(() => {
        if (failure) return reject(failure);
        if (interrupted) return reject(new ProbeInterrupted(interrupted, a.subcommand));
        if (timedOut) return reject(new InfraError(`probe ${a.subcommand} timed out after ${a.timeoutSec}s; its process group was stopped`));
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
