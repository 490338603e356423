// chooseIsolation (src/probe/isolate.ts) with a fake host: which tools exist, which feature probes
// succeed, our uid, the probe user's group, the environment and the agent's setup file. Nothing
// is run: the real-machine runs are in probe-isolation.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { chooseIsolation, hideGit, parseSetupFile, SETUP_FILE, type IsolationHost, type IsolationRequest } from '../src/probe/isolate.ts';
import { InfraError, InputError } from '../src/errors.ts';

const BWRAP = '/usr/bin/bwrap';
const SETPRIV = '/usr/bin/setpriv';
const SUDO = '/usr/bin/sudo';

interface FakeHost {
  tools?: string[];
  /** Which argv the host says exit 0. */
  works?: (argv: string[]) => boolean;
  uid?: number;
  env?: NodeJS.ProcessEnv;
  files?: Record<string, string>;
}

function host(o: FakeHost = {}): IsolationHost & { read: string[]; ran: string[][] } {
  const paths: Record<string, string> = { bwrap: BWRAP, setpriv: SETPRIV, sudo: SUDO };
  const read: string[] = [];
  const ran: string[][] = [];
  return {
    which: (cmd) => (o.tools ?? ['bwrap', 'setpriv', 'sudo']).includes(cmd) ? paths[cmd] ?? `/usr/bin/${cmd}` : null,
    works: (argv) => { ran.push(argv); return (o.works ?? (() => false))(argv); },
    uid: () => o.uid ?? 1001,
    gidOf: (user) => (user === 'npu-probe' || user === 'other-probe' ? 999 : null),
    env: o.env ?? {},
    readFile: (p) => { read.push(p); return o.files?.[p] ?? null; },
    read, ran,
  };
}

const req = (r: Partial<IsolationRequest> = {}): IsolationRequest => ({ mode: 'auto', untrusted: true, allowUnisolated: false, ...r });
const RUN_DIR = mkdtempSync(join(tmpdir(), 'nbg-iso-'));
const ctx = () => ({ writable: [RUN_DIR], env: {}, network: false });
const isBwrapProbe = (a: string[]) => a[0] === BWRAP && a[a.length - 1] === 'true';
/** The feature probe bubblewrap answers: plain, or only with --unshare-user. */
const bwrapWorks = (userns: 'any' | 'userns-only') => (a: string[]) => isBwrapProbe(a) && (userns === 'any' || a.includes('--unshare-user'));
const setupFile = (user: string) => ({ [SETUP_FILE]: `# Written by \`npu-block-gate agent setup\`: the user the probe (a pull request's model code) runs as.\n${user}\n` });

test('auto picks uid when a user is configured and the runner can switch to it (setpriv as root)', () => {
  const h = host({ uid: 0, env: { NPU_BLOCK_GATE_PROBE_USER: 'npu-probe' }, works: (a) => a[0] === SETPRIV && a[a.length - 1] === 'true' && a.length === 8 });
  const iso = chooseIsolation(req(), h);
  assert.is(iso.mode, 'uid');
  assert.is(iso.detail, 'uid npu-probe (setpriv)');
  assert.equal(iso.wrap(['python3', 'probe.py'], ctx()), [SETPRIV, '--reuid', 'npu-probe', '--regid', '999', '--init-groups', '--', 'python3', 'probe.py']);
});

test('the probe user comes from the request, else $NPU_BLOCK_GATE_PROBE_USER, else the setup file agent setup wrote', () => {
  const sudoOk = (a: string[]) => a[0] === SUDO && a[a.length - 1] === 'true' && a.length === 6;
  const files = setupFile('other-probe');
  // The setup file alone: read through the host, at SETUP_FILE.
  let h = host({ works: sudoOk, files });
  let iso = chooseIsolation(req(), h);
  assert.is(iso.detail, 'uid other-probe (sudo -n)');
  assert.equal(h.read, [SETUP_FILE]);
  assert.equal(iso.wrap(['p'], ctx()), [SUDO, '-n', '-u', 'other-probe', '--', 'p']);
  // sudo would drop PATH, PYTHONPATH, LD_LIBRARY_PATH: the probe's environment is handed over with env -i.
  assert.equal(iso.wrap(['p'], { ...ctx(), probeEnv: { PATH: '/opt/xrt/bin', LD_LIBRARY_PATH: '/opt/xrt/lib' } }),
    [SUDO, '-n', '-u', 'other-probe', '--', '/usr/bin/env', '-i', 'PATH=/opt/xrt/bin', 'LD_LIBRARY_PATH=/opt/xrt/lib', 'p']);
  // The environment beats the file (which is then not read); the request beats both.
  h = host({ works: sudoOk, files, env: { NPU_BLOCK_GATE_PROBE_USER: 'npu-probe' } });
  assert.is(chooseIsolation(req(), h).detail, 'uid npu-probe (sudo -n)');
  assert.equal(h.read, []);
  h = host({ works: sudoOk, files, env: { NPU_BLOCK_GATE_PROBE_USER: 'npu-probe' } });
  assert.is(chooseIsolation(req({ user: 'req-user' }), h).detail, 'uid req-user (sudo -n)');
  // An empty variable counts as unset.
  h = host({ works: sudoOk, files, env: { NPU_BLOCK_GATE_PROBE_USER: '' } });
  assert.is(chooseIsolation(req(), h).detail, 'uid other-probe (sudo -n)');
  // A file that names no valid user is bad input, not a silent fallback.
  assert.throws(() => chooseIsolation(req(), host({ works: sudoOk, files: { [SETUP_FILE]: 'Not A User\n' } })), (e: unknown) => e instanceof InputError && /probe user "Not A User" is not a user name/.test((e as Error).message));
});

test('parseSetupFile: the first line that is neither blank nor a comment', () => {
  assert.is(parseSetupFile(null), null);
  assert.is(parseSetupFile(''), null);
  assert.is(parseSetupFile('# only a comment\n\n'), null);
  assert.is(parseSetupFile('# c\n\n  npu-probe  \nsecond\n'), 'npu-probe');
  assert.is(parseSetupFile('npu-probe\r\n'), 'npu-probe');
});

test('no configured user, or one the runner cannot switch to: namespace when bubblewrap works', () => {
  let iso = chooseIsolation(req(), host({ works: bwrapWorks('any') }));
  assert.is(iso.mode, 'namespace');
  assert.match(iso.detail, /^bubblewrap: pid\+mount\+net namespaces/);
  const argv = iso.wrap(['p'], ctx());
  assert.is(argv[0], BWRAP);
  assert.not.ok(argv.includes('--unshare-user'));
  assert.ok(argv.includes('--unshare-net'));
  assert.equal(argv.slice(-2), ['--', 'p']);
  // Only with a user namespace (an unprivileged runner).
  iso = chooseIsolation(req(), host({ works: bwrapWorks('userns-only') }));
  assert.match(iso.detail, /^bubblewrap: user\+pid\+mount\+net namespaces/);
  assert.ok(iso.wrap(['p'], ctx()).includes('--unshare-user'));
  // A user is configured but neither setpriv nor sudo gets there: bubblewrap still isolates.
  iso = chooseIsolation(req(), host({ works: bwrapWorks('any'), files: setupFile('npu-probe') }));
  assert.is(iso.mode, 'namespace');
});

test('no isolation at all: none for a trusted run (saying what it tried), refused for an untrusted one unless allowUnisolated', () => {
  const nothing = host({ tools: [] });
  const trusted = chooseIsolation(req({ untrusted: false }), nothing);
  assert.is(trusted.mode, 'none');
  assert.match(trusted.detail, /^none \(bubblewrap: not installed \(apt install bubblewrap\)\)$/);
  assert.equal(trusted.wrap(['p'], ctx()), ['p']);
  assert.throws(() => chooseIsolation(req(), nothing), (e: unknown) => e instanceof InfraError && /^refusing to run an untrusted event's model code without isolation \(bubblewrap: not installed/.test((e as Error).message));
  // A configured user nobody can switch to is named in the refusal.
  assert.throws(() => chooseIsolation(req(), host({ files: setupFile('npu-probe') })), /uid npu-probe: cannot switch to it/);
  const unsafe = chooseIsolation(req({ allowUnisolated: true }), nothing);
  assert.is(unsafe.mode, 'none');
  assert.match(unsafe.detail, /; UNSAFE: allow-unisolated$/);
  // Asked for none: none (untrusted still refused).
  assert.is(chooseIsolation(req({ mode: 'none', untrusted: false }), host({ works: () => true })).mode, 'none');
  assert.throws(() => chooseIsolation(req({ mode: 'none' }), host({ works: () => true })), /refusing/);
  // Asked for uid without a user.
  assert.throws(() => chooseIsolation(req({ mode: 'uid' }), host({ works: () => true })), /isolation uid is not available here: uid: no probe user configured/);
});

test('the uid wrap nests bubblewrap only when the probe user can start it', () => {
  const prefix = [SUDO, '-n', '-u', 'npu-probe', '--'];
  const starts = (a: string[]) => prefix.every((x, i) => a[i] === x);
  // The probe user can make a user namespace: sudo ... bwrap --unshare-user ... -- argv.
  let h = host({ files: setupFile('npu-probe'), works: (a) => starts(a) });
  let iso = chooseIsolation(req(), h);
  assert.is(iso.detail, 'uid npu-probe (sudo -n) + bubblewrap');
  let argv = iso.wrap(['python3', 'probe.py'], ctx());
  assert.equal(argv.slice(0, 6), [...prefix, BWRAP]);
  assert.ok(argv.includes('--unshare-user'));
  assert.equal(argv.slice(-3), ['--', 'python3', 'probe.py']);
  assert.ok(h.ran.some((a) => starts(a) && a[5] === BWRAP), 'the nested probe ran as the probe user');
  // It cannot: the uid alone, no bubblewrap in the argv.
  h = host({ files: setupFile('npu-probe'), works: (a) => starts(a) && a[5] === 'true' });
  iso = chooseIsolation(req(), h);
  assert.is(iso.detail, 'uid npu-probe (sudo -n)');
  argv = iso.wrap(['python3', 'probe.py'], ctx());
  assert.equal(argv, [...prefix, 'python3', 'probe.py']);
  // No bubblewrap installed: never nested.
  iso = chooseIsolation(req(), host({ tools: ['sudo'], files: setupFile('npu-probe'), works: () => true }));
  assert.is(iso.detail, 'uid npu-probe (sudo -n)');
  // As root without setpriv: sudo.
  iso = chooseIsolation(req(), host({ uid: 0, tools: ['sudo'], files: setupFile('npu-probe'), works: () => true }));
  assert.is(iso.detail, 'uid npu-probe (sudo -n)');
});

test('.git is hidden whatever it is: a directory gets a tmpfs; a worktree\'s .git file an empty file, its git dir a tmpfs and the common config an empty file', () => {
  const root = mkdtempSync(join(tmpdir(), 'nbg-hidegit-'));
  mkdirSync(join(root, 'repo/.git/worktrees/w'), { recursive: true });
  writeFileSync(join(root, 'repo/.git/config'), '[http]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n');
  writeFileSync(join(root, 'repo/.git/worktrees/w/commondir'), '../..\n');
  mkdirSync(join(root, 'w'));
  writeFileSync(join(root, 'w/.git'), `gitdir: ${join(root, 'repo/.git/worktrees/w')}\n`);
  assert.equal(hideGit(join(root, 'repo/.git')), ['--tmpfs', join(root, 'repo/.git')]);
  assert.equal(hideGit(join(root, 'w/.git')), [
    '--ro-bind', '/dev/null', join(root, 'w/.git'),
    '--tmpfs', join(root, 'repo/.git/worktrees/w'),
    '--ro-bind', '/dev/null', join(root, 'repo/.git/config'),
  ]);
  assert.equal(hideGit(join(root, 'none/.git')), []);
});

test.run();
