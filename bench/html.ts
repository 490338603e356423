// npx tsx bench/html.ts [--runs 15] [--report FILE]
//
// Issue 31.5: what report.html costs beside the rest of `report`. On a 2,048-position run with 16
// boundaries (a record made here with the judge's own profileOf, or --report a report.json of such
// a run), times renderHtml against renderMarkdown (report.md, the summary flavour) and toJson
// (report.json), interleaved run by run, and prints the ratio of report.html's time to report.md's,
// the three files' sizes (bar: report.html under 2 MB), and the size of a fleet page of 19 models x
// 4 NPU generations (bar: under 1 MB).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fakeMetrics, fakeReport } from '../test/helpers/report.ts';
import { judgedLens } from '../test/helpers/lens.ts';
import { fromJson, toJson } from '../src/report/json.ts';
import { renderMarkdown } from '../src/report/markdown.ts';
import { renderHtml } from '../src/report/html.ts';
import { renderFleetHtml } from '../src/report/fleet-html.ts';
import type { Report } from '../src/record/report.ts';
import type { ModelStatus } from '../src/record/status.ts';
import type { HistoryEntry } from '../src/docs/phase2.ts';
import { interleave, isMain, load, machineLine, median, minimum, option } from './lib.ts';

const N = 2048;

/** A 2,048-position record with 16 boundaries: q_roped drifting from position 1,000 on (as the real tree's llama32_1b). */
export async function bigReport(): Promise<Report> {
  const drift = (i: number) => (i < 1000 ? 0.99999 - (i % 7) * 1e-6 : 0.995 - (i - 1000) * 2e-4);
  const lens = await judgedLens({ rows: N, perRow: (name, i) => (name === 'q_roped' || name === 'k_roped' ? drift(i) : 0.99998 - (i % 13) * 1e-6) });
  for (const r of lens.rows) r.profile.norms = r.profile.points.map((_, i) => 1 + ((i % 5) - 2) * 1e-4);
  const cosines = Array.from({ length: N }, (_, i) => 0.9999 - (i % 11) * 1e-5);
  const m = fakeMetrics({ cosines, realLen: N, npuRows: N });
  m.errors.rowNormRatios = cosines.map((_, i) => 1 + ((i % 9) - 4) * 1e-4);
  return fakeReport(m, { lens, prompt: { style: 'instruct', text: 'x', source: 'verify/prompts/instruct.txt:3', real_len: N, padded_len: N, positions: { requested: N, method: 'repeated', set: 'verify/prompts', prompts_used: 3, prompt_tokens: 25, cycles: 20 } as never } });
}

/** 19 models x 4 generations, each with a full trend. */
export function bigFleet(): ModelStatus[] {
  const npus = ['phoenix', 'strix', 'krackan', 'hawk'];
  return Array.from({ length: 19 }, (_, k) => ({
    name: `model_${String(k).padStart(2, '0')}_with_a_longish_name`, model: `programming_examples/llms/model_${k}`, phase2_done: k % 3 === 0, phase2_checkbox: k % 3 === 0,
    generations: npus.map((npu, j) => ({
      npu, outcome: (k + j) % 5 === 0 ? 'FAIL' : 'PASS', date: '2026-11-29', commit: 'abcdef123456', prompt: 'instruct',
      cosine: 0.9995, min_cosine: 0.999, threshold: 0.99, trend: [0.999, 0.9991, 0.9989, 0.999, 0.9992], change: 0.0002, runs: 12,
    })),
    blockers: k % 4 === 0 ? ['Phase 2 single-block validation FAILS at abcdef123456 on Strix (2026-11-29): G2 failed (per-position min 0.95). See docs/development_progress/phase2_block.md.'] : [],
    problem: null,
  }));
}

const HISTORY: HistoryEntry[] = Array.from({ length: 30 }, (_, i) => ({
  date: `2026-10-${String(1 + i).padStart(2, '0')}`, commit: `c${String(i).padStart(11, '0')}`, prompt: 'instruct', outcome: 'PASS', maxAbs: 0.01 + i * 1e-4, shape: '', cosine: 0.9995, minCosine: 0.999, threshold: 0.99, npu: 'unknown',
}));

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const runs = Number(option(args, 'runs', '15'));
  const file = option(args, 'report', null);
  const report = file ? fromJson<Report>(readFileSync(file, 'utf8')) : await bigReport();
  const n = report.metrics?.realLen ?? 0;
  const time = (f: () => unknown) => () => { const t = performance.now(); f(); return (performance.now() - t) / 1000; };
  console.log(`bench/html: ${file ?? 'a made-up record'}: ${n} positions, ${report.lens?.rows.length ?? 0} boundaries; ${machineLine()}`);
  const { times, loads } = await interleave([
    { name: 'report.md', runs, run: time(() => renderMarkdown(report, { flavor: 'summary' })) },
    { name: 'report.json', runs, run: time(() => toJson(report)) },
    { name: 'report.html', runs, run: time(() => renderHtml(report, { history: HISTORY })) },
  ]);
  const size = (s: string) => `${(Buffer.byteLength(s, 'utf8') / 1024).toFixed(0)} KiB`;
  const out = { 'report.md': renderMarkdown(report, { flavor: 'summary' }), 'report.json': toJson(report), 'report.html': renderHtml(report, { history: HISTORY }) };
  for (const k of Object.keys(out) as (keyof typeof out)[]) console.log(`  ${k.padEnd(12)} median ${(median(times[k]) * 1000).toFixed(1)} ms (min ${(minimum(times[k]) * 1000).toFixed(1)} ms), ${size(out[k])}`);
  console.log(`  report.html / report.md time: ${(median(times['report.html']) / median(times['report.md'])).toFixed(2)}x (medians of ${runs})`);
  console.log(`  report.html ${size(out['report.html'])} (bar: under 2048 KiB): ${Buffer.byteLength(out['report.html']) < 2 * 1024 * 1024 ? 'met' : 'NOT met'}`);
  const fleet = renderFleetHtml(bigFleet(), { source: 'bench: 19 models x 4 generations' });
  console.log(`  fleet page of 19 models x 4 generations: ${size(fleet)} (bar: under 1024 KiB): ${Buffer.byteLength(fleet) < 1024 * 1024 ? 'met' : 'NOT met'}`);
  console.log(`  load average ${load()} (rounds: ${loads.map((x) => x.toFixed(2)).join(' ')})`);
}
