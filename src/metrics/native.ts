// The native comparison engine: loads native/'s Node-API addon at run time (never bundled) and
// wraps it as a Kernel over the same Accumulator the TypeScript kernel fills.
//
// Where the addon is looked for, first hit wins:
//   $NPU_BLOCK_GATE_NATIVE (an explicit .node path: tests, the AddressSanitizer build)
//   <dir>/native/build/Release/npu_block_gate.node   built by `npm ci` / `npm run build:native`
//   <dir>/dist/native/npu_block_gate-linux-x64.node   the committed prebuilt (linux x64 only)
//   <dir>/native/npu_block_gate-linux-x64.node         the same, seen from the bundle in dist/
// for each <dir> from this module's directory up to the first one holding a package.json (the
// repo root under tsx, or the action's checkout from dist/). If none loads, the TypeScript
// engine runs and one warning line says why.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RawFile, RawRows } from '../tensor/types.ts';
import type { Accumulator, Kernel } from './accumulator.ts';
import { ENGINE_ENV, registerNativeKernel } from './engine.ts';

export const NATIVE_PATH_ENV = 'NPU_BLOCK_GATE_NATIVE';
/** Threads per block scan (0 or unset: min(cores, 4)); for benchmarks. */
const NATIVE_THREADS_ENV = 'NPU_BLOCK_GATE_THREADS';
/** Must equal kAbi in native/src/npu_block_gate.cc: a stale prebuilt is refused, not trusted. */
const NATIVE_ABI = 2;
const ADDON = 'npu_block_gate.node';
const PREBUILT = `npu_block_gate-${process.platform}-${process.arch}.node`;
const DTYPE_CODE = { f32: 0, f16: 1, bf16: 2 } as const;

interface Addon {
  abi: number;
  isa: string;
  scan(
    sync: boolean,
    rowDot: Float64Array,
    rowA2: Float64Array,
    rowB2: Float64Array,
    sums: Float64Array,
    nonFinite: Float64Array,
    npu: ArrayBufferView,
    npuDtype: number,
    ref: ArrayBufferView,
    refDtype: number,
    cols: number,
    start: number,
    count: number,
    real: number,
    threads: number,
    /** Both tensors 16-bit: the narrow mode (Accumulator.narrow); absent: false. */
    narrow?: boolean,
  ): Promise<void> | undefined;
  /** Absent from addons built before issue 30: then the TypeScript reference check runs. */
  refRows?(bytes: Uint8Array, dtype: number, cols: number, count: number, finiteOnly: boolean, out: Float64Array): void;
  /** Absent from addons built before it existed (and on Windows): then the block path runs. */
  scanFiles?(
    rowDot: Float64Array,
    rowA2: Float64Array,
    rowB2: Float64Array,
    sums: Float64Array,
    nonFinite: Float64Array,
    npuFd: number,
    npuOffset: number,
    npuDtype: number,
    refFd: number,
    refOffset: number,
    refDtype: number,
    cols: number,
    rows: number,
    real: number,
    threads: number,
    /** Scan on the calling thread and return. */
    sync: boolean,
    /** Both tensors 16-bit: the narrow mode (Accumulator.narrow). */
    narrow: boolean,
  ): Promise<void> | undefined;
}

/** At most this many NPU elements, a pair is scanned on the calling thread, synchronously: handing
 * it to the scanning threads (a wake, a thread-safe call back, a promise) costs more than the scan
 * of a few hundred KiB (issue 30: the per-pair fixed cost of small tensors). */
export const SYNC_MAX_ELEMENTS = 1 << 19;

export interface NativeKernel extends Kernel {
  readonly name: 'native';
  /** The file it was loaded from and the instruction set its hot loop picked (avx2 / sse2). */
  readonly path: string;
  readonly isa: string;
  readonly threads: number;
  readonly addon: Addon;
  /** The same addon with another thread count or block size, or without reading files itself (tests, benchmarks). */
  tuned(opts: { threads?: number; rawBlockBytes?: number; files?: boolean }): NativeKernel;
}

/** Candidate addon paths, most specific first (see the header comment). */
export function nativeCandidates(from: string = dirname(fileURLToPath(import.meta.url)), env: NodeJS.ProcessEnv = process.env): string[] {
  const explicit = env[NATIVE_PATH_ENV]?.trim();
  if (explicit) return [explicit];
  const dirs: string[] = [];
  for (let dir = from; ; ) {
    dirs.push(dir);
    if (existsSync(join(dir, 'package.json'))) break;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  const built = dirs.map((d) => join(d, 'native', 'build', 'Release', ADDON));
  const prebuilt =
    process.platform === 'linux' && process.arch === 'x64'
      ? dirs.flatMap((d) => [join(d, 'dist', 'native', PREBUILT), join(d, 'native', PREBUILT)])
      : [];
  return [...built, ...prebuilt];
}

function threadsFrom(env: NodeJS.ProcessEnv): number {
  const n = Number(env[NATIVE_THREADS_ENV] ?? 0);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 64) : 0;
}

function realRows(acc: Accumulator, start: number, count: number): number {
  return Math.max(0, Math.min(count, acc.realLen - start));
}

export function nativeKernel(addon: Addon, path: string, threads = 0, rawBlockBytes = 4 << 20, files = true): NativeKernel {
  const scanFiles = files && typeof addon.scanFiles === 'function' ? addon.scanFiles.bind(addon) : null;
  return {
    name: 'native',
    path,
    isa: addon.isa,
    threads,
    addon,
    rawBlockBytes,
    tuned: (o) => nativeKernel(addon, path, o.threads ?? threads, o.rawBlockBytes ?? rawBlockBytes, o.files ?? files),
    ...(typeof addon.refRows === 'function' && {
      refRows: (bytes: Uint8Array, dtype: RawRows['dtype'], cols: number, count: number, finiteOnly: boolean, out: Float64Array) =>
        addon.refRows!(bytes, DTYPE_CODE[dtype], cols, count, finiteOnly, out),
    }),
    ...(scanFiles && {
      async scanFiles(acc: Accumulator, npu: RawFile, ref: RawFile): Promise<void> {
        const { rowDot, rowA2, rowB2, sums, nonFinite, cols, npuRows, realLen } = acc;
        const sync = npuRows * cols <= SYNC_MAX_ELEMENTS;
        await scanFiles(rowDot, rowA2, rowB2, sums, nonFinite, npu.fd, npu.offset, DTYPE_CODE[npu.dtype], ref.fd, ref.offset, DTYPE_CODE[ref.dtype], cols, npuRows, realLen, sync ? 1 : threads, sync, acc.narrow);
        acc.rowsScanned = npuRows;
      },
    }),
    scanBlock(acc: Accumulator, npu: Float32Array, ref: Float32Array, start: number, count: number): void {
      const real = realRows(acc, start, count);
      addon.scan(true, acc.rowDot, acc.rowA2, acc.rowB2, acc.sums, acc.nonFinite, npu, 0, ref, 0, acc.cols, start, count, real, threads, acc.narrow);
      acc.rowsScanned = start + count;
    },
    async scanRawBlock(acc: Accumulator, npu: RawRows, ref: RawRows, start: number, count: number): Promise<void> {
      const real = realRows(acc, start, count);
      await addon.scan(
        false,
        acc.rowDot,
        acc.rowA2,
        acc.rowB2,
        acc.sums,
        acc.nonFinite,
        npu.bytes,
        DTYPE_CODE[npu.dtype],
        ref.bytes,
        DTYPE_CODE[ref.dtype],
        acc.cols,
        start,
        count,
        real,
        threads,
        acc.narrow,
      );
      acc.rowsScanned = start + count;
    },
  };
}

type LoadResult = { kernel: NativeKernel; reason?: undefined } | { kernel: null; reason: string };

/** Try each candidate; never throws. `reason` says why nothing loaded. */
export function tryLoadNative(candidates: string[], env: NodeJS.ProcessEnv = process.env): LoadResult {
  const require = createRequire(import.meta.url);
  const problems: string[] = [];
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    try {
      const addon = require(path) as Addon;
      if (addon?.abi !== NATIVE_ABI || typeof addon.scan !== 'function') {
        problems.push(`${path} is stale (ABI ${String(addon?.abi)}, expected ${NATIVE_ABI})`);
        continue;
      }
      return { kernel: nativeKernel(addon, path, threadsFrom(env)) };
    } catch (err) {
      const first = String((err as Error)?.message ?? err).split('\n')[0].trim();
      problems.push(`${path}: ${first}`);
    }
  }
  if (problems.length) return { kernel: null, reason: problems.join('; ') };
  return { kernel: null, reason: `no addon found (looked for ${candidates.join(', ') || 'nothing'})` };
}

export function warningLine(reason: string): string {
  return `npu-block-gate: warning: native engine unavailable (${reason}); using the TypeScript engine`;
}

let loaded: LoadResult | null = null;

/**
 * The loader registered with the engine seam: loads once per process; on failure prints one
 * warning line to stderr (none when NPU_BLOCK_GATE_ENGINE=js) and returns null.
 */
export function loadNativeKernel(
  env: NodeJS.ProcessEnv = process.env,
  warn: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): NativeKernel | null {
  if (!loaded) {
    loaded = tryLoadNative(nativeCandidates(undefined, env), env);
    const want = (env[ENGINE_ENV] ?? '').trim().toLowerCase();
    if (!loaded.kernel && want !== 'js') warn(warningLine(loaded.reason));
  }
  return loaded.kernel;
}

registerNativeKernel(() => loadNativeKernel());
