// Find a Python that has numpy, for tests that generate fixtures or cross-check numbers.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Missing } from './skip.ts';

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

export function missingNumpy(): Missing | null {
  return findNumpyPython() ? null : { need: 'numpy', why: 'no Python with numpy (NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)' };
}

let torch: Missing | null | undefined;

/** Why the tests that run the real HfRunner cannot run here, or null. `npm run test:fast` leaves them out. */
export function missingTorch(): Missing | null {
  if (process.env.NPU_BLOCK_GATE_TEST_FAST === '1') return { need: 'torch', why: 'npm run test:fast leaves out what needs torch and transformers' };
  if (torch !== undefined) return torch;
  const py = findNumpyPython();
  torch = missingNumpy();
  if (py && !torch) {
    const r = spawnSync(py, ['-c', 'import importlib.util as u, sys; sys.exit(any(u.find_spec(n) is None for n in ("torch", "transformers", "ml_dtypes", "tokenizers", "safetensors")))'], { timeout: 60_000 });
    if (r.status !== 0) torch = { need: 'torch', why: `${py} has no torch/transformers/ml_dtypes/tokenizers/safetensors; ${ciVenvHint()}` };
  }
  return torch;
}

/** Where the Python with torch and transformers is: the venv .ci/run built here, else how to get one. */
export function ciVenvHint(): string {
  const root = process.env.NPU_BLOCK_GATE_CI_CACHE || '/var/cache/npu-block-gate-ci';
  let venv: string | undefined;
  try {
    venv = readdirSync(root).filter((n) => /^venv-[0-9a-f]+$/.test(n)).map((n) => join(root, n, 'bin/python')).find((p) => existsSync(p));
  } catch { /* no CI cache here */ }
  return venv
    ? `run with NPU_BLOCK_GATE_PYTHON=${venv} (the venv .ci/run built)`
    : `run with NPU_BLOCK_GATE_PYTHON=<a venv with them>/bin/python (\`bash .ci/run\` builds one under ${root}/venv-<hash>/; README, "The real tree without an NPU")`;
}

/** Run a Python snippet with numpy; throws with stderr on failure. Returns stdout. */
export function runPython(code: string, args: string[] = [], input?: string): string {
  const py = findNumpyPython();
  if (!py) throw new Error('no Python with numpy (set NPU_BLOCK_GATE_PYTHON)');
  const r = spawnSync(py, ['-c', code, ...args], { encoding: 'utf8', input, timeout: 60_000, maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`python failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}
