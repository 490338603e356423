// One suite over both comparison engines: the TypeScript twin and the native addon must give
// the same numbers, bit for bit (per-row and aggregate numbers, non-finite counts and first
// positions), on the raw-payload path and the float32 path, for every dtype pairing and every
// native loop (NPU_BLOCK_GATE_ISA=sse2|avx2 caps the one the addon picks; native/asan.sh runs
// this file under each).
// Random cases come from a seeded generator (mulberry32): no extra dependency, and a failure
// prints the seed and case that reproduce it.
import { spawnSync } from 'node:child_process';
import { truncateSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test, skip } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { InfraError, InputError } from '../src/errors.ts';
import {
  compare,
  createAccumulator,
  jsKernel,
  type Kernel,
  type Metrics,
} from '../src/metrics/index.ts';
import { nativeCandidates, tryLoadNative, warningLine, type NativeKernel } from '../src/metrics/native.ts';
import { bf16ToF32, f16ToF32, openTensor, type DType, type TensorSource } from '../src/tensor/index.ts';
import { npyBytes, npyHeader, safetensorsBytes } from './helpers/bytes.ts';
import { memTensor } from './helpers/mem-tensor.ts';
import { tempDir } from './helpers/tmp.ts';

const loaded = tryLoadNative(nativeCandidates());
const native: NativeKernel | null = loaded.kernel;
if (native) console.log(`engines.test: native addon ${native.path} (${native.isa})`);
/** The tests only the addon can run skip without it (the others still check the TypeScript engine). */
function noNative(): never {
  skip('native', `native addon unavailable (${loaded.reason}); npm run build:native`);
}

/** The native kernel without its raw path: exercises scanBlock over TS-widened float32 rows. */
const nativeF32: Kernel | null = native ? { name: 'native', scanBlock: native.scanBlock } : null;
const engines: Kernel[] = native ? [jsKernel, native] : [jsKernel];

// ---- a seeded generator ----

function mulberry32(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
type Rng = ReturnType<typeof mulberry32>;
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];
const int = (rng: Rng, lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));

const f32u = new Float32Array(1);
const u32f = new Uint32Array(f32u.buffer);
const f32Bits = (x: number) => {
  f32u[0] = x;
  return u32f[0];
};

/** Element bit patterns: f32 as u32, f16/bf16 as u16. */
const SPECIAL = {
  f32: { nan: 0x7fc00000, pos: 0x7f800000, neg: 0xff800000, zero: 0, negZero: 0x80000000 },
  f16: { nan: 0x7e00, pos: 0x7c00, neg: 0xfc00, zero: 0, negZero: 0x8000 },
  bf16: { nan: 0x7fc0, pos: 0x7f80, neg: 0xff80, zero: 0, negZero: 0x8000 },
} as const;

function randomBits(rng: Rng, dtype: DType, scale: number): number {
  if (dtype === 'f16') {
    // Any finite half: sign, exponent 0..30 (0 = zero/subnormal), any mantissa; scale picks the range.
    const e = Math.max(0, Math.min(30, Math.round(15 + Math.log2(scale) + (rng() * 6 - 3))));
    return (rng() < 0.5 ? 0x8000 : 0) | (e << 10) | int(rng, 0, 1023);
  }
  const x = (rng() * 2 - 1) * scale;
  const u = f32Bits(x);
  return dtype === 'f32' ? u : u >>> 16;
}

function decode(bits: number, dtype: DType): number {
  if (dtype === 'f32') {
    u32f[0] = bits;
    return f32u[0];
  }
  return dtype === 'f16' ? f16ToF32(bits) : bf16ToF32(bits);
}

interface Tensor {
  dtype: DType;
  rows: number;
  cols: number;
  bits: Uint32Array;
}

type Layout = 'npy' | 'npy-be' | 'npy-fortran' | 'safetensors';

function payload(t: Tensor, bigEndian: boolean, fortran: boolean): Buffer {
  const item = t.dtype === 'f32' ? 4 : 2;
  const buf = Buffer.alloc(t.rows * t.cols * item);
  for (let r = 0; r < t.rows; r++) {
    for (let c = 0; c < t.cols; c++) {
      const i = fortran ? c * t.rows + r : r * t.cols + c;
      const v = t.bits[r * t.cols + c];
      if (item === 4) bigEndian ? buf.writeUInt32BE(v, i * 4) : buf.writeUInt32LE(v, i * 4);
      else bigEndian ? buf.writeUInt16BE(v, i * 2) : buf.writeUInt16LE(v, i * 2);
    }
  }
  return buf;
}

function writeTensor(path: string, t: Tensor, layout: Layout): string {
  const descr = { f32: 'f4', f16: 'f2', bf16: 'u2' }[t.dtype];
  if (layout === 'safetensors') {
    const file = `${path}.safetensors`;
    const dtype = { f32: 'F32', f16: 'F16', bf16: 'BF16' }[t.dtype];
    writeFileSync(file, safetensorsBytes({ t: { dtype, shape: [t.rows, t.cols], data: payload(t, false, false) } }));
    return file;
  }
  const be = layout === 'npy-be';
  const fortran = layout === 'npy-fortran';
  const file = `${path}.npy`;
  writeFileSync(file, npyBytes(npyHeader(`${be ? '>' : '<'}${descr}`, [t.rows, t.cols], fortran), payload(t, be, fortran)));
  return file;
}

const open = (file: string): TensorSource => openTensor(file, { u2IsBf16: true });

// ---- comparing results ----

function close(a: number, b: number, rel: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (a === b) return true;
  return Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b));
}

/** Every number identical (NaN only against NaN; 0 and -0 apart), everything else equal; engine ignored. */
function sameMetrics(a: Metrics, b: Metrics, what: string): void {
  const walk = (x: unknown, y: unknown, path: string) => {
    if (path === '.engine') return;
    if (typeof x === 'number' && typeof y === 'number') {
      if (!Object.is(x, y)) assert.unreachable(`${what}: ${path} ${x} != ${y}`);
      return;
    }
    if (x && y && typeof x === 'object' && typeof y === 'object') {
      const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
      for (const k of keys) walk((x as any)[k], (y as any)[k], `${path}.${k}`);
      return;
    }
    if (x !== y) assert.unreachable(`${what}: ${path} ${String(x)} != ${String(y)}`);
  };
  walk(a, b, '');
  // Non-finite counts and first positions: exactly.
  assert.equal(a.nonFinite, b.nonFinite, `${what}: non-finite`);
}

/** Straight double-precision definitions over the decoded values: an independent check. */
function naive(npu: Tensor, ref: Tensor, realLen: number) {
  const cols = npu.cols;
  const nf = { nan: { count: 0, first: null as null | { row: number; col: number } }, posInf: { count: 0, first: null as any }, negInf: { count: 0, first: null as any } };
  const cos: number[] = [];
  let absErr = 0;
  let n = 0;
  for (let r = 0; r < npu.rows; r++) {
    let dot = 0;
    let a2 = 0;
    let b2 = 0;
    for (let c = 0; c < cols; c++) {
      const a = decode(npu.bits[r * cols + c], npu.dtype);
      if (!Number.isFinite(a)) {
        const k = Number.isNaN(a) ? nf.nan : a > 0 ? nf.posInf : nf.negInf;
        if (k.count++ === 0) k.first = { row: r, col: c };
      }
      if (r < realLen) {
        const b = decode(ref.bits[r * cols + c], ref.dtype);
        dot += a * b;
        a2 += a * a;
        b2 += b * b;
        absErr += Math.abs(a - b);
        n++;
      }
    }
    if (r < realLen) cos.push(Number.isNaN(dot + a2 + b2) ? NaN : a2 === 0 || b2 === 0 ? 0 : dot / Math.sqrt(a2 * b2));
  }
  return { nf, cos, meanAbs: absErr / n };
}

// ---- random cases ----

interface Case {
  npu: Tensor;
  ref: Tensor;
  realLen?: number;
  npuLayout: Layout;
  refLayout: Layout;
}

function randomCase(rng: Rng): Case {
  const realLen = int(rng, 1, 24);
  const refRows = realLen + (rng() < 0.3 ? int(rng, 1, 3) : 0);
  const npuRows = refRows + (rng() < 0.4 ? int(rng, 1, 5) : 0); // padded NPU rows
  const cols = rng() < 0.5 ? pick(rng, [1, 2, 3, 4, 5, 7, 8, 9, 16, 63, 64, 65]) : int(rng, 1, 130);
  const dtypes: DType[] = ['f32', 'f16', 'bf16'];
  const npuType = pick(rng, dtypes);
  const refType = rng() < 0.4 ? npuType : pick(rng, dtypes);
  const make = (dtype: DType, rows: number): Tensor => ({ dtype, rows, cols, bits: new Uint32Array(rows * cols) });
  const npu = make(npuType, npuRows);
  const ref = make(refType, refRows);
  for (let r = 0; r < npuRows; r++) {
    const scale = pick(rng, [1, 1, 1, 1e-3, 30, 1e-6]);
    const kind = rng();
    for (let c = 0; c < cols; c++) {
      const i = r * cols + c;
      if (r < refRows) ref.bits[i] = randomBits(rng, refType, scale);
      if (kind < 0.1) npu.bits[i] = SPECIAL[npuType].zero; // an unwritten NPU row
      else if (kind < 0.15 && r < refRows) npu.bits[i] = npuType === refType ? ref.bits[i] : randomBits(rng, npuType, scale);
      else npu.bits[i] = randomBits(rng, npuType, scale);
      if (kind > 0.93 && r < refRows) ref.bits[i] = SPECIAL[refType].zero; // an all-zero reference row
    }
  }
  // NaN / +Inf / -Inf / -0 sprinkled anywhere in the NPU tensor (padded rows included), rarely in the reference.
  const sprinkles = rng() < 0.5 ? int(rng, 1, 6) : 0;
  for (let s = 0; s < sprinkles; s++) {
    const i = int(rng, 0, npu.bits.length - 1);
    npu.bits[i] = SPECIAL[npuType][pick(rng, ['nan', 'pos', 'neg', 'negZero'] as const)];
  }
  if (rng() < 0.1) ref.bits[int(rng, 0, ref.bits.length - 1)] = SPECIAL[refType][pick(rng, ['nan', 'pos', 'neg'] as const)];
  const layouts: Layout[] = ['npy', 'npy', 'npy', 'safetensors', 'npy-be', 'npy-fortran'];
  return {
    npu,
    ref,
    realLen: rng() < 0.5 ? realLen : refRows === realLen ? undefined : realLen,
    npuLayout: pick(rng, layouts),
    refLayout: pick(rng, layouts),
  };
}

async function runAll(c: Case, dir: { path: (n: string) => string }, id: string, rng: Rng) {
  const npuFile = writeTensor(dir.path(`npu${id}`), c.npu, c.npuLayout);
  const refFile = writeTensor(dir.path(`ref${id}`), c.ref, c.refLayout);
  const opts = { threshold: 0.99, realLen: c.realLen, worstK: 3 };
  const run = async (k: Kernel) => {
    const a = open(npuFile);
    const b = open(refFile);
    try {
      return await compare(a, b, opts, k);
    } finally {
      a.close();
      b.close();
    }
  };
  const out: Record<string, Metrics> = { js: await run(jsKernel) };
  if (native) {
    // Tiny blocks and several threads, so block and thread seams fall inside the tensor.
    const rowBytes = c.npu.cols * 4;
    // The addon reading the files itself (plain little-endian C-order files; the others fall
    // back to blocks), the block path fed by TypeScript reads, and the float32 path.
    out.native = await run(native.tuned({ threads: int(rng, 1, 4) }));
    out.nativeBlocks = await run(native.tuned({ files: false, threads: int(rng, 1, 4), rawBlockBytes: rowBytes * int(rng, 1, 7) }));
    out.nativeF32 = await run(nativeF32!);
  }
  return out;
}

const SEED = Number(process.env.ENGINES_SEED ?? 20240611);

test(`property: engines agree on random shapes, dtypes, layouts, zero rows, NaN/Inf and padding (seed ${SEED})`, async () => {
  const rng = mulberry32(SEED);
  const dir = tempDir();
  try {
    for (let i = 0; i < 150; i++) {
      const c = randomCase(rng);
      const what = `seed ${SEED} case ${i}: npu ${c.npu.dtype}[${c.npu.rows}x${c.npu.cols}] ${c.npuLayout}, ref ${c.ref.dtype}[${c.ref.rows}] ${c.refLayout}, realLen ${c.realLen}`;
      const m = await runAll(c, dir, String(i), rng);
      assert.is(m.js.engine, 'js');
      const realLen = c.realLen ?? c.ref.rows;
      // Against the plain definitions, for the twin (and through sameMetrics, for native).
      const want = naive(c.npu, c.ref, realLen);
      // Two 16-bit tensors: the narrow mode's float32 sums, within the bound test/metrics-narrow.test.ts
      // proves (|cosine| 2.5e-6, sums 2e-6 relative); float64 otherwise, to rounding.
      const narrow = c.npu.dtype !== 'f32' && c.ref.dtype !== 'f32';
      assert.equal(m.js.nonFinite.nan, want.nf.nan, `${what}: NaN`);
      assert.equal(m.js.nonFinite.posInf, want.nf.posInf, `${what}: +Inf`);
      assert.equal(m.js.nonFinite.negInf, want.nf.negInf, `${what}: -Inf`);
      assert.is(m.js.nonFinite.rowsScanned, c.npu.rows);
      want.cos.forEach((x, r) => {
        const got = m.js.perPosition.cosines[r];
        if (!(Number.isNaN(x) ? Number.isNaN(got) : Math.abs(got - x) <= (narrow ? 2.5e-6 : 1e-12))) assert.unreachable(`${what}: row ${r} cosine ${got} != ${x}`);
      });
      if (!close(m.js.errors.meanAbs, want.meanAbs, narrow ? 2e-6 : 1e-12) && !(want.meanAbs === Infinity)) {
        assert.unreachable(`${what}: meanAbs ${m.js.errors.meanAbs} != ${want.meanAbs}`);
      }
      if (native) {
        assert.is(m.native.engine, 'native');
        sameMetrics(m.js, m.native, `${what} [native files]`);
        sameMetrics(m.js, m.nativeBlocks, `${what} [native blocks]`);
        sameMetrics(m.js, m.nativeF32, `${what} [native f32]`);
      }
    }
  } finally {
    dir.cleanup();
  }
});

for (const k of engines) {
  test(`${k.name}: identical rows, zero rows, known values`, async () => {
    const m = await compare(memTensor([[1, 2, 3, 4, 5], [0, 0, 0, 0, 0], [3, 0, 0, 0, 4]]), memTensor([[1, 2, 3, 4, 5], [1, 1, 1, 1, 1], [3, 0, 0, 0, -4]]), { threshold: 0.99 }, k);
    assert.is(m.engine, k.name);
    assert.equal(m.perPosition.cosines, [1, 0, (9 - 16) / 25]);
    assert.equal(m.perPosition.zeroRows, [1]);
    assert.is(m.errors.maxAbs, 8);
    assert.is(m.errors.meanAbs, (5 + 8) / 15);
  });

  test(`${k.name}: non-finite counts and first positions, padded rows included`, async () => {
    const npu = [
      [1, NaN, 3],
      [-Infinity, 2, NaN],
      [1, 1, 1],
      [Infinity, 0, -Infinity], // padded: scanned for NaN/Inf only
    ];
    const m = await compare(memTensor(npu), memTensor([[1, 2, 3], [1, 2, 3]]), { threshold: 0.99 }, k);
    assert.equal(m.nonFinite.nan, { count: 2, first: { row: 0, col: 1 } });
    assert.equal(m.nonFinite.posInf, { count: 1, first: { row: 3, col: 0 } });
    assert.equal(m.nonFinite.negInf, { count: 2, first: { row: 1, col: 0 } });
    assert.is(m.nonFinite.rowsScanned, 4);
    assert.ok(Number.isNaN(m.perPosition.cosines[0]));
    assert.ok(Number.isNaN(m.errors.maxAbs));
  });

  test(`${k.name}: bad input is an InputError naming the file (exit 2)`, async () => {
    const dir = tempDir();
    try {
      const bad = async (p: Promise<unknown>, re: RegExp) => {
        try {
          await p;
        } catch (e) {
          assert.ok(e instanceof InputError, String(e));
          assert.is((e as InputError).exitCode, 2);
          assert.match((e as Error).message, re);
          assert.not.match((e as Error).message, /\n/);
          return;
        }
        assert.unreachable('no error');
      };
      await bad(compare(memTensor([[1, 2, 3]], 'npu.npy'), memTensor([[1, 2]], 'ref.npy'), { threshold: 0.9 }, k), /npu\.npy.*ref\.npy/);
      await bad(compare(memTensor([[1, 2]], 'npu.npy'), memTensor([[1, 2], [3, 4]], 'ref.npy'), { threshold: 0.9 }, k), /ref\.npy/);
      const odd = dir.path('odd.npy');
      writeFileSync(odd, npyBytes(npyHeader('<u2', [2, 3]), Buffer.alloc(13)));
      await bad((async () => open(odd))(), /odd\.npy.*payload is 13 bytes/);
      const zero = dir.path('zero.npy');
      writeFileSync(zero, npyBytes(npyHeader('<f4', [0, 4]), Buffer.alloc(0)));
      await bad((async () => open(zero))(), /zero\.npy.*zero-length/);
      const ints = dir.path('ints.npy');
      writeFileSync(ints, npyBytes(npyHeader('<i4', [2, 2]), Buffer.alloc(16)));
      await bad((async () => open(ints))(), /ints\.npy.*dtype/);
    } finally {
      dir.cleanup();
    }
  });
}

test('mixed dtypes: bf16 NPU against f32 reference, big-endian and fortran files converted', async () => {
  const rng = mulberry32(7);
  const dir = tempDir();
  try {
    for (const [npuLayout, refLayout] of [['npy', 'npy'], ['npy-be', 'npy'], ['npy', 'npy-fortran'], ['safetensors', 'npy-be']] as const) {
      const rows = 9;
      const cols = 37;
      const ref: Tensor = { dtype: 'f32', rows, cols, bits: new Uint32Array(rows * cols) };
      const npu: Tensor = { dtype: 'bf16', rows, cols, bits: new Uint32Array(rows * cols) };
      for (let i = 0; i < rows * cols; i++) {
        const x = rng() * 2 - 1;
        ref.bits[i] = f32Bits(x);
        npu.bits[i] = f32Bits(x * 1.01) >>> 16; // bf16 truncation of a slightly scaled value
      }
      const m = await runAll({ npu, ref, npuLayout, refLayout }, dir, `${npuLayout}-${refLayout}`, rng);
      const want = naive(npu, ref, rows);
      want.cos.forEach((x, r) => assert.ok(Math.abs(m.js.perPosition.cosines[r] - x) <= 1e-12, `row ${r}`));
      assert.ok(m.js.wholeCosine > 0.99 && m.js.wholeCosine < 1);
      if (native) {
        sameMetrics(m.js, m.native, `${npuLayout}/${refLayout} files`);
        sameMetrics(m.js, m.nativeBlocks, `${npuLayout}/${refLayout} blocks`);
        sameMetrics(m.js, m.nativeF32, `${npuLayout}/${refLayout} f32`);
      }
    }
  } finally {
    dir.cleanup();
  }
});

test('native: rows split over threads combine to the same sums and first positions', async () => {
  if (!native) noNative();
  const rows = 700;
  const cols = 1024; // 716,800 elements: three threads with the auto split
  const rng = mulberry32(99);
  const npu = Array.from({ length: rows + 20 }, () => Array.from({ length: cols }, () => rng() * 2 - 1));
  const ref = Array.from({ length: rows }, (_, r) => npu[r].map((x) => x + (rng() - 0.5) * 1e-3));
  npu[650][3] = NaN; // in the last thread's rows: must not win over the earlier one
  npu[400][1000] = NaN;
  npu[710][5] = Infinity; // padded
  npu[299][0] = -Infinity;
  const js = await compare(memTensor(npu), memTensor(ref), { threshold: 0.99 }, jsKernel);
  const dir = tempDir();
  try {
    const toFile = (rows: number[][], name: string) => {
      const t: Tensor = { dtype: 'f32', rows: rows.length, cols, bits: new Uint32Array(rows.length * cols) };
      rows.forEach((row, r) => row.forEach((x, c) => (t.bits[r * cols + c] = f32Bits(x))));
      return writeTensor(dir.path(name), t, 'npy');
    };
    const npuFile = toFile(npu, 'npu');
    const refFile = toFile(ref, 'ref');
    for (const threads of [1, 2, 3, 4]) {
      const k = native.tuned({ threads, rawBlockBytes: 64 << 20 });
      const m = await compare(memTensor(npu), memTensor(ref), { threshold: 0.99 }, k);
      sameMetrics(js, m, `${threads} threads`);
      assert.equal(m.nonFinite.nan.first, { row: 400, col: 1000 });
      // Reading the files itself: each thread reads its rows slice by slice (64 rows of 4 KiB here).
      const a = open(npuFile);
      const b = open(refFile);
      try {
        assert.ok(a.rawFile?.() && b.rawFile?.());
        sameMetrics(js, await compare(a, b, { threshold: 0.99 }, k), `${threads} threads, files`);
      } finally {
        a.close();
        b.close();
      }
    }
  } finally {
    dir.cleanup();
  }
});

test('native: a file that shrinks while it is judged is an InputError naming it, not a crash (a small pair scanned on the caller, a big one on the threads)', async () => {
  if (!native) noNative();
  const dir = tempDir();
  // 64 x 16: scanned synchronously on the calling thread; 640 x 1024 (over SYNC_MAX_ELEMENTS): on the scanning threads.
  try { for (const [rows, cols] of [[64, 16], [640, 1024]]) {
    const t: Tensor = { dtype: 'f32', rows, cols, bits: new Uint32Array(rows * cols).fill(f32Bits(1)) };
    const npuFile = writeTensor(dir.path(`${rows}-npu`), t, 'npy');
    const refFile = writeTensor(dir.path(`${rows}-ref`), t, 'npy');
    const a = open(npuFile);
    const b = open(refFile);
    try {
      truncateSync(refFile, 200);
      await compare(a, b, { threshold: 0.99 }, native);
      assert.unreachable('no error');
    } catch (e) {
      assert.ok(e instanceof InputError, String(e));
      assert.match((e as Error).message, /^\S*ref\.npy: read failed: the file ended early/);
    } finally {
      a.close();
      b.close();
    }
  } } finally {
    dir.cleanup();
  }
});

test('native: bad arguments to the addon throw, never crash', () => {
  if (!native) noNative();
  const acc = createAccumulator(4, 2, 3);
  const { rowDot, rowA2, rowB2, sums, nonFinite } = acc;
  const scan = (...over: [number, unknown][]) => {
    const args: unknown[] = [true, rowDot, rowA2, rowB2, sums, nonFinite, new Uint8Array(48), 0, new Uint8Array(32), 0, 4, 0, 3, 2, 0];
    for (const [i, v] of over) args[i] = v;
    return () => (native.addon.scan as (...a: unknown[]) => unknown)(...args);
  };
  scan()(); // the valid call
  assert.throws(scan([6, new Uint8Array(47)]), /npu block is shorter/);
  assert.throws(scan([8, new Uint8Array(31)]), /ref block is shorter/);
  assert.throws(scan([7, 3]), /npuDtype/);
  assert.throws(scan([10, 0]), /cols/);
  assert.throws(scan([13, 4]), /real rows exceed/);
  assert.throws(scan([11, 1], [13, 2]), /rowDot is too short/);
  assert.throws(scan([1, new Float32Array(4)]), /Float64Array/);
  assert.throws(scan([6, 'bytes']), /typed array/);
  assert.throws(scan([12, -1]), /non-negative integer/);
  assert.throws(scan([12, 2 ** 60]), /non-negative integer/);
  assert.throws(scan([12, 2 ** 50], [10, 2 ** 20]), /block size overflows/);
  assert.throws(scan([12, 2 ** 40]), /npu block is shorter/);
  assert.throws(() => (native.addon.scan as (...a: unknown[]) => unknown)(true), /expected 15 arguments/);
});

test('native load failure: one warning line, the TypeScript engine runs; ENGINE=native refuses', () => {
  const dir = tempDir();
  try {
    const bogus = dir.path('bogus.node');
    writeFileSync(bogus, 'not an ELF file');
    const stale = dir.path('stale.cjs');
    writeFileSync(stale, 'module.exports = { abi: 0, scan() {} };');
    assert.is(tryLoadNative([dir.path('missing.node')]).kernel, null);
    assert.match(tryLoadNative([dir.path('missing.node')]).reason ?? '', /no addon found/);
    assert.match(tryLoadNative([bogus]).reason ?? '', /bogus\.node/);
    assert.match(tryLoadNative([stale]).reason ?? '', /stale \(ABI 0, expected 2\)/);
    assert.is(warningLine('x'), 'npu-block-gate: warning: native engine unavailable (x); using the TypeScript engine');

    const metrics = fileURLToPath(new URL('../src/metrics/index.ts', import.meta.url));
    const script = dir.path('probe.mts');
    writeFileSync(
      script,
      `import { selectEngine } from ${JSON.stringify(metrics)};\n` +
        `let names = [];\nfor (let i = 0; i < 3; i++) { try { names.push(selectEngine().name); } catch (e) { names.push(e.name + ': ' + e.message); } }\n` +
        `console.log(names.join(','));\n`,
    );
    const child = (env: Record<string, string>) => {
      const r = spawnSync(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, ...env }, encoding: 'utf8' });
      assert.is(r.status, 0, r.stderr);
      return { out: r.stdout.trim(), err: r.stderr.trim().split('\n').filter(Boolean) };
    };
    const auto = child({ NPU_BLOCK_GATE_NATIVE: bogus, NPU_BLOCK_GATE_ENGINE: 'auto' });
    assert.is(auto.out, 'js,js,js');
    assert.is(auto.err.length, 1, auto.err.join('\n'));
    assert.match(auto.err[0], /^npu-block-gate: warning: native engine unavailable \(.*bogus\.node.*\); using the TypeScript engine$/);
    const js = child({ NPU_BLOCK_GATE_NATIVE: bogus, NPU_BLOCK_GATE_ENGINE: 'js' });
    assert.is(js.out, 'js,js,js');
    assert.equal(js.err, []);
    const required = child({ NPU_BLOCK_GATE_NATIVE: bogus, NPU_BLOCK_GATE_ENGINE: 'native' });
    assert.match(required.out, /^InfraError: .*not available/);
    assert.ok(InfraError);
    if (native) {
      const ok = child({ NPU_BLOCK_GATE_NATIVE: native.path, NPU_BLOCK_GATE_ENGINE: 'auto' });
      assert.is(ok.out, 'native,native,native');
      assert.equal(ok.err, []);
    }
  } finally {
    dir.cleanup();
  }
});

test.run();
