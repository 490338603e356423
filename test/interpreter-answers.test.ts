// Issue 30: what an interpreter said is kept on disk (src/probe/answers.ts), so a later process
// need not start it: the job-started hook's numpy check (keptTester, under the agent's state dir)
// and a check's question about the interpreter's dirs (interpreterDirs, under the cache root). An
// answer stands only while the program (real path, size, mtime) and what it depends on are the
// same; a wrapper script (a pyenv shim), a failure, and an interpreter the pull request controls
// are never kept.
import { test, type Missing } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { appendFileSync, chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { tempDir } from './helpers/tmp.ts';
import { findNumpyPython } from './helpers/python.ts';
import { keptTester, testPythonAsync, type PythonTest, type PythonTesterAsync } from '../src/probe/python.ts';
import { interpreterDirs } from '../src/probe/run.ts';
import { compileProbe } from '../src/probe/bytecode.ts';
import { REPO } from './helpers/airmini.ts';
import { checkPython } from '../src/agent/doctor.ts';
import { Machine } from '../src/agent/machine.ts';

const python = findNumpyPython();
const realPython = python ? spawnSync(python, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim() : '';
const noPython: Missing | null = realPython ? null : { need: 'numpy', why: 'no Python with numpy' };

/** A tester that counts its runs and answers as a Python with numpy at `numpyFile` would. */
function counting(numpyFile: string | null): { runs: string[]; tester: PythonTesterAsync } {
  const runs: string[] = [];
  return {
    runs,
    tester: async (cmd) => {
      runs.push(cmd);
      return numpyFile ? { ok: true, executable: cmd, version: '3.12.3', numpy: '2.0.0', numpyFile } : { ok: false, why: 'cannot import numpy' };
    },
  };
}

/** An ELF program standing in for an interpreter (a copy of /bin/true), and a numpy/__init__.py. */
function fakeInterpreter(t: { path: (n: string) => string }): { py: string; numpy: string } {
  mkdirSync(t.path('bin'), { recursive: true });
  const py = t.path('bin/python3');
  copyFileSync('/bin/true', py);
  chmodSync(py, 0o755);
  mkdirSync(t.path('site/numpy'), { recursive: true });
  const numpy = t.path('site/numpy/__init__.py');
  writeFileSync(numpy, '');
  return { py, numpy };
}

const later = (p: string) => { const s = new Date(Date.now() + 5000); utimesSync(p, s, s); };

test('the numpy check is kept per interpreter: asked once, then taken without starting it while the program and numpy are unchanged', async () => {
  const t = tempDir('nbg-answers-');
  try {
    const { py, numpy } = fakeInterpreter(t);
    const file = t.path('state/python-answers.json');
    const c = counting(numpy);
    const kept = keptTester(c.tester, file);
    const first = await kept(py);
    assert.ok(first.ok);
    assert.ok(existsSync(file), 'the answer is written');
    assert.equal(await kept(py), first);
    assert.is(c.runs.length, 1, 'the second check did not start the interpreter');
    // numpy upgraded or removed: asked again.
    later(numpy);
    await kept(py);
    assert.is(c.runs.length, 2, 'numpy changed: asked again');
    await kept(py);
    assert.is(c.runs.length, 2);
    // The interpreter replaced (same path, other bytes): asked again.
    appendFileSync(py, Buffer.from([0]));
    await kept(py);
    assert.is(c.runs.length, 3, 'the program changed: asked again');
  } finally {
    t.cleanup();
  }
});

test('never kept: a failure, an answer without numpy\'s file (a stub), a wrapper script (a pyenv shim)', async () => {
  const t = tempDir('nbg-answers-');
  try {
    const { py, numpy } = fakeInterpreter(t);
    const file = t.path('python-answers.json');
    const bad = counting(null);
    const k1 = keptTester(bad.tester, file);
    assert.is((await k1(py)).ok, false);
    assert.is((await k1(py)).ok, false);
    assert.is(bad.runs.length, 2, 'a failure is tested again');
    const stub: PythonTesterAsync = async () => ({ ok: true, executable: '/x/python3', version: '3', numpy: '1' });
    let stubRuns = 0;
    const k2 = keptTester(async (c) => { stubRuns++; return stub(c); }, file);
    await k2(py);
    await k2(py);
    assert.is(stubRuns, 2, 'an answer that names no numpy file is not kept');
    const shim = t.path('bin/python-shim');
    writeFileSync(shim, '#!/bin/sh\nexec python3 "$@"\n');
    chmodSync(shim, 0o755);
    const c = counting(numpy);
    const k3 = keptTester(c.tester, file);
    await k3(shim);
    await k3(shim);
    assert.is(c.runs.length, 2, 'a wrapper script is asked every time');
  } finally {
    t.cleanup();
  }
});

test('the job-started hook\'s Python check (doctor) keeps its answer in the state dir: the next job does not start Python', async () => {
  const t = tempDir('nbg-answers-');
  try {
    const { py, numpy } = fakeInterpreter(t);
    let runs = 0;
    const m = new Machine({ python: (cmd): PythonTest => { runs++; return { ok: true, executable: cmd, version: '3.12.3', numpy: '2.0.0', numpyFile: numpy }; }, spawn: false });
    const state = t.path('state');
    const a = await checkPython(m, py, state);
    const b = await checkPython(m, py, state);
    assert.is(a.status, 'ok');
    assert.equal(b, a);
    assert.is(runs, 1, 'the second job took the kept answer');
    assert.ok(existsSync(join(state, 'python-answers.json')));
    await checkPython(m, py, null);
    assert.is(runs, 2, 'without a state dir nothing is kept');
  } finally {
    t.cleanup();
  }
});

test.unless(noPython)('with a real Python: its numpy check is kept and equals a fresh one', async () => {
  const t = tempDir('nbg-answers-');
  try {
    let runs = 0;
    const kept = keptTester(async (c) => { runs++; return testPythonAsync(c); }, t.path('a.json'));
    const first = await kept(realPython);
    assert.ok(first.ok, JSON.stringify(first));
    const again = await kept(realPython);
    assert.is(runs, 1);
    const fresh = await testPythonAsync(realPython);
    assert.equal(again, fresh);
  } finally {
    t.cleanup();
  }
});

test.unless(noPython)('the interpreter\'s dirs are kept under the cache root for a trusted interpreter; a changed dir it named, or one reached through the tree, is asked (or never kept)', async () => {
  const t = tempDir('nbg-answers-');
  try {
    const answers = t.path('cache/python-dirs.json');
    const env = { PATH: '/usr/bin:/bin' };
    const fresh = await interpreterDirs(realPython, env, [t.path('tree')], answers);
    assert.ok(fresh.length > 0);
    assert.ok(existsSync(answers), 'the answer is kept');
    // Mark the kept answer with a dir the interpreter never names: a later process that takes the
    // kept answer (another environment: not this process's memo) shows it; one that asks does not.
    const marker = t.path('marker');
    mkdirSync(marker);
    const f = JSON.parse(readFileSync(answers, 'utf8'));
    const e = f.entries[realPython];
    e.answer.push(marker);
    e.also[marker] = statSync(marker).mtimeMs;
    writeFileSync(answers, JSON.stringify(f));
    const taken = await interpreterDirs(realPython, { ...env, OTHER: '1' }, [t.path('tree')], answers);
    assert.ok(taken.includes(marker), 'the kept answer was taken, the interpreter not started');
    assert.equal(taken.filter((d) => d !== marker).sort(), [...fresh].sort());
    // A dir it named changed (a .pth file added to site-packages, say): asked again.
    later(marker);
    const asked = await interpreterDirs(realPython, { ...env, OTHER: '2' }, [t.path('tree')], answers);
    assert.not.ok(asked.includes(marker), 'a changed dir: the interpreter was asked again');
    // A venv in the tree linking out to the real Python: run by its real path, never kept.
    const tree = t.path('tree');
    mkdirSync(join(tree, 'env/bin'), { recursive: true });
    symlinkSync(realPython, join(tree, 'env/bin/python3'));
    const other = t.path('cache/other.json');
    await interpreterDirs(join(tree, 'env/bin/python3'), env, [tree], other);
    assert.not.ok(existsSync(other), 'an interpreter reached through the tree is never kept');
  } finally {
    t.cleanup();
  }
});

test.unless(noPython)('the probe\'s own package is compiled for a trusted interpreter (hash-checked .pyc, once per source change); never with one reached through the tree, nor a wrapper', async () => {
  const t = tempDir('nbg-answers-');
  try {
    const pkg = t.path('probe/npu_probe');
    cpSync(join(REPO, 'scripts/probe/npu_probe'), pkg, { recursive: true, filter: (p) => !p.includes('__pycache__') });
    const answers = t.path('cache/python-dirs.json');
    const env = { PATH: '/usr/bin:/bin' };
    const tree = t.path('tree');
    const first = await compileProbe(realPython, env, [tree], answers, pkg);
    assert.ok(first.compiled, first.why);
    const pycs = readdirSync(join(pkg, '__pycache__')).filter((f) => f.endsWith('.pyc'));
    assert.ok(pycs.some((f) => /^cli\.[a-z]+-\d+\.pyc$/.test(f)), pycs.join(' '));
    // Hash-checked: flags word 0b11 (checked hash) after the magic (PEP 552).
    const cli = readFileSync(join(pkg, '__pycache__', pycs.find((f) => f.startsWith('cli.'))!));
    assert.is(cli.readUInt32LE(4), 3, 'a checked-hash .pyc');
    assert.equal(await compileProbe(realPython, env, [tree], answers, pkg), { compiled: false, why: 'up to date' });
    // A source changed: compiled again.
    appendFileSync(join(pkg, 'cli.py'), '\n');
    assert.ok((await compileProbe(realPython, env, [tree], answers, pkg)).compiled, 'a changed source is compiled again');
    // Through the tree (a venv's link out of it): never compiled with it.
    const other = t.path('probe2/npu_probe');
    cpSync(pkg, other, { recursive: true, filter: (p) => !p.includes('__pycache__') });
    mkdirSync(join(tree, 'env/bin'), { recursive: true });
    symlinkSync(realPython, join(tree, 'env/bin/python3'));
    const viaTree = await compileProbe(join(tree, 'env/bin/python3'), env, [tree], answers, other);
    assert.is(viaTree.compiled, false);
    assert.not.ok(existsSync(join(other, '__pycache__')), viaTree.why);
    // A wrapper script outside the tree: not a program, not compiled with.
    const shim = t.path('bin/python3');
    mkdirSync(t.path('bin'));
    writeFileSync(shim, `#!/bin/sh\nexec ${realPython} "$@"\n`);
    chmodSync(shim, 0o755);
    const viaShim = await compileProbe(shim, env, [tree], answers, other);
    assert.is(viaShim.compiled, false);
    assert.not.ok(existsSync(join(other, '__pycache__')), viaShim.why);
  } finally {
    t.cleanup();
  }
});

test.run();
