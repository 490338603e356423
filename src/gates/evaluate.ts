// Turns metrics into the four gate results and the informational warnings (DESIGN.md "Gates").
import type { Metrics } from '../metrics/types.ts';
import { nonFiniteTotal } from '../metrics/summary.ts';
import type { GateResult, Outcome, Thresholds, Warning } from '../record/report.ts';
import { fmtRatio, fmtSci, fmtRun } from '../text/format.ts';
import { formatThreshold, MAX_ABS_REGRESSION, NORM_RATIO_WARN } from '../seed/thresholds.ts';

export interface Documented {
  /** false: this run was told not to write documents (G4 is skipped, not failed). */
  attempted: boolean;
  ok: boolean;
  path: string;
  detail: string;
  /** The documents were written but could not be recorded (a refused docs PR): why. G4 is then a
   * skip, never a silent pass, and the verdict warns. */
  refused?: string;
  /** The documents could not be written here (a refused marker, a read-only file, a full disk): why,
   * and that failure's exit code. G4 is then a skip, the verdict stands and warns, and the run exits
   * with this code unless a gate failed. */
  failed?: { message: string; exitCode: 2 | 3 };
}

function gate(id: GateResult['id'], name: string, ok: boolean, value: GateResult['value'], bar: string, detail: string): GateResult {
  return { id, name, status: ok ? 'pass' : 'fail', passed: ok, value, bar, detail };
}

/** G1's rule: a whole-tensor cosine at or above the bar. NaN compares false, so a NaN cosine fails,
 * as numpy's comparison would. The one place G1 is decided (the gates, a bisect step, the hints). */
export function g1Holds(wholeCosine: number, th: Pick<Thresholds, 'whole'>): boolean {
  return wholeCosine >= th.whole;
}

/** G2's rule: the per-position minimum at or above T(head_dim) (NaN fails). */
export function g2Holds(perPositionMin: number, th: Pick<Thresholds, 'perPosition'>): boolean {
  return perPositionMin >= th.perPosition;
}

/** G3's rule: no NaN or Inf. */
export function g3Holds(nonFinite: number): boolean {
  return nonFinite === 0;
}

/** G1-G3 hold for a comparison's numbers (a bisect step: does this swap bring the block above threshold?). */
export function passesGates(c: { wholeCosine: number; perPositionMin: number; nonFinite: number }, th: Pick<Thresholds, 'whole' | 'perPosition'>): boolean {
  return g1Holds(c.wholeCosine, th) && g2Holds(c.perPositionMin, th) && g3Holds(c.nonFinite);
}

export function metricGates(m: Metrics, th: Thresholds): GateResult[] {
  const pp = m.perPosition;
  const g1 = gate('G1', 'whole-tensor cosine', g1Holds(m.wholeCosine, th), m.wholeCosine, `>= ${th.whole}`,
    `over ${m.realLen} real rows x ${m.cols}`);
  const runs = pp.badRuns.map((r) => fmtRun(r.start, r.end)).join(', ');
  const g2detail = Number.isNaN(pp.min)
    ? 'per-position cosine is NaN for at least one real row'
    : pp.badRuns.length > 0
      ? `rows under ${formatThreshold(th.perPosition)}: ${runs}`
      : `all ${m.realLen} real rows >= ${formatThreshold(th.perPosition)}`;
  const g2 = gate('G2', `per-position min cosine (head_dim ${th.headDim})`, g2Holds(pp.min, th), pp.min,
    `>= ${formatThreshold(th.perPosition)}${th.overridden ? ' (override)' : ''}`, g2detail);
  const nf = m.nonFinite;
  const bad = nonFiniteTotal(nf);
  const parts: string[] = [];
  for (const [label, c] of [['NaN', nf.nan], ['+Inf', nf.posInf], ['-Inf', nf.negInf]] as const) {
    if (c.count > 0) {
      const where = c.first ? ` (first at row ${c.first.row}, col ${c.first.col}${c.first.row >= m.realLen ? ', a padded row' : ''})` : '';
      parts.push(`${c.count} ${label}${where}`);
    }
  }
  const g3 = gate('G3', 'no NaN/Inf in NPU output', g3Holds(bad), bad, '= 0',
    bad === 0 ? `all ${nf.rowsScanned} rows finite, padded rows included` : parts.join('; '));
  return [g1, g2, g3];
}

export function documentationGate(d: Documented): GateResult {
  if (d.failed) {
    return { id: 'G4', name: 'result documented', status: 'skip', passed: true, value: null, bar: 'phase2_block.md written', detail: `not written: ${d.failed.message}` };
  }
  if (d.refused !== undefined) {
    return { id: 'G4', name: 'result documented', status: 'skip', passed: true, value: null, bar: 'phase2_block.md written', detail: `not recorded: ${d.refused}` };
  }
  if (!d.attempted) {
    return { id: 'G4', name: 'result documented', status: 'skip', passed: true, value: null, bar: 'phase2_block.md written', detail: d.detail };
  }
  return gate('G4', 'result documented', d.ok, d.path, 'phase2_block.md written', d.detail);
}

export function outcomeOf(gates: GateResult[]): Outcome {
  return gates.some((g) => g.status === 'fail') ? 'fail' : 'pass';
}

export interface Baseline { maxAbs: number; commit: string }

export function warningsFor(m: Metrics, baseline: Baseline | null): Warning[] {
  const w: Warning[] = [];
  const r = m.errors.normRatio;
  if (Number.isFinite(r) && Math.abs(r - 1) > NORM_RATIO_WARN) {
    const pct = ((r - 1) * 100).toFixed(1);
    w.push({ id: 'norm_ratio', message: `norm ratio |npu|/|ref| = ${fmtRatio(r)} (${r > 1 ? '+' : ''}${pct}%): the NPU output is scaled; cosine cannot see scale` });
  }
  if (m.perPosition.zeroRows.length > 0) {
    const rows = m.perPosition.zeroRows;
    w.push({ id: 'zero_rows', message: `${rows.length} real row(s) are all zero in one tensor (cosine 0 by convention): ${rows.slice(0, 10).join(', ')}${rows.length > 10 ? ', ...' : ''}` });
  }
  if (baseline && Number.isFinite(m.errors.maxAbs) && m.errors.maxAbs > MAX_ABS_REGRESSION * baseline.maxAbs) {
    w.push({ id: 'max_abs_regression', message: `max_abs ${fmtSci(m.errors.maxAbs)} exceeds ${MAX_ABS_REGRESSION}x the baseline ${fmtSci(baseline.maxAbs)} recorded at ${baseline.commit}` });
  }
  return w;
}

