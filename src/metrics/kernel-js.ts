// The pure-TypeScript kernel: float64 arithmetic on float32 inputs; for two 16-bit tensors, the
// narrow mode's float32 sums (narrowRow below).
//
// Lane structure (shared with native/src/kernel.inc so both engines give bit-identical numbers):
// every per-row sum is kept in 4 lanes, lane k taking the columns c with c % 4 == k in column
// order; a row's total is (l0 + l1) + (l2 + l3). Whole-tensor sums add the row totals in row
// order, so the result does not depend on the block size either. Maxima are NaN-sticky
// (np.max), which makes them independent of order. (The native AVX-512 loop scans two rows per
// vector, each row in its own 4 lanes: the contract is per row, whatever the vector width.)
import { NF, SUM, type Accumulator, type Kernel } from './accumulator.ts';

/** mlir-air's comparators compute max(|ref|, 1e-6) in float32, so the floor is float32(1e-6). */
export const REL_FLOOR = Math.fround(1e-6);

function noteNonFinite(nf: Float64Array, base: number, row: number, col: number): void {
  if (nf[base] === 0) {
    nf[base + 1] = row;
    nf[base + 2] = col;
  }
  nf[base]++;
}

/** Record every NaN / +Inf / -Inf among `cols` NPU values at npu[o...], in column order. */
function noteRow(nf: Float64Array, npu: Float32Array, o: number, cols: number, row: number): void {
  for (let c = 0; c < cols; c++) {
    const a = npu[o + c];
    // NaN/Inf: one comparison in the common finite case.
    if (!(a - a === 0)) noteNonFinite(nf, a !== a ? NF.nan : a > 0 ? NF.posInf : NF.negInf, row, c);
  }
}

/**
 * The narrow mode's row (Accumulator.narrow; native/src/kernel.inc does the same operations in the
 * same order): every value is a bf16 or f16, so a*b, a*a and b*b are exact in float32. 16 lanes
 * (lane k: the columns c with c % 16 == k, in column order) sum in float32 (Math.fround after
 * every operation: each is then the float32 operation, correctly rounded), each lane flushed into
 * its own float64 every 256 columns, the 16 float64 lanes combined as a balanced tree. Columns past
 * the row's end count as zeros (exactly +0 everywhere). Fills out[0..6] with the row's sums (dot,
 * a2, b2, absErr, absRef, sqErr, relErr) and out[7], out[8] with its maxima |a-b| and rel (NaN
 * dropped, as maxps does: the caller falls back to float64 for a row whose sums are not finite).
 */
const NARROW_LANES = 16;
/** 2^-96: under it, sum a^2 or sum b^2 sends the row the float64 way (see narrowStands). */
const NARROW_TINY = 2 ** -96;
const NARROW_BLOCK = 256;
const part = new Float64Array(7 * NARROW_LANES);
const lane = new Float64Array(7 * NARROW_LANES);
export function narrowRow(npu: Float32Array, ref: Float32Array, o: number, cols: number, out: Float64Array): void {
  const f = Math.fround;
  const floor = REL_FLOOR;
  lane.fill(0);
  let mA = 0;
  let mR = 0;
  for (let c0 = 0; c0 < cols; c0 += NARROW_BLOCK) {
    part.fill(0);
    const end = Math.min(cols, c0 + NARROW_BLOCK);
    for (let c = c0; c < end; c += NARROW_LANES) {
      for (let k = 0; k < NARROW_LANES; k++) {
        const inRow = c + k < end;
        const a = inRow ? npu[o + c + k] : 0;
        const b = inRow ? ref[o + c + k] : 0;
        const d = f(a - b);
        const ad = Math.abs(d);
        const ab = Math.abs(b);
        const rel = f(ad / (ab > floor ? ab : floor));
        // a*b is exact in float32 for 16-bit values (the fround is a no-op) unless it falls below
        // float32's normal range or overflows it: then it is rounded first, as the native float32 multiply.
        part[k] = f(part[k] + f(a * b));
        part[16 + k] = f(part[16 + k] + f(a * a));
        part[32 + k] = f(part[32 + k] + f(b * b));
        part[48 + k] = f(part[48 + k] + ad);
        part[64 + k] = f(part[64 + k] + ab);
        part[80 + k] = f(part[80 + k] + f(d * d));
        part[96 + k] = f(part[96 + k] + rel);
        if (ad > mA) mA = ad;
        if (rel > mR) mR = rel;
      }
    }
    for (let i = 0; i < 7 * NARROW_LANES; i++) lane[i] += part[i];
  }
  for (let s = 0; s < 7; s++) {
    const l = s * NARROW_LANES;
    out[s] = (((lane[l] + lane[l + 1]) + (lane[l + 2] + lane[l + 3])) + ((lane[l + 4] + lane[l + 5]) + (lane[l + 6] + lane[l + 7]))) +
      (((lane[l + 8] + lane[l + 9]) + (lane[l + 10] + lane[l + 11])) + ((lane[l + 12] + lane[l + 13]) + (lane[l + 14] + lane[l + 15])));
  }
  out[7] = mA;
  out[8] = mR;
}

const narrowOut = new Float64Array(9);

export const jsKernel: Kernel = {
  name: 'js',
  scanBlock(acc: Accumulator, npu: Float32Array, ref: Float32Array, start: number, count: number): void {
    const { cols, realLen, rowDot, rowA2, rowB2, sums, nonFinite } = acc;
    const real = Math.max(0, Math.min(count, realLen - start));
    if (ref.length < real * cols) throw new RangeError(`scanBlock: reference block has ${ref.length / cols} rows, needs ${real}`);
    if (npu.length < count * cols) throw new RangeError(`scanBlock: NPU block has ${npu.length / cols} rows, needs ${count}`);
    let sAB = sums[SUM.ab];
    let sA2 = sums[SUM.a2];
    let sB2 = sums[SUM.b2];
    let sAbs = sums[SUM.absErr];
    let sRel = sums[SUM.relErr];
    let sAbsRef = sums[SUM.absRef];
    let sSq = sums[SUM.sqErr];
    let maxAbs = sums[SUM.maxAbs];
    let maxRel = sums[SUM.maxRel];
    const n4 = cols - (cols & 3);
    // The last, partial 4-column step of a row reads a zero-padded copy: a 0 pair adds exactly
    // +0 to every lane and cannot raise a maximum, so the numbers equal a scalar tail's.
    const tailA = new Float32Array(4);
    const tailB = new Float32Array(4);
    for (let r = 0; r < count; r++) {
      const row = start + r;
      const o = r * cols;
      if (r < real && acc.narrow) {
        narrowRow(npu, ref, o, cols, narrowOut);
        const t = narrowOut[0] + narrowOut[1] + narrowOut[2] + narrowOut[3] + narrowOut[4] + narrowOut[5] + narrowOut[6];
        // Finite sums and sum a^2, sum b^2 >= 2^-96: the narrow numbers. Otherwise (a NaN or Inf
        // in the row, a float32 overflow, tiny or zero values) the float64 loop below, as the
        // native kernel falls back (kernel.inc narrowStands).
        if (t - t === 0 && narrowOut[1] >= NARROW_TINY && narrowOut[2] >= NARROW_TINY) {
          rowDot[row] = narrowOut[0];
          rowA2[row] = narrowOut[1];
          rowB2[row] = narrowOut[2];
          sAB += narrowOut[0];
          sA2 += narrowOut[1];
          sB2 += narrowOut[2];
          sAbs += narrowOut[3];
          sAbsRef += narrowOut[4];
          sSq += narrowOut[5];
          sRel += narrowOut[6];
          if (narrowOut[7] > maxAbs || narrowOut[7] !== narrowOut[7]) maxAbs = narrowOut[7];
          if (narrowOut[8] > maxRel || narrowOut[8] !== narrowOut[8]) maxRel = narrowOut[8];
          continue;
        }
      }
      if (r < real) {
        let d0 = 0, d1 = 0, d2 = 0, d3 = 0;
        let p0 = 0, p1 = 0, p2 = 0, p3 = 0;
        let q0 = 0, q1 = 0, q2 = 0, q3 = 0;
        let e0 = 0, e1 = 0, e2 = 0, e3 = 0;
        let f0 = 0, f1 = 0, f2 = 0, f3 = 0;
        let g0 = 0, g1 = 0, g2 = 0, g3 = 0;
        let h0 = 0, h1 = 0, h2 = 0, h3 = 0;
        for (let c = 0; c < cols; c += 4) {
          let A = npu;
          let B = ref;
          let i = o + c;
          if (c >= n4) {
            for (let k = 0; k < 4; k++) {
              tailA[k] = c + k < cols ? npu[i + k] : 0;
              tailB[k] = c + k < cols ? ref[i + k] : 0;
            }
            A = tailA;
            B = tailB;
            i = 0;
          }
          {
            const a = A[i];
            const b = B[i];
            d0 += a * b;
            p0 += a * a;
            q0 += b * b;
            const d = a - b;
            const ad = Math.abs(d);
            const ab = Math.abs(b);
            const rel = ad / (ab > REL_FLOOR ? ab : REL_FLOOR);
            e0 += ad;
            f0 += ab;
            g0 += d * d;
            h0 += rel;
            if (ad > maxAbs || ad !== ad) maxAbs = ad;
            if (rel > maxRel || rel !== rel) maxRel = rel;
          }
          {
            const a = A[i + 1];
            const b = B[i + 1];
            d1 += a * b;
            p1 += a * a;
            q1 += b * b;
            const d = a - b;
            const ad = Math.abs(d);
            const ab = Math.abs(b);
            const rel = ad / (ab > REL_FLOOR ? ab : REL_FLOOR);
            e1 += ad;
            f1 += ab;
            g1 += d * d;
            h1 += rel;
            if (ad > maxAbs || ad !== ad) maxAbs = ad;
            if (rel > maxRel || rel !== rel) maxRel = rel;
          }
          {
            const a = A[i + 2];
            const b = B[i + 2];
            d2 += a * b;
            p2 += a * a;
            q2 += b * b;
            const d = a - b;
            const ad = Math.abs(d);
            const ab = Math.abs(b);
            const rel = ad / (ab > REL_FLOOR ? ab : REL_FLOOR);
            e2 += ad;
            f2 += ab;
            g2 += d * d;
            h2 += rel;
            if (ad > maxAbs || ad !== ad) maxAbs = ad;
            if (rel > maxRel || rel !== rel) maxRel = rel;
          }
          {
            const a = A[i + 3];
            const b = B[i + 3];
            d3 += a * b;
            p3 += a * a;
            q3 += b * b;
            const d = a - b;
            const ad = Math.abs(d);
            const ab = Math.abs(b);
            const rel = ad / (ab > REL_FLOOR ? ab : REL_FLOOR);
            e3 += ad;
            f3 += ab;
            g3 += d * d;
            h3 += rel;
            if (ad > maxAbs || ad !== ad) maxAbs = ad;
            if (rel > maxRel || rel !== rel) maxRel = rel;
          }
        }
        const a2 = (p0 + p1) + (p2 + p3);
        rowDot[row] = (d0 + d1) + (d2 + d3);
        rowA2[row] = a2;
        rowB2[row] = (q0 + q1) + (q2 + q3);
        sAB += rowDot[row];
        sA2 += a2;
        sB2 += rowB2[row];
        sAbs += (e0 + e1) + (e2 + e3);
        sAbsRef += (f0 + f1) + (f2 + f3);
        sSq += (g0 + g1) + (g2 + g3);
        sRel += (h0 + h1) + (h2 + h3);
        // sum a^2 of float32 values cannot overflow a float64, so it is finite exactly when
        // every NPU value of the row is: clean rows pay nothing for the NaN/Inf scan.
        if (!(a2 - a2 === 0)) noteRow(nonFinite, npu, o, cols, row);
      } else {
        noteRow(nonFinite, npu, o, cols, row);
      }
    }
    sums[SUM.ab] = sAB;
    sums[SUM.a2] = sA2;
    sums[SUM.b2] = sB2;
    sums[SUM.absErr] = sAbs;
    sums[SUM.maxAbs] = maxAbs;
    sums[SUM.relErr] = sRel;
    sums[SUM.maxRel] = maxRel;
    sums[SUM.absRef] = sAbsRef;
    sums[SUM.sqErr] = sSq;
    acc.rowsScanned = start + count;
  },
};
