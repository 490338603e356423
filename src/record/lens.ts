// The lens's part of the record: every boundary inside block 0, NPU side against the HF side.
import type { BadRun, Comparison } from '../metrics/types.ts';
import type { BoundaryUnpaired } from '../rundir/schema.ts';
import type { Hint } from '../seed/hints.ts';

/** Per-position cosine against position, all N rows covered: the minimum over each `bucket` rows. */
export interface Profile {
  bucket: number;
  points: number[];
  /** Per bucket, the row norm ratio |npu_i|/|ref_i| farthest from 1 (NaN when no row of it has a
   * reference norm), one per point: the heatmap's hover. Absent in older records. */
  norms?: number[];
}

/** The error budget of one boundary against HF layer 0 in FP32 (ERROR_MEASURE). */
export interface ErrorBudget {
  /** Relative L2 of the NPU side against FP32. */
  npu: number;
  /** Relative L2 of the HF bf16 side against FP32 (what bf16 itself costs). */
  bf16: number;
  /** npu / bf16; NaN when bf16 is exact (both sides exact: nothing to budget), Infinity when only it is. */
  ratio: number;
  /** Relative L2 of the hardware twins' pass against FP32 (the expected error; absent in older records
   * or where no twin wrote the boundary). */
  expected?: number;
  /** expected / bf16: what the hardware's number format costs against bf16 (absent with `expected`). */
  expectedRatio?: number;
  /** npu / expected: about 1 for a right integration whatever the format (absent with `expected`). */
  vsExpected?: number;
  /** vsExpected above EXPECTED_BUDGET_WARN when the twins' error is known, else ratio above ERROR_BUDGET_WARN. */
  over: boolean;
}

export interface LensRow extends Comparison {
  /** An identifier (the schema refuses any other boundary name). */
  name: string;
  order: number;
  /** The seed's kernel-sequence step (RMSNorm, Q/K/V GEMM, RoPE, ...). */
  step: string | null;
  /** The ELF the NPU side was read from (null: the block's returned dict). */
  launch: string | null;
  producedBy: string | null;
  /** min(whole, per-position min) under the threshold (NaN counts as under). */
  below: boolean;
  /** min(whole, per-position min) under the clean bar (cleanBar()). */
  drifts: boolean;
  /** The norm ratio |npu|/|ref| is off 1 by more than LENS_SCALE_WARN (cosine cannot see it). */
  scaleOff: boolean;
  /** Contiguous runs of rows under the threshold (at most 16). */
  badRuns: BadRun[];
  profile: Profile;
  /** Set when the boundary could not be judged (its reference holds a NaN or Inf): why. The row's
   * numbers are then NaN, and it is never under, the onset, or a hint blaming the NPU. */
  error?: string;
  /** Against HF layer 0 in FP32, when the run measured it (absent or null otherwise). */
  budget?: ErrorBudget | null;
  /** |twins|/|ref|: the hardware twins' own norm ratio at this boundary (absent without their pass). */
  twinNormRatio?: number;
  /** normRatio / twinNormRatio, when the lens accounts for a known upstream mismatch (the tree's
   * RMSNorm eps, LensReport.normEps): the scale the NPU loses beyond what that mismatch explains. */
  accountedRatio?: number;
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
  /** Set when a boundary is well below the threshold while ffn_out passes the gates (lensHiding()). */
  hiding: LensNamed | null;
  /** The error budget's bar and measure, when any row has a budget (absent or null otherwise);
   * `expected`: the bar on error(NPU)/error(hw twins) and how the twins computed, when they ran. */
  budget?: { bar: number; measure: string; expected?: { bar: number; precision: string; what: string } | null } | null;
  /** A known upstream mismatch, named once: the tree's RMSNorm eps against the checkpoint's, with
   * the file and line of the tree's constant; the scale and error budget are judged with it
   * accounted for. Null when the eps agree or are unknown; absent in older records. */
  normEps?: NormEpsFinding | null;
  /** The first boundary (block order) whose norm ratio is off by more than LENS_SCALE_WARN, with its
   * likely cause; null when every boundary keeps its scale. Absent in older records. */
  scale?: LensScale | null;
  /** Every boundary where a scale drift starts on its own (block order; the first is `scale`): a later
   * one is off by more than LENS_SCALE_WARN from what the boundary before it carried. Absent in older records. */
  scales?: LensScale[];
  /** Every boundary where the error budget goes over its bar on its own (block order): the boundary
   * before it was within the bar, or this one's ratio is over bar x the one before. Absent in older records. */
  budgetOnsets?: string[];
}

/** A boundary whose scale is off: where a scale drift starts. */
export interface LensScale extends LensNamed {
  normRatio: number;
  /** The bar it is off by more than (LENS_SCALE_WARN). */
  bar: number;
  /** The likely cause for this kind of boundary (RMSNorm eps or weight, a missing scale factor, ...). */
  cause: string;
  /** Set when a known upstream mismatch is accounted for (LensReport.normEps): `normRatio` above is then
   * |npu|/|twins|, and these are |npu|/|ref| and |twins|/|ref|. */
  accounted?: { normRatio: number; twinNormRatio: number };
}

/** The tree's RMSNorm eps against the checkpoint's (probe.json boundaries.norm_eps), as the lens found it. */
export interface NormEpsFinding {
  tree: number;
  config: number;
  /** The tree's constant, relative to the air root, and its line. */
  file: string;
  line: number;
  /** The first RMSNorm boundary it moves, with the NPU's norm ratio there and the hardware twins'
   * (at the tree's eps); null when no such boundary was judged. */
  at: { name: string; normRatio: number; twinNormRatio: number | null } | null;
}
