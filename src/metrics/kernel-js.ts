// The pure-TypeScript kernel: float64 arithmetic on float32 inputs.
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
