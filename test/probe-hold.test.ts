// Issue 26.2: timeouts that hold. A `--python` wrapper whose background child keeps stdout open
// (or that lingers itself) never holds `check` past its --timeout, and nothing of it is left; the
// agent doctor's Python test says what happened instead of "timed out after 30s".
import { test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyAirMini } from './helpers/airmini.ts';
import { ensureCli } from './helpers/dist.ts';
import { missingNumpy, runPython } from './helpers/python.ts';
import { testPythonAsync } from '../src/probe/python.ts';
import { checkPython } from '../src/agent/doctor.ts';
import { Machine } from '../src/agent/machine.ts';
import { runProbe } from '../src/probe/run.ts';

const tree = copyAirMini();
const dir = mkdtempSync(join(tmpdir(), 'nbg-hold-'));
const MODEL = tree.model('tiny_llama');
/** A bound no run may reach; the tests end long before it on the fixed code (no timing assertion). */
const BOUND_MS = 60_000;
const python = missingNumpy() ? null : runPython('import sys; print(sys.executable)').trim();

/** A sleep whose command line names this test file's processes, and only them. */
let n = 0;
const token = () => `86${process.pid % 1000}${++n}.5`;

function wrapper(name: string, body: string): string {
  const p = join(dir, name);
  writeFileSync(p, `#!/bin/sh\n${body}\n`);
  chmodSync(p, 0o755);
  return p;
}

/** Live processes whose command line holds `tok`. */
function left(tok: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(tok)) out.push(`${e}: ${cmd}`);
    } catch { /* gone */ }
  }
  return out;
}

interface Run { code: number | null; err: string; ms: number; bounded: boolean }

/** The CLI, stopped (and said) at BOUND_MS. */
async function cli(args: string[]): Promise<Run> {
  const js = await ensureCli();
  const t0 = Date.now();
  return new Promise((res) => {
    const child = spawn(process.execPath, [js, ...args], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let err = '';
    let bounded = false;
    const stop = setTimeout(() => { bounded = true; try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, BOUND_MS);
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => { clearTimeout(stop); res({ code, err, ms: Date.now() - t0, bounded }); });
  });
}

function killLeft(tok: string): void {
  for (const l of left(tok)) try { process.kill(Number(l.split(':')[0]), 'SIGKILL'); } catch { /* gone */ }
}

test.unless(missingNumpy())('issue 26.2: a --python wrapper that lingers with stdout open: check --timeout 10 ends, exit 3 naming the timeout, nothing of it left', async () => {
  const tok = token();
  const py = wrapper('linger', `${python} "$@"\nst=$?\nsleep ${tok}\nexit $st`);
  try {
    const r = await cli(['check', '--model-dir', MODEL, '--out', join(dir, 'linger-run'), '--no-docs', '--no-cache', '--python', py, '--timeout', '10']);
    assert.not.ok(r.bounded, `check was still running after ${BOUND_MS / 1000}s`);
    assert.is(r.code, 3, r.err);
    assert.match(r.err, /npu-block-gate: error \(infrastructure, not a verdict\): probe check timed out after 10s.*; its process group was stopped\n/);
    await new Promise((res) => setTimeout(res, 500));
    assert.equal(left(tok), []);
  } finally {
    killLeft(tok);
  }
});

test.unless(missingNumpy())('issue 26.2: a --python wrapper whose background child holds stdout forever: check judges, ends, and stops the child', async () => {
  const tok = token();
  const py = wrapper('background', `sleep ${tok} &\nexec ${python} "$@"`);
  try {
    const r = await cli(['check', '--model-dir', MODEL, '--out', join(dir, 'bg-run'), '--no-docs', '--no-cache', '--python', py, '--timeout', '10']);
    assert.not.ok(r.bounded, `check was still running after ${BOUND_MS / 1000}s`);
    assert.is(r.code, 0, r.err);
    await new Promise((res) => setTimeout(res, 500));
    assert.equal(left(tok), []);
  } finally {
    killLeft(tok);
  }
});

test.unless(missingNumpy())('issue 26.2: unsandboxed (plan), a background child that left the process group and holds stdout is stopped after a grace, and said', async () => {
  const tok = token();
  const py = wrapper('setsid', `setsid sleep ${tok} &\nexec ${python} "$@"`);
  const lines: string[] = [];
  try {
    const r = await runProbe(py, { subcommand: 'plan', args: ['--model-dir', MODEL, '--json'], runDir: null, timeoutSec: 30 }, { onLine: (l) => lines.push(l) });
    assert.is((JSON.parse(r.stdout) as { schema: string }).schema, 'npu-block-gate/plan');
    await new Promise((res) => setTimeout(res, 500));
    assert.equal(left(tok), []);
  } finally {
    killLeft(tok);
  }
});

test.unless(missingNumpy())('issue 26.2: the doctor\'s Python test on a wrapper whose background child holds stdout: the Python\'s answer, and what the child did (not "timed out after 30s")', async () => {
  const tok = token();
  const py = wrapper('doctor-bg', `sleep ${tok} &\nexec ${python} "$@"`);
  try {
    const t = await Promise.race([testPythonAsync(py), new Promise<'bounded'>((res) => setTimeout(() => res('bounded'), BOUND_MS).unref())]);
    assert.is.not(t, 'bounded', `the test was still waiting after ${BOUND_MS / 1000}s`);
    if (t === 'bounded' || !t.ok) return assert.unreachable(JSON.stringify(t));
    assert.is(t.executable, python);
    assert.is(t.note, 'a process it started kept its output open after it exited (stopped after 2s)');
    const c = await checkPython(new Machine({ env: {} }), py);
    assert.is(c.status, 'warn');
    assert.match(c.detail, new RegExp(`^${python}.*, but a process it started kept its output open after it exited`));
    assert.not.match(c.detail, /timed out/);
    await new Promise((res) => setTimeout(res, 500));
    assert.equal(left(tok), []);
  } finally {
    killLeft(tok);
  }
});

test.after(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(tree.root, { recursive: true, force: true });
});

test.run();
