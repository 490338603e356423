// The all-or-nothing write of src/fs/atomic.ts on its own (test/faults.test.ts drives it through
// whole runs, with a full tmpfs): each file is prepared beside its target and renamed into place, so
// a reader never sees half a file and a failure leaves every target as it was; a run dir's file is
// never written through a symlink; a read-only document is refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commitWrites, writeAtomic } from '../src/fs/atomic.ts';
import { GateError, InputError } from '../src/errors.ts';
import { tempDir } from './helpers/tmp.ts';

const bytes = (s: string) => Buffer.from(s, 'utf8');

function caught(run: () => void): GateError {
  try {
    run();
  } catch (e) {
    assert.instance(e, GateError, String(e));
    return e as GateError;
  }
  return assert.unreachable('expected a GateError') as never;
}

test('a reader that opened the old file reads it whole after the write: the new file is renamed in, never written over the old', () => {
  const d = tempDir();
  try {
    const doc = d.path('phase2_block.md');
    const old = 'old text\n'.repeat(1000);
    writeFileSync(doc, old);
    const fd = openSync(doc, 'r');
    try {
      writeAtomic(doc, 'new\n');
      const buf = Buffer.alloc(old.length + 10);
      const n = readSync(fd, buf, 0, buf.length, 0);
      assert.is(buf.subarray(0, n).toString('utf8'), old);
    } finally {
      closeSync(fd);
    }
    assert.is(readFileSync(doc, 'utf8'), 'new\n');
    assert.equal(readdirSync(d.dir), ['phase2_block.md'], 'no temp file left');
  } finally {
    d.cleanup();
  }
});

test('all or nothing: when a later file of the transaction fails after the earlier ones are prepared, they are as they were, and no temp file is left', () => {
  const d = tempDir();
  try {
    const first = d.path('TODO.md');
    writeFileSync(first, 'hand-written TODO\n');
    const second = d.path('phase2_block.md');
    writeFileSync(second, 'hand-written notes\n');
    const e = caught(() => commitWrites([
      { path: first, data: bytes('generated\n') },
      // Refused once prepared in full (as a sudoers rule that visudo rejects is).
      { path: second, data: bytes('generated\n'), validate: () => { throw new InputError('refused by its check; nothing was changed', second); } },
    ]));
    assert.match(e.message, /phase2_block\.md: refused by its check/);
    assert.is(readFileSync(first, 'utf8'), 'hand-written TODO\n');
    assert.is(readFileSync(second, 'utf8'), 'hand-written notes\n');
    assert.equal(readdirSync(d.dir).sort(), ['TODO.md', 'phase2_block.md']);
  } finally {
    d.cleanup();
  }
});

test('all or nothing at the renames: when the last rename fails, the files already renamed in are put back and a new one removed', () => {
  const d = tempDir();
  try {
    const report = d.path('report.md');
    writeFileSync(report, 'report before\n');
    const fresh = d.path('report.json');
    const todo = d.path('TODO.md');
    writeFileSync(todo, 'hand-written TODO\n');
    const e = caught(() => commitWrites([
      { path: report, data: bytes('report after\n') },
      { path: fresh, data: bytes('{}\n') },
      // Every file is prepared by now; TODO.md then becomes a non-empty directory, so its rename fails.
      { path: todo, data: bytes('generated\n'), validate: () => { rmSync(todo); mkdirSync(todo); writeFileSync(join(todo, 'x'), 'x'); } },
    ]));
    assert.match(e.message, /TODO\.md: cannot replace: .*nothing was changed/);
    assert.is(readFileSync(report, 'utf8'), 'report before\n', 'the file already renamed in is put back');
    assert.not.ok(existsSync(fresh), 'a file that was not there before is removed again');
    assert.equal(readdirSync(d.dir).sort(), ['TODO.md', 'report.md'], 'no temp or backup file left');
  } finally {
    d.cleanup();
  }
});

test('a run dir file (follow: false) replaces a symlink there and leaves what it pointed at alone; a document (default) is written through it', () => {
  const d = tempDir();
  try {
    const target = d.path('elsewhere.json');
    writeFileSync(target, 'precious');
    const report = d.path('report.json');
    symlinkSync(target, report);
    writeAtomic(report, '{"outcome":"pass"}', false);
    assert.ok(lstatSync(report).isFile(), 'the link was replaced by a file');
    assert.is(readFileSync(report, 'utf8'), '{"outcome":"pass"}');
    assert.is(readFileSync(target, 'utf8'), 'precious');
    const doc = d.path('TODO.md');
    symlinkSync(target, doc);
    writeAtomic(doc, 'through');
    assert.ok(lstatSync(doc).isSymbolicLink(), 'a document link stays a link');
    assert.is(readFileSync(target, 'utf8'), 'through');
  } finally {
    d.cleanup();
  }
});

test('a read-only document is refused (exit 2, naming it), never replaced, even as root', () => {
  const d = tempDir();
  try {
    const doc = d.path('TODO.md');
    writeFileSync(doc, 'frozen\n');
    chmodSync(doc, 0o444);
    const e = caught(() => writeAtomic(doc, 'changed\n'));
    assert.is(e.exitCode, 2);
    assert.match(e.message, /TODO\.md: is read-only \(mode 0444\)/);
    assert.is(readFileSync(doc, 'utf8'), 'frozen\n');
    assert.ok(existsSync(doc));
  } finally {
    d.cleanup();
  }
});

test('a best-effort write (durable: false, no fsync) is still renamed in whole, with its mode, and leaves no temp file', () => {
  const d = tempDir();
  try {
    const job = d.path('job.json');
    writeFileSync(job, '{"old":true}\n');
    const fd = openSync(job, 'r');
    try {
      writeAtomic(job, '{"new":true}\n', { follow: false, mode: 0o600, durable: false });
      const buf = Buffer.alloc(64);
      assert.is(buf.subarray(0, readSync(fd, buf, 0, 64, 0)).toString('utf8'), '{"old":true}\n', 'an open reader keeps the old file');
    } finally {
      closeSync(fd);
    }
    assert.is(readFileSync(job, 'utf8'), '{"new":true}\n');
    assert.is(statSync(job).mode & 0o777, 0o600);
    assert.equal(readdirSync(d.dir), ['job.json']);
  } finally {
    d.cleanup();
  }
});

/** Runs `fn` with Math.random returning `values` in turn (the last one again once they run out). */
function withRandom<T>(values: number[], fn: () => T): T {
  const real = Math.random;
  let i = 0;
  Math.random = () => values[Math.min(i++, values.length - 1)];
  try {
    return fn();
  } finally {
    Math.random = real;
  }
}

test('a temp name already taken (a leftover of a killed run with this pid, a planted link) is never opened: the write takes another', () => {
  const d = tempDir();
  try {
    const precious = d.path('precious');
    writeFileSync(precious, 'precious\n');
    const taken = (hex: string) => d.path(`.report.json.nbg-${process.pid}-${hex}.tmp`);
    symlinkSync(precious, taken('00000000'));
    writeFileSync(taken('80000000'), 'leftover\n');
    const report = d.path('report.json');
    // 0 -> 00000000 (a link), 0.5 -> 80000000 (a file), 0.25 -> 40000000 (free).
    withRandom([0, 0.5, 0.25], () => writeAtomic(report, '{"outcome":"pass"}\n', false));
    assert.is(readFileSync(report, 'utf8'), '{"outcome":"pass"}\n');
    assert.is(readFileSync(precious, 'utf8'), 'precious\n', 'nothing written through the planted link');
    assert.is(readFileSync(taken('80000000'), 'utf8'), 'leftover\n');
    assert.equal(readdirSync(d.dir).sort(), [`.report.json.nbg-${process.pid}-00000000.tmp`, `.report.json.nbg-${process.pid}-80000000.tmp`, 'precious', 'report.json']);
    // Every name it tries taken: a one-line error naming the file, and nothing changed.
    const e = withRandom([0], () => caught(() => writeAtomic(report, 'changed\n', false)));
    assert.match(e.message, /report\.json: cannot write \(in .*\): .*nothing was changed/);
    assert.is(readFileSync(report, 'utf8'), '{"outcome":"pass"}\n');
    assert.is(readFileSync(precious, 'utf8'), 'precious\n');
  } finally {
    d.cleanup();
  }
});

test.run();
