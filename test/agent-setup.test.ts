// `npu-block-gate agent setup` on the fake runner (test/fixtures/agent/fake.ts): /etc under the
// fake root, the runner's home, caches and work dir in temp dirs, useradd/groupadd/usermod/visudo/
// setpriv/systemctl stubbed (they edit the fake /etc), and file owners through the SetupFs seam
// (an owner map over the real modes: a test cannot really chown). Nothing touches this machine's
// users, groups, /etc or /dev.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../src/cli.ts';
import { realSetupFs, type SetupFs } from '../src/agent/setup.ts';
import { drainSudoersRule } from '../src/agent/runner.ts';
import { spawnSync } from 'node:child_process';
import type { CmdResult } from '../src/agent/machine.ts';
import type { AgentDeps } from '../src/agent/cli.ts';
import { fakeRunner, agent, ok, restub, sink, type Fake } from './fixtures/agent/fake.ts';
import { dotRunner } from './fixtures/agent/runner.ts';

const RUNNER_UID = 1001;
const PROBE_UID = 999;
const GROUP_GID = 990;
const RENDER_GID = 993;
const SERVICE = 'actions.runner.acme-llm.npu-1.service';
const PYTHON = '/opt/venv/bin/python';
const SUDO_LINE = `runner ALL=(npu-probe) NOPASSWD:NOSETENV: ALL`;

interface SetupFake extends Fake {
  runnerDir: string;
  work: string;
  hub: string;
  /** Owners the seam reports (default: the runner): path -> uid, gid. */
  owners: Map<string, { uid: number; gid: number }>;
  chowns: [string, number, number][];
  etc: (name: string) => string;
  python: { ok: boolean };
  /** The probe user can start bubblewrap (false: as AppArmor on Ubuntu 24.04 has it). */
  sandbox: { ok: boolean };
  memlock: { value: string };
  /** agent setup --root <fake> --runner-dir <runner> --python /opt/venv/bin/python ARGS, as root, owners through the seam. */
  run(args?: string[], extra?: Partial<AgentDeps>): ReturnType<typeof agent>;
  /** agent setup --root <fake> ARGS, the same way. */
  raw(args: string[], extra?: Partial<AgentDeps>): ReturnType<typeof agent>;
}

const mode = (p: string) => statSync(p).mode & 0o7777;
const lines = (out: string) => out.split('\n').filter((l) => l.startsWith('  '));
/** [status, id] of every step line. */
const steps = (out: string) => lines(out).map((l) => l.trim().split(/\s+/).slice(0, 2));
const step = (out: string, id: string) => lines(out).find((l) => l.trim().split(/\s+/)[1] === id) ?? '';
const MUTATING = ['useradd', 'groupadd', 'usermod', 'visudo'];

function setupFake(): SetupFake {
  const f = fakeRunner();
  chmodSync(f.base, 0o755); // mkdtemp made it 0700; a runner's home is searchable
  for (const d of [f.home, join(f.home, '.cache'), join(f.home, '.cache/huggingface'), join(f.home, '.cache/huggingface/hub'), join(f.home, '.cache/huggingface/hub/models--meta-llama--Llama-3.2-1B')]) chmodSync(d, 0o755);
  const hub = join(f.home, '.cache/huggingface/hub');
  writeFileSync(join(hub, 'models--meta-llama--Llama-3.2-1B/config.json'), '{}');
  chmodSync(join(hub, 'models--meta-llama--Llama-3.2-1B/config.json'), 0o644);
  const etc = (name: string) => join(f.root, 'etc', name);
  mkdirSync(etc('sudoers.d'), { recursive: true });
  mkdirSync(join(f.root, 'usr/sbin'), { recursive: true });
  writeFileSync(join(f.root, 'usr/sbin/nologin'), '');
  writeFileSync(etc('passwd'), `root:x:0:0:root:/root:/bin/bash\nrunner:x:${RUNNER_UID}:${RUNNER_UID}:GitHub runner:${f.home}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`);
  writeFileSync(etc('group'), `root:x:0:\nsudo:x:27:\ndocker:x:998:\nrender:x:${RENDER_GID}:\nrunner:x:${RUNNER_UID}:\n`);
  writeFileSync(etc('sudoers'), 'Defaults env_reset\nroot ALL=(ALL:ALL) ALL\n@includedir /etc/sudoers.d\n');
  chmodSync(join(f.root, 'dev/accel/accel0'), 0o660);
  const runnerDir = join(f.home, 'actions-runner');
  const work = join(runnerDir, '_work');
  mkdirSync(work, { recursive: true });
  chmodSync(runnerDir, 0o755);
  chmodSync(work, 0o755);
  writeFileSync(join(runnerDir, '.runner'), dotRunner({ id: 7, name: 'npu-1', gitHubUrl: 'https://github.com/acme/llm' }));
  writeFileSync(join(runnerDir, '.service'), `${SERVICE}\n`);
  for (const [n, m] of [['.credentials', 0o600], ['.credentials_rsaparams', 0o600]] as const) { writeFileSync(join(runnerDir, n), '{}'); chmodSync(join(runnerDir, n), m); }

  const owners = new Map<string, { uid: number; gid: number }>();
  owners.set(join(f.root, 'dev/accel/accel0'), { uid: 0, gid: RENDER_GID });
  const chowns: [string, number, number][] = [];
  const ownerOf = (p: string) => owners.get(p) ?? { uid: RUNNER_UID, gid: RUNNER_UID };
  const fs: Partial<SetupFs> = {
    lstat: (p) => { const st = realSetupFs.lstat(p); return st && { ...st, ...ownerOf(p) }; },
    chmod: (p, m, owner) => { assert.is(ownerOf(p).uid, owner, `chmod ${p}: owner`); chmodSync(p, m); },
    chown: (p, uid, gid, owner) => { assert.is(ownerOf(p).uid, owner, `chown ${p}: owner`); owners.set(p, { uid, gid }); chowns.push([p, uid, gid]); },
  };

  // The account tools edit the fake /etc (they get --prefix <root>).
  const prefixOf = (a: string[]) => { const i = a.indexOf('--prefix'); return i >= 0 ? a[i + 1] : '/'; };
  const edit = (root: string, name: string, fn: (text: string) => string) => writeFileSync(join(root, 'etc', name), fn(readFileSync(join(root, 'etc', name), 'utf8')));
  restub(f, 'useradd', (a) => {
    const root = prefixOf(a);
    assert.is(root, f.root);
    const name = a[a.length - 1];
    const shell = a[a.indexOf('--shell') + 1];
    edit(root, 'passwd', (t) => t + `${name}:x:${PROBE_UID}:${PROBE_UID}:${a[a.indexOf('--comment') + 1]}:${a[a.indexOf('--home-dir') + 1]}:${shell}\n`);
    edit(root, 'group', (t) => t + `${name}:x:${PROBE_UID}:\n`);
    return ok('');
  });
  restub(f, 'groupadd', (a) => { edit(prefixOf(a), 'group', (t) => t + `${a[a.length - 1]}:x:${GROUP_GID}:\n`); return ok(''); });
  restub(f, 'usermod', (a) => {
    const g = a[a.indexOf('-aG') + 1];
    const user = a[a.length - 1];
    edit(prefixOf(a), 'group', (t) => t.split('\n').map((l) => {
      const p = l.split(':');
      if (p[0] !== g) return l;
      const members = p[3] ? p[3].split(',') : [];
      return [...p.slice(0, 3), [...members, user].join(',')].join(':');
    }).join('\n'));
    return ok('');
  });
  restub(f, 'visudo', (a) => {
    assert.is(a[0], '-cf');
    const text = readFileSync(a[1], 'utf8');
    // The two rules setup writes, and nothing looser: the probe's (NOSETENV: ALL would imply SETENV), and the drain's (no SETENV, full paths, two verbs of one unit).
    const probe = /^[a-z_][a-z0-9_-]* ALL=\([a-z_][a-z0-9_-]*\) NOPASSWD:NOSETENV: ALL$/m;
    const drain = /^[a-z_][a-z0-9_-]* ALL=\(root\) NOPASSWD: \/usr\/bin\/systemctl stop ([\w.@-]|\\[\\,:=])+, \/usr\/bin\/systemctl start ([\w.@-]|\\[\\,:=])+$/m;
    return probe.test(text) || drain.test(text) ? ok(`${a[1]}: parsed OK\n`) : { status: 1, stdout: '', stderr: `>>> ${a[1]}: syntax error near line 3 <<<\n` };
  });
  const memlock = { value: 'infinity' };
  restub(f, 'systemctl', (a) => (a[0] === 'show' && a.includes('LimitMEMLOCK') ? ok(`${memlock.value}\n`) : { status: 1, stdout: '', stderr: 'unexpected' }));
  const python = { ok: true };
  const sandbox = { ok: true };
  restub(f, 'bwrap', () => ok(''));
  // POSIX ACLs: what setfacl -m u:NAME:x grants, as getfacl then shows it.
  const acl = new Map<string, string[]>();
  restub(f, 'setfacl', (a) => { const [, entry, ...dirs] = a; for (const d of dirs) acl.set(d, [...(acl.get(d) ?? []), entry.replace(/^u:/, 'user:').replace(/:x$/, ':--x')]); return ok(''); });
  restub(f, 'getfacl', (a) => ok((acl.get(a[a.length - 1]) ?? []).join('\n') + '\n'));
  restub(f, 'setpriv', (a): CmdResult => {
    const cmd = a.slice(a.indexOf('--') + 1);
    if (cmd[0] === 'sudo') return ok('');
    if (cmd[0] === 'bwrap') return sandbox.ok ? ok('') : { status: 1, stdout: '', stderr: 'bwrap: setting up uid map: Permission denied\n' };
    if (cmd[1] === '-c') return python.ok ? ok('') : { status: 1, stdout: '', stderr: `Traceback (most recent call last):\n  File "<string>", line 1, in <module>\nModuleNotFoundError: No module named 'numpy'\n` };
    return { status: 1, stdout: '', stderr: 'setpriv: unexpected' };
  });
  const x: SetupFake = {
    ...f, runnerDir, work, hub, owners, chowns, etc, python, sandbox, memlock,
    run: (args = [], extra = {}) => agent(['setup', '--root', f.root, '--runner-dir', runnerDir, '--python', PYTHON, ...args], { ...f.deps, uid: 0, setupFs: fs, ...extra }),
    raw: (args, extra = {}) => agent(['setup', '--root', f.root, ...args], { ...f.deps, uid: 0, setupFs: fs, ...extra }),
  };
  return x;
}

const mutations = (f: SetupFake) => f.calls.filter(([n]) => MUTATING.includes(n));

test('first run sets everything up, one line per step; the second run changes nothing and says so', async () => {
  const f = setupFake();
  const r = await f.run();
  assert.is(r.code, 0, r.out + r.err);
  assert.is(r.err, '');
  assert.match(r.out, /^npu-block-gate agent setup \(root .*\)\n/);
  assert.equal(steps(r.out), [
    ['done', 'probe-user'], ['done', 'group'], ['done', 'group-members'], ['done', 'setup-file'], ['done', 'sudoers'], ['done', 'drain-sudoers'], ['done', 'npu-access'],
    ['already', 'memlock'], ['done', 'kernel-cache'], ['done', 'reference-cache'], ['already', 'hf-cache'], ['already', 'hf-token'], ['done', 'work-dir'],
    ['already', 'runner-secrets'], ['already', 'checkouts'], ['already', 'reach'], ['already', 'switch'], ['already', 'python'], ['already', 'sandbox'],
  ]);
  assert.match(r.out, /\n10 changes made; the runner starts the probe as npu-probe\n$/);

  // The probe user: a system user without a login shell or a home, in the shared group and the NPU's group.
  const useradd = f.calls.find(([n]) => n === 'useradd')![1];
  assert.equal(useradd, ['--prefix', f.root, '--system', '--user-group', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', '--comment', 'npu-block-gate probe', 'npu-probe']);
  assert.match(readFileSync(f.etc('passwd'), 'utf8'), /^npu-probe:x:999:999:npu-block-gate probe:\/nonexistent:\/usr\/sbin\/nologin$/m);
  assert.match(readFileSync(f.etc('group'), 'utf8'), /^npu-block-gate:x:990:runner,npu-probe$/m);
  assert.match(readFileSync(f.etc('group'), 'utf8'), /^render:x:993:npu-probe$/m);
  assert.match(step(r.out, 'group-members'), /added runner and npu-probe to npu-block-gate \(restart the runner service/);

  // The setup file isolate.ts reads, and the sudoers rule, checked by visudo before it was installed.
  const setupFile = join(f.root, 'etc/npu-block-gate/probe-user');
  assert.is(mode(setupFile), 0o644);
  assert.match(readFileSync(setupFile, 'utf8'), /\nnpu-probe\n$/);
  const sudoers = join(f.root, 'etc/sudoers.d/npu-block-gate');
  assert.is(mode(sudoers), 0o440);
  assert.equal(readFileSync(sudoers, 'utf8').split('\n').filter((l) => l && !l.startsWith('#')), [SUDO_LINE]);
  assert.equal(readdirSync(join(f.root, 'etc/sudoers.d')), ['npu-block-gate', 'npu-block-gate-drain']);
  // The rule agent drain and undrain need: this service's stop and start as root, nothing else, no SETENV.
  const drainRule = `runner ALL=(root) NOPASSWD: /usr/bin/systemctl stop ${SERVICE}, /usr/bin/systemctl start ${SERVICE}`;
  const drainFile = join(f.root, 'etc/sudoers.d/npu-block-gate-drain');
  assert.is(mode(drainFile), 0o440);
  assert.equal(readFileSync(drainFile, 'utf8').split('\n').filter((l) => l && !l.startsWith('#')), [drainRule]);
  assert.ok(f.calls.filter(([n]) => n === 'visudo').some(([, a]) => /\/\.npu-block-gate-drain\.[^/]*\.tmp$/.test(a[1])));
  assert.match(step(r.out, 'drain-sudoers'), new RegExp(`visudo -cf ok\\): ${drainRule.replace(/[()]/g, '\\$&')}$`));
  const visudo = f.calls.find(([n]) => n === 'visudo')![1];
  assert.match(visudo[1], /\/etc\/sudoers\.d\/\.npu-block-gate\.[^/]*\.tmp$/); // a dotted name: sudo never reads a half-made rule
  assert.match(step(r.out, 'sudoers'), new RegExp(`visudo -cf ok\\): ${SUDO_LINE.replace(/[()]/g, '\\$&')}$`));

  // Caches made for the runner, read-only for everybody else; the work dir carries the group (setgid), not group-writable.
  assert.is(mode(f.cache), 0o755);
  assert.is(mode(join(f.cache, 'reference')), 0o755);
  assert.equal(f.owners.get(f.work), { uid: RUNNER_UID, gid: GROUP_GID });
  assert.is(mode(f.work), 0o2755);
  assert.match(step(r.out, 'work-dir'), /group npu-block-gate, mode 0755 -> 2755/);

  // The checks ran as the users they are about.
  const setprivs = f.calls.filter(([n]) => n === 'setpriv').map(([, a]) => a);
  assert.equal(setprivs, [
    ['--reuid', 'runner', '--regid', '1001', '--init-groups', '--', 'sudo', '-n', '-u', 'npu-probe', '--', 'true'],
    ['--reuid', 'npu-probe', '--regid', '999', '--init-groups', '--', PYTHON, '-c', 'import numpy'],
    ['--reuid', 'npu-probe', '--regid', '999', '--init-groups', '--', 'bwrap', '--unshare-user', '--unshare-pid', '--unshare-net', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true'],
  ]);

  // Again: nothing changes, and it says so.
  const before = { passwd: readFileSync(f.etc('passwd'), 'utf8'), group: readFileSync(f.etc('group'), 'utf8'), sudoersIno: statSync(sudoers).ino, setupIno: statSync(setupFile).ino };
  const n = mutations(f).length;
  const chowns = f.chowns.length;
  const again = await f.run();
  assert.is(again.code, 0, again.out);
  assert.ok(steps(again.out).every(([s]) => s === 'already'), again.out);
  assert.match(again.out, /\nnothing to change: already set up for npu-probe\n$/);
  assert.is(mutations(f).length, n);
  assert.is(f.chowns.length, chowns);
  assert.equal({ passwd: readFileSync(f.etc('passwd'), 'utf8'), group: readFileSync(f.etc('group'), 'utf8'), sudoersIno: statSync(sudoers).ino, setupIno: statSync(setupFile).ino }, before);
});

test('--dry-run says what it would do and changes nothing, also as a normal user; without it a normal user is refused', async () => {
  const f = setupFake();
  const passwd = readFileSync(f.etc('passwd'), 'utf8');
  const r = await f.run(['--dry-run'], { uid: 1000 });
  assert.is(r.code, 0, r.out + r.err);
  assert.match(r.out, /\(dry run: nothing changes\)\n/);
  const s = Object.fromEntries(steps(r.out).map(([st, id]) => [id, st]));
  for (const id of ['probe-user', 'group', 'group-members', 'setup-file', 'sudoers', 'npu-access', 'kernel-cache', 'reference-cache', 'work-dir', 'switch', 'python']) assert.is(s[id], 'would', id);
  assert.match(step(r.out, 'probe-user'), /would +probe-user +create system user npu-probe \(useradd --prefix .* --system/);
  assert.match(step(r.out, 'python'), /\(needs root\)/);
  assert.match(r.out, /\ndry run: \d+ steps would change something\n$/);
  assert.is(mutations(f).length, 0);
  assert.is(f.calls.filter(([n]) => n === 'setpriv').length, 0);
  assert.is(readFileSync(f.etc('passwd'), 'utf8'), passwd);
  assert.not.ok(existsSync(join(f.root, 'etc/npu-block-gate')));
  assert.equal(readdirSync(join(f.root, 'etc/sudoers.d')), []);
  assert.not.ok(existsSync(f.cache));
  assert.is(mode(f.work), 0o755);

  const refused = await f.run([], { uid: 1000 });
  assert.is(refused.code, 2);
  assert.match(refused.err, /^npu-block-gate: error: agent setup creates a user and a group and changes file owners: run it as root \(sudo npu-block-gate agent setup --runner-user <runner user> \.\.\.\), or with --dry-run to see what it would do\n$/);
  assert.is(refused.out, '');
  assert.is(mutations(f).length, 0);

  // After a real run, a dry run has nothing to do.
  assert.is((await f.run()).code, 0);
  const after = await f.run(['--dry-run']);
  assert.ok(steps(after.out).every(([st]) => st === 'already'), after.out);
  assert.match(after.out, /\ndry run: nothing would change\n$/);
});

test('an existing probe user is used; root, the runner itself or a bad name is refused; one in docker is a warning', async () => {
  const f = setupFake();
  writeFileSync(f.etc('passwd'), readFileSync(f.etc('passwd'), 'utf8') + 'gateprobe:x:995:995::/var/lib/gateprobe:/bin/bash\ntoor:x:0:0::/root:/bin/sh\n');
  writeFileSync(f.etc('group'), readFileSync(f.etc('group'), 'utf8').replace('docker:x:998:', 'docker:x:998:gateprobe') + 'gateprobe:x:995:\n');
  const r = await f.run(['--user', 'gateprobe']);
  assert.is(r.code, 0, r.out + r.err);
  assert.match(step(r.out, 'probe-user'), /already +probe-user +gateprobe exists \(uid 995, login shell \/bin\/bash\)$/);
  assert.match(step(r.out, 'probe-groups'), /WARN +probe-groups +gateprobe is in docker: as good as root, the separate uid isolates nothing; fix: gpasswd -d gateprobe docker$/);
  assert.not.ok(f.calls.some(([n]) => n === 'useradd'));
  assert.match(readFileSync(join(f.root, 'etc/npu-block-gate/probe-user'), 'utf8'), /\ngateprobe\n$/);
  assert.match(readFileSync(join(f.root, 'etc/sudoers.d/npu-block-gate'), 'utf8'), /^runner ALL=\(gateprobe\) NOPASSWD:NOSETENV: ALL$/m);
  // Switching to another probe user rewrites the setup file and the rule.
  const back = await f.run();
  assert.is(back.code, 0, back.err);
  assert.match(step(back.out, 'setup-file'), /done +setup-file +wrote \/etc\/npu-block-gate\/probe-user naming npu-probe \(0644\), was gateprobe$/);
  assert.match(step(back.out, 'sudoers'), /^  done /);

  for (const [args, re] of [
    [['--user', 'toor'], /toor has uid 0 \(root\): the probe would run as root; pass another --user$/],
    [['--user', 'runner'], /the probe user must not be the runner user \(runner\): pass another --user$/],
    [['--user', 'Bad Name'], /--user "Bad Name": not a user name/],
    [['--runner-user', 'ghost'], /etc\/passwd: no user ghost \(the user the runner service runs as\): pass --runner-user$/],
  ] as [string[], RegExp][]) {
    const e = await f.run(args);
    assert.is(e.code, 2, args.join(' '));
    assert.match(e.err, /^npu-block-gate: error: [^\n]+\n$/);
    assert.match(e.err.trim(), re);
  }
});

test('a runner that runs as root needs no sudoers rule (setpriv); the runner user defaults to $SUDO_USER', async () => {
  const f = setupFake();
  writeFileSync(f.etc('passwd'), readFileSync(f.etc('passwd'), 'utf8').replace(`root:x:0:0:root:/root:/bin/bash`, `root:x:0:0:root:${f.home}:/bin/bash`));
  f.owners.set(f.work, { uid: 0, gid: 0 });
  const r = await f.run(['--runner-user', 'root']);
  assert.is(r.code, 0, r.out + r.err);
  assert.match(step(r.out, 'sudoers'), /skipped +sudoers +the runner runs as root: it starts the probe with setpriv, no sudoers rule needed$/);
  assert.match(step(r.out, 'drain-sudoers'), /skipped +drain-sudoers +the runner runs as root, which sudo lets stop and start its service without a rule: none installed$/);
  assert.equal(readdirSync(join(f.root, 'etc/sudoers.d')), []);
  assert.not.ok(f.calls.some(([n]) => n === 'visudo'));
  assert.is(step(r.out, 'switch'), '');
  // Under sudo, the invoking user is the runner user.
  const g = setupFake();
  const s = await g.run([], { env: { ...g.env, USER: 'root', SUDO_USER: 'runner' } });
  assert.is(s.code, 0, s.err);
  assert.match(step(s.out, 'sudoers'), /runner ALL=\(npu-probe\) NOPASSWD:NOSETENV: ALL$/);
});

test('a rule visudo rejects is never installed; a failing useradd stops setup with one line naming it (exit 3)', async () => {
  const f = setupFake();
  restub(f, 'visudo', (a) => ({ status: 1, stdout: '', stderr: `>>> ${a[1]}: syntax error near line 3 <<<\nparse error in ${a[1]} near line 3\n` }));
  const r = await f.run();
  assert.is(r.code, 3);
  assert.match(r.err, /^npu-block-gate: error \(infrastructure\): .*\/etc\/sudoers\.d\/npu-block-gate: visudo -cf rejected the rule \(parse error in .* near line 3\); nothing installed\n$/);
  assert.equal(readdirSync(join(f.root, 'etc/sudoers.d')), []);
  // The steps before it were printed as they happened.
  assert.match(step(r.out, 'setup-file'), /^  done /);

  const g = setupFake();
  restub(g, 'useradd', () => ({ status: 9, stdout: '', stderr: 'useradd: cannot lock /etc/passwd; try again later.\n' }));
  const u = await g.run();
  assert.is(u.code, 3);
  assert.match(u.err, /^npu-block-gate: error \(infrastructure\): useradd --prefix .* npu-probe failed: useradd: cannot lock \/etc\/passwd; try again later\.\n$/);
  delete g.commands.useradd;
  const missing = await g.run();
  assert.is(missing.code, 3);
  assert.match(missing.err, /useradd not found \(install passwd \(shadow-utils\)\): could not run useradd/);
});

test('caches: modes normalized, the probe user\'s files handed to the runner, anybody else\'s left alone and reported, links untouched', async () => {
  const f = setupFake();
  assert.is((await f.run()).code, 0);
  const k = join(f.cache, 'kernels/abc');
  mkdirSync(k, { recursive: true });
  chmodSync(join(f.cache, 'kernels'), 0o777);
  chmodSync(k, 0o2775);
  writeFileSync(join(k, 'meta.json'), '{}');
  chmodSync(join(k, 'meta.json'), 0o666);
  writeFileSync(join(k, 'tool'), '#!/bin/sh\n');
  chmodSync(join(k, 'tool'), 0o775);
  writeFileSync(join(k, 'planted'), 'x');
  chmodSync(join(k, 'planted'), 0o644);
  f.owners.set(join(k, 'planted'), { uid: PROBE_UID, gid: PROBE_UID });
  writeFileSync(join(k, 'roots'), 'x');
  chmodSync(join(k, 'roots'), 0o666);
  f.owners.set(join(k, 'roots'), { uid: 0, gid: 0 });
  symlinkSync('/etc/shadow', join(k, 'link'));
  const ref = join(f.cache, 'reference/.key.tmp');
  mkdirSync(ref);
  chmodSync(ref, 0o700); // mkdtemp's mode
  const r = await f.run();
  assert.is(r.code, 0, r.err);
  assert.match(step(r.out, 'kernel-cache'), /WARN +kernel-cache +.*kcache: handed 1 of npu-probe's to runner, changed the mode of 4 \(7 entries\): owned by runner, directories 0755, files 0644 \(0755 when executable\); 1 owned by another user left alone \(e\.g\. .*\/roots\); fix: chown -R runner: .*kcache if nothing else should own them, then run setup again$/);
  assert.match(step(r.out, 'reference-cache'), /done +reference-cache +.*reference: changed the mode of 1 \(2 entries\)/);
  assert.equal([mode(join(f.cache, 'kernels')), mode(k), mode(join(k, 'meta.json')), mode(join(k, 'tool')), mode(join(k, 'planted')), mode(ref)], [0o755, 0o755, 0o644, 0o755, 0o644, 0o755]);
  assert.equal(f.owners.get(join(k, 'planted')), { uid: RUNNER_UID, gid: RUNNER_UID });
  assert.is(mode(join(k, 'roots')), 0o666); // root's: not ours to change
  assert.ok(f.chowns.every(([p]) => !p.endsWith('/link') && !p.endsWith('/roots')));
  const again = await f.run();
  assert.match(step(again.out, 'kernel-cache'), /WARN +kernel-cache +.*: 7 entries, owned by runner.*; 1 owned by another user left alone/);
  assert.match(step(again.out, 'reference-cache'), /^  already /);
});

test('HF cache and token: reported without --fix, repaired with it; then already so', async () => {
  const f = setupFake();
  const file = join(f.hub, 'models--meta-llama--Llama-3.2-1B/config.json');
  chmodSync(file, 0o666);
  const blob = join(f.hub, 'models--meta-llama--Llama-3.2-1B/blob');
  writeFileSync(blob, 'x');
  chmodSync(blob, 0o600);
  const token = join(f.home, '.cache/huggingface/token');
  writeFileSync(token, 'hf_secret');
  chmodSync(token, 0o644);
  const r = await f.run();
  assert.is(r.code, 0, r.err);
  assert.match(step(r.out, 'hf-cache'), /WARN +hf-cache +.*hub \(4 entries\): 1 group\/world-writable \(e\.g\. .*config\.json\); 1 not readable by others \(e\.g\. .*blob\); fix: run setup again with --fix \(chmod go-w, o\+rX; chown npu-probe's to runner\)$/);
  assert.match(step(r.out, 'hf-token'), /WARN +hf-token +.*token \(mode 0644\): the probe user can read the HF token; fix: chmod 600 .*token \(or run setup again with --fix\)$/);
  assert.equal([mode(file), mode(blob), mode(token)], [0o666, 0o600, 0o644]);
  const fixed = await f.run(['--fix']);
  assert.is(fixed.code, 0, fixed.err);
  assert.match(step(fixed.out, 'hf-cache'), /^  done +hf-cache +repaired /);
  assert.match(step(fixed.out, 'hf-token'), /^  done +hf-token +chmod 600 /);
  assert.equal([mode(file), mode(blob), mode(token)], [0o644, 0o604, 0o600]);
  const again = await f.run(['--fix']);
  assert.match(step(again.out, 'hf-cache'), /^  already /);
  assert.match(step(again.out, 'hf-token'), /already +hf-token +.*token \(0600\): only its owner reads it$/);
  // No HF cache at all: skipped, named.
  const g = setupFake();
  const s = await g.run(['--hf-home', join(g.base, 'nohf')]);
  assert.match(step(s.out, 'hf-cache'), /skipped +hf-cache +no HF hub cache at .*nohf\/hub \(pass --hf-home\)$/);
});

test('the runner\'s credentials and a home the probe user cannot search: warnings, repaired with --fix', async () => {
  const f = setupFake();
  chmodSync(join(f.runnerDir, '.credentials_rsaparams'), 0o644);
  chmodSync(f.home, 0o750);
  const r = await f.run();
  assert.is(r.code, 0, r.err);
  assert.match(step(r.out, 'runner-secrets'), /WARN +runner-secrets +the probe user can read .*\.credentials_rsaparams \(mode 0644\); fix: chmod 600 /);
  // A home is never opened to every local user (o+x): the probe user alone gets search, through an ACL entry.
  assert.match(step(r.out, 'reach'), new RegExp(`WARN +reach +npu-probe cannot search ${f.home} \\(mode 0750, on the way to .*\\); fix: setfacl -m u:npu-probe:x ${f.home} \\(the probe user alone, search only; never o\\+x on a home\\); or keep the caches, the HF cache, the work dir and the Python outside the home; or run setup again with --fix$`));
  const fixed = await f.run(['--fix']);
  assert.is(fixed.code, 0, fixed.err);
  assert.equal([mode(join(f.runnerDir, '.credentials_rsaparams')), mode(f.home)], [0o600, 0o750]);
  assert.ok(f.calls.some(([n, a]) => n === 'setfacl' && a.join(' ') === `-m u:npu-probe:x ${f.home}`));
  const again = await f.run(['--fix']);
  assert.ok(steps(again.out).every(([s]) => s === 'already'), again.out);
});

test('a Python the probe user cannot import numpy with: FAIL with the fix, exit 3; no --python: skipped', async () => {
  const f = setupFake();
  f.python.ok = false;
  const r = await f.run();
  assert.is(r.code, 3);
  // numpy missing is a package to install, never a recursive chmod.
  assert.match(step(r.out, 'python'), /FAIL +python +npu-probe cannot run \/opt\/venv\/bin\/python -c "import numpy": ModuleNotFoundError: No module named 'numpy'; fix: install numpy into that environment \(\/opt\/venv\/bin\/python -m pip install numpy\); or point --python \(and the Action's python input\) at a Python npu-probe can read, with numpy$/);
  assert.not.match(r.out, /chmod -R/);
  assert.match(r.out, /; failed: python \(exit 3\)\n$/);
  const j = JSON.parse((await f.run(['--json'])).out);
  assert.is(j.exit_code, 3);
  const none = await f.raw(['--runner-dir', f.runnerDir]);
  assert.is(none.code, 0, none.err);
  assert.match(step(none.out, 'python'), /skipped +python +no --python: pass the Python the Action uses/);
});

test('sandbox: a probe user that cannot start bubblewrap is a warning naming the AppArmor fix; no bubblewrap names the package', async () => {
  const f = setupFake();
  f.sandbox.ok = false;
  mkdirSync(join(f.root, 'proc/sys/kernel'), { recursive: true });
  writeFileSync(join(f.root, 'proc/sys/kernel/apparmor_restrict_unprivileged_userns'), '1\n');
  const r = await f.run();
  assert.is(r.code, 0, r.err);
  assert.match(step(r.out, 'sandbox'), /WARN +sandbox +npu-probe cannot start bubblewrap: unprivileged user namespaces are restricted by AppArmor \(kernel.apparmor_restrict_unprivileged_userns=1\); until then pull requests are refused and trusted runs go without the sandbox; fix: an AppArmor profile for \/usr\/bin\/bwrap with the userns rule/);
  writeFileSync(join(f.root, 'proc/sys/kernel/apparmor_restrict_unprivileged_userns'), '0\n');
  assert.match(step((await f.run()).out, 'sandbox'), /WARN +sandbox +npu-probe cannot start bubblewrap: bwrap: setting up uid map: Permission denied/);
  f.sandbox.ok = true;
  assert.match(step((await f.run()).out, 'sandbox'), /already +sandbox +npu-probe can start bubblewrap in a user namespace/);
});

test('checkouts: every checkout\'s .git under the work dir is closed to group and others (a persisted token); the runner\'s own dirs are left alone', async () => {
  const f = setupFake();
  for (const d of ['acme-llm/acme-llm/.git', 'other/other/.git', '_actions/x/y/.git']) { mkdirSync(join(f.work, d), { recursive: true }); chmodSync(join(f.work, d), 0o2755); }
  writeFileSync(join(f.work, 'acme-llm/acme-llm/.git/config'), '[http]\n\textraheader = AUTHORIZATION: basic x\n');
  const r = await f.run();
  assert.is(r.code, 0, r.err);
  assert.match(step(r.out, 'checkouts'), /done +checkouts +chmod go-rwx .*acme-llm\/acme-llm\/\.git \(mode 2755\), .*other\/other\/\.git \(mode 2755\)/);
  assert.equal([mode(join(f.work, 'acme-llm/acme-llm/.git')), mode(join(f.work, 'other/other/.git')), mode(join(f.work, '_actions/x/y/.git'))], [0o2700, 0o2700, 0o2755]);
  assert.match(step((await f.run()).out, 'checkouts'), /already +checkouts/);
});

test('the NPU node: its group is given to the probe user; no node, or a root-only node, is a warning', async () => {
  const f = setupFake();
  f.owners.set(join(f.root, 'dev/accel/accel0'), { uid: 0, gid: 0 });
  let r = await f.run();
  assert.match(step(r.out, 'npu-access'), /WARN +npu-access +\/dev\/accel\/accel0 belongs to root \(mode 0660\): no group to give the probe user; fix: give the node a group with a udev rule/);
  const g = setupFake();
  rmSync(join(g.root, 'dev/accel/accel0'));
  r = await g.run();
  assert.is(r.code, 0);
  assert.match(step(r.out, 'npu-access'), /WARN +npu-access +no \/dev\/accel\/accel0: cannot tell which group opens the NPU/);
});

test('memlock: a low LimitMEMLOCK on the service, or sudo\'s pam_limits lowering it for the probe user, is a warning', async () => {
  const f = setupFake();
  f.memlock.value = '8388608';
  mkdirSync(join(f.root, 'etc/pam.d'), { recursive: true });
  writeFileSync(join(f.root, 'etc/pam.d/sudo'), '#%PAM-1.0\nsession    required   pam_limits.so\n@include common-auth\n');
  mkdirSync(join(f.root, 'etc/security/limits.d'), { recursive: true });
  writeFileSync(join(f.root, 'etc/security/limits.conf'), '# defaults\n*               hard    memlock         8192\n');
  const r = await f.run();
  assert.is(r.code, 0, r.err);
  assert.match(step(r.out, 'memlock'), new RegExp(`WARN +memlock +${SERVICE.replace(/\./g, '\\.')}: LimitMEMLOCK=8\\.0 MiB, inherited by the probe; XRT needs ~64\\.0 MiB of locked memory; fix: sudo systemctl edit ${SERVICE.replace(/\./g, '\\.')} with \\[Service\\] LimitMEMLOCK=infinity, then restart it$`));
  assert.match(step(r.out, 'memlock-sudo'), /WARN +memlock-sudo +sudo applies \/etc\/security\/limits\.conf "\* +hard +memlock +8192" \(8\.0 MiB\) to npu-probe; .*fix: add "npu-probe - memlock unlimited" to \/etc\/security\/limits\.d\/npu-block-gate\.conf$/);
  writeFileSync(join(f.root, 'etc/security/limits.conf'), '*               hard    memlock         unlimited\n');
  f.memlock.value = 'infinity';
  const ok2 = await f.run();
  assert.match(step(ok2.out, 'memlock'), /already +memlock +.*LimitMEMLOCK=infinity; the probe inherits it$/);
  assert.is(step(ok2.out, 'memlock-sudo'), '');
});

test('sudoers: a main file without @includedir is a warning; a stale rule is replaced', async () => {
  const f = setupFake();
  writeFileSync(f.etc('sudoers'), 'root ALL=(ALL:ALL) ALL\n');
  writeFileSync(join(f.root, 'etc/sudoers.d/npu-block-gate'), 'runner ALL=(ALL) NOPASSWD: ALL\n');
  const r = await f.run();
  assert.match(step(r.out, 'sudoers'), /^  done /);
  assert.match(step(r.out, 'sudoers-include'), /WARN +sudoers-include +\/etc\/sudoers has no @includedir \/etc\/sudoers\.d: sudo never reads the rule/);
  assert.not.match(readFileSync(join(f.root, 'etc/sudoers.d/npu-block-gate'), 'utf8'), /\(ALL\)/);
});

test('bad input: no runner dir, a work dir of another owner, a file as work dir (exit 2, one line, nothing changed)', async () => {
  const g = setupFake();
  const noRunner = join(g.base, 'elsewhere');
  mkdirSync(noRunner);
  let r = await g.raw(['--runner-dir', noRunner]);
  assert.is(r.code, 2);
  assert.match(r.err, /elsewhere\/\.runner: no \.runner file: is --runner-dir the runner's install dir/);
  const h = setupFake();
  h.owners.set(h.work, { uid: 0, gid: 0 });
  r = await h.run();
  assert.is(r.code, 2);
  assert.match(r.err, /_work: owned by uid 0, not by the runner user runner: is it the runner's work dir/);
  const asFile = join(h.base, 'afile');
  writeFileSync(asFile, '');
  r = await h.run(['--work-dir', asFile]);
  assert.is(r.code, 2);
  assert.match(r.err, /afile: not a directory/);
  assert.is(mutations(h).length, 0);
  // Unknown options are usage errors as for every agent command.
  r = await h.run(['--max-bytes', '1']);
  assert.is(r.code, 2);
  assert.match(r.err, /option --max-bytes does not apply to agent setup/);
});

test('the default runner dir is ~runner/actions-runner when it holds a .runner', async () => {
  const f = setupFake();
  const r = await f.raw(['--dry-run']);
  assert.is(r.code, 0, r.err);
  assert.match(step(r.out, 'work-dir'), new RegExp(`${f.work}: `));
  writeFileSync(f.etc('passwd'), readFileSync(f.etc('passwd'), 'utf8').replace(f.home, join(f.base, 'other')));
  const e = await f.raw(['--dry-run']);
  assert.is(e.code, 2);
  assert.match(e.err, /--runner-dir: pass --runner-dir \(the runner's install dir, with its \.runner file\) or --work-dir: no runner at /);
});

test('drain-sudoers: no .service (not a service) or a root runner: no rule, and it says why', async () => {
  const f = setupFake();
  rmSync(join(f.runnerDir, '.service'));
  const r = await f.run();
  assert.is(r.code, 0, r.out + r.err);
  assert.match(step(r.out, 'drain-sudoers'), /^ +skipped +drain-sudoers +no \.service in .*: the runner is not installed as a service, so no rule was installed; agent drain works by label \(--token-file\)$/);
  assert.not.ok(existsSync(join(f.root, 'etc/sudoers.d/npu-block-gate-drain')));
  assert.is(JSON.parse((await f.run(['--json'])).out).paths.drain_sudoers, null);
});

// Issue 25: the unit name in the runner-owned .service file went into the drain's sudoers rule with
// only \ , : = escaped, so a line break followed by "Defaults setenv #" passed visudo and let the
// runner user set LD_PRELOAD for the root systemctl. Any name outside systemd's service names is
// refused before anything is written.
test('a .service holding a line break, Defaults, *, a comma, a blank or a leading - is refused (exit 2, one line) and nothing is written', async () => {
  for (const bad of [
    `${SERVICE}\nDefaults setenv #`,
    `${SERVICE}\nDefaults setenv #.service`,
    'actions.runner.*.service',
    `${SERVICE}, /usr/bin/systemctl start other.service`,
    'actions.runner.acme llm.service',
    '-Hroot@host.service',
    'actions.runner\\.service',
    'actions.runner.acme-llm.npu-1',
  ]) {
    const f = setupFake();
    writeFileSync(join(f.runnerDir, '.service'), `${bad}\n`);
    const passwd = readFileSync(f.etc('passwd'), 'utf8');
    const group = readFileSync(f.etc('group'), 'utf8');
    const r = await f.run();
    assert.is(r.code, 2, `${JSON.stringify(bad)}: ${r.out}${r.err}`);
    assert.match(r.err, /^npu-block-gate: error: [^\n]+\n$/, JSON.stringify(bad));
    assert.ok(r.err.includes(`${join(f.runnerDir, '.service')}: ${JSON.stringify(bad)} is not a systemd service name`), r.err);
    assert.match(r.err, /refused, nothing written\n$/);
    // Nothing written: no user, group, setup file, sudoers rule, cache dir, owner or mode change.
    assert.equal(mutations(f), [], JSON.stringify(bad));
    assert.is(readFileSync(f.etc('passwd'), 'utf8'), passwd);
    assert.is(readFileSync(f.etc('group'), 'utf8'), group);
    assert.equal(readdirSync(join(f.root, 'etc/sudoers.d')), []);
    assert.not.ok(existsSync(join(f.root, 'etc/npu-block-gate')));
    assert.not.ok(existsSync(f.cache));
    assert.equal(f.chowns, []);
    assert.is(mode(f.work), 0o755);
    // A dry run refuses it the same way.
    const d = await f.run(['--dry-run']);
    assert.is(d.code, 2);
    assert.match(d.err, /is not a systemd service name/);
  }
});

test('drain rule: systemd\'s \\x2d escapes are kept, escaped for sudoers; bad user or unit names are never made into a rule', async () => {
  const f = setupFake();
  const svc = 'actions.runner.acme\\x2dllm.npu\\x2d1.service'; // as systemd-escape writes acme-llm / npu-1
  writeFileSync(join(f.runnerDir, '.service'), `${svc}\n`);
  const r = await f.run();
  assert.is(r.code, 0, r.out + r.err);
  const rule = 'runner ALL=(root) NOPASSWD: /usr/bin/systemctl stop actions.runner.acme\\\\x2dllm.npu\\\\x2d1.service, /usr/bin/systemctl start actions.runner.acme\\\\x2dllm.npu\\\\x2d1.service';
  assert.equal(readFileSync(join(f.root, 'etc/sudoers.d/npu-block-gate-drain'), 'utf8').split('\n').filter((l) => l && !l.startsWith('#')), [rule]);
  assert.is(drainSudoersRule('runner', svc), rule);
  // sudo's own parser takes the rule as one line (on a temp file; /etc is not touched).
  if (spawnSync('visudo', ['--version'], { stdio: 'ignore' }).status === 0) {
    const tmp = join(f.base, 'drain-rule');
    writeFileSync(tmp, `${rule}\n`, { mode: 0o440 });
    const v = spawnSync('visudo', ['-cf', tmp], { encoding: 'utf8' });
    assert.is(v.status, 0, v.stderr + v.stdout);
  }
  for (const [user, unit] of [
    ['runner', `${SERVICE}\nDefaults setenv #`], ['runner', 'a*.service'], ['runner', 'a,b.service'], ['runner', 'a b.service'], ['runner', '-Hx.service'],
    ['runner\nDefaults setenv', SERVICE], ['run*', SERVICE], ['a,b', SERVICE], ['a b', SERVICE], ['Runner', SERVICE], [`r${'x'.repeat(32)}`, SERVICE],
  ]) {
    assert.throws(() => drainSudoersRule(user, unit), /not a (user|systemd service) name .*: no sudoers rule is made for it/, JSON.stringify([user, unit]));
  }
});

test('--json: the steps, paths and exit code', async () => {
  const f = setupFake();
  const r = await f.run(['--json']);
  assert.is(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.equal([j.runner_user, j.probe_user, j.dry_run, j.fix, j.exit_code, j.changed], ['runner', 'npu-probe', false, false, 0, 10]);
  assert.equal(j.paths.setup_file, '/etc/npu-block-gate/probe-user');
  assert.equal(j.paths.sudoers, '/etc/sudoers.d/npu-block-gate');
  assert.equal(j.paths.drain_sudoers, '/etc/sudoers.d/npu-block-gate-drain');
  assert.is(j.paths.work_dir, f.work);
  assert.ok(j.steps.every((s: { id: string; status: string; detail: string; fix: string | null }) => typeof s.id === 'string' && typeof s.detail === 'string'));
  assert.is(j.steps.find((s: { id: string }) => s.id === 'sudoers').status, 'done');
});

test('the real SetupFs never acts through a link, nor on a file whose owner changed since it looked', () => {
  const f = fakeRunner();
  const uid = process.getuid!();
  const gid = process.getgid!();
  const file = join(f.base, 'file');
  writeFileSync(file, 'x');
  chmodSync(file, 0o644);
  const link = join(f.base, 'link');
  symlinkSync(file, link);
  assert.is(realSetupFs.lstat(link)!.kind, 'link');
  assert.equal(realSetupFs.lstat(file), { uid, gid, mode: 0o644, kind: 'file' });
  assert.throws(() => realSetupFs.chmod(link, 0o666, uid));
  assert.throws(() => realSetupFs.chown(link, uid, gid, uid));
  assert.throws(() => realSetupFs.chmod(file, 0o666, uid + 1), /changed while setup ran \(its owner or type\); nothing done to it/);
  assert.is(mode(file), 0o644);
  realSetupFs.chmod(file, 0o600, uid);
  realSetupFs.chown(file, uid, gid, uid);
  assert.is(mode(file), 0o600);
});

test('--help: agent setup has its own; agent --help and the top-level help name it', async () => {
  const out = sink();
  assert.is(await main(['agent', 'setup', '--help'], out.w, sink().w), 0);
  assert.match(out.text, /^npu-block-gate agent setup: prepare this runner for uid isolation of the probe\n/);
  assert.match(out.text, /<runner> ALL=\(<probe user>\) NOPASSWD:NOSETENV: ALL/);
  assert.match(out.text, /--dry-run/);
  const a = sink();
  assert.is(await main(['agent', '--help'], a.w, sink().w), 0);
  assert.match(a.text, /npu-block-gate agent setup \[--user NAME\]/);
  const top = sink();
  assert.is(await main(['--help'], top.w, sink().w), 0);
  assert.match(top.text, /npu-block-gate agent setup\|doctor/);
});

test.run();
