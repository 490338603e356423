// Runs the Python probe (scripts/probe) as a child process and turns its exit into our error classes.
// One process per check: the probe itself finds out whether the Python has numpy (exit
// EXIT_CODES.no_numpy, then the next candidate is tried), says which Python it is on an event
// line, and pauses once after its config stage so the kernel cache can be restored.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError, InfraError } from '../errors.ts';
import { EVENT_PREFIX, EXIT_CODES } from '../contract.ts';
import { pythonCandidates, type PythonCandidate, type PythonInfo } from './python.ts';

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

export type Subcommand = 'plan' | 'config' | 'block' | 'check' | 'bisect';

export interface ProbeArgs {
  subcommand: Subcommand;
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
// the Action holds. Action inputs (INPUT_GITHUB-TOKEN), the runner's artifact/OIDC tokens and the
// usual token variables are left out of its environment.
const SECRET_ENV = /^(INPUT_.*|ACTIONS_RUNTIME_TOKEN|ACTIONS_ID_TOKEN_REQUEST_(TOKEN|URL)|ACTIONS_RESULTS_URL|GITHUB_TOKEN|GH_TOKEN|GH_ENTERPRISE_TOKEN)$/i;

export function probeEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !SECRET_ENV.test(k)));
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

function runOnce(c: PythonCandidate, a: ProbeArgs, h: ProbeHandlers): Promise<Once> {
  const args = [probeDir(), a.subcommand, ...a.args];
  const wantsEvents = a.args.includes('--events');
  return new Promise((resolve, reject) => {
    const child = spawn(c.command, args, {
      stdio: [wantsEvents ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: { ...probeEnv(process.env), PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1', ...a.extraEnv },
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
    const killGroup = (sig: NodeJS.Signals) => {
      try { if (child.pid) process.kill(-child.pid, sig); } catch { /* already gone */ }
    };
    const timer = a.timeoutSec ? setTimeout(() => {
      timedOut = true;
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), 5000).unref();
    }, Math.min(a.timeoutSec * 1000, 2 ** 31 - 1)) : null;
    child.on('error', (e: NodeJS.ErrnoException) => {
      if (timer) clearTimeout(timer);
      if (e.code === 'ENOENT') resolve({ kind: 'skip', why: 'not found' });
      else reject(new InfraError(`cannot start ${c.command}: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      if (buf.trim()) takeErr(Buffer.from('\n'));
      void pending.then(() => {
        if (failure) return reject(failure);
        if (timedOut) return reject(new InfraError(`probe ${a.subcommand} timed out after ${a.timeoutSec}s`));
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
