// One door out of the sandbox (DESIGN.md "Trust"). The probe runs the pull request's code, so
// nothing it writes may land where this process, or a later job, acts: not the checkout (a planted
// .git there would steer our git; 0755 dirs of the probe user's there break the next checkout), not
// the runner's _temp, not the run dir we upload. For each run this process makes a staging area
// outside the checkout:
//   <root>/out      the probe's run dir (--out): the only place its results go;
//   <root>/scratch  its TMPDIR;
//   <root>/model    a private copy of the model dir, seen inside the sandbox where the model dir is,
//                   so the tree's own build outputs (kernel builds, caches) land in the copy.
// The tree and the model dir themselves are read-only inside. When the probe has exited, `take`
// copies out of <root>/out the run-dir contract's files alone (regular files, opened without
// following links, under a size cap) into the real run dir, and `remove` deletes everything else,
// whoever owns it (through the probe user where this process cannot).
import { spawnSync } from 'node:child_process';
import {
  chmodSync, chownSync, closeSync, constants, copyFileSync, fstatSync, lchownSync, lstatSync, mkdirSync, mkdtempSync,
  openSync, readdirSync, readFileSync, readlinkSync, readSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync, writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { InfraError, fsError } from '../errors.ts';
import { processStart } from '../fs/lock.ts';
import { RUN_DIRS, RUN_FILES } from '../rundir/schema.ts';
import type { Isolation } from './isolate.ts';

/** The largest file taken out of the sandbox (a 2048 x 8192 float32 tensor is 64 MiB). */
const TAKE_MAX_BYTES = 2 * 1024 ** 3;
/** The model dir is copied up to this many bytes; a subdir that does not fit is seen empty. */
export const MODEL_COPY_MAX_BYTES = 512 * 1024 ** 2;
/** The prefix of every staging dir (the next run sweeps a killed run's: sweepStaging). */
const STAGING_PREFIX = 'npu-block-gate-probe-';

/** The files the probe may hand out: the contract's top-level names (not the judge's report files). */
const TAKEN_FILES = [RUN_FILES.probe, RUN_FILES.npu, RUN_FILES.ref, RUN_FILES.input, RUN_FILES.probeLog];

interface Taken {
  /** Paths relative to the run dir, copied in. */
  files: string[];
  /** Contract names that were there but refused, and why. */
  refused: { name: string; why: string }[];
}

type Share = NonNullable<Isolation['share']>;

const within = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith(sep) ? dir : dir + sep);

/** Bytes under a path, no link followed, stopping once past `cap`. */
function sizeOf(p: string, cap: number): number {
  const st = lstatSync(p);
  if (!st.isDirectory()) return st.isFile() ? st.size : 0;
  let n = 0;
  for (const name of readdirSync(p)) {
    if (name === '.git') continue;
    n += sizeOf(join(p, name), cap - n);
    if (n > cap) break;
  }
  return n;
}

/** Copies one entry without following a link (a link is copied as a link, a dir whole); anything
 * not a file, dir or link, and .git anywhere, is left out. */
function copyEntry(s: string, d: string, st = lstatSync(s)): void {
  if (st.isDirectory()) {
    mkdirSync(d, { mode: 0o755 });
    for (const name of readdirSync(s)) if (name !== '.git') copyEntry(join(s, name), join(d, name));
  } else if (st.isFile()) copyFileSync(s, d);
  else if (st.isSymbolicLink()) symlinkSync(readlinkSync(s), d);
}

/** Gives the probe's host uid a dir this process made (and everything in it; links themselves only). */
function shareTree(p: string, share: Share, owner: { uid: number; gid: number }): void {
  const st = lstatSync(p);
  if (share.how === 'chown') lchownSync(p, owner.uid, owner.gid);
  else if (!st.isSymbolicLink()) {
    chownSync(p, -1, share.gid);
    chmodSync(p, (st.mode & 0o777) | (st.isDirectory() ? 0o2770 : 0o660));
  }
  if (st.isDirectory()) for (const n of readdirSync(p)) shareTree(join(p, n), share, owner);
}

/** Copies one regular file out of the sandbox: opened without following a link, checked to be a
 * regular file under the cap on the open descriptor, written beside the target and renamed. */
function copyOut(src: string, dest: string): string | null {
  let fd: number;
  try {
    fd = openSync(src, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return 'a symlink (only regular files leave the sandbox)';
    if (code === 'EACCES' || code === 'EPERM') return 'not readable';
    return `cannot be opened (${code ?? 'error'})`;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return 'not a regular file';
    if (st.size > TAKE_MAX_BYTES) return `over ${TAKE_MAX_BYTES / 1024 ** 3} GiB`;
    const tmp = `${dest}.nbg-take-${process.pid}`;
    const out = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
    let ok = false;
    try {
      const buf = Buffer.allocUnsafe(Math.min(8 << 20, Math.max(st.size, 1)));
      let left = st.size;
      while (left > 0) {
        const n = readSync(fd, buf, 0, Math.min(buf.length, left), null);
        if (n <= 0) break;
        let off = 0;
        while (off < n) off += writeSync(out, buf, off, n - off);
        left -= n;
      }
      ok = true;
    } finally {
      closeSync(out);
      if (!ok) try { unlinkSync(tmp); } catch { /* not there */ }
    }
    renameSync(tmp, dest);
    return null;
  } finally {
    closeSync(fd);
  }
}

const OWNER_FILE = 'owner.json';

/**
 * Removes the staging areas under `base` whose run is gone (a run killed before it could remove its
 * own: SIGKILL, a cancelled job): only ours (the prefix, an owner file at the top that the probe
 * could not have written), and only when their pid is gone or is now another process. `asProbe`
 * removes what the probe user left where this process cannot. Returns the dirs removed.
 */
export function sweepStaging(asProbe: string[] | null, base: string = tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try { names = readdirSync(base).filter((n) => n.startsWith(STAGING_PREFIX)); } catch { return removed; }
  const me = process.getuid?.();
  for (const n of names) {
    const root = join(base, n);
    let owner: { pid?: unknown; start?: unknown };
    try {
      const st = lstatSync(root);
      if (!st.isDirectory() || (me !== 0 && st.uid !== me)) continue;
      owner = JSON.parse(readFileSync(join(root, OWNER_FILE), 'utf8'));
    } catch { continue; }
    if (typeof owner.pid !== 'number') continue;
    const start = processStart(owner.pid);
    if (start !== null && start === owner.start) continue; // its run is still going
    if (Staging.left(root, asProbe).removeAll() === null) removed.push(root);
  }
  return removed;
}

/**
 * The one door: copies the run-dir contract's files from `from` (a dir someone else wrote: the
 * probe's run dir, an artifact a probe job uploaded) into `runDir` (this process's own): probe.json,
 * the block-0 tensors, probe.log, and the files of layers/, boundaries/ and bisect/ whose names the
 * contract gives; never the judge's own report files, nothing else. Each must be a regular file (a
 * link is refused, never followed), at most TAKE_MAX_BYTES. `only` narrows it: some top-level names,
 * and the dirs or not. All or nothing: a failure removes what this call copied.
 */
export function takeRunFiles(from: string, runDir: string, only?: { top: string[]; dirs: boolean }): Taken {
  const res: Taken = { files: [], refused: [] };
  const one = (rel: string) => {
    const src = join(from, rel);
    let st;
    try { st = lstatSync(src); } catch { return; }
    if (st.isSymbolicLink()) { res.refused.push({ name: rel, why: 'a symlink (only regular files leave the sandbox)' }); return; }
    if (!st.isFile()) { res.refused.push({ name: rel, why: 'not a regular file' }); return; }
    const why = copyOut(src, join(runDir, rel));
    if (why) res.refused.push({ name: rel, why });
    else res.files.push(rel);
  };
  try {
    for (const name of TAKEN_FILES) if (!only || only.top.includes(name)) one(name);
    if (!only || only.dirs) {
      for (const [dir, ours] of RUN_DIRS) {
        let st;
        try { st = lstatSync(join(from, dir)); } catch { continue; }
        if (!st.isDirectory()) { res.refused.push({ name: dir, why: 'not a directory' }); continue; }
        let names: string[];
        try { names = readdirSync(join(from, dir)).filter((n) => ours.test(n)).sort(); } catch { res.refused.push({ name: dir, why: 'not readable' }); continue; }
        if (!names.length) continue;
        mkdirSync(join(runDir, dir), { recursive: true });
        for (const n of names) one(`${dir}/${n}`);
      }
    }
  } catch (e) {
    for (const f of res.files) try { unlinkSync(join(runDir, f)); } catch { /* gone */ }
    throw fsError(e, runDir, 'cannot copy the probe\'s results into the run dir');
  }
  return res;
}

const live = new Set<Staging>();
let exitHooked = false;

export class Staging {
  readonly out: string;
  readonly scratch: string;
  /** The model dir's private copy (bound where the model dir is), or null (no sandbox: the model dir itself). */
  readonly model: string | null;
  /** What the copy left out (a subdir over the budget is seen empty). */
  readonly leftOut: string[] = [];
  private removed = false;

  private constructor(readonly root: string, readonly modelDir: string | null, copy: boolean, private readonly asProbe: string[] | null) {
    this.out = join(root, 'out');
    this.scratch = join(root, 'scratch');
    this.model = copy && modelDir ? join(root, 'model') : null;
  }

  /** An area a run that is gone left behind (sweepStaging). */
  static left(root: string, asProbe: string[] | null): Staging {
    return new Staging(root, null, false, asProbe);
  }

  /**
   * A fresh staging area for one run. `iso` says whose the probe's files are: this process's own
   * (none, namespace as a non-root runner), another uid's made its owner (root: chown), or shared
   * through a group (sudo). The model dir is copied when the probe runs in a sandbox.
   */
  static create(o: { modelDir: string | null; iso: Pick<Isolation, 'mode' | 'probeOwner' | 'share' | 'asProbe'>; base?: string }): Staging {
    const sandboxed = o.iso.mode !== 'none' && !!o.modelDir;
    const base = o.base ?? tmpdir();
    let root: string;
    try {
      root = mkdtempSync(join(base, STAGING_PREFIX));
    } catch (e) {
      throw fsError(e, base, 'cannot make the probe\'s staging dir');
    }
    const s = new Staging(root, o.modelDir ? resolve(o.modelDir) : null, sandboxed, o.iso.asProbe ?? null);
    live.add(s);
    // Whose it is: a later run removes the area of a run that was killed (its pid gone). The root
    // is this process's, not the probe's to write.
    try { writeFileSync(join(root, OWNER_FILE), JSON.stringify({ pid: process.pid, start: processStart(process.pid) })); } catch { /* the sweep then leaves it */ }
    if (!exitHooked) {
      exitHooked = true;
      process.on('exit', () => { for (const l of live) l.remove(); });
    }
    try {
      mkdirSync(s.out, { mode: 0o755 });
      mkdirSync(s.scratch, { mode: 0o700 });
      if (s.model) s.copyModel();
      const owner = o.iso.probeOwner;
      if (owner) {
        const share = o.iso.share;
        if (!share) throw new InfraError(`the probe user ${owner.user} shares no group with this user, so it could write no run dir; run \`npu-block-gate agent setup\` (it puts both in one group)`);
        // The root of the area: passable by the probe user (no sandbox: uid mode degraded), listed by nobody else.
        if (share.how === 'group') { chownSync(root, -1, share.gid); chmodSync(root, 0o2750); } else chmodSync(root, 0o711);
        for (const d of [s.out, s.scratch, ...(s.model ? [s.model] : [])]) shareTree(d, share, owner);
      } else chmodSync(root, 0o700);
    } catch (e) {
      s.remove();
      throw e instanceof InfraError ? e : fsError(e, root, 'cannot prepare the probe\'s staging dir');
    }
    return s;
  }

  private copyModel(): void {
    const src = this.modelDir!;
    const dest = this.model!;
    mkdirSync(dest, { mode: 0o755 });
    // Smallest first, so a big build dir left from a local make is what is left out, not the sources.
    const entries = readdirSync(src).filter((n) => n !== '.git').map((n) => ({ n, size: sizeOf(join(src, n), MODEL_COPY_MAX_BYTES + 1) }));
    entries.sort((a, b) => a.size - b.size || (a.n < b.n ? -1 : 1));
    let budget = MODEL_COPY_MAX_BYTES;
    for (const { n, size } of entries) {
      const s = join(src, n);
      const d = join(dest, n);
      const st = lstatSync(s);
      if (size > budget) {
        this.leftOut.push(n);
        if (st.isDirectory()) mkdirSync(d, { mode: 0o755 });
        continue;
      }
      budget -= size;
      copyEntry(s, d, st);
    }
  }

  /** What the sandbox binds writable: the staging dirs at their paths, the model copy where the model dir is. */
  binds(): { writable: string[]; mounts: { src: string; dest: string }[] } {
    return { writable: [this.scratch, this.out], mounts: this.model ? [{ src: this.model, dest: this.modelDir! }] : [] };
  }

  /** Where a path the probe sees under the model dir is on this host (in the copy); the path itself otherwise. */
  hostPath(p: string): string {
    const abs = resolve(p);
    if (!this.model || !within(abs, this.modelDir!)) return abs;
    return join(this.model, relative(this.modelDir!, abs));
  }

  /**
   * The one door: copies the run-dir contract's files from the probe's run dir into `runDir` (this
   * process's own): see takeRunFiles.
   */
  take(runDir: string, only?: { top: string[]; dirs: boolean }): Taken {
    return takeRunFiles(this.out, runDir, only);
  }

  /** Removes the whole area (through the probe user first, where its files are not this process's to
   * remove); the reason when something is left, else null. Idempotent. */
  remove(): string | null {
    if (this.removed) return null;
    return this.removeAll();
  }

  /** remove(), whether or not this process made the area (sweepStaging). */
  removeAll(): string | null {
    const gone = () => { try { lstatSync(this.root); return false; } catch { return true; } };
    const rm = () => { try { rmSync(this.root, { recursive: true, force: true }); } catch { /* what is left is named below */ } };
    rm();
    if (!gone() && this.asProbe) {
      spawnSync(this.asProbe[0], [...this.asProbe.slice(1), 'rm', '-rf', '--', this.out, this.scratch, join(this.root, 'model')], { stdio: 'ignore', cwd: '/', timeout: 120_000 });
      rm();
    }
    if (!gone()) return `${this.root} could not be removed whole`;
    this.removed = true;
    live.delete(this);
    return null;
  }
}
