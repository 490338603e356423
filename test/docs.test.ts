import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { updatePhase2, readHistory, baselineFor, historyKey, tableCells } from '../src/docs/phase2.ts';
import { updateTodo, todoTemplate } from '../src/docs/todo.ts';
import { MARK } from '../src/docs/markers.ts';
import { renderMarkdown } from '../src/report/markdown.ts';
import { fakeMetrics, fakeReport } from './helpers/report.ts';
import type { Report } from '../src/record/report.ts';

const F = 'phase2_block.md';
const md = (r: Report) => renderMarkdown(r, { flavor: 'doc' });
const rows = (text: string) => readHistory(text, F);

test('creates phase2_block.md with the latest result and one history row', () => {
  const r = fakeReport();
  const text = updatePhase2(null, r, md(r), F);
  assert.ok(text.includes(MARK.latestBegin) && text.includes(MARK.historyEnd));
  assert.match(text, /Phase 2 PASS/);
  assert.is(rows(text).length, 1);
  assert.is(rows(text)[0].commit, 'abcdef123456');
});

test('re-running the same commit and prompt replaces its row; another commit adds one', () => {
  const r = fakeReport();
  let text = updatePhase2(null, r, md(r), F);
  const again = fakeReport(fakeMetrics({ whole: 0.9993 }));
  text = updatePhase2(text, again, md(again), F);
  assert.is(rows(text).length, 1);
  assert.match(text, /0\.999300/);
  const other = fakeReport(fakeMetrics(), { commit: '1111111222222333' });
  text = updatePhase2(text, other, md(other), F);
  assert.is(rows(text).length, 2);
  const otherPrompt = fakeReport(fakeMetrics(), { prompt: { ...r.prompt!, text: 'Another prompt' } });
  text = updatePhase2(text, otherPrompt, md(otherPrompt), F);
  assert.is(rows(text).length, 3);
});

test('hand-written text around and inside the sections survives byte for byte', () => {
  const r = fakeReport();
  const base = updatePhase2(null, r, md(r), F);
  // Notes before the markers, between sections, inside the history block (a note line and a
  // hand-made row), and at the end, with odd spacing and a trailing space.
  const hand = base
    .replace('## Latest result\n', '## Latest result\n\nMy note about tiles: tile_m=32 (drain).  \n')
    .replace(MARK.historyBegin + '\n', MARK.historyBegin + '\nNote inside the history block.\n')
    .replace(MARK.historyEnd, '| 2026-01-01 | by-hand | manual | PASS | 0.99 | 0.99 | 0.99 | 1 | 1 | 40 dB | 1x1 | manual |\n' + MARK.historyEnd)
    + '\nFinal words\twith a tab.\n';
  const r2 = fakeReport(fakeMetrics({ whole: 0.95 }));
  const out = updatePhase2(hand, r2, md(r2), F);
  for (const piece of ['My note about tiles: tile_m=32 (drain).  \n', 'Note inside the history block.\n', '| 2026-01-01 | by-hand | manual |', '\nFinal words\twith a tab.\n']) {
    assert.ok(out.includes(piece), `lost: ${JSON.stringify(piece)}`);
  }
  // Outside the generated blocks, nothing changed at all.
  const strip = (t: string) => t.replace(/<!-- npu-block-gate:latest:begin -->[\s\S]*?<!-- npu-block-gate:latest:end -->/, 'L')
    .split('\n').filter((l) => !(tableCells(l)?.[1] === historyKey(r).commit)).join('\n');
  assert.is(strip(out), strip(hand));
  assert.match(out, /Phase 2 FAIL/);
});

test('a hand-written file without markers is kept whole and gets our sections appended', () => {
  const hand = '# Phase 2 notes\r\n\r\nWe used CPU attention because FA hd=128 was flaky.\r\n';
  const r = fakeReport();
  const out = updatePhase2(hand, r, md(r), F);
  assert.ok(out.startsWith(hand));
  assert.is(rows(out).length, 1);
});

test('a broken marker is refused, naming the file, and nothing is produced', () => {
  const r = fakeReport();
  const broken = `# x\n${MARK.historyBegin}\n| a |\n`;
  assert.throws(() => updatePhase2(broken, r, md(r), 'docs/development_progress/phase2_block.md'), (e: Error) => /phase2_block\.md: line 2: marker .* has no .* after it: unbalanced markers/.test(e.message));
});

test('markers quoted in a fenced code block are text: the example stays as written, the live blocks are the ones updated', () => {
  const example = ['```markdown', MARK.latestBegin, '(an example of what the tool writes)', MARK.latestEnd, MARK.historyBegin, MARK.historyEnd, '```'].join('\n');
  const r = fakeReport();
  const doc = updatePhase2(null, r, md(r), F).replace('## Notes\n', `## Notes\n\nHow the markers look:\n\n${example}\n`);
  const r2 = fakeReport(fakeMetrics({ whole: 0.95 }), { commit: '1111111222222333' });
  const out = updatePhase2(doc, r2, md(r2), F);
  assert.ok(out.includes(`How the markers look:\n\n${example}\n`), out);
  assert.is(rows(out).length, 2);
  assert.match(out.slice(0, out.indexOf('## Notes')), /Phase 2 FAIL/);
  // TODO.md: a blocker line quoted in a fence is text too, never taken for ours.
  const quoted = ['```', `- Phase 2 single-block validation FAILS at abc (example) ${MARK.blocker}`, '```'].join('\n');
  const todo = todoTemplate('m', null, null).replace('## Resolved config', `${quoted}\n\n## Resolved config`);
  const after = updateTodo(todo, fakeReport(fakeMetrics({ whole: 0.95 }))).text;
  assert.ok(after.includes(quoted), after);
  assert.is(after.split('npu-block-gate:phase2-blocker').length, 3, 'the quoted line and one live blocker');
});

test('baseline: oldest passing row of another commit with the same prompt and shape', () => {
  const a = fakeReport(fakeMetrics({ maxAbs: 0.02 }), { commit: 'aaaaaaaaaaaa' });
  let text = updatePhase2(null, a, md(a), F);
  const b = fakeReport(fakeMetrics({ maxAbs: 0.05 }), { commit: 'bbbbbbbbbbbb' });
  text = updatePhase2(text, b, md(b), F);
  const c = fakeReport(fakeMetrics(), { commit: 'cccccccccccc' });
  const base = baselineFor(rows(text), c);
  assert.equal(base, { maxAbs: 0.02, commit: 'aaaaaaaaaaaa' });
  assert.is(baselineFor(rows(text), fakeReport(fakeMetrics({ cosines: [1, 1] }), { commit: 'dddd' })), null);
});

const TODO = `# Deployment: tiny_llama

## Phase status
- [x] 0: Build CPU Oracle  (PASS 2026-04-27, by hand)
- [x] 1: Kernel Validation
- [ ] 2: Single-Block Validation  (my own note | with a pipe)
- [ ] 3: Full-Model Validation
- [ ] 4: Prefill Optimization
- [ ] 5: Decode Optimization

## Active blockers
- B1: FA odd heads (hand-written)

## Resolved config (pulled from HF)
n_layers: 3
`;

test('TODO: pass marks Phase 2 and keeps the rest of the line and file', () => {
  const out = updateTodo(TODO, fakeReport()).text;
  assert.is(out, TODO.replace('- [ ] 2: Single-Block Validation  (my own note | with a pipe)', '- [x] 2: Single-Block Validation  (my own note | with a pipe)'));
});

test('TODO: fail adds one marked blocker at the end of Active blockers; a later pass removes it', () => {
  const fail = fakeReport(fakeMetrics({ whole: 0.9 }));
  const once = updateTodo(TODO, fail).text;
  const twice = updateTodo(once, fail).text;
  assert.is(twice, once);
  assert.is(once.split('npu-block-gate:phase2-blocker').length, 2);
  assert.match(once, /- B1: FA odd heads \(hand-written\)\n- Phase 2 single-block validation FAILS .*G1 whole-tensor cosine: 0\.900000/);
  assert.match(once, /- \[ \] 2: Single-Block/);
  const passed = updateTodo(once, fakeReport()).text;
  assert.is(passed, updateTodo(TODO, fakeReport()).text);
});

test('TODO: workarounds add the Phase 4/5 prerequisite under Phase 4, once', () => {
  const r = fakeReport();
  r.integration!.workarounds = [{ id: 'qkv_bias', detail: 'qkv_bias=True', prerequisite: 'Phase 4/5 prerequisite: perf optimization must preserve the padded/bias wrappers' }];
  const out = updateTodo(updateTodo(TODO, r).text, r).text;
  assert.match(out, /- \[ \] 4: Prefill Optimization\n  - Phase 4\/5 prerequisite: .*qkv_bias=True.*prereq:qkv_bias/);
  assert.is(out.split(MARK.prereq('qkv_bias')).length, 2);
});

test('TODO: created from the deploy-new-llm template with the resolved config', () => {
  const r = fakeReport();
  const out = updateTodo(null, r).text;
  assert.match(out, /^# Deployment: tiny_llama\n\n## Phase status\n- \[ \] 0: Build CPU Reference\n/);
  assert.match(out, /- \[x\] 2: Single-Block Validation/);
  assert.match(out, /n_layers: 3, emb_dim: 256, n_heads: 4, n_kv_heads: 2,\nhead_dim: 64/);
  assert.ok(todoTemplate('m', null, null).includes('## Active blockers'));
});


test('history: an emulated run or a run on N positions keeps a row of its own beside the NPU run of the same commit', () => {
  const npu = fakeReport();
  const emulated: Report = { ...fakeReport(), emulate: { runtime: 'twins', inject: null } };
  const injected: Report = { ...fakeReport(), emulate: { runtime: 'twins', inject: 'rope_k_only' } };
  const positions: Report = { ...fakeReport(), prompt: { ...fakeReport().prompt!, positions: { requested: 2048, real_len: 2048, method: 'repeated' } as never, real_len: 2048 } };
  const keys = [npu, emulated, injected, positions].map((r) => historyKey(r).prompt);
  assert.is(new Set(keys).size, 4, keys.join(' '));
  let doc = updatePhase2(null, npu, renderMarkdown(npu, { flavor: 'doc' }), 'phase2_block.md');
  doc = updatePhase2(doc, emulated, renderMarkdown(emulated, { flavor: 'doc' }), 'phase2_block.md');
  const rows = readHistory(doc, 'phase2_block.md');
  assert.is(rows.length, 2);
  assert.ok(rows.some((h) => h.prompt.endsWith('~emulated')) && rows.some((h) => !h.prompt.includes('~')));
  // The outcome column says so: an emulated PASS never reads as the NPU's PASS.
  assert.equal(rows.map((h) => h.outcome).sort(), ['PASS', 'PASS (emulated)']);
  assert.is(rows.find((h) => h.prompt.endsWith('~emulated'))!.outcome, 'PASS (emulated)');
});

test('history: an earlier emulated pass is still the baseline of a later emulated run on the same prompt', () => {
  const first: Report = { ...fakeReport(), commit: '1111111111111111', emulate: { runtime: 'twins', inject: null } };
  const doc = updatePhase2(null, first, renderMarkdown(first, { flavor: 'doc' }), 'phase2_block.md');
  const later: Report = { ...fakeReport(), commit: '2222222222222222', emulate: { runtime: 'twins', inject: null } };
  const base = baselineFor(readHistory(doc, 'phase2_block.md'), later);
  assert.is(base?.commit, '111111111111');
  // ... and never of a run on the NPU
  assert.is(baselineFor(readHistory(doc, 'phase2_block.md'), { ...fakeReport(), commit: '2222222222222222' }), null);
});

test.run();
