// The machine as the agent sees it: a root prefix for system paths, an environment, and a command
// table. Tests build a fake root (dev/accel, sys/module, proc/...) and stub commands; nothing in
// src/agent reads /dev, /sys, /proc or spawns a process except through this edge.
import { spawn as spawnAsync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, statfsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { homedir, userInfo } from 'node:os';
import { testPython, type PythonTester } from '../probe/python.ts';

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

export type CommandFn = (args: string[], opts?: RunOptions) => CmdResult;
/** Command name -> implementation. Names not in the table go to the fallback (the real command by default). */
export type CommandTable = Record<string, CommandFn>;
export type StatFs = (path: string) => { bavail: number; bsize: number; blocks: number };

export const DEFAULT_TIMEOUT_MS = 15_000;

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
}

export class Machine {
  readonly root: string;
  readonly env: NodeJS.ProcessEnv;
  readonly python: PythonTester;
  readonly statfs: StatFs;
  readonly cwd: string;
  readonly sleep: (ms: number) => Promise<void>;
  readonly now: () => Date;
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
    this.statfs = o.statfs ?? ((p) => {
      const s = statfsSync(p);
      return { bavail: Number(s.bavail), bsize: Number(s.bsize), blocks: Number(s.blocks) };
    });
    this.cwd = o.cwd ?? process.cwd();
    this.sleep = o.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.now = o.now ?? (() => new Date());
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

  inode(p: string): number | null {
    try { return statSync(this.path(p)).ino; } catch { return null; }
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
