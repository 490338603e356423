// openTensor: pick the reader by extension. Readers stream row blocks from the file descriptor;
// only a deflated .npz member is held in memory.
import { extname } from 'node:path';
import { InputError } from '../errors.ts';
import { FileBytes } from './bytes.ts';
import { openNpyAt } from './npy.ts';
import { openNpz } from './npz.ts';
import { openSafetensors } from './safetensors.ts';
import type { OpenOptions, TensorSource } from './types.ts';

export type { DType, OpenOptions, RawFile, RawRows, TensorSource } from './types.ts';
export { bf16ToF32, f16ToF32 } from './dtype.ts';

const TENSOR_EXTENSIONS = ['.npy', '.npz', '.safetensors'] as const;

export function openTensor(path: string, opts: OpenOptions = {}): TensorSource {
  const ext = extname(path).toLowerCase();
  if (!(TENSOR_EXTENSIONS as readonly string[]).includes(ext)) {
    throw new InputError(`unknown tensor file extension '${ext}'; expected ${TENSOR_EXTENSIONS.join(', ')}`, path);
  }
  const src = new FileBytes(path);
  try {
    if (ext === '.npy') return openNpyAt(src, path, opts);
    if (ext === '.npz') return openNpz(src, path, opts);
    return openSafetensors(src, path, opts);
  } catch (err) {
    src.close();
    throw err;
  }
}

/** Read a whole tensor (tests, small files). */
export function readAll(t: TensorSource): Float32Array {
  return t.readRows(0, t.rows);
}
