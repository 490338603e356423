// An in-memory TensorSource for metrics tests.
import type { TensorSource } from '../../src/tensor/types.ts';

export function memTensor(rows: number[][], path = 'mem.npy'): TensorSource {
  const cols = rows[0]?.length ?? 0;
  const data = Float32Array.from(rows.flat());
  return {
    path,
    dtype: 'f32',
    shape: [rows.length, cols],
    rows: rows.length,
    cols,
    readRows: (start, count) => data.slice(start * cols, (start + count) * cols),
    close: () => {},
  };
}
