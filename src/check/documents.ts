// The documents step (DESIGN.md "Documents"): phase2_block.md and TODO.md of the model dir, read
// before the verdict (the history gives the regression baseline) and written after it, with
// report.json and report.md, as one transaction: all of them, or none.
import { join } from 'node:path';
import type { Log } from '../log.ts';
import { readDocument, type PlannedWrite } from '../fs/atomic.ts';
import { confineBelow } from '../fs/confine.ts';
import { decodeDoc, encodeDoc } from '../docs/text.ts';
import { DOC_PATHS } from '../docs/markers.ts';
import { baselineFor, readHistory, updatePhase2, type HistoryView } from '../docs/phase2.ts';
import { updateTodo } from '../docs/todo.ts';
import type { Baseline, Documented } from '../gates/evaluate.ts';
import { RUN_FILES } from '../rundir/schema.ts';
import type { DocsResult, Report } from '../record/report.ts';
import { renderMarkdown } from '../report/markdown.ts';
import { toJson } from '../report/json.ts';

/** The documents as they are before this run. */
export interface OldDocs {
  phase2Path: string;
  todoPath: string;
  phase2: string | null;
  todo: string | null;
  /** Never through a symlink (the Action): checked on reading, and the writes replace, never follow. */
  confined?: boolean;
}

/** A document as text (bytes that are not UTF-8 kept as escapes, see docs/text.ts), or null when absent. */
function readDoc(path: string): string | null {
  const b = readDocument(path);
  return b === null ? null : decodeDoc(b);
}

export function readDocs(modelDir: string, confined = false): OldDocs {
  const phase2Path = join(modelDir, DOC_PATHS.phase2);
  const todoPath = join(modelDir, DOC_PATHS.todo);
  // In a persistent checkout a pull request's code may have left a link where a document goes: read
  // through it, the history would carry the file it points at into the docs PR; written through it,
  // that file would change.
  if (confined) for (const p of [phase2Path, todoPath]) confineBelow(modelDir, p, 'a document');
  return { phase2Path, todoPath, phase2: readDoc(phase2Path), todo: readDoc(todoPath), confined };
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
  if (newPhase2 !== old.phase2) writes.push({ path: old.phase2Path, data: encodeDoc(newPhase2), follow });
  if (todo && todo.text !== old.todo) writes.push({ path: old.todoPath, data: encodeDoc(todo.text), follow });
  return { writes, result: { phase2: old.phase2Path, todo: old.todoPath, changed: writes.length > 0, ...(todo?.notes.length ? { notes: todo.notes } : {}) } };
}

/** report.md and report.json of a record, as writes into its run dir (never through a link there). */
export function reportWrites(report: Report, runDir: string): { writes: PlannedWrite[]; markdown: string } {
  const markdown = renderMarkdown(report, { flavor: 'summary' });
  return {
    markdown,
    writes: [
      { path: join(runDir, RUN_FILES.markdown), data: Buffer.from(markdown, 'utf8'), follow: false },
      { path: join(runDir, RUN_FILES.report), data: Buffer.from(toJson(report), 'utf8'), follow: false },
    ],
  };
}

export function logDocs(docs: DocsResult | null, log: Log): void {
  if (!docs) return;
  log.step(`docs: ${docs.changed ? 'updated' : 'unchanged'} ${docs.phase2} and ${docs.todo}`);
  for (const n of docs.notes ?? []) log.warn(`docs: ${n}`);
}
