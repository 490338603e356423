// `npu-block-gate status --tree` (issue 19): the tree's Phase 2 status from every model's
// phase2_block.md history and TODO.md, per model and NPU generation.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { main } from '../../src/cli.ts';
import { updatePhase2 } from '../../src/docs/phase2.ts';
import { updateTodo } from '../../src/docs/todo.ts';
import { DOC_PATHS, MARK } from '../../src/docs/markers.ts';
import { renderMarkdown } from '../../src/report/markdown.ts';
import type { NpuFacts } from '../../src/npu/generation.ts';
import type { Report } from '../../src/record/report.ts';
import { copyAirMini } from '../helpers/airmini.ts';
import { fakeMetrics, fakeReport } from '../helpers/report.ts';

function sink() {
  let text = '';
  const w = new Writable({ write(c, _e, cb) { text += c; cb(); } });
  return { w, get text() { return text; } };
}
async function cli(args: string[]) {
  const out = sink();
  const err = sink();
  const code = await main(args, out.w as unknown as NodeJS.WritableStream, err.w as unknown as NodeJS.WritableStream);
  return { code, out: out.text, err: err.text };
}

const npu = (generation: string): NpuFacts => ({ generation, name: null, pci: null, bdf: null, driver: null, firmware: null, xrt: null, source: 'pci' });
/** A run of `model` on `gen` at `commit` on `day` whose per-position min is `min`. */
function run(model: string, gen: string, commit: string, day: string, min: number): Report {
  const r = fakeReport(fakeMetrics({ cosines: [0.9999, min, 0.9998] }), { commit, created_at: `2026-11-${day}T10:00:00.000Z` });
  return { ...r, model: { ...r.model, name: model }, environment: { ...r.environment!, npu: npu(gen) } };
}

function record(dir: string, runs: Report[]): void {
  let phase2: string | null = null;
  let todo: string | null = null;
  for (const r of runs) {
    phase2 = updatePhase2(phase2, r, renderMarkdown(r, { flavor: 'doc' }), 'phase2_block.md');
    todo = updateTodo(todo, r).text;
  }
  mkdirSync(dirname(join(dir, DOC_PATHS.phase2)), { recursive: true });
  writeFileSync(join(dir, DOC_PATHS.phase2), phase2!);
  writeFileSync(join(dir, DOC_PATHS.todo), todo!);
}

test('status --tree: last verdict per generation, when, commit, the trend of the per-position min, blockers', async () => {
  const t = copyAirMini();
  // tiny_llama: three passing Phoenix runs drifting down; Strix passed, then failed at its last commit.
  record(t.model('tiny_llama'), [
    run('tiny_llama', 'phoenix', 'a1'.repeat(8), '01', 0.9995),
    run('tiny_llama', 'strix', 'a1'.repeat(8), '01', 0.9994),
    run('tiny_llama', 'phoenix', 'b2'.repeat(8), '02', 0.9980),
    run('tiny_llama', 'phoenix', 'c3'.repeat(8), '03', 0.9950),
    run('tiny_llama', 'strix', 'c3'.repeat(8), '03', 0.9700),
  ]);
  // tiny_qwen3: one pass on Krackan. tiny_qwen25: never recorded.
  record(t.model('tiny_qwen3'), [run('tiny_qwen3', 'krackan', 'd4'.repeat(8), '04', 0.9990)]);
  const r = await cli(['status', '--tree', t.root, '--json']);
  assert.is(r.code, 0, r.err);
  const s = JSON.parse(r.out);
  assert.is(s.schema, 'npu-block-gate/status');
  const llama = s.models.find((m: { name: string }) => m.name === 'tiny_llama');
  assert.equal(llama.generations.map((g: { npu: string; outcome: string; commit: string; date: string }) => [g.npu, g.outcome, g.commit, g.date]), [
    ['phoenix', 'PASS', 'c3c3c3c3c3c3', '2026-11-03'],
    ['strix', 'FAIL', 'c3c3c3c3c3c3', '2026-11-03'],
  ]);
  const phoenix = llama.generations[0];
  assert.equal(phoenix.trend, [0.9995, 0.998, 0.995]);
  assert.ok(Math.abs(phoenix.change - -0.0045) < 1e-9);
  assert.is(phoenix.runs, 3);
  assert.is(llama.blockers.length, 1);
  assert.match(llama.blockers[0], /FAILS at c3c3c3c3c3c3 on Strix/);
  assert.is(llama.phase2_done, false, 'Strix\'s latest verdict fails: not done (issue 28)');
  assert.equal(s.models.find((m: { name: string }) => m.name === 'tiny_qwen25').generations, []);
  assert.is(s.models.find((m: { name: string }) => m.name === 'tiny_qwen3').generations[0].npu, 'krackan');

  const md = await cli(['status', '--tree', t.model('tiny_llama')]);
  assert.is(md.code, 0, md.err);
  assert.match(md.out, /^## Phase 2 status\n\n3 model dirs; 2 with a recorded result; 1 failing on at least one NPU generation\./);
  assert.match(md.out, /\| `tiny_llama` +\| Phoenix +\| ✅ PASS +\| 2026-11-03 \| `c3c3c3c3c3c3` \| 0\.995000 \(0\.99\) +\| 0\.9995 → 0\.9980 → 0\.9950 ↓ \(-0\.0045\) +\| \[ \] +\| Phase 2 single\\-block validation FAILS at c3c3c3c3c3c3 on Strix/);
  assert.match(md.out, /\| +\| Strix +\| ❌ FAIL +\|/);
  assert.match(md.out, /\| `tiny_qwen25` +\| +\| never recorded +\|/);
});

test('issue 28: PASS then FAIL on one generation: TODO.md and status --tree say Phase 2 is not done, with the blocker; the pass stays in the history', async () => {
  const t = copyAirMini();
  record(t.model('tiny_llama'), [
    run('tiny_llama', 'strix', 'a1'.repeat(8), '01', 0.9995),
    run('tiny_llama', 'strix', 'b2'.repeat(8), '02', 0.9600),
  ]);
  const todo = readFileSync(join(t.model('tiny_llama'), DOC_PATHS.todo), 'utf8');
  assert.match(todo, /^- \[ \] 2: Single-Block Validation$/m);
  assert.match(todo, /^- Phase 2 single-block validation FAILS at b2b2b2b2b2b2 on Strix/m);
  const history = readFileSync(join(t.model('tiny_llama'), DOC_PATHS.phase2), 'utf8');
  assert.match(history, /a1a1a1a1a1a1.*PASS/, 'the earlier pass is kept in the history');
  const s = JSON.parse((await cli(['status', '--tree', t.root, '--json'])).out);
  const llama = s.models.find((m: { name: string }) => m.name === 'tiny_llama');
  assert.is(llama.phase2_done, false);
  assert.is(llama.phase2_checkbox, false);
  assert.equal(llama.blockers.length, 1);
  const md = (await cli(['status', '--tree', t.root])).out;
  assert.match(md, /\| `tiny_llama` +\| Strix +\| ❌ FAIL .*\| \[ \] +\| Phase 2 single\\-block validation FAILS at b2b2b2b2b2b2 on Strix/);
});

test('issue 28: FAIL on two generations: two blockers; each pass clears its own, and Phase 2 is ticked only when neither fails', async () => {
  const t = copyAirMini();
  const dir = t.model('tiny_llama');
  const fails = [run('tiny_llama', 'phoenix', 'a1'.repeat(8), '01', 0.9600), run('tiny_llama', 'strix', 'a1'.repeat(8), '01', 0.9500)];
  record(dir, fails);
  let todo = readFileSync(join(dir, DOC_PATHS.todo), 'utf8');
  assert.match(todo, /FAILS at a1a1a1a1a1a1 on Phoenix/);
  assert.match(todo, /FAILS at a1a1a1a1a1a1 on Strix/);
  let s = JSON.parse((await cli(['status', '--tree', t.root, '--json'])).out).models.find((m: { name: string }) => m.name === 'tiny_llama');
  assert.is(s.blockers.length, 2);
  assert.is(s.phase2_done, false);
  record(dir, [...fails, run('tiny_llama', 'phoenix', 'b2'.repeat(8), '02', 0.9990)]);
  todo = readFileSync(join(dir, DOC_PATHS.todo), 'utf8');
  assert.not.match(todo, /on Phoenix/);
  assert.match(todo, /FAILS at a1a1a1a1a1a1 on Strix/);
  assert.match(todo, /^- \[ \] 2: Single-Block Validation$/m, 'Strix still fails: not ticked');
  record(dir, [...fails, run('tiny_llama', 'phoenix', 'b2'.repeat(8), '02', 0.9990), run('tiny_llama', 'strix', 'b2'.repeat(8), '02', 0.9991)]);
  todo = readFileSync(join(dir, DOC_PATHS.todo), 'utf8');
  assert.match(todo, /^- \[x\] 2: Single-Block Validation$/m);
  s = JSON.parse((await cli(['status', '--tree', t.root, '--json'])).out).models.find((m: { name: string }) => m.name === 'tiny_llama');
  assert.equal([s.blockers.length, s.phase2_done], [0, true]);
});

test('a document it cannot read is that model\'s problem line, not a crash; not a tree is exit 2', async () => {
  const t = copyAirMini();
  record(t.model('tiny_llama'), [run('tiny_llama', 'phoenix', 'a1'.repeat(8), '01', 0.9995)]);
  mkdirSync(dirname(join(t.model('tiny_qwen3'), DOC_PATHS.phase2)), { recursive: true });
  writeFileSync(join(t.model('tiny_qwen3'), DOC_PATHS.phase2), `${MARK.historyBegin}\n${MARK.historyBegin}\n`);
  const r = await cli(['status', '--tree', t.root, '--json']);
  assert.is(r.code, 0, r.err);
  const q = JSON.parse(r.out).models.find((m: { name: string }) => m.name === 'tiny_qwen3');
  assert.match(q.problem, /phase2_block\.md: line 2: marker .* appears again/);
  const md = await cli(['status', '--tree', t.root]);
  assert.match(md.out, /\| `tiny_qwen3` +\| +\| ⚠️ unreadable +\|/);
  const bad = await cli(['status', '--tree', join(t.root, '..')]);
  assert.is(bad.code, 2);
  assert.match(bad.err, /not an mlir-air tree/);
  assert.is((await cli(['status'])).code, 2);
});

test.run();
