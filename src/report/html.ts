// report.html: one run at a glance, from the record alone (and the model's earlier history rows).
// One self-contained file (html-kit.ts): the verdict banner, the gates, per-position cosine of
// ffn_out against position, the lens heatmap (boundaries x positions) with each boundary's norm
// ratio and error budget, the bisect, Step 2's sanity check and the history. Hover and focus on a
// heatmap cell are an enhancement: every value is also in a table, so it works with scripts off and
// prints. Every string from the record goes through esc(); only identifiers name boundaries.
import type { GateResult, Report } from '../record/report.ts';
import type { LensReport, LensRow } from '../record/lens.ts';
import type { BisectReport } from '../record/bisect.ts';
import type { HistoryEntry } from '../docs/phase2.ts';
import { historyKey } from '../docs/phase2.ts';
import { generationName, recordNpu } from '../npu/generation.ts';
import { formatThreshold } from '../seed/thresholds.ts';
import { fmtBudget, fmtCos, fmtDb, fmtRatio, fmtRun, fmtSci } from '../text/format.ts';
import { str } from '../text/escape.ts';
import { deviceText, isolationText } from './markdown.ts';
import { CELL_CLASSES, classMeaning, positions, rowCells, rowLabel, type Cell, type CellClass } from './heatmap.ts';
import { esc, n2, page, PALETTE, sparkline, swatch, table } from './html-kit.ts';

interface HtmlOptions {
  /** phase2_block.md's history rows before this run (this run's own row, if there, is replaced by it). */
  history?: readonly HistoryEntry[];
}

/** Points the ffn_out chart draws at most (the lowest of each bucket beyond it; the table has every position). */
const CHART_POINTS = 1000;

const VERDICT = { pass: 'PASS', fail: 'FAIL', error: 'ERROR' } as const;

function list<T>(v: readonly T[] | null | undefined): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}

const num = (x: unknown): number => (typeof x === 'number' ? x : NaN);

function banner(r: Report): string {
  const v = VERDICT[r.outcome] ?? 'ERROR';
  const cls = r.outcome === 'pass' || r.outcome === 'fail' ? r.outcome : 'error';
  const failed = r.gates.filter((g) => g.status === 'fail').map((g) => g.id);
  const npu = r.emulate ? 'none: emulated (no NPU ran)' : generationName(recordNpu(r));
  const facts: [string, string][] = [
    ['model', `<code>${esc(r.model.name, 120)}</code>${r.model.hf_id ? ` (${esc(r.model.hf_id, 120)})` : ''}`],
    ['commit', `<code>${esc(str(r.commit).slice(0, 12), 12)}</code>`],
    ['NPU generation', esc(npu, 80)],
    ['isolation', esc(isolationText(r), 400)],
    ['judged', esc(r.created_at, 40)],
  ];
  return `<header>
<h1>npu-block-gate: Phase 2 single-block validation</h1>
<div class="banner ${cls}" data-verdict="${cls}"><span class="verdict">${v}</span>${r.emulate ? '<span class="tag" data-emulated>EMULATED</span>' : ''}<span>${cls === 'fail' ? `${esc(failed.join(', '))} failed` : cls === 'error' ? 'could not judge: this is not a FAIL verdict' : 'every gate passes'}</span></div>
<dl class="facts">${facts.map(([k, v2]) => `<dt>${k}</dt><dd>${v2}</dd>`).join('')}</dl>
${r.emulate ? `<p class="warn"><strong>EMULATED</strong>: no NPU ran. The tree's own block ran on an emulated NPU (${esc(r.emulate.runtime, 120)})${r.emulate.inject ? `, with the injected bug <code>${esc(r.emulate.inject, 64)}</code>` : ''}: this checks the integration code, not the NPU.</p>` : ''}
</header>`;
}

/** A gate's measured value against its bar, as a small bar (cosine gates) or nothing. */
function gateBar(g: GateResult, r: Report): string {
  if (typeof g.value !== 'number' || (g.id !== 'G1' && g.id !== 'G2')) return '';
  const bar = g.id === 'G1' ? r.thresholds.whole : r.thresholds.perPosition;
  const lo = Math.max(-1, Math.min(bar - 0.02, g.value) - 0.002);
  const x = (v: number) => (Math.max(lo, Math.min(1, v)) - lo) / (1 - lo) * 140;
  const v = Number.isFinite(g.value) ? g.value : lo;
  return `<svg class="gatebar" viewBox="0 0 140 10" role="img" aria-label="${esc(`${fmtCos(g.value)} against the bar ${bar}`)}"><rect width="140" height="10" fill="#eee"/><rect width="${n2(x(v))}" height="10" fill="${g.status === 'fail' ? PALETTE.fail : PALETTE.pass}"/><line x1="${n2(x(bar))}" x2="${n2(x(bar))}" y1="0" y2="10" stroke="#000" stroke-width="2"/></svg>`;
}

function gateValue(g: GateResult): string {
  if (typeof g.value === 'number') return g.id === 'G3' ? String(g.value) : fmtCos(g.value);
  return str(g.value);
}

function gatesSection(r: Report): string {
  if (!r.gates.length) return '';
  const mark = (g: GateResult) => (g.status === 'pass' ? '<span class="ok">✓ pass</span>' : g.status === 'fail' ? '<span class="bad">✗ fail</span>' : '<span class="err">– skip</span>');
  return `<section id="gates"><h2>Gates</h2>
${table(['gate', 'check', 'measured', 'bar', 'result', 'detail'], r.gates.map((g) => [
    `<span data-gate="${esc(g.id, 4)}">${esc(g.id, 4)}</span>`, esc(g.name, 120), `${esc(gateValue(g), 200)}${gateBar(g, r)}`, esc(g.bar, 60), mark(g), esc(g.detail, 600),
  ]), { num: [2] })}
${r.warnings.length ? `<h3>Warnings</h3><ul>${r.warnings.map((w) => `<li>${esc(w.message, 800)}</li>`).join('')}</ul>` : ''}
</section>`;
}

/** The y range of a cosine chart: from under the threshold and every point to 1. */
function yRange(values: number[], t: number): number {
  const finite = values.filter(Number.isFinite);
  const lo = Math.min(t, ...(finite.length ? finite : [t])) - 0.005;
  return Math.max(-1, Math.floor(lo * 1000) / 1000);
}

/** Per-position cosine of ffn_out against position, the threshold line, the runs under it shaded. */
function ffnOutChart(r: Report): string {
  const m = r.metrics;
  if (!m || !m.perPosition.cosines.length) return '';
  const cos = m.perPosition.cosines.map(num);
  const t = r.thresholds.perPosition;
  const N = cos.length;
  const bucket = Math.max(1, Math.ceil(N / CHART_POINTS));
  const pts: { i: number; v: number }[] = [];
  for (let i = 0; i < N; i += bucket) {
    let lo = Infinity;
    for (let j = i; j < Math.min(N, i + bucket); j++) lo = Math.min(lo, Number.isNaN(cos[j]) ? -Infinity : cos[j]);
    pts.push({ i: Math.min(N - 1, i + (bucket - 1) / 2), v: lo });
  }
  const yMin = yRange(pts.map((p) => p.v), t);
  const W = 1000;
  const H = 280;
  const L = 64;
  const R = 16;
  const T = 14;
  const B = 40;
  const x = (i: number) => L + (N === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (N - 1));
  const y = (v: number) => T + ((1 - Math.max(yMin, Math.min(1, v))) * (H - T - B)) / (1 - yMin);
  const shade = list(m.perPosition.badRuns).map((b) => {
    const x0 = x(b.start) - (N > 1 ? (W - L - R) / (N - 1) / 2 : 4);
    const x1 = x(b.end) + (N > 1 ? (W - L - R) / (N - 1) / 2 : 4);
    return `<rect class="badrun" x="${n2(Math.max(L, x0))}" y="${T}" width="${n2(Math.max(2, Math.min(W - R, x1) - Math.max(L, x0)))}" height="${H - T - B}" fill="${PALETTE.shade}"><title>${esc(`positions ${fmtRun(b.start, b.end)} under the threshold (${b.length} rows)`)}</title></rect>`;
  }).join('');
  const line = pts.map((p) => `${n2(x(p.i))},${n2(y(p.v))}`).join(' ');
  const ticksX = [...new Set([0, Math.round((N - 1) / 4), Math.round((N - 1) / 2), Math.round((3 * (N - 1)) / 4), N - 1])];
  // The threshold's label and 1's always; the floor's when it does not crowd them.
  const ticksY = [1, t, yMin].filter((v, i, a) => a.slice(0, i).every((u) => Math.abs(y(u) - y(v)) >= 14));
  const axes = [
    `<line class="axis" x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/><line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/>`,
    ...ticksX.map((i) => `<text x="${n2(x(i))}" y="${H - B + 16}" text-anchor="middle">${i}</text>`),
    ...ticksY.map((v) => `<line class="grid" x1="${L}" x2="${W - R}" y1="${n2(y(v))}" y2="${n2(y(v))}"/><text x="${L - 6}" y="${n2(y(v) + 4)}" text-anchor="end">${v.toFixed(3)}</text>`),
    `<text x="${(L + W - R) / 2}" y="${H - 6}" text-anchor="middle">position${bucket > 1 ? ` (the lowest of each ${bucket})` : ''}</text>`,
  ].join('');
  const tl = `<line x1="${L}" x2="${W - R}" y1="${n2(y(t))}" y2="${n2(y(t))}" stroke="${PALETTE.threshold}" stroke-width="1.5" stroke-dasharray="6 4"/><text x="${W - R - 4}" y="${n2(y(t) - 5)}" text-anchor="end" fill="${PALETTE.threshold}">T(head_dim ${r.thresholds.headDim}) = ${esc(formatThreshold(t))}${r.thresholds.overridden ? ' (--threshold)' : ''}</text>`;
  const pp = m.perPosition;
  return `<section id="ffn-out"><h2>Per-position cosine of ffn_out</h2>
<p>Layer-0 <code>ffn_out</code> over the ${m.realLen} real positions: min ${fmtCos(pp.min)}, p5 ${fmtCos(pp.p5)}, median ${fmtCos(pp.median)}, mean ${fmtCos(pp.mean)}; ${pp.badRuns.length ? `${pp.badRuns.length} run${pp.badRuns.length === 1 ? '' : 's'} under the threshold (shaded)` : 'no position under the threshold'}.</p>
<figure><div class="scroll"><svg class="chart" data-chart="ffn_out" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(`Per-position cosine of ffn_out against position, ${N} positions, threshold ${formatThreshold(t)}`)}">${shade}${axes}${tl}<polyline points="${line}" fill="none" stroke="${PALETTE.line}" stroke-width="1.5"/></svg></div></figure>
<div class="legend"><span><svg viewBox="0 0 18 14" aria-hidden="true"><line x1="0" x2="18" y1="7" y2="7" stroke="${PALETTE.line}" stroke-width="2"/></svg>per-position cosine</span><span><svg viewBox="0 0 18 14" aria-hidden="true"><line x1="0" x2="18" y1="7" y2="7" stroke="${PALETTE.threshold}" stroke-width="2" stroke-dasharray="4 3"/></svg>threshold</span><span><svg viewBox="0 0 18 14" aria-hidden="true"><rect width="18" height="14" fill="${PALETTE.shade}"/></svg>runs under the threshold</span></div>
${errorMetrics(r)}
<details><summary>Every position's cosine and norm ratio (${N} rows)</summary>
${table(['position', 'cosine', 'norm ratio |npu|/|ref|'], cos.map((c, i) => [String(i), fmtCos(c), fmtRatio(num(m.errors.rowNormRatios?.[i]))]), { num: [0, 1, 2] })}
</details>
</section>`;
}

function errorMetrics(r: Report): string {
  const e = r.metrics?.errors;
  if (!e) return '';
  return `<h3>Error metrics (informational)</h3>${table(['max_abs', 'mean_abs', 'max_rel', 'mean_rel', 'mean_rel_L1', 'SQNR', 'norm ratio'], [[fmtSci(e.maxAbs), fmtSci(e.meanAbs), fmtSci(e.maxRel), fmtSci(e.meanRel), fmtSci(e.meanRelL1), fmtDb(e.sqnrDb), fmtRatio(e.normRatio)]], { num: [0, 1, 2, 3, 4, 5, 6] })}`;
}

/** A row's mark: the first boundary under the threshold, the onset (when earlier), the scale warning. */
function marksOf(lens: LensReport, x: LensRow): { key: string; text: string }[] {
  const first = lens.firstBelow?.order;
  const onset = lens.onset && (first === undefined || lens.onset.order < first) ? lens.onset.order : null;
  const out: { key: string; text: string }[] = [];
  if (x.order === first) out.push({ key: 'first-below', text: '◀ first under' });
  if (x.order === onset) out.push({ key: 'onset', text: '◀ onset' });
  if (lens.scale?.order === x.order) out.push({ key: 'scale', text: 'scale off' });
  if (x.budget?.over) out.push({ key: 'budget', text: 'over budget' });
  return out;
}

function cellTitle(x: LensRow, c: Cell, budget: boolean): string {
  return `${rowLabel(x)} · positions ${positions(c)} · cosine ${fmtCos(c.cosine)} · norm ratio ${c.norm === null ? fmtRatio(x.normRatio) : fmtRatio(c.norm)}${budget ? ` · vs FP32 ${x.budget ? fmtBudget(x.budget.ratio) : 'n/a'}` : ''}`;
}

/** The lens heatmap: boundaries in block order (rows) x position buckets (columns), with each row's norm ratio, error budget and mark. */
function heatmap(lens: LensReport): string {
  const rows = lens.rows;
  const budget = !!lens.budget;
  const n = rows.find((x) => !x.error)?.rows ?? 0;
  const W = 1000;
  const L = 130;
  const rightCols = budget ? [['norm ratio', 70], ['vs FP32', 64], ['', 150]] as const : [['norm ratio', 70], ['', 150]] as const;
  const Rw = rightCols.reduce((a, [, w]) => a + w, 0);
  const gridW = W - L - Rw - 8;
  const rowH = 20;
  const T = 30;
  const H = T + rows.length * rowH + 28;
  const x = (p: number) => L + (n ? (p * gridW) / n : 0);
  const body: string[] = [];
  rows.forEach((r, ri) => {
    const y = T + ri * rowH;
    const cells = rowCells(r, lens);
    const marks = marksOf(lens, r);
    const rects = r.error
      ? `<rect x="${L}" y="${y + 1}" width="${n2(gridW)}" height="${rowH - 2}" class="k-none"><title>${esc(`${rowLabel(r)}: not judged: ${r.error}`, 400)}</title></rect>`
      : cells.map((c) => `<rect data-cell x="${n2(x(c.start))}" y="${y + 1}" width="${n2(Math.max(0.5, x(c.end + 1) - x(c.start)))}" height="${rowH - 2}" class="k-${c.klass}"><title>${esc(cellTitle(r, c, budget))}</title></rect>`).join('');
    let cx = L + gridW + 8;
    const right = rightCols.map(([head, w], ci) => {
      const val = head === 'norm ratio' ? (r.error ? '-' : fmtRatio(r.normRatio)) : head === 'vs FP32' ? (r.budget ? fmtBudget(r.budget.ratio) : '-') : marks.map((mk) => mk.text).join(', ');
      const t = `<text x="${n2(ci === rightCols.length - 1 ? cx + 4 : cx + w - 6)}" y="${y + 14}" text-anchor="${ci === rightCols.length - 1 ? 'start' : 'end'}"${marks.length && ci === rightCols.length - 1 ? ' font-weight="700"' : ''}>${esc(val, 100)}</text>`;
      cx += w;
      return t;
    }).join('');
    const outline = marks.some((mk) => mk.key === 'first-below') ? `<rect x="${L - 1}" y="${y}" width="${n2(gridW + 2)}" height="${rowH}" fill="none" stroke="#000" stroke-width="2"/>` : '';
    body.push(`<g data-row="${esc(rowLabel(r), 64)}"${marks.map((mk) => ` data-mark-${mk.key}`).join('')}><text x="${L - 6}" y="${y + 14}" text-anchor="end"${marks.length ? ' font-weight="700"' : ''}>${esc(rowLabel(r), 64)}</text>${rects}${outline}${right}</g>`);
  });
  let hx = L + gridW + 8;
  const heads = rightCols.map(([head, w], ci) => {
    const t = head ? `<text x="${n2(ci === rightCols.length - 1 ? hx + 4 : hx + w - 6)}" y="${T - 8}" text-anchor="end" font-weight="700">${head}</text>` : '';
    hx += w;
    return t;
  }).join('');
  const ticks = n ? [...new Set([0, Math.round(n / 4), Math.round(n / 2), Math.round((3 * n) / 4), n - 1])].map((p) => `<line class="axis" x1="${n2(x(p + 0.5))}" x2="${n2(x(p + 0.5))}" y1="${T + rows.length * rowH}" y2="${T + rows.length * rowH + 4}"/><text x="${n2(x(p + 0.5))}" y="${T + rows.length * rowH + 16}" text-anchor="middle">${p}</text>`).join('') : '';
  const bucket = rows.find((x2) => !x2.error)?.profile.bucket ?? 1;
  return `<figure>
<div class="scroll"><svg class="heat" data-heatmap tabindex="0" shape-rendering="crispEdges" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(`Lens heatmap: ${rows.length} boundaries by ${n} positions, coloured by per-position cosine against the threshold ${formatThreshold(lens.threshold)}`)}">
<text x="${L}" y="${T - 8}" font-weight="700">position (${bucket > 1 ? `the lowest cosine of each ${bucket}` : 'one per column'})</text>${heads}
${body.join('\n')}
${ticks}
<text x="${L + gridW / 2}" y="${H - 2}" text-anchor="middle">position</text>
</svg></div>
<p class="readout" data-readout aria-live="polite">Hover a cell, or focus the heatmap and use the arrow keys, for its numbers; every value is in the tables below.</p>
</figure>
<div class="legend" data-legend>${CELL_CLASSES.filter((k) => k !== 'none').map((k) => swatch(`k-${k}`, esc(classMeaning(k, lens)), ` data-class="${k}"`)).join('')}</div>`;
}

function lensSection(r: Report): string {
  const lens = r.lens;
  if (!lens) return '';
  const budget = !!lens.budget;
  if (!lens.rows.length) return `<section id="lens"><h2>The lens</h2><p>No boundary pairs to judge${lens.unpaired.length ? `: ${lens.unpaired.length} boundaries have one side only` : ''}.</p></section>`;
  const first = lens.firstBelow;
  const named = first
    ? `<p data-first-below="${esc(rowLabel(first), 64)}"><strong>First boundary under the threshold ${esc(formatThreshold(lens.threshold))}: <code>${esc(rowLabel(first), 64)}</code></strong>${first.step ? ` (${esc(first.step, 60)})` : ''}: cosine ${fmtCos(first.wholeCosine)}, per-position min ${fmtCos(first.perPositionMin)}.${first.hint ? ` Likely ${esc(first.hint.cause, 300)}; ${esc(first.hint.where, 300)}.` : ''}</p>`
    : `<p>Every boundary is at or above the threshold ${esc(formatThreshold(lens.threshold))}.</p>`;
  const onset = lens.onset && (!first || lens.onset.order < first.order)
    ? `<p data-onset="${esc(rowLabel(lens.onset), 64)}">The drift begins at <code>${esc(rowLabel(lens.onset), 64)}</code>${lens.onset.step ? ` (${esc(lens.onset.step, 60)})` : ''}: the first boundary under the clean bar ${esc(formatThreshold(lens.cleanBar))}.</p>`
    : '';
  const rowsTable = table(
    ['#', 'boundary', 'step', 'read from', 'cosine', 'per-pos min', 'p5', 'norm ratio', ...(budget ? ['vs FP32'] : []), 'max_abs', 'runs under the threshold', 'mark'],
    lens.rows.map((x) => [
      String(x.order), `<code>${esc(rowLabel(x), 64)}</code>`, esc(x.step ?? '', 60), x.launch ? `<code>${esc(x.launch, 64)}</code>` : 'returned',
      ...(x.error
        ? ['-', '-', '-', '-', ...(budget ? ['-'] : []), '-', '-', `not judged: ${esc(x.error, 300)}`]
        : [fmtCos(x.wholeCosine), fmtCos(x.perPositionMin), fmtCos(x.p5), fmtRatio(x.normRatio), ...(budget ? [x.budget ? fmtBudget(x.budget.ratio) : '-'] : []), fmtSci(x.maxAbs),
          list(x.badRuns).map((b) => fmtRun(b.start, b.end)).join(', '), esc(marksOf(lens, x).map((m) => m.text).join(', '))]),
    ]),
    { num: [0, 4, 5, 6, 7, ...(budget ? [8, 9] : [8])], rowClass: (i) => (lens.rows[i].order === first?.order ? 'first-below' : '') },
  );
  // Every heatmap cell's value, positions down, boundaries across (the table a printout or a reader without scripts has).
  const judged = lens.rows.filter((x) => !x.error);
  const cols = judged.map((x) => ({ x, cells: rowCells(x, lens) }));
  const longest = cols.reduce((a, c) => (c.cells.length > a.length ? c.cells : a), [] as Cell[]);
  const valueRows = longest.map((c, i) => [positions(c), ...cols.map(({ cells }) => (cells[i] ? `${fmtCos(cells[i].cosine)}${cells[i].norm !== null ? ` / ${fmtRatio(cells[i].norm)}` : ''}` : '-'))]);
  return `<section id="lens"><h2>The lens: every boundary inside block 0</h2>
<p>Each boundary on the ${lens.emulated ? 'emulated NPU' : 'NPU'} against the ${lens.reference ? 'HF layer-0 hooks' : 'reference'}, in block order, coloured by per-position cosine on a scale anchored at the threshold ${esc(formatThreshold(lens.threshold))} (clean bar ${esc(formatThreshold(lens.cleanBar))}, well below ${esc(formatThreshold(lens.wellBelow))}). Informational: the gates stay the gates.</p>
${named}${onset}
${heatmap(lens)}
${rowsTable}
${budget && lens.budget ? `<p class="note">vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), each a ${esc(lens.budget.measure, 80)}: about 1 is as good as bf16 allows; above ${lens.budget.bar}x the NPU adds error of its own.</p>` : ''}
<details><summary>Every heatmap cell: the lowest cosine of its positions / the norm ratio farthest from 1</summary>
${table(['positions', ...cols.map(({ x }) => `<code>${esc(rowLabel(x), 64)}</code>`)], valueRows, { num: cols.map((_, i) => i + 1) })}
</details>
</section>`;
}

function bisectSection(b: BisectReport | null): string {
  if (!b) return '';
  const parts: string[] = [`<section id="bisect"><h2>Bisect${b.method === 'twins' ? ': CPU twins of the ELFs' : ''}</h2>`];
  if (b.void) parts.push(`<p class="warn"><strong>Bisect void</strong>: ${esc(b.void, 600)}</p>`);
  if (!b.available) parts.push(`<p>Bisect unavailable: ${esc(b.reason, 600)}</p>`);
  const launches = list(b.launches);
  if (launches.length) {
    parts.push('<h3>Launch level: each buffer against its twin</h3>', table(['launch', 'ELF', 'buffer', 'boundary', 'stage', 'cosine', 'per-pos min', 'max_abs', ''],
      launches.slice(0, 64).flatMap((la) => list(la.buffers).slice(0, 64).map((bu) => [String(la.index), `<code>${esc(la.launch, 64)}</code>`, `<code>${esc(bu.buffer, 64)}</code>`, bu.boundary ? `<code>${esc(bu.boundary, 64)}</code>` : '', esc(bu.stage, 60), fmtCos(bu.wholeCosine), fmtCos(bu.perPositionMin), fmtSci(bu.maxAbs), bu.diverges ? '<span class="bad">off its twin</span>' : bu.drifts ? 'drifts' : ''])),
      { num: [0, 5, 6, 7] }));
    const o = b.launchOffender;
    if (o && !b.void) parts.push(`<p><strong>${o.strength === 'diverges' ? 'First launch off its twin' : 'The drift starts at'}: <code>${esc(o.launch, 64)}</code></strong> (launch ${o.index}), buffer <code>${esc(o.buffer, 64)}</code>: cosine ${fmtCos(o.wholeCosine)}, per-position min ${fmtCos(o.perPositionMin)}.${o.hint ? ` Likely ${esc(o.hint.cause, 300)}.` : ''}</p>`);
  }
  if (b.steps.length) {
    parts.push(`<h3>${b.method === 'twins' ? 'Swap forward' : 'One kernel at a time on the CPU'}</h3>`, table(['step', 'kernel', 'whole cosine', 'per-pos min', 'NaN/Inf', 'block passes'],
      b.steps.slice(0, 64).map((s) => [`<code>${esc(s.step, 64)}</code>`, s.kernel ? `<code>${esc(s.kernel, 64)}</code>` : '', fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), String(s.nonFinite), s.fixes ? '<span class="ok">yes</span>' : 'no']),
      { num: [2, 3, 4] }));
  }
  if (b.offender && !b.void) parts.push(`<p data-offender><strong>Offending ${b.method === 'twins' ? 'ELF' : 'boundary'}: <code>${esc(b.offender.step, 64)}</code></strong>${b.offender.kernel ? ` (kernel <code>${esc(b.offender.kernel, 64)}</code>)` : ''}.${b.offender.hint ? ` Likely ${esc(b.offender.hint.cause, 300)}; ${esc(b.offender.hint.where, 300)}.` : ''}</p>`);
  else if (b.available && !b.void) parts.push(`<p>${esc(b.reason, 600)}</p>`);
  if (b.situation) parts.push(`<p>Failure shape: ${esc(b.situation.cause, 300)}; ${esc(b.situation.where, 300)}.</p>`);
  parts.push('</section>');
  return parts.join('\n');
}

function step2Section(r: Report): string {
  const s = r.step2_sanity;
  if (!s) return '';
  if (s.skipped) return `<section id="step2"><h2>Step 2 sanity: padded vs original on the CPU</h2><p>Not run: ${esc(s.skipped, 600)}.</p></section>`;
  const c7 = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(7) : '-');
  return `<section id="step2"><h2>Step 2 sanity: padded vs original on the CPU</h2>
<p>Both forwards in ${esc(s.dtype ?? 'float32', 16)} on the prompt's ${esc(s.tokens ?? '?', 12)} tokens; gate: both cosines &gt;= ${esc(s.gate, 16)}.</p>
${table(['padding', 'layer-0 ffn_out cosine', 'logits cosine', 'result'], list(s.rows).map((x) => x.skipped ? [esc(x.label, 120), '-', '-', `not run: ${esc(x.skipped, 300)}`] : [esc(x.label, 120), c7(x.ffn_out_cosine), c7(x.logits_cosine), x.pass ? '<span class="ok">pass</span>' : '<span class="bad">fail</span>']), { num: [1, 2] })}
</section>`;
}

/** This run and the history rows of the same NPU generation before it, oldest first. */
function historyOf(r: Report, rows: readonly HistoryEntry[]): { date: string; commit: string; outcome: string; cosine: number; maxAbs: number; current: boolean }[] {
  const k = historyKey(r);
  const earlier = rows.filter((h) => h.npu === k.npu && !(h.commit === k.commit && h.prompt === k.prompt))
    .map((h) => ({ date: h.date, commit: h.commit, outcome: h.outcome, cosine: h.cosine, maxAbs: h.maxAbs, current: false }));
  const now = { date: str(r.created_at).slice(0, 10), commit: k.commit, outcome: VERDICT[r.outcome] ?? 'ERROR', cosine: num(r.metrics?.wholeCosine), maxAbs: num(r.metrics?.errors.maxAbs), current: true };
  return [...earlier.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0)), now];
}

function historySection(r: Report, rows: readonly HistoryEntry[]): string {
  const h = historyOf(r, rows);
  const npu = generationName(historyKey(r).npu);
  return `<section id="history"><h2>History on ${esc(npu, 80)}</h2>
<p>Whole cosine ${sparkline(h.map((x) => x.cosine), 'whole cosine', { fmt: fmtCos, bar: r.thresholds.whole })} &nbsp; max_abs ${sparkline(h.map((x) => x.maxAbs), 'max_abs', { fmt: (v) => fmtSci(v) })}</p>
${table(['date', 'commit', 'verdict', 'whole cosine', 'max_abs'], h.map((x) => [esc(x.date, 20), `<code>${esc(x.commit, 16)}</code>${x.current ? ' (this run)' : ''}`, esc(x.outcome, 24), fmtCos(x.cosine), fmtSci(x.maxAbs)]), { num: [3, 4] })}
</section>`;
}

function facts(r: Report): string {
  const rows: [string, string][] = [];
  const p = r.prompt;
  if (p) rows.push(['prompt', `${esc(p.style, 32)} (${esc(p.source, 120)}): ${p.real_len} tokens${p.padded_len ? `, padded to ${p.padded_len}` : ''}${p.positions ? `, extended to ${p.positions.requested} positions (--positions)` : ''}`]);
  if (r.reference) rows.push(['reference', esc(`${r.reference.kind} via ${r.reference.runner} (${r.reference.dtype})`, 300)]);
  rows.push(['device', esc(deviceText(r), 300)]);
  const i = r.integration;
  if (i) rows.push(['integration', `${esc(i.path, 32)}, entry <code>${esc(i.entry, 200)}</code>; workarounds: ${list(i.workarounds).length ? list(i.workarounds).map((w) => `<code>${esc(w?.id, 64)}</code>`).join(', ') : 'none'}`]);
  rows.push(['run dir', `<code>${esc(r.run_dir, 400)}</code>`]);
  rows.push(['tool', esc(`${r.tool.name} ${r.tool.version}`, 80)]);
  return `<section id="run"><h2>The run</h2>${table(['', ''], rows.map(([k, v]) => [k, v]))}</section>`;
}

function layersSection(r: Report): string {
  if (!r.layers?.length) return '';
  return `<section id="layers"><h2>Every layer (informational; only layer 0 is gated)</h2>${table(['layer', 'whole cosine', 'per-pos min', 'max_abs', 'NaN/Inf'], r.layers.map((l) => [String(l.layer), fmtCos(l.wholeCosine), fmtCos(l.perPositionMin), fmtSci(l.maxAbs), String(l.nonFinite)]), { num: [0, 1, 2, 3, 4] })}</section>`;
}

/** report.html of a record. Pure: the same record and history give the same bytes. */
export function renderHtml(r: Report, o: HtmlOptions = {}): string {
  const title = `${VERDICT[r.outcome] ?? 'ERROR'} ${esc(r.model.name, 80)}: npu-block-gate report`;
  const parts = [banner(r)];
  if (r.outcome === 'error') {
    parts.push(`<section id="error"><h2>Could not judge</h2><p data-error>${esc(r.error ?? 'unknown error', 1000)}</p><p>The check could not run to a verdict (infrastructure or input problem). Fix the cause and re-run; no gate was judged.</p></section>`);
  } else {
    parts.push(gatesSection(r), ffnOutChart(r), lensSection(r), bisectSection(r.bisect), step2Section(r), layersSection(r), historySection(r, o.history ?? []));
  }
  parts.push(facts(r));
  return page(title, `<main>\n${parts.filter(Boolean).join('\n')}\n</main>`);
}

export type { CellClass };
