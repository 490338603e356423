// Issue 31: report.html, the comment's text heatmap and the fleet page, each loaded from disk in
// headless Chromium (helpers/browser.ts): no console error, no request, the DOM has what the
// record has, and a 1280x800 screenshot whose pixels are checked where the drift is (the colours
// read off the page's own legend, not from the renderer's constants). The real tree's 2048-position
// runs are test/html-real.test.ts.
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { copyAirMini } from './helpers/airmini.ts';
import { cli } from './helpers/rundir.ts';
import { test } from './helpers/skip.ts';
import { closeBrowser, decodePng, missingChromium, openPage, pixel, sameColour, shotsDir, type Opened } from './helpers/browser.ts';
import { fakeMetrics, fakeReport } from './helpers/report.ts';
import { judgedLens } from './helpers/lens.ts';
import { fromJson } from '../src/report/json.ts';
import type { Report } from '../src/record/report.ts';
import { commentContent } from '../src/report/github.ts';
import { renderHtml } from '../src/report/html.ts';
import { textHeatmap, TEXT_COLUMNS } from '../src/report/heatmap.ts';
import { profileOf, PROFILE_POINTS } from '../src/lens/judge.ts';
import { missingNumpy } from './helpers/python.ts';
import { HISTORY_HEADER } from '../src/docs/phase2.ts';
import { MARK } from '../src/docs/markers.ts';

const browser = test.unless(missingChromium());
const work = mkdtempSync(join(tmpdir(), 'nbg-html-'));

/** The checks every page gets: nothing logged as an error, nothing fetched. */
function clean(o: Opened, what: string): void {
  assert.equal(o.errors, [], `${what}: console errors:\n${o.console.join('\n')}`);
  assert.equal(o.requests, [], `${what}: requests`);
}

type Box = { x: number; y: number; w: number; h: number };
const centre = (b: Box) => [b.x + b.w / 2, b.y + b.h / 2] as const;


// ---- the comment's text heatmap (no browser)

test('the text heatmap: one line per boundary in block order, at most 32 columns, the drift where it is, a legend', async () => {
  // q_roped drifts from position 1,024 on (cosine 0.9 there), every other boundary is clean.
  const lens = await judgedLens({ rows: 2048, perRow: (name, i) => (name === 'q_roped' && i >= 1024 ? 0.9 : 0.99999) });
  const t = textHeatmap(lens);
  const body = t.split('```text\n')[1].split('\n```')[0].split('\n');
  const rows = body.slice(1);
  assert.is(rows.length, 16, t);
  assert.equal(rows.map((l) => l.split(/\s+/)[0]), lens.rows.map((r) => r.name));
  const cells = (l: string) => l.replace(/^\S+\s+/, '').replace(/\s+◀.*$/, '');
  for (const l of rows) assert.ok([...cells(l)].length <= 32, l);
  const q = cells(rows.find((l) => l.startsWith('q_roped '))!);
  assert.is([...q].length, 32);
  assert.ok([...q].slice(0, 16).every((c) => c === q[0]), `the first half is one class: ${q}`);
  assert.ok([...q].slice(16).every((c) => c === q[16]), `the second half is one class: ${q}`);
  assert.is.not(q[0], q[16]);
  const k = cells(rows.find((l) => l.startsWith('k_roped '))!);
  assert.equal([...k].every((c) => c === q[0]), true, 'a clean boundary is all the clean character');
  assert.match(rows.find((l) => l.startsWith('q_roped '))!, '◀ first under the threshold');
  // The legend names what each character means with the lens's numbers.
  const legend = t.split('\n').find((l) => l.startsWith('Legend:'))!;
  assert.match(legend, `\`${q[0]}\` >= ${lens.cleanBar}`);
  assert.match(legend, `\`${q[16]}\` < ${lens.wellBelow}`);
  assert.ok(TEXT_COLUMNS <= 32);
});

test('the text heatmap names no foreign text: a boundary name that is not an identifier shows as its order', async () => {
  const lens = await judgedLens();
  lens.rows[2].name = '```<script>x</script>';
  const t = textHeatmap(lens);
  assert.not.match(t, '<script>');
  assert.match(t, /\n#5 +/);
});

test("the record keeps each bucket's norm ratio farthest from 1 beside its lowest cosine (the heatmap's hover), bounded like the cosines", () => {
  // Buckets of two rows: [1.01, 0.98] -> 0.98 is farther from 1; [NaN, NaN] (zero reference rows) -> NaN.
  const p = profileOf([0.9, 0.8, 0.7, 0.6], 2, [1.01, 0.98, NaN, NaN]);
  assert.equal(p.points, [0.8, 0.6]);
  assert.is(p.norms!.length, 2);
  assert.is(p.norms![0], 0.98);
  assert.ok(Number.isNaN(p.norms![1]));
  // 2,048 rows: 128 points of 16 rows each, and as many norm ratios.
  const big = profileOf(Array.from({ length: 2048 }, () => 1), PROFILE_POINTS, Array.from({ length: 2048 }, (_, i) => (i === 2047 ? 1.5 : 1)));
  assert.equal([big.bucket, big.points.length, big.norms!.length, big.norms![127]], [16, 128, 128, 1.5]);
  assert.ok(PROFILE_POINTS <= 512);
});

// ---- air-mini's stale_tail, end to end

let stale: { out: string; report: Report } | null = null;
async function staleTail() {
  if (stale) return stale;
  const tree = copyAirMini();
  const out = join(work, 'stale');
  const r = await cli(['check', '--model-dir', tree.model('tiny_llama'), '--emulate', '--inject', 'stale_tail', '--out', out, '--no-docs', '--no-bisect', '--json']);
  assert.is(r.code, 1, r.err.slice(-2000));
  stale = { out, report: fromJson<Report>(r.out) };
  return stale;
}

const airMini = test.unless(missingChromium() ?? missingNumpy());

airMini("air-mini --inject stale_tail: report.html beside report.md; its heatmap shows ffn_out's tail in the drift colour, and so does the comment's text heatmap", async () => {
  const { out, report } = await staleTail();
  const file = join(out, 'report.html');
  assert.ok(existsSync(file), 'report.html in the run dir');
  const lens = report.lens!;
  const ffn = lens.rows.find((x) => x.name === 'ffn_out')!;
  // The bug: the last rows are stale, so ffn_out's tail is under the threshold.
  assert.ok(ffn.badRuns.length > 0 && ffn.badRuns[ffn.badRuns.length - 1].end === ffn.rows - 1, JSON.stringify(ffn.badRuns));
  const tail = ffn.badRuns[ffn.badRuns.length - 1];

  const o = await openPage(file);
  try {
    clean(o, 'report.html');
    const p = o.page;
    // The DOM has what the record has: every boundary row, every gate, the first-below mark.
    const rowNames = await p.$$eval('svg[data-heatmap] [data-row]', (gs) => gs.map((g) => g.getAttribute('data-row')));
    assert.equal(rowNames, lens.rows.map((x) => x.name));
    const gates = await p.$$eval('[data-gate]', (xs) => xs.map((x) => x.textContent));
    assert.equal(gates, report.gates.map((g) => g.id));
    assert.is(await p.$eval('[data-verdict]', (x) => x.getAttribute('data-verdict')), 'fail');
    assert.ok(await p.$('[data-emulated]'), 'EMULATED in the banner');
    const marked = await p.$$eval('[data-mark-first-below]', (gs) => gs.map((g) => g.getAttribute('data-row')));
    assert.equal(marked, [lens.firstBelow!.name]);
    assert.is(lens.firstBelow!.name, 'ffn_out');
    assert.is(await p.$eval('[data-first-below]', (x) => x.getAttribute('data-first-below')), 'ffn_out');

    // A 1280x800 screenshot with the heatmap in view: ffn_out's tail cells are in a drift colour of
    // the legend, its other cells and every cell of a clean boundary in the clean colour.
    await p.$eval('svg[data-heatmap]', (s) => s.scrollIntoView({ block: 'start' }));
    const shot = join(shotsDir(), 'air-mini-stale_tail.png');
    const img = decodePng(await p.screenshot({ path: shot }));
    assert.equal([img.width, img.height], [1280, 800]);
    const box = (sel: string) => p.$eval(sel, (e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width, h: r.height }; });
    const legend = async (k: string) => pixel(img, ...centre(await box(`[data-legend] [data-class="${k}"] rect`)));
    const [cleanC, under, well] = [await legend('clean'), await legend('under'), await legend('well')];
    assert.not.ok(sameColour(cleanC, under) || sameColour(cleanC, well), 'the legend tells clean from drift');
    const cells = async (row: string) => p.$$eval(`[data-row="${row}"] rect[data-cell]`, (rs) => rs.map((r) => {
      const b = r.getBoundingClientRect();
      return { x: b.x, y: b.y, w: b.width, h: b.height, title: r.querySelector('title')!.textContent! };
    }));
    const ffnCells = await cells('ffn_out');
    assert.is(ffnCells.length, ffn.rows, 'one column per position at 25 positions');
    ffnCells.forEach((c, i) => {
      const got = pixel(img, ...centre(c));
      const drift = i >= tail.start && i <= tail.end;
      if (drift) assert.ok(sameColour(got, under) || sameColour(got, well), `ffn_out position ${i}: ${got} is not a drift colour (${under} or ${well})`);
      else assert.ok(sameColour(got, cleanC), `ffn_out position ${i}: ${got} is not the clean colour ${cleanC}`);
    });
    for (const c of await cells('k_roped')) assert.ok(sameColour(pixel(img, ...centre(c)), cleanC), `k_roped ${c.title}`);
    // Hover gives the numbers: boundary, positions, cosine, norm ratio.
    await p.locator('[data-row="ffn_out"] rect[data-cell]').last().hover();
    const said = await p.$eval('[data-readout]', (x) => x.textContent!);
    assert.match(said, new RegExp(`^ffn_out · positions ${ffn.rows - 1} · cosine 0\\.\\d{6} · norm ratio \\d\\.\\d{4}`));
    // ... and so does focus: the heatmap takes the focus, the arrow keys move through its cells.
    await p.focus('svg[data-heatmap]');
    await p.keyboard.press('End');
    await p.keyboard.press('ArrowDown');
    assert.match(await p.$eval('[data-readout]', (x) => x.textContent!), new RegExp(`^${lens.rows[1].name} · positions ${ffn.rows - 1} · cosine `));
  } finally {
    await o.close();
  }

  // The comment's text heatmap shows the tail too.
  const comment = commentContent(report, { modelKey: 'programming_examples/llms/tiny_llama', runUrl: 'https://github.example/r/1', artifactUrl: 'https://github.example/a/1', preview: false });
  const line = comment.split('\n').find((l) => l.startsWith('ffn_out '))!;
  const chars = [...line.replace(/^ffn_out\s+/, '').replace(/\s+◀.*$/, '')];
  const legendLine = comment.split('\n').find((l) => l.startsWith('Legend:'))!;
  const charOf = (meaning: RegExp) => new RegExp(`\`(.)\` ${meaning.source}`).exec(legendLine)![1];
  const drift = [charOf(/< [\d.]+ \(under the threshold\)/), charOf(/< [\d.]+ \(well below the threshold\)/)];
  chars.forEach((c, i) => assert.ok(i >= tail.start ? drift.includes(c) : c === charOf(/>= [\d.]+ \(clean\)/), `comment ffn_out column ${i}: ${c} in ${line}`));
  assert.match(comment, 'report.html` in the [run dir artifact](https://github.example/a/1)');
});

airMini('report.html at phone width, with scripts off, and printed: nothing wider than the screen, every value still in a table', async () => {
  const { out, report } = await staleTail();
  const file = join(out, 'report.html');
  const phone = await openPage(file, { width: 390, height: 844 });
  try {
    clean(phone, 'phone');
    const wide = await phone.page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, `the page is ${wide}px wide at 390px (wide content scrolls inside its own box)`);
    await phone.page.screenshot({ path: join(shotsDir(), 'air-mini-stale_tail-phone.png') });
  } finally {
    await phone.close();
  }
  const off = await openPage(file, { javaScript: false });
  try {
    clean(off, 'scripts off');
    // Every heatmap cell's cosine is in the values table, every position's in the ffn_out table.
    const lens = report.lens!;
    const values = await off.page.$$eval('#lens details table tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    const judged = lens.rows.filter((x) => !x.error);
    assert.is(values.length, judged[0].profile.points.length);
    judged.forEach((x, j) => x.profile.points.forEach((c, i) => assert.ok(values[i][j + 1]!.startsWith(c.toFixed(6)), `${x.name} bucket ${i}: ${values[i][j + 1]}`)));
    const ffn = await off.page.$$eval('#ffn-out details tbody tr', (trs) => trs.map((tr) => tr.querySelectorAll('td')[1].textContent));
    assert.equal(ffn, report.metrics!.perPosition.cosines.map((c) => c.toFixed(6)));
    await off.page.emulateMedia({ media: 'print' });
    assert.is(await off.page.$eval('[data-readout]', (x) => getComputedStyle(x).display), 'none', 'the hover readout is not printed');
    const pdf = await off.page.pdf({ format: 'A4' });
    assert.ok(pdf.length > 10_000, 'it prints');
  } finally {
    await off.close();
  }
});

// ---- hostile text

const HOSTILE = ['<script>window.__nbg = 1</script>', '</textarea><img src=x onerror="window.__nbg=2">', 'javascript:window.__nbg=3', 'abc\u202Eexe.txt', '"><svg onload="window.__nbg=4">'];

browser('hostile text (a model name, a probe error, a warning, a boundary step) renders as text; no script of the record runs, nothing is fetched', async () => {
  const lens = await judgedLens({ rows: 40, perRow: (n, i) => (n === 'q_roped' && i > 20 ? 0.9 : 0.99999) });
  lens.rows[5].step = HOSTILE[1];
  const pass = fakeReport(fakeMetrics(), {
    model: { ...fakeReport().model, name: HOSTILE.join(' '), hf_id: HOSTILE[2] },
    warnings: [{ id: 'lens', message: HOSTILE.join(' | ') }],
    lens,
  });
  const error = fakeReport(fakeMetrics(), { outcome: 'error', exit_code: 3, error: `probe crashed: ${HOSTILE.join(' ')}`, model: { ...fakeReport().model, name: HOSTILE[0] } });
  for (const [name, r] of [['pass', pass], ['error', error]] as const) {
    const file = join(work, `hostile-${name}.html`);
    writeFileSync(file, renderHtml(r, { history: [{ date: HOSTILE[3], commit: HOSTILE[0], prompt: 'instruct', outcome: HOSTILE[4], maxAbs: 1, shape: '', cosine: 0.99, minCosine: 0.99, threshold: 0.99, npu: 'unknown' }] }));
    const o = await openPage(file);
    try {
      clean(o, name);
      const p = o.page;
      assert.is(await p.evaluate(() => (window as unknown as { __nbg?: number }).__nbg), undefined, 'no script of the record ran');
      assert.is(await p.$$eval('script', (s) => s.length), 1, 'only the page\'s own script');
      // The page's policy forbids anything but its own inline style and script (by hash).
      const csp = await p.$eval('meta[http-equiv="Content-Security-Policy"]', (m) => m.getAttribute('content')!);
      assert.match(csp, "default-src 'none'");
      assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+';/);
      assert.match(csp, /style-src 'sha256-[A-Za-z0-9+/=]+';/);
      for (const k of ['img-src', 'font-src', 'connect-src']) assert.match(csp, `${k} 'none'`);
      assert.is(await p.$$eval('img, iframe, object, embed, a[href^="javascript:"], [onerror], [onload]', (x) => x.length), 0);
      const text = await p.evaluate(() => document.body.textContent!);
      // Each string is there as text; the bidi override shows as a replacement character, not reordering.
      for (const h of name === 'pass' ? HOSTILE : [HOSTILE[0]]) assert.ok(text.includes(h.replace('\u202E', '\uFFFD')), `${JSON.stringify(h)} as text`);
      assert.not.ok(text.includes('\u202E'));
      await p.screenshot({ path: join(shotsDir(), `hostile-${name}.png`) });
    } finally {
      await o.close();
    }
  }
});

// ---- the fleet page

/** A phase2_block.md history holding one row per [date, commit, outcome, cosine, npu]. */
function phase2(rows: [string, string, string, number, string][]): string {
  const body = rows.map(([d, c, o, cos, npu]) => `| ${d} | ${c} | instruct | ${o} | ${Number.isNaN(cos) ? 'n/a' : cos} | ${Number.isNaN(cos) ? 'n/a' : cos - 0.001} | 0.99 | 0.01 | 0.001 | 40.0 dB | 25x256 | kernel-first | ${npu} |`);
  return ['# Phase 2', '', '## History', '', MARK.historyBegin, ...HISTORY_HEADER, ...body, MARK.historyEnd, ''].join('\n');
}

browser('status --tree --html: a tree with 3 models x 2 generations shows each cell\'s verdict, cosine and date as recorded', async () => {
  const tree = copyAirMini();
  // Each model's latest row per generation is what the cell must show; older rows feed the sparkline.
  const recorded: Record<string, [string, string, string, number, string][]> = {
    tiny_llama: [['2026-01-01', 'aaaaaaa1', 'FAIL', 0.95, 'strix'], ['2026-02-01', 'aaaaaaa2', 'PASS', 0.9991, 'strix'], ['2026-02-02', 'aaaaaaa3', 'PASS', 0.9993, 'phoenix']],
    tiny_qwen25: [['2026-02-03', 'bbbbbbb1', 'FAIL', 0.97, 'strix'], ['2026-02-04', 'bbbbbbb2', 'ERROR', NaN, 'phoenix']],
    tiny_qwen3: [['2026-02-05', 'ccccccc1', 'PASS', 0.9995, 'strix'], ['2026-02-06', 'ccccccc2', 'FAIL', 0.98, 'phoenix'], ['2026-01-06', 'ccccccc0', 'PASS', 0.999, 'phoenix']],
  };
  const want: Record<string, Record<string, [string, string, string]>> = {
    tiny_llama: { strix: ['pass', 'PASS', '2026-02-01'], phoenix: ['pass', 'PASS', '2026-02-02'] },
    tiny_qwen25: { strix: ['fail', 'FAIL', '2026-02-03'], phoenix: ['error', 'ERROR', '2026-02-04'] },
    tiny_qwen3: { strix: ['pass', 'PASS', '2026-02-05'], phoenix: ['fail', 'FAIL', '2026-02-06'] },
  };
  for (const [m, rows] of Object.entries(recorded)) {
    mkdirSync(join(tree.model(m), 'docs/development_progress'), { recursive: true });
    writeFileSync(join(tree.model(m), 'docs/development_progress/phase2_block.md'), phase2(rows));
  }
  writeFileSync(join(tree.model('tiny_qwen25'), 'TODO.md'), '# TODO\n\n## Active blockers\n\n- Phase 2 FAIL on strix: G2 <!-- npu-block-gate:blocker -->\n');
  const out = join(work, 'fleet.html');
  const r = await cli(['status', '--tree', tree.root, '--html', out]);
  assert.is(r.code, 0, r.err);
  assert.match(r.out, '## Phase 2 status', 'the markdown is still printed');
  const o = await openPage(out);
  try {
    clean(o, 'fleet page');
    const cells = await o.page.$$eval('td[data-model]', (tds) => tds.map((td) => ({
      model: td.getAttribute('data-model')!, npu: td.getAttribute('data-npu')!, verdict: td.getAttribute('data-verdict')!,
      outcome: td.querySelector('[data-outcome]')!.textContent!, date: td.querySelector('[data-date]')!.textContent!, cosine: td.querySelector('[data-cosine]')!.textContent!,
    })));
    const got: Record<string, Record<string, [string, string, string]>> = {};
    for (const c of cells) (got[c.model] ??= {})[c.npu] = [c.verdict, c.outcome, c.date];
    assert.equal(got, want);
    const cos = Object.fromEntries(cells.map((c) => [`${c.model}/${c.npu}`, c.cosine]));
    assert.is(cos['tiny_llama/strix'], '0.999100');
    assert.is(cos['tiny_qwen25/phoenix'], 'n/a');
    // tiny_llama on strix has two runs: its sparkline is drawn.
    assert.ok(await o.page.$('td[data-model="tiny_llama"][data-npu="strix"] svg.spark'));
    assert.match(await o.page.$eval('#blockers', (x) => x.textContent!), 'Phase 2 FAIL on strix: G2');
    await o.page.screenshot({ path: join(shotsDir(), 'fleet.png'), fullPage: true });
  } finally {
    await o.close();
  }
  // A directory, or a missing parent, is one line naming it, exit 2, nothing written.
  const bad = await cli(['status', '--tree', tree.root, '--html', work]);
  assert.is(bad.code, 2);
  assert.match(bad.err, /^npu-block-gate: error: .*is a directory; --html takes the file to write\n$/);
  const missing = await cli(['status', '--tree', tree.root, '--html', join(work, 'no/such/dir/f.html')]);
  assert.is(missing.code, 2);
  assert.match(missing.err, /no\/such\/dir.*is not a directory/);
  assert.ok(statSync(out).size > 0);
});

test.after(closeBrowser);

test.run();
