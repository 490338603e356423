// Runs the Python probe (scripts/probe) as a child process and turns its exit into our error classes.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError, InfraError } from '../errors.ts';
import type { PythonInfo } from './python.ts';

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

export interface ProbeArgs {
  subcommand: 'config' | 'block' | 'bisect';
  /** Arguments after the subcommand. */
  args: string[];
  /** The run dir, for the log's path in error messages. */
  runDir: string;
  timeoutSec: number | null;
  extraEnv?: Record<string, string>;
}

// The probe runs the model's own Python (in a PR, code we did not review): it gets no credential
// the Action holds. Action inputs (INPUT_GITHUB-TOKEN), the runner's artifact/OIDC tokens and the
// usual token variables are left out of its environment.
const SECRET_ENV = /^(INPUT_.*|ACTIONS_RUNTIME_TOKEN|ACTIONS_ID_TOKEN_REQUEST_(TOKEN|URL)|ACTIONS_RESULTS_URL|GITHUB_TOKEN|GH_TOKEN|GH_ENTERPRISE_TOKEN)$/i;

export function probeEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !SECRET_ENV.test(k)));
}

/** Arguments of `probe config|block` for a model and prompt. */
export function blockArgs(modelDir: string, runDir: string, promptStyle: string, prompt: string | null): string[] {
  const args = ['--model-dir', modelDir, '--out', runDir, '--prompt-style', promptStyle];
  if (prompt !== null) args.push('--prompt', prompt);
  return args;
}

/** Runs the probe; each `probe: ...` line it prints goes to onLine as it arrives. */
export function runProbe(py: PythonInfo, a: ProbeArgs, onLine: (line: string) => void): Promise<void> {
  const args = [probeDir(), a.subcommand, ...a.args];
  return new Promise((resolve, reject) => {
    const child = spawn(py.executable, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...probeEnv(process.env), PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1', ...a.extraEnv },
    });
    let lastError = '';
    let buf = '';
    const take = (chunk: Buffer) => {
      buf += chunk.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl).trimEnd();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        if (/^probe: error: /.test(line)) lastError = line.replace(/^probe: error: /, '');
        else onLine(line.replace(/^probe: /, ''));
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let timedOut = false;
    const timer = a.timeoutSec ? setTimeout(() => { timedOut = true; child.kill('SIGTERM'); setTimeout(() => child.kill('SIGKILL'), 5000).unref(); }, a.timeoutSec * 1000) : null;
    child.on('error', (e) => reject(new InfraError(`cannot start ${py.executable}: ${e.message}`)));
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      if (buf.trim()) take(Buffer.from('\n'));
      if (timedOut) return reject(new InfraError(`probe ${a.subcommand} timed out after ${a.timeoutSec}s`));
      if (code === 0) return resolve();
      const why = lastError || (signal ? `killed by ${signal}` : `exited with status ${code}`);
      if (code === 2) return reject(new InputError(why));
      reject(new InfraError(`probe ${a.subcommand} failed: ${why} (log: ${join(a.runDir, 'probe.log')})`));
    });
  });
}
