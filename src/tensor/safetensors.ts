// .safetensors: u64 LE header length, a JSON header {name: {dtype, shape, data_offsets}}, payload.
import { InputError } from '../errors.ts';
import type { ByteSource } from './bytes.ts';
import { checkShape, RawTensor } from './raw.ts';
import type { DType, OpenOptions } from './types.ts';

const DTYPES: Record<string, DType> = { F32: 'f32', F16: 'f16', BF16: 'bf16' };

interface StEntry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

export function openSafetensors(src: ByteSource, path: string, opts: OpenOptions): RawTensor {
  if (src.size < 8) throw new InputError(`truncated: ${src.size} bytes is too short for a safetensors header`, path);
  const n = src.read(0, 8).readBigUInt64LE(0);
  if (n > BigInt(src.size - 8)) throw new InputError(`truncated: header claims ${n} bytes, file has ${src.size - 8}`, path);
  const headerLen = Number(n);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(src.read(8, headerLen).toString('utf8'));
  } catch (err) {
    throw new InputError(`unparseable safetensors header (${(err as Error).message})`, path);
  }
  if (!header || typeof header !== 'object' || Array.isArray(header)) throw new InputError('unparseable safetensors header (not an object)', path);
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  let name: string;
  if (opts.key !== undefined) {
    if (!names.includes(opts.key)) throw new InputError(`no tensor '${opts.key}' (has: ${names.join(', ') || 'none'})`, path);
    name = opts.key;
  } else {
    if (names.length !== 1) throw new InputError(`holds ${names.length} tensors (${names.join(', ')}); say which one with a key`, path);
    name = names[0];
  }
  const where = names.length === 1 ? path : `${path}[${name}]`;
  const e = header[name] as StEntry;
  if (!e || typeof e !== 'object' || typeof e.dtype !== 'string' || !Array.isArray(e.shape) || !Array.isArray(e.data_offsets)) {
    throw new InputError(`unparseable safetensors entry '${name}'`, path);
  }
  const dtype = DTYPES[e.dtype];
  if (!dtype) throw new InputError(`tensor '${name}' has unknown dtype '${e.dtype}'; expected F32, F16 or BF16`, path);
  const [begin, end] = e.data_offsets;
  const payload = src.size - 8 - headerLen;
  if (!Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || begin < 0 || end < begin) {
    throw new InputError(`tensor '${name}' has bad data_offsets [${begin}, ${end}]`, path);
  }
  if (end > payload) throw new InputError(`truncated: tensor '${name}' ends at payload byte ${end}, payload has ${payload}`, path);
  if (e.shape.some((d) => typeof d !== 'number')) throw new InputError(`tensor '${name}' has a bad shape`, path);
  checkShape(where, e.shape, dtype, end - begin);
  return new RawTensor(where, src, { dtype, order: 'le', shape: e.shape, offset: 8 + headerLen + begin });
}
