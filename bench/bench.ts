// npm run bench [-- --runs 5 --layers 16 --rows 2048 --cols 2048 --dir DIR --keep --no-cold --air DIR]
//
// On the same files (L layers of rows x cols, an NPU and a reference tensor per layer, as f32
// and as bf16 stored <u2), times over all L pairs, median of --runs:
//   (a) native     compare() with the native addon (it reads the files itself on its threads,
//                  threads = min(cores, 4)); also shown: the addon fed blocks read by TypeScript
//   (b) twin       compare() with the TypeScript kernel
//   (c) mlir-air   mlir-air's real programming_examples/llms/verify/comparators.py, run by
//                  bench/mlir_air_compare.py as a user's diagnosis runs it: np.load both files,
//                  compare_pair(). The tree: --air DIR, else $NPU_BLOCK_GATE_MLIR_AIR, else
//                  ../shared/mlir-air next to the repo; missing, the column is skipped.
//   (d) read       reading the same bytes with readSync into one reused buffer: the limit
// and prints GB/s (file bytes / second) for each and the ratios native/mlir-air,
// twin/mlir-air, native/read. compare_pair's per-position min and max_abs are checked against
// our engine's on every pair (the largest difference is printed). Each contender opens and reads the files itself inside its timing. No
// assertions: this measures, it does not judge.
//
// Two tables per dtype:
//   warm   the files are read once before timing, so every contender reads through a warm page
//          cache and "read" is memory-copy bandwidth, the same for everyone.
//   cold   read, native and twin each timed right after `sync; echo 1 > /proc/sys/vm/drop_caches`
//          (median of --runs), so "read" is the storage's own read bandwidth. Needs root on
//          Linux (a writable drop_caches); otherwise the cold table says it could not be
//          measured and why. --no-cold skips it. Only this script drops caches, never a test.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compare, jsKernel, selectEngine, type Kernel } from '../src/metrics/index.ts';
import type { NativeKernel } from '../src/metrics/native.ts';
import { describePython, findPython } from '../src/probe/python.ts';
import { openTensor } from '../src/tensor/index.ts';
import { dropCaches, generate, type BenchDType } from './files.ts';

const args = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const RUNS = Number(opt('runs', '5'));
const LAYERS = Number(opt('layers', '16'));
const ROWS = Number(opt('rows', '2048'));
const COLS = Number(opt('cols', '2048'));
const KEEP = args.includes('--keep');
const COLD = !args.includes('--no-cold');
const DIR = opt('dir', join(tmpdir(), `npu-block-gate-bench-${LAYERS}x${ROWS}x${COLS}`));
// The mlir-air tree whose comparators.py is the baseline: --air DIR, $NPU_BLOCK_GATE_MLIR_AIR,
// else ../shared/mlir-air relative to the repo root.
const AIR = args.includes('--air')
  ? resolve(opt('air', ''))
  : process.env.NPU_BLOCK_GATE_MLIR_AIR
    ? resolve(process.env.NPU_BLOCK_GATE_MLIR_AIR)
    : resolve(fileURLToPath(new URL('..', import.meta.url)), '..', 'shared', 'mlir-air');
const AIR_FROM = args.includes('--air') ? '--air' : process.env.NPU_BLOCK_GATE_MLIR_AIR ? '$NPU_BLOCK_GATE_MLIR_AIR' : 'default ../shared/mlir-air';
const COMPARATORS = join(AIR, 'programming_examples', 'llms', 'verify', 'comparators.py');

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const buf = Buffer.allocUnsafe(8 << 20);
function readAllFiles(files: string[]): number {
  let total = 0;
  for (const f of files) {
    const fd = openSync(f, 'r');
    try {
      for (;;) {
        const n = readSync(fd, buf, 0, buf.length, null);
        if (n === 0) break;
        total += n;
      }
    } finally {
      closeSync(fd);
    }
  }
  return total;
}

/** Per pair: the per-position cosine min and max_abs, what the mlir-air cross-check compares. */
interface Check { min: number; max_abs: number }

async function judgeAll(pairs: { npu: string; ref: string }[], k: Kernel, checks?: Check[]): Promise<number> {
  let sum = 0;
  for (const [i, p] of pairs.entries()) {
    const a = openTensor(p.npu, { u2IsBf16: true });
    const b = openTensor(p.ref, { u2IsBf16: true });
    try {
      const m = await compare(a, b, { threshold: 0.99 }, k);
      sum += m.wholeCosine;
      if (checks) checks[i] = { min: m.perPosition.min, max_abs: m.errors.maxAbs };
    } finally {
      a.close();
      b.close();
    }
  }
  return sum;
}

async function time(fn: () => unknown): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

interface AirResult { seconds: number[]; bf16: string | null; check: Check[]; tree_modules: string[] }

/** mlir-air's real compare_pair over every pair, --runs times, in one Python process (bench/mlir_air_compare.py). */
function airTimes(python: string, pairs: { npu: string; ref: string }[], dtype: BenchDType): AirResult | string {
  const script = fileURLToPath(new URL('./mlir_air_compare.py', import.meta.url));
  const r = spawnSync(python, [script, COMPARATORS, String(RUNS), dtype, ...pairs.flatMap((p) => [p.npu, p.ref])], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) return `mlir-air baseline failed: ${(r.stderr || r.error?.message || '').trim().split('\n').pop()}`;
  return JSON.parse(r.stdout) as AirResult;
}

const native = selectEngine({ NPU_BLOCK_GATE_ENGINE: 'auto' });
const hasNative = native.name === 'native';
// The addon fed row blocks read by TypeScript instead of reading the files itself: for comparison.
const nativeBlocks = hasNative ? (native as NativeKernel).tuned({ files: false }) : null;
console.log(
  `bench: ${LAYERS} layers x ${ROWS} x ${COLS}, NPU + reference per layer, f32 and bf16 (<u2); ${RUNS} runs, median; ` +
    `${availableParallelism()} cores; native engine ${hasNative ? `${(native as { path?: string }).path} (${(native as { isa?: string }).isa})` : 'UNAVAILABLE'}`,
);
// Probe once, up front: a cold table is only printed when dropping the cache works.
const coldWhyNot = COLD ? dropCaches() : 'skipped: --no-cold';
console.log(
  `bench: files in ${DIR}; warm: page cache warm for every contender (files read once before timing); ` +
    `cold: ${coldWhyNot ? `NOT MEASURED, ${coldWhyNot}` : `each of read / native / twin timed right after sync + drop_caches`}; ` +
    `load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}`,
);

// The baseline's Python: the repo's own rule (NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3:
// the first that imports numpy). Without the tree or a Python the column is skipped, in one line.
let airWhyNot: string | null = null;
let python = '';
if (!existsSync(COMPARATORS)) {
  airWhyNot = `no mlir-air comparators at ${COMPARATORS} (from ${AIR_FROM}; pass --air DIR or set NPU_BLOCK_GATE_MLIR_AIR): mlir-air column skipped`;
} else {
  try {
    const p = findPython(null);
    python = p.command;
    console.log(`bench: mlir-air baseline: ${COMPARATORS} (from ${AIR_FROM}), its compare_pair() on ${describePython(p)}`);
  } catch (e) {
    airWhyNot = `${(e as Error).message}: mlir-air column skipped`;
  }
}
if (airWhyNot) console.log(`bench: ${airWhyNot}`);

const fmt = (x: number, d = 2) => x.toFixed(d);
const ratio = (x: number[], y: number[] | string) => (typeof y === 'string' || !x.length || !y.length ? 'n/a' : `${fmt(median(y) / median(x))}x`);
const pct = (x: number[], y: number[]) => (x.length && y.length ? `${fmt((100 * median(y)) / median(x), 0)}%` : 'n/a');
for (const dtype of ['f32', 'bf16'] as const) {
  const pairs = generate(DIR, dtype, LAYERS, ROWS, COLS);
  const files = pairs.flatMap((p) => [p.npu, p.ref]);
  const bytes = readAllFiles(files); // warm the cache
  readAllFiles(files);
  const t: Record<string, number[]> = { read: [], native: [], blocks: [], twin: [] };
  const ours: Check[] = [];
  for (let r = 0; r < RUNS; r++) {
    t.read.push(await time(() => readAllFiles(files)));
    if (hasNative) t.native.push(await time(() => judgeAll(pairs, native, ours)));
    if (nativeBlocks) t.blocks.push(await time(() => judgeAll(pairs, nativeBlocks)));
    t.twin.push(await time(() => judgeAll(pairs, jsKernel, hasNative ? undefined : ours)));
  }
  const air = airWhyNot ? 'skipped' : airTimes(python, pairs, dtype);
  const airSeconds = typeof air === 'string' ? air : air.seconds;
  // Cold: every timing starts from an empty page cache (after the warm runs, so those stay warm).
  const c: Record<string, number[]> = { read: [], native: [], twin: [] };
  if (!coldWhyNot) {
    const cold = async (fn: () => unknown) => {
      const why = dropCaches();
      if (why) throw new Error(`bench: dropping the page cache stopped working: ${why}`);
      return time(fn);
    };
    for (let r = 0; r < RUNS; r++) {
      c.read.push(await cold(() => readAllFiles(files)));
      if (hasNative) c.native.push(await cold(() => judgeAll(pairs, native)));
      c.twin.push(await cold(() => judgeAll(pairs, jsKernel)));
    }
  }
  const gbps = (s: number) => bytes / s / 1e9;
  const row = (name: string, xs: number[] | string, note = '') =>
    typeof xs === 'string'
      ? `  ${name.padEnd(8)} ${xs}`
      : `  ${name.padEnd(8)} ${fmt(median(xs), 3).padStart(7)} s  ${fmt(gbps(median(xs))).padStart(6)} GB/s${note}`;
  const judged = (tt: Record<string, number[]>) => (hasNative ? tt.native : tt.twin);
  console.log(`\n${dtype}: ${fmt(bytes / 1e9, 3)} GB over ${files.length} files`);
  console.log(`  warm page cache:`);
  console.log(row('read', t.read));
  console.log(row('native', hasNative ? t.native : 'unavailable'));
  if (nativeBlocks) console.log(row('blocks', t.blocks, '   (native, fed blocks read by TypeScript)'));
  console.log(row('twin', t.twin));
  if (typeof air === 'string') console.log(row('mlir-air', air === 'skipped' ? 'skipped (see the line above the tables)' : air));
  else {
    console.log(row('mlir-air', air.seconds, `   (np.load + compare_pair${air.bf16 ? `; bf16 fed as ${air.bf16}` : ''})`));
    // Cross-check: the real compare_pair and our engine (float32 vs float64 accumulation) on every pair.
    const d = (k: keyof Check) => Math.max(...air.check.map((c, i) => Math.abs(c[k] - ours[i][k])));
    const modules = air.tree_modules.length ? `; ALSO IMPORTED FROM THE TREE: ${air.tree_modules.join(', ')}` : '';
    console.log(
      `           cross-check vs ${hasNative ? 'native' : 'twin'} over ${air.check.length} pairs: largest |diff| ` +
        `per-position min ${d('min').toExponential(2)}, max_abs ${d('max_abs').toExponential(2)}${modules}`,
    );
  }
  console.log(
    `  warm ratios: native/mlir-air ${ratio(t.native, airSeconds)}, twin/mlir-air ${ratio(t.twin, airSeconds)}, ` +
      `native/read ${pct(t.native, t.read)}, twin/read ${pct(t.twin, t.read)}; ` +
      `judging all ${LAYERS} layers takes ${fmt(median(judged(t)) / median(t.read))}x the warm read time`,
  );
  if (coldWhyNot) {
    console.log(`  cold page cache: NOT MEASURED (${coldWhyNot})`);
    continue;
  }
  console.log(`  cold page cache (dropped before each timing):`);
  console.log(row('read', c.read));
  console.log(row('native', hasNative ? c.native : 'unavailable'));
  console.log(row('twin', c.twin));
  console.log(
    `  cold ratios: native/read ${pct(c.native, c.read)}, twin/read ${pct(c.twin, c.read)}; ` +
      `judging all ${LAYERS} layers takes ${fmt(median(judged(c)) / median(c.read))}x the cold read time; ` +
      `cold read is ${fmt(median(c.read) / median(t.read), 1)}x slower than warm`,
  );
}
console.log(`\nbench: load average at the end ${loadavg().map((x) => x.toFixed(1)).join(' ')} (other processes on these cores slow every contender)`);
if (!KEEP && !args.includes('--dir')) rmSync(DIR, { recursive: true, force: true });
