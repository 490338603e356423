// Issue 29.2 and 29.3, judged from fixtures (test/fidelity.test.ts runs the real tree end to end):
//  - the error budget against the hardware twins: NPU2's BFP16 operands cost a right integration
//    3.4-4.1x bf16's own error against FP32 (the issue's figures), so the budget reports that expected
//    ratio (the hw twins' error against FP32 over bf16's) beside today's and warns on the NPU's error
//    over the twins' (about 1 for a right integration, whatever the format);
//  - the tree's RMSNorm eps against the config's (1e-5 against Qwen's 1e-6) is named once, as a finding
//    with its file and line, and the rest of the lens is judged with it accounted for: the scale a
//    boundary loses beyond what the twins at the same eps lose.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { budgetFrom, lensBudgetWarnings, lensOf } from '../src/lens/judge.ts';
import { renderTerminal } from '../src/report/terminal.ts';
import { renderMarkdown } from '../src/report/markdown.ts';
import { fromJson } from '../src/report/json.ts';
import type { Report } from '../src/record/report.ts';
import type { Boundaries } from '../src/rundir/schema.ts';
import { fakeMetrics, fakeReport } from './helpers/report.ts';
import { comparedRows } from './helpers/lens.ts';
import { cli, fixture, npyOf, refValues } from './helpers/rundir.ts';

const TWIN = { precision: 'hw', rms_eps: 1e-5, qk_eps: 1e-6, eps_from: 'tree', what: 'the hardware twins run again' };
const B: Boundaries = { source: 'launches', table: 't', emulated: true, reference: 'hf-layer0-hooks/1', layout: 'seq-first', entries: [], unpaired: [], twin: TWIN };

test("BFP16's own error is no budget warning; an NPU over the hardware twins' error is, with both ratios said", async () => {
  // A right integration on NPU2: 3.5x bf16's error at every boundary, exactly what the hw twins give.
  const clean = (await comparedRows()).map((x) => ({ ...x, budget: budgetFrom(3.5e-3, 1e-3, undefined, 3.5e-3) }));
  const ok = lensOf(B, clean, 0.99, true);
  assert.equal(ok.budget!.expected, { bar: 3, precision: 'hw', what: TWIN.what });
  assert.equal(lensBudgetWarnings(ok), [], 'over bf16 3.5x, but that is the format: no warning');
  assert.is(budgetFrom(3.5e-3, 1e-3).over, true, 'without the twins the same run is over the bar of 3');
  const b = clean[5].budget!;
  assert.ok(Math.abs(b.ratio - 3.5) < 1e-9 && Math.abs(b.expectedRatio! - 3.5) < 1e-9 && Math.abs(b.vsExpected! - 1) < 1e-9, JSON.stringify(b));
  // An integration bug at q: 20x the twins' error there (a transposed weight is 80-137x in the issue's runs).
  const bug = (await comparedRows()).map((x) => ({ ...x, budget: budgetFrom(x.name === 'q' ? 0.07 : 3.5e-3, 1e-3, undefined, 3.5e-3) }));
  const lens = lensOf(B, bug, 0.99, true);
  const [w, ...rest] = lensBudgetWarnings(lens);
  assert.is(rest.length, 0);
  assert.match(w.message, 'boundary q (Q/K/V GEMM) has 20x the error the hardware twins have');
  assert.match(w.message, 'NPU 0.07, hardware twins 0.0035 (precision hw), HF bf16 0.001; bar 3x');
  const r = { ...fakeReport(fakeMetrics()), lens, warnings: [w] };
  const term = renderTerminal(r);
  assert.match(term, /05 +q +Q\/K\/V GEMM +0\.999990 +0\.999980 +1\.0000 +70x +3\.50x +20x +[0-9.e-]+ +ERR/);
  assert.match(term, /06 +k +Q\/K\/V GEMM +0\.999990 +0\.999980 +1\.0000 +3\.50x +3\.50x +1\.00x +[0-9.e-]+ *\n/);
  assert.match(term, 'NPU/exp: error(NPU) / error(hardware twins), bar 3x');
  assert.match(term, 'ratio 3.50x  expected 3.50x (hardware twins 0.0035)  NPU/expected 1.00x (bar 3x)');
  const md = renderMarkdown(r, { flavor: 'comment' });
  assert.match(md, '| vs FP32 | expected | NPU/exp |');
  assert.match(md, 'expected ratio 3.50x (the hardware twins, precision hw: 0.0035); NPU over expected **1.00x** (bar 3x)');
  // A boundary no twin wrote (host attention under --cpu-attn) is not laid at the NPU's door.
  assert.equal(budgetFrom(3.2e-3, 1e-3, undefined, null), { npu: 3.2e-3, bf16: 1e-3, ratio: 3.2, over: false });
});

/** A run dir whose lens has attn_norm and ffn_norm with npu, ref, fp32 and twin sides. `npuScale`
 * and `twinScale`: each side's values as the HF bf16 side's times that, per boundary. */
function epsRunDir(npuScale: Record<string, number>, twinScale: Record<string, number>, o: { normEps?: boolean; twinShape?: number[] } = {}) {
  const names: [string, number][] = [['attn_norm', 1], ['ffn_norm', 15]];
  const f = fixture({
    probe: (p) => {
      const shape = [p.prompt.real_len, p.tensors.ref.shape[1]];
      const t = (n: string, o2: number, side: string, s = shape) => ({ file: `boundaries/${String(o2).padStart(2, '0')}-${n}.${side}.npy`, dtype: 'f32', shape: s });
      p.boundaries = {
        source: 'launches', table: 't', emulated: true, reference: 'hf-layer0-hooks/1', layout: 'seq-first',
        entries: names.map(([n, order]) => ({
          name: n, order, step: 'RMSNorm', launch: n === 'attn_norm' ? 'rms_qkv_bias_rope' : 'o_ffn_head', arg: 2, source: 'launch', produced_by: null,
          npu: t(n, order, 'npu'), ref: t(n, order, 'ref'), fp32: t(n, order, 'fp32'), twin: t(n, order, 'twin', o.twinShape),
        })),
        unpaired: [], fp32: { dtype: 'float32', what: 'HF layer 0 in float32' }, twin: TWIN,
        norm_eps: o.normEps === false ? null : {
          tree: 1e-5, file: 'programming_examples/weighted_rms_norm/weighted_rms_norm.py', line: 40, config: 1e-6,
          config_from: 'Qwen/Qwen2.5-0.5B-Instruct/config.json', twins: 1e-5, twins_from: 'tree',
        },
      };
    },
  });
  mkdirSync(join(f.runDir, 'boundaries'));
  for (const [n, order] of names) {
    const truth = refValues(undefined, undefined, order + 3);
    const ref = truth.map((r) => r.map((v, j) => v * (1 + (j % 2 ? 1e-3 : -1e-3))));
    const p = (side: string) => join(f.runDir, `boundaries/${String(order).padStart(2, '0')}-${n}.${side}.npy`);
    writeFileSync(p('fp32'), npyOf(truth));
    writeFileSync(p('ref'), npyOf(ref));
    writeFileSync(p('npu'), npyOf(ref.map((r) => r.map((v) => v * npuScale[n]))));
    writeFileSync(p('twin'), npyOf(ref.map((r) => r.map((v) => v * twinScale[n]))));
  }
  f.save();
  return f;
}

async function judged(runDir: string) {
  const r = await cli(['report', '--run-dir', runDir, '--no-docs', '--json']);
  assert.is(r.code, 0, r.err);
  return fromJson<Report>(r.out);
}

test("the tree's RMSNorm eps is named once, with its file and line, and the lens judges the rest with it accounted for", async () => {
  // Qwen at the tree's eps with an ignored FFN-norm weight (the figures): attn_norm 0.989
  // on the NPU and on the twins (the eps alone), ffn_norm 0.981 on the NPU against the twins' 0.989.
  const rep = await judged(epsRunDir({ attn_norm: 0.989, ffn_norm: 0.95 }, { attn_norm: 0.989, ffn_norm: 0.989 }).runDir);
  const eps = rep.warnings.filter((w) => w.id === 'norm_eps');
  assert.is(eps.length, 1, JSON.stringify(rep.warnings));
  assert.match(eps[0].message, "the tree's RMSNorm ELFs use eps 1e-5 (programming_examples/weighted_rms_norm/weighted_rms_norm.py:40) where the checkpoint's config.json says rms_norm_eps 1e-6");
  assert.match(eps[0].message, 'at attn_norm it moves the scale to a norm ratio of 0.9890 (the hardware twins at the tree\'s eps: 0.9890)');
  assert.match(eps[0].message, 'the lens judges scale and the error budget with it accounted for');
  assert.equal(rep.lens!.normEps!.at!.name, 'attn_norm');
  // attn_norm is the eps and nothing else: no scale or budget warning names it
  const others = rep.warnings.filter((w) => w.id !== 'norm_eps');
  assert.not.ok(others.some((w) => /boundary attn_norm/.test(w.message)), JSON.stringify(others));
  // ffn_norm is not: its own scale warning (0.95 / 0.989) and its own budget warning
  const scale = others.find((w) => w.id === 'lens_scale')!;
  assert.match(scale.message, "boundary ffn_norm (RMSNorm) is off in scale: norm ratio |npu|/|twins| 0.9606 with the tree's RMSNorm eps accounted for (|npu|/|ref| 0.9500");
  assert.match(others.find((w) => w.id === 'error_budget')!.message, 'boundary ffn_norm (RMSNorm) has');
  assert.match(renderTerminal(rep), 'warning: a known upstream mismatch');
  // Without the finding (an older run dir, or eps that agree) attn_norm is a scale warning as before.
  const old = await judged(epsRunDir({ attn_norm: 0.989, ffn_norm: 0.95 }, { attn_norm: 0.989, ffn_norm: 0.989 }, { normEps: false }).runDir);
  assert.is(old.warnings.filter((w) => w.id === 'norm_eps').length, 0);
  assert.match(old.warnings.find((w) => w.id === 'lens_scale')!.message, 'boundary attn_norm (RMSNorm) is off in scale: norm ratio |npu|/|ref| 0.9890');
});

test('a twin side of another shape is bad input naming it (exit 2)', async () => {
  const bad = await cli(['report', '--run-dir', epsRunDir({ attn_norm: 1, ffn_norm: 1 }, { attn_norm: 1, ffn_norm: 1 }, { twinShape: [2, 16] }).runDir, '--no-docs']);
  assert.is(bad.code, 2);
  assert.match(bad.err, /boundaries\.entries\[0\]\.twin\.shape is \[2, 16\] but its ref side is \[5, 16\]/);
});

test.run();
