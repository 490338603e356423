// Issue 30: two 16-bit tensors (bf16, f16) are compared in the narrow mode: each row summed in
// float32, 16 lanes, every lane flushed into float64 every 256 columns (16 terms), the lanes
// combined as a tree (src/metrics/kernel-js.ts narrowRow, native/src/kernel.inc). The figures
// move from the float64 ones by at most the bound below, proven here against the float64 sums
// of the same data on many tensors; both engines give the same bits.
//
// The bound. Every product a*b, a*a, b*b of 16-bit values is exact in float32 (at most 11 + 11
// significant bits) while it stays in float32's normal range (rows where it may not, sum a^2 or
// sum b^2 under 2^-96, and rows with a NaN, an Inf or a float32 overflow, are summed in float64).
// A float32 sum of n terms is within gamma_n = n*u / (1 - n*u) (u = 2^-24) of the exact one, times
// the sum of the terms' magnitudes; a block holds 16 terms a lane, and the float64 flushes and the
// tree add ~1e-15 more. Hence, with gamma = gamma_16 = 9.54e-7:
//   sum a*b     within gamma * sum |a*b| <= gamma * sqrt(sum a^2 * sum b^2) (Cauchy-Schwarz)
//   sum a^2, sum b^2 within gamma, relatively
//   => a cosine (whole or per row) within 2 * gamma (+ second order)  ->  2.5e-6, absolute
//   |a-b| and rel are rounded once each before their sums (u, 2u), d*d twice (2u)
//   => mean_abs, mean_rel, mean_rel_L1 (a ratio of two such sums): 2.5e-6 relative
//   => max_abs within u, max_rel within 2u: 2e-7 relative
//   => SQNR = 10 log10(sum b^2 / sum d^2): 10 / ln 10 * (gamma + gamma + 2u) -> 1e-5 dB
//   => norm ratio sqrt(sum a^2 / sum b^2): gamma -> 2e-6 relative
// docs/ and bench/README.md quote these bounds.
import { skip, test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { createAccumulator, finalize, jsKernel, selectEngine, type Kernel, type Metrics } from '../src/metrics/index.ts';
import { decodeInto } from '../src/tensor/dtype.ts';
import type { NativeKernel } from '../src/metrics/native.ts';

export const NARROW_BOUND = { cosine: 2.5e-6, meanRel: 2.5e-6, maxRel: 2e-7, sqnrDb: 1e-5, normRatio: 2e-6 } as const;

const native = (() => {
  const k = selectEngine({ NPU_BLOCK_GATE_ENGINE: 'auto' });
  return k.name === 'native' ? (k as NativeKernel) : null;
})();

type D16 = 'bf16' | 'f16';

function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A float rounded to the dtype's bits (round to nearest even), as 16-bit words. */
function toBits(x: number, dtype: D16): number {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0];
  if (dtype === 'bf16') return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
  // f16: sign, exponent, 10-bit mantissa (rounded to nearest; values here stay under 65504).
  const sign = x < 0 ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a === 0) return sign;
  let e = Math.floor(Math.log2(a));
  if (e < -14) return sign | Math.round(a / 2 ** -24); // subnormal (2^-24 steps; 1024 is the smallest normal)
  let m = Math.round((a / 2 ** e - 1) * 1024);
  if (m === 1024) { m = 0; e++; }
  return sign | ((e + 15) << 10) | m;
}

interface Pair { npu: Float32Array; ref: Float32Array; npuBits: Uint16Array; refBits: Uint16Array; rows: number; cols: number; dtype: D16 }

/** NPU = reference + noise, at a scale; a few rows wide in dynamic range, a few anti-correlated. */
function makePair(rng: () => number, rows: number, cols: number, dtype: D16, scale: number, noise: number): Pair {
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
  const npuBits = new Uint16Array(rows * cols);
  const refBits = new Uint16Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    const wide = r % 7 === 3; // magnitudes across 2^-20 .. 2^10 inside one row (f16: 2^-8 .. 2^4, its normal range)
    const flip = r % 11 === 5 ? -1 : 1;
    for (let c = 0; c < cols; c++) {
      const mag = wide ? (dtype === 'bf16' ? 2 ** (Math.floor(rng() * 30) - 20) : 2 ** (Math.floor(rng() * 12) - 8)) : 1;
      const b = gauss() * scale * mag;
      const a = flip * b + gauss() * scale * mag * noise;
      refBits[r * cols + c] = toBits(b, dtype);
      npuBits[r * cols + c] = toBits(a, dtype);
    }
  }
  const npu = new Float32Array(rows * cols);
  const ref = new Float32Array(rows * cols);
  decodeInto(new Uint8Array(npuBits.buffer), dtype, 'le', npu, 0, rows * cols);
  decodeInto(new Uint8Array(refBits.buffer), dtype, 'le', ref, 0, rows * cols);
  return { npu, ref, npuBits, refBits, rows, cols, dtype };
}

function judge(p: Pair, narrow: boolean, k: Kernel = jsKernel): Metrics {
  const acc = createAccumulator(p.cols, p.rows, p.rows, narrow);
  if (k === jsKernel) jsKernel.scanBlock(acc, p.npu, p.ref, 0, p.rows);
  else {
    const code = p.dtype === 'bf16' ? 2 : 1;
    (k as NativeKernel).addon.scan(true, acc.rowDot, acc.rowA2, acc.rowB2, acc.sums, acc.nonFinite, new Uint8Array(p.npuBits.buffer), code, new Uint8Array(p.refBits.buffer), code, p.cols, 0, p.rows, p.rows, 2, narrow);
    acc.rowsScanned = p.rows;
  }
  return finalize(acc, { threshold: 0.99, engine: k.name });
}

const relDiff = (x: number, y: number) => (x === y ? 0 : Math.abs(x - y) / Math.max(Math.abs(x), Math.abs(y)));

function cases(): { name: string; p: Pair }[] {
  const rng = mulberry32(30);
  const out: { name: string; p: Pair }[] = [];
  for (const dtype of ['bf16', 'f16'] as D16[]) {
    for (const [scale, noise] of [[1, 1e-2], [1, 1e-4], [1e-3, 1e-1], [40, 3e-2], [1, 1]]) {
      // f16's range: keep its values normal (its subnormals and overflow are float64 rows anyway).
      if (dtype === 'f16' && scale > 10) continue;
      for (const cols of [2048, 300, 17]) out.push({ name: `${dtype} scale ${scale} noise ${noise} cols ${cols}`, p: makePair(rng, 24, cols, dtype, scale, noise) });
    }
  }
  return out;
}

test('narrow mode: every printed figure within the stated bound of the float64 sums (bf16 and f16; scales 1e-3..40; noise 1e-4..1; rows of wide dynamic range; anti-correlated rows)', () => {
  let worstCos = 0;
  for (const { name, p } of cases()) {
    const n = judge(p, true);
    const f = judge(p, false);
    const cos = Math.max(Math.abs(n.wholeCosine - f.wholeCosine), ...n.perPosition.cosines.map((x, i) => Math.abs(x - f.perPosition.cosines[i])));
    worstCos = Math.max(worstCos, cos);
    assert.ok(cos <= NARROW_BOUND.cosine, `${name}: cosine moved ${cos}`);
    for (const k of ['p5', 'median', 'mean', 'min'] as const) {
      assert.ok(Math.abs(n.perPosition[k] - f.perPosition[k]) <= NARROW_BOUND.cosine, `${name}: per-position ${k}`);
    }
    for (const k of ['meanAbs', 'meanRel', 'meanRelL1'] as const) {
      assert.ok(relDiff(n.errors[k], f.errors[k]) <= NARROW_BOUND.meanRel, `${name}: ${k} ${n.errors[k]} vs ${f.errors[k]}`);
    }
    for (const k of ['maxAbs', 'maxRel'] as const) {
      assert.ok(relDiff(n.errors[k], f.errors[k]) <= NARROW_BOUND.maxRel, `${name}: ${k} ${n.errors[k]} vs ${f.errors[k]}`);
    }
    assert.ok(Math.abs(n.errors.sqnrDb - f.errors.sqnrDb) <= NARROW_BOUND.sqnrDb, `${name}: SQNR ${n.errors.sqnrDb} vs ${f.errors.sqnrDb}`);
    assert.ok(relDiff(n.errors.normRatio, f.errors.normRatio) <= NARROW_BOUND.normRatio, `${name}: norm ratio`);
  }
  // The modes do differ (this is a float32 sum, not the float64 one under another name).
  assert.ok(worstCos > 0, 'narrow and float64 gave the same bits everywhere');
});

test('narrow mode: rows with a NaN, an Inf, a float32 overflow or only tiny values keep the float64 numbers', () => {
  const rng = mulberry32(7);
  const p = makePair(rng, 8, 64, 'bf16', 1, 1e-2);
  const set = (row: number, col: number, v: number, which: 'npu' | 'ref') => {
    const bits = which === 'npu' ? p.npuBits : p.refBits;
    bits[row * p.cols + col] = toBits(v, 'bf16');
    decodeInto(new Uint8Array(bits.buffer), 'bf16', 'le', which === 'npu' ? p.npu : p.ref, 0, p.rows * p.cols);
  };
  set(1, 5, NaN, 'npu');
  set(2, 9, Infinity, 'ref');
  set(3, 0, 3e38, 'npu'); // its square overflows float32, not float64
  for (let c = 0; c < p.cols; c++) { set(4, c, 1e-30 * (c + 1), 'npu'); set(4, c, 1.1e-30 * (c + 1), 'ref'); }
  const n = judge(p, true);
  const f = judge(p, false);
  for (const r of [1, 2, 3, 4]) {
    assert.ok(Object.is(n.perPosition.cosines[r], f.perPosition.cosines[r]), `row ${r}: ${n.perPosition.cosines[r]} vs ${f.perPosition.cosines[r]}`);
    assert.ok(Object.is(n.errors.rowNormRatios[r], f.errors.rowNormRatios[r]), `row ${r} norm ratio`);
  }
  assert.ok(Number.isFinite(n.perPosition.cosines[3]) && n.perPosition.cosines[3] !== 0, 'the overflowing row is judged in float64, not lost to Inf');
  assert.ok(n.perPosition.cosines[4] > 0.99, 'the tiny row is judged in float64, not lost to underflow');
  assert.equal(n.nonFinite, f.nonFinite);
});

test('narrow mode: the native addon gives the TypeScript twin\'s bits (every ISA it runs here)', () => {
  if (!native) skip('native', 'the native addon did not load (npm run build:native)');
  for (const { name, p } of cases()) {
    const js = judge(p, true);
    const nat = judge(p, true, native);
    assert.ok(Object.is(js.wholeCosine, nat.wholeCosine), `${name}: whole cosine ${js.wholeCosine} vs ${nat.wholeCosine}`);
    nat.perPosition.cosines.forEach((x, i) => assert.ok(Object.is(x, js.perPosition.cosines[i]), `${name}: row ${i}`));
    for (const k of ['maxAbs', 'meanAbs', 'maxRel', 'meanRel', 'meanRelL1', 'sqnrDb', 'normRatio'] as const) {
      assert.ok(Object.is(js.errors[k], nat.errors[k]), `${name}: ${k} ${js.errors[k]} vs ${nat.errors[k]}`);
    }
  }
});

test.run();
