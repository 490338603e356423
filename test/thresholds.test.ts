// Every bar on its line (issue 21): a value exactly at the bar, one ulp above and one ulp below,
// for G1 and G2 at each head_dim's threshold (64, 96, 128, 256), for the lens's threshold, clean
// bar and well-below bar, and for the norm-ratio warning. A `>=` turned into `>` (or a bar moved by
// one ulp) fails here; nowhere else does a value sit exactly on a bar.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { cleanBar, perPositionThreshold, wellBelow, WHOLE_COSINE_MIN } from '../src/seed/thresholds.ts';
import { metricGates, warningsFor } from '../src/gates/evaluate.ts';
import { compareBoundaries, hidingOf, lensWarning } from '../src/lens/judge.ts';
import type { LensReport, LensRow } from '../src/record/lens.ts';
import type { Boundaries } from '../src/rundir/schema.ts';
import { fakeMetrics } from './helpers/report.ts';
import { npyOf } from './helpers/rundir.ts';

const f64 = new Float64Array(1);
const bits = new BigInt64Array(f64.buffer);

/** The next double above x (x finite and positive here). */
function nextUp(x: number): number {
  f64[0] = x;
  bits[0] += 1n;
  return f64[0];
}

/** The next double below x (x finite and positive here). */
function nextDown(x: number): number {
  f64[0] = x;
  bits[0] -= 1n;
  return f64[0];
}

/** The value itself, one ulp above, one ulp below, and whether each passes a `>=` bar. */
const around = (bar: number): [string, number, boolean][] => [['at', bar, true], ['one ulp above', nextUp(bar), true], ['one ulp below', nextDown(bar), false]];

const HEAD_DIMS = [64, 96, 128, 256];

test('nextUp / nextDown step one ulp', () => {
  assert.is(nextUp(1), 1 + Number.EPSILON);
  assert.is(nextDown(1), 1 - Number.EPSILON / 2);
  assert.ok(nextDown(0.99) < 0.99 && 0.99 < nextUp(0.99));
  assert.is(nextDown(nextUp(0.99)), 0.99);
});

test('G1 on its line, at every head_dim: a whole cosine at the bar passes, one ulp under fails', () => {
  for (const hd of HEAD_DIMS) {
    const th = { whole: WHOLE_COSINE_MIN, perPosition: perPositionThreshold(hd), headDim: hd, overridden: false };
    for (const [where, v, pass] of around(th.whole)) {
      const [g1, g2] = metricGates(fakeMetrics({ whole: v, cosines: [1, 1, 1] }), th);
      assert.is(g1.status, pass ? 'pass' : 'fail', `head_dim ${hd}, whole cosine ${where} ${th.whole} (${v})`);
      assert.is(g2.status, 'pass');
    }
  }
});

test('G2 on its line, at every head_dim: a per-position minimum at T(head_dim) passes, one ulp under fails', () => {
  for (const hd of HEAD_DIMS) {
    const t = perPositionThreshold(hd);
    const th = { whole: WHOLE_COSINE_MIN, perPosition: t, headDim: hd, overridden: false };
    for (const [where, v, pass] of around(t)) {
      const [g1, g2] = metricGates(fakeMetrics({ whole: 0.9991, cosines: [1, v, 1] }), th);
      assert.is(g2.status, pass ? 'pass' : 'fail', `head_dim ${hd}, per-position min ${where} ${t} (${v})`);
      assert.is(g2.value, v);
      assert.is(g1.status, 'pass');
    }
  }
});

test('the norm-ratio warning flips between the neighbouring doubles of 1 +- 0.01', () => {
  // No double r has |r - 1| exactly 0.01 (the subtraction is exact and 0.01 is not a multiple of
  // these ulps), so the line falls between two neighbours on each side: 1.01 and 0.99 (|r - 1| is
  // 0.010000000000000009) warn, the next double toward 1 does not.
  const warns = (r: number) => warningsFor(fakeMetrics({ normRatio: r }), null).some((w) => w.id === 'norm_ratio');
  assert.ok(warns(1.01));
  assert.not.ok(warns(nextDown(1.01)));
  assert.ok(warns(0.99));
  assert.not.ok(warns(nextUp(0.99)));
});

/** A lens row whose lowest cosine (min of whole and per-position minimum) is `low`. */
function lensRow(name: string, order: number, low: number): LensRow {
  return {
    name, order, step: 'Q/K/V GEMM', launch: 'rms_gemms_rope', producedBy: 'rms_gemms_rope', rows: 4, cols: 8,
    wholeCosine: 1, perPositionMin: low, p5: low, median: 1, maxAbs: 0, maxRel: 0, normRatio: 1, sqnrDb: 60, nonFinite: 0,
    below: false, drifts: false, scaleOff: false, badRuns: [], profile: { bucket: 1, points: [low] },
  };
}

test('the lens warns when a boundary is under the well-below bar, at every head_dim threshold; at the bar it does not', () => {
  for (const hd of HEAD_DIMS) {
    const t = perPositionThreshold(hd);
    for (const [where, v, pass] of around(wellBelow(t))) {
      const rows = [lensRow('q', 5, v)];
      const hiding = hidingOf(rows, t, true);
      const lens: LensReport = {
        threshold: t, wellBelow: wellBelow(t), cleanBar: cleanBar(t), emulated: true, source: 'launches', table: null, reference: null,
        rows, unpaired: [], firstBelow: null, onset: null, hiding,
      };
      const w = lensWarning(lens);
      assert.is(w === null, pass, `head_dim ${hd}: a boundary ${where} the well-below bar ${wellBelow(t)} (${v})`);
      assert.is(hiding?.name ?? null, pass ? null : 'q');
    }
  }
});

/**
 * The smallest threshold t in (0.9, 1) whose `bar(t)` is at least `want` (bar grows with t):
 * binary search over the doubles' bit patterns, which order like the positive doubles.
 */
function thresholdFor(bar: (t: number) => number, want: number): number {
  f64[0] = 0.9;
  let lo = bits[0];
  f64[0] = 1;
  let hi = bits[0];
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    bits[0] = mid;
    if (bar(f64[0]) >= want) hi = mid;
    else lo = mid + 1n;
  }
  bits[0] = lo;
  return f64[0];
}

test('the judge on the lens\'s threshold and clean bar: a boundary exactly on either is neither under it nor drifting', async () => {
  // One boundary whose NPU side is its reference turned a little, for each head_dim's clean bar;
  // the judge computes its cosine from the files, then judges it against thresholds chosen so
  // that each bar falls exactly on that cosine, one ulp above it, and one ulp below it.
  const dir = mkdtempSync(join(tmpdir(), 'nbg-thresholds-'));
  mkdirSync(join(dir, 'boundaries'));
  for (const hd of HEAD_DIMS) {
    const target = cleanBar(perPositionThreshold(hd));
    const s = Math.sqrt(1 - target * target);
    const ref = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]];
    const npu = [[target, s, 0, 0], [0, target, s, 0], [0, 0, target, s]];
    const entry = (side: string) => ({ file: `boundaries/${hd}-q.${side}.npy`, dtype: 'f32' as const, shape: [3, 4] });
    writeFileSync(join(dir, entry('npu').file), npyOf(npu));
    writeFileSync(join(dir, entry('ref').file), npyOf(ref));
    const b: Boundaries = {
      source: 'launches', table: null, emulated: true, reference: null, layout: 'seq-first', unpaired: [],
      entries: [{ name: 'q', order: 5, step: 'Q/K/V GEMM', launch: 'rms_gemms_rope', arg: 3, source: 'launch', produced_by: 'rms_gemms_rope', npu: entry('npu'), ref: entry('ref') }],
    };
    const judged = async (threshold: number) => (await compareBoundaries(dir, b, threshold))[0];
    const first = await judged(perPositionThreshold(hd));
    const low = Math.min(first.wholeCosine, first.perPositionMin);
    assert.ok(Math.abs(low - target) < 1e-6, `head_dim ${hd}: the boundary's cosine ${low} is near the clean bar ${target}`);
    // A bar at the cosine or one ulp under it: the boundary is on the good side; one ulp over: not.
    const bars: [string, number, boolean][] = [['at', low, true], ['one ulp above', nextUp(low), false], ['one ulp below', nextDown(low), true]];
    for (const [where, bar, clean] of bars) {
      // The threshold itself on the line: under it is a verdict-strength "below".
      let row = await judged(bar);
      assert.is(row.below, !clean, `head_dim ${hd}: cosine ${low}, threshold ${where} it (${bar})`);
      // The clean bar on the line: a threshold whose clean bar is `bar` exactly.
      const t = thresholdFor(cleanBar, bar);
      assert.is(cleanBar(t), bar, `a threshold near ${perPositionThreshold(hd)} whose clean bar is ${bar}`);
      assert.ok(Math.abs(t - perPositionThreshold(hd)) < 1e-5, `head_dim ${hd}: threshold ${t}`);
      row = await judged(t);
      assert.is(row.drifts, !clean, `head_dim ${hd}: cosine ${low}, clean bar ${where} it (${bar})`);
      assert.is(row.below, false);
    }
  }
});

test('G3: one NaN, one +Inf or one -Inf alone fails it, with the count; none passes', () => {
  const th = { whole: WHOLE_COSINE_MIN, perPosition: perPositionThreshold(64), headDim: 64, overridden: false };
  const g3 = (m: ReturnType<typeof fakeMetrics>) => metricGates(m, th).find((g) => g.id === 'G3')!;
  assert.is(g3(fakeMetrics()).status, 'pass');
  for (const kind of ['nan', 'posInf', 'negInf'] as const) {
    const m = fakeMetrics();
    m.nonFinite[kind] = { count: 1, first: { row: 1, col: 2 } };
    assert.is(g3(m).status, 'fail', kind);
    assert.is(g3(m).value, 1, kind);
  }
});

test.run();
