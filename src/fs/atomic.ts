// Writing what a judged run leaves behind (report.json, report.md, phase2_block.md, TODO.md) as one
// transaction: every file is prepared in full beside its target first, then each is renamed into
// place; if any step fails, the files already renamed are put back, so either every file changes
// or none does. A failure names the path and says what went wrong in words ("disk full",
// "permission denied"). Targets keep what people rely on: a symlink is written through (its target
// changes, the link stays), the file's mode (and, as root, its owner) is kept, and a read-only file
// is refused, never overwritten.
import {
  closeSync, copyFileSync, fstatSync, fsyncSync, fchmodSync, fchownSync, linkSync, lstatSync, openSync, readdirSync,
  realpathSync, renameSync, rmSync, statSync, unlinkSync, writeSync, type Stats,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { GateError, InputError, fsError } from '../errors.ts';
import { kindOf, readWhole } from './read.ts';
import { makeDirs } from './mkdir.ts';

const NOTHING_CHANGED = '; nothing was changed';

/** Where a write to `path` really lands, and what is there now. */
export interface Target {
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

/** A document's bytes, or null when it does not exist (a directory, FIFO or device in its place is refused). */
export function readDocument(path: string): Buffer | null {
  const t = resolveTarget(path);
  if (!t.stat) return null;
  let fd: number;
  try {
    fd = openSync(t.real, 'r');
  } catch (e) {
    throw fsError(e, path, 'cannot read');
  }
  try {
    return readWhole(fd, fstatSync(fd).size);
  } catch (e) {
    throw fsError(e, path, 'cannot read');
  } finally {
    closeSync(fd);
  }
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
   * false: no fsync before the rename. Readers still see the old file or the new one whole; only a
   * crash of the machine may leave the new file empty. For best-effort records written on every
   * job, where an fsync can wait on all the disk's pending writes. Default true.
   */
  durable?: boolean;
}

interface Prepared extends Target {
  data: Uint8Array;
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
    return { ...t, data: w.data, mode: w.mode, validate: w.validate, durable: w.durable ?? true };
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

export interface Swept {
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
