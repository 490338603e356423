// One TensorSource over a contiguous payload inside a ByteSource; every format ends here.
import { InputError } from '../errors.ts';
import type { ByteSource } from './bytes.ts';
import { decodeInto, HOST_LE, ITEMSIZE, type ByteOrder } from './dtype.ts';
import type { DType, RawFile, RawRows, TensorSource } from './types.ts';

interface RawLayout {
  dtype: DType;
  order: ByteOrder;
  shape: number[];
  /** Byte offset of element 0 inside the source. */
  offset: number;
  /** Column-major payload (numpy fortran_order); only 1-D and 2-D are accepted. */
  fortran?: boolean;
}

/** Rows = product of all dims but the last, cols = the last (1-D: one row). */
function rowsCols(shape: readonly number[]): { rows: number; cols: number } {
  const cols = shape[shape.length - 1];
  let rows = 1;
  for (let i = 0; i < shape.length - 1; i++) rows *= shape[i];
  return { rows, cols };
}

function shapeText(shape: readonly number[]): string {
  return `(${shape.join(', ')}${shape.length === 1 ? ',' : ''})`;
}

/**
 * Checks every reader applies to a declared shape: not 0-d, no zero dims, integral,
 * and the payload bytes exactly the shape's size (short = truncated, long = trailing data).
 */
export function checkShape(path: string, shape: readonly number[], dtype: DType, payloadBytes: number): void {
  if (shape.length === 0) throw new InputError('0-d tensor (a scalar); expected rows x columns', path);
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) throw new InputError(`bad dimension ${d} in shape ${shapeText(shape)}`, path);
  }
  if (shape.some((d) => d === 0)) throw new InputError(`zero-length tensor, shape ${shapeText(shape)}`, path);
  const elements = shape.reduce((a, b) => a * b, 1);
  const need = elements * ITEMSIZE[dtype];
  if (!Number.isSafeInteger(need)) throw new InputError(`shape ${shapeText(shape)} is too large`, path);
  if (payloadBytes < need) {
    throw new InputError(`truncated: shape ${shapeText(shape)} ${dtype} needs ${need} payload bytes, found ${payloadBytes}`, path);
  }
  if (payloadBytes > need) {
    throw new InputError(`payload is ${payloadBytes} bytes but shape ${shapeText(shape)} ${dtype} needs ${need} (header disagrees with data)`, path);
  }
}

export class RawTensor implements TensorSource {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly rows: number;
  readonly cols: number;
  private readonly item: number;
  constructor(
    readonly path: string,
    private readonly src: ByteSource,
    private readonly layout: RawLayout,
  ) {
    this.dtype = layout.dtype;
    this.shape = Object.freeze([...layout.shape]);
    ({ rows: this.rows, cols: this.cols } = rowsCols(layout.shape));
    this.item = ITEMSIZE[layout.dtype];
    if (layout.fortran && layout.shape.length > 2) {
      throw new InputError(`fortran_order array with ${layout.shape.length} dimensions is not supported; save it C-contiguous`, path);
    }
  }

  readRows(start: number, count: number): Float32Array {
    if (!Number.isInteger(start) || !Number.isInteger(count) || start < 0 || count < 0 || start + count > this.rows) {
      throw new RangeError(`${this.path}: rows [${start}, ${start + count}) outside 0..${this.rows}`);
    }
    const { cols, item, layout } = this;
    const out = new Float32Array(count * cols);
    if (count === 0) return out;
    if (!layout.fortran || this.rows === 1 || cols === 1) {
      // C order (and degenerate fortran shapes, which are laid out identically).
      const bytes = this.src.read(layout.offset + start * cols * item, count * cols * item);
      decodeInto(bytes, layout.dtype, layout.order, out, 0, count * cols);
      return out;
    }
    // 2-D column-major: element (r, c) sits at c * rows + r; read each column's slice and scatter.
    const col = new Float32Array(count);
    for (let c = 0; c < cols; c++) {
      const bytes = this.src.read(layout.offset + (c * this.rows + start) * item, count * item);
      decodeInto(bytes, layout.dtype, layout.order, col, 0, count);
      for (let r = 0; r < count; r++) out[r * cols + c] = col[r];
    }
    return out;
  }

  readRawRows(start: number, count: number, into?: Uint8Array): RawRows | null {
    if (!Number.isInteger(start) || !Number.isInteger(count) || start < 0 || count < 0 || start + count > this.rows) {
      throw new RangeError(`${this.path}: rows [${start}, ${start + count}) outside 0..${this.rows}`);
    }
    const { cols, item, layout } = this;
    const columnMajor = layout.fortran && this.rows > 1 && cols > 1;
    if (columnMajor || layout.order !== 'le' || !HOST_LE) return null;
    const offset = layout.offset + start * cols * item;
    const length = count * cols * item;
    if (into && into.length >= length && this.src.readInto) {
      return { dtype: layout.dtype, bytes: this.src.readInto(offset, into.subarray(0, length)) };
    }
    return { dtype: layout.dtype, bytes: this.src.read(offset, length) };
  }

  rawFile(): RawFile | null {
    const { cols, layout } = this;
    const columnMajor = layout.fortran && this.rows > 1 && cols > 1;
    const fd = this.src.fd;
    if (columnMajor || layout.order !== 'le' || !HOST_LE || fd === undefined || fd === null) return null;
    return { dtype: layout.dtype, fd, offset: layout.offset };
  }

  close(): void {
    this.src.close();
  }
}
