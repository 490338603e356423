// Issue 9, point 1: a cancelled check (SIGTERM from CI, Ctrl-C) stops the probe's whole process
// group, says what was interrupted, exits 128 + the signal number and leaves no process behind
// and no run dir that looks complete.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawn, spawnSync } from 'node:child_process';
import { REPO } from './helpers/airmini.ts';
import { findNumpyPython } from './helpers/python.ts';
import { descendants } from '../src/probe/run.ts';
import { ensureCli } from './helpers/dist.ts';

const python = findNumpyPython()!;
// The CLI as users run it: the bundle (of the current sources when dist/ is older), one node process.
const CLI = await ensureCli();

function fakeTree(): string {
  const root = mkdtempSync(join(tmpdir(), 'nbg-sig-'));
  const r = spawnSync(python, ['-c', `import sys; sys.path.insert(0, ${JSON.stringify(REPO)}); from test.python.fakes import fake_tree; print(fake_tree.build(${JSON.stringify(root)}))`], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  return r.stdout.trim();
}

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

for (const [sig, status] of [['SIGTERM', 143], ['SIGINT', 130]] as const) {
  test(`${sig} during the probe: the probe tree stops, exit ${status}, one line naming what was interrupted`, async () => {
    const model = fakeTree();
    const out = join(mkdtempSync(join(tmpdir(), 'nbg-sig-run-')), 'run');
    const hang = join(model, `hang-${sig}`); // in the model dir's private copy: the probe's stderr says when it is there
    const child = spawn(process.execPath, [CLI, 'check', '--model-dir', model, '--out', out, '--no-docs', '--no-cache'], {
      cwd: REPO, env: { ...process.env, FAKE_COMPILE_HANG: hang, NPU_BLOCK_GATE_NPU_LOCK: join(tmpdir(), `nbg-lock-${process.pid}`) }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    for (let i = 0; i < 600 && !err.includes('fake: the compile hangs'); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(err.includes('fake: the compile hangs'), `the probe reached its compile: ${err}`);
    const probes = descendants(child.pid!);
    assert.ok(probes.length > 0, 'the probe runs under the CLI');
    child.kill(sig);
    const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
    assert.is(code, status, err);
    const lines = err.split('\n').filter((l) => l.startsWith('npu-block-gate:'));
    assert.is(lines.length, 1, err);
    assert.match(lines[0], new RegExp(`interrupted by ${sig} while the probe ran check`));
    for (let i = 0; i < 50 && probes.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(probes.filter(alive), [], 'no probe process left behind');
    assert.not.ok(existsSync(join(out, 'probe.json')) && JSON.parse(readFileSync(join(out, 'probe.json'), 'utf8')).stage === 'block');
    assert.not.ok(existsSync(join(out, 'report.json')));
  });
}

test.run();
