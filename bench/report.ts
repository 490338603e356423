// npx tsx bench/report.ts [--runs 9 --dir DIR --air DIR --python P --no-cold]
//
// `npu-block-gate report` as the user meets it, against the peer's path end to end. On a 16-layer
// run dir (block 0 plus layers/ for every layer, 2048 x 2048, f32 and bf16 stored <u2; hard links
// to the bench files), interleaved, median and minimum of --runs, process start to exit:
//   report     node dist/cli.js report --run-dir D --no-docs --json (judges block 0 and the 16
//              layers: 17 pairs; writes report.json and report.md)
//   mlir-air   the same judgement by mlir-air's own code (bench/mlir_air_report.py) in the Python
//              the check would use (--python P, else $NPU_BLOCK_GATE_PYTHON, python3,
//              /usr/bin/python3): Python start, numpy import, the tree's verify/comparators.py
//              and verify/report.py, np.load + compare_pair for the 16 layers, then its report
//              writer (Report.dump_json and dump_markdown). The tree: --air DIR, else
//              $NPU_BLOCK_GATE_MLIR_AIR, else ../shared/mlir-air.
//   read       reading the run dir's 17 pairs once by C's read(2), one thread (bench/read.c)
//   node -e 0  Node's own start-up; read + node -e 0 is `report`'s floor, and the ratio is printed
// With a writable /proc/sys/vm/drop_caches (root on Linux), `report` and read again from a
// cold page cache (--no-cold skips it). No assertions.
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropCaches, generate, type BenchDType } from './files.ts';
import {
  airTree, interleave, isMain, load, machineLine, median, medMin, option, pythonEnv, ReadBar, readAll, spawnTimed, timed, verifyDir,
  type Contender, type PythonEnv,
} from './lib.ts';

const LAYERS = 16;
const ROWS = 2048;
const COLS = 2048;
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const PEER = fileURLToPath(new URL('./mlir_air_report.py', import.meta.url));

/** A run dir whose tensors are hard links to the bench files (no copy; same bytes on disk). */
function runDir(base: string, dtype: BenchDType): { dir: string; pairs: { npu: string; ref: string }[]; files: string[] } {
  const pairs = generate(base, dtype, LAYERS, ROWS, COLS);
  const dir = join(base, `rundir-${dtype}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'layers'), { recursive: true });
  const link = (src: string, rel: string) => { linkSync(src, join(dir, rel)); return rel; };
  const t = (file: string) => ({ file, dtype, shape: [ROWS, COLS] });
  const entries = pairs.map((p, l) => {
    const n = String(l).padStart(2, '0');
    return { layer: l, npu: t(link(p.npu, `layers/layer_${n}.npu.npy`)), ref: t(link(p.ref, `layers/layer_${n}.ref.npy`)) };
  });
  link(pairs[0].npu, 'block0.npu.npy');
  link(pairs[0].ref, 'block0.ref.npy');
  writeFileSync(join(dir, 'probe.json'), JSON.stringify({
    schema: 'npu-block-gate/probe', schema_version: 1, stage: 'block', created_at: new Date().toISOString(), tool: { name: 'bench', version: '0' },
    model: { name: 'bench', dir: 'programming_examples/llms/bench', hf_id: null, config: { n_layers: LAYERS + 1, emb_dim: COLS, n_heads: 32, n_kv_heads: 8, head_dim: 64, hidden_dim: 8192, qkv_bias: false, qk_norm: false } },
    prompt: { style: 'instruct', text: 'bench', source: '--prompt', token_ids: [], real_len: ROWS, padded_len: ROWS, tokenizer: 'none' },
    integration: { path: 'adapter', entry: 'bench', reason: 'bench', kernels: [], tiles: {}, workarounds: [], cpu_attn: null },
    reference: { kind: 'emulated', runner: 'bench', lite_mode: false, dtype, model_id: null, transformers: null, torch: null },
    environment: { python: '', python_executable: '', numpy: '', platform: process.platform, device: null, xrt: null, toolchain: null, git_commit: null, air_root: '/nonexistent' },
    timings: {}, kernel_cache: { dir: null, key: null, hit: null, seconds_saved: null, entries: [] },
    tensors: { npu: t('block0.npu.npy'), ref: t('block0.ref.npy'), input: null },
    layers: { source: 'bench', entries },
    bisect: null,
  }));
  return { dir, pairs, files: pairs.flatMap((p) => [p.npu, p.ref]) };
}

export interface ReportBench {
  contenders: Contender[];
  summary(times: Record<string, number[]>, loads: number[]): string[];
  /** How many times faster `report` is than the peer's path (medians), per dtype. */
  figures(times: Record<string, number[]>): Record<BenchDType, number | null>;
  /** `report` over its floor (the read of its bytes + `node -e 0`, medians), per dtype. */
  overFloor(times: Record<string, number[]>): Record<BenchDType, number>;
  cleanup(): void;
}

export interface ReportOptions { base: string; runs: number; peer: { verify: string; python: PythonEnv } | { skip: string } }

export function reportBench(o: ReportOptions): ReportBench {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  const out = mkdtempSync(join(tmpdir(), 'nbg-bench-peer-'));
  const contenders: Contender[] = [{ name: 'report/node -e 0', runs: o.runs, run: () => spawnTimed(process.execPath, ['-e', '0']).seconds }];
  const sets = (['f32', 'bf16'] as BenchDType[]).map((dtype) => ({ dtype, ...runDir(o.base, dtype) }));
  for (const s of sets) readAll(s.files); // warm
  // The run dir's bytes: 16 layers' pairs and block 0's (hard links to layer 0's files).
  const bars = sets.map((s) => new ReadBar([...s.files, s.pairs[0].npu, s.pairs[0].ref]));
  for (const [i, s] of sets.entries()) {
    contenders.push({ name: `report/read ${s.dtype}`, runs: o.runs, run: () => bars[i].run() });
    contenders.push({ name: `report/report ${s.dtype}`, runs: o.runs, run: () => spawnTimed(process.execPath, [CLI, 'report', '--run-dir', s.dir, '--no-docs', '--json'], { ok: [0, 1] }).seconds });
    if (!('skip' in o.peer)) {
      const { verify, python } = o.peer;
      contenders.push({ name: `report/mlir-air ${s.dtype}`, runs: o.runs, run: () => spawnTimed(python.command, [PEER, verify, s.dtype, out, ...s.pairs.flatMap((p) => [p.npu, p.ref])]).seconds });
    }
  }
  const figures = (t: Record<string, number[]>) => Object.fromEntries(sets.map((s) => {
    const peer = t[`report/mlir-air ${s.dtype}`];
    return [s.dtype, peer?.length ? median(peer) / median(t[`report/report ${s.dtype}`]) : null];
  })) as Record<BenchDType, number | null>;
  const floor = (t: Record<string, number[]>, dtype: BenchDType) => median(t[`report/read ${dtype}`]) + median(t['report/node -e 0']);
  const overFloor = (t: Record<string, number[]>) => Object.fromEntries(sets.map((s) => [s.dtype, median(t[`report/report ${s.dtype}`]) / floor(t, s.dtype)])) as Record<BenchDType, number>;
  const summary = (t: Record<string, number[]>, loads: number[]) => {
    const f = figures(t);
    const fl = overFloor(t);
    const lines = [`report: npu-block-gate report on a ${LAYERS}-layer run dir (${ROWS} x ${COLS}; block 0 + ${LAYERS} layers), process start to exit, median (min) of ${t['report/node -e 0'].length} interleaved runs`];
    lines.push(`  node -e 0           ${medMin(t['report/node -e 0'])}`);
    for (const [i, s] of sets.entries()) {
      const bytes = (s.files.length + 2) * (128 + ROWS * COLS * (s.dtype === 'f32' ? 4 : 2));
      const read = t[`report/read ${s.dtype}`];
      lines.push(`  ${s.dtype}: read ${medMin(read)} (${(bytes / median(read) / 1e9).toFixed(2)} GB/s: the run dir's 17 pairs by ${bars[i].what})`);
      lines.push(`    report            ${medMin(t[`report/report ${s.dtype}`])}`);
      lines.push('skip' in o.peer ? `    mlir-air          skipped: ${o.peer.skip}` : `    mlir-air          ${medMin(t[`report/mlir-air ${s.dtype}`])}   (python + numpy + comparators.compare_pair x ${LAYERS} + report.dump_json/dump_markdown)`);
      lines.push(`    report is ${f[s.dtype] === null ? 'n/a' : `${f[s.dtype]!.toFixed(2)}x`} faster than the peer's path end to end; report takes ${fl[s.dtype].toFixed(2)}x its floor (read + node -e 0 = ${floor(t, s.dtype).toFixed(3)} s) ` +
        `[read ${(bytes / median(read) / 1e9).toFixed(2)} GB/s; load average ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)} over the runs]`);
    }
    return lines;
  };
  return { contenders, summary, figures, overFloor, cleanup: () => { for (const b of bars) b.close(); rmSync(out, { recursive: true, force: true }); } };
}

/** The peer setting: the tree's verify/ and the Python the check would use, or why it is skipped. */
export function peerSetting(args: string[]): { peer: ReportOptions['peer']; line: string } {
  const tree = airTree(args);
  const verify = verifyDir(tree.dir);
  if (!existsSync(join(verify, 'report.py'))) {
    const skip = `no mlir-air verify/report.py at ${verify} (from ${tree.from}; pass --air DIR or set NPU_BLOCK_GATE_MLIR_AIR)`;
    return { peer: { skip }, line: `bench: ${skip}` };
  }
  try {
    const python = pythonEnv(args);
    return { peer: { verify, python }, line: `bench: peer ${verify} (from ${tree.from}); ${python.line}` };
  } catch (e) {
    return { peer: { skip: (e as Error).message }, line: `bench: ${(e as Error).message}: the peer is skipped` };
  }
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const runs = Number(option(args, 'runs', '9'));
  const base = option(args, 'dir', join(tmpdir(), `npu-block-gate-bench-${LAYERS}x${ROWS}x${COLS}`));
  console.log(`bench/report: ${machineLine()}`);
  const { peer, line } = peerSetting(args);
  console.log(line);
  const b = reportBench({ base, runs, peer });
  try {
    const { times, loads } = await interleave(b.contenders);
    for (const l of b.summary(times, loads)) console.log(l);
    const why = args.includes('--no-cold') ? 'skipped: --no-cold' : dropCaches();
    if (why) console.log(`  cold: NOT MEASURED (${why})`);
    else {
      for (const dtype of ['f32', 'bf16'] as BenchDType[]) {
        const s = runDir(base, dtype);
        const cold = (name: string, fn: () => unknown): Contender => ({ name, runs, run: () => { dropCaches(); return timed(fn); } });
        const c = await interleave([
          cold('read', () => readAll(s.files)),
          cold('report', () => spawnTimed(process.execPath, [CLI, 'report', '--run-dir', s.dir, '--no-docs', '--json'], { ok: [0, 1] })),
        ]);
        console.log(`  cold ${dtype}: read ${medMin(c.times.read)}, report ${medMin(c.times.report)} = ${(median(c.times.report) / median(c.times.read)).toFixed(2)}x the cold read time`);
      }
    }
    console.log(`bench/report: load average at the end ${load()}`);
  } finally {
    b.cleanup();
  }
}
