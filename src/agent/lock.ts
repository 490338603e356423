// The NPU lock (DESIGN.md "Agent"): the mlir-air skills' `flock -x` on /tmp/mlir-air-npu.lock.
// `agent lock status` reads the holder and waiters from /proc/locks (as the probe's npu_probe/run/lock.py);
// `agent lock wait` waits with `flock -w` (the same flock(2) semantics) in 15 s slices so it can say
// who holds it, and polls /proc/locks when the util-linux flock command is missing.
import type { Machine } from './machine.ts';
import { parseProcLocks } from './parse.ts';
import { NPU_LOCK } from '../contract.ts';

export const DEFAULT_NPU_LOCK = NPU_LOCK.path;
export const DEFAULT_WAIT_SECONDS = NPU_LOCK.timeout_seconds;
const PROGRESS_EVERY_MS = NPU_LOCK.progress_seconds * 1000;
const POLL_MS = 1_000;

/** $NPU_BLOCK_GATE_NPU_LOCK, else the skills' lock; "none" turns it off (null). */
export function npuLockPath(env: NodeJS.ProcessEnv, explicit?: string | null): string | null {
  const p = explicit || env[NPU_LOCK.env] || DEFAULT_NPU_LOCK;
  return p.trim().toLowerCase() === 'none' ? null : p;
}

export interface LockState {
  path: string | null;
  holder: { pid: number; cmdline: string } | null;
  waiters: number;
  exists: boolean;
}

/** Who holds the lock at path (under the root prefix): /proc/locks entries on the lock file's device and inode. */
export function lockState(m: Machine, path: string | null = npuLockPath(m.env)): LockState {
  if (!path) return { path, holder: null, waiters: 0, exists: false };
  const id = m.fileId(path);
  if (id === null) return { path, holder: null, waiters: 0, exists: false };
  const locks = parseProcLocks(m.read('/proc/locks') ?? '').filter((l) => l.inode === id.ino && l.major === id.major && l.minor === id.minor);
  const h = locks.find((l) => !l.blocked);
  const holder = h ? { pid: h.pid, cmdline: (m.readBytes(`/proc/${h.pid}/cmdline`)?.toString('utf8') ?? '').replace(/\0/g, ' ').trim().slice(0, 120) } : null;
  return { path, holder, waiters: locks.filter((l) => l.blocked).length, exists: true };
}

export function describeHolder(s: LockState): string {
  if (!s.holder) return 'free';
  return `held by pid ${s.holder.pid}${s.holder.cmdline ? ` (${s.holder.cmdline})` : ''}${s.waiters ? `, ${s.waiters} waiting` : ''}`;
}

/** `agent lock status`, one line: "<path>: free; 0 waiting" / "<path>: held by pid N (cmd); 2 waiting". */
export function renderLockStatus(s: LockState): string {
  if (!s.path) return 'NPU lock off (NPU_BLOCK_GATE_NPU_LOCK=none)\n';
  const who = s.holder ? `held by pid ${s.holder.pid}${s.holder.cmdline ? ` (${s.holder.cmdline})` : ''}` : `free${s.exists ? '' : ' (no lock file yet)'}`;
  return `${s.path}: ${who}; ${s.waiters} waiting\n`;
}

interface WaitResult {
  path: string;
  free: boolean;
  waited_s: number;
  /** flock: util-linux flock -w; poll: /proc/locks; none: no lock file (free). */
  method: 'flock' | 'poll' | 'none';
  /** The holder at the timeout, else null. */
  holder: string | null;
}

const secs = (ms: number) => String(Math.round(ms) / 1000);

/**
 * Waits until nobody holds the lock at path, at most timeoutMs. Calls progress(line) every 15 s
 * of waiting with the holder. Does not keep the lock: it is free when this returns free.
 */
export async function waitLock(m: Machine, path: string, timeoutMs: number, progress: (line: string) => void): Promise<WaitResult> {
  if (!lockState(m, path).exists) return { path, free: true, waited_s: 0, method: 'none', holder: null };
  let waited = 0;
  const start = m.now().getTime();
  const done = (free: boolean, method: WaitResult['method']): WaitResult => ({
    path, free, waited_s: Math.round(waited / 100) / 10, method, holder: free ? null : describeHolder(lockState(m, path)),
  });
  const tell = () => progress(`waiting for ${path}: ${describeHolder(lockState(m, path))} (${secs(waited)}s of ${secs(timeoutMs)}s)`);
  // flock -w in slices up to the next progress line; exit 1 is "timed out", anything else: poll.
  for (;;) {
    const slice = Math.min(PROGRESS_EVERY_MS - (waited % PROGRESS_EVERY_MS), timeoutMs - waited);
    const r = m.run('flock', ['-w', secs(slice), m.path(path), 'true'], slice + 10_000);
    if (r.status === 0) { waited = Math.max(waited, Math.min(timeoutMs, m.now().getTime() - start)); return done(true, 'flock'); }
    if (r.status !== 1) break;
    waited += slice;
    if (waited >= timeoutMs) return done(false, 'flock');
    tell();
  }
  let next = (Math.floor(waited / PROGRESS_EVERY_MS) + 1) * PROGRESS_EVERY_MS;
  for (;;) {
    if (!lockState(m, path).holder) return done(true, 'poll');
    if (waited >= timeoutMs) return done(false, 'poll');
    const step = Math.min(POLL_MS, timeoutMs - waited);
    await m.sleep(step);
    waited += step;
    if (waited >= next && waited < timeoutMs) { tell(); next += PROGRESS_EVERY_MS; }
  }
}
