// Users for the isolation tests, made the way `npu-block-gate agent setup` makes the probe user
// (a system user, no home, no login shell) and removed again: a probe user, and a second uid that
// plays a runner service user that is not root. Names carry this process's pid, so two test runs
// on one machine never share a user (uid mode ends every process of its probe user). Users, groups
// and sudoers rules are made only in a private copy of /etc (test/helpers/private-etc.ts): the first
// call of cannotMakeUsers() re-runs the test process inside one, so the host's /etc never changes,
// even when a test is killed before its cleanup.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inPrivateEtc, privateEtc } from './private-etc.ts';

export interface TestUser { name: string; uid: number; gid: number }

const made: string[] = [];
const madeGroups: string[] = [];
const madeRules: string[] = [];

function id(flag: string, name: string): number | null {
  const r = spawnSync('id', [flag, name], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.trim()) : null;
}

/**
 * Why users cannot be made here, or null when they can (root, with useradd, in a private /etc).
 * As root outside a private /etc it re-runs this test process inside one (privateEtc()) and does
 * not return: call it at the top of the test file, before any test runs.
 */
export function cannotMakeUsers(): string | null {
  if (process.getuid?.() !== 0) return 'not root: test users cannot be created';
  if (spawnSync('useradd', ['--help'], { stdio: 'ignore' }).status !== 0) return 'useradd is not installed';
  return privateEtc();
}

/** Users, groups and sudoers rules are only ever made in the private copy of /etc. */
function mustBePrivate(what: string): void {
  if (!inPrivateEtc()) throw new Error(`${what}: not in a private /etc (call cannotMakeUsers() first): the host's /etc is never changed by a test`);
}

/** A group, created when missing. */
export function ensureGroup(name: string): number {
  mustBePrivate(`groupadd ${name}`);
  let gid = Number(spawnSync('getent', ['group', name], { encoding: 'utf8' }).stdout.split(':')[2]);
  if (!Number.isInteger(gid) || !gid) {
    const r = spawnSync('groupadd', ['--system', name], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`groupadd ${name}: ${r.stderr}`);
    madeGroups.push(name);
    gid = Number(spawnSync('getent', ['group', name], { encoding: 'utf8' }).stdout.split(':')[2]);
  }
  return gid;
}

/** A system user with its own group and, optionally, supplementary groups; created when missing. */
export function ensureUser(name: string, groups: string[] = []): TestUser {
  mustBePrivate(`useradd ${name}`);
  if (id('-u', name) === null) {
    const r = spawnSync('useradd', ['--system', '--user-group', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', ...(groups.length ? ['--groups', groups.join(',')] : []), name], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`useradd ${name}: ${r.stderr}`);
    made.push(name);
  }
  return { name, uid: id('-u', name)!, gid: id('-g', name)! };
}

/** A sudoers rule in the private /etc's sudoers.d (0440); removed by removeTestUsers(). */
export function sudoersRule(name: string, text: string): string {
  mustBePrivate(`sudoers rule ${name}`);
  const path = join('/etc/sudoers.d', name);
  writeFileSync(path, text, { mode: 0o440 });
  madeRules.push(path);
  return path;
}

/** Removes the users, groups and sudoers rules this process made (their processes first). */
export function removeTestUsers(): void {
  for (const name of made.splice(0)) {
    spawnSync('pkill', ['-KILL', '-U', name], { stdio: 'ignore' });
    spawnSync('userdel', [name], { stdio: 'ignore' });
  }
  for (const g of madeGroups.splice(0)) spawnSync('groupdel', [g], { stdio: 'ignore' });
  for (const p of madeRules.splice(0)) rmSync(p, { force: true });
}

/** chown -R without following links. */
export function chownTree(path: string, uid: number, gid: number): void {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return;
  chownSync(path, uid, gid);
  if (st.isDirectory()) for (const n of readdirSync(path)) chownTree(join(path, n), uid, gid);
}

/** chmod -R g+rwX,o+rX without following links (what agent setup's shared group gives the probe user). */
export function shareTree(path: string): void {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return;
  chmodSync(path, (st.mode & 0o7777) | (st.isDirectory() ? 0o2775 : 0o664));
  if (st.isDirectory()) for (const n of readdirSync(path)) shareTree(join(path, n));
}

/**
 * A Python with numpy that `uid` can run: $NPU_BLOCK_GATE_SHARED_PYTHON, else the first candidate
 * the user can run (root's pyenv sits in /root, 0700). Null when there is none (the test then skips
 * and says what .ci/run must provide).
 */
export function sharedPython(uid: number, gid: number, candidates: string[]): string | null {
  for (const py of [process.env.NPU_BLOCK_GATE_SHARED_PYTHON, ...candidates].filter((p): p is string => !!p)) {
    const r = spawnSync('setpriv', ['--reuid', String(uid), '--regid', String(gid), '--clear-groups', '--', py, '-c', 'import numpy, sys; print(sys.executable)'], { encoding: 'utf8', cwd: '/' });
    if (r.status === 0) return r.stdout.trim();
  }
  return null;
}
