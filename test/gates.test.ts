import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { perPositionThreshold, formatThreshold } from '../src/seed/thresholds.ts';
import { metricGates, outcomeOf, warningsFor, documentationGate } from '../src/gates/evaluate.ts';
import { compare, jsKernel } from '../src/metrics/index.ts';
import { fakeMetrics } from './helpers/report.ts';
import { memTensor } from './helpers/mem-tensor.ts';

const TH = { whole: 0.99, perPosition: 0.99, headDim: 64, overridden: false };

test('T(head_dim) matches the seed table and is monotone between', () => {
  assert.is(perPositionThreshold(64), 0.99);
  assert.is(Number(perPositionThreshold(128).toFixed(10)), 0.98);
  assert.is(Number(perPositionThreshold(256).toFixed(10)), 0.97);
  assert.is(perPositionThreshold(32), 0.99);
  assert.is(perPositionThreshold(512), 0.97);
  assert.is(formatThreshold(perPositionThreshold(96)), '0.9842');
  assert.is(formatThreshold(perPositionThreshold(80)), '0.9868');
  let prev = 1;
  for (let hd = 16; hd <= 1024; hd += 8) {
    const t = perPositionThreshold(hd);
    assert.ok(t <= prev, `not monotone at ${hd}`);
    prev = t;
  }
  assert.throws(() => perPositionThreshold(0), /head_dim/);
});

test('all gates pass on clean metrics', () => {
  const g = metricGates(fakeMetrics(), TH);
  assert.equal(g.map((x) => x.status), ['pass', 'pass', 'pass']);
  assert.is(outcomeOf(g), 'pass');
});

test('G1 fails under 0.99 whole cosine, G2 on a low row, NaN fails both', () => {
  let g = metricGates(fakeMetrics({ whole: 0.98 }), TH);
  assert.is(g[0].status, 'fail');
  assert.is(g[1].status, 'pass');
  g = metricGates(fakeMetrics({ cosines: [0.999, 0.5, 0.999] }), TH);
  assert.is(g[0].status, 'pass');
  assert.is(g[1].status, 'fail');
  g = metricGates(fakeMetrics({ whole: NaN, cosines: [0.999, NaN], nan: 3, nanRow: 1 }), TH);
  assert.equal(g.map((x) => x.status), ['fail', 'fail', 'fail']);
  assert.match(g[2].detail, /3 NaN \(first at row 1, col 3\)/);
});

test('G3 names a NaN in a padded row', () => {
  const g = metricGates(fakeMetrics({ nan: 1, nanRow: 5, realLen: 4, npuRows: 8 }), TH);
  assert.equal(g.map((x) => x.status), ['pass', 'pass', 'fail']);
  assert.match(g[2].detail, /a padded row/);
});

test('G3 fails on a lone +Inf or a lone -Inf in a padded row, as on a NaN, while G1 and G2 pass on the clean real rows', async () => {
  const ref = [[1, 2, 3], [4, 5, 6]];
  for (const [v, label] of [[Infinity, '+Inf'], [-Infinity, '-Inf']] as const) {
    const m = await compare(memTensor([...ref, [0, v, 0]], 'npu.npy'), memTensor(ref, 'ref.npy'), { threshold: TH.perPosition }, jsKernel);
    const g = metricGates(m, TH);
    assert.equal(g.map((x) => x.status), ['pass', 'pass', 'fail'], label);
    assert.is(g[2].value, 1, label);
    assert.is(g[2].detail, `1 ${label} (first at row 2, col 1, a padded row)`);
  }
});

test('G4 skipped never fails the outcome; G4 failed does', () => {
  const skip = documentationGate({ attempted: false, ok: false, path: '', detail: 'no docs' });
  assert.is(skip.status, 'skip');
  assert.is(outcomeOf([...metricGates(fakeMetrics(), TH), skip]), 'pass');
  const bad = documentationGate({ attempted: true, ok: false, path: 'x', detail: 'could not write' });
  assert.is(outcomeOf([...metricGates(fakeMetrics(), TH), bad]), 'fail');
});

test('scale drift passes the gates but warns with the norm ratio', () => {
  const m = fakeMetrics({ normRatio: 1.05 });
  assert.is(outcomeOf(metricGates(m, TH)), 'pass');
  const w = warningsFor(m, null);
  assert.ok(w.some((x) => x.id === 'norm_ratio' && /1\.0500/.test(x.message) && /\+5\.0%/.test(x.message)));
  assert.not.ok(warningsFor(fakeMetrics({ normRatio: 1.004 }), null).some((x) => x.id === 'norm_ratio'));
});

test('max_abs regression warning over 1.5x the baseline only', () => {
  assert.ok(warningsFor(fakeMetrics({ maxAbs: 0.016 }), { maxAbs: 0.01, commit: 'c1' }).some((x) => x.id === 'max_abs_regression'));
  assert.not.ok(warningsFor(fakeMetrics({ maxAbs: 0.014 }), { maxAbs: 0.01, commit: 'c1' }).some((x) => x.id === 'max_abs_regression'));
});

test.run();
