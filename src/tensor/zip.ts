// The one reader of a zip's central directory (end record, optional Zip64, each entry with its
// Zip64 extra field), shared by .npz tensors (tensor/npz.ts) and artifact downloads
// (github/unzip.ts). It only parses and range-checks; each caller adds its own rules (names,
// methods, limits) and reads the members itself.
import type { ByteSource } from './bytes.ts';

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CDH_SIG = 0x02014b50;
const U16 = 0xffff;
const U32 = 0xffffffff;

export interface ZipEntry {
  /** As stored: UTF-8 when flag bit 11 says so, else Latin-1. Not checked here. */
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
  flags: number;
  crc: number;
  /** The host that made it (upper byte 3: Unix) and its external attributes (Unix mode in the upper half). */
  madeBy: number;
  attrs: number;
}

interface ZipDirectory {
  entries: ZipEntry[];
  /** Where the central directory starts: every member's data lies before it. */
  cdOffset: number;
}

interface ZipRules {
  /** Refuse more entries than this before reading them. */
  maxEntries?: number;
  /** Refuse a central directory larger than this. */
  maxDirectoryBytes?: number;
  /** Refuse a multi-disk zip. */
  singleDisk?: boolean;
}

/** Reads the central directory; `bad` throws the caller's error for what is wrong (in words). */
export function readZipDirectory(src: ByteSource, bad: (what: string) => never, rules: ZipRules = {}): ZipDirectory {
  const u64 = (buf: Buffer, at: number): number => {
    const v = buf.readBigUInt64LE(at);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) bad(`a 64-bit size or offset (${v}) is beyond any real file`);
    return Number(v);
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
  const eocdAt = tailStart + eocd;
  if (rules.singleDisk && (tail.readUInt16LE(eocd + 4) !== 0 || tail.readUInt16LE(eocd + 6) !== 0)) bad('multi-disk zips are not supported');
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  let cdEnd = eocdAt;
  if (count === U16 || cdSize === U32 || cdOffset === U32) {
    if (eocdAt < 20) bad('Zip64 locator missing');
    const loc = src.read(eocdAt - 20, 20);
    if (loc.readUInt32LE(0) !== ZIP64_LOCATOR_SIG) bad('Zip64 locator missing');
    const z64At = u64(loc, 8);
    if (z64At + 56 > eocdAt - 20) bad('Zip64 end record out of range');
    const z = src.read(z64At, 56);
    if (z.readUInt32LE(0) !== ZIP64_EOCD_SIG) bad('bad Zip64 end record');
    count = u64(z, 32);
    cdSize = u64(z, 40);
    cdOffset = u64(z, 48);
    cdEnd = z64At;
  }
  if (rules.maxEntries !== undefined && count > rules.maxEntries) bad(`the zip has ${count} entries; at most ${rules.maxEntries}`);
  if (cdOffset + cdSize > cdEnd || (rules.maxDirectoryBytes !== undefined && cdSize > rules.maxDirectoryBytes)) bad('central directory out of range (truncated file?)');
  const cd = src.read(cdOffset, cdSize);
  const entries: ZipEntry[] = [];
  let p = 0;
  for (let n = 0; n < count; n++) {
    if (p + 46 > cd.length || cd.readUInt32LE(p) !== CDH_SIG) bad('corrupt central directory');
    const madeBy = cd.readUInt16LE(p + 4);
    const flags = cd.readUInt16LE(p + 8);
    const method = cd.readUInt16LE(p + 10);
    const crc = cd.readUInt32LE(p + 16);
    let compressedSize = cd.readUInt32LE(p + 20);
    let size = cd.readUInt32LE(p + 24);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    const attrs = cd.readUInt32LE(p + 38);
    let localHeaderOffset = cd.readUInt32LE(p + 42);
    const end = p + 46 + nameLen + extraLen + commentLen;
    if (end > cd.length) bad('corrupt central directory');
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
          const v = u64(cd, q);
          q += 8;
          return v;
        };
        if (size === U32) size = take();
        if (compressedSize === U32) compressedSize = take();
        if (localHeaderOffset === U32) localHeaderOffset = take();
      }
      e += 4 + len;
    }
    entries.push({ name, method, compressedSize, size, localHeaderOffset, flags, crc, madeBy, attrs });
    p = end;
  }
  return { entries, cdOffset };
}
