// Issue 10 end to end through the CLI: `check --emulate` on the real mlir-air tree's llama32_1b,
// qwen25_0_5b and qwen3_0_6b code at tiny configs (the probe's emulated NPU: CPU twins of the
// real ELFs; the real HfRunner on tiny random checkpoints). Clean runs pass the four gates with
// every boundary >= 0.999; an injected bug is named by the lens (the boundary) and by the
// launch-level bisect (the launch) in report.json and in the rendered PR comment; a RoPE bug under
// near-uniform attention passes the gates while the lens names it and warns. A few bugs x models
// here; test/python/test_real_twins.py covers the whole matrix. Then what needs no Python: a run
// dir without boundaries/ still gives today's report, and a boundaries record is untrusted input.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, existsSync, writeFileSync, mkdirSync, symlinkSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fromJson } from '../src/report/json.ts';
import type { Report } from '../src/record/report.ts';
import { commentContent } from '../src/report/github.ts';
import { renderTerminal } from '../src/report/terminal.ts';
import { renderMarkdown } from '../src/report/markdown.ts';
import { twinsSkipReason, twinsTree, withEnv, type TwinsTree } from './helpers/twins.ts';
import { cli, errorLine, fixture } from './helpers/rundir.ts';

const skip = twinsSkipReason();
if (skip) console.warn(`lens.test: the emulated real-tree checks are SKIPPED: ${skip}`);
const maybe = skip ? test.skip : test;

let tree: TwinsTree | null = null;
const runs = mkdtempSync(join(tmpdir(), 'nbg-lens-'));
let n = 0;

/** `check --emulate` on a model of the tree copy, documents into the copy (TODO.md must stay as it is). */
async function check(model: string, extra: string[] = []) {
  tree ??= twinsTree();
  const t = tree;
  const out = join(runs, `${model}-${n++}`);
  const todo = join(t.model(model), 'TODO.md');
  const todoBefore = existsSync(todo) ? readFileSync(todo) : null;
  // No kernel or reference cache (an emulated run compiles nothing), no NPU lock (nothing runs on one).
  const r = await withEnv({ ...t.env, NPU_BLOCK_GATE_NPU_LOCK: 'none' }, () => cli([
    'check', '--model-dir', t.model(model), '--out', out, '--emulate', '--model', t.hfId(model), '--prompt-style', 'instruct',
    '--python', t.python, '--no-cache', '--json', ...extra,
  ]));
  assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.err.slice(-3000)}`);
  const report = fromJson<Report>(r.out);
  const comment = commentContent(report, { modelKey: `programming_examples/llms/${model}`, runUrl: 'https://github.example/r/1', preview: false });
  const todoAfter = existsSync(todo) ? readFileSync(todo) : null;
  assert.equal(todoAfter, todoBefore, 'an emulated run leaves TODO.md as it is');
  return { ...r, report, comment, out, phase2: join(t.model(model), 'docs/development_progress/phase2_block.md') };
}

const low = (x: { wholeCosine: number; perPositionMin: number }) => Math.min(x.wholeCosine, x.perPositionMin);

for (const model of ['llama32_1b', 'qwen25_0_5b', 'qwen3_0_6b']) {
  maybe(`clean ${model} on the emulated NPU: all four gates pass, every boundary >= 0.999, marked EMULATED everywhere`, async () => {
    const r = await check(model);
    const rep = r.report;
    assert.is(r.code, 0, r.err.slice(-3000));
    assert.equal(rep.gates.map((g) => `${g.id} ${g.status}`), ['G1 pass', 'G2 pass', 'G3 pass', 'G4 pass']);
    assert.equal(rep.emulate, { runtime: rep.emulate!.runtime, inject: null });
    const lens = rep.lens!;
    assert.ok(lens.rows.length >= 16, `${lens.rows.length} boundaries`);
    for (const x of lens.rows) assert.ok(low(x) >= 0.999, `${x.name}: ${x.wholeCosine} / ${x.perPositionMin}`);
    assert.equal(lens.rows.map((x) => x.order), [...lens.rows.map((x) => x.order)].sort((a, b) => a - b), 'block order');
    assert.is(lens.firstBelow, null);
    assert.is(rep.bisect, null, 'nothing to bisect');
    assert.not.ok(rep.warnings.some((w) => w.id === 'lens'));
    // EMULATED: the terminal, report.md, the comment and phase2_block.md.
    assert.match(renderTerminal(rep), /^PASS .*EMULATED/);
    assert.match(readFileSync(join(r.out, 'report.md'), 'utf8'), '**EMULATED**');
    assert.match(r.comment, '**EMULATED** (no NPU ran)');
    assert.match(r.comment, 'Cosine along block 0');
    assert.match(readFileSync(r.phase2, 'utf8'), '**EMULATED**');
    assert.match(rep.gates[3].detail, /emulated run/);
    // ... the history row's outcome, the progress lines and --json's top level (issue 17.6).
    assert.match(readFileSync(r.phase2, 'utf8'), /\| PASS \(emulated\) \|/);
    assert.is(rep.emulated, true);
    assert.match(r.err, 'running block 0 on the emulated NPU (CPU twins of its ELFs; no NPU runs)');
    assert.not.match(r.err, 'running block 0 on the NPU');
  });
}

// (model, bug) -> the boundary the lens names, the launch and buffer the launch-level bisect names.
const BUGS: [string, string, { boundary: string; launch: string; buffer: string; gates: 'pass' | 'fail'; swap?: string }][] = [
  // Plain random init: near-uniform attention, so the RoPE bug barely moves ffn_out.
  ['llama32_1b', 'interleaved_rope', { boundary: 'q_roped', launch: 'rms_gemms_rope', buffer: 'q_roped', gates: 'pass' }],
  ['qwen25_0_5b', 'dropped_bias', { boundary: 'q', launch: 'rms_qkv_bias_rope', buffer: 'q_b', gates: 'fail', swap: 'rms_qkv_bias_rope' }],
  ['qwen3_0_6b', 'missing_causal_mask', { boundary: 'attn_out', launch: 'flash_attn', buffer: 'out', gates: 'fail', swap: 'flash_attn' }],
];

for (const [model, bug, want] of BUGS) {
  maybe(`${bug} on ${model}: the lens names ${want.boundary}, the bisect names ${want.launch}/${want.buffer}, in report.json and the comment`, async () => {
    const r = await check(model, ['--inject', bug, '--no-docs']);
    const rep = r.report;
    assert.is(rep.outcome, want.gates, r.err.slice(-2000));
    assert.is(rep.emulate!.inject, bug);
    assert.is(rep.lens!.firstBelow!.name, want.boundary);
    const b = rep.bisect!;
    assert.is(b.method, 'twins');
    assert.is(b.emulated, true);
    assert.equal([b.launchOffender!.launch, b.launchOffender!.buffer, b.launchOffender!.strength], [want.launch, want.buffer, 'diverges']);
    assert.is(b.offender?.step, want.swap, 'swap forward: the first ELF whose twin brings the block back');
    assert.match(r.comment, `**First boundary under the threshold ${rep.lens!.threshold}: \`${want.boundary}\`**`);
    assert.match(r.comment, `**First launch off its twin: \`${want.launch}\`**`);
    assert.match(r.comment, `buffer \`${want.buffer}\``);
    assert.match(r.comment, `Injected bug: \`${bug}\``);
    if (want.gates === 'pass') {
      // The gates stay the gates; the lens warns that they may hide this one.
      const w = rep.warnings.find((x) => x.id === 'lens');
      assert.ok(w, JSON.stringify(rep.warnings));
      assert.match(w!.message, `boundary ${want.boundary}`);
      assert.match(w!.message, 'the ffn_out gate may be hiding a bug');
      assert.match(r.comment, 'the ffn\\_out gate may be hiding a bug');
      assert.match(renderTerminal(rep), 'warning: the lens: boundary');
      assert.is(b.offender, null, 'no swap can fix a block that passes');
    } else assert.match(r.comment, `**Offending ELF (swap forward): \`${want.swap}\`**`);
  });
}

maybe('ignored_rmsnorm_weight on llama32_1b: under the threshold only downstream; the lens shows where the drift begins, the bisect which launch drifts', async () => {
  const r = await check('llama32_1b', ['--inject', 'ignored_rmsnorm_weight', '--no-docs']);
  const rep = r.report;
  const lens = rep.lens!;
  // The tiny checkpoint's RMSNorm weights are near 1: attn_norm stays above the threshold (not a
  // verdict), yet it is the first boundary under the clean bar, and every launch but the front
  // one matches its twin exactly.
  assert.ok(lens.firstBelow, 'something downstream is under the threshold');
  assert.is(lens.onset!.name, 'attn_norm');
  assert.ok(lens.onset!.order < lens.firstBelow!.order);
  assert.match(r.comment, 'The divergence begins earlier, at `attn_norm`');
  // Well below the threshold far downstream: the warning points back to where it begins.
  const w = rep.warnings.find((x) => x.id === 'lens');
  if (w) assert.match(w.message, 'the divergence begins at attn_norm (RMSNorm); likely norm weight');
  const o = rep.bisect!.launchOffender!;
  assert.equal([o.launch, o.buffer, o.boundary], ['rms_gemms_rope', 'normed', 'attn_norm']);
  assert.is(o.hint!.boundary, 'RMSNorm');
});

maybe('--positions 2048 on llama32_1b: every position judged; the RoPE drift the canonical prompt hides shows against position', async () => {
  const r = await check('llama32_1b', ['--positions', '2048', '--no-docs', '--no-bisect']);
  const rep = r.report;
  assert.is(rep.outcome, 'pass', 'the gates pass');
  assert.is(rep.prompt!.real_len, 2048);
  assert.is(rep.prompt!.positions!.requested, 2048);
  assert.is(rep.metrics!.perPosition.cosines.length, 2048);
  // The tree's RoPE LUT has no llama3 frequency scaling; the checkpoint declares it.
  const lens = rep.lens!;
  assert.is(lens.firstBelow!.name, 'q_roped');
  const q = lens.rows.find((x) => x.name === 'q_roped')!;
  assert.is(q.rows, 2048);
  assert.is(q.profile.bucket * q.profile.points.length, 2048);
  assert.ok(q.profile.points[0] >= 0.999, `the first positions are clean: ${q.profile.points[0]}`);
  assert.ok(q.profile.points[q.profile.points.length - 1] < 0.95, 'the drift grows with position');
  assert.ok(rep.warnings.some((w) => w.id === 'lens'));
  assert.match(r.comment, 'Per-position cosine against position, boundary q_roped');
  assert.match(r.comment, 'x-axis "position (min per 16 rows)" 0 --> 2047');
  assert.match(r.comment, 'prompt extended to 2048 positions');
  assert.match(renderTerminal(rep), /q_roped by position .*: 0-255 0\.99/);
});

test('a run dir from a real NPU without boundaries/ still gives today\'s report', async () => {
  const f = fixture();
  const r = await cli(['report', '--run-dir', f.runDir, '--no-docs', '--json']);
  assert.is(r.code, 0, r.err);
  const rep = fromJson<Report>(r.out);
  assert.is(rep.lens, null);
  assert.is(rep.emulate, null);
  const md = readFileSync(join(f.runDir, 'report.md'), 'utf8');
  assert.equal(md.split('\n').filter((l) => l.startsWith('### ')), ['### Error metrics (informational)', '### Per-position cosine (real tokens only)', '### Integration', '### Environment']);
  assert.not.match(md, 'EMULATED');
  assert.is(md, renderMarkdown(rep, { flavor: 'summary' }));
  assert.not.match(renderTerminal(rep), /lens|EMULATED/);
});

/** A fixture whose probe.json declares one boundary pair (copies of the block's own tensors). */
function withBoundary(edit: (entry: Record<string, any>, dir: string) => void = () => {}) {
  const f = fixture({
    probe: (p) => {
      p.boundaries = {
        source: 'launches', table: 'scripts/probe/elf_boundaries.json#tiny_m', emulated: false, reference: 'hf-layer0-hooks/1', layout: 'seq-first',
        entries: [{ name: 'ffn_out', order: 20, step: 'residual add', launch: 'o_ffn', arg: 3, source: 'launch', produced_by: 'o_ffn',
          npu: { file: 'boundaries/20-ffn_out.npu.npy', dtype: 'f32', shape: [p.prompt.real_len, p.tensors.ref.shape[1]] },
          ref: { file: 'boundaries/20-ffn_out.ref.npy', dtype: 'f32', shape: [p.prompt.real_len, p.tensors.ref.shape[1]] } }],
        unpaired: [{ name: 'v', side: 'npu', reason: 'the HF side has no hook for it' }],
      };
    },
  });
  mkdirSync(join(f.runDir, 'boundaries'));
  copyFileSync(join(f.runDir, 'block0.ref.npy'), join(f.runDir, 'boundaries/20-ffn_out.npu.npy'));
  copyFileSync(join(f.runDir, 'block0.ref.npy'), join(f.runDir, 'boundaries/20-ffn_out.ref.npy'));
  edit(f.probe.boundaries.entries[0], f.runDir);
  f.save();
  return f;
}

test('boundaries are judged when declared, and every path and name is checked first', async () => {
  const ok = withBoundary();
  const r = await cli(['report', '--run-dir', ok.runDir, '--no-docs', '--json']);
  assert.is(r.code, 0, r.err);
  const lens = fromJson<Report>(r.out).lens!;
  assert.equal(lens.rows.map((x) => [x.name, x.wholeCosine]), [['ffn_out', 1]]);
  assert.equal(lens.unpaired.map((u) => u.name), ['v']);
  const cases: [string, (e: Record<string, any>, dir: string) => void, RegExp][] = [
    ['a path out of the run dir', (e) => { e.npu.file = '../../etc/passwd'; }, /boundaries\.entries\[0\]\.npu\.file must be a relative path inside the run dir/],
    ['a symlink out of the run dir', (e, dir) => { symlinkSync('/etc/hostname', join(dir, 'boundaries/x.npy')); e.npu.file = 'boundaries/x.npy'; }, /outside the run dir/],
    ['a name that is not an identifier', (e) => { e.name = 'q`<img>'; }, /boundaries\.entries\[0\]\.name must be a boundary name/],
    ['rows other than real_len', (e) => { e.ref.shape = [2, e.ref.shape[1]]; }, /boundaries\.entries\[0\]\.ref\.shape is \[2, 16\]; a boundary is \[real_len, features\]/],
    ['a declared shape the file does not have', (e) => { e.npu.shape = [e.npu.shape[0], 8]; e.ref.shape = [e.ref.shape[0], 8]; }, /shape 5x16 disagrees with probe\.json boundaries\.entries\[0\]\.npu\.shape/],
  ];
  for (const [what, edit, want] of cases) {
    const f = withBoundary(edit);
    const bad = await cli(['report', '--run-dir', f.runDir, '--no-docs']);
    assert.is(bad.code, 2, `${what}: ${bad.err}`);
    assert.match(errorLine(bad), want, what);
    assert.not.ok(existsSync(join(f.runDir, 'report.json')), `${what}: no report left behind`);
  }
});

test('check refuses --inject without --emulate, an unknown bug and a bad --positions, one line each, exit 2', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-lens-args-'));
  for (const [args, want] of [
    [['--inject', 'stale_tail'], /--inject needs --emulate/],
    [['--emulate', '--inject', 'nope'], /--inject must be one of transposed_q_weight, .*stale_tail, got "nope"/],
    [['--positions', '0x10'], /--positions must be a whole decimal number of tokens in \[1, 1048576\]/],
    [['--positions', '0'], /--positions must be a whole decimal number/],
    [['--positions', '-5'], /--positions must be a whole decimal number .* got "-5"/],
    [['--positions', '2e3'], /--positions must be a whole decimal number/],
  ] as [string[], RegExp][]) {
    const r = await cli(['check', '--model-dir', dir, ...args]);
    assert.is(r.code, 2, `${args.join(' ')}: ${r.err}`);
    assert.match(errorLine(r), want);
  }
  const help = await cli(['check', '--help']);
  for (const o of ['--positions N', '--no-boundaries', '--emulate', '--inject BUG']) assert.match(help.out, o);
  writeFileSync(join(dir, 'x'), '');
});

test.run();
