// npx tsx bench/accept.ts [--runs 9 --hook-runs 20 --check-runs 7 --air DIR --python P --dir DIR --wait-load 1.5]
//
// Issue 30's acceptance in ONE interleaved run on this machine: every contender of the compare
// bench (bench/bench.ts: read, native, mlir-air's compare_pair; f32 and bf16; and read and native
// on 16 small pairs of 128 x 2048), of the report bench
// (bench/report.ts: report and the peer's path end to end), of the check overhead
// (bench/overhead.ts) and of the job-started hook (bench/hook.ts) takes its turn in every round,
// so a change in the machine's load hits them alike; the load average is printed beside every
// ratio and at both ends. Then the thread start-up figures (bench/threads.ts). Ends with the
// acceptance table: each goal's ratio and met / NOT MET. --wait-load X first waits (up to 30 min) for the 1-minute load average to be
// under X: other work on these cores slows the fastest contenders most. Needs dist/ built.
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { airSetting, compareBench } from './bench.ts';
import { hookBench } from './hook.ts';
import { interleave, load, machineLine, median, minimum, option, type Contender } from './lib.ts';
import { overheadBench } from './overhead.ts';
import { peerSetting, reportBench } from './report.ts';
import { threadStart } from './threads.ts';
import { selectEngine } from '../src/metrics/index.ts';
import type { NativeKernel } from '../src/metrics/native.ts';

const args = process.argv.slice(2);
const runs = Number(option(args, 'runs', '9'));
const dir = option(args, 'dir', join(tmpdir(), 'npu-block-gate-bench-16x2048x2048'));
const waitLoad = option(args, 'wait-load', null);

if (waitLoad) {
  const until = Date.now() + 30 * 60_000;
  while (loadavg()[0] >= Number(waitLoad) && Date.now() < until) {
    console.log(`accept: load average ${load()}: waiting for the 1-minute figure to drop under ${waitLoad}`);
    await new Promise((r) => setTimeout(r, 30_000));
  }
}
const native = selectEngine({ NPU_BLOCK_GATE_ENGINE: 'auto' }) as NativeKernel;
console.log(`accept: ${machineLine()}; native engine ${native.name === 'native' ? `${native.path} (${native.isa})` : 'UNAVAILABLE'}`);
const { air, lines } = airSetting(args);
for (const l of lines) console.log(l);
const { peer, line } = peerSetting(args);
console.log(line);

const compares = [];
for (const dtype of ['f32', 'bf16'] as const) compares.push(await compareBench({ dtype, dir, layers: 16, rows: 2048, cols: 2048, runs, air, twin: false, blocks: false }));
// Small tensors (issue 30: 128 x 2048, where the per-pair fixed cost shows), in a dir of their own.
const smalls = [];
for (const dtype of ['f32', 'bf16'] as const) smalls.push(await compareBench({ dtype, dir: `${dir}-128`, layers: 16, rows: 128, cols: 2048, runs, air: { skip: 'not run for small tensors' }, twin: false, blocks: false, tag: 'small ' }));
const report = reportBench({ base: dir, runs, peer });
const check = overheadBench(Number(option(args, 'check-runs', '7')), args);
const hook = hookBench(Number(option(args, 'hook-runs', '20')), args);
const contenders: Contender[] = [...compares.flatMap((c) => c.contenders), ...smalls.flatMap((c) => c.contenders), ...report.contenders, ...check.contenders, ...hook.contenders];
const startLoad = load();
const t0 = performance.now();
let result;
try {
  result = await interleave(contenders, (r, n) => process.stderr.write(`\raccept: round ${r + 1}/${n}, load ${load()}   `));
  process.stderr.write('\n');
} finally {
  for (const c of [...compares, ...smalls]) c.close();
  report.cleanup();
  check.cleanup();
  hook.cleanup();
}
const { times, loads } = result;
console.log(`accept: ${Math.max(...contenders.map((c) => c.runs))} interleaved rounds in ${((performance.now() - t0) / 1000).toFixed(0)} s; load average at the start ${startLoad}, at the end ${load()}, 1-minute figure over the rounds ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)}`);
console.log('');
for (const c of [...compares, ...smalls]) for (const l of c.summary(times, loads)) console.log(l);
console.log('');
for (const l of report.summary(times, loads)) console.log(l);
console.log('');
for (const l of check.summary(times)) console.log(l);
console.log('');
for (const l of hook.summary(times)) console.log(l);
console.log('');
for (const l of threadStart(200)) console.log(l);

const byMin = Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, [minimum(xs)]]));
const [f32, bf16, sf32, sbf16] = [...compares, ...smalls].map((c) => c.figures(times));
const [f32m, bf16m, sf32m, sbf16m] = [...compares, ...smalls].map((c) => c.figures(byMin));
const rep = report.figures(times);
const repm = report.figures(byMin);
const repFloor = report.overFloor(times);
const pct = (x: number | null) => (x === null ? 'n/a' : `${(100 * x).toFixed(0)}%`);
const x = (v: number | null) => (v === null ? 'n/a' : `${v.toFixed(2)}x`);
const s = (v: number) => `${v.toFixed(3)} s`;
const verdict = (ok: boolean | null) => (ok === null ? 'NOT MEASURED' : ok ? 'met' : 'NOT MET');
const atLeast = (v: number | null, bar: number) => verdict(v === null ? null : v >= bar);
const over = check.overFloor(times);
const overm = check.overFloor(byMin);
const started = median(times['hook/job-started']);
const row = (what: string, med: string, min: string, v: string) => console.log(`  ${what.padEnd(62)} ${med.padStart(9)}  ${min.padStart(9)}   ${v}`);
const loadRange = `${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)}`;
console.log(`\naccept: issue 30's bars (load average over the rounds ${loadRange}, at the end ${load()}; the read bar: ${compares[0].bar.what})`);
row('', 'median', 'by minima', 'verdict (medians)');
row('report >= 5x the peer\'s path end to end, f32', x(rep.f32), x(repm.f32), `${atLeast(rep.f32, 5)} (report at ${repFloor.f32.toFixed(2)}x its floor: read + node -e 0)`);
row('report >= 5x the peer\'s path end to end, bf16', x(rep.bf16), x(repm.bf16), `${atLeast(rep.bf16, 5)} (report at ${repFloor.bf16.toFixed(2)}x its floor: read + node -e 0)`);
row('native compare >= 85% of the one-thread read, bf16', pct(bf16.nativeOfRead), pct(bf16m.nativeOfRead), atLeast(bf16.nativeOfRead, 0.85));
row('native compare >= 85% of the one-thread read, f32', pct(f32.nativeOfRead), pct(f32m.nativeOfRead), atLeast(f32.nativeOfRead, 0.85));
row('small tensors (16 x 128 x 2048) >= 70% of the read, bf16', pct(sbf16.nativeOfRead), pct(sbf16m.nativeOfRead), atLeast(sbf16.nativeOfRead, 0.7));
row('small tensors (16 x 128 x 2048) >= 70% of the read, f32', pct(sf32.nativeOfRead), pct(sf32m.nativeOfRead), atLeast(sf32.nativeOfRead, 0.7));
row('native vs mlir-air compare_pair, f32', x(f32.vsPeer), x(f32m.vsPeer), '');
row('native vs mlir-air compare_pair, bf16', x(bf16.vsPeer), x(bf16m.vsPeer), '');
row('check overhead <= 2x its floor (node + python numpy + bwrap)', x(over), x(overm), atLeast(over === null ? null : 2 / over, 1));
row(`job-started < 0.2 s with ${hook.python} (${times['hook/job-started'].length} runs)`, s(started), s(minimum(times['hook/job-started'])), verdict(started < 0.2));
