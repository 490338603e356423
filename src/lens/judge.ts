// The lens (DESIGN.md "Lens and bisect"): every boundary inside block 0, NPU side against the HF
// side, judged with the same engine and definitions as the gated ffn_out, over the real rows
// (every boundary file holds only those), in block order. The first boundary under the threshold
// is named with the seed's failure-mode hint. Informational: the seed's four gates stay the gates;
// a boundary well under the threshold while ffn_out passes is a warning (the gate may hide a bug).
import { openRunTensor } from '../rundir/read.ts';
import { compare, comparisonOf, lowestCosine } from '../metrics/index.ts';
import type { Boundaries } from '../rundir/schema.ts';
import type { Metrics } from '../metrics/types.ts';
import type { Warning } from '../record/report.ts';
import type { LensNamed, LensReport, LensRow, Profile } from '../record/lens.ts';
import { hintForStep } from '../seed/hints.ts';
import { cleanBar, formatThreshold, wellBelow } from '../seed/thresholds.ts';
import { fmtCos } from '../text/format.ts';
import { isId } from '../text/escape.ts';
import { referenceFault } from '../gates/reference.ts';

/** Points a boundary's per-position profile keeps (the minimum per bucket of rows beyond it). */
export const PROFILE_POINTS = 128;

/** Per-position cosines bucketed to at most `points` values (min per bucket, NaN kept). */
export function profileOf(cosines: readonly number[], points = PROFILE_POINTS): Profile {
  const bucket = Math.max(1, Math.ceil(cosines.length / points));
  const out: number[] = [];
  for (let i = 0; i < cosines.length; i += bucket) {
    let lo = Infinity;
    for (let j = i; j < Math.min(cosines.length, i + bucket); j++) lo = Number.isNaN(cosines[j]) || Number.isNaN(lo) ? NaN : Math.min(lo, cosines[j]);
    out.push(lo);
  }
  return { bucket, points: out };
}

function rowOf(e: Boundaries['entries'][number], m: Metrics, threshold: number): LensRow {
  const c = comparisonOf(m);
  const low = lowestCosine(c);
  return {
    name: e.name, order: e.order, step: e.step, launch: e.launch, producedBy: e.produced_by,
    ...c,
    below: !(low >= threshold),
    drifts: !(low >= cleanBar(threshold)),
    badRuns: m.perPosition.badRuns.slice(0, 16),
    profile: profileOf(m.perPosition.cosines),
  };
}

function named(r: LensRow): LensNamed {
  return {
    name: r.name, order: r.order, step: r.step, launch: r.launch, producedBy: r.producedBy,
    wholeCosine: r.wholeCosine, perPositionMin: r.perPositionMin, hint: hintForStep(r.step, r.name, r.producedBy ?? r.launch ?? ''),
  };
}

/** The row of a boundary whose reference is broken: an error, not a comparison. */
function errorRow(e: Boundaries['entries'][number], rows: number, cols: number, error: string): LensRow {
  return {
    name: e.name, order: e.order, step: e.step, launch: e.launch, producedBy: e.produced_by,
    rows, cols, wholeCosine: NaN, perPositionMin: NaN, p5: NaN, median: NaN, maxAbs: NaN, maxRel: NaN, sqnrDb: NaN, normRatio: NaN, nonFinite: 0,
    below: false, drifts: false, badRuns: [], profile: { bucket: 1, points: [] }, error,
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
        else rows.push(rowOf(e, await compare(npu, ref, { threshold, worstK: 0 }), threshold));
      } finally {
        ref.close();
      }
    } finally {
      npu.close();
    }
  }
  return rows;
}

/**
 * The lens from its compared rows. `ffnOutPasses`: the gated ffn_out passes G1-G3; then a boundary
 * well below the threshold is `hiding` (the gate may be hiding a bug: the RoPE and RMSNorm-weight
 * bugs under near-uniform attention barely move ffn_out).
 */
export function lensOf(b: Boundaries, rows: LensRow[], threshold: number, ffnOutPasses: boolean): LensReport {
  const first = rows.find((r) => r.below);
  const onset = rows.find((r) => r.drifts);
  return {
    threshold, wellBelow: wellBelow(threshold), cleanBar: cleanBar(threshold),
    emulated: b.emulated, source: b.source, table: b.table, reference: b.reference,
    rows, unpaired: b.unpaired,
    firstBelow: first ? named(first) : null, onset: onset ? named(onset) : null, hiding: hidingOf(rows, threshold, ffnOutPasses),
  };
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
