// Finds a Python that imports numpy: the explicit option, then $NPU_BLOCK_GATE_PYTHON, then
// `python3`, then /usr/bin/python3. Machines differ (pyenv shims without numpy are common).
import { spawnSync } from 'node:child_process';
import { InputError, InfraError } from '../errors.ts';

export interface PythonInfo {
  /** What was asked for (a name on PATH or a path). */
  command: string;
  executable: string;
  version: string;
  numpy: string;
  /** Why this one: 'option', 'env', 'PATH', 'fallback'. */
  source: 'option' | 'env' | 'PATH' | 'fallback';
}

const PROBE_SNIPPET = 'import sys, numpy; print(sys.executable); print(sys.version.split()[0]); print(numpy.__version__)';

export type PythonTester = (command: string) => { ok: true; executable: string; version: string; numpy: string } | { ok: false; why: string };

export const testPython: PythonTester = (command) => {
  const r = spawnSync(command, ['-c', PROBE_SNIPPET], { encoding: 'utf8', timeout: 30_000 });
  if (r.error) return { ok: false, why: (r.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : r.error.message };
  if (r.status !== 0) {
    const last = (r.stderr || '').trim().split('\n').pop() ?? '';
    return { ok: false, why: /No module named ['"]?numpy/.test(last) ? 'cannot import numpy' : last || `exit ${r.status}` };
  }
  const [executable, version, numpy] = r.stdout.trim().split('\n');
  return { ok: true, executable, version, numpy };
};

export interface PythonCandidate { command: string; source: PythonInfo['source'] }

/** The Pythons to try, in order: one asked for by name (option, then env) is the only one. */
export function pythonCandidates(explicit: string | null, env: NodeJS.ProcessEnv = process.env): PythonCandidate[] {
  if (explicit) return [{ command: explicit, source: 'option' }];
  if (env.NPU_BLOCK_GATE_PYTHON) return [{ command: env.NPU_BLOCK_GATE_PYTHON, source: 'env' }];
  return [{ command: 'python3', source: 'PATH' }, { command: '/usr/bin/python3', source: 'fallback' }];
}

/** The first candidate that imports numpy (the agent's doctor; a check lets the probe itself find out). */
export function findPython(explicit: string | null, env: NodeJS.ProcessEnv = process.env, test: PythonTester = testPython): PythonInfo {
  const tried: string[] = [];
  for (const { command, source } of pythonCandidates(explicit, env)) {
    const t = test(command);
    if (t.ok) return { command, executable: t.executable, version: t.version, numpy: t.numpy, source };
    if (source === 'option') throw new InputError(`--python ${command}: ${t.why}`);
    if (source === 'env') throw new InputError(`NPU_BLOCK_GATE_PYTHON=${command}: ${t.why}`);
    tried.push(`${command} (${t.why})`);
  }
  throw new InfraError(`no Python with numpy found: tried ${tried.join(', ')}; pass --python or set NPU_BLOCK_GATE_PYTHON`);
}

/** How a report names the Python and why it was picked. */
export function describePython(p: PythonInfo): string {
  const why = p.source === 'option' ? '--python' : p.source === 'env' ? '$NPU_BLOCK_GATE_PYTHON' : p.command;
  return `${p.executable} (Python ${p.version}, numpy ${p.numpy}; from ${why})`;
}
