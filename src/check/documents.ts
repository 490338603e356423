// The documents step (DESIGN.md "Documents"): phase2_block.md and TODO.md of the model dir, read
// before the verdict (the history gives the regression baseline) and written after it, with
// report.json, report.md and report.html, as one transaction: all of them, or none.
import { dirname, join, relative, isAbsolute } from 'node:path';
import { closeSync, openSync, realpathSync, unlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Log } from '../log.ts';
import { GateError, fsError } from '../errors.ts';
import { readStamped, resolveTarget, sweepLeftovers, type PlannedWrite, type Stamp } from '../fs/atomic.ts';
import { confineBelow } from '../fs/confine.ts';
import { acquireLock, type Lock } from '../fs/lock.ts';
import { decodeDoc, encodeDoc } from '../docs/text.ts';
import { DOC_PATHS } from '../docs/markers.ts';
import { baselineFor, readHistory, updatePhase2, type HistoryEntry, type HistoryView } from '../docs/phase2.ts';
import { updateTodo } from '../docs/todo.ts';
import type { Baseline, Documented } from '../gates/evaluate.ts';
import { RUN_FILES } from '../rundir/schema.ts';
import type { DocsResult, Report } from '../record/report.ts';
import { renderMarkdown } from '../report/markdown.ts';
import { toJson } from '../report/json.ts';
import { renderHtml } from '../report/html.ts';

/** The documents as they are before this run. */
export interface OldDocs {
  phase2Path: string;
  todoPath: string;
  phase2: string | null;
  todo: string | null;
  /** Which version of each was read: a document is replaced only while it is still that one (a hand edit saved meanwhile is merged again, never lost). */
  stamps?: { phase2: Stamp | null; todo: Stamp | null };
  /** Never through a symlink (the Action): checked on reading, and the writes replace, never follow. */
  confined?: boolean;
}

/** A document as text (bytes that are not UTF-8 kept as escapes, see docs/text.ts), or null when absent. */
function readDoc(path: string): { text: string | null; stamp: Stamp | null } {
  const r = readStamped(path);
  return r === null ? { text: null, stamp: null } : { text: decodeDoc(r.data), stamp: r.stamp };
}

export function readDocs(modelDir: string, confined = false): OldDocs {
  const phase2Path = join(modelDir, DOC_PATHS.phase2);
  const todoPath = join(modelDir, DOC_PATHS.todo);
  // In a persistent checkout a pull request's code may have left a link where a document goes: read
  // through it, the history would carry the file it points at into the docs PR; written through it,
  // that file would change.
  if (confined) for (const p of [phase2Path, todoPath]) confineBelow(modelDir, p, 'a document');
  const phase2 = readDoc(phase2Path);
  const todo = readDoc(todoPath);
  return { phase2Path, todoPath, phase2: phase2.text, todo: todo.text, stamps: { phase2: phase2.stamp, todo: todo.stamp }, confined };
}

/** The max_abs baseline phase2_block.md's history holds for this run's prompt and shape. */
export function baselineIn(old: OldDocs | null, view: HistoryView): Baseline | null {
  return old ? baselineFor(readHistory(old.phase2, old.phase2Path), view) : null;
}

/** What G4 records before the documents are written: that they will be (or why not). */
export function documentedPlan(old: OldDocs | null, emulated: boolean, why: string): Documented {
  return old
    ? { attempted: true, ok: true, path: DOC_PATHS.phase2, detail: `latest result and history row written${emulated ? ' (emulated run, marked so; TODO.md left as it is: no NPU ran)' : ''}` }
    : { attempted: false, ok: false, path: '', detail: why };
}

/**
 * The new phase2_block.md and TODO.md, as writes for the transaction (only the files whose bytes
 * change). `withTodo` false (an emulated run): TODO.md is left as it is; no NPU ran, so Phase 2 is
 * neither done nor blocked by it. A refused marker throws here, before anything is written.
 */
export function planDocs(report: Report, old: OldDocs, withTodo: boolean): { writes: PlannedWrite[]; result: DocsResult } {
  const newPhase2 = updatePhase2(old.phase2, report, renderMarkdown(report, { flavor: 'doc' }), old.phase2Path);
  const todo = withTodo ? updateTodo(old.todo, report, old.todoPath) : null;
  const writes: PlannedWrite[] = [];
  const follow = !old.confined;
  if (newPhase2 !== old.phase2) writes.push({ path: old.phase2Path, data: encodeDoc(newPhase2), follow, unchanged: old.stamps?.phase2 });
  if (todo && todo.text !== old.todo) writes.push({ path: old.todoPath, data: encodeDoc(todo.text), follow, unchanged: old.stamps?.todo });
  return {
    writes,
    result: {
      phase2: old.phase2Path, todo: old.todoPath, changed: writes.length > 0, written: writes.map((w) => w.path),
      ...(withTodo ? {} : { todo_left: 'emulated run: no NPU ran, so Phase 2 is neither done nor blocked by it' }),
      ...(todo?.notes.length ? { notes: todo.notes } : {}),
    },
  };
}

/** A record rendered once: report.md (the summary flavour), report.json and report.html, as text. */
export interface Rendered {
  markdown: string;
  json: string;
  html: string;
}

/** The history rows phase2_block.md held before this run, for report.html's history ([] when
 * there are none, or they cannot be read: the documents step says why). */
export function historyIn(old: OldDocs | null): HistoryEntry[] {
  if (!old) return [];
  try {
    return readHistory(old.phase2, old.phase2Path);
  } catch {
    return [];
  }
}

/** report.md, report.json and report.html of a record, as writes into its run dir (never through a
 * link there), and their text (the CLI prints the same report.json, not a second rendering). */
export function reportWrites(report: Report, runDir: string, history: readonly HistoryEntry[] = []): { writes: PlannedWrite[] } & Rendered {
  const markdown = renderMarkdown(report, { flavor: 'summary' });
  const json = toJson(report);
  const html = renderHtml(report, { history });
  return {
    markdown, json, html,
    writes: [
      { path: join(runDir, RUN_FILES.markdown), data: Buffer.from(markdown, 'utf8'), follow: false },
      { path: join(runDir, RUN_FILES.report), data: Buffer.from(json, 'utf8'), follow: false },
      { path: join(runDir, RUN_FILES.html), data: Buffer.from(html, 'utf8'), follow: false },
    ],
  };
}

export function logDocs(docs: DocsResult | null, log: Log): void {
  if (!docs) return;
  // Only what was written is called updated (an emulated run leaves TODO.md as it is).
  const written = docs.written ?? (docs.changed ? [docs.phase2, docs.todo] : []);
  const unchanged = [docs.phase2, ...(docs.todo_left ? [] : [docs.todo])].filter((p) => !written.includes(p));
  const parts = [
    written.length ? `updated ${written.join(' and ')}` : '',
    unchanged.length ? `unchanged ${unchanged.join(' and ')}` : '',
    docs.todo_left ? `${docs.todo} left as it is (${docs.todo_left})` : '',
  ];
  log.step(`docs: ${parts.filter(Boolean).join('; ')}`);
  for (const n of docs.notes ?? []) log.warn(`docs: ${n}`);
}

/** The documents' advisory lock, in the model dir: one run at a time reads, merges and renames them. */
const DOCS_LOCK = '.npu-block-gate.lock';

/** Takes the model dir's documents lock (null when none can be made there: a read-only dir, whose writes then fail with their own message). */
export function lockDocs(modelDir: string, log: Log, o: { timeoutMs?: number; breakLock?: boolean } = {}): Promise<Lock | null> {
  const path = join(modelDir, DOCS_LOCK);
  return acquireLock(path, {
    timeoutMs: o.timeoutMs,
    breakLock: o.breakLock,
    waiting: (who) => log.step(`docs: waiting for the lock on ${modelDir} (another run is writing its documents${who ? `: pid ${who.pid} since ${who.since}` : ''})`),
    broke: (_who, why) => log.warn(`docs: removed a stale lock ${path} (${why})`),
  });
}

/**
 * The dirs a model dir's documents are written in (through a symlink: its target's). Confined (the
 * Action on a pull request's tree), only dirs reached without a link: the sweep deletes files, and
 * a link the tree planted must not steer where.
 */
function docsDirsOf(modelDir: string, confined: boolean): string[] {
  const dirs = [modelDir, join(modelDir, 'docs/development_progress')];
  if (confined) {
    let real: string;
    try { real = realpathSync(modelDir); } catch { return []; }
    return dirs.filter((d) => {
      try { return realpathSync(d) === join(real, relative(modelDir, d)); } catch { return false; }
    });
  }
  for (const rel of [DOC_PATHS.phase2, DOC_PATHS.todo]) {
    try {
      dirs.push(dirname(resolveTarget(join(modelDir, rel)).real));
    } catch { /* reading it will say what is wrong */ }
  }
  return dirs;
}

/** What an interrupted write left (hidden temp files and backups): removed; named in a warning if it cannot be. */
export function sweepDocs(modelDir: string | null, runDir: string, log: Log, confined = false): void {
  const said = (s: ReturnType<typeof sweepLeftovers>) => {
    if (s.removed.length) log.step(`docs: removed ${s.removed.length} file(s) an interrupted write left: ${s.removed.join(', ')}`);
    for (const k of s.kept) log.warn(`an interrupted write left a file that could not be removed: ${k}; remove it by hand`);
  };
  // Under the documents lock every leftover there is stale; in the run dir only a dead process's.
  if (modelDir) said(sweepLeftovers(docsDirsOf(modelDir, confined), true));
  said(sweepLeftovers([runDir], false));
}

/** Whether a failure names one of the documents (or the dirs they go in), not the run dir. */
export function isDocsError(e: unknown, modelDir: string | null, runDir: string): e is GateError {
  if (!(e instanceof GateError) || !e.file || !modelDir) return false;
  const inside = (dir: string) => {
    const r = relative(dir, e.file!);
    return r === '' || (!r.startsWith('..') && !isAbsolute(r));
  };
  return inside(modelDir) && !inside(runDir);
}

/** Whether the run dir takes new files (a run dir on read-only media is judged all the same): null, or why not. */
export function runDirUnwritable(runDir: string): string | null {
  const probe = join(runDir, `.nbg-write-check-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    closeSync(openSync(probe, 'wx'));
    unlinkSync(probe);
    return null;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') return fsError(e, runDir, 'cannot write').message;
    return null;
  }
}
