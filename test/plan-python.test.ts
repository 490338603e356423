// Issue 25, deliverable 5: `plan`, `plan --sanity` and `plan --json` run outside the probe's
// sandbox, so they never run a Python from the tree or the model dir (a pull request's). A tree copy
// plants scripts posing as Pythons where the candidates are looked for (the tree's sandbox, ironenv
// and airenv, a $VIRTUAL_ENV in it, a PATH entry in it) and a sitecustomize.py on a PYTHONPATH
// entry in it; each notes that it ran in a marker file, then runs the real Python (so a plan that
// ran one would still succeed: the marker is the only sign). None ever runs; a --python or
// $NPU_BLOCK_GATE_PYTHON naming one is refused (exit 2, one line). As root, and as a second uid
// (nobody) running the CLI bundle.
import { test, type Missing } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { REPO, copyAirMini } from './helpers/airmini.ts';
import { ensureCli } from './helpers/dist.ts';
import { findNumpyPython } from './helpers/python.ts';
import { cli } from './helpers/rundir.ts';
import { outsideEnv, heldBy } from '../src/probe/python.ts';
import { parseCli, planFrom } from '../src/cli.ts';

const numpyPython = findNumpyPython();
const realPython = numpyPython ? spawnSync(numpyPython, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim() : '';
const noPython: Missing | null = realPython ? null : { need: 'numpy', why: 'no Python with numpy' };

interface Planted { root: string; model: string; marker: string; userBin: string; env: Record<string, string | undefined> }

/** A copy of air-mini with the planted Pythons, and the environment a developer might have. */
function planted(): Planted {
  const tree = copyAirMini();
  chmodSync(tree.root, 0o755);
  const marker = join(tree.root, 'RAN');
  const script = `#!/bin/sh\necho "ran $0 as $(id -u)" >> ${marker}\nexec ${realPython} "$@"\n`;
  for (const d of ['sandbox/bin', 'ironenv/bin', 'airenv/bin', 'venv/bin', 'bin']) {
    mkdirSync(join(tree.root, d), { recursive: true });
    for (const n of ['python3', 'python']) {
      writeFileSync(join(tree.root, d, n), script);
      chmodSync(join(tree.root, d, n), 0o755);
    }
  }
  mkdirSync(join(tree.root, 'py'));
  writeFileSync(join(tree.root, 'py/sitecustomize.py'), `open(${JSON.stringify(marker)}, "a").write("sitecustomize ran\\n")\n`);
  // The user's own Python, outside the tree, first on PATH after the tree's bin.
  const userBin = join(tree.root + '-user', 'bin');
  mkdirSync(userBin, { recursive: true });
  chmodSync(join(tree.root + '-user'), 0o755);
  symlinkSync(realPython, join(userBin, 'python3'));
  chmodSync(marker.replace(/RAN$/, ''), 0o777); // a second uid could note its run too
  return {
    root: tree.root, model: tree.model('tiny_llama'), marker, userBin,
    env: {
      NPU_BLOCK_GATE_PYTHON: undefined,
      VIRTUAL_ENV: join(tree.root, 'venv'),
      PATH: [join(tree.root, 'bin'), '.', userBin, '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
      PYTHONPATH: join(tree.root, 'py'),
    },
  };
}

async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(vars)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  try { return await fn(); } finally {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  }
}

const ran = (p: Planted) => (existsSync(p.marker) ? readFileSync(p.marker, 'utf8') : '');

test('outsideEnv drops search-path entries inside the tree, relative and empty ones; heldBy sees through links', () => {
  const p = '/t/mlir-air';
  assert.equal(outsideEnv({ PATH: `/t/mlir-air/sandbox/bin::.:/usr/bin:bin:/t/mlir-air-other/bin`, PYTHONPATH: '/t/mlir-air/python', LD_LIBRARY_PATH: '/opt/xrt/lib:/t/mlir-air/install/lib', PYTHONHOME: '/t/mlir-air/env', HOME: '/root' }, [p]),
    { PATH: '/usr/bin:/t/mlir-air-other/bin', PYTHONPATH: '', LD_LIBRARY_PATH: '/opt/xrt/lib', PYTHONHOME: '' });
  assert.equal(outsideEnv({ PATH: '/usr/bin', PYTHONHOME: '/opt/py' }, [p]), { PATH: '/usr/bin' });
  if (realPython) {
    const t = planted();
    const link = join(t.userBin, 'into-tree');
    symlinkSync(join(t.root, 'sandbox/bin/python3'), link);
    assert.is(heldBy(link, [t.root]), t.root, 'a link from outside into the tree');
    assert.is(heldBy(join(t.userBin, 'python3'), [t.root]), null, 'a link out of a dir outside the tree');
  }
});

test('plan has a default timeout (120 s, --sanity 1800 s); --timeout still chooses; check keeps none', () => {
  const plan = (args: string[]) => planFrom(parseCli(args).command, parseCli(args).values);
  assert.is(plan(['plan', '--model-dir', 'm']).timeoutSec, 120);
  assert.is(plan(['plan', '--model-dir', 'm', '--sanity']).timeoutSec, 1800);
  assert.is(plan(['plan', '--model-dir', 'm', '--timeout', '5']).timeoutSec, 5);
  assert.is(plan(['check', '--model-dir', 'm']).timeoutSec, null);
});

test.unless(noPython)('plan, plan --json and plan --sanity never run a Python from the tree, and say what they passed over', async () => {
  const p = planted();
  await withEnv(p.env, async () => {
    const r = await cli(['plan', '--model-dir', p.model]);
    assert.is(ran(p), '', `a planted Python ran:\n${ran(p)}`);
    assert.is(r.code, 0, r.err);
    for (const planted of ['venv/bin/python', 'sandbox/bin/python3', 'ironenv/bin/python3', 'airenv/bin/python3']) {
      assert.match(r.err, new RegExp(`python: passed over ${join(p.root, planted).replace(/[.]/g, '\\.')} \\([^\\n]*\\): inside the mlir-air tree or the model dir: plan runs outside the probe's sandbox and never runs a Python from there`), planted);
    }
    assert.match(r.err, new RegExp(`python: ${join(p.userBin, 'python3')} \\(from python3 on PATH \\(${join(p.userBin, 'python3')}\\)\\)`));
    assert.match(r.out, /ready|READY|tiny_llama/);

    const j = await cli(['plan', '--json', '--model-dir', p.model]);
    assert.is(ran(p), '', `a planted Python ran:\n${ran(p)}`);
    assert.is(j.code, 0, j.err);
    JSON.parse(j.out);

    const s = await cli(['plan', '--sanity', '--model-dir', p.model]);
    assert.is(ran(p), '', `a planted Python ran:\n${ran(p)}`);
    assert.is(s.code, 0, s.err);
    assert.match(s.out, /step2 sanity: skipped: an emulated tree \(air-mini\)/);

    // Named explicitly, a Python in the tree is refused, one line, exit 2; nothing runs.
    for (const [args, env, flag] of [
      [['--python', join(p.root, 'sandbox/bin/python3')], {}, '--python'],
      [['--python', 'python'], { PATH: `${join(p.root, 'bin')}:/usr/bin:/bin` }, '--python'],
      [[], { NPU_BLOCK_GATE_PYTHON: join(p.root, 'ironenv/bin/python3') }, 'NPU_BLOCK_GATE_PYTHON'],
    ] as [string[], Record<string, string>, string][]) {
      const e = await withEnv(env, () => cli(['plan', '--model-dir', p.model, ...args]));
      assert.is(ran(p), '', `a planted Python ran:\n${ran(p)}`);
      assert.is(e.code, 2, e.err);
      assert.match(e.err, new RegExp(`^npu-block-gate: error: ${flag} [^\\n]*: inside the mlir-air tree or the model dir: plan runs outside the probe's sandbox and never runs a Python from there \\(check runs it in the sandbox\\); name a Python outside ${p.root.replace(/[.]/g, '\\.')}\\n$`), e.err);
    }
  });
  // The script the test planted does run when called: the marker would show it.
  spawnSync(join(p.root, 'sandbox/bin/python3'), ['-c', 'pass']);
  assert.match(ran(p), /ran .*sandbox\/bin\/python3/);
});

/** As nobody (uid 65534): the command's exit status. */
const asNobody = (cmd: string[], o: Parameters<typeof spawnSync>[2] = {}) =>
  spawnSync('setpriv', ['--reuid', '65534', '--regid', '65534', '--clear-groups', '--', ...cmd], { cwd: '/', ...o });
const noNobody: Missing | null = process.getuid?.() !== 0 ? { need: 'uid', why: 'not root: cannot run the CLI as a second uid' }
  : asNobody([process.execPath, '-e', `require('fs').readdirSync(${JSON.stringify(REPO)})`], { stdio: 'ignore' }).status !== 0
    ? { need: 'uid', why: `nobody (uid 65534) cannot run node or read this checkout (${REPO})` }
    : realPython && asNobody([realPython, '-c', 'import numpy'], { stdio: 'ignore' }).status !== 0
      ? { need: 'uid', why: `nobody cannot run ${realPython} with numpy: set NPU_BLOCK_GATE_PYTHON to a Python outside /root` } : null;

test.unless(noPython ?? noNobody)('as a second uid (nobody), through the CLI bundle: plan, --json and --sanity never run the tree\'s Python either', async () => {
  const p = planted();
  const bundle = await ensureCli();
  if (bundle.startsWith(join(REPO, 'tmp') + '/')) chmodSync(dirname(bundle), 0o755); // a private bundle dir (mkdtemp: 0700)
  const env = { ...Object.fromEntries(Object.entries({ ...process.env, ...p.env }).filter(([, v]) => v !== undefined)) as Record<string, string>, HOME: '/nonexistent' };
  for (const extra of [[], ['--json'], ['--sanity']]) {
    const r = asNobody([process.execPath, bundle, 'plan', '--model-dir', p.model, ...extra], { env, encoding: 'utf8', cwd: p.root }) as ReturnType<typeof spawnSync> & { stderr: string };
    assert.is(ran(p), '', `a planted Python ran as nobody (${extra.join(' ')}):\n${ran(p)}`);
    assert.is(r.status, 0, `${extra.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /python: passed over .*sandbox\/bin\/python3/);
  }
});

test.run();
