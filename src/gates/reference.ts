// A broken reference is not a verdict on the NPU (issue 9, point 6): a non-finite value in the
// reference, or a reference row on a real token that is all zero or constant, means the HF side
// of the run failed, so the run's outcome is an error naming the reference, and no gate is judged.
import type { TensorSource } from '../tensor/types.ts';

/** Bytes of float32 rows read per block while checking (the reference is read once, streamed). */
const BLOCK_BYTES = 4 << 20;

/** What is wrong with the reference's first `realLen` rows, in words; null when nothing is.
 * `finiteOnly`: only a NaN or Inf counts (a lens boundary, where a zero or constant row may be real). */
export function referenceFault(ref: TensorSource, realLen: number, finiteOnly = false): string | null {
  const cols = ref.cols;
  const rows = Math.min(realLen, ref.rows);
  const per = Math.max(1, Math.floor(BLOCK_BYTES / (cols * 4)));
  let zeroRows = 0;
  let firstZero = -1;
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
        if (!(v - v === 0)) {
          const what = v !== v ? 'NaN' : v > 0 ? '+Inf' : '-Inf';
          return `row ${row}, column ${c} of the reference is ${what} (a real token)`;
        }
        if (v !== first) constant = false;
        if (v !== 0) zero = false;
      }
      if (finiteOnly) continue;
      if (zero) {
        zeroRows++;
        if (firstZero < 0) firstZero = row;
      } else if (constant && cols > 1) {
        return `row ${row} of the reference is constant (every one of its ${cols} values is ${first}) on a real token`;
      }
    }
  }
  if (zeroRows === rows) return `every one of the reference's ${rows} real rows is all zero`;
  if (zeroRows > 0) return `${zeroRows} of the reference's real rows ${zeroRows === 1 ? 'is' : 'are'} all zero (first: row ${firstZero})`;
  return null;
}
