// Every git command our process runs goes through here, pinned to one checkout: the repository
// git works in is named explicitly (--git-dir, --work-tree), never found by git's own discovery
// from a directory the probe could write (a model dir where a pull request's code planted a .git
// of its own), and no config can make git start a program: hooks, fsmonitor, ssh, askpass,
// credential helpers, editor, pager, signing, the ext:: transport, a remote's upload-pack are
// pinned on the command line, which wins over every config file; the system config is not read.
// What git would run for a diff or a file's content (diff.external, diff and merge drivers,
// textconv, clean filters: named by config and .gitattributes) is switched off by the calls
// themselves (--no-ext-diff, --no-textconv, hash-object --no-filters); no call of ours merges.
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** A git checkout: its work tree and its git dir (a .git dir, or where a .git file points). */
export interface Checkout {
  workTree: string;
  gitDir: string;
}

/** The checkout whose top level is `dir` (it holds a .git dir, or a .git file naming one), or null. */
function checkoutAt(dir: string): Checkout | null {
  const dotGit = join(dir, '.git');
  try {
    if (statSync(dotGit).isDirectory()) return { workTree: dir, gitDir: dotGit };
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, 'utf8'));
    if (m && statSync(resolve(dir, m[1])).isDirectory()) return { workTree: dir, gitDir: resolve(dir, m[1]) };
  } catch {
    // no .git here
  }
  return null;
}

/**
 * The checkout holding `from` (a directory we trust: GITHUB_WORKSPACE, the tree input), looked for
 * by us from `from` upwards, the way git would; null when there is none.
 */
export function findCheckout(from: string): Checkout | null {
  for (let up = resolve(from); ; up = dirname(up)) {
    const c = checkoutAt(up);
    if (c) return c;
    if (dirname(up) === up) return null;
  }
}

/**
 * The checkout a model dir belongs to. The model dir is where the probe could write, so a .git in
 * it (or below it) is never the repository: the search starts at the directory above it, which
 * inside the workspace passes only the workspace's own directories. (A model dir that is the
 * workspace itself is the checkout's top level.)
 */
export function modelCheckout(workspace: string, modelDir: string): Checkout | null {
  const m = resolve(modelDir);
  return findCheckout(m === resolve(workspace) ? m : dirname(m));
}

/** The -c settings every call carries (the command line wins over every config file). */
export function pinnedConfig(c: Checkout): string[] {
  const pins = [
    // Only this checkout is trusted, whatever the user's global config says (an empty value
    // clears the list); git's subprocesses (a local remote's upload-pack) inherit it.
    'safe.directory=',
    `safe.directory=${c.workTree}`,
    'core.hooksPath=/dev/null',
    'core.fsmonitor=false',
    'core.sshCommand=ssh',
    'core.askPass=',
    'core.editor=:',
    'core.pager=cat',
    'core.alternateRefsCommand=:',
    'credential.helper=',
    'commit.gpgSign=false',
    'tag.gpgSign=false',
    'push.gpgSign=false',
    'log.showSignature=false',
    'gpg.program=false',
    'gpg.ssh.program=false',
    'gpg.x509.program=false',
    'protocol.ext.allow=never',
    // git:// runs core.gitProxy, a command (GitHub serves no git:// anyway).
    'protocol.git.allow=never',
    'submodule.recurse=false',
    'fetch.recurseSubmodules=false',
    'push.recurseSubmodules=no',
    // A fetch may start `git maintenance` / `gc` in the background: nothing of ours outlives the call.
    'gc.auto=0',
    'maintenance.auto=false',
  ];
  return pins.flatMap((p) => ['-c', p]);
}

/** The full argument list of a pinned call. */
function pinnedArgs(c: Checkout, args: string[]): string[] {
  return ['--no-pager', `--git-dir=${c.gitDir}`, `--work-tree=${c.workTree}`, ...pinnedConfig(c), ...transportPins(args)];
}

/**
 * A fetch or push runs the remote's upload-pack or receive-pack, which a remote's config may name
 * (for a local or ssh remote, a program here); git takes the first value it reads, so the config
 * file's wins over a -c: the command's own option is what pins it.
 */
function transportPins(args: string[]): string[] {
  if (args[0] === 'fetch') return ['fetch', '--upload-pack=git-upload-pack', ...args.slice(1)];
  if (args[0] === 'push') return ['push', '--receive-pack=git-receive-pack', ...args.slice(1)];
  if (args[0] === 'ls-remote' || args[0] === 'pull' || args[0] === 'clone' || args[0] === 'archive') throw new Error(`git ${args[0]} is not pinned here`);
  return args;
}

// Inherited variables that would name another repository or config, or a program git runs.
const DROPPED = /^GIT_(DIR|WORK_TREE|INDEX_FILE|OBJECT_DIRECTORY|ALTERNATE_OBJECT_DIRECTORIES|COMMON_DIR|NAMESPACE|CEILING_DIRECTORIES|DISCOVERY_ACROSS_FILESYSTEM|CONFIG|CONFIG_PARAMETERS|CONFIG_COUNT|CONFIG_KEY_\d+|CONFIG_VALUE_\d+|CONFIG_SYSTEM|EXTERNAL_DIFF|PAGER|EDITOR|SEQUENCE_EDITOR|PROXY_COMMAND|EXEC_PATH|TEMPLATE_DIR)$/;

/** The environment of a pinned call: ours, less what could point git elsewhere, plus `extra`. */
export function pinnedEnv(extra: Record<string, string | undefined> = {}, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(base)) if (!DROPPED.test(k)) env[k] = v;
  return { ...env, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C', ...extra };
}

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

interface PinnedCall {
  /** Extra environment (GIT_INDEX_FILE, the author, the token header of a fetch or push). */
  env?: Record<string, string>;
}

/** Runs git in the checkout (its top level as the working directory); never throws for an exit code. */
export function runPinned(c: Checkout, args: string[], o: PinnedCall = {}): Promise<GitResult> {
  return new Promise((done) => {
    execFile('git', pinnedArgs(c, args), { cwd: c.workTree, env: pinnedEnv(o.env), maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      done({ code, stdout: String(stdout), stderr: String(stderr || (err && !stderr ? err.message : '')) });
    });
  });
}

/** The same, blocking: stdout, or a thrown error with git's stderr (as execFileSync throws). */
export function runPinnedSync(c: Checkout, args: string[], o: PinnedCall = {}): string {
  return execFileSync('git', pinnedArgs(c, args), { cwd: c.workTree, encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'], env: pinnedEnv(o.env) });
}
