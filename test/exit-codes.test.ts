// The CLI's exit codes where nothing else sets them: 2 for bad input or usage, 3 for anything the
// CLI did not foresee (a thrown error that is not a GateError is the machine's or our fault, never
// the user's input, and never a verdict). The numbers are written out: they are the contract a
// caller scripts against (scripts/probe/contract.json), not whatever EXIT holds.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { main } from '../src/cli.ts';
import { fsError } from '../src/errors.ts';

function stream(onWrite: (s: string) => void): NodeJS.WritableStream {
  return { write: (s: string) => { onWrite(s); return true; } } as unknown as NodeJS.WritableStream;
}

test('an error the CLI did not foresee is exit 3, said in one line as infrastructure, no stack trace', async () => {
  const err: string[] = [];
  const broken = stream(() => { throw new TypeError('stdout went away\n  at somewhere (x.js:1:1)'); });
  const code = await main(['version'], broken, stream((s) => err.push(s)));
  assert.is(code, 3);
  assert.equal(err, ['npu-block-gate: error (infrastructure, not a verdict): stdout went away at somewhere (x.js:1:1)\n']);
});

test('a usage error is exit 2, said in one line as an error', async () => {
  for (const argv of [['check', '--bogus'], ['frobnicate'], ['check']]) {
    const err: string[] = [];
    const out: string[] = [];
    const code = await main(argv, stream((s) => out.push(s)), stream((s) => err.push(s)));
    assert.is(code, 2, argv.join(' '));
    assert.is(err.length, 1, err.join(''));
    assert.match(err[0], /^npu-block-gate: error: [^\n]+\n$/);
    assert.equal(out, []);
  }
});

test('fsError: the machine failing (disk full, I/O) is infrastructure, exit 3; a wrong path (permission, read-only, not a dir) is input, exit 2', () => {
  const err = (code: string) => Object.assign(new Error(code), { code });
  for (const [code, exit, words] of [
    ['ENOSPC', 3, 'disk full'], ['EIO', 3, 'input/output error'], ['EMFILE', 3, 'too many open files'],
    ['EACCES', 2, 'permission denied'], ['EROFS', 2, 'read-only file system'], ['ENOTDIR', 2, 'a part of the path is a file'],
  ] as const) {
    const e = fsError(err(code), '/m/TODO.md', 'cannot write');
    assert.is(e.exitCode, exit, code);
    assert.match(e.message, `/m/TODO.md: cannot write: ${words}`);
  }
  assert.is(fsError(new Error('no code'), '/m/x', 'cannot write').exitCode, 3, 'an unknown failure is not blamed on the input');
});

test.run();
