// The state one comparison accumulates, in flat typed arrays so a native kernel (N-API) can
// fill exactly the same memory the TypeScript kernel does; finalize() never knows which ran.
import type { RawFile, RawRows } from '../tensor/types.ts';

/** Slots of Accumulator.sums (float64). Sums run over real rows only. */
export const SUM = {
  /** Whole-tensor cosine numerator and norms (sumB2 also feeds SQNR). */
  ab: 0,
  a2: 1,
  b2: 2,
  /** sum |a-b| (mean_abs and mean_rel_L1 numerator) and max |a-b|. */
  absErr: 3,
  maxAbs: 4,
  /** sum and max of |a-b| / max(|b|, 1e-6). */
  relErr: 5,
  maxRel: 6,
  /** sum |b| (mean_rel_L1 denominator). */
  absRef: 7,
  /** sum (a-b)^2 (SQNR noise). */
  sqErr: 8,
} as const;
const SUM_SLOTS = 9;

/** Slots of Accumulator.nonFinite (float64): count, first row, first col for NaN, +Inf, -Inf. Row -1 = none. */
export const NF = { nan: 0, posInf: 3, negInf: 6 } as const;
const NF_SLOTS = 9;

export interface Accumulator {
  readonly cols: number;
  /** Rows judged (the first realLen rows of both tensors). */
  readonly realLen: number;
  /** Rows scanned for non-finite values (every NPU row). */
  readonly npuRows: number;
  /** Per real row: sum a*b, sum a^2, sum b^2 (float64). */
  readonly rowDot: Float64Array;
  readonly rowA2: Float64Array;
  readonly rowB2: Float64Array;
  readonly sums: Float64Array;
  readonly nonFinite: Float64Array;
  /**
   * Both tensors are 16-bit (bf16 or f16, as stored): the narrow mode (issue 30), where every
   * kernel sums each row in float32, 16 lanes, flushed into float64 every 256 columns (kernel-js.ts
   * narrowRow; native/src/kernel.inc), within the bound test/metrics-narrow.test.ts proves of the
   * float64 sums. Set by compare() from the sources' dtypes, never by the data.
   */
  readonly narrow: boolean;
  /** NPU rows scanned so far. */
  rowsScanned: number;
}

export function createAccumulator(cols: number, realLen: number, npuRows: number, narrow = false): Accumulator {
  const nonFinite = new Float64Array(NF_SLOTS);
  for (const base of [NF.nan, NF.posInf, NF.negInf]) {
    nonFinite[base + 1] = -1;
    nonFinite[base + 2] = -1;
  }
  return {
    cols,
    realLen,
    npuRows,
    rowDot: new Float64Array(realLen),
    rowA2: new Float64Array(realLen),
    rowB2: new Float64Array(realLen),
    sums: new Float64Array(SUM_SLOTS),
    nonFinite,
    narrow,
    rowsScanned: 0,
  };
}

/**
 * The hot loop, the one piece a native engine replaces. Called with consecutive row blocks
 * in order, starting at row 0.
 */
export interface Kernel {
  readonly name: 'js' | 'native';
  /**
   * Optional fast path over undecoded payload bytes (see TensorSource.readRawRows): the same
   * contract as scanBlock, asynchronous so the scan can run off the event loop. compare() uses
   * it when present, and then reads the next block while this one is being scanned.
   */
  scanRawBlock?(acc: Accumulator, npu: RawRows, ref: RawRows, start: number, count: number): Promise<void>;
  /**
   * Optional fastest path: the kernel reads both payloads itself from the open files (see
   * TensorSource.rawFile) and scans every row, off the event loop. Rejects if a read fails.
   */
  scanFiles?(acc: Accumulator, npu: RawFile, ref: RawFile): Promise<void>;
  /** Bytes per tensor per block (as float32) the raw path prefers. */
  readonly rawBlockBytes?: number;
  /**
   * Accumulate NPU rows [start, start + count). `npu` holds count * cols floats. `ref` holds
   * the reference rows for the real part of the block, min(count, realLen - start) rows
   * (empty when the block is all padding). Rows >= realLen are only scanned for NaN/Inf.
   */
  scanBlock(acc: Accumulator, npu: Float32Array, ref: Float32Array, start: number, count: number): void;
  /**
   * Optional: the reference check (src/gates/reference.ts) over one block of `count` rows of raw
   * little-endian bits, in native code; fills `out` as the addon's refRows says (kind, row, col,
   * what, zeroRows, firstZero). Absent: the TypeScript loop runs (the same verdict).
   */
  refRows?(bytes: Uint8Array, dtype: RawRows['dtype'], cols: number, count: number, finiteOnly: boolean, out: Float64Array): void;
}
