// The lens sees scale (issue 17.4): every boundary's norm ratio, a scale warning at the first
// boundary off 1 by more than 0.5% with its likely cause and the seed's hint, and the onset of a
// drift shown in the terminal, report.md, the comment and phase2_block.md even when nothing is
// under the threshold. Judged here from fixtures; test/lens.test.ts runs the real tree end to end.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lensOf, lensScaleWarning, scaleCause } from '../src/lens/judge.ts';
import { renderTerminal } from '../src/report/terminal.ts';
import { renderMarkdown } from '../src/report/markdown.ts';
import { LENS_SCALE_WARN } from '../src/seed/thresholds.ts';
import type { Boundaries } from '../src/rundir/schema.ts';
import { fakeLens, fakeMetrics, fakeReport } from './helpers/report.ts';

const B: Boundaries = { source: 'launches', table: 't', emulated: true, reference: 'hf-layer0-hooks/1', layout: 'seq-first', entries: [], unpaired: [] };

test('the first boundary off in scale by more than 0.5% is named, with its likely cause and the seed hint', () => {
  // Qwen's RMSNorm ELF eps (1e-5) against the config's 1e-6: attn_norm and everything it feeds lose 1.1%.
  const rows = fakeLens({ ratio: { attn_norm: 0.989, q: 0.989, k: 0.989, v: 0.989, q_roped: 0.989 } }).rows;
  const lens = lensOf(B, rows, 0.99, true);
  assert.is(lens.scale!.name, 'attn_norm');
  assert.is(lens.scale!.bar, LENS_SCALE_WARN);
  assert.match(lens.scale!.cause, "the RMSNorm's eps or weight");
  assert.is(lens.firstBelow, null, 'cosine sees none of it');
  const w = lensScaleWarning(lens)!;
  assert.is(w.id, 'lens_scale');
  assert.match(w.message, 'boundary attn_norm (RMSNorm) is off in scale: norm ratio |npu|/|ref| 0.9890 (-1.10%, more than 0.5% from 1');
  assert.match(w.message, "likely the RMSNorm's eps or weight");
  assert.match(w.message, 'the seed: norm weight, eps or the row layout');
  // Within 0.5% (bf16 rounding of the scale moves rows by a few tenths of a percent): no warning.
  const quiet = lensOf(B, fakeLens({ ratio: { attn_norm: 0.996, ffn_out: 1.004 } }).rows, 0.99, true);
  assert.is(quiet.scale, null);
  assert.is(lensScaleWarning(quiet), null);
});

test('the likely cause follows the kind of boundary', () => {
  assert.match(scaleCause({ name: 'ffn_norm', step: 'RMSNorm' }), 'eps or weight');
  assert.match(scaleCause({ name: 'q_norm', step: 'Q/K Norm' }), 'eps or weight');
  assert.match(scaleCause({ name: 'attn_out', step: 'FlashAttention' }), '1/sqrt(head_dim)');
  assert.match(scaleCause({ name: 'block_input', step: 'input' }), 'sqrt(hidden_size)');
  assert.match(scaleCause({ name: 'down', step: 'Down GEMM' }), 'missing scale factor');
});

test('a scale warning and a drift onset show in the terminal, report.md, the comment and phase2_block.md', () => {
  // An ignored FFN-norm weight: nothing under the threshold, ffn_norm drifts (under the clean bar) and loses scale.
  const lens = lensOf(B, fakeLens({ threshold: 0.98, cos: { ffn_norm: [0.9947, 0.9931], gate: [0.9951, 0.994] }, ratio: { ffn_norm: 1.062, gate: 1.05 } }).rows, 0.98, true);
  assert.is(lens.firstBelow, null);
  assert.is(lens.onset!.name, 'ffn_norm');
  const r = { ...fakeReport(fakeMetrics()), lens, warnings: [lensScaleWarning(lens)!], emulate: { runtime: 'twins', inject: 'ignored_ffn_norm_weight' } };
  const term = renderTerminal(r);
  assert.match(term, /15 +ffn_norm +RMSNorm +0\.994700 +0\.993100 +1\.0620 +[0-9.e-]+ +onset SCALE/);
  assert.match(term, 'every boundary is at or above 0.98, but a drift begins at ffn_norm (RMSNorm, written by o_ffn), cosine 0.994700');
  assert.match(term, 'scale: ffn_norm (RMSNorm) has norm ratio 1.0620, off 1 by more than 0.5%');
  assert.match(term, 'warning: the lens: boundary ffn_norm (RMSNorm) is off in scale');
  for (const flavor of ['summary', 'comment', 'doc'] as const) {
    const md = renderMarkdown(r, { flavor });
    assert.match(md, '**but a drift begins at `ffn_norm`** (RMSNorm, written by `o_ffn`): cosine 0.994700', flavor);
    assert.match(md, '**Scale: `ffn_norm`** (RMSNorm, written by `o_ffn`) has norm ratio 1.0620', flavor);
    assert.match(md, /\| onset ⚠️ scale \|/, flavor);
  }
});

test.run();
