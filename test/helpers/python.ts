// Find a Python that has numpy, for tests that generate fixtures or cross-check numbers.
import { spawnSync } from 'node:child_process';

let found: string | null | undefined;

/** NPU_BLOCK_GATE_PYTHON, then python3, then /usr/bin/python3: the first that can import numpy; null if none. */
export function findNumpyPython(): string | null {
  if (found !== undefined) return found;
  const candidates = [process.env.NPU_BLOCK_GATE_PYTHON, 'python3', '/usr/bin/python3'].filter((c): c is string => !!c);
  found = null;
  for (const py of candidates) {
    const r = spawnSync(py, ['-c', 'import numpy'], { stdio: 'ignore', timeout: 20_000 });
    if (r.status === 0) {
      found = py;
      break;
    }
  }
  return found;
}

/** Run a Python snippet with numpy; throws with stderr on failure. Returns stdout. */
export function runPython(code: string, args: string[] = [], input?: string): string {
  const py = findNumpyPython();
  if (!py) throw new Error('no Python with numpy (set NPU_BLOCK_GATE_PYTHON)');
  const r = spawnSync(py, ['-c', code, ...args], { encoding: 'utf8', input, timeout: 60_000, maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`python failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}
