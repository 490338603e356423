// The git wrapper: argument arrays (never a shell), output captured, and one named method per git
// step the docs PR takes. Every call runs pinned to one checkout (src/git/pinned.ts: explicit git
// dir and work tree, no config-driven program). The token reaches git only through GIT_CONFIG_*
// environment variables of the calls that fetch or push, never a command line, a log line or
// another call's environment.
import { findCheckout, modelCheckout, runPinned, type Checkout, type GitResult } from '../git/pinned.ts';

export type { Checkout, GitResult } from '../git/pinned.ts';

export class GitError extends Error {
  constructor(
    readonly args: string[],
    readonly result: GitResult,
  ) {
    super(`git ${args.join(' ')} failed (exit ${result.code}): ${result.stderr.trim().split('\n').slice(-3).join(' ')}`);
    this.name = 'GitError';
  }
}

interface GitOptions {
  /** Extra environment, e.g. GIT_INDEX_FILE or the author. */
  env?: Record<string, string>;
  /** Return a non-zero exit instead of throwing. */
  allowFail?: boolean;
}

export interface Identity {
  name: string;
  email: string;
}

/** "https://host/" of an http(s) remote URL, without credentials; null for other transports. */
export function urlBase(remoteUrl: string): string | null {
  try {
    const u = new URL(remoteUrl);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return null;
    return `${u.protocol}//${u.host}/`;
  } catch {
    return null;
  }
}

/**
 * Git for the checkout of the workspace (GITHUB_WORKSPACE), or of a model dir in it: found by us,
 * never by git's discovery from a directory the probe could write; an error naming the directory
 * when there is none.
 */
export function gitFor(workspace: string, modelDir: string | null, debug?: (msg: string) => void): Git {
  const c = modelDir ? modelCheckout(workspace, modelDir) : findCheckout(workspace);
  if (!c) throw new Error(`${modelDir ?? workspace} is not in a git checkout (looked from ${modelDir ? 'the directory above it' : 'the workspace'} upwards)`);
  return new Git(c, debug);
}

export class Git {
  private token = '';
  private auth: Promise<Record<string, string>> | null = null;
  constructor(
    readonly checkout: Checkout,
    private readonly debug: (msg: string) => void = () => {},
  ) {}

  /** The top level of the work tree: every path git is given is relative to it. */
  get root(): string {
    return this.checkout.workTree;
  }

  /**
   * Authenticate https remotes with this token (on fetches and pushes only). actions/checkout
   * persists its own token as a URL-scoped `http.<url>.extraheader` in .git/config, and git takes a
   * URL-scoped value over an unscoped one whatever comes later; so every scoped key found in the
   * config (and the remote's own URL) is reset and set to ours, next to the unscoped key.
   */
  useToken(token: string): void {
    this.token = token;
    this.auth = null;
  }

  private authEnv(): Promise<Record<string, string>> {
    if (!this.token) return Promise.resolve({});
    this.auth ??= (async () => {
      const keys = new Set<string>(['http.extraheader']);
      const scoped = await this.exec(['config', '--name-only', '--get-regexp', '^http\\..+\\.extraheader$'], { allowFail: true });
      for (const k of scoped.stdout.split('\n').map((l) => l.trim()).filter(Boolean)) keys.add(k);
      const remote = await this.exec(['config', '--get-regexp', '^remote\\..*\\.url$'], { allowFail: true });
      for (const line of remote.stdout.split('\n')) {
        const base = urlBase(line.split(/\s+/)[1] ?? '');
        if (base) keys.add(`http.${base}.extraheader`);
      }
      const header = `AUTHORIZATION: basic ${Buffer.from(`x-access-token:${this.token}`).toString('base64')}`;
      const env: Record<string, string> = {};
      let i = 0;
      for (const k of keys) {
        // An empty value clears the headers collected so far for that key; then ours.
        env[`GIT_CONFIG_KEY_${i}`] = k;
        env[`GIT_CONFIG_VALUE_${i++}`] = '';
        env[`GIT_CONFIG_KEY_${i}`] = k;
        env[`GIT_CONFIG_VALUE_${i++}`] = header;
      }
      env.GIT_CONFIG_COUNT = String(i);
      return env;
    })();
    return this.auth;
  }

  private async exec(args: string[], opts: GitOptions & { auth?: Record<string, string> } = {}): Promise<GitResult> {
    this.debug(`git ${args.join(' ')}`);
    const result = await runPinned(this.checkout, args, { env: { ...opts.auth, ...opts.env } });
    if (result.code !== 0 && !opts.allowFail) throw new GitError(args, result);
    return result;
  }

  /** A local command: no token, no network. */
  run(args: string[], opts: GitOptions = {}): Promise<GitResult> {
    return this.exec(args, opts);
  }

  /** A fetch or a push (`args`): the only calls that carry the token. */
  async talk(args: ['fetch' | 'push', ...string[]], opts: GitOptions = {}): Promise<GitResult> {
    return this.exec(args, { ...opts, auth: await this.authEnv() });
  }

  /** stdout without the trailing newline. */
  async out(args: string[], opts: GitOptions = {}): Promise<string> {
    return (await this.run(args, opts)).stdout.replace(/\n$/, '');
  }

  async ok(args: string[], opts: GitOptions = {}): Promise<boolean> {
    return (await this.run(args, { ...opts, allowFail: true })).code === 0;
  }

  // ----- named steps -------------------------------------------------------------------------

  /** The commit checked out (HEAD), or null outside a repository. */
  async head(): Promise<string | null> {
    const r = await this.run(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { allowFail: true });
    return r.code === 0 ? r.stdout.trim() : null;
  }

  /** Fetches a remote branch into a private ref; false when the branch does not exist. */
  async fetchBranch(remote: string, branch: string, intoRef: string): Promise<boolean> {
    const r = await this.talk(['fetch', '--no-tags', '--quiet', '--no-recurse-submodules', '--no-write-fetch-head', remote, `+refs/heads/${branch}:${intoRef}`], { allowFail: true });
    if (r.code !== 0) {
      if (/couldn't find remote ref|not our ref|no such ref/i.test(r.stderr)) return false;
      throw new GitError(['fetch', remote, branch], r);
    }
    return true;
  }

  async deleteRef(ref: string): Promise<void> {
    await this.run(['update-ref', '-d', ref], { allowFail: true });
  }

  /** A revision as a full object id (e.g. `ref^{commit}`), or null when it does not resolve. */
  async resolve(rev: string): Promise<string | null> {
    const r = await this.run(['rev-parse', '--verify', '--quiet', rev], { allowFail: true });
    return r.code === 0 ? r.stdout.trim() : null;
  }

  commitOf(ref: string): Promise<string | null> {
    return this.resolve(`${ref}^{commit}`);
  }

  treeOf(rev: string): Promise<string | null> {
    return this.resolve(`${rev}^{tree}`);
  }

  parentOf(rev: string): Promise<string | null> {
    return this.resolve(`${rev}^`);
  }

  /** The blob id of a path at a revision, or null when the path is not there. */
  blobAt(rev: string, path: string): Promise<string | null> {
    return this.resolve(`${rev}:${path}`);
  }

  async readBlob(blob: string): Promise<string> {
    return (await this.run(['cat-file', 'blob', blob])).stdout;
  }

  /** The full message of a commit. */
  message(commit: string): Promise<string> {
    return this.out(['log', '--no-show-signature', '-1', '--format=%B', commit]);
  }

  /** Whether one of the last `n` commits of `rev` has a message line matching `line` exactly. */
  async recentCommitHasLine(rev: string, line: string, n = 20): Promise<boolean> {
    // --grep takes a basic regular expression: escape its special characters.
    const pattern = `^${line.replace(/[.*[\]^$\\]/g, '\\$&')}$`;
    return (await this.out(['log', '--no-show-signature', '-n', String(n), '--format=%H', `--grep=${pattern}`, rev], { allowFail: true })) !== '';
  }

  /** The path is ignored by .gitignore (checked without the index). */
  isIgnored(path: string): Promise<boolean> {
    return this.ok(['check-ignore', '-q', '--no-index', '--', path]);
  }

  /**
   * A tree: `base`'s tree with these files (repository-relative path -> absolute file) added or
   * replaced, built in a private index so the user's index and working tree are never touched.
   */
  async treeWith(base: string, files: { rel: string; abs: string }[], indexFile: string): Promise<string> {
    const env = { GIT_INDEX_FILE: indexFile };
    await this.run(['read-tree', base], { env });
    for (const f of files) {
      // --no-filters: a clean filter named by .gitattributes is a program; the documents are ours.
      const blob = await this.out(['hash-object', '-w', '--no-filters', '--', f.abs]);
      await this.run(['update-index', '--add', '--cacheinfo', `100644,${blob},${f.rel}`], { env });
    }
    return this.out(['write-tree'], { env });
  }

  /** A commit of `tree` on `parent`, by `who` (author and committer). */
  commitTree(tree: string, parent: string, message: string, who: Identity): Promise<string> {
    const env = { GIT_AUTHOR_NAME: who.name, GIT_AUTHOR_EMAIL: who.email, GIT_COMMITTER_NAME: who.name, GIT_COMMITTER_EMAIL: who.email };
    return this.out(['commit-tree', '--no-gpg-sign', tree, '-p', parent, '-m', message], { env });
  }

  /** Pushes a commit to a branch, only if the branch is still at `expected` (null: absent). */
  async pushWithLease(remote: string, commit: string, branch: string, expected: string | null): Promise<void> {
    await this.talk(['push', '--quiet', '--no-verify', '--no-signed', '--no-recurse-submodules', `--force-with-lease=refs/heads/${branch}:${expected ?? ''}`, remote, `${commit}:refs/heads/${branch}`]);
  }
}
