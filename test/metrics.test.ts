import { test, skip } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { InfraError, InputError } from '../src/errors.ts';
import {
  compare,
  compareSummary,
  comparisonOf,
  findBadRuns,
  jsKernel,
  metricsFromJson,
  metricsToJson,
  percentile,
  registerNativeKernel,
  selectEngine,
  summarize,
  worstRows,
  type Metrics,
} from '../src/metrics/index.ts';
import { openTensor } from '../src/tensor/index.ts';
import { memTensor } from './helpers/mem-tensor.ts';
import { missingNumpy, runPython } from './helpers/python.ts';
import { tempDir } from './helpers/tmp.ts';

const near = (actual: number, expected: number, tol: number, what: string) => {
  if (Number.isNaN(expected) ? !Number.isNaN(actual) : !(Math.abs(actual - expected) <= tol)) {
    assert.unreachable(`${what}: ${actual} != ${expected} (tol ${tol})`);
  }
};

const run = (npu: number[][], ref: number[][], opts: Partial<Parameters<typeof compare>[2]> = {}) =>
  compare(memTensor(npu, 'npu.npy'), memTensor(ref, 'ref.npy'), { threshold: 0.99, ...opts }, jsKernel);

test('identical rows: cosine 1, zero error, infinite SQNR', async () => {
  const rows = [
    [1, 2, 3],
    [-4, 5, 0.5],
  ];
  const m = await run(rows, rows);
  assert.is(m.engine, 'js');
  near(m.wholeCosine, 1, 1e-15, 'whole');
  m.perPosition.cosines.forEach((c, i) => near(c, 1, 1e-15, `row ${i}`));
  assert.equal([m.errors.maxAbs, m.errors.meanAbs, m.errors.maxRel, m.errors.meanRel, m.errors.meanRelL1], [0, 0, 0, 0, 0]);
  assert.is(m.errors.sqnrDb, Infinity);
  near(m.errors.normRatio, 1, 1e-15, 'norm ratio');
  assert.equal(m.perPosition.badRuns, []);
  assert.equal(m.perPosition.zeroRows, []);
});

test('orthogonal rows score 0', async () => {
  const m = await run(
    [
      [1, 0],
      [0, 2],
    ],
    [
      [0, 3],
      [5, 0],
    ],
  );
  assert.equal(m.perPosition.cosines, [0, 0]);
  assert.is(m.wholeCosine, 0);
  assert.equal(m.perPosition.badRuns, [{ start: 0, end: 1, length: 2 }]);
});

test('scale 1.05: cosine 1, norm ratio 1.05, mean_rel_L1 0.05', async () => {
  const ref = [
    [1, -2, 4],
    [0.5, 3, -1],
  ];
  const npu = ref.map((r) => r.map((x) => x * 1.05));
  const m = await run(npu, ref);
  near(m.wholeCosine, 1, 1e-7, 'whole');
  near(m.perPosition.min, 1, 1e-7, 'min');
  near(m.errors.normRatio, 1.05, 1e-6, 'norm ratio');
  m.errors.rowNormRatios.forEach((r, i) => near(r, 1.05, 1e-6, `row ratio ${i}`));
  near(m.errors.meanRelL1, 0.05, 1e-6, 'mean_rel_L1');
  near(m.errors.maxRel, 0.05, 1e-6, 'max_rel');
  near(m.errors.sqnrDb, 10 * Math.log10(1 / 0.0025), 1e-4, 'sqnr');
});

test('zero rows score 0 and are listed; ratio NaN where the reference row is zero', async () => {
  const m = await run(
    [
      [1, 2],
      [0, 0],
      [3, 4],
      [1, 1],
    ],
    [
      [1, 2],
      [1, 1],
      [3, 4],
      [0, 0],
    ],
  );
  assert.equal(m.perPosition.cosines.map((c) => Math.round(c * 1e12) / 1e12), [1, 0, 1, 0]);
  assert.equal(m.perPosition.zeroRows, [1, 3]);
  assert.is(m.errors.rowNormRatios[1], 0);
  assert.ok(Number.isNaN(m.errors.rowNormRatios[3]));
  assert.equal(m.perPosition.worst.map((w) => w.row), [1, 3, 0, 2]);
  // ref 0 element: relative error uses the 1e-6 floor (float32, as comparators.py computes it).
  near(m.errors.maxRel, 1 / Math.fround(1e-6), 1e-3, 'max_rel floor');
});

test('NaN/Inf in padded rows are counted, real-row metrics stay finite', async () => {
  const ref = [
    [1, 2, 3],
    [4, 5, 6],
  ];
  const npu = [
    [1, 2, 3],
    [4, 5, 6],
    [0, NaN, NaN],
    [Infinity, 0, -Infinity],
    [0, 0, NaN],
  ];
  const m = await run(npu, ref);
  assert.is(m.realLen, 2);
  assert.is(m.npuRows, 5);
  assert.is(m.nonFinite.rowsScanned, 5);
  assert.equal(m.nonFinite.nan, { count: 3, first: { row: 2, col: 1 } });
  assert.equal(m.nonFinite.posInf, { count: 1, first: { row: 3, col: 0 } });
  assert.equal(m.nonFinite.negInf, { count: 1, first: { row: 3, col: 2 } });
  assert.ok(Number.isFinite(m.wholeCosine) && Number.isFinite(m.perPosition.min) && Number.isFinite(m.errors.maxAbs));
  assert.is(m.perPosition.cosines.length, 2);
});

test('NaN in a real row propagates like numpy: row cosine, min, percentiles, whole cosine, max_abs', async () => {
  const m = await run(
    [
      [1, 2],
      [NaN, 1],
      [3, 4],
    ],
    [
      [1, 2],
      [1, 1],
      [3, 4],
    ],
  );
  assert.ok(Number.isNaN(m.perPosition.cosines[1]));
  near(m.perPosition.cosines[0], 1, 1e-12, 'row 0');
  for (const v of [m.perPosition.min, m.perPosition.p5, m.perPosition.median, m.perPosition.mean, m.wholeCosine, m.errors.maxAbs, m.errors.maxRel, m.errors.meanAbs]) {
    assert.ok(Number.isNaN(v));
  }
  assert.equal(m.perPosition.worst[0].row, 1);
  assert.equal(m.perPosition.badRuns, [{ start: 1, end: 1, length: 1 }]);
  assert.equal(m.nonFinite.nan, { count: 1, first: { row: 1, col: 0 } });
});

test('bad runs: contiguous, at the tail, NaN counts as bad', () => {
  assert.equal(findBadRuns([1, 0.5, 0.4, 1, 1, 0.2], 0.99), [
    { start: 1, end: 2, length: 2 },
    { start: 5, end: 5, length: 1 },
  ]);
  assert.equal(findBadRuns([0.999, NaN, 0.98], 0.99), [{ start: 1, end: 2, length: 2 }]);
  assert.equal(findBadRuns([0.99, 1], 0.99), []);
});

test('bad run detection at the tail through compare(), across row blocks', async () => {
  const rows = 600; // three 256-row blocks
  const ref = Array.from({ length: rows }, (_, i) => [1, (i % 7) - 3, 2]);
  const npu = ref.map((r, i) => (i >= 590 ? [r[0], r[1] + 3, r[2] - 2] : r));
  const m = await run(npu, ref, { worstK: 3 });
  assert.is(m.perPosition.cosines.length, rows);
  assert.equal(m.perPosition.badRuns, [{ start: 590, end: 599, length: 10 }]);
  assert.is(m.perPosition.worst.length, 3);
  assert.ok(m.perPosition.worst.every((w) => w.row >= 590));
});

test('percentile and median follow numpy (linear interpolation)', () => {
  // np.percentile([1,2,3,4], 5) = 1.15; np.percentile(range(10), 5) = 0.45; np.median([3,1,2,4]) = 2.5
  near(percentile([4, 1, 3, 2], 5), 1.15, 1e-15, 'p5 of 4');
  near(percentile([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 5), 0.45, 1e-15, 'p5 of 10');
  near(percentile([7], 5), 7, 0, 'one value');
  near(percentile([1, 2, 3], 50), 2, 0, 'p50');
  assert.ok(Number.isNaN(percentile([1, NaN, 3], 5)));
  const s = summarize([3, 1, 2, 4]);
  assert.equal(s, { min: 1, p5: 1.15, median: 2.5, mean: 2.5 });
  near(summarize([0.9, 0.1, 0.5]).median, 0.5, 0, 'odd median');
});

test('worst rows: NaN first, then ascending, ties by index', () => {
  assert.equal(
    worstRows([0.5, NaN, 0.2, 0.2, 1], 4).map((w) => w.row),
    [1, 2, 3, 0],
  );
  assert.equal(worstRows([1, 0], 5).length, 2);
});

test('pair validation names the files', async () => {
  const a = memTensor([[1, 2, 3]], 'npu.npy');
  const two = memTensor(
    [
      [1, 2],
      [3, 4],
    ],
    'ref.npy',
  );
  const bad = async (p: Promise<Metrics>, re: RegExp) => {
    try {
      await p;
    } catch (err) {
      assert.instance(err, InputError);
      assert.match((err as Error).message, re);
      return;
    }
    assert.unreachable('accepted');
  };
  await bad(compare(a, memTensor([[1, 2]], 'ref.npy'), { threshold: 0.99 }, jsKernel), /npu\.npy.*ref\.npy/);
  await bad(compare(memTensor([[1, 2]], 'npu.npy'), two, { threshold: 0.99 }, jsKernel), /ref\.npy.*more than.*npu\.npy/);
  const npu3 = memTensor([[1, 2], [3, 4], [5, 6]], 'npu.npy');
  await bad(compare(npu3, two, { threshold: 0.99, realLen: 0 }, jsKernel), /ref\.npy.*real length/);
  await bad(compare(npu3, two, { threshold: 0.99, realLen: 3 }, jsKernel), /ref\.npy.*exceeds/);
  const m = await compare(npu3, two, { threshold: 0.99, realLen: 1 }, jsKernel);
  assert.is(m.realLen, 1);
  assert.is(m.perPosition.cosines.length, 1);
});

test('engine selection: js, auto without addon, native required, bad value', () => {
  registerNativeKernel(null); // the addon registers itself on import; this case is about its absence
  assert.is(selectEngine({ NPU_BLOCK_GATE_ENGINE: 'js' }), jsKernel);
  assert.is(selectEngine({}), jsKernel);
  assert.throws(() => selectEngine({ NPU_BLOCK_GATE_ENGINE: 'native' }), (e: unknown) => e instanceof InfraError);
  assert.throws(() => selectEngine({ NPU_BLOCK_GATE_ENGINE: 'gpu' }), (e: unknown) => e instanceof InputError);
});

test('a registered native kernel plugs into the same accumulator and finalize', async () => {
  let blocks = 0;
  const fake = {
    name: 'native' as const,
    scanBlock: (...args: Parameters<typeof jsKernel.scanBlock>) => {
      blocks++;
      jsKernel.scanBlock(...args);
    },
  };
  registerNativeKernel(() => fake);
  try {
    assert.is(selectEngine({}), fake);
    assert.is(selectEngine({ NPU_BLOCK_GATE_ENGINE: 'native' }), fake);
    assert.is(selectEngine({ NPU_BLOCK_GATE_ENGINE: 'js' }), jsKernel);
    const ref = [[1, 2], [3, 4]];
    const m = await compare(memTensor(ref), memTensor(ref), { threshold: 0.99 }, selectEngine({}));
    assert.is(m.engine, 'native');
    assert.is(blocks, 1);
    registerNativeKernel(() => {
      throw new Error('addon failed to load');
    });
    assert.is(selectEngine({}), jsKernel);
  } finally {
    registerNativeKernel(null);
  }
});

test('JSON-safe metrics round-trip non-finite values', async () => {
  const m = await run(
    [
      [NaN, 1],
      [1, 2],
      [Infinity, -Infinity],
    ],
    [
      [1, 1],
      [0, 0],
    ],
  );
  const text = JSON.stringify(metricsToJson(m));
  assert.ok(text.includes('"NaN"'));
  const back = metricsFromJson(JSON.parse(text));
  assert.ok(Number.isNaN(back.wholeCosine));
  assert.ok(Number.isNaN(back.errors.rowNormRatios[1]));
  assert.equal(back.nonFinite, m.nonFinite);
  assert.is(back.engine, 'js');
  assert.equal(JSON.stringify(metricsToJson(back)), text);
});

test('cross-check against a numpy implementation of mlir-air comparators (1e-5)', async () => {
  const no = missingNumpy();
  if (no) skip(no);
  const tmp = tempDir('npu-block-gate-metrics-');
  try {
    // The comparators' definitions, written independently: float32 per-row cosine with 0.0 where a
    // norm is 0, np.percentile linear, error metrics over float32 with denominator max(|ref|, 1e-6).
    const cases = JSON.parse(
      runPython(
        String.raw`
import json, os, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(1234)
def bf16(x):
    bits = (x.astype(np.float32).view(np.uint32) + 0x7fff + ((x.astype(np.float32).view(np.uint32) >> 16) & 1)) >> 16
    return bits.astype('<u2')
def widen(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)
def per_position_cosine(a, b):
    a = np.asarray(a, dtype=np.float32); b = np.asarray(b, dtype=np.float32)
    n = a.shape[0]; a2 = a.reshape(n, -1); b2 = b.reshape(n, -1)
    dot = np.sum(a2 * b2, axis=1)
    den = np.linalg.norm(a2, axis=1) * np.linalg.norm(b2, axis=1)
    out = np.zeros(n, dtype=np.float32); m = den > 0
    out[m] = dot[m] / den[m]
    return out
def aggregate(c):
    c = np.asarray(c, dtype=np.float32)
    return dict(min=float(c.min()), p5=float(np.percentile(c, 5)), median=float(np.median(c)), mean=float(c.mean()))
def error_metrics(a, b):
    a = np.asarray(a, dtype=np.float32).ravel(); b = np.asarray(b, dtype=np.float32).ravel()
    diff = np.abs(a - b); rel = diff / np.maximum(np.abs(b), 1e-6)
    return dict(max_abs=float(diff.max()), mean_abs=float(diff.mean()), max_rel=float(rel.max()), mean_rel=float(rel.mean()))
out = []
specs = [
    # name, npu shape, ref rows, real_len, storage
    ('f32_small', (16, 64), 16, None, 'f32'),
    ('f32_padded', (300, 96), 257, None, 'f32'),
    ('bf16_padded', (320, 128), 290, None, 'bf16'),
    ('bf16_3d', (2, 40, 64), 80, 70, 'bf16'),
    ('f32_one_row', (1, 512), 1, None, 'f32'),
    ('f16_zeros', (64, 32), 64, None, 'f16'),
]
for name, shape, ref_rows, real_len, storage in specs:
    cols = shape[-1]
    rows = int(np.prod(shape[:-1]))
    ref = (rng.standard_normal((ref_rows, cols)) * rng.uniform(0.5, 4)).astype(np.float32)
    noise = rng.standard_normal((rows, cols)).astype(np.float32) * 0.02
    npu = np.zeros((rows, cols), np.float32)
    npu[:ref_rows] = ref * np.float32(1.01)
    npu += noise
    # A few rows that go wrong, one all-zero NPU row, exact zeros in the reference.
    npu[min(3, rows - 1)] *= -0.5
    if rows > 8:
        npu[5] = 0
        npu[7] = rng.standard_normal(cols)
    ref[0, :3] = 0
    if storage == 'bf16':
        nb, rb = bf16(npu), bf16(ref)
        np.save(os.path.join(d, name + '.npu.npy'), nb.reshape(shape))
        np.save(os.path.join(d, name + '.ref.npy'), rb)
        npu, ref = widen(nb), widen(rb)
    elif storage == 'f16':
        np.save(os.path.join(d, name + '.npu.npy'), npu.astype(np.float16).reshape(shape))
        np.save(os.path.join(d, name + '.ref.npy'), ref.astype(np.float16))
        npu, ref = npu.astype(np.float16).astype(np.float32), ref.astype(np.float16).astype(np.float32)
    else:
        np.save(os.path.join(d, name + '.npu.npy'), npu.reshape(shape))
        np.save(os.path.join(d, name + '.ref.npy'), ref)
    n = real_len or ref_rows
    a, b = npu[:n], ref[:n]
    cos = per_position_cosine(a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    whole = float(np.sum(a64 * b64) / (np.linalg.norm(a64) * np.linalg.norm(b64)))
    out.append(dict(name=name, bf16=storage == 'bf16', real_len=real_len, cosines=cos.tolist(), cosine=aggregate(cos),
        errors=error_metrics(a, b), whole=whole,
        mean_rel_l1=float(np.abs(a64 - b64).sum() / np.abs(b64).sum()),
        sqnr=float(10 * np.log10((b64 ** 2).sum() / ((a64 - b64) ** 2).sum())),
        norm_ratio=float(np.linalg.norm(a64) / np.linalg.norm(b64)),
        zero_rows=[int(i) for i in np.nonzero((np.abs(a).sum(1) == 0) | (np.abs(b).sum(1) == 0))[0]]))
print(json.dumps(out))
`,
        [tmp.dir],
      ),
    ) as {
      name: string;
      bf16: boolean;
      real_len: number | null;
      cosines: number[];
      cosine: { min: number; p5: number; median: number; mean: number };
      errors: { max_abs: number; mean_abs: number; max_rel: number; mean_rel: number };
      whole: number;
      mean_rel_l1: number;
      sqnr: number;
      norm_ratio: number;
      zero_rows: number[];
    }[];
    assert.is(cases.length, 6);
    for (const c of cases) {
      const npu = openTensor(tmp.path(`${c.name}.npu.npy`), { u2IsBf16: c.bf16 });
      const ref = openTensor(tmp.path(`${c.name}.ref.npy`), { u2IsBf16: c.bf16 });
      const m = await compare(npu, ref, { threshold: 0.99, realLen: c.real_len ?? undefined }, jsKernel);
      npu.close();
      ref.close();
      // 1e-5 absolute (DESIGN "Numbers"); for magnitudes above 1 (max_rel near the 1e-6 floor,
      // SQNR in dB) the same bound relative, since the comparators round those in float32.
      const tol = (x: number) => 1e-5 * Math.max(1, Math.abs(x));
      const at = (what: string, ours: number, theirs: number) => near(ours, theirs, tol(theirs), `${c.name} ${what}`);
      assert.is(m.perPosition.cosines.length, c.cosines.length, c.name);
      c.cosines.forEach((x, i) => at(`cosine[${i}]`, m.perPosition.cosines[i], x));
      at('min', m.perPosition.min, c.cosine.min);
      at('p5', m.perPosition.p5, c.cosine.p5);
      at('median', m.perPosition.median, c.cosine.median);
      at('mean', m.perPosition.mean, c.cosine.mean);
      at('whole', m.wholeCosine, c.whole);
      at('max_abs', m.errors.maxAbs, c.errors.max_abs);
      at('mean_abs', m.errors.meanAbs, c.errors.mean_abs);
      at('max_rel', m.errors.maxRel, c.errors.max_rel);
      at('mean_rel', m.errors.meanRel, c.errors.mean_rel);
      at('mean_rel_L1', m.errors.meanRelL1, c.mean_rel_l1);
      at('sqnr', m.errors.sqnrDb, c.sqnr);
      at('norm ratio', m.errors.normRatio, c.norm_ratio);
      assert.equal(m.perPosition.zeroRows, c.zero_rows, `${c.name} zero rows`);
    }
  } finally {
    tmp.cleanup();
  }
});

test('compareSummary is comparisonOf(compare()) bit for bit, on clean, NaN, zero and padded rows, with either engine', async () => {
  const rows = (n: number, seed: number) => Array.from({ length: n }, (_, r) => Array.from({ length: 6 }, (_, c) => Math.sin(seed * 7 + r * 13 + c) * (r + 1)));
  const cases: [string, number[][], number[][], number | undefined][] = [
    ['clean', rows(9, 1), rows(9, 2), undefined],
    ['a NaN and an all-zero NPU row', rows(9, 1).map((r, i) => (i === 2 ? r.map(() => 0) : i === 5 ? [NaN, ...r.slice(1)] : r)), rows(9, 2), undefined],
    ['padded rows and an Inf past real_len', [...rows(7, 3), [Infinity, 1, 2, 3, 4, 5]], rows(7, 4), 5],
  ];
  const engines = [jsKernel, ...(selectEngine({}).name === 'native' ? [selectEngine({})] : [])];
  for (const kernel of engines) {
    for (const [name, a, b, realLen] of cases) {
      const full = comparisonOf(await compare(memTensor(a), memTensor(b), { realLen, threshold: 0.99 }, kernel));
      const row = await compareSummary(memTensor(a), memTensor(b), { realLen }, kernel);
      // Object.is per field: NaN equals NaN, 0 and -0 differ; the key order is the JSON's too.
      assert.equal(Object.keys(row), Object.keys(full), `${kernel.name} ${name}`);
      for (const k of Object.keys(full) as (keyof typeof full)[]) assert.ok(Object.is(row[k], full[k]), `${kernel.name} ${name} ${k}: ${row[k]} vs ${full[k]}`);
    }
  }
});

test.run();
