// compare(): stream both tensors in row blocks through the selected kernel, then finalize.
import { InputError, oneLine } from '../errors.ts';
import { decodeInto } from '../tensor/dtype.ts';
import type { RawRows, TensorSource } from '../tensor/types.ts';
import { createAccumulator, type Accumulator, type Kernel } from './accumulator.ts';
import { selectEngine } from './engine.ts';
import { finalize, finalizeComparison } from './finalize.ts';
// Registers the native addon's loader with the engine seam (loaded lazily, on first selectEngine).
import './native.ts';
import type { CompareOptions, Comparison, Metrics } from './types.ts';

export type * from './types.ts';
export { createAccumulator, NF, SUM, type Accumulator, type Kernel } from './accumulator.ts';
export { jsKernel, REL_FLOOR } from './kernel-js.ts';
export { ENGINE_ENV, registerNativeKernel, selectEngine } from './engine.ts';
export { loadNativeKernel, NATIVE_PATH_ENV, nativeCandidates, nativeKernel } from './native.ts';
export { DEFAULT_WORST_K, finalize, finalizeComparison, findBadRuns, rowCosine, worstRows } from './finalize.ts';
export { percentile, summarize } from './stats.ts';
export { comparisonOf, lowestCosine, nonFiniteTotal } from './summary.ts';
export { fromJsonSafe, metricsFromJson, metricsToJson, toJsonSafe, type JsonSafe, type MetricsJson } from './json.ts';

const BLOCK_ROWS = 256;

/** Check the pair before reading a byte of payload; every message names the file(s). */
function validatePair(npu: TensorSource, ref: TensorSource, realLenOpt?: number): number {
  if (npu.cols !== ref.cols) {
    throw new InputError(`${npu.cols} columns per row but the reference ${ref.path} has ${ref.cols}`, npu.path);
  }
  if (ref.rows > npu.rows) {
    throw new InputError(`reference has ${ref.rows} rows, more than the ${npu.rows} of the NPU tensor ${npu.path}`, ref.path);
  }
  const realLen = realLenOpt ?? ref.rows;
  if (!Number.isInteger(realLen) || realLen < 1) {
    throw new InputError(`real length must be a positive whole number of rows, got ${realLen} (comparing ${npu.path})`, ref.path);
  }
  if (realLen > ref.rows) throw new InputError(`real length ${realLen} exceeds the reference's ${ref.rows} rows`, ref.path);
  if (realLen > npu.rows) throw new InputError(`real length ${realLen} exceeds the NPU tensor's ${npu.rows} rows`, npu.path);
  return realLen;
}

/**
 * Compare the first realLen rows of `npu` against `ref` and scan every NPU row for NaN/Inf.
 * The caller owns both sources (opens and closes them). `kernel` defaults to selectEngine().
 */
export async function compare(
  npu: TensorSource,
  ref: TensorSource,
  opts: CompareOptions,
  kernel: Kernel = selectEngine(),
): Promise<Metrics> {
  const acc = await scanPair(npu, ref, opts.realLen, kernel);
  return finalize(acc, { threshold: opts.threshold, worstK: opts.worstK, engine: kernel.name });
}

/**
 * compare() cut down to a table row: comparisonOf(await compare(...)), bit for bit, finalizing
 * only what the row shows (the per-layer table, the bisect steps).
 */
export async function compareSummary(
  npu: TensorSource,
  ref: TensorSource,
  opts: Pick<CompareOptions, 'realLen'> = {},
  kernel: Kernel = selectEngine(),
): Promise<Comparison> {
  return finalizeComparison(await scanPair(npu, ref, opts.realLen, kernel));
}

/** Both tensors streamed through the kernel: the accumulator, before anything is finalized. */
async function scanPair(npu: TensorSource, ref: TensorSource, realLenOpt: number | undefined, kernel: Kernel): Promise<Accumulator> {
  const realLen = validatePair(npu, ref, realLenOpt);
  // 16-bit on both sides (as stored, whatever the reader hands over): the narrow mode.
  const acc = createAccumulator(npu.cols, realLen, npu.rows, npu.dtype !== 'f32' && ref.dtype !== 'f32');
  const files = kernel.scanFiles ? [npu.rawFile?.(), ref.rawFile?.()] : [];
  if (kernel.scanFiles && files[0] && files[1]) {
    try {
      await kernel.scanFiles(acc, files[0], files[1]);
    } catch (err) {
      const msg = oneLine(err);
      if (msg.startsWith('ref: ')) throw new InputError(msg.slice(5), ref.path);
      throw new InputError(msg.replace(/^npu: /, ''), npu.path);
    }
    return acc;
  }
  if (kernel.scanRawBlock) {
    await scanRaw(kernel, acc, npu, ref);
    return acc;
  }
  const empty = new Float32Array(0);
  // Pooled buffers (payload bytes and decoded float32 per tensor): a fresh allocation per block
  // would cost more than the scan and leave garbage piling up between collections.
  const blockBytes = Math.min(BLOCK_ROWS, npu.rows) * acc.cols * 4;
  const bufs = [takeBuffer(blockBytes), takeBuffer(blockBytes), takeBuffer(blockBytes), takeBuffer(blockBytes)];
  try {
    for (let start = 0; start < npu.rows; start += BLOCK_ROWS) {
      const count = Math.min(BLOCK_ROWS, npu.rows - start);
      const real = Math.max(0, Math.min(count, realLen - start));
      const a = f32Rows(npu, start, count, bufs[0], bufs[1]);
      const b = real > 0 ? f32Rows(ref, start, real, bufs[2], bufs[3]) : empty;
      kernel.scanBlock(acc, a, b, start, count);
      // Let timers and signals run during a long comparison (multi-GB tensors take seconds).
      if ((start / BLOCK_ROWS) % 16 === 15) await new Promise((r) => setImmediate(r));
    }
  } finally {
    giveBack(bufs);
  }
  return acc;
}

/** Default bytes per tensor per block on the raw path: large enough to amortise a call, small
 * enough that two blocks of a pair in flight stay far below one layer's pair. */
const RAW_BLOCK_BYTES = 4 << 20;

const EMPTY_RAW: RawRows = { dtype: 'f32', bytes: new Uint8Array(0) };

/**
 * Block buffers kept between compare() calls: judging layer after layer reuses the same pages
 * instead of faulting in (and zeroing) fresh ones for every block, which costs more than the scan.
 * A call takes buffers out and puts them back when done, so concurrent calls never share one.
 */
const bufferPool: Uint8Array[] = [];
const POOL_MAX = 8;

function takeBuffer(bytes: number): Uint8Array {
  const i = bufferPool.findIndex((b) => b.length >= bytes);
  if (i >= 0) return bufferPool.splice(i, 1)[0];
  return new Uint8Array(bytes);
}

function giveBack(bufs: Uint8Array[]): void {
  // Keep the largest: a pool of small buffers would make every bigger block allocate afresh.
  bufferPool.push(...bufs);
  bufferPool.sort((x, y) => y.length - x.length);
  bufferPool.length = Math.min(bufferPool.length, POOL_MAX);
}

/** The undecoded rows when the source has them, else the converted float32 rows as f32 bytes. */
function rawRows(src: TensorSource, start: number, count: number, into: Uint8Array): RawRows {
  const raw = src.readRawRows?.(start, count, into);
  if (raw) return raw;
  const f = src.readRows(start, count);
  return { dtype: 'f32', bytes: new Uint8Array(f.buffer, f.byteOffset, f.byteLength) };
}

/**
 * Rows as float32 for scanBlock: through readRawRows into `raw` when the source has it (f32
 * payloads are then used in place, f16/bf16 widened into `wide`), else readRows.
 */
function f32Rows(src: TensorSource, start: number, count: number, raw: Uint8Array, wide: Uint8Array): Float32Array {
  const got = src.readRawRows?.(start, count, raw);
  if (!got) return src.readRows(start, count);
  const n = count * src.cols;
  if (got.dtype === 'f32' && got.bytes.byteOffset % 4 === 0) return new Float32Array(got.bytes.buffer, got.bytes.byteOffset, n);
  const out = new Float32Array(wide.buffer, wide.byteOffset, n);
  decodeInto(got.bytes, got.dtype, 'le', out, 0, n);
  return out;
}

/** Raw path: read block n + 1 (synchronously, on this thread) while block n is scanned off-thread. */
async function scanRaw(kernel: Kernel, acc: Accumulator, npu: TensorSource, ref: TensorSource): Promise<void> {
  const rowsPer = Math.max(1, Math.floor((kernel.rawBlockBytes ?? RAW_BLOCK_BYTES) / (acc.cols * 4)));
  const blockBytes = Math.min(rowsPer, npu.rows) * acc.cols * 4;
  // Two buffers per tensor: one being scanned, one being filled.
  const bufs = [takeBuffer(blockBytes), takeBuffer(blockBytes), takeBuffer(blockBytes), takeBuffer(blockBytes)];
  let flip = 0;
  const read = (start: number) => {
    const count = Math.min(rowsPer, npu.rows - start);
    const real = Math.max(0, Math.min(count, acc.realLen - start));
    const a = rawRows(npu, start, count, bufs[flip]);
    const b = real > 0 ? rawRows(ref, start, real, bufs[flip + 2]) : EMPTY_RAW;
    flip ^= 1;
    return { start, count, a, b };
  };
  try {
    let cur = read(0);
    for (;;) {
      const scanning = kernel.scanRawBlock!(acc, cur.a, cur.b, cur.start, cur.count);
      const nextStart = cur.start + cur.count;
      let next: ReturnType<typeof read> | null = null;
      try {
        next = nextStart < npu.rows ? read(nextStart) : null;
      } catch (err) {
        await scanning.catch(() => {});
        throw err;
      }
      await scanning;
      if (!next) return;
      cur = next;
    }
  } finally {
    giveBack(bufs);
  }
}
