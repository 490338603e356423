// phase2_block.md: a generated "latest result" block and a history table, both fenced by markers.
// Pure functions over text, so every byte outside what we generate is provably kept.
import { createHash } from 'node:crypto';
import type { Report } from '../record/report.ts';
import { fmtCos, fmtSci, fmtDb } from '../text/format.ts';
import { formatThreshold } from '../seed/thresholds.ts';
import { recordNpu, UNKNOWN } from '../npu/generation.ts';
import { InputError } from '../errors.ts';
import { BLOCK_MARKERS, MARK, fencedLines, markersOn } from './markers.ts';
import { dominantEol, insertLines, joinLines, splitLines, type Line } from './text.ts';

export const HISTORY_HEADER = [
  '| date | commit | prompt | outcome | whole cosine | per-pos min | threshold | max_abs | max_rel | SQNR | shape | integration | npu |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
];
/** The header before rows carried the NPU generation: a history block under it is given the new one. */
const OLD_HEADER = HISTORY_HEADER[0].replace(' npu |', '');

/** npu: the generation the row was measured on (src/npu/generation.ts), "emulated", or "unknown". */
interface HistoryKey { commit: string; prompt: string; npu: string }

/** What a history row is keyed by: a Report, or the same facts before the verdict (the baseline). */
export interface HistoryView {
  commit: string;
  prompt: { style: string; text: string; real_len: number; positions?: unknown } | null;
  emulate?: { inject: string | null } | null;
  /** The NPU the run was on (probe.json environment.npu); absent in older records. */
  environment?: { npu?: { generation: string | null } | null } | null;
  metrics: { realLen: number; cols: number } | null;
}

/** A re-run of the same commit on the same prompt and NPU generation replaces its own row. A run on
 * N positions, on another generation, or on the emulated runtime (no NPU), is a row of its own: it
 * never replaces the real NPU's row. */
export function historyKey(r: HistoryView): HistoryKey {
  const text = r.prompt?.text ?? '';
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 8);
  const positions = r.prompt?.positions ? `@${r.prompt.real_len}` : '';
  const inject = r.emulate?.inject && /^[A-Za-z0-9_.-]{1,64}$/.test(r.emulate.inject) ? `:${r.emulate.inject}` : '';
  const emulated = r.emulate ? `~emulated${inject}` : '';
  return { commit: r.commit.slice(0, 12), prompt: `${r.prompt?.style ?? 'prompt'}:${hash}${positions}${emulated}`, npu: recordNpu(r) };
}

function shapeOf(r: HistoryView): string {
  return r.metrics ? `${r.metrics.realLen}x${r.metrics.cols}` : 'n/a';
}

/** Whether two history rows' commit cells name the same commit: equal, or (hex ids of 7 or more
 * digits, short or full, either case) one a prefix of the other. */
function sameCommit(a: string, b: string): boolean {
  if (a === b) return true;
  const hex = /^[0-9a-f]{7,64}$/;
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return hex.test(x) && hex.test(y) && (x.startsWith(y) || y.startsWith(x));
}

/** The history row's outcome: an emulated run's reads as such (no NPU ran), never as a bare PASS. */
function outcomeCell(r: Pick<Report, 'outcome' | 'emulate'>): string {
  return `${r.outcome.toUpperCase()}${r.emulate ? ' (emulated)' : ''}`;
}

function historyRow(r: Report, commitCell?: string): string {
  const k = historyKey(r);
  const m = r.metrics;
  const cells = [
    r.created_at.slice(0, 10),
    commitCell ?? k.commit,
    k.prompt,
    outcomeCell(r),
    fmtCos(m?.wholeCosine),
    fmtCos(m?.perPosition.min),
    formatThreshold(r.thresholds.perPosition),
    fmtSci(m?.errors.maxAbs),
    fmtSci(m?.errors.maxRel),
    fmtDb(m?.errors.sqnrDb),
    shapeOf(r),
    r.integration?.path ?? 'n/a',
    k.npu,
  ];
  return `| ${cells.join(' | ')} |`;
}

/** Cells of a markdown table line, split on unescaped pipes; null when the line is not a row. */
export function tableCells(line: string): string[] | null {
  const t = line.trim();
  if (!t.startsWith('|')) return null;
  const cells: string[] = [];
  let cur = '';
  for (let i = 1; i < t.length; i++) {
    const ch = t[i];
    if (ch === '\\' && t[i + 1] === '|') { cur += '|'; i++; continue; }
    if (ch === '|') { cells.push(cur.trim()); cur = ''; continue; }
    cur += ch;
  }
  if (cur.trim() !== '') cells.push(cur.trim());
  return cells;
}

/** Lines (0-based) of a begin/end marker pair: the block's content is the lines strictly between. */
export interface Block { begin: number; end: number }

/**
 * The latest and history blocks of phase2_block.md, after checking every marker: each must stand
 * on a line of its own, appear at most once, have its partner after it, and the two blocks must
 * not nest or overlap. Anything else is refused naming the line, before a byte is changed.
 */
function findBlocks(lines: readonly Line[], file: string): { latest: Block | null; history: Block | null } {
  const refuse = (i: number, problem: string): never => {
    throw new InputError(`line ${i + 1}: ${problem}; fix it by hand, nothing was changed`, file);
  };
  const seen = new Map<string, number>();
  const fenced = fencedLines(lines);
  lines.forEach((l, i) => {
    if (fenced[i]) return;
    for (const m of markersOn(l.text)) {
      if (!(BLOCK_MARKERS as readonly string[]).includes(m)) refuse(i, `${shown(m)} is not an npu-block-gate marker of this file`);
      if (l.text.trim() !== m) refuse(i, `marker ${m} must stand on a line of its own`);
      const first = seen.get(m);
      if (first !== undefined) refuse(i, `marker ${m} appears again (first on line ${first + 1}): duplicated marker`);
      seen.set(m, i);
    }
  });
  const pair = (begin: string, end: string): Block | null => {
    const b = seen.get(begin);
    const e = seen.get(end);
    if (b === undefined && e === undefined) return null;
    if (b === undefined) return refuse(e!, `marker ${end} has no ${begin} before it: unbalanced markers`);
    if (e === undefined) return refuse(b, `marker ${begin} has no ${end} after it: unbalanced markers`);
    if (e < b) return refuse(e, `marker ${end} comes before its ${begin} (line ${b + 1}): unbalanced markers`);
    return { begin: b, end: e };
  };
  const latest = pair(MARK.latestBegin, MARK.latestEnd);
  const history = pair(MARK.historyBegin, MARK.historyEnd);
  if (latest && history) {
    const [a, b, an, bn] = latest.begin < history.begin ? [latest, history, 'latest', 'history'] : [history, latest, 'history', 'latest'];
    if (b.begin < a.end) {
      refuse(b.begin, b.end < a.end
        ? `the ${bn} block (lines ${b.begin + 1}-${b.end + 1}) is nested inside the ${an} block (lines ${a.begin + 1}-${a.end + 1})`
        : `the ${bn} block (lines ${b.begin + 1}-${b.end + 1}) overlaps the ${an} block (lines ${a.begin + 1}-${a.end + 1})`);
    }
  }
  return { latest, history };
}

function shown(s: string): string {
  return JSON.stringify(s.length > 60 ? `${s.slice(0, 57)}...` : s);
}

/** Replaces our row in the history block's lines (or adds it after the last table row); every other line is kept as it is. */
function updateHistoryLines(lines: Line[], blk: Block, r: Report): void {
  const k = historyKey(r);
  const row = historyRow(r);
  for (let i = blk.begin + 1; i < blk.end; i++) {
    const c = tableCells(lines[i].text);
    if (c && c[2] === k.prompt && rowNpu(c) === k.npu && sameCommit(c[1], k.commit)) {
      // The same commit by a shorter or longer id: one row, keyed by the longer id seen.
      lines[i].text = c[1].length > k.commit.length ? historyRow(r, c[1]) : row;
      return;
    }
  }
  upgradeHeader(lines, blk);
  let last = -1;
  for (let i = blk.begin + 1; i < blk.end; i++) if (tableCells(lines[i].text)) last = i;
  // No table yet: header and row right after the begin marker; anything else stays below.
  if (last === -1) insertLines(lines, blk.begin, [...HISTORY_HEADER, row]);
  else insertLines(lines, last, [row]);
}

/** A row written before rows named the NPU has no npu cell: unknown. */
function rowNpu(cells: string[]): string {
  return cells[12] || UNKNOWN;
}

/** A history table under the header of before the npu column gets the current header (its rows read as npu unknown). */
function upgradeHeader(lines: Line[], blk: Block): void {
  for (let i = blk.begin + 1; i < blk.end - 1; i++) {
    if (lines[i].text.trim() !== OLD_HEADER) continue;
    lines[i].text = HISTORY_HEADER[0];
    if (/^\|(-+\|)+$/.test(lines[i + 1].text.trim())) lines[i + 1].text = HISTORY_HEADER[1];
    return;
  }
}

export interface HistoryEntry {
  date: string; commit: string; prompt: string; outcome: string; maxAbs: number; shape: string;
  /** Whole-tensor cosine, per-position min and its threshold as recorded (NaN when the row says n/a). */
  cosine: number; minCosine: number; threshold: number;
  /** The NPU generation of the row (HistoryKey.npu). */
  npu: string;
}

export function readHistory(text: string | null, file: string): HistoryEntry[] {
  if (!text) return [];
  const lines = splitLines(text);
  const { history } = findBlocks(lines, file);
  if (!history) return [];
  const out: HistoryEntry[] = [];
  for (let i = history.begin + 1; i < history.end; i++) {
    const c = tableCells(lines[i].text);
    if (!c || c.length < 11 || c[0] === 'date' || /^-+$/.test(c[0].replace(/:/g, ''))) continue;
    out.push({ date: c[0], commit: c[1], prompt: c[2], outcome: c[3], maxAbs: Number(c[7]), shape: c[10], cosine: Number(c[4]), minCosine: Number(c[5]), threshold: Number(c[6]), npu: rowNpu(c) });
  }
  return out;
}

/** The regression baseline: the oldest passing run of another commit on the same prompt, shape and NPU generation. */
export function baselineFor(history: HistoryEntry[], r: HistoryView): { maxAbs: number; commit: string } | null {
  const k = historyKey(r);
  const shape = shapeOf(r);
  const hit = history.find((h) => /^PASS( \(emulated\))?$/.test(h.outcome) && h.prompt === k.prompt && h.npu === k.npu && h.shape === shape && !sameCommit(h.commit, k.commit) && Number.isFinite(h.maxAbs) && h.maxAbs > 0);
  return hit ? { maxAbs: hit.maxAbs, commit: hit.commit } : null;
}

function newPhase2Doc(model: string, nl = '\n'): string {
  return [
    `# Phase 2: single-block validation (${model})`,
    '',
    'Layer-0 `ffn_out` of the transformer block on the NPU, compared with the HuggingFace bf16 reference',
    'on the canonical prompt. The text between `npu-block-gate` markers is generated by npu-block-gate;',
    'write your own notes anywhere else in this file (or inside the history block, outside table rows) and they are kept.',
    '',
    '## Latest result',
    '',
    MARK.latestBegin,
    MARK.latestEnd,
    '',
    '## History',
    '',
    MARK.historyBegin,
    MARK.historyEnd,
    '',
    '## Notes',
    '',
  ].join(nl);
}

/** The new text of phase2_block.md. `latestMarkdown` is the rendered report. */
export function updatePhase2(existing: string | null, r: Report, latestMarkdown: string, file: string): string {
  const lines = splitLines(existing ?? newPhase2Doc(r.model.name));
  let { latest, history } = findBlocks(lines, file);
  if (!latest || !history) {
    // A file written by hand: keep all of it and add our sections at the end.
    const add: string[] = [];
    if (lines.length && lines[lines.length - 1].text.trim() !== '') add.push('');
    if (!latest) add.push('## Latest result (npu-block-gate)', '', MARK.latestBegin, MARK.latestEnd);
    if (!history) add.push(...(latest ? [] : ['']), '## History (npu-block-gate)', '', MARK.historyBegin, MARK.historyEnd);
    const dom = dominantEol(lines);
    if (lines.length && lines[lines.length - 1].eol === '') lines[lines.length - 1].eol = dom;
    lines.push(...add.map((text) => ({ text, eol: dom })));
    ({ latest, history } = findBlocks(lines, file));
  }
  const body = latestMarkdown.trim().split(/\r?\n/);
  // The later block first, so the earlier block's line numbers stay valid.
  const edits = [
    { at: latest!.begin, apply: () => {
      const eol = lines[latest!.begin].eol;
      lines.splice(latest!.begin + 1, latest!.end - latest!.begin - 1, ...body.map((text) => ({ text, eol })));
    } },
    { at: history!.begin, apply: () => updateHistoryLines(lines, history!, r) },
  ].sort((a, b) => b.at - a.at);
  for (const e of edits) e.apply();
  return joinLines(lines);
}
