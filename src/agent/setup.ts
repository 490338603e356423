// `agent setup`: prepares the runner for uid isolation (src/probe/isolate.ts, issue 8 "Isolation of
// the PR's code"). Run once as root. It creates (or adopts) the probe user, records it in
// SETUP_FILE, lets the runner user start processes as it (a sudoers rule, unless the runner runs as
// root and uses setpriv), gives it the NPU, makes the kernel and reference caches the runner's and
// read-only for everybody else, checks the HF cache and the runner's own files the same way, shares
// the work dir's group, and checks that the probe user can reach and run what it needs.
//
// Every step prints one line: done, already (so), would (--dry-run), skipped, WARN (the admin's
// move; --fix makes some of them) or FAIL (a check that keeps the probe from running: exit 3). A
// second run changes nothing. Users and groups change through the command table (useradd,
// groupadd, usermod, visudo, setpriv, sudo, systemctl), system files under the root prefix, and
// file owners through a seam (SetupFs), so tests run on a fake root and never touch this machine.
import { closeSync, constants, fchmodSync, fchownSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { writeAtomic as writeFileAtomic } from '../fs/atomic.ts';
import { HF_HUB, hfHome as hfHomeOf, hfHubCache } from '../contract.ts';
import { fsError, InfraError, InputError, oneLine } from '../errors.ts';
import { parseSetupFile, SETUP_FILE } from '../probe/isolate.ts';
import { referenceRoot } from '../cache/reference.ts';
import type { CmdResult, Machine } from './machine.ts';
import { MEMLOCK_NEEDED } from './memlock.ts';
import { drainSudoersRule, isUnitName, isUserName, systemctlPath } from './runner.ts';
import { formatBytes } from './parse.ts';

export const DEFAULT_PROBE_USER = 'npu-probe';
/** The group the runner user and the probe user share: the work dir carries it. */
export const PROBE_GROUP = 'npu-block-gate';
export const SUDOERS_FILE = '/etc/sudoers.d/npu-block-gate';
/** The rule `agent drain` / `undrain` need to stop and start the runner's service: its own file, so either can be removed alone. */
export const DRAIN_SUDOERS_FILE = '/etc/sudoers.d/npu-block-gate-drain';
const ACCEL_NODE = '/dev/accel/accel0';
/** Groups that make a uid as good as root (or able to read every disk): a probe user in one isolates nothing. */
const PRIVILEGED_GROUPS = ['root', 'sudo', 'wheel', 'admin', 'docker', 'lxd', 'libvirt', 'disk', 'shadow'];

type StepStatus = 'done' | 'already' | 'would' | 'skipped' | 'warn' | 'fail';

export interface Step {
  id: string;
  status: StepStatus;
  detail: string;
  /** What the admin should do (warn, fail), else null. */
  fix: string | null;
}

interface FileInfo {
  uid: number;
  gid: number;
  /** Permission bits with setuid/setgid/sticky (mode & 0o7777). */
  mode: number;
  kind: 'dir' | 'file' | 'link' | 'other';
}

/**
 * File owners and modes: tests replace lstat and chown (owners they cannot really change). chmod
 * and chown act on the inode lstat saw, never through a symlink, and only while it still belongs
 * to `owner`: setup runs as root over directories the runner user can change meanwhile, so a file
 * swapped for a link to /etc/shadow is refused, not handed over.
 */
export interface SetupFs {
  lstat: (path: string) => FileInfo | null;
  readdir: (path: string) => string[] | null;
  chmod: (path: string, mode: number, owner: number) => void;
  chown: (path: string, uid: number, gid: number, owner: number) => void;
}

/** Opens path without following a link, checks it is still a file or directory of owner, runs fn on the descriptor. */
function onInode(path: string, owner: number, fn: (fd: number) => void): void {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const s = fstatSync(fd);
    if ((!s.isFile() && !s.isDirectory()) || s.uid !== owner) throw new InfraError('changed while setup ran (its owner or type); nothing done to it, run setup again', path);
    fn(fd);
  } finally { closeSync(fd); }
}

export const realSetupFs: SetupFs = {
  lstat: (p) => {
    try {
      const s = lstatSync(p);
      return { uid: s.uid, gid: s.gid, mode: s.mode & 0o7777, kind: s.isSymbolicLink() ? 'link' : s.isDirectory() ? 'dir' : s.isFile() ? 'file' : 'other' };
    } catch { return null; }
  },
  readdir: (p) => { try { return readdirSync(p).sort(); } catch { return null; } },
  chmod: (p, mode, owner) => onInode(p, owner, (fd) => fchmodSync(fd, mode)),
  chown: (p, uid, gid, owner) => onInode(p, owner, (fd) => fchownSync(fd, uid, gid)),
};

interface SetupOptions {
  /** --user: the probe user (default npu-probe). */
  user?: string | null;
  /** --runner-user (default: $SUDO_USER under sudo, else the user running setup). */
  runnerUser?: string | null;
  runnerDir?: string | null;
  workDir?: string | null;
  cacheDir?: string | null;
  hfHome?: string | null;
  python?: string | null;
  /** Repair what is otherwise only reported: the HF cache, token files, the runner's credentials, search permission on the way to what the probe reads. */
  fix?: boolean;
  dryRun?: boolean;
  /** This process's uid (default process.getuid()). */
  uid?: number;
  fs?: Partial<SetupFs>;
  /** Called with each step as it finishes (the CLI prints it at once). */
  onStep?: (s: Step) => void;
}

interface SetupResult {
  root: string;
  runner_user: string;
  probe_user: string;
  dry_run: boolean;
  fix: boolean;
  paths: { setup_file: string; sudoers: string | null; drain_sudoers: string | null; work_dir: string; cache_dir: string; reference_cache: string | null; hf_hub_cache: string };
  steps: Step[];
  /** Steps that changed something (done). */
  changed: number;
  exit_code: 0 | 3;
}

// ---- the user and group databases under the root prefix (and NSS through getent on the real root)

interface Account { name: string; uid: number; gid: number; home: string; shell: string }
interface Group { name: string; gid: number; members: string[] }

function parsePasswdLine(l: string): Account | null {
  const f = l.split(':');
  if (f.length < 7 || !f[0] || f[0].startsWith('#')) return null;
  const uid = Number(f[2]);
  const gid = Number(f[3]);
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) return null;
  return { name: f[0], uid, gid, home: f[5], shell: f[6].trim() };
}

function parseGroupLine(l: string): Group | null {
  const f = l.split(':');
  if (f.length < 4 || !f[0] || f[0].startsWith('#')) return null;
  const gid = Number(f[2]);
  if (!Number.isInteger(gid)) return null;
  return { name: f[0], gid, members: f[3].trim().split(',').map((s) => s.trim()).filter(Boolean) };
}

class Db {
  constructor(private readonly m: Machine) {}
  private lines(file: string): string[] { return (this.m.read(file) ?? '').split(/\r?\n/); }
  private getent(db: string, key: string): string | null {
    if (this.m.root !== '/') return null;
    const r = this.m.run('getent', [db, key], 5000);
    return r.status === 0 ? r.stdout.split('\n')[0] : null;
  }
  user(name: string): Account | null {
    for (const l of this.lines('/etc/passwd')) { const a = parsePasswdLine(l); if (a?.name === name) return a; }
    const e = this.getent('passwd', name);
    return e ? parsePasswdLine(e) : null;
  }
  group(name: string): Group | null {
    for (const l of this.lines('/etc/group')) { const g = parseGroupLine(l); if (g?.name === name) return g; }
    const e = this.getent('group', name);
    return e ? parseGroupLine(e) : null;
  }
  groupByGid(gid: number): Group | null {
    for (const l of this.lines('/etc/group')) { const g = parseGroupLine(l); if (g?.gid === gid) return g; }
    const e = this.getent('group', String(gid));
    return e ? parseGroupLine(e) : null;
  }
  /** The gids a user's processes get (primary + supplementary, as initgroups sees /etc/group). */
  gidsOf(a: Account): number[] {
    const out = new Set([a.gid]);
    for (const l of this.lines('/etc/group')) { const g = parseGroupLine(l); if (g?.members.includes(a.name)) out.add(g.gid); }
    return [...out];
  }
  inGroup(a: Account, g: Group): boolean { return a.gid === g.gid || g.members.includes(a.name); }
}

// ---- small helpers

const octal = (n: number) => n.toString(8).padStart(4, '0');
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function why(r: CmdResult): string {
  return oneLine(r.error ?? (`${r.stderr}\n${r.stdout}`.trim().split('\n').pop() || `exit ${r.status}`));
}

/** A system command (useradd, usermod, visudo, setpriv) from PATH, else from the sbin dirs under the root prefix. */
function runSbin(m: Machine, cmd: string, args: string[], timeoutMs?: number): CmdResult {
  const r = m.run(cmd, args, timeoutMs);
  if (!r.missing) return r;
  for (const d of ['/usr/sbin', '/sbin', '/usr/bin', '/bin']) if (m.exists(`${d}/${cmd}`)) return m.run(m.path(`${d}/${cmd}`), args, timeoutMs);
  return r;
}

/** Runs a command that changes the machine; throws one line naming it when it fails. */
function mustRun(m: Machine, cmd: string, args: string[], pkg: string): CmdResult {
  const r = runSbin(m, cmd, args, 60_000);
  const line = `${cmd} ${args.join(' ')}`;
  if (r.missing) throw new InfraError(`${cmd} not found (install ${pkg}): could not run ${line}`);
  if (r.status !== 0) throw new InfraError(`${line} failed: ${why(r)}`);
  return r;
}

function realOr(p: string): string {
  try { return realpathSync(p); } catch { return resolve(p); }
}

/** A file outside the root prefix (the runner dir is the runner's, not a system path), or null. */
function readPlain(p: string): string | null {
  try { return readFileSync(p, 'utf8'); } catch { return null; }
}

/** The runner's .runner file's workFolder (config.sh --work), else _work. */
function workFolder(runnerDir: string): string {
  try {
    const j = JSON.parse((readPlain(join(runnerDir, '.runner')) ?? '').replace(/^\uFEFF/, ''));
    if (typeof j.workFolder === 'string' && j.workFolder.trim()) return j.workFolder.trim();
  } catch { /* default */ }
  return '_work';
}

/** Writes path atomically with exactly this mode (whatever the umask), making its directory; a
 * symlink there is replaced, never followed. The temp file's name starts with a dot: sudo skips such
 * files in /etc/sudoers.d, so a half-written rule never counts. */
function writeAtomic(path: string, text: string, mode: number, validate?: (tmp: string) => void): void {
  writeFileAtomic(path, text, { mode, validate, follow: false });
}

// ---- the setup

class Run {
  readonly steps: Step[] = [];
  constructor(private readonly onStep?: (s: Step) => void) {}
  add(id: string, status: StepStatus, detail: string, fix: string | null = null): Step {
    const s = { id, status, detail, fix };
    this.steps.push(s);
    this.onStep?.(s);
    return s;
  }
}

interface Resolved {
  probeName: string;
  runner: Account;
  runnerDir: string | null;
  /** The runner's systemd service (its .service file), checked: a unit name and nothing else. */
  svc: string | null;
  workDir: string;
  cacheDir: string;
  refDir: string | null;
  hfHome: string;
  hubDir: string;
}

function resolveInputs(m: Machine, fs: SetupFs, db: Db, o: SetupOptions, uid: number): Resolved {
  const probeName = o.user ?? DEFAULT_PROBE_USER;
  if (!isUserName(probeName)) throw new InputError(`--user ${JSON.stringify(probeName)}: not a user name (lower case letters, digits, _ and -, at most 32)`);
  const sudoUser = uid === 0 && m.env.SUDO_USER && m.env.SUDO_USER !== 'root' ? m.env.SUDO_USER : null;
  const runnerName = o.runnerUser ?? sudoUser ?? m.user();
  if (!isUserName(runnerName)) throw new InputError(`--runner-user ${JSON.stringify(runnerName)}: not a user name (lower case letters, digits, _ and -, at most 32)`);
  if (runnerName === probeName) throw new InputError(`the probe user must not be the runner user (${runnerName}): pass another --user`);
  const runner = db.user(runnerName);
  if (!runner) throw new InputError(`no user ${runnerName} (the user the runner service runs as): pass --runner-user`, m.path('/etc/passwd'));
  let runnerDir = o.runnerDir ? resolve(o.runnerDir) : null;
  if (!runnerDir && !o.workDir) {
    const guess = join(runner.home, 'actions-runner');
    if (readPlain(join(guess, '.runner')) !== null) runnerDir = guess;
    else throw new InputError(`pass --runner-dir (the runner's install dir, with its .runner file) or --work-dir: no runner at ${guess}`, '--runner-dir');
  }
  if (runnerDir && readPlain(join(runnerDir, '.runner')) === null && !o.workDir) {
    throw new InputError('no .runner file: is --runner-dir the runner\'s install dir (where config.sh wrote it)?', join(runnerDir, '.runner'));
  }
  // The unit name goes into a sudoers rule and a systemctl command line: checked here, before
  // anything is written, so a bad one leaves no user, group, setup file or rule behind.
  const svcFile = runnerDir ? join(runnerDir, '.service') : null;
  const svc = svcFile ? readPlain(svcFile)?.trim() || null : null;
  if (svc !== null && !isUnitName(svc)) {
    throw new InputError(`${JSON.stringify(svc)} is not a systemd service name (letters, digits, @ . _ - and \\xNN escapes, ending in .service, not starting with -): refused, nothing written`, svcFile!);
  }
  const wf = runnerDir ? workFolder(runnerDir) : '_work';
  const workDir = o.workDir ? resolve(o.workDir) : isAbsolute(wf) ? wf : join(runnerDir!, wf);
  const wst = fs.lstat(workDir);
  if (wst && wst.kind !== 'dir') throw new InputError('not a directory: is it the runner\'s work dir (--work-dir)?', workDir);
  if (wst && wst.uid !== runner.uid) throw new InputError(`owned by uid ${wst.uid}, not by the runner user ${runner.name}: is it the runner's work dir (--work-dir, --runner-user)?`, workDir);
  if (!wst && fs.lstat(dirname(workDir))?.kind !== 'dir') throw new InputError('no such directory, nor its parent: is it the runner\'s work dir (--work-dir, --runner-dir)?', workDir);
  const cacheDir = resolve(o.cacheDir ?? m.env.NPU_BLOCK_GATE_CACHE_DIR ?? join(runner.home, '.cache', 'npu-block-gate'));
  const refOff = m.env.NPU_BLOCK_GATE_REF_CACHE?.trim().toLowerCase() === 'none';
  const refDir = refOff ? null : referenceRoot(cacheDir, m.env);
  const hfHome = resolve(o.hfHome ?? hfHomeOf(m.env, runner.home));
  const hubDir = resolve(o.hfHome ? join(hfHome, HF_HUB.home_hub) : hfHubCache(m.env, runner.home));
  return { probeName, runner, runnerDir, svc, workDir, cacheDir, refDir, hfHome, hubDir };
}

/** `npu-block-gate agent setup`. Throws (exit 2/3, one line) on bad input or a command that fails. */
export function setup(m: Machine, o: SetupOptions = {}): SetupResult {
  const fs: SetupFs = { ...realSetupFs, ...o.fs };
  const uid = o.uid ?? (typeof process.getuid === 'function' ? process.getuid() : -1);
  const dry = !!o.dryRun;
  const fix = !!o.fix;
  if (!dry && uid !== 0) {
    throw new InputError('agent setup creates a user and a group and changes file owners: run it as root (sudo npu-block-gate agent setup --runner-user <runner user> ...), or with --dry-run to see what it would do');
  }
  const db = new Db(m);
  const r = resolveInputs(m, fs, db, o, uid);
  const run = new Run(o.onStep);
  const runner = r.runner;
  const runnerRoot = runner.uid === 0;
  const prefix = m.root === '/' ? [] : ['--prefix', m.root];

  // 1. The probe user.
  let probe = db.user(r.probeName);
  if (probe) {
    if (probe.uid === 0) throw new InputError(`${probe.name} has uid 0 (root): the probe would run as root; pass another --user`, m.path('/etc/passwd'));
    if (probe.uid === runner.uid) throw new InputError(`${probe.name} has the runner user's uid ${runner.uid}: isolation would be void; pass another --user`, m.path('/etc/passwd'));
    const login = !/(nologin|false)$/.test(probe.shell);
    run.add('probe-user', 'already', `${probe.name} exists (uid ${probe.uid}${login ? `, login shell ${probe.shell}` : ', no login shell'})`);
  } else {
    const shell = ['/usr/sbin/nologin', '/sbin/nologin', '/usr/bin/false', '/bin/false'].find((s) => m.exists(s)) ?? '/usr/sbin/nologin';
    const args = [...prefix, '--system', '--user-group', '--no-create-home', '--home-dir', '/nonexistent', '--shell', shell, '--comment', 'npu-block-gate probe', r.probeName];
    if (dry) run.add('probe-user', 'would', `create system user ${r.probeName} (useradd ${args.join(' ')})`);
    else {
      mustRun(m, 'useradd', args, 'passwd (shadow-utils)');
      probe = db.user(r.probeName);
      if (!probe) throw new InfraError(`useradd exited 0 but ${r.probeName} is not in the user database`, m.path('/etc/passwd'));
      run.add('probe-user', 'done', `created system user ${probe.name} (uid ${probe.uid}, shell ${shell}, no home)`);
    }
  }
  if (probe) {
    const bad = PRIVILEGED_GROUPS.map((g) => db.group(g)).filter((g): g is Group => !!g && db.inGroup(probe!, g));
    if (bad.length) {
      run.add('probe-groups', 'warn', `${probe.name} is in ${bad.map((g) => g.name).join(', ')}: as good as root, the separate uid isolates nothing`,
        bad.map((g) => `gpasswd -d ${probe!.name} ${g.name}`).join('; '));
    }
  }

  // 2. The shared group and its two members.
  let group = db.group(PROBE_GROUP);
  if (group) run.add('group', 'already', `group ${PROBE_GROUP} exists (gid ${group.gid})`);
  else if (dry) run.add('group', 'would', `create group ${PROBE_GROUP} (groupadd ${[...prefix, '--system', PROBE_GROUP].join(' ')})`);
  else {
    mustRun(m, 'groupadd', [...prefix, '--system', PROBE_GROUP], 'passwd (shadow-utils)');
    group = db.group(PROBE_GROUP);
    if (!group) throw new InfraError(`groupadd exited 0 but ${PROBE_GROUP} is not in the group database`, m.path('/etc/group'));
    run.add('group', 'done', `created group ${PROBE_GROUP} (gid ${group.gid})`);
  }
  {
    const names = [runner.name, r.probeName];
    const missing = names.filter((n) => {
      const a = n === runner.name ? runner : probe;
      return !group || !a || !db.inGroup(a, group);
    });
    if (!missing.length) run.add('group-members', 'already', `${names.join(' and ')} are in ${PROBE_GROUP}`);
    else if (dry) run.add('group-members', 'would', `add ${missing.join(' and ')} to ${PROBE_GROUP} (usermod -aG)`);
    else {
      for (const n of missing) mustRun(m, 'usermod', [...prefix, '-aG', PROBE_GROUP, n], 'passwd (shadow-utils)');
      group = db.group(PROBE_GROUP)!;
      const restart = missing.includes(runner.name) ? ` (restart the runner service: a running ${runner.name} process gets the group at its next start)` : '';
      run.add('group-members', 'done', `added ${missing.join(' and ')} to ${PROBE_GROUP}${restart}`);
    }
  }

  // 3. The setup file isolate.ts reads.
  {
    const path = m.path(SETUP_FILE);
    const want = `# Written by \`npu-block-gate agent setup\`: the user the probe (a pull request's model code) runs as.\n${r.probeName}\n`;
    const cur = m.read(SETUP_FILE);
    const st = fs.lstat(path);
    if (cur === want && st?.mode === 0o644) run.add('setup-file', 'already', `${SETUP_FILE} names ${r.probeName} (0644)`);
    else if (dry) run.add('setup-file', 'would', `write ${SETUP_FILE} naming ${r.probeName} (0644)${cur !== null && parseSetupFile(cur) !== r.probeName ? `, replacing ${parseSetupFile(cur) ?? 'nothing'}` : ''}`);
    else {
      const was = cur === null ? null : parseSetupFile(cur);
      writeAtomic(path, want, 0o644);
      run.add('setup-file', 'done', `wrote ${SETUP_FILE} naming ${r.probeName} (0644)${cur !== null && was !== r.probeName ? `, was ${was ?? 'empty'}` : ''}`);
    }
  }

  // 4. Starting the probe: setpriv when the runner runs as root, else sudo with this one rule.
  // NOSETENV: sudo would imply SETENV for the command ALL; the Action hands the probe its
  // allow-listed environment as arguments of `env -i`, so no variable passes any other way.
  const sudoLine = `${runner.name} ALL=(${r.probeName}) NOPASSWD:NOSETENV: ALL`;
  if (runnerRoot) {
    run.add('sudoers', 'skipped', `the runner runs as root: it starts the probe with setpriv, no sudoers rule needed`);
    if (!m.has('setpriv', ['/usr/bin/setpriv', '/bin/setpriv'])) run.add('setpriv', 'warn', 'setpriv is not installed: a root runner cannot start the probe as another user', 'apt install util-linux (setpriv)');
  } else {
    const want = [
      '# Written by `npu-block-gate agent setup`: the runner user may start processes as the probe user, and',
      '# nothing else. NOSETENV: no variable passes through sudo; the Action hands the probe a fixed environment with env -i.',
      sudoLine,
      '',
    ].join('\n');
    const cur = m.read(SUDOERS_FILE);
    const st = fs.lstat(m.path(SUDOERS_FILE));
    if (cur === want && st?.mode === 0o440) run.add('sudoers', 'already', `${SUDOERS_FILE} (0440): ${sudoLine}`);
    else if (dry) run.add('sudoers', 'would', `write ${SUDOERS_FILE} (0440, checked with visudo -cf): ${sudoLine}`);
    else {
      writeSudoers(m, SUDOERS_FILE, want);
      run.add('sudoers', 'done', `wrote ${SUDOERS_FILE} (0440, visudo -cf ok): ${sudoLine}`);
    }
    const main = m.read('/etc/sudoers');
    if (main !== null && !/^\s*[#@]includedir\s+\/etc\/sudoers\.d\s*$/m.test(main)) {
      run.add('sudoers-include', 'warn', '/etc/sudoers has no @includedir /etc/sudoers.d: sudo never reads the rule', 'add the line @includedir /etc/sudoers.d to /etc/sudoers (with visudo)');
    }
    if (!m.has('sudo', ['/usr/bin/sudo', '/bin/sudo'])) run.add('sudo', 'warn', 'sudo is not installed: the runner user cannot start the probe as another user', 'apt install sudo');
  }

  // 4b. The drain's rule: stop and start this runner's service, nothing else (no SETENV).
  const drainRule = drainStep(m, fs, run, r, runner, dry);

  // 5. The NPU: the accel node's group.
  {
    const st = fs.lstat(m.path(ACCEL_NODE));
    const g = st ? db.groupByGid(st.gid) : null;
    if (!st) run.add('npu-access', 'warn', `no ${ACCEL_NODE}: cannot tell which group opens the NPU (see agent doctor)`, 'load amdxdna (agent doctor says why the node is missing), then run setup again');
    else if (st.gid === 0 || !g) {
      run.add('npu-access', 'warn', `${ACCEL_NODE} belongs to ${g?.name ?? `gid ${st.gid}`} (mode ${octal(st.mode)}): no group to give the probe user`,
        'give the node a group with a udev rule (e.g. SUBSYSTEM=="accel", GROUP="render", MODE="0660"), then run setup again');
    } else if ((st.mode & 0o060) !== 0o060) {
      run.add('npu-access', 'warn', `${ACCEL_NODE} is ${g.name} but mode ${octal(st.mode)}: the group cannot read and write it`, 'a udev rule with MODE="0660" for the accel node');
    } else if (probe && db.inGroup(probe, g)) run.add('npu-access', 'already', `${r.probeName} is in ${g.name} (${ACCEL_NODE} mode ${octal(st.mode)})`);
    else if (dry) run.add('npu-access', 'would', `add ${r.probeName} to ${g.name}, the group of ${ACCEL_NODE} (usermod -aG)`);
    else {
      mustRun(m, 'usermod', [...prefix, '-aG', g.name, r.probeName], 'passwd (shadow-utils)');
      run.add('npu-access', 'done', `added ${r.probeName} to ${g.name}, the group of ${ACCEL_NODE}`);
    }
  }

  // 6. Locked memory: the probe inherits the runner's limit (setpriv and sudo keep it) unless sudo's pam_limits lowers it.
  memlockSteps(m, run, runner, probe, r, db);

  // 7. The caches: the runner's, directories 0755 and files 0644 (the probe reads, never writes).
  cacheStep(fs, run, 'kernel-cache', r.cacheDir, r.refDir ? [r.refDir] : [], runner, probe, dry);
  if (r.refDir) cacheStep(fs, run, 'reference-cache', r.refDir, [], runner, probe, dry);
  else run.add('reference-cache', 'skipped', 'NPU_BLOCK_GATE_REF_CACHE=none: no reference cache');

  // 8. The HF cache and its token: read-only for the probe user, the token not readable at all.
  hfSteps(fs, run, r, runner, probe, dry, fix);

  // 9. The work dir: the shared group, inherited by what the runner creates below (setgid).
  workDirStep(fs, run, r, runner, group, dry);

  // 10. The runner's own secrets: never readable by the probe user; nor the checkouts' git dirs (a token header).
  if (r.runnerDir) secretsStep(fs, run, r.runnerDir, probe, db, dry, fix);
  checkoutsStep(fs, run, r, runner, dry);

  // 11. Search permission on the way to everything the probe reads or writes.
  reachStep(m, fs, run, r, probe, db, dry, fix, o.python ?? null);

  // 12. Checks as the probe user: the runner can switch to it, its Python imports numpy.
  // A dry run checks too, unless an earlier step still has something to change.
  const pending = run.steps.some((s) => s.status === 'would');
  if (!runnerRoot) {
    const args = ['--reuid', runner.name, '--regid', String(runner.gid), '--init-groups', '--', 'sudo', '-n', '-u', r.probeName, '--', 'true'];
    if (!probe || pending || uid !== 0) run.add('switch', dry ? 'would' : 'skipped', `check that ${runner.name} can start processes as ${r.probeName} (sudo -n -u ${r.probeName})${uid !== 0 ? ' (needs root)' : ''}`);
    else {
      const c = runSbin(m, 'setpriv', args, 30_000);
      if (c.status === 0) run.add('switch', 'already', `${runner.name} can start processes as ${r.probeName} (sudo -n -u ${r.probeName} -- true)`);
      else run.add('switch', 'fail', `${runner.name} cannot start processes as ${r.probeName}: setpriv ${args.join(' ')}: ${why(c)}`, `check ${SUDOERS_FILE} with sudo -l -U ${runner.name}`);
    }
  }
  pythonStep(m, fs, run, r, probe, db, dry, uid, pending, o.python ?? null);
  sandboxStep(m, run, r, runner, probe, uid, pending);

  const changed = run.steps.filter((s) => s.status === 'done').length;
  return {
    root: m.root, runner_user: runner.name, probe_user: r.probeName, dry_run: dry, fix,
    paths: { setup_file: SETUP_FILE, sudoers: runnerRoot ? null : SUDOERS_FILE, drain_sudoers: drainRule ? DRAIN_SUDOERS_FILE : null, work_dir: r.workDir, cache_dir: r.cacheDir, reference_cache: r.refDir, hf_hub_cache: r.hubDir },
    steps: run.steps, changed, exit_code: run.steps.some((s) => s.status === 'fail') ? 3 : 0,
  };
}

// ---- the drain's sudoers rule

/** Writes a sudoers file (0440) after visudo -cf accepted it. */
function writeSudoers(m: Machine, file: string, text: string): void {
  writeAtomic(m.path(file), text, 0o440, (tmp) => {
    const v = runSbin(m, 'visudo', ['-cf', tmp], 30_000);
    if (v.missing) throw new InfraError(`visudo not found (install sudo): could not check the rule before installing it`, m.path(file));
    if (v.status !== 0) throw new InfraError(`visudo -cf rejected the rule (${why(v)}); nothing installed`, m.path(file));
  });
}

/** The rule agent drain and undrain need; returns it when installed (or already there), else null, saying why not. */
function drainStep(m: Machine, fs: SetupFs, run: Run, r: Resolved, runner: Account, dry: boolean): string | null {
  if (runner.uid === 0) { run.add('drain-sudoers', 'skipped', 'the runner runs as root, which sudo lets stop and start its service without a rule: none installed'); return null; }
  const svc = r.svc;
  if (!svc) {
    run.add('drain-sudoers', 'skipped', `no .service in ${r.runnerDir ?? 'the runner dir (no --runner-dir)'}: the runner is not installed as a service, so no rule was installed; agent drain works by label (--token-file)`);
    return null;
  }
  const rule = drainSudoersRule(runner.name, svc, systemctlPath(m));
  const want = [
    '# Written by `npu-block-gate agent setup`: agent drain and undrain stop and start this runner\'s service, and',
    '# nothing else (no SETENV, no other unit, no other verb).',
    rule,
    '',
  ].join('\n');
  const cur = m.read(DRAIN_SUDOERS_FILE);
  const st = fs.lstat(m.path(DRAIN_SUDOERS_FILE));
  if (cur === want && st?.mode === 0o440) run.add('drain-sudoers', 'already', `${DRAIN_SUDOERS_FILE} (0440): ${rule}`);
  else if (dry) run.add('drain-sudoers', 'would', `write ${DRAIN_SUDOERS_FILE} (0440, checked with visudo -cf): ${rule}`);
  else {
    writeSudoers(m, DRAIN_SUDOERS_FILE, want);
    run.add('drain-sudoers', 'done', `wrote ${DRAIN_SUDOERS_FILE} (0440, visudo -cf ok): ${rule}`);
  }
  return rule;
}

// ---- memlock

/** "infinity" or a byte count from systemctl show -p LimitMEMLOCK --value. */
function parseSystemdLimit(v: string): number | 'unlimited' | null {
  const t = v.trim();
  if (t === 'infinity') return 'unlimited';
  return /^\d+$/.test(t) ? Number(t) : null;
}

/** limits.conf memlock entries (KiB) that apply to the user: [file, line, bytes or unlimited]. */
function memlockEntries(m: Machine, user: Account, db: Db): [string, string, number | 'unlimited'][] {
  const files = ['/etc/security/limits.conf', ...(m.list('/etc/security/limits.d') ?? []).filter((f) => f.endsWith('.conf')).map((f) => `/etc/security/limits.d/${f}`)];
  const out: [string, string, number | 'unlimited'][] = [];
  const gids = db.gidsOf(user);
  for (const file of files) {
    for (const line of (m.read(file) ?? '').split('\n')) {
      const f = line.replace(/#.*/, '').trim().split(/\s+/);
      if (f.length < 4 || f[2] !== 'memlock' || f[1] === 'soft') continue;
      const dom = f[0];
      const applies = dom === '*' || dom === user.name || (dom.startsWith('@') && (() => { const g = db.group(dom.slice(1)); return !!g && gids.includes(g.gid); })());
      if (!applies) continue;
      const v = f[3] === 'unlimited' || f[3] === 'infinity' || f[3] === '-1' ? 'unlimited' : Number(f[3]) * 1024;
      if (v === 'unlimited' || Number.isFinite(v)) out.push([file, line.trim(), v]);
    }
  }
  return out;
}

function memlockSteps(m: Machine, run: Run, runner: Account, probe: Account | null, r: Resolved, db: Db): void {
  const svc = r.svc;
  const need = `XRT needs ~${formatBytes(MEMLOCK_NEEDED)} of locked memory`;
  if (!svc) {
    run.add('memlock', 'warn', `the runner is not installed as a service (no .service in the runner dir): the probe inherits the memlock limit of whatever starts ./run.sh; ${need}`,
      'start the runner with LimitMEMLOCK=infinity (a systemd unit), or ulimit -l unlimited before ./run.sh');
  } else {
    const c = m.run('systemctl', ['show', '-p', 'LimitMEMLOCK', '--value', svc], 15_000);
    const v = c.status === 0 ? parseSystemdLimit(c.stdout) : null;
    const fixLine = `sudo systemctl edit ${svc} with [Service] LimitMEMLOCK=infinity, then restart it`;
    if (v === null) run.add('memlock', 'warn', `cannot read ${svc}'s LimitMEMLOCK (systemctl show: ${c.status === 0 ? JSON.stringify(c.stdout.trim()) : why(c)}); the probe inherits it`, fixLine);
    else if (v === 'unlimited' || v >= MEMLOCK_NEEDED) run.add('memlock', 'already', `${svc}: LimitMEMLOCK=${v === 'unlimited' ? 'infinity' : formatBytes(v)}; the probe inherits it`);
    else run.add('memlock', 'warn', `${svc}: LimitMEMLOCK=${formatBytes(v)}, inherited by the probe; ${need}`, fixLine);
  }
  // sudo runs pam_limits on Debian and Ubuntu: a memlock line in limits.conf for the probe user wins over the inherited limit.
  if (runner.uid === 0 || !probe) return;
  const pam = m.read('/etc/pam.d/sudo') ?? '';
  if (!/^\s*session\s+\S+\s+pam_limits\.so/m.test(pam)) return;
  const low = memlockEntries(m, probe, db).filter(([, , v]) => v !== 'unlimited' && v < MEMLOCK_NEEDED);
  if (low.length) {
    const [file, line, v] = low[0];
    run.add('memlock-sudo', 'warn', `sudo applies ${file} "${line}" (${formatBytes(v as number)}) to ${probe.name}; ${need}`,
      `add "${probe.name} - memlock unlimited" to /etc/security/limits.d/npu-block-gate.conf`);
  }
}

// ---- caches

function ensureDir(fs: SetupFs, dir: string, owner: Account, dry: boolean): string[] {
  const made: string[] = [];
  const missing: string[] = [];
  for (let d = dir; !fs.lstat(d); d = dirname(d)) { missing.unshift(d); if (d === dirname(d)) break; }
  if (dry) return missing;
  for (const d of missing) {
    try {
      mkdirSync(d, { mode: 0o755 });
      const st = fs.lstat(d)!;
      fs.chmod(d, 0o755, st.uid);
      fs.chown(d, owner.uid, owner.gid, st.uid);
    } catch (e) { throw fsError(e, d, 'cannot create the directory'); }
    made.push(d);
  }
  return made;
}

function walk(fs: SetupFs, root: string, skip: string[], visit: (p: string, st: FileInfo) => void): void {
  const stack = [root];
  while (stack.length) {
    const p = stack.pop()!;
    if (skip.includes(p)) continue;
    const st = fs.lstat(p);
    if (!st) continue;
    visit(p, st);
    if (st.kind === 'dir') for (const n of fs.readdir(p) ?? []) stack.push(join(p, n));
  }
}

function cacheStep(fs: SetupFs, run: Run, id: string, dir: string, skip: string[], owner: Account, probe: Account | null, dry: boolean): void {
  const made = ensureDir(fs, dir, owner, dry);
  const root = realOr(dir);
  const skipReal = skip.map(realOr);
  let entries = 0;
  let chown = 0;
  let chmod = 0;
  const foreign: string[] = [];
  walk(fs, root, skipReal, (p, st) => {
    if (st.kind !== 'dir' && st.kind !== 'file') return;
    entries++;
    const want = st.kind === 'dir' || st.mode & 0o100 ? 0o755 : 0o644;
    // The probe user's files become the runner's; root's or anybody else's are left alone (reported).
    const fromProbe = !!probe && st.uid === probe.uid;
    if (!fromProbe && st.uid !== owner.uid) { foreign.push(p); return; }
    if (fromProbe) chown++;
    if (st.mode !== want) chmod++;
    if (dry) return;
    try {
      if (fromProbe) fs.chown(p, owner.uid, owner.gid, st.uid);
      if (st.mode !== want || fromProbe) fs.chmod(p, want, owner.uid); // chown clears setuid/setgid: set the mode again
    } catch (e) { throw fsError(e, p, fromProbe ? 'cannot change the owner' : 'cannot change the mode'); }
  });
  const what = `owned by ${owner.name}, directories 0755, files 0644 (0755 when executable)`;
  const n = plural(entries, 'entry', 'entries');
  const left = foreign.length ? `; ${foreign.length} owned by another user left alone (e.g. ${foreign[0]})` : '';
  const leftFix = foreign.length ? `chown -R ${owner.name}: ${dir} if nothing else should own them, then run setup again` : null;
  if (dry && made.length) run.add(id, 'would', `create ${dir}, ${what}`);
  else if (!made.length && !chown && !chmod) run.add(id, foreign.length ? 'warn' : 'already', `${dir}: ${n}, ${what}${left}`, leftFix);
  else {
    const parts = [made.length ? `created ${made.join(', ')}` : '', chown ? `${dry ? 'hand' : 'handed'} ${chown} of ${probe?.name ?? 'the probe user'}'s to ${owner.name}` : '', chmod ? `${dry ? 'change' : 'changed'} the mode of ${chmod}` : ''].filter(Boolean);
    run.add(id, foreign.length ? 'warn' : dry ? 'would' : 'done', `${dir}: ${parts.join(', ')} (${n}): ${what}${left}`, leftFix);
  }
}

// ---- the HF cache

function hfSteps(fs: SetupFs, run: Run, r: Resolved, runner: Account, probe: Account | null, dry: boolean, fix: boolean): void {
  const hub = r.hubDir;
  if (!fs.lstat(hub)) run.add('hf-cache', 'skipped', `no HF hub cache at ${hub} (pass --hf-home)`);
  else {
    let entries = 0;
    const writable: string[] = [];
    const unreadable: string[] = [];
    const probeOwned: string[] = [];
    const foreign: string[] = [];
    const acts: (() => void)[] = [];
    walk(fs, realOr(hub), [], (p, st) => {
      if (st.kind !== 'dir' && st.kind !== 'file') return;
      entries++;
      const read = st.kind === 'dir' ? 0o005 : 0o004;
      let want = st.mode;
      if (st.mode & 0o022) { writable.push(p); want &= ~0o022; }
      if ((st.mode & read) !== read) { unreadable.push(p); want |= read; }
      const fromProbe = !!probe && st.uid === probe.uid;
      if (fromProbe) probeOwned.push(p);
      // Repaired: the runner's and the probe user's entries; root's and other users' are reported only.
      if (!fromProbe && st.uid !== runner.uid) {
        if (want !== st.mode) foreign.push(p);
        return;
      }
      if (want === st.mode && !fromProbe) return;
      acts.push(() => {
        try {
          if (fromProbe) fs.chown(p, runner.uid, runner.gid, st.uid);
          fs.chmod(p, want, runner.uid);
        } catch (e) { throw fsError(e, p, 'cannot repair'); }
      });
    });
    const n = plural(entries, 'entry', 'entries');
    const found = [
      writable.length ? `${writable.length} group/world-writable (e.g. ${writable[0]})` : '',
      unreadable.length ? `${unreadable.length} not readable by others (e.g. ${unreadable[0]})` : '',
      probeOwned.length ? `${probeOwned.length} owned by ${probe!.name} (e.g. ${probeOwned[0]})` : '',
    ].filter(Boolean).join('; ');
    const left = foreign.length ? `; ${foreign.length} of them owned by another user, left alone (e.g. ${foreign[0]})` : '';
    const leftFix = foreign.length ? `chown -R ${runner.name}: ${hub} if nothing else should own them, then run setup again` : null;
    if (!found) run.add('hf-cache', 'already', `${hub}: ${n}, readable by the probe user, writable only by their owners`);
    else if (!fix) run.add('hf-cache', 'warn', `${hub} (${n}): ${found}${left}`, `run setup again with --fix (chmod go-w, o+rX; chown ${probe?.name ?? 'the probe user'}'s to ${runner.name})${leftFix ? `; ${leftFix}` : ''}`);
    else if (dry) run.add('hf-cache', foreign.length ? 'warn' : 'would', `repair ${hub} (${n}): ${found}${left}`, leftFix);
    else if (!acts.length) run.add('hf-cache', 'warn', `${hub} (${n}): ${found}${left}`, leftFix);
    else { for (const a of acts) a(); run.add('hf-cache', foreign.length ? 'warn' : 'done', `repaired ${hub} (${n}): ${found}${left}`, leftFix); }
  }
  // huggingface-cli login stores the token in HF_HOME; the probe must not read it.
  const tokens = ['token', 'stored_tokens'].map((f) => join(r.hfHome, f)).map((p) => [p, fs.lstat(p)] as const)
    .filter((x): x is readonly [string, FileInfo] => x[1]?.kind === 'file');
  const open = tokens.filter(([, st]) => st.mode & 0o077);
  if (!tokens.length) run.add('hf-token', 'already', `no HF token stored in ${r.hfHome}`);
  else if (!open.length) run.add('hf-token', 'already', `${tokens.map(([p, st]) => `${p} (${octal(st.mode)})`).join(', ')}: only its owner reads it`);
  else {
    const list = open.map(([p, st]) => `${p} (mode ${octal(st.mode)})`).join(', ');
    const cmd = `chmod 600 ${open.map(([p]) => p).join(' ')}`;
    if (!fix) run.add('hf-token', 'warn', `${list}: the probe user can read the HF token`, `${cmd} (or run setup again with --fix)`);
    else if (dry) run.add('hf-token', 'would', `chmod 600 ${list}`);
    else {
      for (const [p, st] of open) { try { fs.chmod(p, st.mode & 0o700, st.uid); } catch (e) { throw fsError(e, p, 'cannot change the mode'); } }
      run.add('hf-token', 'done', `chmod 600 ${list}`);
    }
  }
}

// ---- the work dir

function workDirStep(fs: SetupFs, run: Run, r: Resolved, runner: Account, group: Group | null, dry: boolean): void {
  const dir = r.workDir;
  const why = 'what the runner creates below carries the group; not group-writable (the probe writes only its run\'s model dir and run dir)';
  let st = fs.lstat(dir);
  if (!group || (!st && dry)) {
    run.add('work-dir', 'would', `${st ? '' : 'create '}${dir}: owner ${runner.name}, group ${PROBE_GROUP}, setgid (${octal(0o2755)}): ${why}`);
    return;
  }
  let created = false;
  if (!st) {
    ensureDir(fs, dir, runner, false);
    created = true;
    st = fs.lstat(dir)!;
  }
  // Keep the owner's bits and others' read/search; no group or world write; setgid and group r-x.
  const want = ((st.mode & 0o755) | 0o2050) & ~0o022;
  const own = st.gid !== group.gid; // the owner is the runner (checked before any change)
  if (!created && !own && st.mode === want) {
    run.add('work-dir', 'already', `${dir}: owner ${runner.name}, group ${PROBE_GROUP}, setgid (${octal(st.mode)}): ${why}`);
    return;
  }
  const changes = [created ? 'created' : '', own ? `group ${PROBE_GROUP}` : '', st.mode !== want ? `mode ${octal(st.mode)} -> ${octal(want)}` : ''].filter(Boolean).join(', ');
  if (dry) { run.add('work-dir', 'would', `${dir}: ${changes}: ${why}`); return; }
  try {
    if (own) fs.chown(dir, runner.uid, group.gid, runner.uid);
    fs.chmod(dir, want, runner.uid); // after chown: chown clears setgid
  } catch (e) { throw fsError(e, dir, 'cannot set the group and mode'); }
  run.add('work-dir', 'done', `${dir}: ${changes}: ${why}`);
}

// ---- the runner's own files

function secretsStep(fs: SetupFs, run: Run, runnerDir: string, probe: Account | null, db: Db, dry: boolean, fix: boolean): void {
  const gids = probe ? db.gidsOf(probe) : [];
  const files = ['.credentials', '.credentials_rsaparams', '.env'].map((f) => join(runnerDir, f));
  const open: [string, FileInfo][] = [];
  for (const p of files) {
    const st = fs.lstat(p);
    if (st?.kind !== 'file') continue;
    if (st.mode & 0o004 || (st.mode & 0o040 && gids.includes(st.gid))) open.push([p, st]);
  }
  if (!open.length) { run.add('runner-secrets', 'already', `${runnerDir}: .credentials, .credentials_rsaparams and .env are not readable by the probe user`); return; }
  const list = open.map(([p, st]) => `${p} (mode ${octal(st.mode)})`).join(', ');
  if (!fix) run.add('runner-secrets', 'warn', `the probe user can read ${list}`, `chmod 600 ${open.map(([p]) => p).join(' ')} (or run setup again with --fix)`);
  else if (dry) run.add('runner-secrets', 'would', `chmod 600 ${list}`);
  else {
    for (const [p, st] of open) { try { fs.chmod(p, st.mode & 0o700, st.uid); } catch (e) { throw fsError(e, p, 'cannot change the mode'); } }
    run.add('runner-secrets', 'done', `chmod 600 ${list}`);
  }
}

// ---- search permission on the path

function canSearch(st: FileInfo, probe: Account | null, gids: number[]): boolean {
  if (probe && st.uid === probe.uid) return !!(st.mode & 0o100);
  if (gids.includes(st.gid)) return !!(st.mode & 0o010);
  return !!(st.mode & 0o001);
}

/** A home directory: o+x there would open it to every local user; the probe user gets an ACL entry instead. */
function isHome(d: string, r: Resolved): boolean {
  return d === r.runner.home || d === '/root' || /^\/home\/[^/]+$/.test(d);
}

/** The probe user may search `d` through an ACL entry (getfacl), which the mode bits do not show. */
function aclSearch(m: Machine, d: string, probe: string): boolean {
  const c = m.run('getfacl', ['--omit-header', '--absolute-names', d], 15_000);
  return c.status === 0 && new RegExp(`^user:${probe}:..x`, 'm').test(c.stdout);
}

function reachStep(m: Machine, fs: SetupFs, run: Run, r: Resolved, probe: Account | null, db: Db, dry: boolean, fix: boolean, python: string | null): void {
  const gids = probe ? db.gidsOf(probe) : [];
  const targets = [r.cacheDir, r.refDir, r.hubDir, r.workDir, python && isAbsolute(python) ? dirname(python) : null].filter((t): t is string => !!t && !!fs.lstat(t));
  const blockers = new Map<string, { st: FileInfo; for: string }>();
  for (const t of targets) {
    const real = realOr(t);
    const parts = real.split('/').filter(Boolean);
    for (let i = 0; i <= parts.length; i++) {
      const d = '/' + parts.slice(0, i).join('/');
      const st = fs.lstat(d);
      if (!st || st.kind !== 'dir') continue;
      if (!canSearch(st, probe, gids) && !blockers.has(d) && !aclSearch(m, d, r.probeName)) blockers.set(d, { st, for: t });
    }
  }
  if (!blockers.size) { run.add('reach', 'already', `${probe?.name ?? r.probeName} can search every directory on the way to ${targets.join(', ')}`); return; }
  const list = [...blockers].map(([d, b]) => `${d} (mode ${octal(b.st.mode)}, on the way to ${b.for})`).join('; ');
  // A home is opened to the probe user alone (an ACL entry, search only); other directories get o+x.
  const homes = [...blockers.keys()].filter((d) => isHome(d, r));
  const others = [...blockers.keys()].filter((d) => !isHome(d, r));
  const how = [
    homes.length ? `setfacl -m u:${r.probeName}:x ${homes.join(' ')} (the probe user alone, search only; never o+x on a home)` : '',
    others.length ? `chmod o+x ${others.join(' ')} (search only, no listing)` : '',
  ].filter(Boolean).join('; ');
  const outside = homes.length ? '; or keep the caches, the HF cache, the work dir and the Python outside the home' : '';
  if (!fix) run.add('reach', 'warn', `${r.probeName} cannot search ${list}`, `${how}${outside}; or run setup again with --fix`);
  else if (dry) run.add('reach', 'would', `${how}: ${list}`);
  else {
    if (homes.length) {
      const c = runSbin(m, 'setfacl', ['-m', `u:${r.probeName}:x`, ...homes], 30_000);
      if (c.status !== 0) {
        run.add('reach', 'warn', `${r.probeName} cannot search ${list}; setfacl: ${c.missing ? 'not installed (apt install acl)' : why(c)}`, `setfacl -m u:${r.probeName}:x ${homes.join(' ')}${outside}`);
        return;
      }
    }
    for (const d of others) { const b = blockers.get(d)!; try { fs.chmod(d, b.st.mode | 0o001, b.st.uid); } catch (e) { throw fsError(e, d, 'cannot change the mode'); } }
    run.add('reach', 'done', `${how}: ${list}`);
  }
}

// ---- the probe's Python

function pythonStep(m: Machine, fs: SetupFs, run: Run, r: Resolved, probe: Account | null, db: Db, dry: boolean, uid: number, pending: boolean, python: string | null): void {
  if (!python) {
    run.add('python', 'skipped', `no --python: pass the Python the Action uses (its python input, or NPU_BLOCK_GATE_PYTHON) to check that ${r.probeName} can import numpy with it`);
    return;
  }
  const check = `${python} -c "import numpy"`;
  if (!probe || uid !== 0 || pending) {
    run.add('python', dry ? 'would' : 'skipped', `check that ${r.probeName} can run ${check}${uid !== 0 ? ' (needs root)' : ''}`);
    return;
  }
  const args = ['--reuid', probe.name, '--regid', String(probe.gid), '--init-groups', '--', python, '-c', 'import numpy'];
  let c = runSbin(m, 'setpriv', args, 120_000);
  if (c.missing) c = m.run('sudo', ['-n', '-u', probe.name, '--', python, '-c', 'import numpy'], 120_000);
  if (c.status === 0) { run.add('python', 'already', `${probe.name} can run ${check}`); return; }
  // Why not: numpy missing from that Python, a directory on the way it cannot search, else files
  // only the owner reads. Never a recursive chmod: the environment belongs somewhere others may read.
  const gids = db.gidsOf(probe);
  const fixes: string[] = [];
  if (/No module named '?numpy/.test(`${c.stderr}\n${c.stdout}`)) fixes.push(`install numpy into that environment (${python} -m pip install numpy)`);
  else if (isAbsolute(python)) {
    const parts = realOr(dirname(python)).split('/').filter(Boolean);
    const blocked: string[] = [];
    for (let i = 0; i <= parts.length; i++) {
      const d = '/' + parts.slice(0, i).join('/');
      const st = fs.lstat(d);
      if (st?.kind === 'dir' && !canSearch(st, probe, gids) && !aclSearch(m, d, probe.name)) blocked.push(d);
    }
    const homes = blocked.filter((d) => isHome(d, r));
    if (homes.length) fixes.push(`setfacl -m u:${probe.name}:x ${homes.join(' ')} (search only), or install the environment outside the home (e.g. /opt/mlir-air)`);
    if (blocked.length > homes.length) fixes.push(`chmod o+x ${blocked.filter((d) => !isHome(d, r)).join(' ')} (search only)`);
    if (!blocked.length) fixes.push(`install the environment where others may read it (as pip and venv make it: files 0644, dirs 0755)`);
  }
  fixes.push(`or point --python (and the Action's python input) at a Python ${probe.name} can read, with numpy`);
  run.add('python', 'fail', `${probe.name} cannot run ${check}: ${why(c)}`, fixes.join('; '));
}

// ---- the probe's sandbox

/**
 * The probe runs inside bubblewrap (src/probe/sandbox.ts). A root runner starts it itself; any
 * other runner's probe user starts it in a user namespace, which Ubuntu 23.10 and later restrict
 * through AppArmor. Without it, pull requests are refused and trusted runs warned.
 */
function sandboxStep(m: Machine, run: Run, r: Resolved, runner: Account, probe: Account | null, uid: number, pending: boolean): void {
  if (!m.has('bwrap', ['/usr/bin/bwrap', '/bin/bwrap'])) {
    run.add('sandbox', 'warn', 'bubblewrap is not installed: the probe would run as the probe user without its sandbox (pull requests refused, trusted runs warned)', 'apt install bubblewrap');
    return;
  }
  const test = ['--unshare-pid', '--unshare-net', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true'];
  const as = runner.uid === 0 ? 'root (the runner)' : r.probeName;
  if (!probe || uid !== 0 || pending) { run.add('sandbox', 'skipped', `check that ${as} can start bubblewrap${uid !== 0 ? ' (needs root)' : ''}`); return; }
  // Root needs no user namespace; the probe user does.
  const c = runner.uid === 0
    ? m.run('bwrap', test, 30_000)
    : runSbin(m, 'setpriv', ['--reuid', probe.name, '--regid', String(probe.gid), '--init-groups', '--', 'bwrap', '--unshare-user', ...test], 30_000);
  if (c.status === 0) { run.add('sandbox', 'already', `${as} can start bubblewrap${runner.uid === 0 ? '' : ' in a user namespace'}: the probe runs in its sandbox`); return; }
  const apparmor = (m.read('/proc/sys/kernel/apparmor_restrict_unprivileged_userns') ?? '').trim() === '1';
  const max = (m.read('/proc/sys/user/max_user_namespaces') ?? '').trim() === '0';
  const cause = apparmor ? 'unprivileged user namespaces are restricted by AppArmor (kernel.apparmor_restrict_unprivileged_userns=1)'
    : max ? 'user namespaces are off (user.max_user_namespaces=0)' : why(c);
  const fix = apparmor
    ? 'an AppArmor profile for /usr/bin/bwrap with the userns rule (/etc/apparmor.d/bwrap, docs/action.md section 2; apparmor_parser -r it), or sysctl kernel.apparmor_restrict_unprivileged_userns=0'
    : max ? 'sysctl user.max_user_namespaces=15000 (and in /etc/sysctl.d)' : `run bwrap${runner.uid === 0 ? '' : ' --unshare-user'} ${test.join(' ')} as ${as} to see why`;
  run.add('sandbox', 'warn', `${as} cannot start bubblewrap: ${cause}; until then pull requests are refused and trusted runs go without the sandbox`, fix);
}

// ---- the checkouts' git dirs

/**
 * actions/checkout keeps the job's token in a checkout's .git/config unless the workflow sets
 * persist-credentials: false, and the work dir's group (shared with the probe user) would let the
 * probe user read it. Every checkout's git dir under the work dir (<work>/<repo>/<repo>/.git) is
 * closed to group and others; the Action closes its own again before each uid-mode run.
 */
function checkoutsStep(fs: SetupFs, run: Run, r: Resolved, runner: Account, dry: boolean): void {
  const open: [string, FileInfo][] = [];
  const foreign: string[] = [];
  for (const repo of fs.readdir(r.workDir) ?? []) {
    if (repo.startsWith('_')) continue; // _temp, _actions, _tool: the runner's own
    for (const name of fs.readdir(join(r.workDir, repo)) ?? []) {
      const g = join(r.workDir, repo, name, '.git');
      const st = fs.lstat(g);
      if (st?.kind !== 'dir' || !(st.mode & 0o077)) continue;
      if (st.uid !== runner.uid) { foreign.push(g); continue; }
      open.push([g, st]);
    }
  }
  const left = foreign.length ? `; ${foreign.length} of another owner left alone (e.g. ${foreign[0]})` : '';
  if (!open.length) { run.add('checkouts', foreign.length ? 'warn' : 'already', `the checkouts' git dirs under ${r.workDir} are closed to group and others${left}`, foreign.length ? `chmod go-rwx ${foreign.join(' ')}` : null); return; }
  const list = open.map(([p, st]) => `${p} (mode ${octal(st.mode)})`).join(', ');
  if (dry) { run.add('checkouts', 'would', `chmod go-rwx ${list} (a persisted token in .git/config)${left}`); return; }
  for (const [p, st] of open) { try { fs.chmod(p, st.mode & 0o7700, st.uid); } catch (e) { throw fsError(e, p, 'cannot change the mode'); } }
  run.add('checkouts', foreign.length ? 'warn' : 'done', `chmod go-rwx ${list} (a persisted token in .git/config is the owner's alone)${left}`, foreign.length ? `chmod go-rwx ${foreign.join(' ')}` : null);
}

// ---- output

const LABEL: Record<StepStatus, string> = { done: 'done', already: 'already', would: 'would', skipped: 'skipped', warn: 'WARN', fail: 'FAIL' };

export function setupHeader(root: string, dry: boolean): string {
  return `npu-block-gate agent setup${root === '/' ? '' : ` (root ${root})`}${dry ? ' (dry run: nothing changes)' : ''}\n`;
}

/** One line per step. */
export function renderStep(s: Step): string {
  return `  ${LABEL[s.status].padEnd(8)} ${s.id.padEnd(15)} ${s.detail}${s.fix ? `; fix: ${s.fix}` : ''}\n`;
}

export function renderSummary(r: SetupResult): string {
  const warn = r.steps.filter((s) => s.status === 'warn').length;
  const fail = r.steps.filter((s) => s.status === 'fail').map((s) => s.id);
  const would = r.steps.filter((s) => s.status === 'would').length;
  const tail = `${warn ? `; ${plural(warn, 'warning')}` : ''}${fail.length ? `; failed: ${fail.join(', ')} (exit 3)` : ''}`;
  if (r.dry_run) return `dry run: ${would ? `${plural(would, 'step')} would change something` : 'nothing would change'}${tail}\n`;
  if (!r.changed) return `nothing to change: already set up for ${r.probe_user}${tail}\n`;
  return `${plural(r.changed, 'change')} made; the runner starts the probe as ${r.probe_user}${tail}\n`;
}
