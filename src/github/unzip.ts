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
import { mkdir } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createInflateRaw } from 'node:zlib';
import { InputError } from '../errors.ts';
import { crc32Update } from '../tensor/crc32.ts';
import { FileBytes } from '../tensor/bytes.ts';
import { readZipDirectory } from '../tensor/zip.ts';

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
  /** Where its data starts (after its local header). */
  start: number;
}

const SIG_LOC = 0x04034b50;

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

/** Every entry of the zip (the central directory read by tensor/zip.ts), checked, with where its data starts. */
function readEntries(zipPath: string, l: ZipLimits): { entries: Entry[]; size: number } {
  const src = new FileBytes(zipPath);
  try {
    const { entries: raw, cdOffset } = readZipDirectory(src, (what) => fail(`not a zip, or a damaged one: ${what}`), { maxEntries: l.maxEntries, maxDirectoryBytes: 64 * 1024 * 1024, singleDisk: true });
    const entries: Entry[] = [];
    for (const z of raw) {
      if (z.flags & 0x41) fail(`entry ${JSON.stringify(z.name.slice(0, 80))} is encrypted`);
      const name = checkName(z.name);
      const dir = name.endsWith('/');
      // Unix file type in the upper half of the external attributes (made by a Unix host).
      if (z.madeBy >> 8 === 3) {
        const type = (z.attrs >>> 16) & 0o170000;
        if (type !== 0 && type !== 0o100000 && type !== 0o040000) fail(`entry ${JSON.stringify(name.slice(0, 80))} is not a regular file or directory (a symlink?)`);
        if (type === 0o040000 && !dir) fail(`entry ${JSON.stringify(name.slice(0, 80))} is a directory without a trailing slash`);
      }
      if (!dir && z.method !== 0 && z.method !== 8) fail(`entry ${JSON.stringify(name.slice(0, 80))} uses compression method ${z.method}; only stored and deflate are read`);
      if (!dir && z.method === 0 && z.compressedSize !== z.size) fail(`entry ${JSON.stringify(name.slice(0, 80))} is stored but its sizes differ`);
      if (z.localHeaderOffset + 30 > cdOffset) fail(`entry ${JSON.stringify(name.slice(0, 80))} points outside the zip's data`);
      let start = 0;
      if (!dir) {
        // Its data starts after its local header, whose name and extra lengths may differ from the central directory's.
        const h = src.read(z.localHeaderOffset, 30);
        if (h.readUInt32LE(0) !== SIG_LOC) fail(`entry ${JSON.stringify(name.slice(0, 80))} has no local header`);
        start = z.localHeaderOffset + 30 + h.readUInt16LE(26) + h.readUInt16LE(28);
        if (start + z.compressedSize > src.size) fail(`entry ${JSON.stringify(name.slice(0, 80))} runs past the end of the zip`);
      }
      entries.push({ name, dir, method: z.method, crc: z.crc, compressed: z.compressedSize, size: dir ? 0 : z.size, localOffset: z.localHeaderOffset, start });
    }
    return { entries, size: src.size };
  } catch (e) {
    // A truncated read is the zip's fault: one line, as every other refusal here.
    if (e instanceof InputError && /truncated/.test(e.message)) fail('the zip is truncated');
    throw e;
  } finally {
    src.close();
  }
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

interface Extracted {
  files: number;
  bytes: number;
}

/**
 * Extracts `zipPath` into `dest` (which should be a fresh, empty directory). Throws an InputError
 * naming the problem; on failure, `dest` may hold some files and should be removed.
 */
export async function extractZip(zipPath: string, dest: string, limits: ZipLimits = DEFAULT_ZIP_LIMITS): Promise<Extracted> {
  const root = resolve(dest);
  const { entries, size } = readEntries(zipPath, limits);
  const declared = entries.reduce((a, e) => a + e.size, 0);
  const budget = inflateBudget(size, limits);
  if (declared > budget) {
    fail(`the artifact declares ${declared} bytes inflated from a ${size}-byte zip; at most ${budget} are allowed (zip bomb?)`);
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
    const start = e.start;
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
