// Plain-text rendering for the terminal: the verdict, the gates, the numbers that matter.
import type { Report } from '../record/report.ts';
import { isolationText } from './markdown.ts';
import { fmtBudget, fmtCos, fmtDb, fmtSci, fmtSqnr, fmtRatio, fmtRun } from '../text/format.ts';
import { formatThreshold, SQNR_GOOD_DB } from '../seed/thresholds.ts';
import { logLine, plain } from '../text/escape.ts';
import type { LensNamed, LensReport, LensRow } from '../record/lens.ts';
import type { BisectReport } from '../record/bisect.ts';
import type { Hint } from '../seed/hints.ts';

/** A foreign value on one bounded line (controls replaced). */
function f(v: unknown, max = 120): string {
  return plain(v, max).replace(/\s*\n\s*/g, ' ');
}

function arr<T>(v: readonly T[] | null | undefined): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}

function pad(rows: string[][]): string[] {
  const w = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) => r.map((s, c) => (c === r.length - 1 ? s : s.padEnd(w[c]))).join('  ').trimEnd());
}

/**
 * The report as terminal text. Every foreign string is cut to one bounded line without control
 * characters, and no line can start a GitHub workflow command (the CLI also runs in CI logs).
 */
export function renderTerminal(r: Report, o: { color?: boolean } = {}): string {
  const text = logLine(terminalLines(r).join('\n'));
  return o.color ? colored(text) : text;
}

const SGR = { green: '\x1b[32m', red: '\x1b[31m', yellow: '\x1b[33m', bold: '\x1b[1m', reset: '\x1b[0m' } as const;
const paint = (s: string, ...codes: string[]) => `${codes.join('')}${s}${SGR.reset}`;

/**
 * The verdict, the gate results and the warnings in colour (a terminal; the CLI decides: a TTY, and
 * no NO_COLOR). Applied to the finished text, whose foreign strings logLine already cleaned, so
 * nothing a file says can add an escape sequence.
 */
function colored(text: string): string {
  const word: Record<string, string> = { PASS: SGR.green, FAIL: SGR.red, ERROR: SGR.red, SKIP: SGR.yellow };
  return text.split('\n').map((l, i) => {
    if (i === 0) return l.replace(/^(PASS|FAIL|ERROR)\b/, (w) => paint(w, SGR.bold, word[w]));
    if (/^ {2}G\d /.test(l)) return l.replace(/(PASS|FAIL|SKIP)$/, (w) => paint(w, word[w]));
    if (/^ {2}warning: /.test(l)) return l.replace(/^( {2})(warning:)/, (_m, a: string, w: string) => `${a}${paint(w, SGR.yellow)}`);
    if (/^ {4}\d{2} .* (UNDER|ERROR)$/.test(l)) return l.replace(/(UNDER|ERROR)$/, (w) => paint(w, SGR.red));
    return l;
  }).join('\n');
}

/** Colour for a stream: a terminal, unless NO_COLOR is set (no-color.org) or TERM is dumb. */
export function wantsColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return !!stream.isTTY && !env.NO_COLOR && env.TERM !== 'dumb';
}

/** SQNR as information: the 40 dB "very good" mark is named on a FAIL only (on a PASS it is noise). */
const sqnr = (r: Report, db: number) => (r.outcome === 'pass' ? fmtDb(db) : fmtSqnr(db, SQNR_GOOD_DB));
const hint = (h: Hint | null) => (h ? `: likely ${f(h.cause)}; ${f(h.where)}` : '');
const low = (x: { wholeCosine: number; perPositionMin: number }) => Math.min(x.wholeCosine, x.perPositionMin);

function namedText(n: LensNamed): string {
  const where = [n.step ? f(n.step, 40) : '', n.producedBy ? `written by ${f(n.producedBy, 64)}` : ''].filter(Boolean).join(', ');
  return `${f(n.name, 64)}${where ? ` (${where})` : ''}, cosine ${fmtCos(n.wholeCosine)}, per-position min ${fmtCos(n.perPositionMin)}`;
}

/** Per-position cosine of one boundary over the positions, in 8 ranges (the lowest of each). */
function byPosition(row: LensReport['rows'][number]): string {
  const { bucket, points } = row.profile;
  const ranges = Math.min(8, points.length);
  const per = Math.ceil(points.length / ranges);
  const parts: string[] = [];
  for (let i = 0; i < points.length; i += per) {
    const chunk = points.slice(i, i + per);
    const lo = chunk.some(Number.isNaN) ? NaN : Math.min(...chunk);
    const start = i * bucket;
    const end = Math.min(row.rows, (i + chunk.length) * bucket) - 1;
    parts.push(`${fmtRun(start, end)} ${fmtCos(lo)}`);
  }
  return parts.join(', ');
}

/** Step 2's padded-vs-original check: one row per way of padding (informational). */
function step2SanityLines(r: Report): string[] {
  const s = r.step2_sanity;
  if (!s) return [];
  if (s.skipped) return ['', `  step 2 sanity (padded vs original on the CPU): not run: ${f(s.skipped, 300)}`];
  const o = s.original ?? {};
  const p = s.padded ?? {};
  const out = ['', `  step 2 sanity (padded vs original on the CPU, ${f(s.dtype, 16)}, gate >= ${s.gate}; emb ${o.emb_dim}->${p.emb_dim}, hidden ${o.hidden_dim}->${p.hidden_dim}, heads ${o.n_heads}->${p.n_heads}, group ${o.group_size}->${p.group_size}):`];
  const rows = [['padding', 'ffn_out cosine', 'logits cosine', '']];
  for (const x of arr(s.rows)) {
    if (x.skipped) rows.push([f(x.label, 90), '-', '-', 'not run']);
    else rows.push([f(x.label, 90), fmtCos7(x.ffn_out_cosine), fmtCos7(x.logits_cosine), x.pass ? 'PASS' : 'FAIL']);
  }
  out.push(...pad(rows).map((l) => `    ${l}`));
  for (const x of arr(s.rows).filter((y) => y.skipped)) out.push(`  not run: ${f(x.label, 90)}: ${f(x.skipped, 300)}`);
  if (s.why) out.push(`  why the reindexing matters: ${f(s.why, 400)}`);
  return out;
}

/** Seven decimals: the gate is 0.999998, so fmtCos's precision would hide a miss. */
function fmtCos7(v: number | undefined): string {
  return typeof v === 'number' && Number.isFinite(v) ? v.toFixed(7) : '-';
}

function lensLines(r: Report): string[] {
  const lens = r.lens;
  if (!lens) return [];
  // A PASS shows only what helps: a lens with nothing to judge says nothing here (report.md says why).
  if (!lens.rows.length && r.outcome === 'pass') return [];
  const out: string[] = [''];
  if (!lens.rows.length) {
    out.push(`  lens: no boundary pairs to judge${lens.unpaired.length ? ` (${lens.unpaired.length} with one side only: ${f(lens.unpaired[0].reason)})` : ''}`);
    return out;
  }
  const ex = lens.budget?.expected ?? null;
  const budgetHead = !lens.budget ? '' : ex
    ? `; vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), ${lens.budget.measure}; expected: error(hardware twins, precision ${f(ex.precision, 20)}, vs FP32) / error(HF bf16 vs FP32); NPU/exp: error(NPU) / error(hardware twins), bar ${ex.bar}x`
    : `; vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), ${lens.budget.measure}, bar ${lens.budget.bar}x`;
  out.push(`  lens (every boundary inside block 0, ${lens.emulated ? 'emulated NPU' : 'NPU'} vs reference, ${lens.rows[0].rows} real rows; informational, threshold ${formatThreshold(lens.threshold)}${budgetHead}):`);
  const n = lens.firstBelow;
  const o = lens.onset;
  const onset = o && (!n || o.order < n.order) ? o.order : null;
  const budget = !!lens.budget;
  const cols = budget ? (ex ? ['vs FP32', 'expected', 'NPU/exp'] : ['vs FP32']) : [];
  const cells = (b: LensRow['budget']) => (!budget ? [] : !b ? cols.map(() => '') : ex
    ? [fmtBudget(b.ratio), b.expectedRatio !== undefined ? fmtBudget(b.expectedRatio) : '', b.vsExpected !== undefined ? fmtBudget(b.vsExpected) : '']
    : [fmtBudget(b.ratio)]);
  const rows = [['#', 'boundary', 'step', 'cosine', 'per-pos min', 'norm ratio', ...cols, 'max_abs', '']];
  for (const x of lens.rows.slice(0, 64)) {
    if (x.error) {
      rows.push([String(x.order).padStart(2, '0'), f(x.name, 64), f(x.step ?? '', 20), '-', '-', '-', ...cols.map(() => '-'), '-', 'ERROR']);
      continue;
    }
    const flags = [x.below ? 'UNDER' : x.order === onset ? 'onset' : '', lens.scale?.order === x.order ? 'SCALE' : '', x.budget?.over ? 'ERR' : ''].filter(Boolean).join(' ');
    rows.push([String(x.order).padStart(2, '0'), f(x.name, 64), f(x.step ?? '', 20), fmtCos(x.wholeCosine), fmtCos(x.perPositionMin), fmtRatio(x.normRatio),
      ...cells(x.budget), fmtSci(x.maxAbs), flags]);
  }
  out.push(...pad(rows).map((l) => `    ${l}`));
  for (const x of lens.rows.filter((y) => y.error).slice(0, 16)) out.push(`  not judged: ${f(x.name, 64)}: ${f(x.error, 300)}`);
  if (n) {
    out.push(`  first boundary under ${formatThreshold(lens.threshold)}: ${namedText(n)}${hint(n.hint)}`);
    if (o && o.order < n.order) out.push(`  the divergence begins earlier, at ${namedText(o)} (under the clean bar ${formatThreshold(lens.cleanBar)})${hint(o.hint)}`);
  } else if (o) {
    // Nothing under the threshold, yet a drift: where it begins is the finding (an ignored norm weight).
    out.push(`  every boundary is at or above ${formatThreshold(lens.threshold)}, but a drift begins at ${namedText(o)} (under the clean bar ${formatThreshold(lens.cleanBar)})${hint(o.hint)}`);
  } else out.push(`  every boundary is at or above ${formatThreshold(lens.threshold)}`);
  const sc = lens.scale;
  if (sc) out.push(`  scale: ${f(sc.name, 64)}${sc.step ? ` (${f(sc.step, 40)})` : ''} has norm ratio ${sc.accounted ? `|npu|/|twins| ${fmtRatio(sc.normRatio)} (the tree's RMSNorm eps accounted for; |npu|/|ref| ${fmtRatio(sc.accounted.normRatio)})` : fmtRatio(sc.normRatio)}, off 1 by more than ${sc.bar * 100}% (the first boundary to lose its scale): likely ${f(sc.cause, 300)}`);
  for (const u of lens.unpaired.slice(0, 16)) out.push(`  not judged: ${f(u.name, 64)} (${u.side === 'both' ? 'different shapes' : `${u.side} side only`}): ${f(u.reason)}`);
  if (r.prompt?.positions) {
    const judged = lens.rows.filter((x) => !x.error);
    const pr = lens.rows.find((x) => x.order === n?.order) ?? [...judged].sort((a, b) => low(a) - low(b))[0];
    if (pr) out.push(`  ${f(pr.name, 64)} by position (lowest per-position cosine in each range): ${byPosition(pr)}`);
  }
  return out;
}

/** The unswapped re-run: whether the bisect ran the block that was judged. */
function rerunLines(b: BisectReport): string[] {
  const r = b.rerun;
  if (b.void) return [`  BISECT VOID: ${f(b.void, 600)}`];
  if (!r) return [];
  return [`  re-run: block 0 unswapped under ${f(r.python, 200)} gave back the judged ffn_out ${r.exact ? 'bit for bit' : `within tolerance (relative L2 ${fmtSci(r.relL2)} <= ${r.tolerance})`}`];
}

/** The launch-level table's finding: where the drift starts, and where it first crosses the threshold. */
function launchFinding(b: BisectReport): string[] {
  const o = b.launchOffender;
  if (!o) return b.launches?.length && !b.void ? ['  every launch matches its twin'] : [];
  const at = (x: NonNullable<BisectReport['launchOffender']>) => `${f(x.launch, 64)} (launch ${x.index}), buffer ${f(x.buffer, 64)}${x.stage ? ` (${f(x.stage, 40)})` : ''}, cosine ${fmtCos(x.wholeCosine)}`;
  const c = b.launchCrossing;
  if (c) return [`  the drift starts at ${at(o)}${hint(o.hint)}`, `  it first crosses the threshold at ${at(c)}`];
  return [`  ${o.strength === 'diverges' ? 'first launch off its twin' : 'no launch under the threshold; the first that drifts'}: ${at(o)}${hint(o.hint)}`];
}

function twinsLines(b: BisectReport): string[] {
  const out: string[] = ['', `  bisect, launch level (each launch's buffers, ${b.emulated ? 'emulated ' : ''}NPU vs its CPU twin from the launch's own inputs):`];
  out.push(...rerunLines(b));
  const o = b.launchOffender;
  const rows = [['launch', 'ELF', 'buffer', 'stage', 'cosine', 'per-pos min', '']];
  for (const la of (b.launches ?? []).slice(0, 64)) {
    for (const bu of la.buffers.slice(0, 64)) {
      const drifts = !bu.diverges && o?.index === la.index && o.buffer === bu.buffer;
      rows.push([String(la.index), f(la.launch, 64), f(bu.buffer, 64), f(bu.stage, 40), fmtCos(bu.wholeCosine), fmtCos(bu.perPositionMin), bu.diverges ? 'OFF' : drifts ? 'drifts' : '']);
    }
  }
  if (rows.length > 1) out.push(...pad(rows).map((l) => `    ${l}`));
  out.push(...launchFinding(b));
  out.push('', '  bisect, swap forward (ffn_out after ELFs 1..i are answered by their twins):');
  const steps = [['step', 'ELF', 'whole', 'per-pos min', 'passes']];
  for (const [i, s] of b.steps.slice(0, 64).entries()) steps.push([String(i + 1), f(s.step, 64), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), s.fixes ? 'yes' : 'no']);
  out.push(...pad(steps).map((l) => `    ${l}`));
  out.push(b.offender ? `  offending ELF (swap forward): ${f(b.offender.step, 64)}` : b.void ? '  (the swap table of a void bisect names nothing)' : `  ${f(b.reason, 400)}`);
  if (b.situation) out.push(`  failure shape: ${f(b.situation.cause)}; ${f(b.situation.where)}`);
  return out;
}

function terminalLines(r: Report): string[] {
  const out: string[] = [];
  if (r.outcome === 'error') {
    out.push(`ERROR  ${f(r.model.name)}: could not judge (not a FAIL verdict)`, `  ${f(r.error ?? '', 1000)}`);
    return out;
  }
  out.push(`${r.outcome === 'pass' ? 'PASS' : 'FAIL'}  ${f(r.model.name)}  (head_dim ${r.thresholds.headDim}, per-position threshold ${formatThreshold(r.thresholds.perPosition)}${r.thresholds.overridden ? ', overridden' : ''})${r.emulate ? '  EMULATED' : ''}`);
  if (r.emulate) out.push(`  EMULATED: no NPU ran; the tree's block ran on an emulated NPU (${f(r.emulate.runtime, 120)})${r.emulate.inject ? `, injected bug: ${f(r.emulate.inject, 64)}` : ''}`);
  const pos = r.prompt?.positions;
  if (pos) out.push(`  positions: ${pos.real_len} real tokens (--positions ${pos.requested}: ${f(pos.method, 20)}${pos.set ? ` with ${f(pos.set)}` : ''}, from ${pos.prompt_tokens} prompt tokens)`);
  out.push('');
  const rows = [['gate', 'check', 'measured', 'bar', 'result']];
  for (const g of r.gates) {
    const v = typeof g.value === 'number' ? (g.id === 'G3' ? String(g.value) : fmtCos(g.value)) : (g.value ?? '');
    rows.push([g.id, g.name, v, g.bar, g.status.toUpperCase()]);
  }
  out.push(...pad(rows).map((l) => `  ${l}`));
  for (const g of r.gates) if (g.status === 'fail') out.push(`  ${g.id}: ${g.detail}`);
  const m = r.metrics;
  if (m) {
    const e = m.errors;
    const pp = m.perPosition;
    out.push('');
    out.push(`  per-position cosine  min ${fmtCos(pp.min)}  p5 ${fmtCos(pp.p5)}  median ${fmtCos(pp.median)}  mean ${fmtCos(pp.mean)}  (${m.realLen} real rows of ${m.npuRows})`);
    // Information, worded so: on a PASS no bar is flagged; max_rel is large wherever the reference is near 0.
    const rel = `${fmtSci(e.maxRel)}${e.maxRel > 1 ? ' (where the reference is near 0)' : ''}`;
    out.push(`  errors (informational)  max_abs ${fmtSci(e.maxAbs)}  mean_abs ${fmtSci(e.meanAbs)}  max_rel ${rel}  mean_rel ${fmtSci(e.meanRel)}  mean_rel_L1 ${fmtSci(e.meanRelL1)}  SQNR ${sqnr(r, e.sqnrDb)}  norm ratio ${fmtRatio(e.normRatio)}`);
    const fb = r.lens?.rows.find((x) => x.name === 'ffn_out')?.budget;
    if (fb && r.lens?.budget) {
      const ex = r.lens.budget.expected;
      out.push(fb.vsExpected !== undefined && ex
        ? `  error budget vs FP32 (${r.lens.budget.measure})  NPU ${fmtSci(fb.npu)}  HF bf16 ${fmtSci(fb.bf16)}  ratio ${fmtBudget(fb.ratio)}  expected ${fmtBudget(fb.expectedRatio!)} (hardware twins ${fmtSci(fb.expected!)})  NPU/expected ${fmtBudget(fb.vsExpected)} (bar ${ex.bar}x${fb.over ? ', OVER' : ''})`
        : `  error budget vs FP32 (${r.lens.budget.measure})  NPU ${fmtSci(fb.npu)}  HF bf16 ${fmtSci(fb.bf16)}  ratio ${fmtBudget(fb.ratio)} (bar ${r.lens.budget.bar}x${fb.over ? ', OVER' : ''})`);
    }
    if (pp.badRuns.length) out.push(`  rows under threshold: ${pp.badRuns.map((b) => fmtRun(b.start, b.end)).join(', ')}${pp.badRuns.some((b) => b.end === m.realLen - 1) ? ' (tail of the prompt)' : ''}`);
    if (pp.worst.length) out.push(`  worst rows: ${pp.worst.map((w) => `${w.row}=${fmtCos(w.cosine)}`).join(' ')}`);
  }
  for (const w of r.warnings) out.push(`  warning: ${f(w.message, 600)}`);
  out.push(...lensLines(r));
  const b = r.bisect;
  if (b && b.available && b.method === 'twins') out.push(...twinsLines(b));
  else if (b) {
    if (!b.available) out.push(`  bisect: unavailable (${f(b.reason)})`);
    else {
      out.push('', '  bisect (one kernel at a time on the CPU):', ...rerunLines(b));
      const rows = [['step', 'kernel', 'whole', 'per-pos min', 'passes']];
      for (const s of b.steps.slice(0, 64)) rows.push([f(s.step, 64), f(s.kernel, 64), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), s.fixes ? 'yes' : 'no']);
      out.push(...pad(rows).map((l) => `    ${l}`));
      out.push(b.offender ? `  offending boundary: ${f(b.offender.step, 64)} (${f(b.offender.kernel, 64)})${b.offender.hint ? `: likely ${f(b.offender.hint.cause)}; ${f(b.offender.hint.where)}` : ''}` : b.void ? '  (a void bisect names nothing)' : `  ${f(b.reason)}`);
    }
    if (b.situation) out.push(`  failure shape: ${f(b.situation.cause)}; ${f(b.situation.where)}`);
  }
  out.push(...step2SanityLines(r));
  if (r.layers?.length) {
    out.push('', '  every layer (informational):');
    const rows = [['layer', 'whole', 'per-pos min', 'max_abs', 'SQNR']];
    for (const l of r.layers) rows.push([String(l.layer), fmtCos(l.wholeCosine), fmtCos(l.perPositionMin), fmtSci(l.maxAbs), sqnr(r, l.sqnrDb)]);
    out.push(...pad(rows).map((l) => `    ${l}`));
  }
  if (r.integration) {
    const workarounds = arr(r.integration.workarounds);
    const home = r.integration.defined_in;
    out.push('', `  integration: ${f(r.integration.path, 32)} via ${f(r.integration.entry)}${home?.file ? ` (defined in ${f(home.file)})` : ''}${workarounds.length ? `; workarounds: ${workarounds.slice(0, 20).map((w) => f(w?.id, 64)).join(', ')}` : ''}`);
    const s1 = r.integration.step1;
    if (s1?.path_why) out.push(`  step 1: ${f(s1.path, 32)}: ${f(s1.path_why, 400)}`);
    const breaks = arr(s1?.breaks);
    if (breaks.length) out.push(`  step 1: kernel-first forced by ${breaks.slice(0, 20).map((b) => `(${f(b?.rule, 8)}) ${f(b?.detail)}`).join('; ')}`);
    const unwired = arr(r.integration.coverage?.unwired);
    if (unwired.length) out.push(`  phase 1 coverage: ${unwired.length} verified kernel row(s) naming this model are not launched by the block`);
  }
  for (const d of arr(r.defaults?.differs).slice(0, 20)) out.push(`  differs from make diagnosis: ${f(d)}`);
  out.push(`  probe isolation: ${isolationText(r)}`);
  if (r.docs) out.push(`  documented: ${r.docs.phase2}${r.docs.changed ? '' : ' (unchanged)'}`);
  return out;
}
