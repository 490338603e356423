// The lens (DESIGN.md "Lens and bisect"): every boundary inside block 0, NPU side against the HF
// side, judged with the same engine and definitions as the gated ffn_out, over the real rows
// (every boundary file holds only those), in block order. The first boundary under the threshold
// is named with the seed's failure-mode hint. Informational: the seed's four gates stay the gates;
// a boundary well under the threshold while ffn_out passes is a warning (the gate may hide a bug).
import { openRunTensor } from '../rundir/read.ts';
import { compare, comparisonOf, lowestCosine } from '../metrics/index.ts';
import type { Boundaries, NormEps } from '../rundir/schema.ts';
import type { Metrics } from '../metrics/types.ts';
import type { Warning } from '../record/report.ts';
import type { ErrorBudget, LensNamed, LensReport, LensRow, LensScale, NormEpsFinding, Profile } from '../record/lens.ts';
import { FA_DRIFT_HINT, hintForStep } from '../seed/hints.ts';
import { cleanBar, ERROR_BUDGET_WARN, ERROR_MEASURE, EXPECTED_BUDGET_WARN, formatThreshold, LENS_SCALE_WARN, wellBelow } from '../seed/thresholds.ts';
import { fmtBudget, fmtCos, fmtRatio, fmtSci } from '../text/format.ts';
import { isId } from '../text/escape.ts';
import { referenceFault } from '../gates/reference.ts';

/** Points a boundary's per-position profile keeps (the minimum per bucket of rows beyond it). */
export const PROFILE_POINTS = 128;

/**
 * Per-position cosines bucketed to at most `points` values (min per bucket, NaN kept). With the
 * per-row norm ratios, `norms` holds each bucket's ratio farthest from 1 (rows whose ratio is NaN,
 * a zero reference row, left out; NaN when all are).
 */
export function profileOf(cosines: readonly number[], points = PROFILE_POINTS, ratios?: readonly number[]): Profile {
  const bucket = Math.max(1, Math.ceil(cosines.length / points));
  const out: number[] = [];
  const norms: number[] = [];
  for (let i = 0; i < cosines.length; i += bucket) {
    let lo = Infinity;
    let far = NaN;
    for (let j = i; j < Math.min(cosines.length, i + bucket); j++) {
      lo = Number.isNaN(cosines[j]) || Number.isNaN(lo) ? NaN : Math.min(lo, cosines[j]);
      const r = ratios?.[j];
      if (r !== undefined && !Number.isNaN(r) && (Number.isNaN(far) || Math.abs(r - 1) > Math.abs(far - 1))) far = r;
    }
    out.push(lo);
    norms.push(far);
  }
  return ratios && ratios.length === cosines.length ? { bucket, points: out, norms } : { bucket, points: out };
}

/** A boundary is off in scale: its norm ratio |npu|/|ref| is off 1 by more than LENS_SCALE_WARN, either way. */
export function scaleIsOff(normRatio: number): boolean {
  return Number.isFinite(normRatio) && Math.abs(normRatio - 1) > LENS_SCALE_WARN;
}

function rowOf(e: Boundaries['entries'][number], m: Metrics, threshold: number): LensRow {
  const c = comparisonOf(m);
  const low = lowestCosine(c);
  return {
    name: e.name, order: e.order, step: e.step, launch: e.launch, producedBy: e.produced_by,
    ...c,
    below: !(low >= threshold),
    drifts: !(low >= cleanBar(threshold)),
    scaleOff: scaleIsOff(c.normRatio),
    badRuns: m.perPosition.badRuns.slice(0, 16),
    profile: profileOf(m.perPosition.cosines, PROFILE_POINTS, m.errors.rowNormRatios),
  };
}

function named(r: LensRow): LensNamed {
  return {
    name: r.name, order: r.order, step: r.step, launch: r.launch, producedBy: r.producedBy,
    wholeCosine: r.wholeCosine, perPositionMin: r.perPositionMin, hint: hintForStep(r.step, r.name, r.producedBy ?? r.launch ?? ''),
  };
}

/** Where a drift begins, named; at FlashAttention a drift that crosses nothing gets FA_DRIFT_HINT (the
 * kernel's bf16 softmax), not the causal-mask hint a boundary under the threshold gets. */
function onsetOf(r: LensRow): LensNamed {
  const n = named(r);
  return !r.below && n.hint?.boundary === 'FlashAttention' ? { ...n, hint: FA_DRIFT_HINT } : n;
}

/** The row of a boundary whose reference is broken: an error, not a comparison. */
function errorRow(e: Boundaries['entries'][number], rows: number, cols: number, error: string): LensRow {
  return {
    name: e.name, order: e.order, step: e.step, launch: e.launch, producedBy: e.produced_by,
    rows, cols, wholeCosine: NaN, perPositionMin: NaN, p5: NaN, median: NaN, maxAbs: NaN, maxRel: NaN, sqnrDb: NaN, normRatio: NaN, nonFinite: 0,
    below: false, drifts: false, scaleOff: false, badRuns: [], profile: { bucket: 1, points: [] }, error,
  };
}

/** Every boundary pair compared, in block order. Each file is opened through openRunTensor: a regular
 * file inside the run dir, of the dtype and shape declared (a bad one is an input error naming it). */
export async function compareBoundaries(runDir: string, b: Boundaries, threshold: number): Promise<LensRow[]> {
  const rows: LensRow[] = [];
  const entries = [...b.entries.entries()].sort(([, x], [, y]) => x.order - y.order);
  for (const [i, e] of entries) {
    const npu = openRunTensor(runDir, e.npu, `boundaries.entries[${i}].npu`);
    try {
      const ref = openRunTensor(runDir, e.ref, `boundaries.entries[${i}].ref`);
      try {
        // A NaN or Inf on the HF side is the reference's failure, not the NPU's: an error row.
        const fault = referenceFault(ref, ref.rows, true);
        if (fault) rows.push(errorRow(e, ref.rows, ref.cols, `the reference is broken: ${fault}; not a verdict on the NPU`));
        else {
          const row = rowOf(e, await compare(npu, ref, { threshold, worstK: 0 }), threshold);
          if (e.fp32) row.budget = await budgetOf(runDir, e, i, threshold, !!b.twin);
          if (e.twin) {
            const t = openRunTensor(runDir, e.twin, `boundaries.entries[${i}].twin`);
            try {
              row.twinNormRatio = comparisonOf(await compare(t, ref, { threshold, worstK: 0 })).normRatio;
            } finally {
              t.close();
            }
            if (epsInPlay(b) && Number.isFinite(row.twinNormRatio) && row.twinNormRatio > 0 && Number.isFinite(row.normRatio)) {
              // The known eps mismatch accounted for: the scale lost beyond what the twins (at the same eps) lose.
              row.accountedRatio = row.normRatio / row.twinNormRatio;
              row.scaleOff = Math.abs(row.accountedRatio - 1) > LENS_SCALE_WARN;
            }
          }
          rows.push(row);
        }
      } finally {
        ref.close();
      }
    } finally {
      npu.close();
    }
  }
  return rows;
}

/** ||a - b|| / ||b|| from a comparison's SQNR (10 log10 of sum b^2 over sum (a-b)^2): 0 when equal. */
export function relL2(m: Metrics): number {
  return 10 ** (-m.errors.sqnrDb / 20);
}

const over0 = (a: number, b: number) => (b > 0 ? a / b : a > 0 ? Infinity : NaN);

/**
 * The error budget: error(NPU vs FP32) / error(HF bf16 vs FP32), each a relative L2 (ERROR_MEASURE).
 * With `expected` (the hardware twins' error against FP32, issue 29.2) it also carries expected / bf16
 * and npu / expected, and `over` is judged on npu / expected against `expectedBar`: a coarser number
 * format than bf16 (NPU2's BFP16) is over the first ratio on a right integration, not over this one.
 */
export function budgetFrom(npu: number, bf16: number, bar = ERROR_BUDGET_WARN, expected?: number | null, expectedBar = EXPECTED_BUDGET_WARN): ErrorBudget {
  const ratio = over0(npu, bf16);
  // null: the twins' pass ran, but no twin wrote this boundary (host attention under --cpu-attn):
  // the NPU did not compute it, so no error is laid at the NPU's door here.
  if (expected === null) return { npu, bf16, ratio, over: false };
  if (expected === undefined || Number.isNaN(expected)) return { npu, bf16, ratio, over: ratio > bar };
  const vsExpected = over0(npu, expected);
  return { npu, bf16, ratio, expected, expectedRatio: over0(expected, bf16), vsExpected, over: vsExpected > expectedBar };
}

/** The ratio a budget is judged on (npu / expected when the twins' error is known) and its bar. */
function judgedBudget(b: ErrorBudget, bar = ERROR_BUDGET_WARN, expectedBar = EXPECTED_BUDGET_WARN): { ratio: number; bar: number } {
  return b.vsExpected !== undefined ? { ratio: b.vsExpected, bar: expectedBar } : { ratio: b.ratio, bar };
}

/** The NPU's eps and the config's differ (probe.json boundaries.norm_eps): on an emulated NPU the twins'
 * eps (--twin-eps config gives them the config's), else the tree's ELFs'. */
function epsInPlay(b: Boundaries): NormEps | null {
  const ne = b.norm_eps;
  if (!ne) return null;
  const npu = b.emulated ? ne.twins : ne.tree;
  return Math.abs(npu - ne.config) > 1e-9 * Math.max(Math.abs(npu), Math.abs(ne.config)) ? ne : null;
}

/** The eps finding, named once: where it first shows (the first RMSNorm boundary judged). */
function normEpsOf(b: Boundaries, rows: readonly LensRow[]): NormEpsFinding | null {
  const ne = epsInPlay(b);
  if (!ne) return null;
  const r = rows.find((x) => !x.error && x.name === 'attn_norm') ?? rows.find((x) => !x.error && /^RMSNorm/i.test(x.step ?? ''));
  return {
    tree: ne.tree, config: ne.config, file: ne.file, line: ne.line,
    at: r ? { name: r.name, normRatio: r.normRatio, twinNormRatio: r.twinNormRatio ?? null } : null,
  };
}

async function budgetOf(runDir: string, e: Boundaries['entries'][number], i: number, threshold: number, twinsRan: boolean): Promise<ErrorBudget> {
  const vsFp32 = async (side: 'npu' | 'ref' | 'twin') => {
    const a = openRunTensor(runDir, e[side]!, `boundaries.entries[${i}].${side}`);
    try {
      const f = openRunTensor(runDir, e.fp32!, `boundaries.entries[${i}].fp32`);
      try {
        return relL2(await compare(a, f, { threshold, worstK: 0 }));
      } finally {
        f.close();
      }
    } finally {
      a.close();
    }
  };
  return budgetFrom(await vsFp32('npu'), await vsFp32('ref'), ERROR_BUDGET_WARN, e.twin ? await vsFp32('twin') : twinsRan ? null : undefined);
}

/**
 * The lens from its compared rows. `ffnOutPasses`: the gated ffn_out passes G1-G3; then a boundary
 * well below the threshold is `hiding` (the gate may be hiding a bug: the RoPE and RMSNorm-weight
 * bugs under near-uniform attention barely move ffn_out).
 */
export function lensOf(b: Boundaries, rows: LensRow[], threshold: number, ffnOutPasses: boolean): LensReport {
  const first = rows.find((r) => r.below);
  const onset = rows.find((r) => r.drifts);
  const offs = scaleOnsetRows(rows);
  const off = offs[0];
  const scaled = (r: LensRow): LensScale => ({
    ...named(r), normRatio: scaleRatio(r), bar: LENS_SCALE_WARN, cause: scaleCause(r),
    ...(r.accountedRatio !== undefined ? { accounted: { normRatio: r.normRatio, twinNormRatio: r.twinNormRatio! } } : {}),
  });
  const expected = rows.some((r) => r.budget?.expected !== undefined) && b.twin
    ? { bar: EXPECTED_BUDGET_WARN, precision: b.twin.precision, what: b.twin.what } : null;
  return {
    threshold, wellBelow: wellBelow(threshold), cleanBar: cleanBar(threshold),
    emulated: b.emulated, source: b.source, table: b.table, reference: b.reference,
    rows, unpaired: b.unpaired,
    firstBelow: first ? named(first) : null, onset: onset ? onsetOf(onset) : null, hiding: hidingOf(rows, threshold, ffnOutPasses),
    scale: off ? scaled(off) : null,
    scales: offs.map(scaled),
    budget: rows.some((r) => r.budget) ? { bar: ERROR_BUDGET_WARN, measure: ERROR_MEASURE, ...(expected ? { expected } : {}) } : null,
    normEps: normEpsOf(b, rows),
    budgetOnsets: budgetOnsetRows(rows).map((r) => r.name),
  };
}

/** The norm ratio a boundary's scale is judged on: with a known upstream mismatch accounted for, the NPU's against the twins'. */
function scaleRatio(r: Pick<LensRow, 'normRatio' | 'accountedRatio'>): number {
  return r.accountedRatio ?? r.normRatio;
}

/**
 * The rows before each row's own step (its seed step: Q/K/V GEMM, RoPE, ...), as the lens lists
 * them in block order: boundaries of one step are parallel branches (q, k and v read the same
 * normed input), so a row is judged against the whole step before it, never against a sibling.
 */
function stepBefore<R extends Pick<LensRow, 'step'>>(rows: readonly R[]): (R[] | null)[] {
  const out: (R[] | null)[] = [];
  let before: R[] | null = null;
  let current: R[] = [];
  let step: string | null = null;
  for (const r of rows) {
    if (step !== null && r.step !== step) { before = current; current = []; }
    step = r.step;
    current.push(r);
    out.push(before);
  }
  return out;
}

/**
 * The boundaries where a scale drift starts on its own, in block order: the first off in scale, and
 * each later one whose norm ratio is not one carried from the step before it (a boundary there off in
 * scale with a ratio within LENS_SCALE_WARN of this one's). A drift an earlier boundary started is
 * carried unchanged through the GEMMs and attention it feeds; a second cause (an ignored FFN-norm
 * weight after the attention norm's eps) changes the ratio again.
 */
function scaleOnsetRows(rows: readonly LensRow[]): LensRow[] {
  const judged = rows.filter((r) => !r.error);
  const before = stepBefore(judged);
  return judged.filter((r, i) => r.scaleOff && !(before[i] ?? []).some((p) => p.scaleOff && Math.abs(scaleRatio(r) / scaleRatio(p) - 1) <= LENS_SCALE_WARN));
}

/**
 * The boundaries where the error budget goes over its bar on its own, in block order: every
 * boundary of the step before (with a budget) was within the bar, or this one's ratio is over bar x
 * the largest of them. Parallel branches of one step (a transposed Q at q, k and v clean) never
 * make the next step's q_roped a second onset.
 */
function budgetOnsetRows(rows: readonly LensRow[], bar = ERROR_BUDGET_WARN): LensRow[] {
  const judged = rows.filter((r) => !r.error && r.budget);
  const before = stepBefore(judged);
  return judged.filter((r, i) => {
    if (!r.budget!.over) return false;
    const over = (before[i] ?? []).filter((p) => p.budget!.over);
    if (!over.length) return true;
    const cur = judgedBudget(r.budget!, bar);
    return cur.ratio > cur.bar * Math.max(...over.map((p) => judgedBudget(p.budget!, bar).ratio));
  });
}

/**
 * An onset the first one cannot explain: a later boundary whose scale or error budget jumps on its own
 * (scaleOnsetRows, budgetOnsetRows). It gets its own warning and, like a boundary under the threshold,
 * asks for the bisect; a single onset (the tree's own RMSNorm eps on Qwen, say) only warns.
 */
export function laterOnset(lens: LensReport): string | null {
  const scales = lens.scales ?? (lens.scale ? [lens.scale] : []);
  if (scales.length > 1) return scales[1].name;
  const budgets = lens.budgetOnsets ?? [];
  return budgets.length > 1 ? budgets[1] : null;
}

/** The warning for the first boundary (block order) over the error budget's bar, naming ffn_out too when it is. */
export function lensBudgetWarning(lens: LensReport): Warning | null {
  return lensBudgetWarnings(lens)[0] ?? null;
}

/** One warning per boundary where the error budget goes over its bar on its own (budgetOnsetRows). */
export function lensBudgetWarnings(lens: LensReport): Warning[] {
  const over = lens.rows.filter((r) => r.budget?.over);
  if (!over.length || !lens.budget) return [];
  const onsets = lens.budgetOnsets ? lens.rows.filter((r) => lens.budgetOnsets!.includes(r.name)) : [over[0]];
  return onsets.map((r, i) => {
    const b = r.budget!;
    const twins = b.vsExpected !== undefined && lens.budget!.expected;
    const label = `${isId(r.name) ? r.name : '(unnamed boundary)'}${r.step ? ` (${r.step})` : ''}`;
    const h = hintForStep(r.step, r.name, r.producedBy ?? r.launch ?? '');
    const also = i === 0 && over.some((x) => x.name === 'ffn_out') && r.name !== 'ffn_out' ? '; ffn_out is over the bar too' : '';
    const again = i > 0 ? ` (again, not carried from ${isId(onsets[i - 1].name) ? onsets[i - 1].name : 'an earlier boundary'}: a second onset)` : '';
    const down = lens.firstBelow && r.order > lens.firstBelow.order ? downstream(lens.firstBelow) : null;
    return {
      id: 'error_budget',
      message: twins
        ? `the error budget against FP32: boundary ${label}${again} has ${fmtBudget(b.vsExpected!)} the error the hardware twins have (${lens.budget!.measure}: NPU ${fmtSci(b.npu)}, hardware twins ${fmtSci(b.expected!)} (precision ${lens.budget!.expected!.precision}), HF bf16 ${fmtSci(b.bf16)}; bar ${lens.budget!.expected!.bar}x): the NPU adds error of its own here, beyond what its number format costs${also}${down ?? (h ? `; likely ${h.cause}` : '')}`
        : `the error budget against FP32: boundary ${label}${again} has ${fmtBudget(b.ratio)} the error bf16 itself has (${lens.budget!.measure}: NPU ${fmtSci(b.npu)}, HF bf16 ${fmtSci(b.bf16)}; bar ${lens.budget!.bar}x): the NPU adds error of its own here${also}${down ?? (h ? `; likely ${h.cause}` : '')}`,
    };
  });
}

/** What a warning downstream of a boundary under the threshold says instead of guessing a cause. */
function downstream(first: LensNamed): string {
  return `; downstream of ${isId(first.name) ? first.name : 'a boundary'}, which is under the threshold: no cause is guessed past it`;
}

/**
 * What most likely moves a boundary's scale, by the seed's step it belongs to. Cosine cannot see
 * any of these; the norm ratio can.
 */
export function scaleCause(r: Pick<LensRow, 'name' | 'step'>): string {
  const step = String(r.step ?? '').toLowerCase();
  const name = r.name.toLowerCase();
  if (step.includes('norm') || /norm/.test(name)) {
    return "the RMSNorm's eps or weight (an eps other than the config's rms_norm_eps moves the scale when mean(x^2) is small; an ignored, unfolded (1+w) or wrong weight moves it always)";
  }
  if (step.includes('attention') || /attn/.test(name)) return 'a missing or doubled scale factor in attention (1/sqrt(head_dim), or a query pre-scaling)';
  if (step.includes('input') || name === 'block_input') return 'the embedding scale (Gemma multiplies the embeddings by sqrt(hidden_size)) or the embedding table';
  if (step.includes('add') || /res|ffn_out/.test(name)) return 'a residual added twice or not at all, or a scale carried in from an earlier boundary';
  return 'a missing scale factor: a weight scaled on load (a dequantisation scale, a folded norm), or a scale carried in from an earlier boundary';
}

/** The warning for a lens whose `scale` is set (null otherwise): names the boundary, its ratio and the likely cause. */
export function lensScaleWarning(lens: LensReport): Warning | null {
  return lensScaleWarnings(lens)[0] ?? null;
}

/** One warning per boundary where a scale drift starts on its own (scaleOnsetRows), each with its ratio and likely cause. */
export function lensScaleWarnings(lens: LensReport): Warning[] {
  const all = lens.scales ?? (lens.scale ? [lens.scale] : []);
  return all.map((s, i) => {
    const pct = ((s.normRatio - 1) * 100).toFixed(2);
    const label = `${isId(s.name) ? s.name : '(unnamed boundary)'}${s.step ? ` (${s.step})` : ''}`;
    const again = i > 0 ? `, not the ${fmtRatio(all[i - 1].normRatio)} carried from ${isId(all[i - 1].name) ? all[i - 1].name : 'an earlier boundary'}: a second onset` : '';
    const down = lens.firstBelow && s.order > lens.firstBelow.order ? downstream(lens.firstBelow) : null;
    const cause = down ?? `; likely ${s.cause}${s.hint ? `; the seed: ${s.hint.cause} (${s.hint.where})` : ''}`;
    const what = s.accounted
      ? `norm ratio |npu|/|twins| ${fmtRatio(s.normRatio)} with the tree's RMSNorm eps accounted for (|npu|/|ref| ${fmtRatio(s.accounted.normRatio)}, the hardware twins at the same eps ${fmtRatio(s.accounted.twinNormRatio)})`
      : `norm ratio |npu|/|ref| ${fmtRatio(s.normRatio)}`;
    return {
      id: 'lens_scale',
      message: `the lens: boundary ${label} is off in scale: ${what} (${s.normRatio > 1 ? '+' : ''}${pct}%, more than ${s.bar * 100}% from 1${again}; cosine ${fmtCos(s.wholeCosine)} cannot see scale)${cause}`,
    };
  });
}

/** The first boundary well below the threshold while ffn_out passes the gates, or null. */
export function hidingOf(rows: readonly LensRow[], threshold: number, ffnOutPasses: boolean): LensNamed | null {
  if (!ffnOutPasses) return null;
  const well = wellBelow(threshold);
  const r = rows.find((x) => !x.error && !(lowestCosine(x) >= well));
  return r ? named(r) : null;
}

/** The warning for a lens whose `hiding` is set (null otherwise): names the boundary, and where the divergence begins when earlier. */
export function lensWarning(lens: LensReport): Warning | null {
  const h0 = lens.hiding;
  if (!h0) return null;
  const label = (n: LensNamed) => `${isId(n.name) ? n.name : '(unnamed boundary)'}${n.step ? ` (${n.step})` : ''}`;
  const onset = lens.onset && lens.onset.order < h0.order ? lens.onset : null;
  const h = (onset ?? h0).hint;
  return {
    id: 'lens',
    message: `the lens: boundary ${label(h0)} is well below the threshold (cosine ${fmtCos(h0.wholeCosine)}, per-position min ${fmtCos(h0.perPositionMin)}; threshold ${formatThreshold(lens.threshold)}) while ffn_out passes the gates: the ffn_out gate may be hiding a bug${onset ? `; the divergence begins at ${label(onset)}` : ''}${h ? `; likely ${h.cause}` : ''}`,
  };
}

/** eps as the config writes it: 1e-05 -> 1e-5, 0.00001 -> 1e-5. */
function fmtEps(v: number): string {
  return Number.isFinite(v) && v > 0 && v < 1e-3 ? v.toExponential().replace(/\.?0*e([+-])0*/, 'e$1').replace('e+', 'e') : String(v);
}

/**
 * The known upstream mismatch, named once (issue 29.3): the tree's RMSNorm ELFs' eps against the
 * checkpoint's rms_norm_eps, with the file and line of the tree's constant. The lens judges scale
 * and the error budget with it accounted for (against the hardware twins, which take the same eps),
 * so it warns only on what this mismatch does not explain.
 */
export function lensEpsWarning(lens: LensReport): Warning | null {
  const e = lens.normEps;
  if (!e) return null;
  const at = e.at
    ? `; at ${isId(e.at.name) ? e.at.name : 'the first RMSNorm'} it moves the scale to a norm ratio of ${fmtRatio(e.at.normRatio)}${e.at.twinNormRatio !== null ? ` (the hardware twins at the tree's eps: ${fmtRatio(e.at.twinNormRatio)})` : ''}`
    : '';
  const judged = lens.rows.some((r) => r.accountedRatio !== undefined)
    ? 'the lens judges scale and the error budget with it accounted for (against the hardware twins, which take the same eps)'
    : 'the lens could not account for it (no hardware twins\' pass in this run: no FP32 side), so scale warnings at the RMSNorm boundaries may be this';
  return {
    id: 'norm_eps',
    message: `a known upstream mismatch: the tree's RMSNorm ELFs use eps ${fmtEps(e.tree)} (${e.file}:${e.line}) where the checkpoint's config.json says rms_norm_eps ${fmtEps(e.config)}${at}; ${judged}`,
  };
}
