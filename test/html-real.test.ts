// Issue 31's acceptance on the real mlir-air tree (emulated NPU: the CPU twins of its ELFs, tiny
// random checkpoints): llama32_1b at --positions 2048 drifts at q_roped (the tree's RoPE LUT has no
// llama3 frequency scaling; the checkpoint declares it) from about position 1,000 on, and
// smollm2_1_7b (no rope scaling) does not. report.html's heatmap marks q_roped as the first
// boundary under the threshold, and a 1280x800 screenshot has llama32_1b's late q_roped cells in a
// drift colour of the page's own legend while smollm2's are in the clean one. One run of each model,
// shared by the tests here (they are the heaviest runs of the suite).
import * as assert from 'uvu/assert';
import { mkdtempSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { missingTwins, twinsTree, withEnv, type TwinsTree } from './helpers/twins.ts';
import { cli } from './helpers/rundir.ts';
import { test } from './helpers/skip.ts';
import { closeBrowser, decodePng, missingChromium, openPage, pixel, sameColour, shotsDir } from './helpers/browser.ts';
import { fromJson } from '../src/report/json.ts';
import type { Report } from '../src/record/report.ts';

const maybe = test.unless(missingChromium() ?? missingTwins());
const runs = mkdtempSync(join(tmpdir(), 'nbg-html-real-'));
let tree: TwinsTree | null = null;
const done = new Map<string, { out: string; report: Report }>();

async function run(model: string) {
  const had = done.get(model);
  if (had) return had;
  tree ??= twinsTree(['llama', 'smollm2']);
  const t = tree;
  const out = join(runs, model);
  const r = await withEnv({ ...t.env, NPU_BLOCK_GATE_NPU_LOCK: 'none' }, () => cli([
    'check', '--model-dir', t.model(model), '--out', out, '--emulate', '--model', t.hfId(model), '--prompt-style', 'instruct',
    '--python', t.python, '--no-cache', '--no-docs', '--no-bisect', '--positions', '2048', '--json',
  ]));
  assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.err.slice(-3000)}`);
  const got = { out, report: fromJson<Report>(r.out) };
  done.set(model, got);
  return got;
}

/** The screenshot's colours of q_roped's cells from the last quarter of the positions, and the legend's. */
async function lateCells(model: string) {
  const { out, report } = await run(model);
  const file = join(out, 'report.html');
  const o = await openPage(file);
  try {
    assert.equal(o.errors, [], o.console.join('\n'));
    assert.equal(o.requests, []);
    const p = o.page;
    assert.equal(await p.$$eval('svg[data-heatmap] [data-row]', (gs) => gs.map((g) => g.getAttribute('data-row'))), report.lens!.rows.map((x) => x.name));
    await p.$eval('svg[data-heatmap]', (s) => s.scrollIntoView({ block: 'start' }));
    const img = decodePng(await p.screenshot({ path: join(shotsDir(), `${model}-2048.png`) }));
    const at = (b: { x: number; y: number; w: number; h: number }) => pixel(img, b.x + b.w / 2, b.y + b.h / 2);
    const legend = async (k: string) => at(await p.$eval(`[data-legend] [data-class="${k}"] rect`, (e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width, h: r.height }; }));
    const cellsOf = (row: string) => p.$$eval(`[data-row="${row}"] rect[data-cell]`, (rs) => rs.map((r) => {
      const b = r.getBoundingClientRect();
      const m = /positions (\d+)-(\d+)/.exec(r.querySelector('title')!.textContent!)!;
      return { x: b.x, y: b.y, w: b.width, h: b.height, start: Number(m[1]), end: Number(m[2]) };
    }));
    const cells = await cellsOf('q_roped');
    assert.ok(cells.length >= 32 && cells.length <= 512, `${cells.length} columns`);
    assert.is(cells[cells.length - 1].end, 2047, 'the columns cover every position');
    const late = cells.filter((c) => c.start >= 1536).map(at);
    // The first positions, where RoPE's angles are still small (the drift grows with position).
    const early = cells.filter((c) => c.end < 32).map(at);
    // q before RoPE: the same positions, a boundary the bug does not touch.
    const q = (await cellsOf('q')).map(at);
    return { report, late, early, q, clean: await legend('clean'), drift: [await legend('under'), await legend('well')], p, file, marked: await p.$$eval('[data-mark-first-below]', (gs) => gs.map((g) => g.getAttribute('data-row'))) };
  } finally {
    await o.close();
  }
}

maybe('llama32_1b at --positions 2048: report.html marks q_roped first under the threshold, its late positions in the drift colour, its first in the clean one', async () => {
  const r = await lateCells('llama32_1b');
  assert.is(r.report.lens!.firstBelow!.name, 'q_roped');
  assert.equal(r.marked, ['q_roped']);
  for (const [i, c] of r.late.entries()) assert.ok(r.drift.some((d) => sameColour(c, d)), `late cell ${i}: ${c} is not a drift colour (${r.drift.join(' / ')})`);
  assert.ok(r.early.length > 0);
  for (const [i, c] of r.early.entries()) assert.ok(sameColour(c, r.clean), `early cell ${i}: ${c} is not the clean colour ${r.clean}`);
  for (const [i, c] of r.q.entries()) assert.ok(sameColour(c, r.clean), `q (before RoPE) cell ${i}: ${c} is not the clean colour ${r.clean}`);
  // Scale: a 2048-position, 16-boundary report.html stays under 2 MB.
  assert.ok(statSync(r.file).size < 2 * 1024 * 1024, `${statSync(r.file).size} bytes`);
});

maybe('smollm2_1_7b at --positions 2048 (no rope scaling): no boundary under the threshold, its late q_roped cells in the clean colour', async () => {
  const r = await lateCells('smollm2_1_7b');
  assert.is(r.report.lens!.firstBelow, null);
  assert.equal(r.marked, []);
  for (const [i, c] of r.late.entries()) assert.ok(sameColour(c, r.clean), `late cell ${i}: ${c} is not the clean colour ${r.clean}`);
});

test.after(closeBrowser);

test.run();
