// .npz: a zip of .npy members. We read the central directory ourselves (EOCD, optional
// Zip64), then either read a stored member in place or inflate a deflated one into memory:
// bounded before inflating (the declared size against a cap and against the member's own .npy
// header, read from the first compressed bytes), and stopped the moment the output passes the
// declared size, so a zip bomb costs no more memory than the size it admits to.
import type * as Zlib from 'node:zlib';
import { InputError } from '../errors.ts';
import { BufferBytes, type ByteSource } from './bytes.ts';
import { crc32 } from './crc32.ts';
import { openNpyAt } from './npy.ts';
import type { RawTensor } from './raw.ts';
import type { OpenOptions } from './types.ts';

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CDH_SIG = 0x02014b50;
const LFH_SIG = 0x04034b50;

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
  flags: number;
  crc: number;
}

function u64(buf: Buffer, at: number, path: string): number {
  const v = buf.readBigUInt64LE(at);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new InputError(`not a valid .npz (zip): a 64-bit size or offset (${v}) is beyond any real file`, path);
  return Number(v);
}

export function readZipDirectory(src: ByteSource, path: string): ZipEntry[] {
  const bad = (what: string): never => {
    throw new InputError(`not a valid .npz (zip): ${what}`, path);
  };
  if (src.size < 22) bad('file too short for a zip end record');
  // The end record is 22 bytes plus a comment of at most 65,535 bytes.
  const tailLen = Math.min(src.size, 22 + 0xffff);
  const tailStart = src.size - tailLen;
  const tail = src.read(tailStart, tailLen);
  let eocd = -1;
  for (let i = tailLen - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD_SIG) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) bad('no end-of-central-directory record');
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    const locAt = tailStart + eocd - 20;
    if (locAt < 0) bad('Zip64 locator missing');
    const loc = src.read(locAt, 20);
    if (loc.readUInt32LE(0) !== ZIP64_LOCATOR_SIG) bad('Zip64 locator missing');
    const z64At = u64(loc, 8, path);
    if (z64At + 56 > src.size) bad('Zip64 end record out of range');
    const z = src.read(z64At, 56);
    if (z.readUInt32LE(0) !== ZIP64_EOCD_SIG) bad('bad Zip64 end record');
    count = u64(z, 32, path);
    cdSize = u64(z, 40, path);
    cdOffset = u64(z, 48, path);
  }
  if (cdOffset + cdSize > src.size) bad('central directory out of range (truncated file?)');
  const cd = src.read(cdOffset, cdSize);
  const entries: ZipEntry[] = [];
  let p = 0;
  for (let n = 0; n < count; n++) {
    if (p + 46 > cd.length || cd.readUInt32LE(p) !== CDH_SIG) bad('corrupt central directory');
    const flags = cd.readUInt16LE(p + 8);
    const crc = cd.readUInt32LE(p + 16);
    const method = cd.readUInt16LE(p + 10);
    let compressedSize = cd.readUInt32LE(p + 20);
    let size = cd.readUInt32LE(p + 24);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    let localHeaderOffset = cd.readUInt32LE(p + 42);
    if (p + 46 + nameLen + extraLen + commentLen > cd.length) bad('corrupt central directory');
    const name = cd.subarray(p + 46, p + 46 + nameLen).toString(flags & 0x800 ? 'utf8' : 'latin1');
    // Zip64 extra field (id 1): only the fields whose 32-bit slot is saturated, in this order.
    let e = p + 46 + nameLen;
    const eEnd = e + extraLen;
    while (e + 4 <= eEnd) {
      const id = cd.readUInt16LE(e);
      const len = cd.readUInt16LE(e + 2);
      if (id === 1) {
        let q = e + 4;
        const take = (): number => {
          if (q + 8 > e + 4 + len) bad('short Zip64 extra field');
          const v = u64(cd, q, path);
          q += 8;
          return v;
        };
        if (size === 0xffffffff) size = take();
        if (compressedSize === 0xffffffff) compressedSize = take();
        if (localHeaderOffset === 0xffffffff) localHeaderOffset = take();
      }
      e += 4 + len;
    }
    entries.push({ name, method, compressedSize, size, localHeaderOffset, flags, crc });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

/** The most a deflated member may inflate to (it is held in memory); larger tensors belong in .npy or a stored .npz. */
export const NPZ_MAX_INFLATED = 1 << 30;
/** Compressed bytes inflated first to read the member's .npy header (at most ~530 KB of output). */
const PEEK_BYTES = 512;

function inflateMember(src: ByteSource, entry: ZipEntry, dataStart: number, path: string, where: string, opts: OpenOptions): Buffer {
  // zlib is loaded here, on the first deflated member: every process that only reads .npy (a
  // report, the runner hooks) would otherwise pay its load at start.
  const { constants: zlibConstants, inflateRawSync } = process.getBuiltinModule('node:zlib') as typeof Zlib;
  const name = entry.name;
  if (entry.size > NPZ_MAX_INFLATED) {
    throw new InputError(`member '${name}' declares ${entry.size} bytes uncompressed; at most ${NPZ_MAX_INFLATED} are inflated in memory (save large tensors as .npy, or with np.savez, uncompressed)`, path);
  }
  // Deflate cannot expand data by more than a few bytes per 16 KB block.
  if (entry.compressedSize > entry.size + Math.ceil(entry.size / 1000) + 1024) {
    throw new InputError(`member '${name}' is ${entry.compressedSize} bytes compressed, more than its declared ${entry.size} bytes uncompressed allow`, path);
  }
  // The .npy header first: a declared size that disagrees with the header's shape is refused
  // before the rest is inflated.
  const peek = (() => {
    try {
      return inflateRawSync(src.read(dataStart, Math.min(entry.compressedSize, PEEK_BYTES)), { finishFlush: zlibConstants.Z_SYNC_FLUSH, maxOutputLength: 1 << 20 });
    } catch {
      return null; // a stream that is bad from its first bytes fails the full inflate below, with its message
    }
  })();
  if (peek && headerComplete(peek)) {
    try {
      openNpyAt(new BufferBytes(where, peek), where, opts, 0, entry.size);
    } catch (err) {
      const why = (err as Error).message.replace(`${where}: `, '');
      throw new InputError(`member '${name}' is refused before inflating: ${why} (a corrupt archive, or not a tensor)`, path);
    }
  }
  try {
    // Stopped by zlib as soon as the output passes the declared size.
    return inflateRawSync(src.read(dataStart, entry.compressedSize), { maxOutputLength: Math.max(entry.size, 1) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new InputError(`member '${name}' inflates to more than the ${entry.size} bytes its directory entry declares (stopped there)`, path);
    }
    throw new InputError(`member '${name}' does not inflate (${(err as Error).message})`, path);
  }
}

/** Whether `head` holds a whole .npy preamble and header, so its shape can be checked from it alone. */
function headerComplete(head: Buffer): boolean {
  if (head.length < 10) return false;
  if (head[0] !== 0x93) return true; // not an .npy: refused now, with openNpyAt's message
  const major = head[6];
  if (major === 1) return head.length >= 10 + head.readUInt16LE(8);
  if (major === 2 || major === 3) return head.length >= 12 && head.length >= 12 + head.readUInt32LE(8);
  return true; // an unsupported version: refused now
}

export function openNpz(src: ByteSource, path: string, opts: OpenOptions): RawTensor {
  const entries = readZipDirectory(src, path).filter((e) => !e.name.endsWith('/'));
  const keyOf = (e: ZipEntry) => e.name.replace(/\.npy$/, '');
  let entry: ZipEntry | undefined;
  if (opts.key !== undefined) {
    entry = entries.find((e) => e.name === opts.key || keyOf(e) === opts.key);
    if (!entry) throw new InputError(`no member '${opts.key}' (has: ${entries.map(keyOf).join(', ') || 'none'})`, path);
  } else {
    if (entries.length !== 1) {
      throw new InputError(`holds ${entries.length} arrays (${entries.map(keyOf).join(', ')}); say which one with a key`, path);
    }
    entry = entries[0];
  }
  const where = `${path}[${keyOf(entry)}]`;
  if (entry.flags & 1) throw new InputError(`member '${entry.name}' is encrypted`, path);
  if (entry.localHeaderOffset + 30 > src.size) throw new InputError(`truncated: member '${entry.name}' header out of range`, path);
  const lfh = src.read(entry.localHeaderOffset, 30);
  if (lfh.readUInt32LE(0) !== LFH_SIG) throw new InputError(`corrupt local header for member '${entry.name}'`, path);
  // The local header's own name/extra lengths decide where data starts (its extra can differ from the central one).
  const dataStart = entry.localHeaderOffset + 30 + lfh.readUInt16LE(26) + lfh.readUInt16LE(28);
  if (dataStart + entry.compressedSize > src.size) throw new InputError(`truncated: member '${entry.name}' runs past the end of the file`, path);
  if (entry.method === 0) {
    // Stored: the .npy sits in place; read it row block by row block like a plain file.
    return openNpyAt(src, where, opts, dataStart, entry.compressedSize);
  }
  if (entry.method !== 8) throw new InputError(`member '${entry.name}' uses zip method ${entry.method}; only stored and deflated are supported`, path);
  const data = inflateMember(src, entry, dataStart, path, where, opts);
  if (data.length !== entry.size) throw new InputError(`member '${entry.name}' inflated to ${data.length} bytes, directory says ${entry.size}`, path);
  // A damaged stream can still inflate; the checksum is what tells corrupt data from a bad header.
  if (crc32(data) !== entry.crc) throw new InputError(`member '${entry.name}' fails its CRC-32 check (corrupt archive)`, path);
  src.close(); // everything needed is in memory now
  return openNpyAt(new BufferBytes(where, data), where, opts);
}
