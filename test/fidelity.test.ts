// Issues 17 and 29 end to end through the CLI on the real mlir-air tree's code at tiny configs (`check
// --emulate`, the probe's emulated NPU: CPU twins at the default precision hw, BFP16 included):
//  - the error budget is judged against the hardware twins' own error: clean runs of every bf16 model
//    pass every gate and boundary with no budget warning, though BFP16 puts them 3x and more over bf16;
//  - Qwen's RMSNorm ELFs use eps 1e-5 where the config says 1e-6: one finding with its file and line,
//    the rest of the lens judged with it accounted for (none with the config's eps); an ignored
//    FFN-norm weight is then warned at ffn_norm, and on qwen3 its onset is named in the terminal and
//    report.md though every boundary passes its bar;
//  - a bisect under a wrapper `--python` runs the same interpreter and environment as the check,
//    reproduces the judged ffn_out and names the right launch; one whose re-run does not reproduce
//    is void and says so.
// Needs the Python the tests use with torch, transformers and ml_dtypes (NPU_BLOCK_GATE_PYTHON).
import { test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fromJson } from '../src/report/json.ts';
import type { Report } from '../src/record/report.ts';
import { renderTerminal } from '../src/report/terminal.ts';
import { missingTwins, twinsTree, withEnv, type TwinsTree } from './helpers/twins.ts';
import { cli } from './helpers/rundir.ts';
import { REPO } from './helpers/airmini.ts';

const maybe = test.unless(missingTwins());

let tree: TwinsTree | null = null;
const runs = mkdtempSync(join(tmpdir(), 'nbg-fidelity-'));
let n = 0;

async function check(model: string, extra: string[], o: { python?: string; env?: Record<string, string> } = {}) {
  tree ??= twinsTree(['llama', 'qwen2', 'qwen3', 'smollm2']);
  const t = tree;
  const out = join(runs, `${model}-${n++}`);
  const r = await withEnv({ ...(o.env ?? t.env), NPU_BLOCK_GATE_NPU_LOCK: 'none' }, () => cli([
    'check', '--model-dir', t.model(model), '--out', out, '--emulate', '--model', t.hfId(model), '--prompt-style', 'instruct',
    '--python', o.python ?? t.python, '--no-cache', '--no-docs', '--json', ...extra,
  ]));
  assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.err.slice(-3000)}`);
  return { ...r, report: fromJson<Report>(r.out), out };
}

// Issue 29: at the default twin precision hw (BFP16 where the tree compiles it) a clean run's error
// against FP32 is 3.4-4.1x bf16's own, so the budget is judged against the hardware twins' error.
const EPS_AT = 'programming_examples/weighted_rms_norm/weighted_rms_norm.py:40';

for (const model of ['qwen25_0_5b', 'qwen3_0_6b']) {
  maybe(`${model}: the tree's RMSNorm eps is one finding with its file and line, and the rest of a clean run warns of nothing`, async () => {
    const tr = await check(model, []);
    const lens = tr.report.lens!;
    assert.is(tr.report.outcome, 'pass');
    assert.is(lens.firstBelow, null, 'cosine sees nothing');
    const eps = tr.report.warnings.filter((x) => x.id === 'norm_eps');
    assert.is(eps.length, 1, JSON.stringify(tr.report.warnings));
    assert.match(eps[0].message, `the tree's RMSNorm ELFs use eps 1e-5 (${EPS_AT}) where the checkpoint's config.json says rms_norm_eps 1e-6`);
    assert.ok(lens.normEps!.at!.normRatio < 0.995, 'the eps moves attn_norm off 1 by more than 0.5%');
    // accounted for: no scale warning, no budget warning, though the NPU is 3x and more bf16's error
    assert.is(lens.scale, null, JSON.stringify(lens.rows.map((x) => [x.name, x.normRatio, x.accountedRatio])));
    assert.not.ok(tr.report.warnings.some((x) => x.id === 'lens_scale' || x.id === 'error_budget'), JSON.stringify(tr.report.warnings));
    assert.equal(lens.budget!.expected!.precision, 'hw');
    for (const x of lens.rows) {
      if (x.name === 'block_input') continue;
      assert.ok(x.budget!.vsExpected! >= 0.5 && x.budget!.vsExpected! <= 2, `${x.name}: NPU/expected ${x.budget!.vsExpected}`);
    }
    assert.ok(lens.rows.find((x) => x.name === (model === 'qwen25_0_5b' ? 'q_gemm' : 'q'))!.budget!.ratio > 3, 'BFP16 is over bf16 3x at the Q GEMM');
    assert.match(renderTerminal(tr.report), /error budget vs FP32 \(relative L2 error .*\)  NPU [0-9.e-]+  HF bf16 [0-9.e-]+  ratio \d\.\d\dx  expected \d\.\d\dx \(hardware twins [0-9.e-]+\)  NPU\/expected 1\.\d\dx \(bar 3x\)/);
    assert.match(renderTerminal(tr.report), `warning: a known upstream mismatch: the tree's RMSNorm ELFs use eps 1e-5 (${EPS_AT})`);
    // the twins at the config's eps: nothing to name
    const cfg = await check(model, ['--twin-eps', 'config']);
    assert.is(cfg.report.lens!.scale, null, JSON.stringify(cfg.report.lens!.rows.map((x) => [x.name, x.normRatio])));
    assert.not.ok(cfg.report.warnings.some((x) => ['lens_scale', 'error_budget', 'norm_eps'].includes(x.id)), JSON.stringify(cfg.report.warnings));
    assert.match(cfg.err, "the twins' RMSNorm eps is the config's 1e-06");
  });

  maybe(`${model} with an ignored FFN-norm weight at the tree's eps: a warning names ffn_norm, the eps is named once as its own finding`, async () => {
    const r = await check(model, ['--inject', 'ignored_ffn_norm_weight']);
    const ws = r.report.warnings;
    assert.is(ws.filter((x) => x.id === 'norm_eps').length, 1, JSON.stringify(ws));
    const own = ws.filter((x) => x.id !== 'norm_eps');
    assert.ok(own.some((x) => /^(the error budget against FP32|the lens): boundary ffn_norm \(RMSNorm\)/.test(x.message)), JSON.stringify(own));
    assert.not.ok(own.some((x) => /boundary attn_norm/.test(x.message)), 'the eps is not warned again as a scale or budget onset');
    assert.is(r.report.lens!.onset!.name, 'ffn_norm');
    if (model !== 'qwen3_0_6b') return;
    // on qwen3 every boundary passes its bar: the onset is named in the terminal and report.md
    assert.is(r.report.outcome, 'pass');
    assert.is(r.report.lens!.firstBelow, null);
    assert.match(renderTerminal(r.report), /every boundary is at or above 0\.98, but a drift begins at ffn_norm \(RMSNorm, written by o_ffn_qwen\), cosine 0\.99/);
    assert.match(readFileSync(join(r.out, 'report.md'), 'utf8'), /\*\*but a drift begins at `ffn_norm`\*\* \(RMSNorm, written by `o_ffn_qwen`\): cosine 0\.99/);
  });
}

maybe('clean runs of llama32_1b, llama32_3b and smollm2 at hw: every gate and every boundary pass, no budget or scale warning', async () => {
  for (const [model, extra] of [['llama32_1b', []], ['llama32_3b', ['--cpu-attn']], ['smollm2_1_7b', []]] as [string, string[]][]) {
    const r = await check(model, extra);
    const lens = r.report.lens!;
    assert.is(r.report.outcome, 'pass', model);
    assert.equal([lens.firstBelow, lens.onset, lens.scale], [null, null, null], model);
    assert.not.ok(r.report.warnings.some((x) => ['lens', 'lens_scale', 'error_budget', 'norm_eps'].includes(x.id)), `${model}: ${JSON.stringify(r.report.warnings)}`);
    assert.equal(lens.budget!.expected!.precision, 'hw', model);
    const ffn = lens.rows.find((x) => x.name === 'ffn_out')!.budget!;
    assert.ok(ffn.ratio > 3 && ffn.vsExpected! <= 2, `${model}: ffn_out ${ffn.ratio} over bf16, ${ffn.vsExpected} over the twins`);
  }
});

maybe('a bisect under a wrapper --python runs the check\'s interpreter and environment, reproduces the judged ffn_out and names the launch', async () => {
  tree ??= twinsTree(['llama', 'qwen2', 'qwen3', 'smollm2']);
  const t = tree;
  // The wrapper brings the environment (the offline HF hub): the check's own environment has none,
  // so a bisect that skipped the wrapper could not even load the weights.
  const bin = join(runs, 'wrapped', 'bin');
  mkdirSync(bin, { recursive: true });
  const wrapper = join(bin, 'python');
  const exports = Object.entries(t.env).map(([k, v]) => `export ${k}=${JSON.stringify(v)}`).join('\n');
  writeFileSync(wrapper, `#!/bin/sh\n${exports}\nexec ${JSON.stringify(t.python)} "$@"\n`);
  chmodSync(wrapper, 0o755);
  const bare = Object.fromEntries(Object.keys(t.env).map((k) => [k, '']));
  const r = await check('qwen25_0_5b', ['--inject', 'dropped_bias'], { python: wrapper, env: bare });
  const b = r.report.bisect!;
  assert.is(r.report.outcome, 'fail');
  assert.ok(b.available, b.reason);
  assert.is(b.void, null);
  assert.equal([b.rerun!.exact, b.rerun!.reproduced], [true, true]);
  assert.equal([b.launchOffender!.launch, b.launchOffender!.buffer], ['rms_qkv_bias_rope', 'q_b']);
  // the lens's error budget against FP32 lands far over the hardware twins' error at the bug's boundary
  assert.ok(r.report.lens!.rows.find((x) => x.name === 'q')!.budget!.vsExpected! > 3);
  assert.is(b.offender!.step, 'rms_qkv_bias_rope');
  assert.match(renderTerminal(r.report), 'gave back the judged ffn_out bit for bit');
});

maybe('a bisect whose re-run does not reproduce the judged ffn_out is void and says so', async () => {
  tree ??= twinsTree(['llama', 'qwen2', 'qwen3', 'smollm2']);
  const t = tree;
  const r = await check('qwen25_0_5b', ['--inject', 'dropped_bias', '--no-bisect']);
  assert.is(r.report.outcome, 'fail');
  // The run dir changes under the bisect (here: the bug it was judged with is gone), as when the
  // bisect runs another interpreter, tree or checkpoint than the check did.
  const pj = join(r.out, 'probe.json');
  const p = JSON.parse(readFileSync(pj, 'utf8'));
  p.emulate.inject = null;
  writeFileSync(pj, JSON.stringify(p));
  const b = spawnSync(t.python, [join(REPO, 'scripts/probe'), 'bisect', '--run-dir', r.out, '--npu-lock', 'none'],
    { encoding: 'utf8', env: { ...process.env, ...t.env }, timeout: 900_000 });
  assert.is(b.status, 0, b.stderr);
  const j = await cli(['report', '--run-dir', r.out, '--no-docs', '--json']);
  const rep = fromJson<Report>(j.out);
  const bis = rep.bisect!;
  assert.match(bis.void!, /^the bisect is void: block 0 re-run unswapped under .* did not give back the judged ffn_out \(relative L2 /);
  assert.is(bis.rerun!.reproduced, false);
  assert.equal([bis.offender, bis.launchOffender], [null, null]);
  assert.match(renderTerminal(rep), 'BISECT VOID: the bisect is void');
  assert.match(readFileSync(join(r.out, 'report.md'), 'utf8'), '**Bisect void**');
});

test.run();
