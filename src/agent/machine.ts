// The machine as the agent sees it: a root prefix for system paths, an environment, and a command
// table. Tests build a fake root (dev/accel, sys/module, proc/...) and stub commands; nothing in
// src/agent reads /dev, /sys, /proc or spawns a process except through this edge.
import { spawn as spawnAsync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, statfsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { homedir, hostname, userInfo } from 'node:os';
import { testPython, testPythonAsync, type PythonTester, type PythonTesterAsync } from '../probe/python.ts';

export interface CmdResult {
  /** null when killed (timeout) or not run. */
  status: number | null;
  stdout: string;
  stderr: string;
  /** The command does not exist (ENOENT). */
  missing?: boolean;
  /** Why it did not run or finish (timeout, permission), one line. */
  error?: string;
}

export interface RunOptions {
  /** This call's limit in ms (default the machine's, 15 s). */
  timeoutMs?: number;
  /**
   * Start it and return at once, outliving this process and the runner's job (the runner kills
   * processes that carry its RUNNER_TRACKING_ID when a job ends, so the variable is dropped).
   */
  detached?: boolean;
}

interface ExecOptions {
  /** This call's limit in ms: at the limit the command's process group is killed and exec returns at once, without waiting for it to exit. */
  timeoutMs?: number;
  /** Read at most this many bytes of stdout, then stop the command (truncated). */
  maxBytes?: number;
  /** Called with each stdout line as it arrives; stdout is then not kept. Returning false stops the command (stopped). */
  onLine?: (line: string) => boolean | void;
}

interface ExecResult extends CmdResult {
  /** Bytes of stdout read. */
  bytes: number;
  /** maxBytes was reached: the rest was not read. */
  truncated: boolean;
  /** onLine asked to stop. */
  stopped: boolean;
  timedOut: boolean;
}

type CommandFn = (args: string[], opts?: RunOptions) => CmdResult;
/** Command name -> implementation. Names not in the table go to the fallback (the real command by default). */
export type CommandTable = Record<string, CommandFn>;
type StatFs = (path: string) => { bavail: number; bsize: number; blocks: number };

const DEFAULT_TIMEOUT_MS = 15_000;
/** Stdout kept by exec when no onLine takes it, and stderr always. */
const KEEP_BYTES = 16 * 1024 * 1024;

/** Runs the real command with a timeout; never throws. */
function spawnOne(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): CmdResult {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { status: null, stdout: '', stderr: '', missing: true, error: 'not found' };
    if (code === 'ETIMEDOUT') return { status: null, stdout: r.stdout ?? '', stderr: r.stderr ?? '', error: `timed out after ${timeoutMs / 1000}s` };
    return { status: null, stdout: r.stdout ?? '', stderr: r.stderr ?? '', error: r.error.message };
  }
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** Starts cmd in the background with stdio closed and without RUNNER_TRACKING_ID; never throws. */
function spawnDetached(cmd: string, args: string[], env: NodeJS.ProcessEnv): CmdResult {
  const { RUNNER_TRACKING_ID: _drop, ...rest } = env;
  void _drop;
  try {
    const child = spawnAsync(cmd, args, { env: rest, detached: true, stdio: 'ignore' });
    child.on('error', () => { /* reported as not started below only when synchronous */ });
    child.unref();
    return { status: 0, stdout: '', stderr: '' };
  } catch (e) {
    return { status: null, stdout: '', stderr: '', error: (e as Error).message };
  }
}

/**
 * Runs cmd in its own process group and streams its stdout: no buffer limit, a byte bound, a
 * timeout that kills the whole group (xrt-smi is a wrapper script around the real binary) and
 * returns at once, even when a process stuck in the driver cannot die yet.
 */
function execReal(cmd: string, args: string[], env: NodeJS.ProcessEnv, o: ExecOptions & { timeoutMs: number }): Promise<ExecResult> {
  return new Promise((done) => {
    let child: ReturnType<typeof spawnAsync>;
    const out: ExecResult = { status: null, stdout: '', stderr: '', bytes: 0, truncated: false, stopped: false, timedOut: false };
    try {
      child = spawnAsync(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    } catch (e) {
      done({ ...out, error: (e as Error).message });
      return;
    }
    let finished = false;
    let partial = '';
    const kill = () => {
      try { if (child.pid) process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
      try { child.kill('SIGKILL'); } catch { /* gone */ }
    };
    const finish = (extra: Partial<ExecResult>) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      if (partial && o.onLine && !out.stopped && !out.truncated) o.onLine(partial);
      else if (partial && !o.onLine) out.stdout += partial;
      partial = '';
      child.stdout?.destroy();
      child.stderr?.destroy();
      child.unref();
      done({ ...out, ...extra });
    };
    const timer = setTimeout(() => { kill(); finish({ timedOut: true, error: `timed out after ${o.timeoutMs / 1000}s` }); }, o.timeoutMs);
    child.on('error', (e: NodeJS.ErrnoException) => finish(e.code === 'ENOENT' ? { missing: true, error: 'not found' } : { error: e.message }));
    child.stderr!.on('data', (b: Buffer) => { if (out.stderr.length < KEEP_BYTES) out.stderr += b.toString('utf8'); });
    child.stdout!.on('data', (b: Buffer) => {
      if (finished) return;
      let chunk = b;
      if (o.maxBytes !== undefined && out.bytes + chunk.length > o.maxBytes) {
        chunk = chunk.subarray(0, Math.max(0, o.maxBytes - out.bytes));
        out.truncated = true;
      }
      out.bytes += chunk.length;
      const text = partial + chunk.toString('utf8');
      if (!o.onLine) {
        if (out.stdout.length < KEEP_BYTES) out.stdout += text;
        partial = '';
      } else {
        const lines = text.split('\n');
        const last = lines.pop()!; // an unfinished line: completed by the next chunk, dropped at the bound
        partial = out.truncated ? '' : last;
        for (const l of lines) {
          if (o.onLine(l) === false) { out.stopped = true; break; }
        }
      }
      if (out.truncated || out.stopped) { kill(); finish({}); }
    });
    child.on('close', (code) => finish({ status: code }));
  });
}

/** exec over a stubbed command: the same line feeding, bound and stop. */
function execStub(fn: CommandFn, args: string[], o: ExecOptions & { timeoutMs: number }): ExecResult {
  const r = fn(args, { timeoutMs: o.timeoutMs });
  const out: ExecResult = { ...r, stdout: '', bytes: 0, truncated: false, stopped: false, timedOut: /timed out/.test(r.error ?? '') };
  let text = r.stdout;
  if (o.maxBytes !== undefined && Buffer.byteLength(text) > o.maxBytes) {
    text = Buffer.from(text).subarray(0, o.maxBytes).toString('utf8');
    out.truncated = true;
  }
  out.bytes = Buffer.byteLength(text);
  if (!o.onLine) { out.stdout = text; return out; }
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '' || out.truncated) lines.pop();
  for (const l of lines) {
    if (o.onLine(l) === false) { out.stopped = true; out.status = null; break; }
  }
  return out;
}

export interface MachineOptions {
  /** System paths (/dev, /sys, /proc, /tmp, /opt) are read under this prefix. Default "/". */
  root?: string;
  env?: NodeJS.ProcessEnv;
  /** Stubbed commands; anything else is spawned for real unless spawn is false. */
  commands?: CommandTable;
  /** false: a command not in the table is "not found" (hermetic tests). Default true. */
  spawn?: boolean;
  timeoutMs?: number;
  python?: PythonTester;
  statfs?: StatFs;
  cwd?: string;
  /** Waits (lock wait's poll loop); tests pass one that returns at once. */
  sleep?: (ms: number) => Promise<void>;
  /** The clock (log file dates and their pruning). */
  now?: () => Date;
  /** This process's uid (default process.getuid()): root runs the functional probe as the runner user. */
  uid?: number;
  /** The host name (the runner label when the runner has no name). */
  hostname?: string;
}

export class Machine {
  readonly root: string;
  readonly env: NodeJS.ProcessEnv;
  readonly python: PythonTester;
  /** The same test without blocking: the injected tester (tests) as is, else Python run in the background. */
  readonly pythonAsync: PythonTesterAsync;
  readonly statfs: StatFs;
  readonly cwd: string;
  readonly sleep: (ms: number) => Promise<void>;
  readonly now: () => Date;
  readonly uid: number;
  readonly hostname: string;
  private readonly commands: CommandTable;
  private readonly spawn: boolean;
  private readonly timeoutMs: number;

  constructor(o: MachineOptions = {}) {
    this.root = resolve(o.root ?? '/');
    this.env = o.env ?? process.env;
    this.commands = o.commands ?? {};
    this.spawn = o.spawn ?? true;
    this.timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.python = o.python ?? testPython;
    const injected = o.python;
    this.pythonAsync = injected ? async (command) => injected(command) : testPythonAsync;
    this.statfs = o.statfs ?? ((p) => {
      const s = statfsSync(p);
      return { bavail: Number(s.bavail), bsize: Number(s.bsize), blocks: Number(s.blocks) };
    });
    this.cwd = o.cwd ?? process.cwd();
    this.sleep = o.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.now = o.now ?? (() => new Date());
    this.uid = o.uid ?? (typeof process.getuid === 'function' ? process.getuid() : -1);
    this.hostname = o.hostname ?? hostname();
  }

  /** A system path under the root prefix: path('/proc/locks'). */
  path(p: string): string {
    return this.root === '/' ? p : join(this.root, p);
  }

  exists(p: string): boolean {
    return existsSync(this.path(p));
  }

  read(p: string): string | null {
    try { return readFileSync(this.path(p), 'utf8'); } catch { return null; }
  }

  readBytes(p: string): Buffer | null {
    try { return readFileSync(this.path(p)); } catch { return null; }
  }

  list(p: string): string[] | null {
    try { return readdirSync(this.path(p)).sort(); } catch { return null; }
  }

  /** The file's device (major, minor, as /proc/locks prints them) and inode, or null. */
  fileId(p: string): { major: number; minor: number; ino: number } | null {
    try {
      const s = statSync(this.path(p), { bigint: true });
      const d = s.dev;
      // glibc's gnu_dev_major / gnu_dev_minor.
      const major = Number(((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn));
      const minor = Number((d & 0xffn) | ((d >> 12n) & ~0xffn));
      return { major, minor, ino: Number(s.ino) };
    } catch { return null; }
  }

  /** The target of a symlink under the root (as written in the link), or null. */
  readlink(p: string): string | null {
    try { return readlinkSync(this.path(p)); } catch { return null; }
  }

  /** A second number: how much to wait (timeoutMs), or RunOptions. */
  run(cmd: string, args: string[] = [], opts?: number | RunOptions): CmdResult {
    const o: RunOptions = typeof opts === 'number' ? { timeoutMs: opts } : opts ?? {};
    const stub = this.commands[cmd];
    if (stub) return stub(args, o);
    if (!this.spawn) return { status: null, stdout: '', stderr: '', missing: true, error: 'not found' };
    if (o.detached) return spawnDetached(cmd, args, this.env);
    return spawnOne(cmd, args, this.env, o.timeoutMs ?? this.timeoutMs);
  }

  /**
   * Runs a command and streams its stdout (see ExecOptions): for output of any size (the kernel
   * log) and for commands that may hang in the driver (xrt-smi validate).
   */
  async exec(cmd: string, args: string[] = [], o: ExecOptions = {}): Promise<ExecResult> {
    const opts = { ...o, timeoutMs: o.timeoutMs ?? this.timeoutMs };
    const stub = this.commands[cmd];
    if (stub) return execStub(stub, args, opts);
    if (!this.spawn) return { status: null, stdout: '', stderr: '', missing: true, error: 'not found', bytes: 0, truncated: false, stopped: false, timedOut: false };
    return execReal(cmd, args, this.env, opts);
  }

  /** A command on PATH, or the first existing fallback path under the root prefix; null when neither. */
  which(cmd: string, fallbacks: string[] = []): string | null {
    for (const dir of (this.env.PATH ?? '').split(':').filter(Boolean)) {
      if (existsSync(join(dir, cmd))) return join(dir, cmd);
    }
    for (const f of fallbacks) if (this.exists(f)) return this.path(f);
    return null;
  }

  /** A command that run() can start: stubbed, or (when spawning) on PATH or at a fallback path. */
  has(cmd: string, fallbacks: string[] = []): boolean {
    if (this.commands[cmd]) return true;
    return this.spawn && this.which(cmd, fallbacks) !== null;
  }

  home(): string {
    return this.env.HOME || homedir();
  }

  user(): string {
    if (this.env.USER) return this.env.USER;
    try { return userInfo().username; } catch { return 'runner'; }
  }
}
