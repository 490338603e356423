// Golden files for every text the Action and the CLI render from a report: the job summary, the PR
// comment, phase2_block.md's report block, the docs PR, the probe job's summary, the terminal.
// A change to any of them shows up here as a diff. Regenerate deliberately:
//   UPDATE_GOLDEN=1 node node_modules/uvu/bin.js -r tsx test 'github/golden'
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../helpers/airmini.ts';
import { fakeReport } from '../helpers/report.ts';
import { failing, failingTwins, hiddenRope, hostile, hostileTwins, passing, positions } from '../helpers/results.ts';
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
