// A small git wrapper: argument arrays (never a shell), output captured, the token passed to git
// through GIT_CONFIG_* environment variables so it never appears on a command line or in a log.
import { execFile } from 'node:child_process';

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export class GitError extends Error {
  constructor(
    readonly args: string[],
    readonly result: GitResult,
  ) {
    super(`git ${args.join(' ')} failed (exit ${result.code}): ${result.stderr.trim().split('\n').slice(-3).join(' ')}`);
    this.name = 'GitError';
  }
}

export interface GitOptions {
  /** Extra environment, e.g. GIT_INDEX_FILE or the author. */
  env?: Record<string, string>;
  /** Return a non-zero exit instead of throwing. */
  allowFail?: boolean;
}

export class Git {
  private authEnv: Record<string, string> = {};
  constructor(
    readonly cwd: string,
    private readonly debug: (msg: string) => void = () => {},
  ) {}

  /**
   * Authenticate https remotes with a token. An empty http.extraheader first resets any header
   * actions/checkout persisted, so git never sends two Authorization headers.
   */
  useToken(token: string): void {
    if (!token) return;
    const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
    this.authEnv = {
      GIT_CONFIG_COUNT: '2',
      GIT_CONFIG_KEY_0: 'http.extraheader',
      GIT_CONFIG_VALUE_0: '',
      GIT_CONFIG_KEY_1: 'http.extraheader',
      GIT_CONFIG_VALUE_1: `AUTHORIZATION: basic ${basic}`,
    };
  }

  /** The same git (and credentials) in another directory, e.g. the repository's top level. */
  at(cwd: string): Git {
    const g = new Git(cwd, this.debug);
    g.authEnv = this.authEnv;
    return g;
  }

  run(args: string[], opts: GitOptions = {}): Promise<GitResult> {
    this.debug(`git ${args.join(' ')}`);
    return new Promise((resolvePromise, reject) => {
      execFile(
        'git',
        args,
        {
          cwd: this.cwd,
          env: { ...process.env, GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C', ...this.authEnv, ...opts.env },
          maxBuffer: 64 * 1024 * 1024,
        },
        (err, stdout, stderr) => {
          const code = err ? (typeof (err as any).code === 'number' ? (err as any).code : 1) : 0;
          const result = { code, stdout: String(stdout), stderr: String(stderr) };
          if (code !== 0 && !opts.allowFail) reject(new GitError(args, result));
          else resolvePromise(result);
        },
      );
    });
  }

  /** stdout without the trailing newline. */
  async out(args: string[], opts: GitOptions = {}): Promise<string> {
    return (await this.run(args, opts)).stdout.replace(/\n$/, '');
  }

  async ok(args: string[], opts: GitOptions = {}): Promise<boolean> {
    return (await this.run(args, { ...opts, allowFail: true })).code === 0;
  }
}
