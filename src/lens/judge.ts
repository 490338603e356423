// The lens (DESIGN.md "Lens and bisect"): every boundary inside block 0, NPU side against the HF
// side, judged with the same engine and definitions as the gated ffn_out, over the real rows
// (every boundary file holds only those), in block order. The first boundary under the threshold
// is named with the seed's failure-mode hint. Informational: the seed's four gates stay the gates;
// a boundary well under the threshold while ffn_out passes is a warning (the gate may hide a bug).
import { openRunTensor } from '../rundir/read.ts';
import { compare } from '../metrics/index.ts';
import type { Boundaries, BoundaryUnpaired } from '../rundir/schema.ts';
import type { BadRun, Metrics } from '../metrics/types.ts';
import type { Warning } from '../report/types.ts';
import { hintForStep, type Hint } from '../bisect/hints.ts';
import { formatThreshold } from '../gates/thresholds.ts';
import { fmtCos } from '../report/format.ts';
import { isId } from '../report/escape.ts';

/** Points a boundary's per-position profile keeps (the minimum per bucket of rows beyond it). */
export const PROFILE_POINTS = 128;

/**
 * "Well below" the threshold: a boundary whose distance from a cosine of 1 is more than twice the
 * threshold's (0.98 at head_dim 64, 0.96 at 128, 0.94 at 256). Closer to the threshold is bf16
 * noise territory on a real NPU; this far below, a boundary is broken even when ffn_out passes.
 */
export function wellBelow(threshold: number): number {
  return 1 - 2 * (1 - threshold);
}

/**
 * The clean bar: a tenth of the threshold's distance from 1 (0.999 at head_dim 64, 0.998 at 128,
 * 0.997 at 256). A boundary under it but above the threshold drifts: not a verdict, but when
 * something downstream falls under the threshold, the first boundary that drifts is where the
 * divergence begins (an ignored RMSNorm weight shows at attn_norm long before anything fails).
 */
export function cleanBar(threshold: number): number {
  return 1 - (1 - threshold) / 10;
}

/** Per-position cosine against position, all N rows covered: the minimum over each `bucket` rows. */
export interface Profile {
  bucket: number;
  points: number[];
}

export interface LensRow {
  /** An identifier (the schema refuses any other boundary name). */
  name: string;
  order: number;
  /** The seed's kernel-sequence step (RMSNorm, Q/K/V GEMM, RoPE, ...). */
  step: string | null;
  /** The ELF the NPU side was read from (null: the block's returned dict). */
  launch: string | null;
  producedBy: string | null;
  rows: number;
  cols: number;
  wholeCosine: number;
  perPositionMin: number;
  p5: number;
  median: number;
  maxAbs: number;
  normRatio: number;
  sqnrDb: number;
  nonFinite: number;
  /** min(whole, per-position min) under the threshold (NaN counts as under). */
  below: boolean;
  /** min(whole, per-position min) under the clean bar (cleanBar()). */
  drifts: boolean;
  /** Contiguous runs of rows under the threshold (at most 16). */
  badRuns: BadRun[];
  profile: Profile;
}

export interface LensNamed {
  name: string;
  order: number;
  step: string | null;
  launch: string | null;
  producedBy: string | null;
  wholeCosine: number;
  perPositionMin: number;
  hint: Hint | null;
}

export interface LensReport {
  /** The bar a boundary is judged against: the per-position threshold of the gates (T(head_dim) or --threshold). */
  threshold: number;
  /** Under this a boundary is well below the threshold (wellBelow()). */
  wellBelow: number;
  /** Under this a boundary drifts (cleanBar()). */
  cleanBar: number;
  /** The boundaries came from an emulated NPU (--emulate). */
  emulated: boolean;
  source: string | null;
  table: string | null;
  /** The HF capture version; null when the reference side has no hooks (an emulated reference). */
  reference: string | null;
  rows: LensRow[];
  /** Boundaries only one side has (or with different shapes): notes, not judged. */
  unpaired: BoundaryUnpaired[];
  /** The first boundary under the threshold in block order, or null. */
  firstBelow: LensNamed | null;
  /** The first boundary under the clean bar in block order (where a divergence begins), or null. */
  onset: LensNamed | null;
  /** Set when a boundary is well below the threshold while ffn_out passes the gates (see lensWarning). */
  hiding: LensNamed | null;
}

const lowest = (m: { wholeCosine: number; perPositionMin: number }) => Math.min(m.wholeCosine, m.perPositionMin);

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

function rowOf(e: Boundaries['entries'][number], m: Metrics, threshold: number, clean: number): LensRow {
  const nf = m.nonFinite;
  const low = lowest({ wholeCosine: m.wholeCosine, perPositionMin: m.perPosition.min });
  return {
    name: e.name, order: e.order, step: e.step, launch: e.launch, producedBy: e.produced_by,
    rows: m.realLen, cols: m.cols,
    wholeCosine: m.wholeCosine, perPositionMin: m.perPosition.min, p5: m.perPosition.p5, median: m.perPosition.median,
    maxAbs: m.errors.maxAbs, normRatio: m.errors.normRatio, sqnrDb: m.errors.sqnrDb,
    nonFinite: nf.nan.count + nf.posInf.count + nf.negInf.count,
    below: !(low >= threshold),
    drifts: !(low >= clean),
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

/**
 * Judges every pair probe.json `boundaries` declares. Each file is opened through openRunTensor: a
 * regular file inside the run dir, of the dtype and shape declared (a bad one is an input error
 * naming it, as for the block's own tensors).
 */
export async function judgeLens(runDir: string, b: Boundaries, threshold: number): Promise<LensReport> {
  const rows: LensRow[] = [];
  const entries = [...b.entries.entries()].sort(([, x], [, y]) => x.order - y.order);
  for (const [i, e] of entries) {
    const npu = openRunTensor(runDir, e.npu, `boundaries.entries[${i}].npu`);
    try {
      const ref = openRunTensor(runDir, e.ref, `boundaries.entries[${i}].ref`);
      try {
        rows.push(rowOf(e, await compare(npu, ref, { threshold, worstK: 0 }), threshold, cleanBar(threshold)));
      } finally {
        ref.close();
      }
    } finally {
      npu.close();
    }
  }
  const first = rows.find((r) => r.below);
  const onset = rows.find((r) => r.drifts);
  return {
    threshold, wellBelow: wellBelow(threshold), cleanBar: cleanBar(threshold),
    emulated: b.emulated, source: b.source, table: b.table, reference: b.reference,
    rows, unpaired: b.unpaired, firstBelow: first ? named(first) : null, onset: onset ? named(onset) : null, hiding: null,
  };
}

/**
 * The warning the lens adds when ffn_out passes the gates but a boundary is well below the
 * threshold: the gate may be hiding a bug (the RoPE and RMSNorm-weight bugs under near-uniform
 * attention barely move ffn_out). Sets `lens.hiding`; null when nothing hides.
 */
export function lensWarning(lens: LensReport, ffnOutPasses: boolean): Warning | null {
  if (!ffnOutPasses) return null;
  const r = lens.rows.find((x) => !(lowest(x) >= lens.wellBelow));
  if (!r) return null;
  lens.hiding = named(r);
  const label = (n: LensNamed) => `${isId(n.name) ? n.name : '(unnamed boundary)'}${n.step ? ` (${n.step})` : ''}`;
  // Where the divergence begins, when that is earlier: the hint belongs there.
  const onset = lens.onset && lens.onset.order < r.order ? lens.onset : null;
  const h = (onset ?? lens.hiding).hint;
  return {
    id: 'lens',
    message: `the lens: boundary ${label(lens.hiding)} is well below the threshold (cosine ${fmtCos(r.wholeCosine)}, per-position min ${fmtCos(r.perPositionMin)}; threshold ${formatThreshold(lens.threshold)}) while ffn_out passes the gates: the ffn_out gate may be hiding a bug${onset ? `; the divergence begins at ${label(onset)}` : ''}${h ? `; likely ${h.cause}` : ''}`,
  };
}
