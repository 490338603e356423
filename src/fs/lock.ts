// An advisory lock held across a read-modify-write of files others may write at the same time
// (a model dir's documents: two runs on one model dir must not lose each other's history rows).
// Node has no flock(2), so the lock is a file created with O_EXCL holding its owner (pid, host,
// the process's start time, a nonce). A lock whose owner is gone (killed mid-write) is stale and
// broken; breaking is itself serialised by a second O_EXCL file, so two runs that find the same
// stale lock cannot remove a fresh one between them.
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { InfraError, fsError } from '../errors.ts';

export interface LockOwner {
  pid: number;
  host: string;
  /** The owner process's start time (Linux: /proc/<pid>/stat field 22), so a reused pid is not mistaken for it. */
  start: string | null;
  since: string;
  nonce: string;
}

export interface LockWait {
  /** Said once, when the lock is held by another run: what we wait for. */
  waiting: (owner: LockOwner | null) => void;
  /** Said when a stale lock (its owner gone) is removed. */
  broke: (owner: LockOwner | null) => void;
  /** How long to wait for a live owner before giving up (ms). */
  timeoutMs?: number;
  pollMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface Lock {
  path: string;
  release(): void;
}

/** An owner whose lock file is older than this, on another host (where its pid cannot be asked), is stale. */
const FOREIGN_STALE_MS = 30 * 60_000;
/** A lock file without an owner yet (its creator between open and write) is stale after this. */
const UNWRITTEN_STALE_MS = 10_000;
/** errnos that mean the lock cannot be created here at all (a read-only or foreign dir): the caller goes on unlocked and its own writes say why. */
const CANNOT_LOCK = new Set(['EROFS', 'EACCES', 'EPERM', 'ENOENT', 'ENOTDIR']);

/** The start time of a live process (Linux), or null when it cannot be read. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function readOwner(path: string): { owner: LockOwner | null; ageMs: number } | null {
  let text: string;
  let mtime: number;
  try {
    mtime = statSync(path).mtimeMs;
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw fsError(e, path, 'cannot read the lock');
  }
  let owner: LockOwner | null = null;
  try {
    const o = JSON.parse(text) as Partial<LockOwner>;
    if (Number.isSafeInteger(o.pid) && typeof o.host === 'string' && typeof o.nonce === 'string') {
      owner = { pid: o.pid!, host: o.host, start: typeof o.start === 'string' ? o.start : null, since: String(o.since ?? ''), nonce: o.nonce };
    }
  } catch {
    // Half-written or foreign: judged by its age below.
  }
  return { owner, ageMs: Date.now() - mtime };
}

/** Whether the lock's owner is gone. */
function isStale(owner: LockOwner | null, ageMs: number): boolean {
  if (!owner) return ageMs > UNWRITTEN_STALE_MS;
  if (owner.host !== hostname()) return ageMs > FOREIGN_STALE_MS;
  try {
    process.kill(owner.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return true;
  }
  // Alive, unless the pid now belongs to a later process.
  const start = processStart(owner.pid);
  return owner.start !== null && start !== null && start !== owner.start;
}

function writeFile(path: string, text: string): 'ok' | 'exists' {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o644);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return 'exists';
    throw e;
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  return 'ok';
}

/** Removes the stale lock `seen` (if it is still the one at `path`), one breaker at a time. */
function breakStale(path: string, seen: { owner: LockOwner | null }): boolean {
  const breaker = `${path}.break`;
  if (writeFile(breaker, String(process.pid)) === 'exists') {
    // Another run is breaking it; a breaker that died is itself removed once it is old.
    try {
      if (Date.now() - statSync(breaker).mtimeMs > UNWRITTEN_STALE_MS) unlinkSync(breaker);
    } catch { /* gone meanwhile */ }
    return false;
  }
  try {
    const now = readOwner(path);
    if (!now) return true;
    const same = now.owner && seen.owner ? now.owner.nonce === seen.owner.nonce : now.owner === seen.owner;
    if (!same || !isStale(now.owner, now.ageMs)) return false;
    unlinkSync(path);
    return true;
  } finally {
    try { unlinkSync(breaker); } catch { /* gone */ }
  }
}

/**
 * Takes the lock at `path`, waiting while another live run holds it. Returns null when no lock can
 * be created there (a read-only or missing dir: the caller's own writes will say what is wrong).
 */
export async function acquireLock(path: string, w: LockWait): Promise<Lock | null> {
  const now = w.now ?? Date.now;
  const sleep = w.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const poll = w.pollMs ?? 50;
  const deadline = now() + (w.timeoutMs ?? 10 * 60_000);
  const me: LockOwner = { pid: process.pid, host: hostname(), start: processStart(process.pid), since: new Date().toISOString(), nonce: randomBytes(8).toString('hex') };
  let said = false;
  for (;;) {
    let made: 'ok' | 'exists';
    try {
      made = writeFile(path, JSON.stringify(me) + '\n');
    } catch (e) {
      if (CANNOT_LOCK.has((e as NodeJS.ErrnoException).code ?? '')) return null;
      throw fsError(e, path, 'cannot create the lock');
    }
    if (made === 'ok') return { path, release: () => release(path, me) };
    const held = readOwner(path);
    if (!held) continue;
    if (isStale(held.owner, held.ageMs)) {
      if (breakStale(path, held)) w.broke(held.owner);
      continue;
    }
    if (!said) {
      w.waiting(held.owner);
      said = true;
    }
    if (now() > deadline) {
      const who = held.owner ? `pid ${held.owner.pid} on ${held.owner.host} since ${held.owner.since}` : 'an unknown process';
      throw new InfraError(`gave up waiting for the lock held by ${who}; if no run holds it, remove the file`, path);
    }
    await sleep(poll);
  }
}

/** Removes the lock if it is still ours (never another run's). */
function release(path: string, me: LockOwner): void {
  try {
    if (readOwner(path)?.owner?.nonce === me.nonce) unlinkSync(path);
  } catch {
    // Already gone, or the dir went read-only: a stale lock is broken by the next run.
  }
}
