// Extracts an artifact zip from a job we do not trust (split mode: the probe ran a pull request's
// code, and a fork can even change the workflow that uploads). A zip can promise little and inflate
// to a lot (deflate reaches ~1030:1, overlapping entries far more), so:
//  - the central directory is read first, and the declared sizes are checked against a budget
//    before one byte is inflated: at most `maxBytes`, and beyond `floorBytes` at most `maxRatio`
//    times the zip's own size (honest run dirs are float tensors: ~1:1; zero padding is covered by
//    the floor);
//  - every entry is inflated as a stream and stopped the moment it produces more than it declared,
//    then checked against its declared size and CRC-32;
//  - names must stay inside the destination (no absolute paths, `..`, backslashes, drive letters),
//    only regular files and directories (no symlinks), no encryption, stored or deflated only;
//  - files are created exclusively (a duplicate name is refused, nothing is overwritten).
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createInflateRaw } from 'node:zlib';
import { InputError } from '../errors.ts';
import { crc32Update } from '../tensor/crc32.ts';

export interface ZipLimits {
  /** Total inflated bytes, whatever the zip's size. */
  maxBytes: number;
  /** Inflated bytes always allowed, whatever the ratio. */
  floorBytes: number;
  /** Beyond the floor: inflated bytes per byte of zip. */
  maxRatio: number;
  maxEntries: number;
}

export const DEFAULT_ZIP_LIMITS: ZipLimits = {
  maxBytes: 2 * 1024 ** 3,
  floorBytes: 256 * 1024 ** 2,
  maxRatio: 100,
  maxEntries: 10_000,
};

/** The inflated bytes a zip of this size may declare. */
export function inflateBudget(zipBytes: number, l: ZipLimits = DEFAULT_ZIP_LIMITS): number {
  return Math.min(l.maxBytes, Math.max(l.floorBytes, l.maxRatio * zipBytes));
}

interface Entry {
  name: string;
  dir: boolean;
  method: number;
  crc: number;
  compressed: number;
  size: number;
  localOffset: number;
}

const SIG_EOCD = 0x06054b50;
const SIG_EOCD64 = 0x06064b50;
const SIG_LOC64 = 0x07064b50;
const SIG_CEN = 0x02014b50;
const SIG_LOC = 0x04034b50;
const U32 = 0xffffffff;
const U16 = 0xffff;

function num(b: Buffer, at: number, bytes: 2 | 4 | 8): number {
  if (bytes === 2) return b.readUInt16LE(at);
  if (bytes === 4) return b.readUInt32LE(at);
  const v = b.readBigUInt64LE(at);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('a 64-bit size is out of range');
  return Number(v);
}

/** A safe relative path, or an error naming what is wrong. */
function checkName(raw: string): string {
  if (raw === '' || raw.length > 1024) return fail(`an entry name is empty or too long`);
  if (/[\u0000-\u001f\u007f\\]/.test(raw)) return fail(`entry ${JSON.stringify(raw.slice(0, 80))} has a control character or a backslash`);
  if (raw.startsWith('/') || /^[A-Za-z]:/.test(raw)) return fail(`entry ${JSON.stringify(raw.slice(0, 80))} is an absolute path`);
  const parts = raw.replace(/\/$/, '').split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) return fail(`entry ${JSON.stringify(raw.slice(0, 80))} leaves the artifact's directory or is malformed`);
  return raw;
}

function fail(what: string): never {
  throw new InputError(what);
}

async function readAt(fh: import('node:fs/promises').FileHandle, at: number, length: number): Promise<Buffer> {
  const b = Buffer.alloc(length);
  const { bytesRead } = await fh.read(b, 0, length, at);
  if (bytesRead !== length) fail('the zip is truncated');
  return b;
}

/** The central directory: every entry's name, method, sizes and offset, checked. */
async function readDirectory(fh: import('node:fs/promises').FileHandle, size: number, l: ZipLimits): Promise<Entry[]> {
  if (size < 22) fail('not a zip (too short)');
  const tailLen = Math.min(size, 22 + 0xffff);
  const tail = await readAt(fh, size - tailLen, tailLen);
  let eocd = -1;
  for (let i = tailLen - 22; i >= 0; i--) if (tail.readUInt32LE(i) === SIG_EOCD) { eocd = i; break; }
  if (eocd < 0) fail('not a zip (no end of central directory)');
  const eocdAt = size - tailLen + eocd;
  if (tail.readUInt16LE(eocd + 4) !== 0 || tail.readUInt16LE(eocd + 6) !== 0) fail('multi-disk zips are not supported');
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  let cdEnd = eocdAt;
  if (count === U16 || cdSize === U32 || cdOffset === U32) {
    if (eocdAt < 20) fail('zip64 locator missing');
    const loc = await readAt(fh, eocdAt - 20, 20);
    if (loc.readUInt32LE(0) !== SIG_LOC64) fail('zip64 locator missing');
    const at64 = num(loc, 8, 8);
    if (at64 + 56 > eocdAt - 20) fail('zip64 record out of range');
    const r = await readAt(fh, at64, 56);
    if (r.readUInt32LE(0) !== SIG_EOCD64) fail('zip64 record missing');
    count = num(r, 32, 8);
    cdSize = num(r, 40, 8);
    cdOffset = num(r, 48, 8);
    cdEnd = at64;
  }
  if (count > l.maxEntries) fail(`the zip has ${count} entries; at most ${l.maxEntries}`);
  if (cdOffset + cdSize > cdEnd || cdSize > 64 * 1024 * 1024) fail('the central directory is out of range');
  const cd = await readAt(fh, cdOffset, cdSize);
  const entries: Entry[] = [];
  let p = 0;
  for (let n = 0; n < count; n++) {
    if (p + 46 > cd.length || cd.readUInt32LE(p) !== SIG_CEN) fail('the central directory is damaged');
    const madeBy = cd.readUInt16LE(p + 4);
    const flags = cd.readUInt16LE(p + 8);
    const method = cd.readUInt16LE(p + 10);
    const crc = cd.readUInt32LE(p + 16);
    let compressed = cd.readUInt32LE(p + 20);
    let size0 = cd.readUInt32LE(p + 24);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    const attrs = cd.readUInt32LE(p + 38);
    let localOffset = cd.readUInt32LE(p + 42);
    const end = p + 46 + nameLen + extraLen + commentLen;
    if (end > cd.length) fail('the central directory is damaged');
    const nameBuf = cd.subarray(p + 46, p + 46 + nameLen);
    const rawName = flags & 0x800 ? nameBuf.toString('utf8') : nameBuf.toString('latin1');
    // zip64 extra field: the 64-bit values, in this order, for the fields that are 0xffffffff.
    const extra = cd.subarray(p + 46 + nameLen, p + 46 + nameLen + extraLen);
    for (let e = 0; e + 4 <= extra.length; ) {
      const id = extra.readUInt16LE(e);
      const len = extra.readUInt16LE(e + 2);
      if (id === 0x0001) {
        let q = e + 4;
        const take = () => {
          if (q + 8 > e + 4 + len) fail('zip64 extra field too short');
          const v = num(extra, q, 8);
          q += 8;
          return v;
        };
        if (size0 === U32) size0 = take();
        if (compressed === U32) compressed = take();
        if (localOffset === U32) localOffset = take();
      }
      e += 4 + len;
    }
    if (flags & 0x41) fail(`entry ${JSON.stringify(rawName.slice(0, 80))} is encrypted`);
    const name = checkName(rawName);
    const dir = name.endsWith('/');
    // Unix file type in the upper half of the external attributes (made by a Unix host).
    if (madeBy >> 8 === 3) {
      const type = (attrs >>> 16) & 0o170000;
      if (type !== 0 && type !== 0o100000 && type !== 0o040000) fail(`entry ${JSON.stringify(name.slice(0, 80))} is not a regular file or directory (a symlink?)`);
      if (type === 0o040000 && !dir) fail(`entry ${JSON.stringify(name.slice(0, 80))} is a directory without a trailing slash`);
    }
    if (!dir && method !== 0 && method !== 8) fail(`entry ${JSON.stringify(name.slice(0, 80))} uses compression method ${method}; only stored and deflate are read`);
    if (!dir && method === 0 && compressed !== size0) fail(`entry ${JSON.stringify(name.slice(0, 80))} is stored but its sizes differ`);
    if (localOffset + 30 > cdOffset) fail(`entry ${JSON.stringify(name.slice(0, 80))} points outside the zip's data`);
    entries.push({ name, dir, method, crc, compressed, size: dir ? 0 : size0, localOffset });
    p = end;
  }
  return entries;
}

/** Counts, bounds and checksums one entry's inflated bytes as they stream. */
class Meter extends Transform {
  bytes = 0;
  crc = 0;
  constructor(private readonly limit: number, private readonly name: string) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) return cb(new InputError(`entry ${JSON.stringify(this.name.slice(0, 80))} inflates past its declared ${this.limit} bytes; refusing (zip bomb?)`));
    this.crc = crc32Update(this.crc, chunk);
    cb(null, chunk);
  }
}

export interface Extracted {
  files: number;
  bytes: number;
}

/**
 * Extracts `zipPath` into `dest` (which should be a fresh, empty directory). Throws an InputError
 * naming the problem; on failure, `dest` may hold some files and should be removed.
 */
export async function extractZip(zipPath: string, dest: string, limits: ZipLimits = DEFAULT_ZIP_LIMITS): Promise<Extracted> {
  const root = resolve(dest);
  const fh = await open(zipPath, 'r');
  let entries: Entry[];
  let size: number;
  try {
    size = (await fh.stat()).size;
    entries = await readDirectory(fh, size, limits);
    const declared = entries.reduce((a, e) => a + e.size, 0);
    const budget = inflateBudget(size, limits);
    if (declared > budget) {
      fail(`the artifact declares ${declared} bytes inflated from a ${size}-byte zip; at most ${budget} are allowed (zip bomb?)`);
    }
    // Where each entry's data starts: after its local header (whose name and extra lengths may
    // differ from the central directory's).
    for (const e of entries) {
      if (e.dir) continue;
      const h = await readAt(fh, e.localOffset, 30);
      if (h.readUInt32LE(0) !== SIG_LOC) fail(`entry ${JSON.stringify(e.name.slice(0, 80))} has no local header`);
      const start = e.localOffset + 30 + h.readUInt16LE(26) + h.readUInt16LE(28);
      if (start + e.compressed > size) fail(`entry ${JSON.stringify(e.name.slice(0, 80))} runs past the end of the zip`);
      (e as Entry & { start: number }).start = start;
    }
  } finally {
    await fh.close();
  }

  let bytes = 0;
  let files = 0;
  await mkdir(root, { recursive: true });
  for (const e of entries) {
    const out = resolve(root, e.name);
    if (out !== root && !out.startsWith(root + sep)) fail(`entry ${JSON.stringify(e.name.slice(0, 80))} leaves the artifact's directory`);
    if (e.dir) {
      await mkdir(out, { recursive: true });
      continue;
    }
    await mkdir(dirname(out), { recursive: true });
    const start = (e as Entry & { start: number }).start;
    const meter = new Meter(e.size, e.name);
    try {
      // 'wx': never overwrite (a duplicate entry name) and never follow a link.
      const sink = createWriteStream(out, { flags: 'wx' });
      if (e.compressed === 0) await pipeline(Readable.from([]), meter, sink);
      else {
        const src = createReadStream(zipPath, { start, end: start + e.compressed - 1 });
        if (e.method === 8) await pipeline(src, createInflateRaw(), meter, sink);
        else await pipeline(src, meter, sink);
      }
    } catch (err) {
      if (err instanceof InputError) throw err;
      const code = (err as NodeJS.ErrnoException)?.code;
      if (code === 'EEXIST') fail(`entry ${JSON.stringify(e.name.slice(0, 80))} appears twice`);
      fail(`entry ${JSON.stringify(e.name.slice(0, 80))} does not inflate (${(err as Error)?.message ?? err})`);
    }
    if (meter.bytes !== e.size) fail(`entry ${JSON.stringify(e.name.slice(0, 80))} inflated to ${meter.bytes} bytes, its header says ${e.size}`);
    if (meter.crc !== e.crc) fail(`entry ${JSON.stringify(e.name.slice(0, 80))} fails its CRC-32 check`);
    bytes += meter.bytes;
    files++;
  }
  return { files, bytes };
}
