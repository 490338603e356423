// Issue 25, deliverable 8: tests that add system users, groups or sudoers rules never touch the
// host's /etc. test/helpers/private-etc.ts re-runs such a test process in a private mount namespace
// over a copy of /etc; here a child that makes a user, a group and a `NOPASSWD: ALL` rule (what the
// isolation tests make) ends normally, or is killed with SIGKILL while it runs, and the host's
// /etc/passwd, /etc/group and /etc/sudoers.d never hold any of them.
import { test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO } from './helpers/airmini.ts';
import { cannotPrivateEtc, inPrivateEtc } from './helpers/private-etc.ts';
import { ensureUser, sudoersRule } from './helpers/users.ts';

const CHILD = join(REPO, 'test/fixtures/users-child.ts');
const noPrivate = (() => {
  if (spawnSync('useradd', ['--help'], { stdio: 'ignore' }).status !== 0) return { need: 'uid' as const, why: 'useradd is not installed' };
  const why = cannotPrivateEtc();
  return why ? { need: 'uid' as const, why } : null;
})();

/** What the host's /etc holds of the child's user, group and rule (this process sees the host's /etc). */
function onHost(name: string) {
  return {
    passwd: readFileSync('/etc/passwd', 'utf8').split('\n').some((l) => l.startsWith(`${name}:`)),
    group: readFileSync('/etc/group', 'utf8').split('\n').some((l) => l.startsWith(`${name}g:`)),
    rule: existsSync(`/etc/sudoers.d/${name}`),
  };
}
const NONE = { passwd: false, group: false, rule: false };

test('the test process itself sees the host\'s /etc; the helpers refuse to make users or rules in it', () => {
  assert.not.ok(inPrivateEtc());
  assert.throws(() => ensureUser(`nbgx${process.pid}`), /not in a private \/etc/);
  assert.throws(() => sudoersRule(`nbgx${process.pid}`, 'x ALL=(ALL) NOPASSWD: ALL\n'), /not in a private \/etc/);
  assert.equal(onHost(`nbgx${process.pid}`), NONE);
});

test.unless(noPrivate)('a test that makes a user, a group and a NOPASSWD: ALL rule and ends: the host\'s /etc holds none of them', () => {
  const name = `nbge${process.pid}`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', CHILD, name, 'end'], { cwd: REPO, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  const seen = JSON.parse(r.stdout.trim().split('\n').pop()!);
  // Inside, the user, the group and the rule were real (sudo read the rule).
  assert.equal([seen.passwd, seen.group, seen.sudo], [true, true, true], r.stdout);
  assert.equal(onHost(name), NONE);
});

test.unless(noPrivate)('killed with SIGKILL mid-run: nothing is left on the host, and the re-run process ends with it', async () => {
  const name = `nbgk${process.pid}`;
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, name, 'hang'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => { out += d; if (out.includes('\n')) resolve(); });
    child.on('exit', (code) => reject(new Error(`child exited ${code} before it made the user: ${err}`)));
  });
  const seen = JSON.parse(out.trim().split('\n')[0]);
  assert.equal([seen.passwd, seen.group, seen.sudo], [true, true, true], out);
  // While it runs: its /etc (seen through its root) holds the user, the host's does not.
  assert.ok(readFileSync(`/proc/${seen.pid}/root/etc/passwd`, 'utf8').includes(`\n${name}:`));
  assert.equal(onHost(name), NONE);
  child.kill('SIGKILL');
  await exited;
  // The re-run process (its parent's death signal) goes too; the namespace and its /etc go with it.
  for (let i = 0; i < 200 && existsSync(`/proc/${seen.pid}`); i++) await sleep(50);
  assert.not.ok(existsSync(`/proc/${seen.pid}`), `pid ${seen.pid} outlived its killed parent`);
  assert.equal(onHost(name), NONE);
});

test.run();
