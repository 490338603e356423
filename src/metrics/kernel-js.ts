// The pure-TypeScript kernel. Arithmetic in float64 on float32 inputs.
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

export const jsKernel: Kernel = {
  name: 'js',
  scanBlock(acc: Accumulator, npu: Float32Array, ref: Float32Array, start: number, count: number): void {
    const { cols, realLen, rowDot, rowA2, rowB2, sums, nonFinite } = acc;
    const real = Math.max(0, Math.min(count, realLen - start));
    if (ref.length < real * cols) throw new RangeError(`scanBlock: reference block has ${ref.length / cols} rows, needs ${real}`);
    let sAbs = 0;
    let sRel = 0;
    let sAbsRef = 0;
    let sSq = 0;
    let maxAbs = sums[SUM.maxAbs];
    let maxRel = sums[SUM.maxRel];
    let sAB = 0;
    let sA2 = 0;
    let sB2 = 0;
    for (let r = 0; r < count; r++) {
      const row = start + r;
      const o = r * cols;
      if (r < real) {
        let dot = 0;
        let a2 = 0;
        let b2 = 0;
        for (let c = 0; c < cols; c++) {
          const a = npu[o + c];
          const b = ref[o + c];
          dot += a * b;
          a2 += a * a;
          b2 += b * b;
          const d = a - b;
          const ad = Math.abs(d);
          const ab = Math.abs(b);
          const rel = ad / (ab > REL_FLOOR ? ab : REL_FLOOR);
          sAbs += ad;
          sAbsRef += ab;
          sSq += d * d;
          sRel += rel;
          // np.max propagates NaN: once NaN, the max stays NaN (`x > NaN` is false).
          if (ad > maxAbs || ad !== ad) maxAbs = ad;
          if (rel > maxRel || rel !== rel) maxRel = rel;
          // NaN/Inf anywhere: checked with one comparison in the common finite case.
          if (!(a - a === 0)) noteNonFinite(nonFinite, a !== a ? NF.nan : a > 0 ? NF.posInf : NF.negInf, row, c);
        }
        rowDot[row] = dot;
        rowA2[row] = a2;
        rowB2[row] = b2;
        sAB += dot;
        sA2 += a2;
        sB2 += b2;
      } else {
        for (let c = 0; c < cols; c++) {
          const a = npu[o + c];
          if (!(a - a === 0)) noteNonFinite(nonFinite, a !== a ? NF.nan : a > 0 ? NF.posInf : NF.negInf, row, c);
        }
      }
    }
    sums[SUM.ab] += sAB;
    sums[SUM.a2] += sA2;
    sums[SUM.b2] += sB2;
    sums[SUM.absErr] += sAbs;
    sums[SUM.maxAbs] = maxAbs;
    sums[SUM.relErr] += sRel;
    sums[SUM.maxRel] = maxRel;
    sums[SUM.absRef] += sAbsRef;
    sums[SUM.sqErr] += sSq;
    acc.rowsScanned = start + count;
  },
};
