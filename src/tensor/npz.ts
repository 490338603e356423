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
import { readZipDirectory, type ZipEntry } from './zip.ts';
import type { RawTensor } from './raw.ts';
import type { OpenOptions } from './types.ts';

const LFH_SIG = 0x04034b50;

export type { ZipEntry };

/** The members of an .npz's zip (the central directory read by tensor/zip.ts). */
function npzMembers(src: ByteSource, path: string): ZipEntry[] {
  return readZipDirectory(src, (what) => {
    throw new InputError(`not a valid .npz (zip): ${what}`, path);
  }).entries;
}

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
  const entries = npzMembers(src, path).filter((e) => !e.name.endsWith('/'));
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
