// Keeping the probe away from us (DESIGN.md "Trust"). The probe imports the model tree's own
// Python: in a pull request, code nobody reviewed, on a persistent self-hosted runner. It must not
// read this process (its environment holds the tokens: /proc/<pid>/environ), the runner's files
// (its .credentials, the file-command files, .git/config), the runner user's home, nor write
// anything a later trusted run reads (the kernel and reference caches, the HF hub cache), nor leave
// a process behind.
//
// Modes, strongest first:
//  - uid: the probe runs as a separate user set up by `npu-block-gate agent setup`, inside the
//    bubblewrap sandbox (sandbox.ts). As root: bubblewrap first, then setpriv drops to the probe
//    user with every capability gone. Otherwise: sudo -n to the probe user, who starts bubblewrap in
//    a user namespace. Where the probe user cannot (Ubuntu 24.04 restricts unprivileged user
//    namespaces through AppArmor), the run is degraded: untrusted events are refused with the fix,
//    trusted ones warned, and every process of the probe user is ended by uid before and after.
//  - namespace: the bubblewrap sandbox as the runner user, always in a user namespace with every
//    capability dropped. As root: bubblewrap without a user namespace, then setpriv drops to nobody
//    (65534), so the probe's host uid is never 0 (a user namespace would map it onto root's).
//  - none: same uid, in a PID namespace where one can be had (so nothing outlives the run). Refused
//    for untrusted events unless the admin opted in (allow-unisolated: true, documented as unsafe).
// Every mode is chosen by running its real command line on a no-op command first.
import { hubCacheOf } from './env.ts';
import { spawnSync } from 'node:child_process';
import { closeSync, constants, existsSync, fchmodSync, lstatSync, openSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { InfraError, InputError } from '../errors.ts';
import { NPU_LOCK } from '../contract.ts';
import { sandboxArgs, type SandboxSpec, type SandboxView } from './sandbox.ts';
import { failedNamespace } from './namespaces.ts';

type IsolationMode = 'uid' | 'namespace' | 'none';

export interface IsolationRequest {
  /** 'auto': the strongest the machine offers. */
  mode: 'auto' | IsolationMode;
  /** The probe runs code from an untrusted event (a pull request): no isolation is refused. */
  untrusted: boolean;
  /** The admin accepts running untrusted code unisolated (unsafe; documented). */
  allowUnisolated: boolean;
  /** uid mode: the user the probe runs as (default $NPU_BLOCK_GATE_PROBE_USER, else the agent's setup file). */
  user?: string | null;
}

/** What a run used, for the log and the report. */
export interface Isolation {
  mode: IsolationMode;
  /** e.g. "bubblewrap: user+pid+mount+net namespaces, ..." or "uid npu-probe (setpriv) in bubblewrap: ...". */
  detail: string;
  /** The run has less than its mode promises (uid mode without its sandbox): why, and the fix. The record warns. */
  degraded: string | null;
  /** The probe runs in a PID namespace: everything it starts ends with it. */
  pidNamespace: boolean;
  /** Wraps the probe's argv. */
  wrap: (argv: string[], ctx: WrapContext) => string[];
  /** uid mode without a PID namespace: ends every process of the probe user; throws when one survives. */
  sweep: (() => void) | null;
  /** What was tried first and could not be had (mode none: why the run is unisolated). */
  unavailable?: string[];
  /** The host uid and gid the probe runs as, when it is not this process's own (uid mode; a root
   * runner's namespace mode, nobody): the dirs it writes are made its own, or shared through a group. */
  probeOwner?: { uid: number; gid: number; user: string } | null;
  /** How this process gives the probe user a dir it made: 'chown' (this process is root), or
   * 'group' (sudo: a group both users are in, this gid). */
  share?: { how: 'chown' } | { how: 'group'; gid: number } | null;
  /** A command prefix that runs a command as the probe user outside the sandbox (sudo mode: what the
   * probe left is removed through it); null when this process can remove it itself. */
  asProbe?: string[] | null;
}

export interface WrapContext {
  /** Directories the probe must write, at their own paths: the run's staging dirs. */
  writable: string[];
  /** Directories the probe writes seen at another path: the model dir's private copy, where the model dir is. */
  mounts?: { src: string; dest: string }[];
  /** Directories it must read even if they sit under a hidden one: the tree, the probe, the Python. */
  readable?: string[];
  /** The environment the probe runs with (the allow-list); handed over explicitly where a wrapper (sudo) would drop it. */
  probeEnv?: NodeJS.ProcessEnv;
  /** The runner's environment: what to hide is found from it. */
  env: NodeJS.ProcessEnv;
  /** Allow network (HF --online). */
  network: boolean;
  /** The probe's working directory (default: the last writable dir, the run dir). */
  cwd?: string;
}

/** Command lookup, probing and process listing, injected so tests can pretend a tool is missing. */
export interface IsolationHost {
  which: (cmd: string) => string | null;
  /** Runs a command (quick feature probe); true when it exits 0. */
  works: (argv: string[]) => boolean;
  uid: () => number;
  /** The uid of a user, or null when there is no such user. */
  uidOf: (user: string) => number | null;
  /** The primary group id of a user, or null when there is no such user. */
  gidOf: (user: string) => number | null;
  /** Every group id of a user (id -G), or [] when there is no such user. */
  groupsOf?: (user: string) => number[];
  /** This process's group ids (primary and supplementary). */
  myGroups?: () => number[];
  env: NodeJS.ProcessEnv;
  /** A file's text, or null when it cannot be read (the agent's setup file). */
  readFile: (path: string) => string | null;
  /** The file system as the sandbox builder sees it. */
  view: SandboxView;
  /** The runner user's home from the password database (beside $HOME). */
  home: string | null;
  /** This process's executable (under the runner's root on a runner). */
  self: string | null;
  /** The NPU lock files to share with the probe (created when missing). */
  lockFiles: (env: NodeJS.ProcessEnv) => string[];
  /** Pids of the live (not zombie) processes running as a uid. */
  processesOf: (uid: number) => number[];
  sleep: (ms: number) => void;
}

export const realView: SandboxView = {
  exists: (p) => existsSync(p),
  isDir: (p) => { try { return statSync(p).isDirectory(); } catch { return false; } },
  realpath: (p) => { try { return realpathSync(p); } catch { return resolve(p); } },
  list: (d) => { try { return readdirSync(d).sort(); } catch { return null; } },
  readText: (p) => { try { return readFileSync(p, 'utf8').slice(0, 4096); } catch { return null; } },
};

function idOf(flag: '-u' | '-g', user: string): number | null {
  const r = spawnSync('id', [flag, user], { encoding: 'utf8', timeout: 5000 });
  const n = Number(r.stdout?.trim());
  return r.status === 0 && r.stdout?.trim() !== '' && Number.isInteger(n) ? n : null;
}

export const realHost: IsolationHost = {
  which: (cmd) => {
    for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
      const p = join(dir, cmd);
      try { if (statSync(p).isFile()) return p; } catch { /* next */ }
    }
    return null;
  },
  works: (argv) => {
    const r = spawnSync(argv[0], argv.slice(1), { stdio: 'ignore', timeout: 20_000 });
    return r.status === 0;
  },
  uid: () => (typeof process.getuid === 'function' ? process.getuid() : -1),
  uidOf: (user) => idOf('-u', user),
  gidOf: (user) => idOf('-g', user),
  groupsOf: (user) => {
    const r = spawnSync('id', ['-G', user], { encoding: 'utf8', timeout: 5000 });
    return r.status === 0 ? r.stdout.trim().split(/\s+/).map(Number).filter(Number.isInteger) : [];
  },
  myGroups: () => [...new Set([process.getgid?.() ?? -1, ...(process.getgroups?.() ?? [])])].filter((g) => g >= 0),
  env: process.env,
  readFile: (path) => {
    try { return readFileSync(path, 'utf8'); } catch { return null; }
  },
  view: realView,
  home: (() => { try { return userInfo().homedir || null; } catch { return null; } })(),
  self: process.execPath,
  lockFiles: (env) => lockFiles(env),
  processesOf: (uid) => processesOf(uid),
  sleep: (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms),
};

/** The file `npu-block-gate agent setup` writes: the probe user's name. */
export const SETUP_FILE = '/etc/npu-block-gate/probe-user';

/** The user the setup file names: its first line that is not blank or a # comment; null when none. */
export function parseSetupFile(text: string | null): string | null {
  for (const line of (text ?? '').split(/\r?\n/)) {
    const t = line.trim();
    if (t && !t.startsWith('#')) return t;
  }
  return null;
}

/** The probe user: the request's, else $NPU_BLOCK_GATE_PROBE_USER, else the one `agent setup` recorded. */
function probeUser(req: IsolationRequest, host: IsolationHost): string | null {
  return req.user || host.env.NPU_BLOCK_GATE_PROBE_USER || parseSetupFile(host.readFile(SETUP_FILE));
}

/** The uid a root runner's sandbox runs as when there is no probe user: nobody, inside and outside. */
export const SANDBOX_UID = 65534;

/** What to do where unprivileged user namespaces are restricted (Ubuntu 23.10 and later). */
export const APPARMOR_FIX = 'allow user namespaces for bubblewrap: an AppArmor profile for /usr/bin/bwrap with the userns rule (docs/action.md section 2), or sysctl kernel.apparmor_restrict_unprivileged_userns=0';

/**
 * The NPU lock files the probe must share with the host: the skills' flock (ours) and the one
 * KernelCache.load_and_run takes itself. Created (0666) when missing, never through a symlink
 * (they sit in /tmp, where anyone can plant one); a link or a non-file there is left out.
 */
export function lockFiles(env: NodeJS.ProcessEnv): string[] {
  const configured = env[NPU_LOCK.env]?.trim();
  const paths = [configured && configured.toLowerCase() !== 'none' ? configured : configured ? null : NPU_LOCK.path, '/tmp/npu.lock'];
  const out: string[] = [];
  for (const p of paths) {
    if (!p) continue;
    try {
      let st = lstatSync(p, { throwIfNoEntry: false });
      if (!st) {
        const fd = openSync(p, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o666);
        try { fchmodSync(fd, 0o666); } finally { closeSync(fd); }
        st = lstatSync(p);
      }
      if (st.isFile()) out.push(realpathSync(p));
    } catch {
      // not creatable here: the probe's lock wait will say so
    }
  }
  return out;
}

/** Pids of the live processes whose real or effective uid is `uid` (from /proc/<pid>/status). */
export function processesOf(uid: number, proc = '/proc'): number[] {
  const out: number[] = [];
  let entries: string[];
  try { entries = readdirSync(proc); } catch { return out; }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    let status: string;
    try { status = readFileSync(join(proc, e, 'status'), 'utf8'); } catch { continue; }
    if (/^State:\s*[ZX]/m.test(status)) continue;
    const ids = /^Uid:\s*(\d+)\s+(\d+)/m.exec(status);
    if (ids && (Number(ids[1]) === uid || Number(ids[2]) === uid)) out.push(Number(e));
  }
  return out;
}

/** Ends every process of the probe user (kill -9 -1 as that user); throws when one is still there. */
function uidSweeper(host: IsolationHost, user: string, uid: number, asUser: string[]): () => void {
  const kill = host.which('kill') ?? '/bin/kill';
  return () => {
    for (let round = 0; round < 6; round++) {
      if (!host.processesOf(uid).length) return;
      host.works([...asUser, kill, '-9', '--', '-1']);
      host.sleep(50 * (round + 1));
    }
    const left = host.processesOf(uid);
    if (left.length) throw new InfraError(`processes of the probe user ${user} (uid ${uid}) cannot be ended (pids ${left.slice(0, 8).join(', ')}); refusing to run the probe beside them`);
  };
}

const FEATURE_CTX = (env: NodeJS.ProcessEnv): WrapContext => ({ writable: [], readable: [], env, network: false, cwd: '/' });

/** Picks the isolation for this run; throws when an untrusted run would go unisolated. The feature
 * tests run the real command line (for `ctx`, the run's own dirs) on a no-op command. */
export function chooseIsolation(req: IsolationRequest, host: IsolationHost = realHost, ctx?: WrapContext): Isolation {
  const tried: string[] = [];
  const want = req.mode;
  const root = host.uid() === 0;
  const bwrap = want === 'none' ? null : host.which('bwrap');
  const noop = host.which('true') ?? '/bin/true';
  const test = ctx ?? FEATURE_CTX(host.env);
  const spec = (c: WrapContext, o: Pick<SandboxSpec, 'userns' | 'capDrop' | 'root' | 'canRead'>): SandboxSpec => ({
    bwrap: bwrap!, ...o, writable: c.writable, mounts: c.mounts ?? [], readable: c.readable ?? [], lockFiles: host.lockFiles(c.env), env: c.env,
    home: host.home, self: host.self, network: c.network, cwd: c.cwd ?? c.writable[c.writable.length - 1] ?? '/',
  });
  /** The sandbox with these options, if its real command line runs `probe` (default: a no-op) here; null otherwise. */
  const sandbox = (o: Pick<SandboxSpec, 'userns' | 'capDrop' | 'root' | 'canRead'>, before: (c: WrapContext) => string[] = () => [], after: string[] = [], probe: string[] = [noop]) => {
    // --disable-userns (bubblewrap 0.8+) keeps the probe from nesting namespaces of its own; an older
    // bubblewrap without it still isolates.
    const variants = o.userns ? [{ ...o, userns: { ...o.userns, disableNested: true } }, { ...o, userns: { ...o.userns, disableNested: false } }] : [o];
    for (const v of variants) {
      const wrap = (argv: string[], c: WrapContext) => [...before(c), ...sandboxArgs(spec(c, v), host.view).args, ...after, ...argv];
      if (host.works(wrap(probe, test))) return wrap;
    }
    return null;
  };
  let degraded: Isolation | null = null;
  /** Why the sandbox did not start: the namespace the kernel refused (issue 25), `userFix` after a refused user namespace. */
  const notStarted = (asRoot: boolean, userFix: string): string => {
    const failed = failedNamespace((a) => host.works(a), bwrap!, noop, { root: asRoot, network: test.network, uid: null });
    if (!failed) return 'bubblewrap: its sandbox does not start here, though each of its namespaces does (a dir it cannot bind?)';
    return `bubblewrap: cannot create ${failed} here${failed === 'a user namespace' ? userFix : ''}`;
  };

  if (want === 'auto' || want === 'uid') {
    const user = probeUser(req, host);
    if (user) {
      if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(user)) throw new InputError(`probe user ${JSON.stringify(user)} is not a user name`);
      const uid = host.uidOf(user);
      const gid = host.gidOf(user);
      const setpriv = root ? host.which('setpriv') : null;
      const sudo = root ? null : host.which('sudo');
      if (uid === null || gid === null) tried.push(`uid ${user}: no such user (create it with \`npu-block-gate agent setup\`)`);
      else if (uid === 0) throw new InputError(`probe user ${user} has uid 0: it isolates nothing; set up another with \`npu-block-gate agent setup\``);
      else if (root && setpriv) {
        // As root: the sandbox first (root needs no user namespace for it), then the probe user
        // with no capability left and no way to gain one.
        const drop = [setpriv, '--reuid', String(uid), '--regid', String(gid), '--init-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--'];
        const inBwrap = bwrap ? sandbox({ userns: null, capDrop: false, root: true }, () => [], drop) : null;
        const owned = { probeOwner: { uid, gid, user }, share: { how: 'chown' as const }, asProbe: null };
        if (inBwrap) return { mode: 'uid', detail: `uid ${user} (setpriv) in bubblewrap: pid+mount+ipc+net namespaces, private /proc, /dev and /tmp, homes and runner files hidden, no capabilities`, degraded: null, pidNamespace: true, wrap: inBwrap, sweep: null, ...owned };
        const why = bwrap ? 'bubblewrap cannot create its namespaces here' : 'bubblewrap is not installed (apt install bubblewrap)';
        const unshare = host.which('unshare');
        const pidns = unshare ? [unshare, '--pid', '--fork', '--kill-child', '--mount-proc', '--'] : null;
        const withPid = pidns && host.works([...pidns, ...drop, noop]) ? pidns : [];
        degraded = {
          mode: 'uid', detail: `uid ${user} (setpriv)${withPid.length ? ' in a PID namespace' : ''}, without its sandbox: ${why}`,
          degraded: `the probe user runs without its sandbox (${why}): the runner's files are hidden only by their permissions`,
          pidNamespace: withPid.length > 0, wrap: (argv) => [...withPid, ...drop, ...argv],
          sweep: uidSweeper(host, user, uid, [setpriv, '--reuid', String(uid), '--regid', String(gid), '--clear-groups', '--']), ...owned,
        };
      } else if (sudo && host.works([sudo, '-n', '-u', user, '--', noop])) {
        // sudo passes no environment (no SETENV in the rule): the probe's allow-listed one is handed
        // over through env -i, and the probe user starts the sandbox itself, in a user namespace.
        const asUser = [sudo, '-n', '-u', user, '--'];
        // The dirs the probe writes are this process's, shared through a group both users are in
        // (agent setup puts both in its group); without one the probe could write nothing.
        const mine = host.myGroups?.() ?? [];
        const common = (host.groupsOf?.(user) ?? [gid]).filter((g) => mine.includes(g));
        const shared = { probeOwner: { uid, gid, user }, share: common.length ? { how: 'group' as const, gid: common[0] } : null, asProbe: asUser };
        const envArgs = (c: WrapContext) => [host.which('env') ?? '/usr/bin/env', '-i', ...Object.entries(c.probeEnv ?? {}).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`)];
        // bubblewrap starts as the probe user, so every dir it binds must be one that user can read:
        // the runner user's HF hub cache (often in a home the probe user cannot pass) is left out then.
        const testCmd = host.which('test') ?? '/usr/bin/test';
        // Asked once per dir: the builder asks again on every wrap (each probe, bisect and placer run).
        const readable = new Map<string, boolean>();
        const canRead = (d: string) => readable.get(d) ?? readable.set(d, host.works([...asUser, testCmd, '-r', d, '-a', '-x', d])).get(d)!;
        const hub = hubCacheOf(host.env, host.home);
        const hubNote = hub && host.view.isDir(hub) && !canRead(hub) ? `; the HF hub cache ${hub} is not readable by ${user}, so the probe runs without it (make it group-readable, or set HF_HUB_CACHE to a shared one)` : '';
        const nested = bwrap ? sandbox({ userns: { uid: null, gid: null, disableNested: true }, capDrop: true, root: false, canRead }, (c) => [...asUser, ...envArgs(c)]) : null;
        if (nested) return { mode: 'uid', detail: `uid ${user} (sudo -n) + bubblewrap: user+pid+mount+ipc+net namespaces, private /proc, /dev and /tmp, homes and runner files hidden, no capabilities${hubNote}`, degraded: null, pidNamespace: true, wrap: nested, sweep: null, ...shared };
        // Which of the two failed: bubblewrap itself (user namespaces restricted), or the binds (a dir the probe user cannot read).
        const bare = bwrap && host.works([...asUser, bwrap, '--unshare-user', '--ro-bind', '/', '/', noop]);
        const why = !bwrap ? 'bubblewrap is not installed (apt install bubblewrap)'
          : bare ? `bubblewrap runs as the probe user, but not with the dirs the probe needs bound (one the probe user cannot read: the tree, the run dir, the Python?)`
            : `the probe user cannot start bubblewrap (unprivileged user namespaces are restricted here: ${APPARMOR_FIX})`;
        degraded = {
          mode: 'uid', detail: `uid ${user} (sudo -n), without its sandbox: ${why}`,
          degraded: `the probe user runs without its sandbox: ${why}`,
          pidNamespace: false, wrap: (argv, c) => [...asUser, ...envArgs(c), ...argv],
          sweep: uidSweeper(host, user, uid, asUser), ...shared,
        };
      } else tried.push(`uid ${user}: cannot switch to it (${root ? 'setpriv is missing' : 'no sudoers rule: run `npu-block-gate agent setup`'})`);
    } else if (want === 'uid') tried.push('uid: no probe user configured (NPU_BLOCK_GATE_PROBE_USER, or `npu-block-gate agent setup`)');
  }

  if ((want === 'auto' || want === 'namespace') && bwrap && root) {
    // As root, a user namespace maps the sandbox's uid onto root's outside it: the pull request's
    // code would own every root-owned file the sandbox does not hide. So the probe's host uid is
    // never 0: bubblewrap runs as root (it needs no user namespace), then setpriv drops to nobody
    // (uid and gid 65534 outside as well as inside) with no supplementary group, no capability and
    // no way to gain one. What it writes is in dirs this process made its own.
    const setpriv = host.which('setpriv');
    if (setpriv) {
      const id = String(SANDBOX_UID);
      const drop = [setpriv, '--reuid', id, '--regid', id, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--'];
      // Nobody must be able to read what the probe reads (the tree, the reference cache), as the
      // sandbox shows them: a checkout is, a dir made 0700 by mktemp is not. That check is the
      // feature test itself (one bubblewrap start, issue 30); only when it fails does a no-op tell a
      // sandbox that does not start here from dirs nobody can read.
      const dirs = test.readable ?? [];
      const opts = { userns: null, capDrop: false, root: true };
      const canRead = dirs.length ? sandbox(opts, () => [], drop, ['/bin/sh', '-c', 'for d do test -r "$d" && test -x "$d" || exit 1; done', 'sh', ...dirs]) : null;
      const ns = canRead ?? sandbox(opts, () => [], drop);
      if (ns && (canRead || !dirs.length)) {
        return {
          mode: 'namespace', detail: `bubblewrap: pid+mount+ipc+net namespaces, uid ${SANDBOX_UID} (nobody) inside and outside (setpriv), no capabilities, private /proc, /dev and /tmp, read-only root, homes, runner files and .git hidden`,
          degraded: null, pidNamespace: true, wrap: ns, sweep: null,
          probeOwner: { uid: SANDBOX_UID, gid: SANDBOX_UID, user: 'nobody' }, share: { how: 'chown' }, asProbe: null,
        };
      }
      // Which of them (a start per dir, only now that one failed): the line names those, not all.
      const culprits = ns && dirs.length > 1 ? dirs.filter((d) => !sandbox(opts, () => [], drop, ['/bin/sh', '-c', 'test -r "$1" && test -x "$1"', 'sh', d])) : dirs;
      const named = culprits.length ? culprits : dirs;
      const unreadable = `uid ${SANDBOX_UID} (nobody) cannot read ${named.join(' and ')}: make ${named.length > 1 ? 'them' : 'it'} readable by others (chmod -R o+rX), or set up a probe user (\`npu-block-gate agent setup\`)`;
      if (ns && !req.untrusted) {
        // A trusted run (the repository's own code) may still run as root's uid in a user namespace, said so.
        const userns = sandbox({ userns: { uid: SANDBOX_UID, gid: SANDBOX_UID, disableNested: true }, capDrop: true, root: true });
        if (userns) {
          return {
            mode: 'namespace', detail: `bubblewrap: user+pid+mount+ipc+net namespaces, uid ${SANDBOX_UID} inside but root's outside (trusted run; ${unreadable}), no capabilities, private /proc, /dev and /tmp, read-only root, homes, runner files and .git hidden`,
            degraded: null, pidNamespace: true, wrap: userns, sweep: null,
          };
        }
      }
      tried.push(ns ? unreadable : notStarted(true, ''));
    } else tried.push(`setpriv (util-linux) is missing: as root the sandbox must drop to uid ${SANDBOX_UID} outside it, never run as root (apt install util-linux)`);
  } else if ((want === 'auto' || want === 'namespace') && bwrap) {
    // Always a user namespace with every capability dropped.
    let ns = sandbox({ userns: { uid: null, gid: null, disableNested: true }, capDrop: true, root: false });
    let how = 'user+pid+mount+ipc+net namespaces';
    // A setuid bubblewrap without user namespaces still isolates an unprivileged runner.
    if (!ns) { ns = sandbox({ userns: null, capDrop: true, root: false }); how = 'pid+mount+ipc+net namespaces'; }
    if (ns) {
      return {
        mode: 'namespace', detail: `bubblewrap: ${how}, no capabilities, private /proc, /dev and /tmp, read-only root, homes, runner files and .git hidden`,
        degraded: null, pidNamespace: true, wrap: ns, sweep: null,
      };
    }
    tried.push(notStarted(false, ` (${APPARMOR_FIX})`));
  } else if (want === 'auto' || want === 'namespace') tried.push('bubblewrap: not installed (apt install bubblewrap)');

  if (degraded) {
    if (req.untrusted && !req.allowUnisolated) {
      throw new InfraError(`refusing to run an untrusted event's model code: ${degraded.degraded} (or set allow-unisolated: true, unsafe)`);
    }
    return req.untrusted ? { ...degraded, detail: `${degraded.detail}; UNSAFE: allow-unisolated` } : degraded;
  }

  if (want === 'none' || want === 'auto') {
    if (req.untrusted && !req.allowUnisolated) {
      throw new InfraError(`refusing to run an untrusted event's model code without isolation (${tried.join('; ') || 'isolation: none was asked for'}); set up the probe user with \`npu-block-gate agent setup\`, install bubblewrap, or set allow-unisolated: true (unsafe: the code can read this job's tokens)`);
    }
    // No isolation, but a PID namespace where one can be had: nothing the probe starts outlives it.
    const unshare = host.which('unshare');
    // --mount-proc: a /proc of its own, so the PIDs the probe sees and /proc agree.
    const pidns = unshare ? [unshare, ...(root ? [] : ['--map-current-user']), '--pid', '--fork', '--kill-child', '--mount-proc', '--'] : null;
    const pid = pidns && host.works([...pidns, noop]) ? pidns : null;
    const notes = [...tried, pid ? 'in a PID namespace' : 'no PID namespace: a process that leaves the probe\'s tree may outlive it'];
    return {
      mode: 'none', detail: `none (${notes.join('; ')})${req.untrusted ? '; UNSAFE: allow-unisolated' : ''}`,
      degraded: null, pidNamespace: !!pid, wrap: (argv) => [...(pid ?? []), ...argv], sweep: null, unavailable: tried,
    };
  }
  throw new InfraError(`isolation ${want} is not available here: ${tried.join('; ')}`);
}
