// Hand-built tensor files (no numpy needed): .npy, .safetensors and .npz (zip) byte layouts.
import { deflateRawSync } from 'node:zlib';
import { crc32 } from '../../src/tensor/crc32.ts';

/** An .npy file from a header dict text and raw payload; version 1, 2 or 3. */
export function npyBytes(headerDict: string, payload: Uint8Array, version: 1 | 2 | 3 = 1): Buffer {
  const pre = version === 1 ? 10 : 12;
  let header = headerDict;
  // numpy pads with spaces so the payload starts 64-byte aligned, ending in '\n'.
  const total = Math.ceil((pre + header.length + 1) / 64) * 64;
  header = header + ' '.repeat(total - pre - header.length - 1) + '\n';
  const head = Buffer.alloc(pre);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, version, 0]).copy(head);
  if (version === 1) head.writeUInt16LE(header.length, 8);
  else head.writeUInt32LE(header.length, 8);
  return Buffer.concat([head, Buffer.from(header, 'latin1'), Buffer.from(payload)]);
}

export function npyHeader(descr: string, shape: number[], fortran = false): string {
  const s = `(${shape.join(', ')}${shape.length === 1 ? ',' : ''})`;
  return `{'descr': '${descr}', 'fortran_order': ${fortran ? 'True' : 'False'}, 'shape': ${s}, }`;
}

export function u16Bytes(values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 2);
  values.forEach((v, i) => b.writeUInt16LE(v, i * 2));
  return b;
}

export function f32Bytes(values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeFloatLE(v, i * 4));
  return b;
}

export interface StTensor {
  dtype: string;
  shape: number[];
  data: Uint8Array;
}

/** A .safetensors file; `mutate` may edit the header object before it is written. */
export function safetensorsBytes(tensors: Record<string, StTensor>, mutate?: (h: Record<string, any>) => void): Buffer {
  const header: Record<string, any> = { __metadata__: { format: 'pt' } };
  const parts: Buffer[] = [];
  let off = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + t.data.length] };
    parts.push(Buffer.from(t.data));
    off += t.data.length;
  }
  mutate?.(header);
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, json, ...parts]);
}

export interface ZipMember {
  name: string;
  data: Uint8Array;
  deflate?: boolean;
}

/**
 * A zip archive. With zip64, sizes and offsets in the central directory are saturated and
 * carried in Zip64 extra fields, and a Zip64 end record + locator precede the end record.
 */
export function zipBytes(members: ZipMember[], zip64 = false): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const m of members) {
    const name = Buffer.from(m.name, 'utf8');
    const body = m.deflate ? deflateRawSync(m.data) : Buffer.from(m.data);
    const crc = crc32(m.data);
    const method = m.deflate ? 8 : 0;
    const lfh = Buffer.alloc(30);
    lfh.writeUInt32LE(0x04034b50, 0);
    lfh.writeUInt16LE(zip64 ? 45 : 20, 4);
    lfh.writeUInt16LE(0x800, 6);
    lfh.writeUInt16LE(method, 8);
    lfh.writeUInt32LE(crc, 14);
    lfh.writeUInt32LE(body.length, 18);
    lfh.writeUInt32LE(m.data.length, 22);
    lfh.writeUInt16LE(name.length, 26);
    // A local extra field the central directory does not have: readers must use the local length.
    const localExtra = Buffer.from([0xfe, 0xca, 4, 0, 1, 2, 3, 4]);
    lfh.writeUInt16LE(localExtra.length, 28);
    locals.push(lfh, name, localExtra, body);
    const cdh = Buffer.alloc(46);
    cdh.writeUInt32LE(0x02014b50, 0);
    cdh.writeUInt16LE(zip64 ? 45 : 20, 4);
    cdh.writeUInt16LE(zip64 ? 45 : 20, 6);
    cdh.writeUInt16LE(0x800, 8);
    cdh.writeUInt16LE(method, 10);
    cdh.writeUInt32LE(crc, 16);
    let extra = Buffer.alloc(0);
    if (zip64) {
      cdh.writeUInt32LE(0xffffffff, 20);
      cdh.writeUInt32LE(0xffffffff, 24);
      cdh.writeUInt32LE(0xffffffff, 42);
      extra = Buffer.alloc(28);
      extra.writeUInt16LE(1, 0);
      extra.writeUInt16LE(24, 2);
      extra.writeBigUInt64LE(BigInt(m.data.length), 4);
      extra.writeBigUInt64LE(BigInt(body.length), 12);
      extra.writeBigUInt64LE(BigInt(offset), 20);
    } else {
      cdh.writeUInt32LE(body.length, 20);
      cdh.writeUInt32LE(m.data.length, 24);
      cdh.writeUInt32LE(offset, 42);
    }
    cdh.writeUInt16LE(name.length, 28);
    cdh.writeUInt16LE(extra.length, 30);
    centrals.push(cdh, name, extra);
    offset += 30 + name.length + localExtra.length + body.length;
  }
  const cd = Buffer.concat(centrals);
  const tail: Buffer[] = [];
  if (zip64) {
    const z = Buffer.alloc(56);
    z.writeUInt32LE(0x06064b50, 0);
    z.writeBigUInt64LE(44n, 4);
    z.writeUInt16LE(45, 12);
    z.writeUInt16LE(45, 14);
    z.writeBigUInt64LE(BigInt(members.length), 24);
    z.writeBigUInt64LE(BigInt(members.length), 32);
    z.writeBigUInt64LE(BigInt(cd.length), 40);
    z.writeBigUInt64LE(BigInt(offset), 48);
    const loc = Buffer.alloc(20);
    loc.writeUInt32LE(0x07064b50, 0);
    loc.writeBigUInt64LE(BigInt(offset + cd.length), 8);
    loc.writeUInt32LE(1, 16);
    tail.push(z, loc);
  }
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(zip64 ? 0xffff : members.length, 8);
  eocd.writeUInt16LE(zip64 ? 0xffff : members.length, 10);
  eocd.writeUInt32LE(zip64 ? 0xffffffff : cd.length, 12);
  eocd.writeUInt32LE(zip64 ? 0xffffffff : offset, 16);
  return Buffer.concat([...locals, cd, ...tail, eocd]);
}
