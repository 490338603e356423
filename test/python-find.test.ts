import { skip, test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { findNumpyPython } from './helpers/python.ts';
import { findPython, findPythonAsync, pythonCandidates, testPython, testPythonAsync, type PythonTester } from '../src/probe/python.ts';
import { InputError, InfraError } from '../src/errors.ts';
import { tempDir } from './helpers/tmp.ts';

const table = (ok: string[]): { tester: PythonTester; asked: string[] } => {
  const asked: string[] = [];
  return {
    asked,
    tester: (cmd) => {
      asked.push(cmd);
      return ok.includes(cmd) ? { ok: true, executable: `/abs/${cmd.replace(/\//g, '_')}`, version: '3.11.2', numpy: '1.24.2' } : { ok: false, why: 'cannot import numpy' };
    },
  };
};

test('order: explicit option, then env, then python3, then /usr/bin/python3', () => {
  let t = table(['/usr/bin/python3']);
  let p = findPython(null, {}, t.tester);
  assert.is(p.command, '/usr/bin/python3');
  assert.is(p.source, 'fallback');
  assert.equal(t.asked, ['python3', '/usr/bin/python3']);

  t = table(['python3', '/usr/bin/python3']);
  p = findPython(null, {}, t.tester);
  assert.is(p.source, 'PATH');
  assert.equal(t.asked, ['python3']);

  t = table(['/opt/py', 'python3']);
  p = findPython(null, { NPU_BLOCK_GATE_PYTHON: '/opt/py' }, t.tester);
  assert.is(p.source, 'env');

  p = findPython('/opt/py', { NPU_BLOCK_GATE_PYTHON: 'python3' }, t.tester);
  assert.is(p.source, 'option');
});

test('an explicit Python without numpy is a usage error naming it; none at all is infrastructure', () => {
  const t = table([]);
  assert.throws(() => findPython('/nope', {}, t.tester), (e: unknown) => e instanceof InputError && /--python \/nope: cannot import numpy/.test((e as Error).message));
  assert.throws(() => findPython(null, { NPU_BLOCK_GATE_PYTHON: '/x' }, t.tester), (e: unknown) => e instanceof InputError && /NPU_BLOCK_GATE_PYTHON=\/x/.test((e as Error).message));
  assert.throws(() => findPython(null, {}, t.tester), (e: unknown) => e instanceof InfraError && /tried python3 \(cannot import numpy\), \/usr\/bin\/python3/.test((e as Error).message));
});

test('issue 16: order: --python, $NPU_BLOCK_GATE_PYTHON, $VIRTUAL_ENV, the envs mlir-air\'s docs create in or beside the tree, python3, /usr/bin/python3; each says why', () => {
  const files = new Set(['/home/u/venv/bin/python', '/home/u/mlir-air/sandbox/bin/python3', '/home/u/airenv/bin/python3', '/home/u/mlir-air/mlir-aie/ironenv/bin/python3', '/usr/bin/python3']);
  const exists = (p: string) => files.has(p);
  const ctx = { airRoot: '/home/u/mlir-air', modelDir: '/home/u/mlir-air/programming_examples/llms/m', exists, toolRoot: '/opt/nbg' };
  const env = { VIRTUAL_ENV: '/home/u/venv', PATH: '/usr/bin' };
  const c = pythonCandidates(null, env, ctx);
  assert.equal(c.map((x) => [x.command, x.source]), [
    ['/home/u/venv/bin/python', 'venv'],
    ['/home/u/mlir-air/sandbox/bin/python3', 'tree'],
    ['/home/u/mlir-air/mlir-aie/ironenv/bin/python3', 'tree'],
    ['/home/u/airenv/bin/python3', 'tree'],
    ['python3', 'PATH'],
    ['/usr/bin/python3', 'fallback'],
  ]);
  assert.match(c[0].why!, /the active virtualenv \(\$VIRTUAL_ENV=\/home\/u\/venv\)/);
  assert.match(c[1].why!, /\/home\/u\/mlir-air\/sandbox, in the mlir-air tree \(mlir-air's utils\/setup_python_packages\.sh\)/);
  assert.match(c[3].why!, /\/home\/u\/airenv, beside the mlir-air tree \(mlir-air's wheel install/);
  assert.match(c[4].why!, /python3 on PATH \(\/usr\/bin\/python3\)/);
  assert.equal(pythonCandidates('/x/py', env, ctx).map((x) => x.source), ['option']);
  assert.equal(pythonCandidates(null, { ...env, NPU_BLOCK_GATE_PYTHON: '/y' }, ctx).map((x) => x.source), ['env']);
  // findPython (the agent's doctor) walks the same list.
  const t = table(['/home/u/airenv/bin/python3']);
  assert.is(findPython(null, env, t.tester, ctx).source, 'tree');
  assert.equal(t.asked, ['/home/u/venv/bin/python', '/home/u/mlir-air/sandbox/bin/python3', '/home/u/mlir-air/mlir-aie/ironenv/bin/python3', '/home/u/airenv/bin/python3']);
});

test('issue 16: the tool\'s own test venv is never chosen for a user\'s tree (active or first on PATH); for its own air-mini it may be', () => {
  const files = new Set(['/opt/nbg/.venv/bin/python', '/opt/nbg/.venv/bin/python3', '/usr/bin/python3']);
  const exists = (p: string) => files.has(p);
  const env = { VIRTUAL_ENV: '/opt/nbg/.venv', PATH: '/opt/nbg/.venv/bin:/usr/bin' };
  const user = pythonCandidates(null, env, { airRoot: '/home/u/mlir-air', modelDir: '/home/u/mlir-air/programming_examples/llms/m', exists, toolRoot: '/opt/nbg' });
  assert.equal(user.map((x) => [x.command, !!x.skip]), [['/opt/nbg/.venv/bin/python', true], ['python3', true], ['/usr/bin/python3', false]]);
  assert.match(user[0].skip!, /the tool's own test venv \(\/opt\/nbg\/\.venv\), not your mlir-air environment/);
  const t = table(['/opt/nbg/.venv/bin/python', 'python3', '/usr/bin/python3']);
  assert.is(findPython(null, env, t.tester, { airRoot: '/home/u/mlir-air', modelDir: '/home/u/mlir-air/programming_examples/llms/m', exists, toolRoot: '/opt/nbg' }).command, '/usr/bin/python3');
  const ours = pythonCandidates(null, env, { airRoot: '/opt/nbg/examples/air-mini', modelDir: '/opt/nbg/examples/air-mini/programming_examples/llms/tiny_llama', exists, toolRoot: '/opt/nbg' });
  assert.not.ok(ours.some((x) => x.skip));
});

test('the background tester (the agent doctor\'s) says what the blocking one says: a Python, no numpy, an exit, not found, not runnable', async () => {
  const d = tempDir();
  try {
    const script = (name: string, body: string, mode = 0o755) => { writeFileSync(d.path(name), `#!/bin/sh\n${body}\n`); chmodSync(d.path(name), mode); return d.path(name); };
    const commands = [
      script('good', `printf '/opt/py/bin/python3\\n3.12.3\\n1.26.4\\n'`),
      script('bare', `echo 'Traceback (most recent call last):' >&2; echo "ModuleNotFoundError: No module named 'numpy'" >&2; exit 1`),
      script('silent', 'exit 4'),
      d.path('missing'),
      script('unrunnable', 'exit 0', 0o644),
    ];
    const got = await Promise.all(commands.map((c) => testPythonAsync(c)));
    assert.equal(got, commands.map((c) => testPython(c)));
    assert.equal(got.map((t) => (t.ok ? t.executable : t.why)), ['/opt/py/bin/python3', 'cannot import numpy', 'exit 4', 'not found', `${d.path('unrunnable')} EACCES`]);
  } finally {
    d.cleanup();
  }
});

test('the Python test never imports a numpy.py from the working directory (a workspace a pull request left), and a relative command still runs', async () => {
  const py = findNumpyPython();
  if (!py) return skip('numpy', 'no Python with numpy');
  const d = tempDir();
  const here = process.cwd();
  try {
    const marker = d.path('planted-ran');
    writeFileSync(d.path('numpy.py'), `open(${JSON.stringify(marker)}, 'w').write('ran')\n__version__ = 'planted'\n`);
    mkdirSync(d.path('bin'));
    // A wrapper named relatively, as `--python bin/python3` would be: the Python it runs keeps the working directory.
    writeFileSync(d.path('bin/python3'), `#!/bin/sh\nexec ${py} "$@"\n`);
    chmodSync(d.path('bin/python3'), 0o755);
    process.chdir(d.dir);
    const sync = testPython('bin/python3');
    const bg = await testPythonAsync('bin/python3');
    process.chdir(here);
    assert.ok(sync.ok, JSON.stringify(sync));
    assert.equal(bg, sync);
    assert.is.not(sync.ok && sync.numpy, 'planted');
    assert.not.ok(existsSync(marker), 'the planted numpy.py ran');
  } finally {
    process.chdir(here);
    d.cleanup();
  }
});

test('findPythonAsync walks the candidates as findPython does, with the same errors', async () => {
  for (const [explicit, env, ok] of [
    [null, {}, ['/usr/bin/python3']], [null, {}, ['python3']], ['/opt/py', {}, ['/opt/py']], [null, { NPU_BLOCK_GATE_PYTHON: '/opt/py' }, ['/opt/py']],
    ['/nope', {}, []], [null, { NPU_BLOCK_GATE_PYTHON: '/x' }, []], [null, {}, []],
  ] as [string | null, NodeJS.ProcessEnv, string[]][]) {
    const sync = table(ok);
    const bg = table(ok);
    const outcome = async (f: () => unknown) => { try { return await f(); } catch (e) { return `${(e as Error).constructor.name}: ${(e as Error).message}`; } };
    const ctx = { toolRoot: null };
    const a = await outcome(() => findPython(explicit, env, sync.tester, ctx));
    const b = await outcome(() => findPythonAsync(explicit, env, async (c) => bg.tester(c), ctx));
    assert.equal(b, a);
    assert.equal(bg.asked, sync.asked);
  }
});

test.run();
