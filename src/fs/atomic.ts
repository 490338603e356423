// Writing what a judged run leaves behind (report.json, report.md, phase2_block.md, TODO.md) as one
// transaction: every file is prepared in full beside its target first, then each is renamed into
// place; if any step fails, the files already renamed are put back, so either every file changes
// or none does. A failure names the path and says what went wrong in words ("disk full",
// "permission denied"). Targets keep what people rely on: a symlink is written through (its target
// changes, the link stays), the file's mode (and, as root, its owner) is kept, and a read-only file
// is refused, never overwritten.
import {
  closeSync, copyFileSync, fstatSync, fsyncSync, fchmodSync, fchownSync, linkSync, lstatSync, openSync, readdirSync,
  readFileSync, realpathSync, renameSync, rmSync, statSync, unlinkSync, writeSync, type BigIntStats, type Stats,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { GateError, InfraError, InputError, fsError } from '../errors.ts';
import { kindOf, readWhole } from './read.ts';
import { makeDirs } from './mkdir.ts';

const NOTHING_CHANGED = '; nothing was changed';

/** Where a write to `path` really lands, and what is there now. */
interface Target {
  /** The path as the caller names it (messages use it). */
  path: string;
  /** The file actually written: `path` itself, or the end of its symlink chain. */
  real: string;
  /** The current file, or null when there is none yet. */
  stat: Stats | null;
}

/**
 * Resolves `path` for reading or writing: a regular file, a symlink to one, or nothing yet.
 * `follow: false` treats a symlink as the thing to replace (files in a run dir, which may come
 * from an untrusted job, are never written through a link).
 */
export function resolveTarget(path: string, follow = true): Target {
  let l: Stats;
  try {
    l = lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { path, real: path, stat: null };
    throw fsError(e, path, 'cannot read');
  }
  let real = path;
  if (l.isSymbolicLink() && !follow) return { path, real: path, stat: null };
  if (l.isSymbolicLink()) {
    try {
      real = realpathSync(path);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new InputError('is a symlink to a missing file (npu-block-gate writes through a symlink, never replaces it)', path);
      throw fsError(e, path, 'cannot resolve the symlink');
    }
  }
  const st = real === path ? l : statSync(real);
  if (!st.isFile()) throw new InputError(`is ${kindOf(st)}, not a regular file`, path);
  return { path, real, stat: st };
}

/**
 * Which version of a file was read: any write to it (in place, or a new file renamed over it)
 * changes one of these (ctime cannot be set by a user, and moves on every write).
 */
export interface Stamp { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }

function stampOf(st: BigIntStats): Stamp {
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs };
}

/** The file at `real` now, or null when there is none. */
function stampNow(real: string): Stamp | null {
  try {
    return stampOf(statSync(real, { bigint: true }));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

const sameStamp = (a: Stamp | null, b: Stamp | null) =>
  a === null || b === null ? a === b : a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;

/** A document's bytes and which version they are, or null when it does not exist (a directory, FIFO or device in its place is refused). */
export function readStamped(path: string): { data: Buffer; stamp: Stamp } | null {
  const t = resolveTarget(path);
  if (!t.stat) return null;
  let fd: number;
  try {
    fd = openSync(t.real, 'r');
  } catch (e) {
    throw fsError(e, path, 'cannot read');
  }
  try {
    // The stamp before the bytes: a write while they are read shows as a change before the replace.
    const st = fstatSync(fd, { bigint: true });
    return { data: readWhole(fd, Number(st.size)), stamp: stampOf(st) };
  } catch (e) {
    throw fsError(e, path, 'cannot read');
  } finally {
    closeSync(fd);
  }
}

/** A document's bytes, or null when it does not exist (a directory, FIFO or device in its place is refused). */
export function readDocument(path: string): Buffer | null {
  return readStamped(path)?.data ?? null;
}

/** A target changed since it was read (a hand edit saved while the run wrote): nothing was replaced. */
export class ChangedSinceRead extends InfraError {
  constructor(path: string) {
    super(`changed since npu-block-gate read it (an edit saved while it was writing?)${NOTHING_CHANGED}`, path);
    this.name = 'ChangedSinceRead';
  }
}

/** For tests: called in the transaction after every file is prepared, just before a target is checked and replaced. */
export const writeHooks: { beforeReplace?: (path: string) => void } = {};

/** Whether `real` is a mount point (a bind-mounted file), from /proc/self/mountinfo; false when that cannot be read. */
function mountOf(path: string): { ro: boolean } | null {
  let info: string;
  let real: string;
  try {
    real = realpathSync(path);
    info = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
  let found: { ro: boolean } | null = null;
  for (const line of info.split('\n')) {
    const f = line.split(' ');
    if (f.length > 5 && unescape(f[4]) === real) found = { ro: f[5].split(',').includes('ro') };
  }
  return found;
}

/** Refuses a target that exists and is read-only (for everyone: root included, who could write it anyway). */
function checkWritable(t: Target): void {
  if (t.stat && (t.stat.mode & 0o222) === 0) {
    throw new InputError(`is read-only (mode ${(t.stat.mode & 0o7777).toString(8).padStart(4, '0')}); npu-block-gate never overwrites a read-only file: make it writable, or pass --no-docs${NOTHING_CHANGED}`, t.path);
  }
}

export interface PlannedWrite {
  path: string;
  data: Uint8Array;
  /** false: a symlink at `path` is replaced, not written through. Default true. */
  follow?: boolean;
  /** This exact mode, whatever the umask or the file before (default: the old file's mode, else 0666 less the umask). */
  mode?: number;
  /** Called with the prepared temp file before anything is placed (e.g. `visudo -c -f`); a throw stops the transaction. */
  validate?: (tmp: string) => void;
  /**
   * The version of the target that was read (readStamped), null when there was none: the target is
   * replaced only while it is still that version, else the transaction fails with ChangedSinceRead
   * and changes nothing. Unset: not checked.
   */
  unchanged?: Stamp | null;
  /**
   * false: no fsync before the rename. Readers still see the old file or the new one whole; only a
   * crash of the machine may leave the new file empty. For best-effort records written on every
   * job, where an fsync can wait on all the disk's pending writes. Default true.
   */
  durable?: boolean;
}

interface Prepared extends Target {
  data: Uint8Array;
  unchanged?: Stamp | null;
  tmp: string;
  backup: string | null;
  placed: boolean;
}

/**
 * The temp file's eight hex digits. They only have to differ from the names already in the dir:
 * the file is created with O_EXCL (never opened through a link or over a file), and a name taken
 * picks another, so Math.random serves, and writing a file never loads node:crypto (the runner's
 * hooks write their state on every job).
 */
const tmpTag = () => Math.floor(Math.random() * 0x1_0000_0000).toString(16).padStart(8, '0');
const TMP_TRIES = 8;

function writeAll(fd: number, data: Uint8Array): void {
  let done = 0;
  while (done < data.length) done += writeSync(fd, data, done, data.length - done);
}

/** Writes every file or none (see the header). Throws a GateError naming the path that failed. */
export function commitWrites(writes: readonly PlannedWrite[]): void {
  const prepared: Prepared[] = [];
  const createdDirs: string[] = [];
  const undoPrepare = () => {
    for (const p of prepared) rmSync(p.tmp, { force: true });
    for (const d of createdDirs.reverse()) rmSync(d, { recursive: true, force: true });
  };
  // 1. Every target resolved and checked before anything is written.
  const targets = writes.map((w) => {
    const t = resolveTarget(w.path, w.follow ?? true);
    // A file whose mode the caller sets (the agent's sudoers rule, 0440) is ours to replace; a
    // document someone made read-only is refused.
    if (w.mode === undefined) checkWritable(t);
    return { ...t, data: w.data, mode: w.mode, validate: w.validate, durable: w.durable ?? true, unchanged: w.unchanged };
  });
  // 2. Every file prepared in full beside its target (same directory: the rename is atomic).
  try {
    for (const t of targets) {
      const dir = dirname(t.real);
      try {
        const made = makeDirs(dir);
        if (made) createdDirs.push(made);
      } catch (e) {
        throw fsError(e, dir, 'cannot create the directory', NOTHING_CHANGED);
      }
      let tmp: string;
      let fd: number;
      for (let tries = 1; ; tries++) {
        tmp = join(dir, `.${basename(t.real)}.nbg-${process.pid}-${tmpTag()}.tmp`);
        try {
          fd = openSync(tmp, 'wx', t.mode ?? (t.stat ? t.stat.mode & 0o777 : 0o666));
          break;
        } catch (e) {
          // A name already there (a leftover of a killed run that had this pid) is never opened: take another.
          if ((e as NodeJS.ErrnoException).code === 'EEXIST' && tries < TMP_TRIES) continue;
          throw fsError(e, t.path, `cannot write (in ${dir})`, NOTHING_CHANGED);
        }
      }
      prepared.push({ ...t, tmp, backup: null, placed: false });
      try {
        writeAll(fd, t.data);
        if (t.mode !== undefined) fchmodSync(fd, t.mode);
        else if (t.stat) fchmodSync(fd, t.stat.mode & 0o7777);
        if (t.stat) {
          if (process.getuid?.() === 0 && (t.stat.uid !== 0 || t.stat.gid !== 0)) fchownSync(fd, t.stat.uid, t.stat.gid);
        }
        if (t.durable) fsyncSync(fd);
      } catch (e) {
        throw fsError(e, t.path, 'cannot write', NOTHING_CHANGED);
      } finally {
        closeSync(fd);
      }
      t.validate?.(tmp);
    }
  } catch (e) {
    undoPrepare();
    throw e instanceof GateError ? e : fsError(e, writes[prepared.length]?.path ?? '', 'cannot write', NOTHING_CHANGED);
  }
  // 3. Each renamed into place; an existing file is kept as a backup until all are placed.
  try {
    for (const p of prepared) {
      writeHooks.beforeReplace?.(p.path);
      if (p.unchanged !== undefined && !sameStamp(p.unchanged, stampNow(p.real))) throw new ChangedSinceRead(p.path);
      if (p.stat) {
        p.backup = `${p.tmp}.bak`;
        try {
          linkSync(p.real, p.backup);
        } catch {
          copyFileSync(p.real, p.backup);
        }
      }
      renameSync(p.tmp, p.real);
      p.placed = true;
    }
  } catch (e) {
    const failed = prepared.find((p) => !p.placed)!;
    for (const p of prepared.filter((x) => x.placed).reverse()) {
      try {
        if (p.backup) renameSync(p.backup, p.real);
        else unlinkSync(p.real);
      } catch {
        // Best effort: the error below still names the file that could not be written.
      }
    }
    undoPrepare();
    for (const p of prepared) if (p.backup) rmSync(p.backup, { force: true });
    if ((e as NodeJS.ErrnoException).code === 'EBUSY') {
      // rename(2) cannot replace a mount point: a bind-mounted document.
      const m = mountOf(failed.real);
      if (m) throw new InputError(`cannot replace: it is ${m.ro ? 'a read-only bind mount' : 'bind-mounted'} (a mount point of its own), and npu-block-gate replaces a document by renaming a new file over it; ${m.ro ? 'mount it read-write and ' : ''}bind-mount its directory instead of the file, or pass --no-docs${NOTHING_CHANGED}`, failed.path);
    }
    throw fsError(e, failed.path, 'cannot replace', NOTHING_CHANGED);
  }
  for (const p of prepared) if (p.backup) rmSync(p.backup, { force: true });
}

/** A hidden file commitWrites leaves beside a target only when it is killed mid-write: the prepared
 * file (`.NAME.nbg-PID-HEX.tmp`) or the kept original (`...tmp.bak`). */
const LEFTOVER = /^\.(.+)\.nbg-(\d+)-[0-9a-f]{8}\.tmp(\.bak)?$/;

function pidRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface Swept {
  removed: string[];
  /** Leftovers that could not be removed, with why. */
  kept: string[];
}

/**
 * Removes what an interrupted transaction left in `dirs` (a SIGKILL between prepare and rename).
 * `exclusive`: the caller holds the lock on these files, so every leftover is stale; otherwise only
 * those of a process that is no longer running (or of this one, which has no write in progress).
 */
export function sweepLeftovers(dirs: readonly string[], exclusive: boolean): Swept {
  const out: Swept = { removed: [], kept: [] };
  for (const dir of new Set(dirs)) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const n of names) {
      const m = LEFTOVER.exec(n);
      if (!m) continue;
      const pid = Number(m[2]);
      if (!exclusive && pid !== process.pid && pidRunning(pid)) continue;
      const path = join(dir, n);
      try {
        if (!lstatSync(path).isFile()) continue;
        rmSync(path, { force: true });
        out.removed.push(path);
      } catch (e) {
        out.kept.push(fsError(e, path, 'cannot remove').message);
      }
    }
  }
  return out;
}

/** One file, atomically (write beside it, then rename), with the same checks and messages. */
export function writeAtomic(path: string, data: string | Uint8Array, o: boolean | Pick<PlannedWrite, 'follow' | 'mode' | 'validate' | 'durable'> = true): void {
  const opts = typeof o === 'boolean' ? { follow: o } : o;
  commitWrites([{ path, data: typeof data === 'string' ? Buffer.from(data, 'utf8') : data, ...opts }]);
}
