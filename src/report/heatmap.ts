// The lens heatmap's classes (boundaries in block order x position buckets, each cell the lowest
// per-position cosine of its bucket), shared by report.html's SVG and the comment's text heatmap.
// A cell's class is anchored at the lens's bars: the clean bar, the threshold and "well below".
import type { LensReport, LensRow } from '../record/lens.ts';
import { isId } from '../text/escape.ts';
import { formatThreshold } from '../seed/thresholds.ts';

/** clean: >= the clean bar; drift: under it, at or above the threshold; under: under the threshold;
 * well: well below it; nan: a NaN in the bucket; none: the boundary could not be judged. */
export type CellClass = 'clean' | 'drift' | 'under' | 'well' | 'nan' | 'none';

export const CELL_CLASSES: readonly CellClass[] = ['clean', 'drift', 'under', 'well', 'nan', 'none'];

/** Columns the text heatmap has at most. */
export const TEXT_COLUMNS = 32;

/** One character per class in the text heatmap (single width in a monospace font). */
const CELL_CHAR: Record<CellClass, string> = { clean: '·', drift: '-', under: '▒', well: '█', nan: '!', none: ' ' };

function cellClass(c: number, lens: Pick<LensReport, 'threshold' | 'cleanBar' | 'wellBelow'>): CellClass {
  if (Number.isNaN(c)) return 'nan';
  if (c >= lens.cleanBar) return 'clean';
  if (c >= lens.threshold) return 'drift';
  if (c >= lens.wellBelow) return 'under';
  return 'well';
}

/** What each class means, with the lens's numbers. */
export function classMeaning(k: CellClass, lens: Pick<LensReport, 'threshold' | 'cleanBar' | 'wellBelow'>): string {
  const t = formatThreshold(lens.threshold);
  switch (k) {
    case 'clean': return `>= ${formatThreshold(lens.cleanBar)} (clean)`;
    case 'drift': return `>= ${t}, under ${formatThreshold(lens.cleanBar)} (drifts, above the threshold)`;
    case 'under': return `< ${t} (under the threshold)`;
    case 'well': return `< ${formatThreshold(lens.wellBelow)} (well below the threshold)`;
    case 'nan': return 'NaN in the bucket';
    case 'none': return 'not judged';
  }
}

/** A boundary's label in a rendering that takes no foreign text: its name when an identifier, else #order. */
export function rowLabel(r: Pick<LensRow, 'name' | 'order'>): string {
  return isId(r.name) ? r.name : `#${r.order}`;
}

/** One cell: positions [start, end] (inclusive) and the lowest cosine (NaN kept) and the norm ratio farthest from 1. */
export interface Cell { start: number; end: number; cosine: number; norm: number | null; klass: CellClass }

/** A row's cells, its profile regrouped to at most `columns` (groups of whole profile buckets; min per group). */
export function rowCells(r: LensRow, lens: Pick<LensReport, 'threshold' | 'cleanBar' | 'wellBelow'>, columns = Infinity): Cell[] {
  const p = r.profile;
  if (r.error || !p || !Array.isArray(p.points) || !p.points.length) return [];
  const per = Math.max(1, Math.ceil(p.points.length / columns));
  const out: Cell[] = [];
  for (let i = 0; i < p.points.length; i += per) {
    let lo = Infinity;
    let far: number | null = null;
    for (let j = i; j < Math.min(p.points.length, i + per); j++) {
      const v = Number(p.points[j]);
      lo = Number.isNaN(v) || Number.isNaN(lo) ? NaN : Math.min(lo, v);
      const n = p.norms?.[j];
      if (typeof n === 'number' && !Number.isNaN(n) && (far === null || Math.abs(n - 1) > Math.abs(far - 1))) far = n;
    }
    const start = i * p.bucket;
    const end = Math.min(r.rows, (i + per) * p.bucket) - 1;
    out.push({ start, end, cosine: lo, norm: far, klass: cellClass(lo, lens) });
  }
  return out;
}

/** "3" or "1,024-2,047". */
export function positions(c: Pick<Cell, 'start' | 'end'>): string {
  return c.start === c.end ? String(c.start) : `${c.start}-${c.end}`;
}

/**
 * The comment's text heatmap: one line per boundary (block order), at most TEXT_COLUMNS characters
 * of position buckets, with a legend; '' when the lens has no judged row. Names that are not
 * identifiers show as #order, so nothing foreign reaches the code block.
 */
export function textHeatmap(lens: LensReport, columns = TEXT_COLUMNS): string {
  const rows = lens.rows.filter((r) => !r.error && r.profile?.points?.length);
  if (!rows.length) return '';
  const n = rows[0].rows;
  const cellsOf = lens.rows.map((r) => ({ r, cells: rowCells(r, lens, columns) }));
  const width = Math.max(...cellsOf.map((x) => x.cells.length));
  const labelW = Math.max(8, ...lens.rows.map((r) => [...rowLabel(r)].length)) + 2;
  const span = cellsOf.find((x) => x.cells.length === width)!.cells;
  const per = span.length ? span[0].end - span[0].start + 1 : 1;
  const first = lens.firstBelow?.order ?? null;
  const onset = lens.onset && (first === null || lens.onset.order < first) ? lens.onset.order : null;
  const last = String(n - 1);
  const axis = `${' '.repeat(labelW)}0${' '.repeat(Math.max(1, width - 1 - last.length))}${last}`;
  const lines = [axis];
  for (const { r, cells } of cellsOf) {
    const body = r.error ? '(not judged)' : cells.map((c) => CELL_CHAR[c.klass]).join('');
    const mark = r.order === first ? '  ◀ first under the threshold' : r.order === onset ? '  ◀ onset' : '';
    lines.push(`${rowLabel(r).padEnd(labelW)}${body}${mark}`.trimEnd());
  }
  const shown: CellClass[] = ['clean', 'drift', 'under', 'well', 'nan'];
  return [
    `Per-position cosine by boundary: ${n} positions, ${per === 1 ? 'one' : `the lowest of ${per}`} per column.`,
    '',
    '```text',
    ...lines,
    '```',
    '',
    `Legend: ${shown.map((k) => `\`${CELL_CHAR[k]}\` ${classMeaning(k, lens)}`).join(' · ')}.`,
  ].join('\n');
}
