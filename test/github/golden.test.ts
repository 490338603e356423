// Golden files for every text the Action and the CLI render from a report: the job summary, the PR
// comment, phase2_block.md's report block, the docs PR, the probe job's summary, the terminal.
// A change to any of them shows up here as a diff. Regenerate deliberately:
//   UPDATE_GOLDEN=1 node node_modules/uvu/bin.js -r tsx test 'github/golden'
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../helpers/airmini.ts';
import { fakeReport, fakeMetrics, fakeTwinsBisect, fakeComparison } from '../helpers/report.ts';
import { judgedLens } from '../helpers/lens.ts';
import { lensWarning } from '../../src/lens/judge.ts';
import { renderMarkdown } from '../../src/report/markdown.ts';
import { renderTerminal } from '../../src/report/terminal.ts';
import { commentContent, docsPreview, docsPrText, judgedLine, probedSummary, summaryText } from '../../src/report/github.ts';
import type { Report } from '../../src/record/report.ts';

const DIR = join(REPO, 'test/golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';
// Goldens are tests: CI compares, never writes (and .ci/run fails when test/golden differs from the commit).
const CI = process.env.CI === 'true' || process.env.CI === '1';
const KEY = 'programming_examples/llms/tiny_llama';
const RUN = 'https://github.example/acme/mlir-air/actions/runs/1001';
const ART = 'https://github.example/acme/mlir-air/actions/runs/1001/artifacts/9';
const HEAD = 'a1'.repeat(20);
const MERGE = 'e2'.repeat(20);

function golden(name: string, actual: string): void {
  const path = join(DIR, name);
  if (CI && UPDATE) throw new Error('UPDATE_GOLDEN is refused under CI=true: regenerate the goldens by hand, read the diff, commit it');
  if (CI && !existsSync(path)) throw new Error(`${name} is missing from test/golden (CI writes no golden): regenerate it by hand and commit it`);
  if (UPDATE || !existsSync(path)) {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(path, actual);
    if (!UPDATE) throw new Error(`${name} did not exist and was written; check it in after reading it`);
    return;
  }
  assert.fixture(actual, readFileSync(path, 'utf8'), name);
}

function passing(): Report {
  return fakeReport(fakeMetrics(), { isolation: { mode: 'namespace', detail: 'bubblewrap: user+pid+mount+net namespaces, private /proc, read-only root', source: 'this run' } });
}

function failing(): Report {
  const m = fakeMetrics({ cosines: [0.999, 0.998, 0.91, 0.85], whole: 0.97 });
  m.perPosition.badRuns = [{ start: 2, end: 3, length: 2 }];
  const r = fakeReport(m);
  r.warnings = [{ id: 'sqnr', message: 'SQNR 21.3 dB is under the 40 dB "very good" bar (informational)' }];
  r.integration!.workarounds = [{ id: 'non_1024_aligned', detail: 'emb_dim 896 is not a multiple of 1024', prerequisite: 'Phase 4/5 prerequisite: pad the GEMM N dimension' }];
  r.bisect = {
    available: true, reason: 'swapping o_proj to the CPU brings the block above threshold', hook: 'bisect_steps',
    steps: [
      { step: 'q_proj', kernel: 'rms_gemms_rope', cpuEquivalent: 'numpy GEMM', ...fakeComparison(0.97, 0.85), fixes: false },
      { step: 'o_proj', kernel: 'o_ffn', cpuEquivalent: 'numpy GEMM', ...fakeComparison(0.9999, 0.9995), fixes: true },
    ],
    offender: { step: 'o_proj', kernel: 'o_ffn', hint: { boundary: 'o_proj', cause: 'a stale tail tile', where: 'the O GEMM launch' } as any },
    situation: null,
  };
  return r;
}

function hostile(): Report {
  const H = '<img src=x> **b** [l](https://evil.example) @mallory #1 <!-- | ` \r::error::x';
  const r = failing();
  r.model.name = H;
  r.prompt = { ...r.prompt!, style: H, source: H };
  r.integration = { ...r.integration!, entry: H, reason: H, kernels: [H, 'ok_kernel'], workarounds: [{ id: H, detail: H, prerequisite: H }] };
  r.bisect!.steps[0].step = H;
  r.bisect!.offender = { step: H, kernel: H, hint: null };
  r.warnings.push({ id: H, message: H });
  r.error = null;
  return r;
}

async function hostileTwins(): Promise<Report> {
  const H = '<img src=x> **b** [l](https://evil.example) @mallory #1 <!-- | ` \r::error::x';
  const r = await failingTwins();
  r.emulate = { runtime: H, inject: H };
  r.lens!.rows[5].name = H;
  r.lens!.rows[5].step = H;
  r.lens!.rows[5].launch = H;
  r.lens!.firstBelow = { ...r.lens!.firstBelow!, name: H, step: H, producedBy: H };
  r.lens!.unpaired = [{ name: H, side: 'npu', reason: H }];
  const b = r.bisect!;
  b.launches![0].launch = H;
  b.launches![0].buffers[1].buffer = H;
  b.launches![0].buffers[1].stage = H;
  b.launchOffender = { ...b.launchOffender!, launch: H, buffer: H, boundary: H, stage: H };
  b.steps[0].step = H;
  b.steps[0].swapped = [H];
  b.offender = { step: H, kernel: H, hint: null };
  return r;
}

/** An emulated run whose RoPE bug passes the gates (near-uniform attention): the lens names and warns, the launch bisect locates. */
async function hiddenRope(): Promise<Report> {
  const r = fakeReport(fakeMetrics({ cosines: [1, 0.99986, 0.9995, 0.99961, 0.9994, 0.99883], whole: 0.999672 }));
  r.emulate = { runtime: 'npu-block-gate emulated air runtime (CPU twins)', inject: 'interleaved_rope' };
  r.lens = await judgedLens({ cos: { q_roped: [0.893943, 0.780106], k_roped: [0.882169, 0.768656] }, ffnOutPasses: true });
  r.warnings = [lensWarning(r.lens)!];
  r.bisect = fakeTwinsBisect({ blockPasses: true });
  return r;
}

/** An emulated run failing G1/G2 at a transposed Q weight: the swap forward names the ELF too. */
async function failingTwins(): Promise<Report> {
  const m = fakeMetrics({ cosines: [0.999, 0.95, 0.91, 0.85], whole: 0.96 });
  m.perPosition.badRuns = [{ start: 1, end: 3, length: 3 }];
  const r = fakeReport(m);
  r.emulate = { runtime: 'npu-block-gate emulated air runtime (CPU twins)', inject: 'transposed_q_weight' };
  r.lens = await judgedLens({ rows: 4, cos: { q: [0.0138, -0.0858], q_roped: [0.0141, -0.08], attn_out: [0.95, 0.85], ffn_out: [0.96, 0.85] } });
  r.bisect = fakeTwinsBisect({ bad: 'q' });
  return r;
}

/** --positions 2048 on a real NPU run: q_roped drifts with position (the RoPE frequencies), ffn_out passes. */
async function positions(): Promise<Report> {
  const n = 2048;
  const r = fakeReport(fakeMetrics({ cosines: Array.from({ length: n }, (_, i) => 0.9999 - 0.0004 * (i / n)), whole: 0.9998, realLen: n, npuRows: n }));
  r.prompt = { ...r.prompt!, real_len: n, padded_len: n, positions: { requested: n, real_len: n, prompt_tokens: 9, method: 'repeated', set: 'verify/prompts/instruct.txt', prompts_used: 56, cycles: 6, text_chars: 5084 } };
  const drift = (name: string, i: number) => (name === 'q_roped' || name === 'k_roped' ? 1 - 0.12 * (i / n) ** 2 : 0.99995);
  r.lens = await judgedLens({ rows: n, emulated: false, perRow: drift, ffnOutPasses: true });
  r.warnings = [lensWarning(r.lens)!];
  return r;
}

test('the lens and the twins bisect: a hidden RoPE bug (pass), a transposed Q weight (fail), --positions', async () => {
  const h = await hiddenRope();
  golden('lens.comment.md', commentContent(h, { modelKey: 'programming_examples/llms/llama32_1b', runUrl: RUN, artifactUrl: ART, preview: false }));
  golden('lens.summary.md', summaryText(h, { artifactUrl: ART }));
  golden('lens.doc.md', renderMarkdown(h, { flavor: 'doc' }));
  golden('lens.terminal.txt', renderTerminal(h));
  const f = await failingTwins();
  golden('twins.comment.md', commentContent(f, { modelKey: 'programming_examples/llms/llama32_1b', runUrl: RUN, preview: false }));
  golden('twins.terminal.txt', renderTerminal(f));
  const p = await positions();
  golden('positions.comment.md', commentContent(p, { modelKey: 'programming_examples/llms/llama32_1b', runUrl: RUN, preview: false }));
  golden('positions.terminal.txt', renderTerminal(p));
  // The document block carries no timings: the same result renders to the same bytes.
  assert.is(renderMarkdown(await hiddenRope(), { flavor: 'doc' }), renderMarkdown(h, { flavor: 'doc' }));
});

test('a passing report: summary, comment (with the preview), phase2_block.md block, terminal', () => {
  const r = passing();
  golden('pass.summary.md', summaryText(r, { artifactUrl: ART }));
  golden('pass.comment.md', commentContent(r, { modelKey: KEY, runUrl: RUN, artifactUrl: ART, preview: true }));
  golden('pass.doc.md', renderMarkdown(r, { flavor: 'doc' }));
  golden('pass.terminal.txt', renderTerminal(r));
});

test('a failing report with a bisect, a workaround and a warning', () => {
  const r = failing();
  golden('fail.summary.md', summaryText(r, { artifactUrl: ART, judged: { head: HEAD, merge: MERGE, checkout: MERGE } }));
  golden('fail.comment.md', commentContent(r, { modelKey: KEY, runUrl: RUN, artifactUrl: ART, preview: true, judged: { head: HEAD, merge: MERGE, checkout: MERGE } }));
  golden('fail.terminal.txt', renderTerminal(r));
});

test('an error report is never a FAIL', () => {
  const r: Report = { ...fakeReport(), outcome: 'error', exit_code: 3, error: 'no Python with numpy found: tried python3 (not found)', gates: [], metrics: null, integration: null, reference: null, environment: null };
  golden('error.comment.md', commentContent(r, { modelKey: KEY, runUrl: RUN, preview: true }));
  golden('error.terminal.txt', renderTerminal(r));
});

test('a report full of hostile strings renders inert', async () => {
  const r = hostile();
  golden('hostile.comment.md', commentContent(r, { modelKey: KEY, runUrl: RUN, preview: true }));
  golden('hostile.terminal.txt', renderTerminal(r));
  const t = await hostileTwins();
  const c = commentContent(t, { modelKey: KEY, runUrl: RUN, preview: false });
  golden('hostile-twins.comment.md', c);
  golden('hostile-twins.terminal.txt', renderTerminal(t));
  // Nothing foreign reaches the page as markup, a chart or a workflow command.
  assert.not.match(c, '<img');
  assert.not.match(c, '<!--');
  assert.not.match(c, /^::/m);
  assert.not.match(c, /x-axis \[[^\]]*<img/);
  assert.not.match(renderTerminal(t), /^\s*::/m);
});

test('the docs PR, the docs preview, the probe job summary and which commit was judged', () => {
  const t = docsPrText(passing(), { modelKey: KEY, branch: `npu-block-gate/phase2/${KEY}`, base: 'main', runId: 1001 });
  golden('docs-pr.md', `title: ${t.title}\n\ncommit message:\n${t.commitMessage}\n\nbody:\n${t.body}\n`);
  golden('docs-preview.md', docsPreview(failing(), KEY));
  golden('probed.summary.md', probedSummary(KEY, 'npu-block-gate-programming_examples__llms__tiny_llama-attempt1', { mode: 'uid', detail: 'uid npu-probe (setpriv) + bubblewrap', source: 'this run' }));
  golden('judged.md', [
    judgedLine({ head: HEAD, merge: MERGE, checkout: MERGE }),
    judgedLine({ head: HEAD, merge: MERGE, checkout: HEAD }),
    judgedLine({ head: HEAD, merge: MERGE, checkout: 'c3'.repeat(20) }),
    judgedLine({ head: HEAD, merge: MERGE, checkout: null }),
    String(judgedLine({ head: HEAD, merge: null, checkout: HEAD })),
  ].join('\n') + '\n');
});

test.run();
