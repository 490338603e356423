// `status --tree`: the tree's Phase 2 status from what every model dir records, phase2_block.md's
// history and TODO.md: per model and NPU generation the last verdict, when and at which commit, the
// trend of the per-position min on that prompt, and the open blockers. Reads documents only (no
// Python, no NPU); a document it cannot read is that model's problem line, never a crash.
import { dirname, join, resolve } from 'node:path';
import { existsSync, statSync } from 'node:fs';
import { InputError } from '../errors.ts';
import { commitWrites } from '../fs/atomic.ts';
import { renderFleetHtml } from '../report/fleet-html.ts';
import { markdownTable } from 'markdown-table';
import { oneLine } from '../errors.ts';
import { readDocs } from '../check/documents.ts';
import { readHistory, type HistoryEntry } from '../docs/phase2.ts';
import { readTodo } from '../docs/todo.ts';
import { generationName } from '../npu/generation.ts';
import { cell, code } from '../text/escape.ts';
import { fmtCos } from '../text/format.ts';
import { LLMS } from './affected.ts';
import type { GenerationStatus, ModelStatus } from '../record/status.ts';

const STATUS_SCHEMA = 'npu-block-gate/status';
/** Runs the trend shows, newest last. */
export const TREND_RUNS = 5;

export type { GenerationStatus, ModelStatus } from '../record/status.ts';

const num = (x: number): number | null => (Number.isFinite(x) ? x : null);

/** The status of one generation from its history rows (table order; a re-run replaced its row in place). */
function generationStatus(npu: string, rows: HistoryEntry[]): GenerationStatus {
  // Newest: the latest date, the later row on a tie (rows are appended as runs come in).
  const order = rows.map((r, i) => ({ r, i })).sort((a, b) => (a.r.date < b.r.date ? -1 : a.r.date > b.r.date ? 1 : a.i - b.i)).map((x) => x.r);
  const last = order[order.length - 1];
  const same = order.filter((r) => r.prompt === last.prompt).slice(-TREND_RUNS);
  const trend = same.map((r) => num(r.minCosine));
  const first = trend.find((x) => x !== null) ?? null;
  const end = trend[trend.length - 1];
  return {
    npu, outcome: last.outcome, date: last.date, commit: last.commit, prompt: last.prompt,
    cosine: num(last.cosine), min_cosine: num(last.minCosine), threshold: num(last.threshold),
    trend, change: same.length > 1 && first !== null && end !== null ? end - first : null, runs: rows.length,
  };
}

/** One model's status from its documents. */
function modelStatus(airRoot: string, name: string, prefix = ''): ModelStatus {
  return modelStatusAt(join(airRoot, LLMS, name), name, [prefix, LLMS, name].filter(Boolean).join('/'));
}

/** The status of the model dir `dir` (named `name`, repository-relative `model`) from its documents. */
export function modelStatusAt(dir: string, name: string, model: string): ModelStatus {
  const base: ModelStatus = { name, model, phase2_done: null, phase2_checkbox: null, generations: [], blockers: [], problem: null };
  try {
    const docs = readDocs(dir);
    const todo = readTodo(docs.todo);
    const history = readHistory(docs.phase2, docs.phase2Path);
    const byNpu = new Map<string, HistoryEntry[]>();
    for (const h of history) byNpu.set(h.npu, [...(byNpu.get(h.npu) ?? []), h]);
    const generations = [...byNpu].map(([npu, rows]) => generationStatus(npu, rows)).sort((a, b) => (a.npu < b.npu ? -1 : a.npu > b.npu ? 1 : 0));
    // Done only when the latest verdict on every recorded generation passed, whatever the checkbox says
    // (a TODO.md written before unticking existed keeps its tick after a later failure).
    const done = generations.length ? generations.every((g) => g.outcome === 'PASS') : todo.phase2Done;
    return { ...base, phase2_done: done, phase2_checkbox: todo.phase2Done, blockers: todo.blockers, generations };
  } catch (e) {
    return { ...base, problem: oneLine(e) };
  }
}

export function treeStatus(airRoot: string, names: string[], prefix = ''): ModelStatus[] {
  return names.map((n) => modelStatus(airRoot, n, prefix));
}

export function statusJson(models: ModelStatus[]): string {
  return JSON.stringify({ schema: STATUS_SCHEMA, schema_version: 1, models }, null, 2) + '\n';
}

const ARROW = (d: number | null) => (d === null ? '' : d > 1e-4 ? ' ↑' : d < -1e-4 ? ' ↓' : ' →');

function trendText(g: GenerationStatus): string {
  const vals = g.trend.map((x) => (x === null ? 'n/a' : x.toFixed(4)));
  return `${vals.join(' → ')}${ARROW(g.change)}${g.change !== null ? ` (${g.change >= 0 ? '+' : ''}${g.change.toFixed(4)})` : ''}`;
}

const VERDICT: Record<string, string> = { PASS: '✅ PASS', FAIL: '❌ FAIL', ERROR: '⚠️ ERROR' };

/** The tree's Phase 2 status as markdown: one row per model and generation; models never run say so. */
export function statusMarkdown(models: ModelStatus[]): string {
  const rows: string[][] = [['model', 'NPU', 'last verdict', 'when', 'commit', 'per-pos min (threshold)', `trend (last ${TREND_RUNS} runs)`, 'Phase 2', 'open blockers']];
  const done = (m: ModelStatus) => (m.phase2_done === null ? '?' : m.phase2_done ? '[x]' : '[ ]');
  const blockers = (m: ModelStatus) => (m.blockers.length ? m.blockers.map((b) => cell(b, 200)).join('<br>') : 'none');
  let recorded = 0;
  for (const m of models) {
    const name = code(m.name, { inTable: true, max: 64 });
    if (m.problem) { rows.push([name, '', '⚠️ unreadable', '', '', '', '', done(m), cell(m.problem, 300)]); continue; }
    if (!m.generations.length) { rows.push([name, '', 'never recorded', '', '', '', '', done(m), blockers(m)]); continue; }
    recorded++;
    m.generations.forEach((g, i) => rows.push([
      i === 0 ? name : '',
      cell(generationName(g.npu), 40),
      VERDICT[g.outcome] ?? cell(g.outcome, 20),
      /^\d{4}-\d{2}-\d{2}$/.test(g.date) ? g.date : cell(g.date, 20),
      code(g.commit, { inTable: true, max: 16 }),
      `${g.min_cosine === null ? 'n/a' : fmtCos(g.min_cosine)} (${g.threshold ?? 'n/a'})`,
      trendText(g),
      i === 0 ? done(m) : '',
      i === 0 ? blockers(m) : '',
    ]));
  }
  const failing = models.filter((m) => m.generations.some((g) => g.outcome === 'FAIL')).length;
  return [
    '## Phase 2 status',
    '',
    `${models.length} model dirs; ${recorded} with a recorded result; ${failing} failing on at least one NPU generation.`,
    '',
    markdownTable(rows),
    '',
  ].join('\n');
}

/** The fleet page of `models` written to `out` (all or nothing); a directory, or a missing parent, is an input error naming it. */
export function writeFleetPage(out: string, models: readonly ModelStatus[], source: string, note?: string): string {
  const path = resolve(out);
  if (existsSync(path) && statSync(path).isDirectory()) throw new InputError('is a directory; --html takes the file to write', path);
  if (!existsSync(dirname(path)) || !statSync(dirname(path)).isDirectory()) throw new InputError('is not a directory; --html writes into an existing one', dirname(path));
  commitWrites([{ path, data: Buffer.from(renderFleetHtml(models, { source, note }), 'utf8') }]);
  return path;
}
