// Keeping the probe away from us (DESIGN.md "Trust"). The probe imports the model tree's own
// Python: in a pull request, code nobody reviewed, on a persistent self-hosted runner. It must not
// read this process (its environment holds the tokens: /proc/<pid>/environ), the runner's files
// (its .credentials, the file-command files, .git/config), nor write anything a later trusted run
// reads (the kernel and reference caches, the HF hub cache).
//
// Modes, strongest first:
//  - uid: the probe runs as a separate user set up by `npu-block-gate agent setup` (read-only access
//    to the caches and HF cache; /proc of another uid is unreadable), via setpriv as root, else sudo -n.
//  - namespace: bubblewrap with new (user,) PID, mount and network namespaces, a private /proc, the
//    whole file system read-only except the model dir, the run dir and /tmp, and the runner's own
//    dir, .git and the runner temp dir hidden. (util-linux unshare alone is not enough: it cannot
//    hide .git/config or make the caches read-only, so it does not count.)
//  - none: same process tree, same uid. Refused for untrusted events unless the admin opted in
//    (allow-unisolated: true, documented as unsafe).
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, openSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { InfraError, InputError } from '../errors.ts';
import { NPU_LOCK } from '../contract.ts';

export type IsolationMode = 'uid' | 'namespace' | 'none';

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
  /** e.g. "bubblewrap 0.8.0: user+pid+mount+net namespaces, private /proc" or "uid npu-probe (setpriv)". */
  detail: string;
  /** Wraps the probe's argv. */
  wrap: (argv: string[], ctx: WrapContext) => string[];
}

export interface WrapContext {
  /** Directories the probe must write: the model dir (build outputs), the run dir. */
  writable: string[];
  /** Directories it must read even if they sit under a hidden one: the mlir-air tree's root. */
  readable?: string[];
  /** The environment the probe must see (scrubbed); handed over explicitly where a wrapper would drop it. */
  probeEnv?: NodeJS.ProcessEnv;
  /** Directories it may read but never write (the caches, when they are outside / read-only binds). */
  env: NodeJS.ProcessEnv;
  /** Allow network (HF --online). */
  network: boolean;
}

/** Command lookup and probing, injected so tests can pretend a tool is missing. */
export interface IsolationHost {
  which: (cmd: string) => string | null;
  /** Runs a command (quick feature probe); true when it exits 0. */
  works: (argv: string[]) => boolean;
  uid: () => number;
  /** The primary group id of a user, or null when there is no such user. */
  gidOf: (user: string) => number | null;
  env: NodeJS.ProcessEnv;
  /** A file's text, or null when it cannot be read (the agent's setup file). */
  readFile: (path: string) => string | null;
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
    const r = spawnSync(argv[0], argv.slice(1), { stdio: 'ignore', timeout: 10_000 });
    return r.status === 0;
  },
  uid: () => (typeof process.getuid === 'function' ? process.getuid() : -1),
  gidOf: (user) => {
    const r = spawnSync('id', ['-g', user], { encoding: 'utf8', timeout: 5000 });
    const gid = Number(r.stdout?.trim());
    return r.status === 0 && Number.isInteger(gid) ? gid : null;
  },
  env: process.env,
  readFile: (path) => {
    try { return readFileSync(path, 'utf8'); } catch { return null; }
  },
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

/** The directories hidden from the probe: the runner's own dir (credentials), its temp dir (file commands). */
export function hiddenDirs(env: NodeJS.ProcessEnv): string[] {
  const out = new Set<string>();
  const temp = env.RUNNER_TEMP;
  if (temp) {
    out.add(resolve(temp));
    // <runner root>/_work/_temp: the runner root holds .credentials, .runner, .env.
    const work = dirname(resolve(temp));
    if (work.endsWith('/_work')) out.add(dirname(work));
  }
  for (const v of ['GITHUB_OUTPUT', 'GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_STEP_SUMMARY', 'GITHUB_STATE']) {
    if (env[v]) out.add(dirname(resolve(env[v]!)));
  }
  return [...out].filter((d) => d !== '/' && existsSync(d));
}

/** The NPU lock files the probe must share with the host: the skills' flock (ours) and the one
 * KernelCache.load_and_run takes itself. Created (0666) when missing, so they can be bound. */
export function lockFiles(env: NodeJS.ProcessEnv): string[] {
  const configured = env[NPU_LOCK.env]?.trim();
  const paths = [configured && configured.toLowerCase() !== 'none' ? configured : configured ? null : NPU_LOCK.path, '/tmp/npu.lock'];
  const out: string[] = [];
  for (const p of paths) {
    if (!p) continue;
    try {
      if (!existsSync(p)) {
        closeSync(openSync(p, 'a', 0o666));
        chmodSync(p, 0o666);
      }
      if (statSync(p).isFile()) out.push(realDir(p));
    } catch {
      // not creatable here: the probe's lock wait will say so
    }
  }
  return out;
}

function realDir(p: string): string {
  try { return realpathSync(p); } catch { return resolve(p); }
}

function bwrapWrap(bwrap: string, unshareUser: boolean): Isolation['wrap'] {
  return (argv, ctx) => {
    const args = [bwrap, '--die-with-parent', '--new-session', '--unshare-pid', '--unshare-ipc', '--unshare-uts'];
    if (unshareUser) args.push('--unshare-user');
    if (!ctx.network) args.push('--unshare-net');
    // A private /tmp: the host's is where other jobs (and a careless cache root) live. Only the NPU
    // lock files are shared, so the probe still waits for the skills and they for it.
    args.push('--ro-bind', '/', '/', '--dev-bind', '/dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp');
    // Hide the runner's files, then give back what the probe must write (later binds win).
    for (const d of hiddenDirs(ctx.env)) args.push('--tmpfs', d);
    for (const f of lockFiles(ctx.env)) args.push('--bind', f, f);
    const gits = new Set<string>();
    const gitAbove = (d: string) => {
      let up = d;
      while (up !== '/' && !existsSync(join(up, '.git'))) up = dirname(up);
      if (up !== '/') gits.add(join(up, '.git'));
    };
    for (const d of (ctx.readable ?? []).map(realDir)) { args.push('--ro-bind', d, d); gitAbove(d); }
    for (const d of ctx.writable.map(realDir)) { args.push('--bind', d, d); gitAbove(d); }
    // The checkout's credentials (persist-credentials) live in .git/config above the tree.
    for (const g of gits) args.push(...hideGit(g));
    return [...args, '--', ...argv];
  };
}

/**
 * bubblewrap arguments that hide a checkout's .git: a tmpfs over a .git directory; over a .git
 * file (a worktree or a submodule) an empty file, and a tmpfs over the git dir it points to, which
 * holds the config (and any credential header) of that checkout.
 */
export function hideGit(git: string): string[] {
  let st;
  try { st = statSync(git); } catch { return []; }
  if (st.isDirectory()) return ['--tmpfs', git];
  const out = ['--ro-bind', '/dev/null', git];
  try {
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(git, 'utf8'));
    if (m) {
      const dir = resolve(dirname(git), m[1]);
      if (existsSync(dir) && statSync(dir).isDirectory()) out.push('--tmpfs', dir);
      // A worktree's git dir names the common dir, whose config is the repository's own.
      const common = join(dir, 'commondir');
      if (existsSync(common)) {
        const c = resolve(dir, readFileSync(common, 'utf8').trim());
        if (existsSync(join(c, 'config'))) out.push('--ro-bind', '/dev/null', join(c, 'config'));
      }
    }
  } catch {
    // unreadable: the empty file over .git still stands
  }
  return out;
}

/** bubblewrap, when it can make its namespaces here: (path, whether it needs --unshare-user). */
function findBwrap(host: IsolationHost): { bwrap: string; userns: boolean } | null {
  const bwrap = host.which('bwrap');
  if (!bwrap) return null;
  for (const userns of [false, true]) {
    const probe = [bwrap, '--die-with-parent', '--unshare-pid', ...(userns ? ['--unshare-user'] : []), '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true'];
    if (host.works(probe)) return { bwrap, userns };
  }
  return null;
}

/** Picks the isolation for this run; throws when an untrusted run would go unisolated. */
export function chooseIsolation(req: IsolationRequest, host: IsolationHost = realHost): Isolation {
  const tried: string[] = [];
  const want = req.mode;
  const bw = want === 'none' ? null : findBwrap(host);
  if (!bw && want !== 'none') tried.push(host.which('bwrap') ? 'bubblewrap: cannot create namespaces here (unprivileged user namespaces disabled?)' : 'bubblewrap: not installed (apt install bubblewrap)');
  if (want === 'auto' || want === 'uid') {
    const user = probeUser(req, host);
    if (user) {
      if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(user)) throw new InputError(`probe user ${JSON.stringify(user)} is not a user name`);
      const root = host.uid() === 0;
      const setpriv = host.which('setpriv');
      const sudo = host.which('sudo');
      // Under the probe user, and inside bubblewrap too when that user can start it (an unprivileged
      // user needs a user namespace): another uid cannot read our /proc/<pid>/environ; the
      // namespace also hides the checkout's .git and the runner's files.
      const bwrap = host.which('bwrap');
      const nsProbe = bwrap ? [bwrap, '--die-with-parent', '--unshare-pid', '--unshare-user', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true'] : null;
      const gid = root && setpriv ? host.gidOf(user) : null;
      const switchers: [string, string[]][] = [];
      if (root && setpriv && gid !== null) switchers.push(['setpriv', [setpriv, '--reuid', user, '--regid', String(gid), '--init-groups', '--']]);
      // sudo drops LD_LIBRARY_PATH, PYTHONPATH and PATH (secure_path) whatever -E says, and XRT and
      // the mlir-air environment need them: the probe's (already scrubbed) environment is handed
      // over explicitly through env -i.
      if (sudo) switchers.push(['sudo -n', [sudo, '-n', '-u', user, '--']]);
      for (const [how, prefix] of switchers) {
        if (!host.works([...prefix, 'true'])) continue;
        const inner = bwrap && nsProbe && host.works([...prefix, ...nsProbe]) ? bwrapWrap(bwrap, true) : null;
        const envArgs = (ctx: WrapContext) => how === 'setpriv' || !ctx.probeEnv ? [] :
          ['/usr/bin/env', '-i', ...Object.entries(ctx.probeEnv).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v}`)];
        return {
          mode: 'uid',
          detail: `uid ${user} (${how})${inner ? ' + bubblewrap' : ''}`,
          wrap: (argv, ctx) => [...prefix, ...envArgs(ctx), ...(inner ? inner(argv, ctx) : argv)],
        };
      }
      tried.push(`uid ${user}: cannot switch to it (setpriv as root, or a sudoers rule from \`npu-block-gate agent setup\`)`);
    } else if (want === 'uid') tried.push('uid: no probe user configured (NPU_BLOCK_GATE_PROBE_USER, or `npu-block-gate agent setup`)');
  }
  if ((want === 'auto' || want === 'namespace') && bw) {
    return { mode: 'namespace', detail: `bubblewrap: ${bw.userns ? 'user+' : ''}pid+mount+net namespaces, private /proc, read-only root, runner files and .git hidden`, wrap: bwrapWrap(bw.bwrap, bw.userns) };
  }
  if (want === 'none' || want === 'auto') {
    if (req.untrusted && !req.allowUnisolated) {
      throw new InfraError(`refusing to run an untrusted event's model code without isolation (${tried.join('; ') || 'isolation: none was asked for'}); set up the probe user with \`npu-block-gate agent setup\`, install bubblewrap, or set allow-unisolated: true (unsafe: the code can read this job's tokens)`);
    }
    return { mode: 'none', detail: `none${tried.length ? ` (${tried.join('; ')})` : ''}${req.untrusted ? '; UNSAFE: allow-unisolated' : ''}`, wrap: (argv) => argv };
  }
  throw new InfraError(`isolation ${want} is not available here: ${tried.join('; ')}`);
}
