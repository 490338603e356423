// Element decoding: every supported dtype widened exactly to float32.
import { endianness } from 'node:os';
import type { DType } from './types.ts';

export type ByteOrder = 'le' | 'be';

export const ITEMSIZE: Record<DType, number> = { f32: 4, f16: 2, bf16: 2 };

export const HOST_LE = endianness() === 'LE';

/** IEEE half -> float32. Every half is exactly representable as a float32 (subnormals included). */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

let f16Table: Float32Array | null = null;
/** All 65,536 halves decoded once (256 KiB): a lookup is faster than the arithmetic per element. */
function halfTable(): Float32Array {
  if (!f16Table) {
    f16Table = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) f16Table[i] = f16ToF32(i);
  }
  return f16Table;
}

/** bf16 -> float32: the bf16 bits are the top half of the float32, so this is exact (NaN payloads kept). */
export function bf16ToF32(b: number): number {
  const u = new Uint32Array([(b & 0xffff) << 16]);
  return new Float32Array(u.buffer)[0];
}

/** Decode `count` elements of `dtype` from `bytes` (any alignment) into out[outOffset...]. */
export function decodeInto(
  bytes: Uint8Array,
  dtype: DType,
  order: ByteOrder,
  out: Float32Array,
  outOffset: number,
  count: number,
): void {
  const size = ITEMSIZE[dtype];
  if (bytes.length < count * size) throw new RangeError('decodeInto: short buffer');
  const nativeOrder = (order === 'le') === HOST_LE;
  if (dtype === 'f32') {
    if (nativeOrder) {
      // Byte copy into the float view: works at any source alignment.
      new Uint8Array(out.buffer, out.byteOffset + outOffset * 4, count * 4).set(bytes.subarray(0, count * 4));
      return;
    }
    const dv = new DataView(bytes.buffer, bytes.byteOffset, count * 4);
    const le = order === 'le';
    for (let i = 0; i < count; i++) out[outOffset + i] = dv.getFloat32(i * 4, le);
    return;
  }
  const lo = order === 'le' ? 0 : 1;
  const hi = 1 - lo;
  if (dtype === 'f16') {
    const t = halfTable();
    for (let i = 0, j = 0; i < count; i++, j += 2) out[outOffset + i] = t[bytes[j + lo] | (bytes[j + hi] << 8)];
    return;
  }
  // bf16: write the 16 bits into the high half of each float32 through an integer view.
  const u32 = new Uint32Array(out.buffer, out.byteOffset + outOffset * 4, count);
  for (let i = 0, j = 0; i < count; i++, j += 2) u32[i] = ((bytes[j + lo] | (bytes[j + hi] << 8)) << 16) >>> 0;
}
