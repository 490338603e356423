// The numbers of DESIGN.md "Numbers". Both engines (pure TypeScript and native) return this shape.

interface FirstPosition { row: number; col: number }
interface NonFiniteCount { count: number; first: FirstPosition | null }

export interface NonFinite {
  nan: NonFiniteCount;
  posInf: NonFiniteCount;
  negInf: NonFiniteCount;
  /** Rows scanned: every NPU row, padded rows included (G3). */
  rowsScanned: number;
}

export interface RowScore { row: number; cosine: number }
/** Inclusive [start, end] run of consecutive real rows under the threshold. */
export interface BadRun { start: number; end: number; length: number }

interface PerPosition {
  /** Cosine per real row, float64; 0 where either row norm is 0 (mlir-air's convention); NaN when a row has NaN. */
  cosines: number[];
  min: number;
  p5: number;
  median: number;
  mean: number;
  worst: RowScore[];
  zeroRows: number[];
  badRuns: BadRun[];
}

interface ErrorMetrics {
  maxAbs: number;
  meanAbs: number;
  maxRel: number;
  meanRel: number;
  meanRelL1: number;
  sqnrDb: number;
  /** |a| / |b| over the real rows. */
  normRatio: number;
  /** Per real row |a_i| / |b_i| (NaN where |b_i| is 0). */
  rowNormRatios: number[];
}

export interface Metrics {
  engine: 'js' | 'native';
  realLen: number;
  npuRows: number;
  cols: number;
  wholeCosine: number;
  perPosition: PerPosition;
  errors: ErrorMetrics;
  nonFinite: NonFinite;
}

export interface CompareOptions {
  /** Rows of the reference that are real tokens; defaults to the reference's row count. */
  realLen?: number;
  /** Per-position threshold used to find bad runs. */
  threshold: number;
  /** How many worst rows to keep. */
  worstK?: number;
}

/**
 * One comparison summarized: the numbers every table row shows (a layer, a lens boundary, a bisect
 * step, a launch's buffer). Built by comparisonOf() (metrics/summary.ts) and nowhere else.
 */
export interface Comparison {
  /** Real rows compared. */
  rows: number;
  cols: number;
  wholeCosine: number;
  perPositionMin: number;
  p5: number;
  median: number;
  maxAbs: number;
  maxRel: number;
  sqnrDb: number;
  normRatio: number;
  /** NaN, +Inf and -Inf together (nonFiniteTotal()). */
  nonFinite: number;
}
