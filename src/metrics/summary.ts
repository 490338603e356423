// The one place a Metrics record is cut down to a table row, and the one non-finite total.
import type { Comparison, Metrics, NonFinite } from './types.ts';

/** NaN, +Inf and -Inf counted together. */
export function nonFiniteTotal(nf: NonFinite): number {
  return nf.nan.count + nf.posInf.count + nf.negInf.count;
}

/** min(whole cosine, per-position min): the number a boundary or a step is judged by (NaN stays NaN). */
export function lowestCosine(c: { wholeCosine: number; perPositionMin: number }): number {
  return Math.min(c.wholeCosine, c.perPositionMin);
}

export function comparisonOf(m: Metrics): Comparison {
  const pp = m.perPosition;
  const e = m.errors;
  return {
    rows: m.realLen, cols: m.cols,
    wholeCosine: m.wholeCosine, perPositionMin: pp.min, p5: pp.p5, median: pp.median,
    maxAbs: e.maxAbs, maxRel: e.maxRel, sqnrDb: e.sqnrDb, normRatio: e.normRatio,
    nonFinite: nonFiniteTotal(m.nonFinite),
  };
}
