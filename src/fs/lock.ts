// An advisory lock held across a read-modify-write of files others may write at the same time
// (a model dir's documents: two runs on one model dir must not lose each other's history rows).
// Node has no flock(2), so the lock is a file created with O_EXCL holding its owner (pid, host,
// the machine's boot id, the process's start time, a nonce). A lock whose owner is gone is stale
// and broken: at once when the owner is checkable (this host, same boot: its pid is gone or now
// another process; or this host before a restart), after FOREIGN_STALE_MS when it is not (another
// host: a killed CI container sharing the checkout), or at once when the caller says so
// (`--break-lock`). A live lock of another host is not waited for: whether it still runs cannot be
// checked from here, so the caller is told at once (LockHeld) and goes on without the documents.
// Breaking is itself serialised by a second O_EXCL file, so two runs that find the same stale lock
// cannot remove a fresh one between them. A lock file whose owner could not be written (a full
// disk) is removed at once: no empty lock is left behind.
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { InfraError, fsError } from '../errors.ts';

/** The lock is held by a live run that cannot be waited for, or a wait gave up: the message names the holder. */
class LockHeld extends InfraError {
  constructor(message: string, path: string) {
    super(message, path);
    this.name = 'LockHeld';
  }
}

export interface LockOwner {
  pid: number;
  host: string;
  /** The owner's machine boot (Linux: /proc/sys/kernel/random/boot_id): a lock from before a restart is stale. */
  boot?: string | null;
  /** The owner process's start time (Linux: /proc/<pid>/stat field 22), so a reused pid is not mistaken for it. */
  start: string | null;
  since: string;
  nonce: string;
}

interface LockWait {
  /** Said once, when the lock is held by another run: what we wait for. */
  waiting: (owner: LockOwner | null) => void;
  /** Said when a stale lock is removed: whose, and why it was stale. */
  broke: (owner: LockOwner | null, why: string) => void;
  /** Break at once a lock whose owner cannot be checked from here (another host, or no owner
   * written): `--break-lock`. A live owner on this host is never broken. */
  breakLock?: boolean;
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
export const FOREIGN_STALE_MS = 30 * 60_000;
/** A lock file without an owner yet (its creator between open and write) is stale after this. */
const UNWRITTEN_STALE_MS = 10_000;
/** errnos that mean the lock cannot be created here at all (a read-only or foreign dir): the caller goes on unlocked and its own writes say why. */
const CANNOT_LOCK = new Set(['EROFS', 'EACCES', 'EPERM', 'ENOENT', 'ENOTDIR']);

/** This machine's boot id (Linux), or null. */
export function bootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
  } catch {
    return null;
  }
}

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
      owner = { pid: o.pid!, host: o.host, boot: typeof o.boot === 'string' ? o.boot : null, start: typeof o.start === 'string' ? o.start : null, since: String(o.since ?? ''), nonce: o.nonce };
    }
  } catch {
    // Half-written or foreign: judged by its age below.
  }
  return { owner, ageMs: Date.now() - mtime };
}

/** What a lock at hand is: stale (with why), held by a live run here (wait), or held by another host (not checkable). */
type Judged = { stale: true; why: string } | { stale: false; foreign: false } | { stale: false; foreign: true; staleAt: number };

const minutes = (ms: number) => `${Math.round(ms / 60_000)} min`;

/** Whether the lock's owner is gone, and why (said to the user when it is broken). */
function judge(owner: LockOwner | null, ageMs: number, breakLock: boolean): Judged {
  if (!owner) {
    if (breakLock) return { stale: true, why: 'it names no owner; broken as --break-lock asks' };
    return ageMs > UNWRITTEN_STALE_MS ? { stale: true, why: `it names no owner and is ${Math.round(ageMs / 1000)} s old` } : { stale: false, foreign: false };
  }
  if (owner.host !== hostname()) {
    if (ageMs > FOREIGN_STALE_MS) return { stale: true, why: `pid ${owner.pid} on another host, ${owner.host}, took it ${minutes(ageMs)} ago; a lock from another host is stale after ${minutes(FOREIGN_STALE_MS)}` };
    if (breakLock) return { stale: true, why: `pid ${owner.pid} on another host, ${owner.host}, took it ${minutes(ageMs)} ago; broken as --break-lock asks` };
    return { stale: false, foreign: true, staleAt: Date.now() - ageMs + FOREIGN_STALE_MS };
  }
  const boot = bootId();
  if (owner.boot && boot && owner.boot !== boot) return { stale: true, why: `pid ${owner.pid} took it before this machine restarted` };
  try {
    process.kill(owner.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return { stale: true, why: `pid ${owner.pid} is no longer running` };
  }
  // Alive, unless the pid now belongs to a later process.
  const start = processStart(owner.pid);
  if (owner.start !== null && start !== null && start !== owner.start) return { stale: true, why: `pid ${owner.pid} is no longer running (the pid is another process's now)` };
  return { stale: false, foreign: false };
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
  } catch (e) {
    // Nothing half-made stays (a full disk creates the file but not its owner line).
    closeSync(fd);
    try { unlinkSync(path); } catch { /* gone */ }
    throw e;
  }
  closeSync(fd);
  return 'ok';
}

/** Removes the stale lock `seen` (if it is still the one at `path`), one breaker at a time. */
function breakStale(path: string, seen: { owner: LockOwner | null }, breakLock: boolean): boolean {
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
    if (!same || !judge(now.owner, now.ageMs, breakLock).stale) return false;
    unlinkSync(path);
    return true;
  } finally {
    try { unlinkSync(breaker); } catch { /* gone */ }
  }
}

/**
 * Takes the lock at `path`, waiting while another live run on this host holds it. Returns null when
 * no lock can be created there (a read-only or missing dir: the caller's own writes will say what is
 * wrong). Throws LockHeld, naming the holder, when a live lock of another host holds it (at once: it
 * cannot be checked from here) or when the wait times out; a full disk is an error saying so.
 */
export async function acquireLock(path: string, w: LockWait): Promise<Lock | null> {
  const now = w.now ?? Date.now;
  const sleep = w.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const poll = w.pollMs ?? 50;
  const deadline = now() + (w.timeoutMs ?? 10 * 60_000);
  const me: LockOwner = { pid: process.pid, host: hostname(), boot: bootId(), start: processStart(process.pid), since: new Date().toISOString(), nonce: randomBytes(8).toString('hex') };
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
    const j = judge(held.owner, held.ageMs, !!w.breakLock);
    if (j.stale) {
      let broke: boolean;
      try {
        broke = breakStale(path, held, !!w.breakLock);
      } catch (e) {
        throw fsError(e, path, `cannot break the stale lock (${j.why})`);
      }
      if (broke) w.broke(held.owner, j.why);
      continue;
    }
    const o = held.owner;
    const who = o ? `pid ${o.pid} on ${o.host} since ${o.since}` : 'an unknown process';
    if (j.foreign) {
      throw new LockHeld(`held by ${who}: another host, so whether that run still goes on cannot be checked from here; the lock counts as stale ${minutes(FOREIGN_STALE_MS)} after it was taken (at ${new Date(j.staleAt).toISOString()}); if no run holds it, pass --break-lock`, path);
    }
    if (!said) {
      w.waiting(o);
      said = true;
    }
    if (now() > deadline) {
      throw new LockHeld(`gave up waiting for the lock held by ${who} (a live process on this host); if no run holds it, remove the file`, path);
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
