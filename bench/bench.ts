// npm run bench [-- --runs 7 --layers 16 --rows 2048 --cols 2048 --dir DIR --keep --no-cold --air DIR --python P --no-twin]
//
// On the same files (L layers of rows x cols, an NPU and a reference tensor per layer, as f32
// and as bf16 stored <u2), times over all L pairs, interleaved run by run (each round times every
// contender once, so the machine's load hits them alike), median and minimum of --runs:
//   read       the bar: the same bytes read by C's read(2) into one reused 1 MiB buffer, one
//              thread, at the same page-cache state (bench/read.c; see ReadBar in bench/lib.ts)
//   native     compare() with the native addon (it reads the files itself on its threads)
//   blocks     the addon fed row blocks read by TypeScript (the path for big-endian, fortran or
//              deflated sources)
//   twin       compare() with the TypeScript kernel (--no-twin skips it)
//   mlir-air   mlir-air's real programming_examples/llms/verify/comparators.py, run by
//              bench/mlir_air_compare.py in the Python the check would use (--python P, else
//              $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3), as a user's diagnosis runs it:
//              np.load both files, compare_pair(). The tree: --air DIR, else
//              $NPU_BLOCK_GATE_MLIR_AIR, else ../shared/mlir-air next to the repo; missing, the
//              column is skipped in one line.
// Printed with every ratio: the warm read bandwidth and the load average over the runs; in the
// header: numpy and ml_dtypes versions and OPENBLAS_CORETYPE. compare_pair's per-position min
// and max_abs are checked against our engine's on every pair (the largest difference is
// printed). Then, when the page cache can be dropped (root on Linux), read/native/twin again,
// each right after `sync; echo 1 > /proc/sys/vm/drop_caches` (--no-cold skips it; only this
// script drops caches, never a test). No assertions: this measures, it does not judge.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { compare, jsKernel, selectEngine, type Kernel } from '../src/metrics/index.ts';
import type { NativeKernel } from '../src/metrics/native.ts';
import { openTensor } from '../src/tensor/index.ts';
import { dropCaches, generate, type BenchDType } from './files.ts';
import {
  airTree, interleave, isMain, load, machineLine, median, medMin, minimum, option, pythonEnv, ReadBar, readAll, timed, verifyDir,
  type Contender, type PythonEnv,
} from './lib.ts';

type Pair = { npu: string; ref: string };
/** Per pair: the per-position cosine min and max_abs, what the mlir-air cross-check compares. */
interface Check { min: number; max_abs: number }

export async function judgeAll(pairs: Pair[], k: Kernel, checks?: Check[]): Promise<number> {
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

interface AirHeader { python: string; numpy: string; ml_dtypes: string | null; bf16: string | null; tree_modules: string[] }

/** mlir-air's compare_pair over every pair, one run per request, in a Python server (bench/mlir_air_compare.py). */
class AirCompare {
  private child: ChildProcessWithoutNullStreams;
  private lines: AsyncIterableIterator<string>;
  header!: AirHeader;
  lastCheck: Check[] = [];
  constructor(python: string, comparators: string, pairs: Pair[], dtype: BenchDType) {
    const script = fileURLToPath(new URL('./mlir_air_compare.py', import.meta.url));
    this.child = spawn(python, [script, comparators, dtype, ...pairs.flatMap((p) => [p.npu, p.ref])], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    this.child.stderr.on('data', (d) => { stderr += d; });
    this.child.on('exit', (code) => { if (code) process.stderr.write(`bench: mlir-air baseline exited ${code}: ${stderr.trim().split('\n').pop()}\n`); });
    this.lines = createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
  }
  private async next(): Promise<string> {
    const r = await this.lines.next();
    if (r.done) throw new Error('the mlir-air baseline stopped (see its error above)');
    return r.value;
  }
  async start(): Promise<this> {
    this.header = JSON.parse(await this.next());
    return this;
  }
  async run(): Promise<number> {
    this.child.stdin.write('run\n');
    const r = JSON.parse(await this.next()) as { seconds: number; check: Check[] };
    this.lastCheck = r.check;
    return r.seconds;
  }
  close(): void {
    this.child.stdin.end();
  }
}

export interface CompareOptions {
  dtype: BenchDType;
  dir: string;
  layers: number;
  rows: number;
  cols: number;
  runs: number;
  /** The mlir-air comparators.py and the Python to run it in; null: the column is skipped (why). */
  air: { comparators: string; python: PythonEnv } | { skip: string };
  twin: boolean;
  blocks: boolean;
  /** Prefixed to the contenders' names ("small "), when one run holds two sizes of a dtype. */
  tag?: string;
}

export interface CompareBench {
  contenders: Contender[];
  /** The lines to print once the runs are in. */
  summary(times: Record<string, number[]>, loads: number[]): string[];
  /** Ratios for the acceptance table: native throughput / one-thread read, peer time / native time. */
  figures(times: Record<string, number[]>): { nativeOfRead: number | null; vsPeer: number | null };
  files: string[];
  pairs: Pair[];
  /** The read bar (bench/read.c) on these files. */
  bar: ReadBar;
  close(): void;
}

/** The contenders of one dtype, its files generated (or reused) and the page cache warmed. */
export async function compareBench(o: CompareOptions): Promise<CompareBench> {
  const pairs = generate(o.dir, o.dtype, o.layers, o.rows, o.cols);
  const files = pairs.flatMap((p) => [p.npu, p.ref]);
  const bytes = readAll(files);
  readAll(files); // warm: every contender reads from the page cache
  const native = selectEngine({ NPU_BLOCK_GATE_ENGINE: 'auto' });
  const hasNative = native.name === 'native';
  const nativeBlocks = hasNative && o.blocks ? (native as NativeKernel).tuned({ files: false }) : null;
  const ours: Check[] = [];
  await judgeAll(pairs, hasNative ? native : jsKernel, ours); // the cross-check's numbers (and a warm-up)
  const air = 'skip' in o.air ? null : await new AirCompare(o.air.python.command, o.air.comparators, pairs, o.dtype).start();
  const d = `${o.tag ?? ''}${o.dtype}`;
  const bar = new ReadBar(files);
  const contenders: Contender[] = [{ name: `compare/read ${d}`, runs: o.runs, run: () => bar.run() }];
  if (hasNative) contenders.push({ name: `compare/native ${d}`, runs: o.runs, run: () => timed(() => judgeAll(pairs, native)) });
  if (nativeBlocks) contenders.push({ name: `compare/blocks ${d}`, runs: o.runs, run: () => timed(() => judgeAll(pairs, nativeBlocks)) });
  if (o.twin) contenders.push({ name: `compare/twin ${d}`, runs: o.runs, run: () => timed(() => judgeAll(pairs, jsKernel)) });
  if (air) contenders.push({ name: `compare/mlir-air ${d}`, runs: o.runs, run: () => air.run() });

  const gbps = (xs: number[]) => `${(bytes / median(xs) / 1e9).toFixed(2).padStart(6)} GB/s`;
  const figures = (t: Record<string, number[]>) => {
    const read = t[`compare/read ${d}`], nat = t[`compare/native ${d}`], peer = t[`compare/mlir-air ${d}`];
    return {
      nativeOfRead: nat?.length ? median(read) / median(nat) : null,
      vsPeer: nat?.length && peer?.length ? median(peer) / median(nat) : null,
    };
  };
  const summary = (t: Record<string, number[]>, loads: number[]) => {
    const row = (name: string, note = '') => {
      const xs = t[`compare/${name} ${d}`];
      return xs?.length ? `  ${name.padEnd(8)} ${medMin(xs)}  ${gbps(xs)}${note}` : null;
    };
    const read = t[`compare/read ${d}`];
    const beside = `[read ${gbps(read).trim()} on one thread; load average ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)} over the runs]`;
    const lines = [`${d}: ${(bytes / 1e9).toFixed(3)} GB over ${files.length} files (${o.layers} layers x ${o.rows} x ${o.cols}), warm page cache, median (min) of ${read.length} interleaved runs`];
    lines.push(row('read', `   (the bar: ${bar.what})`)!);
    lines.push(row('native') ?? '  native   unavailable (the addon did not load)');
    if (nativeBlocks) lines.push(row('blocks', '   (native, fed blocks read by TypeScript)')!);
    if (o.twin) lines.push(row('twin')!);
    if (!air) lines.push(`  mlir-air skipped: ${'skip' in o.air ? o.air.skip : ''}`);
    else {
      lines.push(row('mlir-air', `   (np.load + compare_pair${air.header.bf16 && d === 'bf16' ? `; bf16 fed as ${air.header.bf16}` : ''})`)!);
      const diff = (k: keyof Check) => Math.max(...air.lastCheck.map((c, i) => Math.abs(c[k] - ours[i][k])));
      const modules = air.header.tree_modules.length ? `; ALSO IMPORTED FROM THE TREE: ${air.header.tree_modules.join(', ')}` : '';
      lines.push(`           cross-check vs ${hasNative ? 'native' : 'twin'} over ${air.lastCheck.length} pairs: largest |diff| per-position min ${diff('min').toExponential(2)}, max_abs ${diff('max_abs').toExponential(2)}${modules}`);
    }
    const f = figures(t);
    const pct = (x: number | null) => (x === null ? 'n/a' : `${(100 * x).toFixed(0)}%`);
    const times = (x: number | null) => (x === null ? 'n/a' : `${x.toFixed(2)}x`);
    const twin = t[`compare/twin ${d}`];
    lines.push(`  ratios: native ${times(f.vsPeer)} faster than mlir-air, native at ${pct(f.nativeOfRead)} of the read's throughput` +
      (twin?.length ? `, twin ${times(t[`compare/mlir-air ${d}`]?.length ? median(t[`compare/mlir-air ${d}`]) / median(twin) : null)} faster than mlir-air, twin at ${pct(median(read) / median(twin))} of the read's` : '') +
      `; by minima: native ${t[`compare/native ${d}`]?.length ? pct(minimum(read) / minimum(t[`compare/native ${d}`])) : 'n/a'} of the read ${beside}`);
    return lines;
  };
  return { contenders, summary, figures, files, pairs, bar, close: () => { air?.close(); bar.close(); } };
}

/** The compare bench's header lines and the mlir-air setting shared by both dtypes. */
export function airSetting(args: string[]): { air: CompareOptions['air']; lines: string[] } {
  const tree = airTree(args);
  const comparators = join(verifyDir(tree.dir), 'comparators.py');
  if (!existsSync(comparators)) {
    const skip = `no mlir-air comparators at ${comparators} (from ${tree.from}; pass --air DIR or set NPU_BLOCK_GATE_MLIR_AIR)`;
    return { air: { skip }, lines: [`bench: ${skip}: mlir-air column skipped`] };
  }
  try {
    const python = pythonEnv(args);
    return { air: { comparators, python }, lines: [`bench: mlir-air baseline ${comparators} (from ${tree.from}); ${python.line}`] };
  } catch (e) {
    const skip = (e as Error).message;
    return { air: { skip }, lines: [`bench: ${skip}: mlir-air column skipped`] };
  }
}

async function main(args: string[]): Promise<void> {
  const runs = Number(option(args, 'runs', '7'));
  const layers = Number(option(args, 'layers', '16'));
  const rows = Number(option(args, 'rows', '2048'));
  const cols = Number(option(args, 'cols', '2048'));
  const dir = option(args, 'dir', join(tmpdir(), `npu-block-gate-bench-${layers}x${rows}x${cols}`));
  const native = selectEngine({ NPU_BLOCK_GATE_ENGINE: 'auto' });
  console.log(`bench: ${layers} layers x ${rows} x ${cols}, NPU + reference per layer, f32 and bf16 (<u2); ${machineLine()}; ` +
    `native engine ${native.name === 'native' ? `${(native as NativeKernel).path} (${(native as NativeKernel).isa})` : 'UNAVAILABLE'}; files in ${dir}`);
  const { air, lines } = airSetting(args);
  for (const l of lines) console.log(l);
  const coldWhyNot = args.includes('--no-cold') ? 'skipped: --no-cold' : dropCaches();
  for (const dtype of ['f32', 'bf16'] as const) {
    const b = await compareBench({ dtype, dir, layers, rows, cols, runs, air, twin: !args.includes('--no-twin'), blocks: true });
    const { times, loads } = await interleave(b.contenders);
    console.log('');
    for (const l of b.summary(times, loads)) console.log(l);
    if (coldWhyNot) {
      b.close();
      console.log(`  cold page cache: NOT MEASURED (${coldWhyNot})`);
      continue;
    }
    // Cold: every timing starts from an empty page cache, so "read" is the storage's own bandwidth.
    const cold = (name: string, fn: () => unknown): Contender => ({
      name, runs, run: async () => {
        const why = dropCaches();
        if (why) throw new Error(`bench: dropping the page cache stopped working: ${why}`);
        return timed(fn);
      },
    });
    const c = await interleave([
      { name: 'read', runs, run: () => { const why = dropCaches(); if (why) throw new Error(`bench: dropping the page cache stopped working: ${why}`); return b.bar.run(); } },
      ...(native.name === 'native' ? [cold('native', () => judgeAll(b.pairs, native))] : []),
      ...(args.includes('--no-twin') ? [] : [cold('twin', () => judgeAll(b.pairs, jsKernel))]),
    ]);
    b.close();
    console.log(`  cold page cache (dropped before each timing), median (min):`);
    for (const [name, xs] of Object.entries(c.times)) console.log(`  ${name.padEnd(8)} ${medMin(xs)}`);
    if (c.times.native) console.log(`  cold: native at ${(100 * median(c.times.read) / median(c.times.native)).toFixed(0)}% of the cold read's throughput; cold read ${(median(c.times.read) / median(times[`compare/read ${dtype}`])).toFixed(1)}x slower than warm`);
  }
  console.log(`\nbench: load average at the end ${load()} (other processes on these cores slow every contender, the fastest ones most)`);
  if (!args.includes('--keep') && !args.includes('--dir')) rmSync(dir, { recursive: true, force: true });
}

if (isMain(import.meta.url)) await main(process.argv.slice(2));
