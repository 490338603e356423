#!/usr/bin/env node
// The README's test command: every uvu suite (through tsx) and the Python unittest suites,
// then one closing line "N passed, N failed" over all of them. Exit non-zero on any failure.
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const only = process.argv[2]; // optional: "ts" or "py"

function run(cmd, args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const tee = (stream) => (d) => { out += d; stream.write(d); };
    child.stdout.on('data', tee(process.stdout));
    child.stderr.on('data', tee(process.stderr));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), out }));
    child.on('error', (e) => resolve({ code: 1, out: String(e) }));
  });
}

function numpyPython() {
  for (const p of [process.env.NPU_BLOCK_GATE_PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean)) {
    const r = spawnSync(p, ['-c', 'import numpy'], { stdio: 'ignore' });
    if (r.status === 0) return p;
  }
  return null;
}

// Caches written by the suites (kernel store, reference cache) go to a private dir, never ~/.cache.
const cacheDir = mkdtempSync(join(tmpdir(), 'npu-block-gate-test-cache-'));
process.env.NPU_BLOCK_GATE_CACHE_DIR = cacheDir;
process.on('exit', () => rmSync(cacheDir, { recursive: true, force: true }));

let passed = 0;
let failed = 0;
let broken = false;

if (only !== 'py') {
  const r = await run(process.execPath, [join(root, 'node_modules/uvu/bin.js'), '-r', 'tsx', 'test', '\\.test\\.ts$']);
  const total = Number(/Total:\s+(\d+)/.exec(r.out)?.[1] ?? NaN);
  const ok = Number(/Passed:\s+(\d+)/.exec(r.out)?.[1] ?? NaN);
  if (Number.isNaN(total) || Number.isNaN(ok)) {
    broken = true;
    console.error('test: the uvu run printed no totals (a suite crashed while loading?)');
  } else {
    passed += ok;
    failed += total - ok; // uvu's Total already leaves the skipped tests out
  }
  if (r.code !== 0) broken = true;
}

if (only !== 'ts') {
  const py = numpyPython();
  if (!py) {
    broken = true;
    console.error('test: no Python that imports numpy (install python3-numpy or set NPU_BLOCK_GATE_PYTHON)');
  } else {
    const r = await run(py, ['-m', 'unittest', 'discover', '-s', 'test/python', '-t', '.'], { PYTHONDONTWRITEBYTECODE: '1' });
    const ran = Number(/Ran (\d+) tests?/.exec(r.out)?.[1] ?? NaN);
    const m = /FAILED \(([^)]*)\)/.exec(r.out);
    let bad = 0;
    if (m) for (const part of m[1].split(',')) {
      const [k, v] = part.trim().split('=');
      if (k === 'failures' || k === 'errors' || k === 'unexpected_successes') bad += Number(v);
    }
    const skipped = Number(/skipped=(\d+)/.exec(r.out)?.[1] ?? 0);
    if (Number.isNaN(ran)) {
      broken = true;
      console.error('test: the Python run printed no totals');
    } else {
      passed += ran - bad - skipped;
      failed += bad;
    }
    if (r.code !== 0) broken = true;
  }
}

if (broken && failed === 0) failed = 1; // a crashed suite counts as a failure
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 || broken ? 1 : 0);
