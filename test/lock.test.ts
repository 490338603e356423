// The documents lock (src/fs/lock.ts) on its own: one holder at a time, a waiting run says so and
// gets the lock once the holder releases it, a dead owner's lock is broken, a release never removes
// another run's lock, and a dir where no lock can be made is not an error.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireLock, type LockOwner } from '../src/fs/lock.ts';

const quiet = { waiting: () => undefined, broke: () => undefined };

test('one holder at a time: the second waits (and says so) until the first releases', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'nbg-lock-')), '.lock');
  const first = await acquireLock(path, quiet);
  assert.ok(first);
  const waited: (LockOwner | null)[] = [];
  let polls = 0;
  const second = await acquireLock(path, {
    waiting: (o) => waited.push(o), broke: () => assert.unreachable('a live owner is never broken'),
    sleep: async () => { if (++polls === 3) first!.release(); },
  });
  assert.ok(second);
  assert.is(waited.length, 1, 'said once');
  assert.is(waited[0]!.pid, process.pid);
  assert.ok(polls >= 3, 'the second run waited for the release');
  assert.is.not(JSON.parse(readFileSync(path, 'utf8')).nonce, waited[0]!.nonce, 'the lock file is the second run\'s');
  second!.release();
  assert.not.ok(existsSync(path));
});

test('a live holder that never releases: the waiting run gives up with an error naming the holder', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'nbg-lock-')), '.lock');
  const held = await acquireLock(path, quiet);
  let t = 0;
  await acquireLock(path, { ...quiet, timeoutMs: 100, now: () => (t += 60), sleep: async () => undefined })
    .then(() => assert.unreachable('a held lock was taken twice'), (e) => assert.match(String(e.message), new RegExp(`gave up waiting for the lock held by pid ${process.pid}`)));
  held!.release();
});

test('a dead owner\'s lock is broken, said, and taken; a release leaves another run\'s lock alone', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'nbg-lock-')), '.lock');
  const dead: LockOwner = { pid: 2 ** 22 + 7, host: hostname(), start: null, since: 'then', nonce: 'deadbeef' };
  writeFileSync(path, JSON.stringify(dead) + '\n');
  const broke: (LockOwner | null)[] = [];
  const mine = await acquireLock(path, { waiting: () => undefined, broke: (o) => broke.push(o) });
  assert.ok(mine);
  assert.is(broke[0]?.nonce, 'deadbeef');
  // Another run's lock at the path (ours was broken by it, say): our release leaves it.
  const other = { ...dead, pid: process.pid, nonce: 'cafef00d' };
  writeFileSync(path, JSON.stringify(other) + '\n');
  mine!.release();
  assert.is(JSON.parse(readFileSync(path, 'utf8')).nonce, 'cafef00d');
});

test('no lock can be made in a read-only dir: null, not an error', async () => {
  if (process.getuid?.() === 0) {
    // root writes past modes; a missing dir is the same case for the lock
    assert.is(await acquireLock(join(tmpdir(), `nbg-no-such-${process.pid}`, '.lock'), quiet), null);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'nbg-lock-ro-'));
  chmodSync(dir, 0o555);
  assert.is(await acquireLock(join(dir, '.lock'), quiet), null);
});

test.run();
