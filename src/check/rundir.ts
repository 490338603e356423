// The run dir before a probe writes it, and before a judge writes into it.
import { existsSync, lstatSync, readdirSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BusyError, InputError, fsError } from '../errors.ts';
import type { Log } from '../log.ts';
import { acquireLock, type LockOwner } from '../fs/lock.ts';
import { RUN_DIRS, RUN_FILES } from '../rundir/schema.ts';
import { readDocument } from '../fs/atomic.ts';
import { makeDirs } from '../fs/mkdir.ts';
import { REPORT_SCHEMA } from '../record/report.ts';

/** Every file a run leaves at the top of its run dir (the contract's names). */
const RUN_ENTRIES = Object.values(RUN_FILES);

/** The run dir's own lock, inside it (never the documents' lock file: a run dir may be a model dir). */
export const RUN_LOCK = '.npu-block-gate-run.lock';

/** The lock and the file that serialises breaking a stale one (fs/lock.ts): a run dir's, never a run's files. */
const isLockFile = (name: string) => name === RUN_LOCK || name === `${RUN_LOCK}.break`;

/** How long `report` waits for a run dir in use before it refuses it, and how often it says it still waits. */
const RUN_WAIT_MS = 30 * 60_000;
const RUN_WAIT_PROGRESS_MS = 15_000;

interface RunDirHold {
  release(): void;
}

/** Who holds a run dir, in words. */
function holderOf(o: LockOwner | null): string {
  return o ? `pid ${o.pid} on ${o.host}, started ${o.since}` : 'a run whose lock is not written yet';
}

/**
 * One run per run dir. `check` ('refuse') takes the run dir's lock (creating the dir) for its whole
 * life and refuses a run dir another run holds: BusyError naming the holder, nothing touched.
 * `report` ('wait') waits while a run holds it, saying so every RUN_WAIT_PROGRESS_MS, then holds it
 * while it judges: it never reads tensors a probe is still writing, and refuses after waitMs. A lock
 * whose holder is gone is broken (fs/lock.ts) and said. Where no lock can be made (a read-only run
 * dir, a path that is a file) nothing is held: what reads or writes the run dir says what is wrong.
 * Released, a run dir this created and nothing filled is removed again.
 */
export async function holdRunDir(runDir: string, how: 'refuse' | 'wait', log: Log, o: { waitMs?: number; progressMs?: number } = {}): Promise<RunDirHold> {
  let made = false;
  if (how === 'refuse' && !existsSync(runDir)) {
    try {
      made = makeDirs(runDir) !== undefined;
    } catch {
      return { release: () => undefined };
    }
  }
  const path = join(runDir, RUN_LOCK);
  const waitMs = o.waitMs ?? RUN_WAIT_MS;
  const progressMs = o.progressMs ?? RUN_WAIT_PROGRESS_MS;
  let holder: LockOwner | null = null;
  let started = 0;
  let said = 0;
  const lock = await acquireLock(path, {
    waiting: (who) => {
      holder = who;
      if (how === 'refuse') throw new BusyError(`is in use by another run (${holderOf(who)}); wait for it to finish, or choose another --out`, runDir);
      started = said = Date.now();
      log.step(`run dir: waiting for ${runDir}: in use by another run (${holderOf(who)}), which is still writing it`);
    },
    broke: (who) => log.step(`run dir: removed a stale lock ${path} (${who ? `pid ${who.pid} on ${who.host} is no longer running` : 'never written'})`),
    // The wait is bounded here (fs/lock's own deadline is past it), so the refusal names the holder.
    timeoutMs: waitMs + 60_000,
    pollMs: 100,
    sleep: async (ms) => {
      const now = Date.now();
      if (now - started > waitMs) throw new BusyError(`is still in use by another run (${holderOf(holder)}) after ${Math.round(waitMs / 1000)}s of waiting; judge it when that run is done`, runDir);
      if (now - said >= progressMs) {
        said = now;
        log.step(`run dir: still waiting for ${runDir} (${Math.round((now - started) / 1000)}s; ${holderOf(holder)})`);
      }
      await new Promise<void>((r) => setTimeout(r, ms));
    },
  }).catch((e: unknown) => {
    if (made) try { rmdirSync(runDir); } catch { /* not empty, or gone */ }
    throw e;
  });
  return {
    release: () => {
      lock?.release();
      if (made) try { rmdirSync(runDir); } catch { /* not empty (the run's files), or gone */ }
    },
  };
}

/** Removes the files of ours in `dir` (by name), then the dir itself if nothing else is left in it. */
function removeOurs(dir: string, ours: RegExp): void {
  let names: string[];
  try {
    if (!lstatSync(dir).isDirectory()) return;
    names = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw fsError(e, dir, 'cannot read what an earlier run left');
  }
  for (const n of names.filter((x) => ours.test(x))) {
    const p = join(dir, n);
    try {
      if (!lstatSync(p).isDirectory()) rmSync(p, { force: true });
    } catch (e) {
      throw fsError(e, p, 'cannot remove what an earlier run left');
    }
  }
  try {
    if (readdirSync(dir).length === 0) rmSync(dir, { recursive: true, force: true });
  } catch (e) {
    throw fsError(e, dir, 'cannot remove what an earlier run left');
  }
}

/**
 * The run dir, ready for a new probe: created if need be; an existing one is refused unless `force`
 * allows it (the CLI asks for --force; the Action always starts afresh), and then every file an
 * earlier run wrote there is removed (by name), so nothing stale (a report, a bisect, a layer) can
 * be judged with the new block. Other files, in the dir or in its bisect/, layers/ and boundaries/,
 * are never touched.
 */
export function prepareRunDir(runDir: string, force: boolean | undefined): void {
  let st;
  try {
    st = lstatSync(runDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw fsError(e, runDir, 'cannot use as the run dir');
  }
  if (st && !st.isDirectory() && !(st.isSymbolicLink() && existsSync(runDir) && statSync(runDir).isDirectory())) {
    throw new InputError('is an existing file, not a directory; the run dir (--out) must be a new or empty directory', runDir);
  }
  if (st) {
    let entries: string[];
    try {
      entries = readdirSync(runDir).filter((n) => !isLockFile(n));
    } catch (e) {
      throw fsError(e, runDir, 'cannot read the run dir');
    }
    if (entries.length && force === false) {
      const isRun = entries.some((n) => n === RUN_FILES.probe || n === RUN_FILES.report || n === RUN_FILES.probeLog);
      throw new InputError(`${isRun ? 'already holds a run' : 'exists and is not empty'}; pass --force to replace ${isRun ? 'it' : 'the run files in it'}, or choose another --out`, runDir);
    }
    for (const name of RUN_ENTRIES) {
      const p = join(runDir, name);
      try {
        // A file of ours, or a link in its place; never a directory someone put there.
        if (lstatSync(p, { throwIfNoEntry: false })?.isDirectory() === false) rmSync(p, { force: true });
      } catch (e) {
        throw fsError(e, p, 'cannot remove what an earlier run left');
      }
    }
    for (const [d, ours] of RUN_DIRS) removeOurs(join(runDir, d), ours);
  }
  try {
    makeDirs(runDir);
  } catch (e) {
    throw fsError(e, runDir, 'cannot create the run dir');
  }
}

/** report.json, report.md and report.html of an earlier judge of this run dir: removed before judging again, so a
 * stale verdict never outlives a judge that fails. Returns those that could not be removed (a
 * read-only run dir). */
export function removeStaleReports(runDir: string): string[] {
  // Only in a run dir: one with a probe.json, or whose report.json is ours.
  const ours = existsSync(join(runDir, RUN_FILES.probe)) || (() => {
    try {
      return (JSON.parse(readDocument(join(runDir, RUN_FILES.report))?.toString('utf8') ?? '{}') as { schema?: unknown }).schema === REPORT_SCHEMA;
    } catch {
      return false;
    }
  })();
  const kept: string[] = [];
  if (!ours) return kept;
  for (const name of [RUN_FILES.report, RUN_FILES.markdown, RUN_FILES.html]) {
    const path = join(runDir, name);
    let st;
    try {
      st = lstatSync(path);
    } catch {
      continue;
    }
    if (st.isDirectory()) throw new InputError(`is a directory; the run dir's ${name} must be a file`, path);
    try {
      rmSync(path, { force: true });
    } catch (e) {
      // A run dir on read-only media is judged all the same; the earlier report there is named.
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') kept.push(path);
      else throw fsError(e, path, 'cannot remove the report of an earlier judge');
    }
  }
  return kept;
}
