// The bubblewrap sandbox the probe runs in (DESIGN.md "Trust"): one argument builder, used for the
// real run and, on a no-op command, for the feature test that decides whether the sandbox can be
// had here. What the probe sees:
//  - the file system read-only (the tree and the model dir too); writable only the dirs this run's
//    host made for it: the probe's run dir and scratch dir, and a private copy of the model dir seen
//    where the model dir is (the tree's build outputs land there, never in the checkout);
//  - a private /proc (PID namespace), /tmp, /dev (null, zero, random, urandom, tty... as bubblewrap
//    makes it, plus the NPU's /dev/accel nodes) and /dev/shm; no network unless asked (HF --online);
//  - empty tmpfs over every home (/home, /root, the runner user's $HOME wherever it is), /run (user
//    sessions, D-Bus, docker and containerd sockets), the runner's own dir and work folder (found from
//    the environment the runner sets, never from a folder name), the HF home (its token), the
//    checkout's .git; then the dirs the probe must read (the tree, the probe, the Python, the HF hub
//    cache) bound back read-only, and the dirs it writes bound back writable.
import { dirname, join, resolve, sep } from 'node:path';
import { hfHomeOf, hubCacheOf } from './env.ts';

/** What the builder asks of the machine (injected: tests describe a runner without having one). */
export interface SandboxView {
  /** The path exists (a dangling link does not). */
  exists: (p: string) => boolean;
  /** The path is a directory (after links). */
  isDir: (p: string) => boolean;
  /** The path without links (itself when it cannot be resolved). */
  realpath: (p: string) => string;
  /** A directory's entries, or null. */
  list: (dir: string) => string[] | null;
  /** A small text file (a .git file's gitdir line), or null. */
  readText: (p: string) => string | null;
}

export interface SandboxSpec {
  bwrap: string;
  /** A user namespace: the uid/gid inside (null: the caller's own). Absent: none (root in uid mode, where setpriv then drops to the probe user). */
  userns?: { uid: number | null; gid: number | null; disableNested: boolean } | null;
  /** Drop every capability (always, except where setpriv inside must still switch users). */
  capDrop: boolean;
  /** Directories the probe writes, at their own paths (the run's staging dirs). */
  writable: string[];
  /** Directories the probe writes, each seen at another path (the private copy of the model dir, seen
   * where the model dir is): bound after everything read-only, so the copy lies over the tree's own. */
  mounts?: { src: string; dest: string }[];
  /** Directories it must read even where they sit under a hidden one (the tree, the probe, the Python). */
  readable: string[];
  /** NPU lock files shared with the host. */
  lockFiles: string[];
  /** The environment the runner set (what to hide is found from it). */
  env: NodeJS.ProcessEnv;
  /** The runner user's home (from the password database), beside $HOME. */
  home: string | null;
  /** This process's executable (the runner's own node, under its root), to find the runner root. */
  self: string | null;
  /** As root: the sandbox's uid is root's outside it, so root-only files are hidden too. */
  root: boolean;
  network: boolean;
  /** The probe's working directory (the run dir). */
  cwd: string;
  /** Whether the user that starts bubblewrap can read a dir (sudo mode: the probe user, who may not
   * pass the runner user's home); absent: it can. The HF hub cache is bound only when it can. */
  canRead?: (dir: string) => boolean;
}

/** Credential files only root reads: hidden from a sandbox whose uid is root's outside it. */
const ROOT_SECRET_FILES = ['/etc/shadow', '/etc/shadow-', '/etc/gshadow', '/etc/gshadow-', '/etc/sudoers'];
const ROOT_SECRET_DIRS = ['/etc/sudoers.d', '/etc/ssh', '/var/lib/docker', '/var/lib/containerd'];

function inside(p: string, dir: string): boolean {
  return dir === '/' || p === dir || p.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

function strictlyInside(p: string, dir: string): boolean {
  return p !== dir && inside(p, dir);
}

/** Drops paths that are `/`, missing, or inside another of the list; sorted so parents come first. */
function outermost(paths: Iterable<string>, view: SandboxView): string[] {
  const uniq = [...new Set([...paths].map((p) => resolve(p)))].filter((p) => p !== '/' && view.exists(p));
  return uniq.sort((a, b) => a.length - b.length).filter((p, i, all) => !all.slice(0, i).some((q) => strictlyInside(p, q)));
}

/**
 * The runner's own directories: its root (the dir holding .runner / .credentials: found by walking
 * up from the work folder, the tool cache and the runner's node), the work folder (every checkout,
 * _temp, _actions, _tool), the tool cache and the dirs of the file-command files.
 */
export function runnerDirs(env: NodeJS.ProcessEnv, self: string | null, view: SandboxView): string[] {
  const out = new Set<string>();
  const add = (p: string | undefined) => { if (p) out.add(resolve(p)); };
  const temp = env.RUNNER_TEMP ? resolve(env.RUNNER_TEMP) : null;
  const work = [
    temp && dirname(temp),
    env.RUNNER_WORKSPACE && dirname(resolve(env.RUNNER_WORKSPACE)),
    env.GITHUB_WORKSPACE && dirname(dirname(resolve(env.GITHUB_WORKSPACE))),
    env.RUNNER_WORKSPACE, // in case the work folder is laid out otherwise
  ].filter((p): p is string => !!p);
  add(temp ?? undefined);
  for (const w of work) add(w);
  add(env.RUNNER_TOOL_CACHE);
  for (const v of ['GITHUB_OUTPUT', 'GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_STEP_SUMMARY', 'GITHUB_STATE']) if (env[v]) add(dirname(resolve(env[v]!)));
  // The runner root: the nearest dir above any of these holding the runner's registration.
  for (const start of [...work, env.RUNNER_TOOL_CACHE, self ? dirname(self) : null]) {
    if (!start) continue;
    for (let d = resolve(start); d !== '/'; d = dirname(d)) {
      if (view.exists(join(d, '.runner')) || view.exists(join(d, '.credentials'))) { out.add(d); break; }
    }
  }
  // A work folder that is / or a home is hidden anyway (homes) or cannot be (/): never hide / itself.
  return [...out].filter((d) => d !== '/');
}

/** The git dirs holding a checkout's credentials (persist-credentials): .git above each dir, and a
 * worktree's or submodule's real git dir (and its common dir, where config lives). */
function gitDirsAbove(dirs: string[], view: SandboxView): { dirs: string[]; files: string[] } {
  const gitDirs = new Set<string>();
  const gitFiles = new Set<string>();
  for (const d of dirs) {
    let up = d;
    while (up !== '/' && !view.exists(join(up, '.git'))) up = dirname(up);
    if (up === '/') continue;
    const g = join(up, '.git');
    if (view.isDir(g)) { gitDirs.add(g); continue; }
    gitFiles.add(g);
    const m = /^gitdir:\s*(.+)$/m.exec(view.readText(g) ?? '');
    if (!m) continue;
    const real = resolve(up, m[1].trim());
    if (view.isDir(real)) gitDirs.add(real);
    const common = view.readText(join(real, 'commondir'))?.trim();
    if (common) {
      const c = resolve(real, common);
      if (view.isDir(c)) gitDirs.add(c);
    }
  }
  return { dirs: [...gitDirs], files: [...gitFiles] };
}

interface SandboxPlan {
  /** bwrap and its options, up to and including `--`. */
  args: string[];
  /** What is hidden (tmpfs), for the log. */
  hidden: string[];
}

/** The bubblewrap command line before the probe's argv. */
export function sandboxArgs(s: SandboxSpec, view: SandboxView): SandboxPlan {
  const a = [s.bwrap, '--die-with-parent', '--new-session', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
  if (!s.network) a.push('--unshare-net');
  if (s.userns) {
    a.push('--unshare-user');
    if (s.userns.disableNested) a.push('--disable-userns');
    if (s.userns.uid !== null) a.push('--uid', String(s.userns.uid));
    if (s.userns.gid !== null) a.push('--gid', String(s.userns.gid));
  }
  if (s.capDrop) a.push('--cap-drop', 'ALL');
  a.push('--ro-bind', '/', '/');
  // A private /dev: bubblewrap's few nodes, a private /dev/shm, and the NPU.
  a.push('--dev', '/dev', '--tmpfs', '/dev/shm');
  for (const n of view.list('/dev/accel') ?? []) a.push('--dev-bind', join('/dev/accel', n), join('/dev/accel', n));
  a.push('--proc', '/proc', '--tmpfs', '/tmp');

  const hubDir = hubCacheOf(s.env, s.home);
  const hfHome = hfHomeOf(s.env, s.home);
  const homes = ['/home', '/root', s.env.HOME, s.home].filter((p): p is string => !!p);
  // /run: user sessions (/run/user/<uid>), D-Bus, docker, containerd, systemd sockets.
  const sockets = ['/run', ...(view.realpath('/var/run') === '/var/run' ? ['/var/run'] : [])];
  const hide = outermost([...homes, ...sockets, ...runnerDirs(s.env, s.self, view), ...(hfHome ? [hfHome] : []), ...(s.root ? ROOT_SECRET_DIRS : [])], view)
    .filter((d) => !inside(d, '/tmp')); // /tmp is a private tmpfs already
  for (const d of hide) a.push('--tmpfs', d);
  const hiddenFiles = [...(s.root ? ROOT_SECRET_FILES : []), ...(s.env.HF_TOKEN_PATH ? [resolve(s.env.HF_TOKEN_PATH)] : [])]
    .filter((f) => view.exists(f) && !view.isDir(f) && !hide.some((d) => inside(f, d)));
  for (const f of hiddenFiles) a.push('--ro-bind', '/dev/null', f);

  // Given back: read-only, then writable (a later bind wins over an earlier one above it). The dirs
  // on the way inside a tmpfs are made 0755 first: bubblewrap would make them 0700, which a probe
  // user (setpriv after the sandbox) could not pass.
  const hub = hubDir && view.isDir(hubDir) && (s.canRead?.(hubDir) ?? true) ? [hubDir] : [];
  const ro = [...hub, ...s.readable].map(view.realpath).filter((d) => view.exists(d));
  const rw = s.writable.map(view.realpath).filter((d) => view.exists(d));
  const binder = (tmpfs: string[]) => {
    const bound: string[] = [];
    const made = new Set<string>();
    return (how: '--ro-bind' | '--bind', d: string, src = d) => {
      for (let up = dirname(d), way: string[] = []; ; up = dirname(up)) {
        if (bound.some((b) => inside(up, b)) || !tmpfs.some((t) => strictlyInside(up, t))) {
          for (const w of way.reverse()) if (!made.has(w)) { made.add(w); a.push('--perms', '0755', '--dir', w); }
          break;
        }
        way.push(up);
      }
      a.push(how, src, d);
      bound.push(d);
    };
  };
  const bind = binder([...hide, '/tmp']);
  const bindAt = (src: string, dest: string) => bind('--bind', dest, src);
  for (const d of ro) bind('--ro-bind', d);
  for (const d of rw) bind('--bind', d);
  const mounts = (s.mounts ?? []).map((m) => ({ src: view.realpath(m.src), dest: resolve(m.dest) })).filter((m) => view.isDir(m.src));
  for (const m of mounts) bindAt(m.src, m.dest);
  for (const f of s.lockFiles) bind('--bind', f);
  // What a bind gave back may hold something hidden again (a runner dir or HF home under the tree):
  // hidden once more, and what must stay visible below it bound back once more.
  const again = hide.filter((h) => [...ro, ...rw, ...mounts.map((m) => m.dest)].some((b) => strictlyInside(h, b)));
  for (const h of again) a.push('--tmpfs', h);
  const rebind = binder(again);
  for (const d of ro) if (again.some((h) => strictlyInside(d, h))) rebind('--ro-bind', d);
  for (const d of rw) if (again.some((h) => strictlyInside(d, h))) rebind('--bind', d);
  for (const m of mounts) if (again.some((h) => strictlyInside(m.dest, h))) rebind('--bind', m.dest, m.src);
  // The checkout's credentials (actions/checkout's extraheader) live in its git dir.
  const git = gitDirsAbove([...ro, ...rw, ...mounts.map((m) => m.dest)], view);
  for (const g of git.dirs) a.push('--tmpfs', g);
  for (const f of git.files) a.push('--ro-bind', '/dev/null', f);
  // HF --online: name resolution may live under /run (systemd-resolved's stub).
  if (s.network) {
    const resolv = view.realpath('/etc/resolv.conf');
    if (resolv !== '/etc/resolv.conf' && hide.some((d) => inside(resolv, d)) && view.exists(resolv)) a.push('--ro-bind', resolv, resolv);
  }
  a.push('--chdir', s.cwd, '--');
  return { args: a, hidden: [...hide, ...hiddenFiles, ...git.dirs, ...git.files] };
}
