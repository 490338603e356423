// The broken-reference check judges the raw bits when a source has them (no float32 copy of the
// payload) and readRows' floats otherwise: both must say the same words, for every dtype.
import { skip, test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { referenceFault } from '../src/gates/reference.ts';
import { loadNativeKernel } from '../src/metrics/native.ts';
import { BufferBytes } from '../src/tensor/bytes.ts';
import { RawTensor } from '../src/tensor/raw.ts';
import type { DType, TensorSource } from '../src/tensor/types.ts';

const SIZE: Record<DType, number> = { f32: 4, f16: 2, bf16: 2 };
const native = loadNativeKernel({ ...process.env, NPU_BLOCK_GATE_ENGINE: 'js' });

/** Bits of a float32 value in each dtype (bf16: the top half, f16: only the values the cases use). */
function bitsOf(v: number, dtype: DType): number {
  const u = new Uint32Array(new Float32Array([v]).buffer)[0];
  if (dtype === 'f32') return u;
  if (dtype === 'bf16') return u >>> 16;
  const sign = u >>> 31 ? 0x8000 : 0;
  if (v !== v) return 0x7e00;
  if (!Number.isFinite(v)) return sign | 0x7c00;
  if (v === 0) return sign;
  // The cases use powers of two and small multiples of them only: exact in f16.
  const e = Math.floor(Math.log2(Math.abs(v)));
  const m = Math.round((Math.abs(v) / 2 ** e - 1) * 1024);
  return sign | ((e + 15) << 10) | m;
}

/** A raw tensor whose payload starts `shift` bytes into its buffer (1: unaligned views). */
function rawTensor(rows: number[][], dtype: DType, shift: number): RawTensor {
  const cols = rows[0].length;
  const item = SIZE[dtype];
  const buf = Buffer.alloc(shift + rows.length * cols * item);
  rows.flat().forEach((v, i) => {
    const b = bitsOf(v, dtype);
    if (item === 4) buf.writeUInt32LE(b >>> 0, shift + i * 4);
    else buf.writeUInt16LE(b, shift + i * 2);
  });
  return new RawTensor('ref.npy', new BufferBytes('ref.npy', buf), { dtype, order: 'le', shape: [rows.length, cols], offset: shift });
}

/** The same tensor without raw rows: the float scan. */
function floatsOnly(t: RawTensor): TensorSource {
  return { path: t.path, dtype: t.dtype, shape: t.shape, rows: t.rows, cols: t.cols, readRows: (s, c) => t.readRows(s, c), close: () => t.close() };
}

function grid(rows: number, cols: number, seed = 1): number[][] {
  let s = seed;
  return Array.from({ length: rows }, () => Array.from({ length: cols }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return ((s % 64) + 1) / 16 * (s % 3 === 0 ? -1 : 1);
  }));
}

const CASES: [string, (g: number[][]) => void, RegExp | null][] = [
  ['clean', () => {}, null],
  ['a NaN', (g) => { g[2][3] = NaN; }, /^row 2, column 3 of the reference is NaN \(a real token\)$/],
  ['+Inf', (g) => { g[1][0] = Infinity; }, /^row 1, column 0 of the reference is \+Inf/],
  ['-Inf', (g) => { g[3][5] = -Infinity; }, /^row 3, column 5 of the reference is -Inf/],
  ['a zero row of +0 and -0', (g) => { g[4] = g[4].map((_, i) => (i % 2 ? -0 : 0)); }, /^1 of the reference's real rows is all zero \(first: row 4\)$/],
  ['a row of -0 then +0 is zero, not constant', (g) => { g[2] = g[2].map((_, i) => (i ? 0 : -0)); g[5] = g[5].map(() => -0); }, /^2 of the reference's real rows are all zero \(first: row 2\)$/],
  ['a constant row', (g) => { g[1].fill(0.25); }, /^row 1 of the reference is constant \(every one of its 8 values is 0\.25\) on a real token$/],
  ['a constant negative row', (g) => { g[6].fill(-1.5); }, /^row 6 of the reference is constant \(every one of its 8 values is -1\.5\)/],
  ['a NaN after a constant row', (g) => { g[1].fill(2); g[3][1] = NaN; }, /^row 1 of the reference is constant/],
  ['a NaN in a constant row', (g) => { g[1].fill(2); g[1][7] = NaN; }, /^row 1, column 7 of the reference is NaN/],
  ['a zero row, then a NaN', (g) => { g[0].fill(0); g[6][6] = NaN; }, /^row 6, column 6 of the reference is NaN/],
  ['every row zero', (g) => { for (const r of g) r.fill(0); }, /^every one of the reference's 8 real rows is all zero$/],
];

for (const dtype of ['f32', 'bf16', 'f16'] as DType[]) {
  for (const [name, edit, want] of CASES) {
    test(`reference check, ${dtype}, ${name}: raw bits and floats say the same`, () => {
      const g = grid(8, 8);
      edit(g);
      for (const shift of [0, 1]) {
        for (const finiteOnly of [false, true]) {
          const raw = referenceFault(rawTensor(g, dtype, shift), 8, finiteOnly, {});
          const floats = referenceFault(floatsOnly(rawTensor(g, dtype, shift)), 8, finiteOnly);
          assert.is(raw, floats, `shift ${shift}, finiteOnly ${finiteOnly}`);
          // The native addon's twin of the raw loop (issue 30) says the same words.
          if (native) assert.is(referenceFault(rawTensor(g, dtype, shift), 8, finiteOnly, native), raw, `native, shift ${shift}, finiteOnly ${finiteOnly}`);
          if (!finiteOnly) {
            if (want) assert.match(raw ?? '', want);
            else assert.is(raw, null);
          }
        }
      }
    });
  }
}

test('reference check, native and TypeScript twins: the same verdict on random rows wider than one native block (256 columns), every dtype', () => {
  if (!native) skip('native', 'the native addon did not load (npm run build:native)');
  let seed = 11;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const specials = [NaN, Infinity, -Infinity, 0, -0];
  for (let i = 0; i < 120; i++) {
    const dtype = (['f32', 'bf16', 'f16'] as DType[])[i % 3];
    const cols = 1 + Math.floor(rnd() * 700);
    const rows = 1 + Math.floor(rnd() * 12);
    const g = grid(rows, cols, i + 3);
    // A few edits: a special value, a zero row, a constant row, anywhere.
    for (let e = Math.floor(rnd() * 4); e > 0; e--) {
      const r = Math.floor(rnd() * rows);
      const k = rnd();
      if (k < 0.5) g[r][Math.floor(rnd() * cols)] = specials[Math.floor(rnd() * specials.length)];
      else if (k < 0.75) g[r].fill(rnd() < 0.5 ? 0 : -0);
      else g[r].fill(0.5);
    }
    for (const finiteOnly of [false, true]) {
      const ts = referenceFault(rawTensor(g, dtype, 0), rows, finiteOnly, {});
      assert.is(referenceFault(rawTensor(g, dtype, 0), rows, finiteOnly, native), ts, `case ${i}: ${dtype} ${rows}x${cols}, finiteOnly ${finiteOnly}`);
      assert.is(referenceFault(floatsOnly(rawTensor(g, dtype, 0)), rows, finiteOnly), ts, `case ${i}: floats`);
    }
  }
});

test('reference check: only the real rows count, across read blocks', () => {
  // 2048 f32 columns: 128 rows per 1 MiB block, so rows 200 and 300 sit in later blocks.
  const g = grid(320, 2048, 7);
  g[300].fill(0);
  assert.is(referenceFault(rawTensor(g, 'f32', 0), 300), null);
  assert.match(referenceFault(rawTensor(g, 'f32', 0), 301) ?? '', /^1 of the reference's real rows is all zero \(first: row 300\)$/);
  g[200][2047] = NaN;
  assert.is(referenceFault(rawTensor(g, 'f32', 0), 301), 'row 200, column 2047 of the reference is NaN (a real token)');
  assert.is(referenceFault(floatsOnly(rawTensor(g, 'f32', 0)), 301), 'row 200, column 2047 of the reference is NaN (a real token)');
});

test.run();
