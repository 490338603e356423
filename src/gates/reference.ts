// A broken reference is not a verdict on the NPU (issue 9, point 6): a non-finite value in the
// reference, or a reference row on a real token that is all zero or constant, means the HF side
// of the run failed, so the run's outcome is an error naming the reference, and no gate is judged.
import type { DType, TensorSource } from '../tensor/types.ts';
import { decodeInto, ITEMSIZE } from '../tensor/dtype.ts';
import { selectEngine, type Kernel } from '../metrics/index.ts';

/** Bytes of rows read per block while checking (the reference is read once, streamed, into one buffer). */
const BLOCK_BYTES = 1 << 20;

/** Where the exponent, the mantissa and the sign sit in each dtype's bits (IEEE layouts). */
const BITS: Record<DType, { exp: number; mant: number; sign: number }> = {
  f32: { exp: 0x7f800000, mant: 0x007fffff, sign: 0x80000000 | 0 },
  f16: { exp: 0x7c00, mant: 0x03ff, sign: 0x8000 },
  bf16: { exp: 0x7f80, mant: 0x007f, sign: 0x8000 },
};

/** A check stops at the first fault, in row order; the all-zero rows are counted to the end. */
interface Scan {
  zeroRows: number;
  firstZero: number;
}

/**
 * What is wrong with the reference's first `realLen` rows, in words; null when nothing is.
 * `finiteOnly`: only a NaN or Inf counts (a lens boundary, where a zero or constant row may be real).
 * Judged on the undecoded bits when the source has them (no float32 copy of the payload: this
 * pass runs on every judge, before the compare), by the native addon's refRows when the kernel has
 * it (issue 30: the JIT's warm-up alone cost ~25 ms a process), else by the loop below; on
 * readRows' float32 otherwise; the same words every way.
 */
export function referenceFault(ref: TensorSource, realLen: number, finiteOnly = false, kernel: Pick<Kernel, 'refRows'> = selectEngine()): string | null {
  const rows = Math.min(realLen, ref.rows);
  const scan: Scan = { zeroRows: 0, firstZero: -1 };
  const fault = faultInBits(ref, rows, finiteOnly, scan, kernel) ?? faultInFloats(ref, rows, finiteOnly, scan);
  if (fault) return fault;
  if (scan.zeroRows === rows) return `every one of the reference's ${rows} real rows is all zero`;
  if (scan.zeroRows > 0) return `${scan.zeroRows} of the reference's real rows ${scan.zeroRows === 1 ? 'is' : 'are'} all zero (first: row ${scan.firstZero})`;
  return null;
}

function nonFiniteText(row: number, c: number, what: string): string {
  return `row ${row}, column ${c} of the reference is ${what} (a real token)`;
}

function constantText(row: number, cols: number, first: number): string {
  return `row ${row} of the reference is constant (every one of its ${cols} values is ${first}) on a real token`;
}

/**
 * The scan on the raw little-endian bits, one reused buffer. Returns a fault, '' when the rows
 * are clean (the zero rows counted in `scan`), or null when the source has no raw rows.
 * Equality of floats is equality of bits here, except +0 and -0 (equal as floats): both are zero.
 */
function faultInBits(ref: TensorSource, rows: number, finiteOnly: boolean, scan: Scan, kernel: Pick<Kernel, 'refRows'>): string | null {
  if (!ref.readRawRows) return null;
  const { cols, dtype } = ref;
  const item = ITEMSIZE[dtype];
  const per = Math.max(1, Math.floor(BLOCK_BYTES / (cols * item)));
  const buf = new Uint8Array(Math.min(per, rows) * cols * item);
  const { exp, mant, sign } = BITS[dtype];
  const magnitude = ~sign;
  const out = new Float64Array(6);
  for (let start = 0; start < rows; start += per) {
    const count = Math.min(per, rows - start);
    const raw = ref.readRawRows(start, count, buf);
    if (!raw) {
      // A layout without raw rows says so on the first block; the float scan then starts over.
      scan.zeroRows = 0;
      scan.firstZero = -1;
      return null;
    }
    let bytes = raw.bytes;
    // Typed views need aligned bytes; a source that returned its own unaligned copy is copied once more.
    if (bytes.byteOffset % item !== 0) {
      buf.set(bytes);
      bytes = buf.subarray(0, bytes.length);
    }
    if (kernel.refRows) {
      // The same loop in the native addon (its twin below): one block, its verdict in `out`.
      kernel.refRows(bytes, dtype, cols, count, finiteOnly, out);
      if (out[4] > 0) {
        if (scan.firstZero < 0) scan.firstZero = start + out[5];
        scan.zeroRows += out[4];
      }
      if (out[0] === 1) return nonFiniteText(start + out[1], out[2], ['NaN', '+Inf', '-Inf'][out[3]]);
      if (out[0] === 2) {
        const o = out[1] * cols;
        const one = new Float32Array(1);
        decodeInto(bytes.subarray(o * item, (o + 1) * item), dtype, 'le', one, 0, 1);
        return constantText(start + out[1], cols, one[0]);
      }
      continue;
    }
    const v = item === 4
      ? new Int32Array(bytes.buffer, bytes.byteOffset, count * cols)
      : new Uint16Array(bytes.buffer, bytes.byteOffset, count * cols);
    for (let r = 0; r < count; r++) {
      const o = r * cols;
      const row = start + r;
      const first = v[o];
      const firstZero = (first & magnitude) === 0;
      let constant = true;
      let zero = true;
      let c = 0;
      for (; c < cols && (constant || zero); c++) {
        const x = v[o + c];
        if ((x & exp) === exp) break;
        const isZero = (x & magnitude) === 0;
        if (x !== first && !(isZero && firstZero)) constant = false;
        if (!isZero) zero = false;
      }
      // The row is neither zero nor constant (or holds a non-finite): only the finite check is left.
      for (; c < cols; c++) {
        const x = v[o + c];
        if ((x & exp) === exp) return nonFiniteText(row, c, (x & mant) !== 0 ? 'NaN' : (x & sign) !== 0 ? '-Inf' : '+Inf');
      }
      if (finiteOnly) continue;
      if (zero) {
        scan.zeroRows++;
        if (scan.firstZero < 0) scan.firstZero = row;
      } else if (constant && cols > 1) {
        const one = new Float32Array(1);
        decodeInto(bytes.subarray(o * item, (o + 1) * item), dtype, 'le', one, 0, 1);
        return constantText(row, cols, one[0]);
      }
    }
  }
  return '';
}

/** The same scan on readRows' float32 (big-endian or column-major payloads, in-memory sources). */
function faultInFloats(ref: TensorSource, rows: number, finiteOnly: boolean, scan: Scan): string {
  const cols = ref.cols;
  const per = Math.max(1, Math.floor(BLOCK_BYTES / (cols * 4)));
  for (let start = 0; start < rows; start += per) {
    const count = Math.min(per, rows - start);
    const block = ref.readRows(start, count);
    for (let r = 0; r < count; r++) {
      const o = r * cols;
      const row = start + r;
      const first = block[o];
      let constant = true;
      let zero = true;
      for (let c = 0; c < cols; c++) {
        const v = block[o + c];
        if (!(v - v === 0)) return nonFiniteText(row, c, v !== v ? 'NaN' : v > 0 ? '+Inf' : '-Inf');
        if (v !== first) constant = false;
        if (v !== 0) zero = false;
      }
      if (finiteOnly) continue;
      if (zero) {
        scan.zeroRows++;
        if (scan.firstZero < 0) scan.firstZero = row;
      } else if (constant && cols > 1) {
        return constantText(row, cols, first);
      }
    }
  }
  return '';
}

/** A reference value this many times the largest |value| of its row in FP32 away from its FP32
 * ground truth is no bf16 rounding: bf16 moves a value by a fraction of that row's range, never by
 * more than the whole range. */
const REF_FP32_FACTOR = 8;

/**
 * The reference checked against the FP32 ground truth of the same output (HF layer 0 run in float32
 * on the same weights and tokens, when the probe measured it), over the first `realLen` rows: the
 * first value off by more than REF_FP32_FACTOR times its FP32 row's largest |value|, in words; null
 * when none is (or a row of the truth is all zero: nothing to scale by).
 */
export function referenceVsFp32(ref: TensorSource, fp32: TensorSource, realLen: number): string | null {
  const rows = Math.min(realLen, ref.rows, fp32.rows);
  if (ref.cols !== fp32.cols) return null;
  const per = Math.max(1, Math.floor(BLOCK_BYTES / (ref.cols * 4)));
  for (let start = 0; start < rows; start += per) {
    const n = Math.min(per, rows - start);
    const a = ref.readRows(start, n);
    const t = fp32.readRows(start, n);
    for (let r = 0; r < n; r++) {
      const o = r * ref.cols;
      let top = 0;
      for (let c = 0; c < ref.cols; c++) top = Math.max(top, Math.abs(t[o + c]));
      if (!(top > 0)) continue;
      for (let c = 0; c < ref.cols; c++) {
        const off = Math.abs(a[o + c] - t[o + c]);
        if (off > REF_FP32_FACTOR * top) {
          const g = (v: number) => Number(v.toPrecision(6));
          return `row ${start + r}, column ${c} of the reference is ${g(a[o + c])} where the FP32 ground truth is ${g(t[o + c])} (${g(off / top)}x the largest |value| of that row in FP32; bf16 rounding stays far under 1x)`;
        }
      }
    }
  }
  return null;
}
