// phase2_block.md: a generated "latest result" block and a history table, both fenced by markers.
// Pure functions over text, so every byte outside what we generate is provably kept.
import { createHash } from 'node:crypto';
import type { Report } from '../report/types.ts';
import { fmtCos, fmtSci, fmtDb } from '../report/format.ts';
import { formatThreshold } from '../gates/thresholds.ts';
import { InputError } from '../errors.ts';
import { MARK } from './markers.ts';

export const HISTORY_HEADER = [
  '| date | commit | prompt | outcome | whole cosine | per-pos min | threshold | max_abs | max_rel | SQNR | shape | integration |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|',
];

export interface HistoryKey { commit: string; prompt: string }

/** A re-run of the same commit on the same prompt replaces its own row. */
export function historyKey(r: Report): HistoryKey {
  const text = r.prompt?.text ?? '';
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 8);
  return { commit: r.commit.slice(0, 12), prompt: `${r.prompt?.style ?? 'prompt'}:${hash}` };
}

function shapeOf(r: Report): string {
  return r.metrics ? `${r.metrics.realLen}x${r.metrics.cols}` : 'n/a';
}

export function historyRow(r: Report): string {
  const k = historyKey(r);
  const m = r.metrics;
  const cells = [
    r.created_at.slice(0, 10),
    k.commit,
    k.prompt,
    r.outcome.toUpperCase(),
    fmtCos(m?.wholeCosine),
    fmtCos(m?.perPosition.min),
    formatThreshold(r.thresholds.perPosition),
    fmtSci(m?.errors.maxAbs),
    fmtSci(m?.errors.maxRel),
    fmtDb(m?.errors.sqnrDb),
    shapeOf(r),
    r.integration?.path ?? 'n/a',
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

interface Block { begin: number; end: number; inner: string }

/** Locates the text between a begin/end marker pair; null when neither is present. */
function findBlock(text: string, begin: string, end: string, file: string): Block | null {
  const b = text.indexOf(begin);
  const e = text.indexOf(end);
  if (b === -1 && e === -1) return null;
  if (b === -1 || e === -1 || e < b) {
    throw new InputError(`marker ${b === -1 ? begin : end} has no matching ${b === -1 ? 'begin' : 'end'} marker; fix or remove it by hand, nothing was changed`, file);
  }
  if (text.indexOf(begin, b + 1) !== -1) throw new InputError(`marker ${begin} appears twice; nothing was changed`, file);
  return { begin: b + begin.length, end: e, inner: text.slice(b + begin.length, e) };
}

function splice(text: string, blk: Block, inner: string): string {
  return text.slice(0, blk.begin) + inner + text.slice(blk.end);
}

function eol(text: string): string {
  return text.includes('\r\n') ? '\r\n' : '\n';
}

/** Replaces our row in the history block (or appends it after the last table row); keeps every other line. */
export function updateHistoryInner(inner: string, r: Report, nl = '\n'): string {
  const k = historyKey(r);
  const row = historyRow(r);
  const lines = inner.split(/\r?\n/);
  const isOurs = (line: string) => {
    const c = tableCells(line);
    return !!c && c[1] === k.commit && c[2] === k.prompt;
  };
  const at = lines.findIndex(isOurs);
  if (at !== -1) {
    lines[at] = row;
    return lines.join(nl);
  }
  let last = -1;
  lines.forEach((l, i) => { if (tableCells(l)) last = i; });
  if (last === -1) {
    // No table yet: header and row right after the begin marker; anything else stays below.
    const body = lines.join(nl);
    return `${nl}${HISTORY_HEADER.join(nl)}${nl}${row}${body.startsWith(nl) ? '' : nl}${body}`;
  }
  lines.splice(last + 1, 0, row);
  return lines.join(nl);
}

export interface HistoryEntry { date: string; commit: string; prompt: string; outcome: string; maxAbs: number; shape: string }

export function readHistory(text: string | null, file: string): HistoryEntry[] {
  if (!text) return [];
  const blk = findBlock(text, MARK.historyBegin, MARK.historyEnd, file);
  if (!blk) return [];
  const out: HistoryEntry[] = [];
  for (const line of blk.inner.split(/\r?\n/)) {
    const c = tableCells(line);
    if (!c || c.length < 11 || c[0] === 'date' || /^-+$/.test(c[0].replace(/:/g, ''))) continue;
    out.push({ date: c[0], commit: c[1], prompt: c[2], outcome: c[3], maxAbs: Number(c[7]), shape: c[10] });
  }
  return out;
}

/** The regression baseline: the oldest passing run of another commit on the same prompt and shape. */
export function baselineFor(history: HistoryEntry[], r: Report): { maxAbs: number; commit: string } | null {
  const k = historyKey(r);
  const shape = shapeOf(r);
  const hit = history.find((h) => h.outcome === 'PASS' && h.prompt === k.prompt && h.shape === shape && h.commit !== k.commit && Number.isFinite(h.maxAbs) && h.maxAbs > 0);
  return hit ? { maxAbs: hit.maxAbs, commit: hit.commit } : null;
}

export function newPhase2Doc(model: string, nl = '\n'): string {
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
  let text = existing ?? newPhase2Doc(r.model.name);
  const nl = eol(text);
  let latest = findBlock(text, MARK.latestBegin, MARK.latestEnd, file);
  let history = findBlock(text, MARK.historyBegin, MARK.historyEnd, file);
  if (!latest || !history) {
    // A file written by hand: keep all of it and add our sections at the end.
    const add: string[] = [];
    if (!latest) add.push('## Latest result (npu-block-gate)', '', MARK.latestBegin, MARK.latestEnd, '');
    if (!history) add.push('## History (npu-block-gate)', '', MARK.historyBegin, MARK.historyEnd, '');
    text = text + (text.endsWith('\n') || text === '' ? '' : nl) + (text === '' ? '' : nl) + add.join(nl);
    latest = findBlock(text, MARK.latestBegin, MARK.latestEnd, file)!;
    history = findBlock(text, MARK.historyBegin, MARK.historyEnd, file)!;
  }
  const body = latestMarkdown.trim().split(/\r?\n/).join(nl);
  // Splice the later block first so the earlier block's offsets stay valid.
  const blocks = [
    { blk: latest, inner: `${nl}${body}${nl}` },
    { blk: history, inner: updateHistoryInner(history.inner, r, nl) },
  ].sort((a, b) => b.blk.begin - a.blk.begin);
  for (const { blk, inner } of blocks) text = splice(text, blk, inner);
  return text;
}
