// A pull request's model code, run by the probe, against the runner (issues 8 and 15). The hostile
// fake tree (test/python/fakes/fake_tree.py) reads every /proc/*/environ it can, the checkout's
// .git/config, the runner's own files (found under a custom work folder), the runner user's home
// (ssh key, git and gh credentials, docker config, the HF token), connects to a socket under /run,
// writes /dev/shm, the caches, the runner's temp dir and the home; tries umount, a read-write
// remount and /proc/1/environ; and leaves a double-forked daemon behind. The Action-like parent
// holds tokens and the credential names real runners carry.
//
// In every isolation mode this machine can run, as root and as a second uid that plays a runner
// service user: nothing leaks, nothing outside the run dir and the model dir changes, no process of
// the PR survives the job. Unisolated (the admin's explicit, unsafe opt-in) shows the attack is
// real. And a trusted run after a hostile one gives the clean runner's verdict and numbers, in uid
// mode with and without the probe user's sandbox (bubblewrap refused, as AppArmor does on Ubuntu 24.04).
import { test, type Missing } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:net';
import { chmodSync, chownSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync, spawn } from 'node:child_process';
import { REPO } from './helpers/airmini.ts';
import { missingBwrap } from './helpers/bwrap.ts';
import { findNumpyPython } from './helpers/python.ts';
import { cannotMakeUsers, chownTree, ensureGroup, ensureUser, removeTestUsers, shareTree, sharedPython, sudoersRule, type TestUser } from './helpers/users.ts';
import { chooseIsolation, lockFiles, realHost, SANDBOX_UID, type IsolationHost } from '../src/probe/isolate.ts';
import { runProbe, ProbeInterrupted } from '../src/probe/run.ts';

const rootPython = spawnSync(findNumpyPython()!, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim();
const CANARY = `canary-${process.pid}-${Date.now()}`;
const ROOT = realHost.uid() === 0;
/** Credentials as real runners carry them, under names no deny-list foresees (issue 15). */
const SECRETS = Object.fromEntries(['GH_PAT', 'OPENAI_KEY', 'DOCKERHUB_PASS', 'REGISTRY_PWD', 'DATABASE_URL', 'SLACK_WEBHOOK_URL', 'SSH_KEY', 'GPG_PASSPHRASE',
  'ARTIFACTORY_CREDS', 'KUBECONFIG', 'VAULT_ADDR', 'INPUT_GITHUB-TOKEN', 'ACTIONS_RUNTIME_TOKEN', 'ACTIONS_ID_TOKEN_REQUEST_TOKEN', 'GITHUB_TOKEN', 'DEPLOY_SECRET'].map((k) => [k, `${CANARY}-${k}`]));

const cleanups: (() => void)[] = [];
test.after(() => {
  for (const c of cleanups.splice(0).reverse()) try { c(); } catch { /* best effort */ }
  removeTestUsers();
});

// Users: a probe user, and a runner service user that is not root, sharing a group as agent setup does,
// made in a private copy of /etc (as root, cannotMakeUsers() re-runs this file in one).
const noUsers = cannotMakeUsers();
const GROUP = `nbgg${process.pid}`;
let gid = -1;
let probeUser: TestUser | null = null;
let runnerUser: TestUser | null = null;
if (!noUsers) {
  gid = ensureGroup(GROUP);
  probeUser = ensureUser(`nbgp${process.pid}`, [GROUP]);
  runnerUser = ensureUser(`nbgr${process.pid}`, [GROUP]);
}
/** A Python with numpy a second uid can run (root's pyenv lives in /root, which is 0700). */
const sharedPy = runnerUser ? sharedPython(runnerUser.uid, gid, [findNumpyPython()!, '/usr/bin/python3']) : null;
const NO_SHARED_PY = 'no Python with numpy that a second uid can run: set NPU_BLOCK_GATE_SHARED_PYTHON (e.g. a venv of /usr/bin/python3 with numpy outside /root)';

function fakeTree(root: string): string {
  const r = spawnSync(rootPython, ['-c', `import sys; sys.path.insert(0, ${JSON.stringify(REPO)}); from test.python.fakes import fake_tree; print(fake_tree.build(${JSON.stringify(root)}))`], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  return r.stdout.trim();
}

interface Workspace {
  base: string; agent: string; work: string; ws: string; temp: string; model: string; cache: string; run: string; home: string;
  /** A world-writable dir outside /tmp and the homes: only the sandbox's read-only root keeps it unchanged. */
  outside: string;
  sock: string; server: Server; connections: number; secrets: string[]; hub: string;
}

/**
 * A runner as it is laid out with a custom work folder (issue 15: not <root>/_work): the runner root
 * holds .runner, .credentials, .credentials_rsaparams and _diag/; the work folder holds the checkout
 * (with a token in .git/config) and _temp; the runner user's home (outside /tmp) holds the
 * credentials a developer box has; a socket listens under /run.
 */
function workspace(owner: TestUser | null = null): Workspace {
  const base = mkdtempSync(join(tmpdir(), 'nbg-runner-'));
  cleanups.push(() => rmSync(base, { recursive: true, force: true }));
  if (gid >= 0) chownSync(base, 0, gid);
  chmodSync(base, 0o2775); // agent setup's shared group, inherited by everything made below
  const agent = join(base, 'agent');
  const work = join(agent, 'wf');
  const ws = join(work, 'repo/repo');
  const temp = join(work, '_temp');
  mkdirSync(join(ws, '.git'), { recursive: true });
  mkdirSync(join(temp, '_runner_file_commands'), { recursive: true });
  mkdirSync(join(agent, '_diag'), { recursive: true });
  writeFileSync(join(ws, '.git/config'), `[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic ${CANARY}-checkout\n`);
  writeFileSync(join(agent, '.credentials'), `{"token": "${CANARY}-runner"}`);
  writeFileSync(join(agent, '.credentials_rsaparams'), `{"d": "${CANARY}-rsa"}`);
  writeFileSync(join(agent, '.runner'), `{"agentName": "${CANARY}-agent"}`);
  writeFileSync(join(agent, '_diag/Runner_1.log'), `${CANARY}-diag\n`);
  writeFileSync(join(temp, '_runner_file_commands/set_output_1'), '');
  const model = fakeTree(ws);
  const cache = join(base, 'cache');
  mkdirSync(cache);
  const run = join(temp, 'npu-block-gate/run');
  mkdirSync(run, { recursive: true });
  const home = mkdtempSync('/var/tmp/nbg-home-');
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  const files: Record<string, string> = {
    '.ssh/id_ed25519': 'ssh', '.git-credentials': 'git', '.config/gh/hosts.yml': 'gh', '.docker/config.json': 'docker', '.cache/huggingface/token': 'hf',
  };
  for (const [rel, tag] of Object.entries(files)) {
    mkdirSync(join(home, rel, '..'), { recursive: true });
    writeFileSync(join(home, rel), `${CANARY}-${tag}\n`, { mode: 0o600 });
  }
  const outside = mkdtempSync('/var/tmp/nbg-outside-');
  cleanups.push(() => rmSync(outside, { recursive: true, force: true }));
  chmodSync(outside, 0o777);
  const hub = join(home, '.cache/huggingface/hub/models--acme--m/refs/main');
  mkdirSync(join(hub, '..'), { recursive: true });
  writeFileSync(hub, 'ok-hub\n');
  // A session socket (as /run/user/<uid>/bus would be), open to everyone so only the sandbox keeps it away.
  const sockDir = mkdtempSync('/run/nbg-sock-');
  cleanups.push(() => rmSync(sockDir, { recursive: true, force: true }));
  chmodSync(sockDir, 0o755);
  const sock = join(sockDir, 's.sock');
  const w = { base, agent, work, ws, temp, model, cache, run, home, outside, sock, server: null as unknown as Server, connections: 0, hub,
    secrets: [...Object.keys(files).map((f) => join(home, f)), join(agent, '.credentials'), join(agent, '.credentials_rsaparams'), join(agent, '.runner'), join(agent, '_diag'), join(ws, '.git/config'), temp] };
  w.server = createServer((c) => { w.connections++; c.destroy(); }).listen(sock, () => chmodSync(sock, 0o777));
  cleanups.push(() => w.server.close());
  if (owner) {
    chownTree(base, owner.uid, gid >= 0 ? gid : owner.gid);
    chownTree(home, owner.uid, owner.gid);
  }
  shareTree(w.model);
  shareTree(run);
  return w;
}

/** Every file's content digest (and every link's target) under the given roots, minus the skipped dirs. */
function snapshot(roots: string[], skip: string[]): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (p: string) => {
    if (skip.some((s) => p === s || p.startsWith(s + '/'))) return;
    let st;
    try { st = lstatSync(p); } catch { return; }
    if (st.isSymbolicLink()) out.set(p, 'link');
    else if (st.isDirectory()) { out.set(p, `dir ${st.mode & 0o7777}`); for (const n of readdirSync(p)) walk(join(p, n)); }
    else if (st.isFile()) out.set(p, createHash('sha256').update(readFileSync(p)).digest('hex'));
    else out.set(p, 'other');
  };
  for (const r of roots) walk(r);
  return out;
}

function changed(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys].filter((k) => before.get(k) !== after.get(k));
}

/** Processes whose command line names `marker` (the hostile daemon), waited for a little while they die. */
async function survivors(marker: string): Promise<number[]> {
  const find = () => readdirSync('/proc').filter((e) => /^\d+$/.test(e)).filter((e) => {
    try { return readFileSync(`/proc/${e}/cmdline`, 'latin1').includes(marker) && !/^State:\s*Z/m.test(readFileSync(`/proc/${e}/status`, 'utf8')); } catch { return false; }
  }).map(Number);
  for (let i = 0; i < 40 && find().length; i++) await new Promise((r) => setTimeout(r, 50));
  return find();
}

let daemons = 0;
interface Hostile {
  result: { ok: boolean; mode?: string; detail?: string; error?: string; degraded?: string | null };
  loot: any;
  marker: string;
  changes: string[];
  alive: number[];
}

/** One hostile probe run the way the Action runs it, in a process of its own (as `as`, when given). */
async function hostile(w: Workspace, mode: string, o: { as?: TestUser; user?: TestUser; python?: string; stub?: string; untrusted?: boolean; read?: string[]; chmod?: string[] } = {}): Promise<Hostile> {
  const loot = join(w.model, `loot-${mode}.json`);
  const marker = `nbgdaemon-${process.pid}-${++daemons}`;
  const shm = `nbg-shm-${process.pid}-${daemons}`;
  cleanups.push(() => rmSync(join('/dev/shm', shm), { force: true }));
  const before = snapshot([w.base, w.home, w.outside], [w.model, w.run]);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH, LANG: 'C.UTF-8', HOME: w.home, ...SECRETS,
    RUNNER_TEMP: w.temp, RUNNER_WORKSPACE: join(w.work, 'repo'), GITHUB_WORKSPACE: w.ws, RUNNER_TOOL_CACHE: join(w.work, '_tool'),
    GITHUB_OUTPUT: join(w.temp, '_runner_file_commands/set_output_1'), GITHUB_STEP_SUMMARY: join(w.temp, '_runner_file_commands/step_summary_1'),
  };
  const payload = JSON.stringify({
    python: o.python ?? rootPython, mode, user: o.user?.name, runDir: w.run, writable: [w.model, w.run], readable: [w.ws], stub: o.stub, untrusted: o.untrusted,
    args: ['--model-dir', w.model, '--out', w.run, '--ref-cache', 'none', '--npu-lock', 'none', '--seq-len', '64'],
    extraEnv: {
      FAKE_HOSTILE: loot, FAKE_HOSTILE_ESCAPE: '1', FAKE_HOSTILE_SOCKET: w.sock, FAKE_HOSTILE_SHM: shm,
      FAKE_HOSTILE_READ: [...w.secrets, w.hub, ...(o.read ?? [])].join(':'),
      FAKE_HOSTILE_CHMOD: (o.chmod ?? []).join(':'),
      FAKE_HOSTILE_WRITE: [w.cache, w.temp, w.home, w.agent, w.ws, w.base, w.outside].join(':'),
      FAKE_HOSTILE_DAEMON: `${marker}=${join(w.model, 'daemon.txt')}`,
    },
  });
  const argv = [process.execPath, '--import', 'tsx', join(REPO, 'test/helpers/isolated-probe.ts'), payload];
  const cmd = o.as ? ['setpriv', '--reuid', String(o.as.uid), '--regid', String(gid), '--init-groups', '--', ...argv] : argv;
  const r = await new Promise<{ stdout: string; stderr: string }>((resolve) => {
    const c = spawn(cmd[0], cmd.slice(1), { env, cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    c.on('close', () => resolve({ stdout, stderr }));
  });
  const result = JSON.parse(r.stdout.trim().split('\n').pop() || '{}');
  const alive = await survivors(marker);
  for (const pid of alive) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  const changes = changed(before, snapshot([w.base, w.home, w.outside], [w.model, w.run]));
  let lootJson: any = null;
  try { lootJson = JSON.parse(readFileSync(loot, 'utf8')); } catch { /* the run was refused */ }
  if (result.ok === undefined) result.error = r.stderr.slice(-2000);
  return { result, loot: lootJson, marker, changes, alive };
}

const DEV_OK = new Set(['null', 'zero', 'full', 'random', 'urandom', 'tty', 'ptmx', 'pts', 'shm', 'core', 'fd', 'stdin', 'stdout', 'stderr', 'accel', 'console']);

/** What every isolated mode must hold. */
function assertHeld(h: Hostile, w: Workspace, what: string): void {
  assert.ok(h.result.ok, `${what}: ${h.result.error}`);
  const text = JSON.stringify(h.loot);
  const at = text.indexOf(CANARY);
  assert.is(at, -1, `${what}: a secret leaked: ...${text.slice(Math.max(0, at - 200), at + 60)}`);
  for (const k of Object.keys(SECRETS)) assert.not.ok(k in h.loot.env, `${what}: ${k} reached the probe's environment`);
  // The HF hub cache is still there to read (read-only), without its token.
  assert.is(h.loot.files[w.hub], 'ok-hub\n', `${what}: the HF hub cache is readable`);
  const e = h.loot.escape;
  assert.is.not(e.umount_proc, 0, `${what}: umount /proc worked`);
  assert.is.not(e.umount_tmp, 0, `${what}: umount /tmp worked`);
  assert.is.not(e.remount_rw, 0, `${what}: mount -o remount,rw / worked`);
  assert.not.ok(String(e.proc1_environ ?? '').includes('ACTIONS_'), `${what}: /proc/1 is the host's`);
  assert.match(e.status, /^CapEff:\s*0+$/m, `${what}: capabilities left`);
  assert.is.not(e.uid, 0, `${what}: root inside`);
  assert.match(String(h.loot.socket), /^refused/, `${what}: a socket under /run was reachable`);
  assert.is(w.connections, 0);
  assert.ok(h.loot.dev.every((d: string) => DEV_OK.has(d)), `${what}: /dev holds ${h.loot.dev.filter((d: string) => !DEV_OK.has(d))}`);
  assert.not.ok(existsSync(join('/dev/shm', `nbg-shm-${process.pid}-${daemons}`)), `${what}: the host's /dev/shm was written`);
  // Writes into the hidden dirs land in the sandbox's own tmpfs; the read-only root refuses the rest.
  assert.not.ok(h.loot.wrote.includes(w.outside), `${what}: wrote through the read-only root`);
  assert.equal(h.changes, [], `${what}: changed outside the run dir and the model dir`);
  assert.equal(h.alive, [], `${what}: a process of the PR survived the job`);
}

const noBwrap = missingBwrap;
const notRoot: Missing | null = ROOT ? null : { need: 'uid', why: 'the root-runner modes and a second uid need root; this process is not root' };
const noUser: Missing | null = noUsers ? { need: 'uid', why: noUsers } : null;
const noSharedPy: Missing | null = sharedPy ? null : { need: 'uid', why: NO_SHARED_PY };
const sudo = realHost.which('sudo');
const noSudo: Missing | null = sudo ? null : { need: 'sudo', why: 'sudo is not installed (apt install sudo): the non-root runner reaches the probe user through it' };
/** The first precondition that does not hold, or null. */
const first = (...ms: (Missing | null)[]): Missing | null => ms.find((m) => m !== null) ?? null;

// ---- as root ---------------------------------------------------------------------------------------

test.unless(first(notRoot, noBwrap))('root runner, namespace: the probe is nobody on the host too; no capabilities; a root-only file outside the hide list stays unreadable, the NPU lock cannot be chmod\'ed; nothing leaks, nothing changes, nothing survives', async () => {
  const w = workspace();
  // A root-only secret where no hide list looks (another runner's key, a TLS key): 0600 in a 0700 dir.
  const vault = mkdtempSync('/var/tmp/nbg-rootonly-');
  cleanups.push(() => rmSync(vault, { recursive: true, force: true }));
  chmodSync(vault, 0o700);
  writeFileSync(join(vault, 'tls.key'), `${CANARY}-rootonly\n`, { mode: 0o600 });
  const lock = lockFiles(process.env)[0];
  const lockMode = statSync(lock).mode & 0o7777;
  // The dirs the probe writes: any uid's to write (check() makes its staging dirs the probe uid's own).
  for (const d of [w.model, w.run]) spawnSync('chmod', ['-R', 'a+rwX', d]);
  const h = await hostile(w, 'namespace', { read: [vault], chmod: [lock] });
  assert.is(h.result.mode, 'namespace', h.result.error);
  assertHeld(h, w, 'namespace (root)');
  assert.is(h.loot.escape.uid, SANDBOX_UID);
  assert.not.ok(JSON.stringify(h.loot.files).includes(`${CANARY}-rootonly`), 'a root-only file was read');
  assert.match(String(h.loot.chmod[lock]), /^refused/, 'the NPU lock file was chmod\'ed');
  assert.is(statSync(lock).mode & 0o7777, lockMode);
  assert.ok(existsSync(join(w.run, 'probe.json')), 'the probe itself still ran');
});

test.unless(first(notRoot, noBwrap, noUser))('root runner, uid: the probe user inside the sandbox (setpriv after bubblewrap); PID 1 is not readable', async () => {
  const w = workspace();
  const h = await hostile(w, 'uid', { user: probeUser! });
  assert.is(h.result.mode, 'uid');
  assert.match(h.result.detail!, /\(setpriv\) in bubblewrap/);
  assertHeld(h, w, 'uid (root)');
  assert.is(h.loot.escape.uid, probeUser!.uid);
  assert.is(h.loot.escape.proc1_environ_error, 'PermissionError', '/proc/1/environ is the sandbox\'s root-owned init: unreadable');
});

test.unless(notRoot)('unisolated (allow-unisolated): the attack is real, which is why untrusted runs refuse it; still no process survives (PID namespace)', async () => {
  const w = workspace();
  const h = await hostile(w, 'none');
  assert.ok(h.result.ok, h.result.error);
  assert.match(h.result.detail!, /in a PID namespace/);
  assert.ok(Object.values(h.loot.files).some((f) => String(f).includes(`${CANARY}-ssh`)), 'the home is readable');
  assert.ok(Object.values(h.loot.files).some((f) => String(f).includes(`${CANARY}-checkout`)), '.git/config is readable');
  assert.ok(h.loot.wrote.includes(w.outside));
  // ... but no secret from the environment: the allow-list holds even here.
  for (const k of Object.keys(SECRETS)) assert.not.ok(k in h.loot.env, k);
  assert.equal(h.alive, [], 'the daemon died with the PID namespace');
  assert.throws(() => chooseIsolation({ mode: 'none', untrusted: true, allowUnisolated: false }), /refusing to run an untrusted event's model code without isolation/);
});

test.unless(first(notRoot, noUser, noSharedPy))('root runner, uid with bubblewrap refused: an untrusted event is refused; a trusted run is degraded, warned, and every process of the probe user is ended', async () => {
  const w = workspace();
  const refused = await hostile(w, 'uid', { user: probeUser!, stub: 'bwrap-refused', python: sharedPy! });
  assert.not.ok(refused.result.ok);
  assert.match(refused.result.error!, /^refusing to run an untrusted event's model code: the probe user runs without its sandbox/);
  assert.not.ok(refused.loot, 'nothing ran');
  const trusted = await hostile(w, 'uid', { user: probeUser!, stub: 'bwrap-refused', python: sharedPy!, untrusted: false });
  assert.ok(trusted.result.ok, trusted.result.error);
  assert.match(trusted.result.degraded ?? '', /without its sandbox/);
  assert.equal(trusted.alive, [], 'the daemon was ended with the probe user\'s processes');
  assert.equal(realHost.processesOf(probeUser!.uid), []);
});

// ---- a runner service user that is not root ------------------------------------------------------

test.unless(first(noUser, noSharedPy, noBwrap))('non-root runner, namespace: the same, from a second uid', async () => {
  const w = workspace(runnerUser);
  const h = await hostile(w, 'namespace', { as: runnerUser!, python: sharedPy! });
  assert.is(h.result.mode, 'namespace', h.result.error);
  assertHeld(h, w, 'namespace (non-root)');
  assert.is(h.loot.escape.uid, runnerUser!.uid);
});

test.unless(first(noUser, noSharedPy))('non-root runner, none: no process survives (a PID namespace in a user namespace)', async () => {
  const w = workspace(runnerUser);
  const h = await hostile(w, 'none', { as: runnerUser!, python: sharedPy! });
  assert.ok(h.result.ok, h.result.error);
  assert.equal(h.alive, []);
});

// The non-root runner reaches the probe user through sudo (agent setup's rule); .ci/run installs sudo.
test.unless(first(noUser, noSharedPy, noSudo))('non-root runner, uid: sudo to the probe user, who starts the sandbox', async () => {
  sudoersRule(`nbg-test-${process.pid}`, `${runnerUser!.name} ALL=(${probeUser!.name}) NOPASSWD: ALL\n`); // in the private /etc
  // The runner user's home as the runner makes it (0700): bubblewrap starts as the probe user, who
  // cannot read the HF hub cache there, so the sandbox leaves the hub out and says so.
  const w0 = workspace(runnerUser);
  const h0 = await hostile(w0, 'uid', { as: runnerUser!, user: probeUser!, python: sharedPy! });
  assert.is(h0.result.mode, 'uid', h0.result.error);
  assert.match(h0.result.detail ?? '', /the HF hub cache \S+ is not readable by nbgp/);
  assert.is(JSON.stringify(h0.loot).indexOf(CANARY), -1, 'a secret leaked');
  assert.equal(h0.alive, []);
  // A home the probe user may pass (the hub shared): the hub bound back read-only, and everything held.
  const w = workspace(runnerUser);
  chmodSync(w.home, 0o711);
  const h = await hostile(w, 'uid', { as: runnerUser!, user: probeUser!, python: sharedPy! });
  assert.is(h.result.mode, 'uid', h.result.error);
  assert.not.match(h.result.detail ?? '', /HF hub cache/);
  assertHeld(h, w, 'uid (non-root)');
});

/** check() as the CLI runs it, in a process of its own as `as` (null: this process's uid). */
async function checkAs(as: TestUser | null, plan: object, env: NodeJS.ProcessEnv): Promise<{ ok: boolean; outcome?: string; exitCode?: number; error?: string; isolation?: { mode: string } }> {
  const argv = [process.execPath, '--import', 'tsx', join(REPO, 'test/helpers/isolated-check.ts'), JSON.stringify(plan)];
  const cmd = as ? ['setpriv', '--reuid', String(as.uid), '--regid', String(gid), '--init-groups', '--', ...argv] : argv;
  const r = spawnSync(cmd[0], cmd.slice(1), { env, cwd: REPO, encoding: 'utf8', timeout: 300_000 });
  try { return JSON.parse(r.stdout.trim().split('\n').pop() || ''); } catch { return { ok: false, error: `${r.stdout}\n${r.stderr}`.slice(-2000) }; }
}

/** The checkout as a real repository of the runner's (actions/checkout's), every file committed. */
function gitCheckout(w: Workspace, as: TestUser | null): void {
  rmSync(join(w.ws, '.git'), { recursive: true, force: true });
  const git = (...a: string[]) => {
    const r = spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'safe.directory=*', ...a], { cwd: w.ws, encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
  };
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'tree');
  if (as) chownTree(w.ws, as.uid, gid);
}

test.unless(first(noUser, noSharedPy, noSudo))('non-root runner, uid: a fork PR that leaves 0755 dirs and a .git in the model dir and _temp changes nothing in the checkout; the next git clean -ffdx and the next trusted run succeed', async () => {
  sudoersRule(`nbg-test-door-${process.pid}`, `${runnerUser!.name} ALL=(${probeUser!.name}) NOPASSWD: ALL\n`); // in the private /etc
  const w = workspace(runnerUser);
  chmodSync(w.home, 0o711);
  gitCheckout(w, runnerUser);
  const marker = join(w.outside, 'git-command-ran');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH, LANG: 'C.UTF-8', HOME: w.home, RUNNER_TEMP: w.temp, RUNNER_WORKSPACE: join(w.work, 'repo'), GITHUB_WORKSPACE: w.ws,
  };
  const before = snapshot([w.ws, w.temp], [join(w.ws, '.git')]);
  const plan = (run: string, untrusted: boolean, hostileEnv: Record<string, string>) => ({
    mode: 'full', modelDir: w.model, promptStyle: null, prompt: null, python: sharedPy, runDir: run, threshold: null,
    writeDocs: false, timeoutSec: 120, commit: null, bisect: false, boundaries: false, cache: false, force: true, probeEnv: hostileEnv,
    isolation: { mode: 'uid', untrusted, allowUnisolated: false, user: probeUser!.name },
  });
  const runDir = join(w.temp, 'npu-block-gate/run-fork');
  const fork = await checkAs(runnerUser, plan(runDir, true, {
    FAKE_HOSTILE: join(w.model, 'loot.json'),
    FAKE_HOSTILE_MKDIR: [join(w.model, 'build_peano'), join(w.model, 'left'), join(w.temp, 'left')].join(':'),
    FAKE_HOSTILE_GIT: `${w.model}=${marker}`,
  }), env);
  assert.ok(fork.ok, fork.error);
  assert.is(fork.isolation?.mode, 'uid');
  // Nothing of the pull request's in the checkout or in _temp but the run dir we wrote ourselves.
  const after = snapshot([w.ws, w.temp], [join(w.ws, '.git')]);
  assert.equal(changed(before, after).filter((p) => !p.startsWith(join(w.temp, 'npu-block-gate'))), []);
  assert.not.ok(existsSync(join(w.model, '.git')), 'a .git was planted in the checkout');
  assert.not.ok(existsSync(marker));
  for (const f of readdirSync(runDir)) assert.ok(lstatSync(join(runDir, f)).uid === runnerUser!.uid, `${f} in the run dir is not the runner's`);
  assert.equal(readdirSync(tmpdir()).filter((n) => n.startsWith('npu-block-gate-probe-') && lstatSync(join(tmpdir(), n)).uid === runnerUser!.uid), [], 'the staging area was left');
  // The next job: actions/checkout's clean, as the runner user, and a trusted run.
  const clean = spawnSync('setpriv', ['--reuid', String(runnerUser!.uid), '--regid', String(gid), '--init-groups', '--', 'git', '-c', 'safe.directory=*', 'clean', '-ffdx'], { cwd: w.ws, encoding: 'utf8' });
  assert.is(clean.status, 0, clean.stderr);
  const trusted = await checkAs(runnerUser, plan(join(w.temp, 'npu-block-gate/run-push'), false, {}), env);
  assert.ok(trusted.ok, trusted.error);
  assert.is(trusted.outcome, 'pass');
  assert.not.ok(existsSync(marker));
});

// ---- a trusted run after a hostile one --------------------------------------------------------------

/** check() as the pipeline runs it, on one runner's cache root (the Action's trusted or untrusted plan). */
async function checkOn(w: Workspace, cacheRoot: string, o: { who: 'trusted' | 'hostile' | 'hostile-unisolated'; mode?: 'auto' | 'uid'; user?: TestUser; python?: string; host?: IsolationHost; env?: Record<string, string> }) {
  const { check } = await import('../src/check/index.ts');
  const run = mkdtempSync(join(w.base, `run-${o.who}-`));
  const plan = {
    mode: 'full' as const, modelDir: w.model, promptStyle: null, prompt: null, python: o.python ?? rootPython, runDir: run, threshold: null,
    // No lens: the forger below forges an entry of the layer alone (a key made with the lens also needs its boundaries).
    writeDocs: false, timeoutSec: 120, commit: null, bisect: false, boundaries: false, cache: true, cacheDir: cacheRoot,
    cacheWrite: o.who === 'trusted', force: true, probeEnv: o.env ?? {},
    isolation: { mode: o.who === 'hostile-unisolated' ? 'none' as const : o.mode ?? 'auto' as const, untrusted: o.who !== 'trusted', allowUnisolated: o.who === 'hostile-unisolated', user: o.user?.name ?? null },
  };
  const quiet = { step: () => undefined, warn: () => undefined };
  return check(plan, { log: quiet, isolationHost: o.host });
}

/** The checkout reset between jobs (actions/checkout): the tree's files as the commit has them. */
function resetCheckout(w: Workspace): void {
  fakeTree(w.ws);
  shareTree(w.model);
}

const sameNumbers = (a: any, b: any) => assert.equal(a.report.metrics, { ...b.report.metrics, engine: a.report.metrics.engine });

test.unless(first(notRoot, noBwrap))('namespace: a trusted run after a hostile pull request gives the clean runner\'s verdict and numbers (forged cache entry, daemon)', async () => {
  const w = workspace();
  const clean = await checkOn(w, mkdtempSync(join(w.base, 'clean-cache-')), { who: 'trusted' });
  assert.is(clean.report.outcome, 'pass');
  const key = clean.report.reference!.cache!.key;
  copyFileSync(join(clean.runDir, 'block0.ref.npy'), join(w.model, 'template.npy'));
  const attack = (root: string) => ({
    FAKE_HOSTILE: join(w.model, 'loot.json'), FAKE_HOSTILE_FORGE: join(root, 'reference', key), FAKE_HOSTILE_FORGE_FROM: join(w.model, 'template.npy'),
    FAKE_HOSTILE_WRITE: join(root, 'reference'), FAKE_HOSTILE_DAEMON: `nbgpoison-${process.pid}-ns=${join(w.model, 'fake_m_prefill.py')}`,
  });
  // Unisolated (the admin's unsafe opt-in), the pull request forges the entry and flips the next trusted verdict:
  const unsafeRoot = mkdtempSync(join(w.base, 'unsafe-cache-'));
  await checkOn(w, unsafeRoot, { who: 'hostile-unisolated', env: { ...attack(unsafeRoot), FAKE_HOSTILE_DAEMON: '' } });
  resetCheckout(w);
  const flipped = await checkOn(w, unsafeRoot, { who: 'trusted' });
  assert.is(flipped.report.reference!.cache!.hit, true);
  assert.is(flipped.report.outcome, 'fail');
  // Isolated, it cannot: no forged entry, no daemon left to rewrite the tree after the checkout reset.
  const root = mkdtempSync(join(w.base, 'runner-cache-'));
  const h = await checkOn(w, root, { who: 'hostile', env: attack(root) });
  assert.is(h.report.isolation!.mode, 'namespace');
  assert.not.ok(existsSync(join(root, 'reference', key)), 'no forged entry');
  resetCheckout(w);
  assert.equal(await survivors(`nbgpoison-${process.pid}-ns`), []);
  const after = await checkOn(w, root, { who: 'trusted' });
  assert.is(after.report.outcome, clean.report.outcome);
  assert.is(after.report.reference!.cache!.hit, false);
  sameNumbers(after, clean);
});

test.unless(first(notRoot, noBwrap, noUser))('uid with its sandbox: a hostile pull request\'s daemon does not outlive it; the next trusted run is the clean runner\'s', async () => {
  const w = workspace();
  const clean = await checkOn(w, mkdtempSync(join(w.base, 'clean-cache-')), { who: 'trusted', mode: 'uid', user: probeUser! });
  assert.is(clean.report.isolation!.mode, 'uid');
  assert.is(clean.report.outcome, 'pass');
  const root = mkdtempSync(join(w.base, 'cache-'));
  const marker = `nbgpoison-${process.pid}-uid`;
  const h = await checkOn(w, root, { who: 'hostile', mode: 'uid', user: probeUser!, env: { FAKE_HOSTILE: join(w.model, 'loot.json'), FAKE_HOSTILE_DAEMON: `${marker}=${join(w.model, 'fake_m_prefill.py')}` } });
  assert.is(h.report.isolation!.mode, 'uid');
  assert.equal(await survivors(marker), []);
  resetCheckout(w);
  const after = await checkOn(w, root, { who: 'trusted', mode: 'uid', user: probeUser! });
  assert.is(after.report.outcome, clean.report.outcome);
  sameNumbers(after, clean);
});

test.unless(first(notRoot, noUser, noSharedPy))('uid without its sandbox (bubblewrap refused): untrusted refused; a trusted run\'s leftover daemon is ended; the next trusted run is the clean runner\'s', async () => {
  const refusedHost: IsolationHost = { ...realHost, works: (argv) => !argv.some((x) => x.endsWith('/bwrap')) && realHost.works(argv) };
  const w = workspace();
  const uid = { mode: 'uid' as const, user: probeUser!, python: sharedPy!, host: refusedHost };
  const clean = await checkOn(w, mkdtempSync(join(w.base, 'clean-cache-')), { who: 'trusted', ...uid });
  assert.is(clean.report.outcome, 'pass');
  assert.ok(clean.report.warnings.some((x) => x.id === 'isolation' && /degraded isolation: the probe user runs without its sandbox/.test(x.message)), 'a degraded run is warned');
  assert.match(clean.report.isolation!.degraded ?? '', /without its sandbox/);
  const root = mkdtempSync(join(w.base, 'cache-'));
  const marker = `nbgpoison-${process.pid}-degraded`;
  const env = { FAKE_HOSTILE: join(w.model, 'loot.json'), FAKE_HOSTILE_DAEMON: `${marker}=${join(w.model, 'fake_m_prefill.py')}` };
  // The pull request never runs here ...
  await checkOn(w, root, { who: 'hostile', ...uid, env }).then(() => assert.unreachable('an untrusted run without the sandbox must be refused'), (e) => assert.match(String(e.message), /^refusing to run an untrusted event's model code/));
  // ... and what a trusted run leaves behind is ended with every process of the probe user.
  await checkOn(w, root, { who: 'trusted', ...uid, env });
  assert.equal(await survivors(marker), []);
  resetCheckout(w);
  const after = await checkOn(w, root, { who: 'trusted', ...uid });
  assert.is(after.report.outcome, clean.report.outcome);
  sameNumbers(after, clean);
});

// ---- timeouts and cancels -------------------------------------------------------------------------

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

/** A guard against a hung test (not a timing assertion): fail instead of hanging CI. */
function within<T>(p: Promise<T>, seconds: number, what: string): Promise<T> {
  return Promise.race([p, new Promise<T>((_, rej) => setTimeout(() => rej(new Error(`${what} did not return within ${seconds}s`)), seconds * 1000).unref())]);
}

test('a probe timeout stops its whole tree, a grandchild that left the group included, and returns', async () => {
  const w = workspace();
  const pidFile = join(w.run, 'grandchild.pid');
  const err = await within(runProbe([{ command: rootPython, source: 'option' }], {
    subcommand: 'block', args: ['--model-dir', w.model, '--out', w.run, '--ref-cache', 'none', '--npu-lock', 'none'],
    runDir: w.run, timeoutSec: 3, extraEnv: { FAKE_COMPILE_GRANDCHILD: pidFile },
  }, { onLine: () => undefined }).then(() => null, (e) => e as Error), 3 + 30, 'the timed-out probe');
  assert.match(String(err?.message), /timed out after 3s/);
  const pid = Number(readFileSync(pidFile, 'utf8'));
  for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  assert.not.ok(alive(pid), `grandchild ${pid} survived`);
});

test('SIGINT to the CLI stops the probe group and ends with status 130', async () => {
  const w = workspace();
  const hang = join(w.run, 'hang');
  const run = runProbe([{ command: rootPython, source: 'option' }], {
    subcommand: 'block', args: ['--model-dir', w.model, '--out', w.run, '--ref-cache', 'none', '--npu-lock', 'none'],
    runDir: w.run, timeoutSec: null, extraEnv: { FAKE_COMPILE_HANG: hang },
  }, { onLine: () => undefined }).then(() => null, (e) => e);
  for (let i = 0; i < 200 && !existsSync(hang); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(existsSync(hang), 'the probe reached its compile');
  process.kill(process.pid, 'SIGINT');
  const e = await within(run, 30, 'the interrupted probe');
  assert.instance(e, ProbeInterrupted);
  assert.is((e as ProbeInterrupted).status, 130);
  assert.not.ok(existsSync(join(w.run, 'probe.json')));
});

test.run();
