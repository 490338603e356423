import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { findPython, type PythonTester } from '../src/probe/python.ts';
import { InputError, InfraError } from '../src/errors.ts';

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

test.run();
