// The real lens judgement on recorded boundary tensors (issue 27.3), in the fast tier: three runs of
// examples/air-mini's tiny_llama with the numpy-only probe (test/fixtures/lens/README.md), judged by
// src/lens/judge.ts as `report` judges a run dir. What each should show is the seed's and issue 17's
// account of the bug, written here: a RoPE pairing bug diverges first at q_roped and nothing before
// it; an ignored RMSNorm weight shows first at attn_norm (the onset), off in scale there, and crosses
// the threshold only in the GEMMs it feeds; a clean run shows nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compareBoundaries, lensOf, lensScaleWarning } from '../src/lens/judge.ts';
import type { Boundaries } from '../src/rundir/schema.ts';
import type { LensReport } from '../src/record/lens.ts';
import { REPO } from './helpers/airmini.ts';

const FIXTURES = join(REPO, 'test/fixtures/lens');
/** tiny_llama's head_dim is 64: the seed's per-position bar 0.99, the clean bar 0.999. */
const THRESHOLD = 0.99;

async function judged(name: string): Promise<LensReport> {
  const dir = join(FIXTURES, name);
  const b = JSON.parse(readFileSync(join(dir, 'boundaries.json'), 'utf8')) as Boundaries;
  return lensOf(b, await compareBoundaries(dir, b, THRESHOLD), THRESHOLD, false);
}

const BLOCK_ORDER = ['block_input', 'attn_norm', 'q', 'k', 'v', 'q_roped', 'k_roped', 'attn_out', 'o_proj', 'res1', 'ffn_norm', 'gate', 'up', 'swiglu', 'down', 'ffn_out'];

test('a clean run: every boundary at or above the clean bar, in scale, nothing named', async () => {
  const l = await judged('clean');
  assert.equal(l.rows.map((r) => r.name), BLOCK_ORDER);
  assert.equal([l.firstBelow, l.onset, l.scale], [null, null, null]);
  for (const r of l.rows) {
    assert.ok(Math.min(r.wholeCosine, r.perPositionMin) >= 0.999, `${r.name}: ${r.wholeCosine} / ${r.perPositionMin}`);
    assert.ok(Math.abs(r.normRatio - 1) <= 0.005, `${r.name}: norm ratio ${r.normRatio}`);
  }
});

test('interleaved RoPE pairs: the divergence begins and crosses at q_roped; everything before it is clean', async () => {
  const l = await judged('interleaved_rope');
  assert.equal(l.rows.map((r) => r.name), BLOCK_ORDER);
  assert.is(l.firstBelow?.name, 'q_roped');
  assert.is(l.onset?.name, 'q_roped');
  for (const r of l.rows.slice(0, BLOCK_ORDER.indexOf('q_roped'))) assert.ok(!r.below && !r.drifts, r.name);
  assert.ok(l.rows.find((r) => r.name === 'k_roped')!.below, 'K is rotated the same wrong way');
  assert.match(l.firstBelow!.hint?.cause ?? '', /RoPE/);
});

test('an ignored RMSNorm weight: the onset and the scale at attn_norm (a ratio under 1), the crossing in a GEMM it feeds', async () => {
  const l = await judged('ignored_rmsnorm_weight');
  assert.is(l.onset?.name, 'attn_norm');
  const norm = l.rows.find((r) => r.name === 'attn_norm')!;
  assert.ok(norm.drifts && !norm.below, `attn_norm drifts (under 0.999) but is not under 0.99: ${norm.wholeCosine} / ${norm.perPositionMin}`);
  assert.is(l.scale?.name, 'attn_norm');
  assert.ok(l.scale!.normRatio < 0.995, `under 1 by more than 0.5%: ${l.scale!.normRatio}`);
  assert.match(lensScaleWarning(l)!.message, /boundary attn_norm \(RMSNorm\) is off in scale: norm ratio \|npu\|\/\|ref\| 0\.\d+ \(-\d/);
  assert.match(l.scale!.cause, "the RMSNorm's eps or weight");
  assert.ok(['q', 'k', 'v'].includes(l.firstBelow?.name ?? ''), `first under the threshold: ${l.firstBelow?.name}`);
});

test.run();
