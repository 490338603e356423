// chooseIsolation (src/probe/isolate.ts) and the sandbox builder (src/probe/sandbox.ts) on a fake
// host: which tools exist, which real command lines succeed, our uid, the probe user, the
// environment, the agent's setup file, and a file system described as a list of paths. Nothing is
// run: the real-machine runs are in probe-isolation.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chooseIsolation, parseSetupFile, SETUP_FILE, APPARMOR_FIX, type IsolationHost, type IsolationRequest, type WrapContext } from '../src/probe/isolate.ts';
import { runnerDirs, sandboxArgs, type SandboxSpec, type SandboxView } from '../src/probe/sandbox.ts';
import { InfraError, InputError } from '../src/errors.ts';

const BWRAP = '/usr/bin/bwrap';
const SETPRIV = '/usr/bin/setpriv';
const SUDO = '/usr/bin/sudo';
const UNSHARE = '/usr/bin/unshare';
const TRUE = '/usr/bin/true';
const ENV = '/usr/bin/env';
const KILL = '/usr/bin/kill';

/** A file system: directories (trailing /) and files, with their text. */
function view(paths: Record<string, string> = {}, links: Record<string, string> = {}): SandboxView {
  const has = (p: string) => p === '/' || Object.keys(paths).some((k) => k.replace(/\/$/, '') === p || k.startsWith(p + '/'));
  return {
    exists: (p) => has(links[p] ?? p),
    isDir: (p) => { const q = links[p] ?? p; return q === '/' || (has(q) && !(q in paths)); },
    realpath: (p) => links[p] ?? p,
    list: (d) => { const kids = new Set(Object.keys(paths).filter((k) => k.startsWith(d + '/')).map((k) => k.slice(d.length + 1).split('/')[0]).filter(Boolean)); return kids.size ? [...kids].sort() : null; },
    readText: (p) => paths[p] ?? null,
  };
}

interface FakeHost {
  tools?: string[];
  /** Which argv the host says exit 0. */
  works?: (argv: string[]) => boolean;
  uid?: number;
  env?: NodeJS.ProcessEnv;
  files?: Record<string, string>;
  fs?: SandboxView;
  procs?: () => number[];
}

const RUN = '/srv/run';
const MODEL = '/srv/tree/programming_examples/llms/m';
const BASE_FS = { [`${RUN}/`]: '', [`${MODEL}/x.py`]: '', '/home/runner/.ssh/id_ed25519': 'k', '/root/.bashrc': '', '/run/user/1001/bus': '', '/tmp/x': '' };

function host(o: FakeHost = {}): IsolationHost & { read: string[]; ran: string[][]; slept: number } {
  const paths: Record<string, string> = { bwrap: BWRAP, setpriv: SETPRIV, sudo: SUDO, unshare: UNSHARE, true: TRUE, env: ENV, kill: KILL };
  const read: string[] = [];
  const ran: string[][] = [];
  const h = {
    which: (cmd: string) => (o.tools ?? ['bwrap', 'setpriv', 'sudo', 'unshare', 'true', 'env', 'kill']).includes(cmd) ? paths[cmd] ?? `/usr/bin/${cmd}` : null,
    works: (argv: string[]) => { ran.push(argv); return (o.works ?? (() => false))(argv); },
    uid: () => o.uid ?? 1001,
    uidOf: (user: string) => (user === 'npu-probe' || user === 'other-probe' ? 998 : user === 'rooty' ? 0 : null),
    gidOf: (user: string) => (user === 'npu-probe' || user === 'other-probe' || user === 'rooty' ? 999 : null),
    env: o.env ?? { HOME: '/home/runner' },
    readFile: (p: string) => { read.push(p); return o.files?.[p] ?? null; },
    view: o.fs ?? view(BASE_FS),
    home: '/home/runner',
    self: '/usr/bin/node',
    lockFiles: () => ['/tmp/mlir-air-npu.lock'],
    processesOf: () => (o.procs ? o.procs() : []),
    sleep: () => { h.slept++; },
    read, ran, slept: 0,
  };
  return h;
}

const req = (r: Partial<IsolationRequest> = {}): IsolationRequest => ({ mode: 'auto', untrusted: true, allowUnisolated: false, ...r });
const ctx = (): WrapContext => ({ writable: [MODEL, RUN], env: { HOME: '/home/runner' }, network: false, cwd: RUN });
/** The no-op feature test: a command line ending in `-- true` (or setpriv ... -- true). */
const noop = (a: string[]) => a[a.length - 1] === TRUE;
const bwrapRuns = (o: { userns?: boolean; root?: boolean; disable?: boolean } = {}) => (a: string[]) =>
  noop(a) && a.includes(BWRAP) && (o.userns === undefined || a.includes('--unshare-user') === o.userns) && (o.disable !== false || !a.includes('--disable-userns'));
const setupFile = (user: string) => ({ [SETUP_FILE]: `# Written by \`npu-block-gate agent setup\`: the user the probe (a pull request's model code) runs as.\n${user}\n` });
const after = (argv: string[], marker: string) => argv.slice(argv.indexOf(marker) + 1);

test('as root with a probe user: bubblewrap first, then setpriv drops to the probe user with no capability left', () => {
  const h = host({ uid: 0, env: { NPU_BLOCK_GATE_PROBE_USER: 'npu-probe', HOME: '/root' }, works: bwrapRuns({ userns: false }) });
  const iso = chooseIsolation(req(), h, ctx());
  assert.is(iso.mode, 'uid');
  assert.match(iso.detail, /^uid npu-probe \(setpriv\) in bubblewrap: /);
  assert.is(iso.degraded, null);
  assert.is(iso.pidNamespace, true);
  assert.is(iso.sweep, null);
  const argv = iso.wrap(['python3', 'probe.py'], ctx());
  assert.is(argv[0], BWRAP);
  // Root needs no user namespace for the sandbox; the capabilities go with setpriv inside it.
  assert.not.ok(argv.includes('--unshare-user'));
  const inner = argv.slice(argv.indexOf(SETPRIV));
  assert.equal(inner, [SETPRIV, '--reuid', '998', '--regid', '999', '--init-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--', 'python3', 'probe.py']);
  // The feature test was this very command line, on a no-op.
  assert.ok(h.ran.some((a) => JSON.stringify(a) === JSON.stringify(iso.wrap([TRUE], ctx()))), 'the real call was tested');
});

test('the probe user comes from the request, else $NPU_BLOCK_GATE_PROBE_USER, else the setup file agent setup wrote', () => {
  const nested = (a: string[]) => a[0] === SUDO && noop(a);
  const files = setupFile('other-probe');
  let h = host({ works: nested, files });
  let iso = chooseIsolation(req(), h, ctx());
  assert.match(iso.detail, /^uid other-probe \(sudo -n\) \+ bubblewrap/);
  assert.equal(h.read, [SETUP_FILE]);
  h = host({ works: nested, files, env: { NPU_BLOCK_GATE_PROBE_USER: 'npu-probe' } });
  assert.match(chooseIsolation(req(), h, ctx()).detail, /^uid npu-probe /);
  assert.equal(h.read, []);
  h = host({ works: nested, files, env: { NPU_BLOCK_GATE_PROBE_USER: 'npu-probe' } });
  assert.throws(() => chooseIsolation(req({ user: 'req-user' }), h, ctx()), /uid req-user: no such user/);
  h = host({ works: nested, files, env: { NPU_BLOCK_GATE_PROBE_USER: '' } });
  assert.match(chooseIsolation(req(), h, ctx()).detail, /^uid other-probe /);
  // A file that names no valid user is bad input; a probe user with uid 0 isolates nothing.
  assert.throws(() => chooseIsolation(req(), host({ works: nested, files: { [SETUP_FILE]: 'Not A User\n' } })), (e: unknown) => e instanceof InputError && /probe user "Not A User" is not a user name/.test((e as Error).message));
  assert.throws(() => chooseIsolation(req({ user: 'rooty' }), host({ works: nested })), (e: unknown) => e instanceof InputError && /has uid 0/.test((e as Error).message));
});

test('parseSetupFile: the first line that is neither blank nor a comment', () => {
  assert.is(parseSetupFile(null), null);
  assert.is(parseSetupFile(''), null);
  assert.is(parseSetupFile('# only a comment\n\n'), null);
  assert.is(parseSetupFile('# c\n\n  npu-probe  \nsecond\n'), 'npu-probe');
  assert.is(parseSetupFile('npu-probe\r\n'), 'npu-probe');
});

test('a non-root runner: sudo (no SETENV: the allow-listed environment through env -i), and the probe user starts the sandbox in a user namespace', () => {
  const prefix = [SUDO, '-n', '-u', 'npu-probe', '--'];
  const starts = (a: string[]) => prefix.every((x, i) => a[i] === x);
  const h = host({ files: setupFile('npu-probe'), works: (a) => starts(a) && noop(a) });
  const iso = chooseIsolation(req(), h, ctx());
  assert.match(iso.detail, /^uid npu-probe \(sudo -n\) \+ bubblewrap: user\+pid\+mount/);
  const argv = iso.wrap(['python3', 'probe.py'], { ...ctx(), probeEnv: { PATH: '/opt/xrt/bin', LD_LIBRARY_PATH: '/opt/xrt/lib' } });
  assert.equal(argv.slice(0, 10), [...prefix, ENV, '-i', 'PATH=/opt/xrt/bin', 'LD_LIBRARY_PATH=/opt/xrt/lib', BWRAP]);
  for (const f of ['--unshare-user', '--unshare-pid', '--unshare-net', '--disable-userns']) assert.ok(argv.includes(f), f);
  assert.equal(argv.slice(argv.indexOf('--cap-drop'), argv.indexOf('--cap-drop') + 2), ['--cap-drop', 'ALL']);
  assert.not.ok(argv.includes('--uid'), 'the probe user keeps its own uid inside');
  assert.equal(argv.slice(-3), ['--', 'python3', 'probe.py']);
});

test('the probe user cannot start the sandbox (AppArmor): an untrusted event is refused in one line naming the fix; a trusted one runs degraded, warned, swept by uid', () => {
  const prefix = [SUDO, '-n', '-u', 'npu-probe', '--'];
  const sudoOnly = (a: string[]) => prefix.every((x, i) => a[i] === x) && a[5] === TRUE;
  assert.throws(() => chooseIsolation(req(), host({ files: setupFile('npu-probe'), works: sudoOnly }), ctx()), (e: unknown) => {
    const m = (e as Error).message;
    return e instanceof InfraError && !m.includes('\n') && /^refusing to run an untrusted event's model code: the probe user runs without its sandbox/.test(m) && m.includes('kernel.apparmor_restrict_unprivileged_userns=0') && m.includes('AppArmor profile for /usr/bin/bwrap');
  });
  assert.ok(APPARMOR_FIX.includes('userns'));
  let alive = [4242, 4343];
  let killed = 0;
  const h = host({ files: setupFile('npu-probe'), works: (a) => { if (a.includes(KILL)) { killed++; alive = []; return true; } return sudoOnly(a); }, procs: () => alive });
  const iso = chooseIsolation(req({ untrusted: false }), h, ctx());
  assert.is(iso.mode, 'uid');
  assert.match(iso.detail, /^uid npu-probe \(sudo -n\), without its sandbox: the probe user cannot start bubblewrap/);
  assert.match(iso.degraded ?? '', /AppArmor/);
  assert.is(iso.pidNamespace, false);
  assert.equal(iso.wrap(['p'], { ...ctx(), probeEnv: { PATH: '/usr/bin' } }), [...prefix, ENV, '-i', 'PATH=/usr/bin', 'p']);
  // The sweep ends every process of the probe user, as that user (kill -9 -1).
  iso.sweep!();
  assert.is(killed, 1);
  assert.ok(h.ran.some((a) => JSON.stringify(a) === JSON.stringify([...prefix, KILL, '-9', '--', '-1'])));
  // One that cannot be ended is an error, never a silent run beside it.
  const stuck = host({ files: setupFile('npu-probe'), works: (a) => a.includes(KILL) || sudoOnly(a), procs: () => [77] });
  assert.throws(() => chooseIsolation(req({ untrusted: false }), stuck, ctx()).sweep!(), /processes of the probe user npu-probe \(uid 998\) cannot be ended \(pids 77\)/);
  // The admin's unsafe opt-in runs it, marked.
  assert.match(chooseIsolation(req({ allowUnisolated: true }), host({ files: setupFile('npu-probe'), works: sudoOnly }), ctx()).detail, /UNSAFE: allow-unisolated$/);
});

test('auto: a probe user without its sandbox gives way to the namespace sandbox when the runner can start it', () => {
  const prefix = [SUDO, '-n', '-u', 'npu-probe', '--'];
  const h = host({ files: setupFile('npu-probe'), works: (a) => (a[0] === SUDO ? a[5] === TRUE : a[0] === BWRAP && noop(a)) });
  assert.is(chooseIsolation(req(), h, ctx()).mode, 'namespace');
  // Asked for uid: uid, degraded (trusted), never silently another mode.
  assert.is(chooseIsolation(req({ mode: 'uid', untrusted: false }), h, ctx()).degraded !== null, true);
  assert.ok(prefix.length);
});

test('as root with no probe user: the probe\'s host uid is nobody (65534), never root: bubblewrap without a user namespace, then setpriv with no capability and no group', () => {
  const h = host({ uid: 0, env: { HOME: '/root' }, works: bwrapRuns({ userns: false }) });
  const iso = chooseIsolation(req(), h, ctx());
  assert.is(iso.mode, 'namespace');
  assert.match(iso.detail, /uid 65534 \(nobody\) inside and outside/);
  assert.equal(iso.probeOwner, { uid: 65534, gid: 65534, user: 'nobody' });
  const argv = iso.wrap(['p'], ctx());
  // No user namespace: one would map the sandbox's uid onto root's outside it.
  assert.not.ok(argv.includes('--unshare-user'));
  const drop = after(argv, '--');
  assert.is(drop[0], SETPRIV);
  const opt = (name: string) => drop[drop.indexOf(name) + 1];
  assert.is(opt('--reuid'), '65534');
  assert.is(opt('--regid'), '65534');
  for (const f of ['--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs']) assert.ok(drop.includes(f), f);
  assert.is(drop[drop.length - 1], 'p');
  // Root-only credentials are hidden too.
  const rootFs = host({ uid: 0, env: { HOME: '/root' }, works: bwrapRuns({ userns: false }), fs: view({ ...BASE_FS, '/etc/shadow': 'x', '/etc/ssh/ssh_host_ed25519_key': 'k' }) });
  const a2 = chooseIsolation(req(), rootFs, ctx()).wrap(['p'], ctx());
  assert.ok(a2.join(' ').includes('--ro-bind /dev/null /etc/shadow'));
  assert.ok(a2.join(' ').includes('--tmpfs /etc/ssh'));
  // A user namespace alone is never used as root (the old mapping), and without setpriv an untrusted run is refused with the fix.
  assert.throws(() => chooseIsolation(req(), host({ uid: 0, works: bwrapRuns({ userns: true }) }), ctx()), /refusing to run an untrusted event's model code/);
  assert.throws(() => chooseIsolation(req(), host({ uid: 0, tools: ['bwrap', 'unshare', 'true', 'env', 'kill'], works: bwrapRuns({ userns: false }) }), ctx()), /setpriv \(util-linux\) is missing: as root the sandbox must drop to uid 65534/);
});

test('as root with no probe user, a tree nobody may read: an untrusted run is refused with the fix; a trusted one runs as root\'s uid in a user namespace, said so', () => {
  const withTree = (): WrapContext => ({ ...ctx(), readable: ['/srv/tree'] });
  // bubblewrap and setpriv work; the read check of the tree, run as nobody inside the sandbox, fails.
  const works = (a: string[]) => bwrapRuns({ userns: a.includes('--unshare-user') })(a);
  assert.throws(() => chooseIsolation(req(), host({ uid: 0, works }), withTree()), /uid 65534 \(nobody\) cannot read \/srv\/tree: make it readable by others \(chmod -R o\+rX\), or set up a probe user/);
  const iso = chooseIsolation(req({ untrusted: false }), host({ uid: 0, works }), withTree());
  assert.is(iso.mode, 'namespace');
  assert.match(iso.detail, /uid 65534 inside but root's outside \(trusted run; uid 65534 \(nobody\) cannot read \/srv\/tree/);
  assert.ok(iso.wrap(['p'], withTree()).includes('--unshare-user'));
  // Readable: nobody outside as well.
  const ok = chooseIsolation(req(), host({ uid: 0, works: (a) => (a.includes('/bin/sh') ? !a.includes('--unshare-user') : works(a)) }), withTree());
  assert.equal(ok.probeOwner, { uid: 65534, gid: 65534, user: 'nobody' });
});

test('as root, several dirs the probe reads and one nobody may not (an installation under a 0700 dir): the refusal names that one only', () => {
  const withDirs = (): WrapContext => ({ ...ctx(), readable: ['/srv/tree', '/opt/npu-block-gate'] });
  // The sandbox starts; as nobody, /srv/tree reads and /opt/npu-block-gate does not.
  const works = (a: string[]) => a[0] === BWRAP && !a.includes('--unshare-user') && (noop(a) || (a.includes('/bin/sh') && !a.includes('/opt/npu-block-gate')));
  assert.throws(() => chooseIsolation(req(), host({ uid: 0, works }), withDirs()), /uid 65534 \(nobody\) cannot read \/opt\/npu-block-gate: make it readable by others/);
  // Both unreadable: both named.
  const neither = (a: string[]) => a[0] === BWRAP && !a.includes('--unshare-user') && noop(a);
  assert.throws(() => chooseIsolation(req(), host({ uid: 0, works: neither }), withDirs()), /cannot read \/srv\/tree and \/opt\/npu-block-gate: make them readable/);
});

test('issue 30: as root, the read check of the tree is the feature test: one bubblewrap start when it passes; a no-op only tells a failing sandbox from an unreadable tree', () => {
  const withTree = (): WrapContext => ({ ...ctx(), readable: ['/srv/tree'] });
  const bwrapStarts = (h: { ran: string[][] }) => h.ran.filter((a) => a[0] === BWRAP).length;
  const readable = (a: string[]) => a[0] === BWRAP && !a.includes('--unshare-user') && (noop(a) || a.includes('/bin/sh'));
  const h = host({ uid: 0, works: readable });
  const ok = chooseIsolation(req(), h, withTree());
  assert.equal(ok.probeOwner, { uid: 65534, gid: 65534, user: 'nobody' });
  assert.is(bwrapStarts(h), 1, `bubblewrap started ${bwrapStarts(h)} times: ${JSON.stringify(h.ran)}`);
  assert.ok(h.ran[0].includes('/srv/tree') && h.ran[0].includes('/bin/sh'), 'the one start checked the tree as nobody');
  // The tree unreadable: the no-op runs too, and the run is refused as before (never taken as readable).
  const u = host({ uid: 0, works: (a) => readable(a) && !a.includes('/bin/sh') });
  assert.throws(() => chooseIsolation(req(), u, withTree()), /uid 65534 \(nobody\) cannot read \/srv\/tree/);
  assert.ok(u.ran.some(noop), 'the no-op told a working sandbox from an unreadable tree');
  // bubblewrap not starting at all: named as before.
  assert.throws(() => chooseIsolation(req(), host({ uid: 0, works: () => false }), withTree()), /refusing to run an untrusted event's model code/);
});

test('a non-root runner without a probe user: the sandbox in a user namespace; an old bubblewrap without --disable-userns still serves', () => {
  let iso = chooseIsolation(req(), host({ works: bwrapRuns({ userns: true }) }), ctx());
  assert.is(iso.mode, 'namespace');
  let argv = iso.wrap(['p'], ctx());
  assert.ok(argv.includes('--unshare-user') && argv.includes('--disable-userns'));
  assert.not.ok(argv.includes('--uid'));
  iso = chooseIsolation(req(), host({ works: bwrapRuns({ userns: true, disable: false }) }), ctx());
  argv = iso.wrap(['p'], ctx());
  assert.ok(argv.includes('--unshare-user'));
  assert.not.ok(argv.includes('--disable-userns'));
  // A setuid bubblewrap where user namespaces are off: still a sandbox for an unprivileged runner.
  iso = chooseIsolation(req(), host({ works: bwrapRuns({ userns: false }) }), ctx());
  assert.match(iso.detail, /^bubblewrap: pid\+mount/);
});

test('no isolation at all: none (in a PID namespace where unshare can make one) for a trusted run; refused for an untrusted one unless allowUnisolated', () => {
  const nothing = host({ tools: ['true', 'unshare'], works: (a) => a[0] === UNSHARE });
  const trusted = chooseIsolation(req({ untrusted: false }), nothing, ctx());
  assert.is(trusted.mode, 'none');
  assert.is(trusted.pidNamespace, true);
  assert.match(trusted.detail, /^none \(bubblewrap: not installed \(apt install bubblewrap\); in a PID namespace\)$/);
  assert.equal(trusted.unavailable, ['bubblewrap: not installed (apt install bubblewrap)']);
  assert.equal(trusted.wrap(['p'], ctx()), [UNSHARE, '--map-current-user', '--pid', '--fork', '--kill-child', '--mount-proc', '--', 'p']);
  // As root, no user namespace is needed for it.
  assert.equal(chooseIsolation(req({ untrusted: false }), host({ uid: 0, tools: ['true', 'unshare'], works: (a) => a[0] === UNSHARE }), ctx()).wrap(['p'], ctx()), [UNSHARE, '--pid', '--fork', '--kill-child', '--mount-proc', '--', 'p']);
  const bare = chooseIsolation(req({ untrusted: false }), host({ tools: [] }), ctx());
  assert.is(bare.pidNamespace, false);
  assert.equal(bare.wrap(['p'], ctx()), ['p']);
  assert.match(bare.detail, /no PID namespace/);
  assert.throws(() => chooseIsolation(req(), nothing, ctx()), (e: unknown) => e instanceof InfraError && /^refusing to run an untrusted event's model code without isolation \(bubblewrap: not installed/.test((e as Error).message));
  assert.throws(() => chooseIsolation(req(), host({ files: setupFile('nobody-here') }), ctx()), /uid nobody-here: no such user/);
  const unsafe = chooseIsolation(req({ allowUnisolated: true }), nothing, ctx());
  assert.match(unsafe.detail, /; UNSAFE: allow-unisolated$/);
  assert.is(chooseIsolation(req({ mode: 'none', untrusted: false }), host({ works: () => true }), ctx()).mode, 'none');
  assert.throws(() => chooseIsolation(req({ mode: 'none' }), host({ works: () => true }), ctx()), /refusing/);
  assert.throws(() => chooseIsolation(req({ mode: 'uid' }), host({ works: () => true }), ctx()), /isolation uid is not available here: uid: no probe user configured/);
});

// ---- the sandbox builder -------------------------------------------------------------------------

const spec = (o: Partial<SandboxSpec> = {}): SandboxSpec => ({
  bwrap: BWRAP, userns: { uid: null, gid: null, disableNested: true }, capDrop: true, writable: [MODEL, RUN], readable: ['/srv/tree'],
  lockFiles: ['/tmp/mlir-air-npu.lock'], env: { HOME: '/home/runner' }, home: '/home/runner', self: '/usr/bin/node', root: false, network: false, cwd: RUN, ...o,
});
/** The options in order as pairs, e.g. ['--tmpfs /home', '--bind /srv/run /srv/run']. */
function ops(args: string[]): string[] {
  const out: string[] = [];
  const arity: Record<string, number> = { '--tmpfs': 1, '--dev': 1, '--proc': 1, '--chdir': 1, '--uid': 1, '--gid': 1, '--cap-drop': 1, '--perms': 1, '--dir': 1, '--ro-bind': 2, '--bind': 2, '--dev-bind': 2 };
  for (let i = 1; i < args.length && args[i] !== '--'; i++) {
    const n = arity[args[i]] ?? 0;
    out.push([args[i], ...args.slice(i + 1, i + 1 + n)].join(' '));
    i += n;
  }
  return out;
}

test('sandbox: private /dev with only the NPU nodes, private /dev/shm, /proc and /tmp; homes, /run and the HF home hidden, the hub cache given back read-only without its token', () => {
  const fs = view({
    ...BASE_FS, '/dev/accel/accel0': '', '/dev/accel/accel1': '',
    '/home/runner/.cache/huggingface/token': 'hf_x', '/home/runner/.cache/huggingface/hub/models--x/a': '',
    '/var/run/': '', '/srv/hf/token': 'hf_y', '/srv/hf/hub/models--y/b': '', '/etc/hf-token': 'hf_z',
  }, { '/var/run': '/run' });
  let o = ops(sandboxArgs(spec(), fs).args);
  for (const want of ['--dev /dev', '--tmpfs /dev/shm', '--dev-bind /dev/accel/accel0 /dev/accel/accel0', '--dev-bind /dev/accel/accel1 /dev/accel/accel1', '--proc /proc', '--tmpfs /tmp',
    '--tmpfs /home', '--tmpfs /root', '--tmpfs /run', '--ro-bind /home/runner/.cache/huggingface/hub /home/runner/.cache/huggingface/hub', '--unshare-net', '--cap-drop ALL']) {
    assert.ok(o.includes(want), `${want} in ${o.join(' | ')}`);
  }
  assert.not.ok(o.includes('--dev-bind /dev /dev'), 'never the host /dev');
  assert.not.ok(o.some((x) => x.includes('/var/run')), '/var/run is a link to /run');
  // The hub comes back after the homes are hidden; the token next to it does not.
  assert.ok(o.indexOf('--tmpfs /home') < o.findIndex((x) => x.startsWith('--ro-bind /home/runner/.cache/huggingface/hub')));
  assert.not.ok(o.some((x) => x.includes('token')));
  // An HF home outside the homes: hidden, its hub given back; HF_TOKEN_PATH masked.
  o = ops(sandboxArgs(spec({ env: { HOME: '/home/runner', HF_HOME: '/srv/hf', HF_TOKEN_PATH: '/etc/hf-token' } }), fs).args);
  assert.ok(o.includes('--tmpfs /srv/hf'));
  assert.ok(o.includes('--ro-bind /srv/hf/hub /srv/hf/hub'));
  assert.ok(o.includes('--ro-bind /dev/null /etc/hf-token'));
  // The dirs the probe uses come back after everything hidden: read-only first, then writable.
  const ro = o.indexOf('--ro-bind /srv/tree /srv/tree');
  assert.ok(ro > o.indexOf('--tmpfs /srv/hf'));
  assert.ok(o.indexOf(`--bind ${MODEL} ${MODEL}`) > ro);
  assert.ok(o.includes(`--bind ${RUN} ${RUN}`));
  assert.ok(o.includes('--bind /tmp/mlir-air-npu.lock /tmp/mlir-air-npu.lock'));
  assert.is(o[o.length - 1], `--chdir ${RUN}`);
  // HF --online: the network stays, and systemd-resolved's stub under /run is given back.
  const net = view({ ...BASE_FS, '/run/systemd/resolve/stub-resolv.conf': 'nameserver 127.0.0.53' }, { '/etc/resolv.conf': '/run/systemd/resolve/stub-resolv.conf' });
  o = ops(sandboxArgs(spec({ network: true }), net).args);
  assert.not.ok(o.includes('--unshare-net'));
  assert.ok(o.includes('--ro-bind /run/systemd/resolve/stub-resolv.conf /run/systemd/resolve/stub-resolv.conf'));
});

test('sandbox: the runner root is found from the environment wherever it is (a custom work folder), with its work folder, tool cache and file-command dirs', () => {
  const fs = view({
    '/opt/ci/agent-7/.runner': '{}', '/opt/ci/agent-7/.credentials': '{}', '/opt/ci/agent-7/.credentials_rsaparams': '{}', '/opt/ci/agent-7/_diag/x.log': '',
    '/data/w/_temp/_runner_file_commands/set_output_1': '', '/data/w/repo/repo/.git/config': '[http]\n\textraheader = AUTHORIZATION: basic x\n', '/data/w/repo/repo/programming_examples/llms/m/a.py': '',
    '/opt/hostedtoolcache/Python/3.12/x64/bin/python3': '', [`${RUN}/`]: '',
  });
  // The work folder is not under the runner root, and not named _work: only the node the runner ships
  // (externals/node20) leads to its root.
  const env = {
    HOME: '/home/runner', RUNNER_TEMP: '/data/w/_temp', RUNNER_WORKSPACE: '/data/w/repo', GITHUB_WORKSPACE: '/data/w/repo/repo',
    RUNNER_TOOL_CACHE: '/opt/hostedtoolcache', GITHUB_OUTPUT: '/data/w/_temp/_runner_file_commands/set_output_1',
  };
  const dirs = runnerDirs(env, '/opt/ci/agent-7/externals/node20/bin/node', fs);
  for (const d of ['/opt/ci/agent-7', '/data/w', '/data/w/_temp', '/opt/hostedtoolcache', '/data/w/_temp/_runner_file_commands']) assert.ok(dirs.includes(d), `${d} in ${dirs}`);
  const o = ops(sandboxArgs(spec({ env, self: '/opt/ci/agent-7/externals/node20/bin/node', writable: ['/data/w/repo/repo/programming_examples/llms/m', RUN], readable: ['/data/w/repo/repo'] }), fs).args);
  assert.ok(o.includes('--tmpfs /opt/ci/agent-7'));
  assert.ok(o.includes('--tmpfs /data/w'));
  assert.ok(o.includes('--tmpfs /opt/hostedtoolcache'));
  // The checkout comes back read-only, its model dir writable, its .git hidden again.
  assert.ok(o.indexOf('--ro-bind /data/w/repo/repo /data/w/repo/repo') > o.indexOf('--tmpfs /data/w'));
  assert.ok(o.includes('--bind /data/w/repo/repo/programming_examples/llms/m /data/w/repo/repo/programming_examples/llms/m'));
  assert.ok(o.indexOf('--tmpfs /data/w/repo/repo/.git') > o.indexOf('--ro-bind /data/w/repo/repo /data/w/repo/repo'));
  // The runner root found from the tool cache too (no node path at all).
  const fs2 = view({ '/srv/r/.runner': '{}', '/srv/r/_tool/x': '' });
  assert.ok(runnerDirs({ RUNNER_TOOL_CACHE: '/srv/r/_tool' }, null, fs2).includes('/srv/r'));
});

test('sandbox: a worktree or submodule checkout: the .git file masked, its git dir and common dir (where config lives) hidden', () => {
  const fs = view({
    '/w/wt/.git': 'gitdir: /w/main/.git/worktrees/wt\n', '/w/wt/programming_examples/llms/m/a.py': '',
    '/w/main/.git/config': '[http]\n\textraheader = x\n', '/w/main/.git/worktrees/wt/commondir': '../..\n', [`${RUN}/`]: '',
  });
  const o = ops(sandboxArgs(spec({ writable: ['/w/wt/programming_examples/llms/m', RUN], readable: ['/w/wt'] }), fs).args);
  assert.ok(o.includes('--ro-bind /dev/null /w/wt/.git'));
  assert.ok(o.includes('--tmpfs /w/main/.git/worktrees/wt'));
  assert.ok(o.includes('--tmpfs /w/main/.git'));
});

test('sandbox: a bound dir that holds something hidden hides it again (an HF home inside the tree), and what lies below comes back', () => {
  const fs = view({ '/srv/tree/hf/token': 't', '/srv/tree/hf/hub/m': '', [`${MODEL}/a.py`]: '', [`${RUN}/`]: '' });
  const o = ops(sandboxArgs(spec({ env: { HOME: '/home/runner', HF_HOME: '/srv/tree/hf' } }), fs).args);
  const again = o.lastIndexOf('--tmpfs /srv/tree/hf');
  assert.ok(again > o.indexOf('--ro-bind /srv/tree /srv/tree'));
  assert.ok(o.lastIndexOf('--ro-bind /srv/tree/hf/hub /srv/tree/hf/hub') > again);
});

test('the uid switch as root: setpriv with the probe user\'s ids, after a feature test of the same line', () => {
  const h = host({ uid: 0, env: { HOME: '/root' }, files: setupFile('npu-probe'), works: (a) => a[0] === UNSHARE || (a[0] === SETPRIV && noop(a)) , tools: ['setpriv', 'unshare', 'true', 'kill'] });
  const iso = chooseIsolation(req({ untrusted: false }), h, ctx());
  // No bubblewrap: degraded, but as root a PID namespace (with a private /proc) still holds the tree.
  assert.is(iso.mode, 'uid');
  assert.is(iso.pidNamespace, true);
  assert.match(iso.degraded ?? '', /bubblewrap is not installed/);
  const argv = iso.wrap(['p'], ctx());
  assert.equal(after(argv, '--mount-proc').slice(0, 3), ['--', SETPRIV, '--reuid']);
  assert.throws(() => chooseIsolation(req(), h, ctx()), /refusing to run an untrusted event's model code: the probe user runs without its sandbox \(bubblewrap is not installed/);
});

test.run();
