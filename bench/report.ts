// npx tsx bench/report.ts [--runs 5 --dir DIR]
//
// The issue-3 target as the user meets it: `npu-block-gate report` on a 16-layer run dir
// (block 0 plus layers/ for every layer, 2048 x 2048, f32 and bf16 stored <u2) should take
// under 2x the time it takes to read the run dir's files. Times the real command
// (`node dist/cli.js report --run-dir D --no-docs --json`, process start included) against
// reading the same files once (readSync into one buffer), median of --runs, with a warm page
// cache and, when /proc/sys/vm/drop_caches is writable, a cold one. No assertions.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, linkSync, mkdirSync, openSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropCaches, generate, type BenchDType } from './files.ts';

const args = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const RUNS = Number(opt('runs', '5'));
const LAYERS = 16;
const ROWS = 2048;
const COLS = 2048;
const DIR = opt('dir', join(tmpdir(), `npu-block-gate-bench-${LAYERS}x${ROWS}x${COLS}`));
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A run dir whose tensors are hard links to the bench files (no copy; same bytes on disk). */
function runDir(dtype: BenchDType): { dir: string; files: string[] } {
  const pairs = generate(DIR, dtype, LAYERS, ROWS, COLS);
  const dir = join(DIR, `rundir-${dtype}`);
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
  return { dir, files: pairs.flatMap((p) => [p.npu, p.ref]) };
}

function readAll(files: string[]): number {
  const buf = Buffer.allocUnsafe(1 << 22);
  const t0 = performance.now();
  for (const f of files) {
    const fd = openSync(f, 'r');
    while (readSync(fd, buf, 0, buf.length, null) > 0);
    closeSync(fd);
  }
  return (performance.now() - t0) / 1000;
}

function report(dir: string): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [CLI, 'report', '--run-dir', dir, '--no-docs', '--json'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const s = (performance.now() - t0) / 1000;
  if (r.status !== 0 && r.status !== 1) throw new Error(`report failed (exit ${r.status}): ${r.stderr.trim().split('\n').pop()}`);
  return s;
}

if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
console.log(`bench/report: npu-block-gate report on a ${LAYERS}-layer run dir (${ROWS} x ${COLS}), ${RUNS} runs, median; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
for (const dtype of ['f32', 'bf16'] as BenchDType[]) {
  const { dir, files } = runDir(dtype);
  const bytes = files.reduce((n, f) => n + statSync(f).size, 0);
  readAll(files); // warm the page cache
  const warmRead = median(Array.from({ length: RUNS }, () => readAll(files)));
  const warmReport = median(Array.from({ length: RUNS }, () => report(dir)));
  console.log(`${dtype}: ${(bytes / 1e9).toFixed(3)} GB in ${files.length} files`);
  console.log(`  warm: read ${warmRead.toFixed(3)} s, report ${warmReport.toFixed(3)} s = ${(warmReport / warmRead).toFixed(2)}x the read time`);
  const why = dropCaches();
  if (why) {
    console.log(`  cold: NOT MEASURED (${why})`);
  } else {
    const coldRead = median(Array.from({ length: RUNS }, () => (dropCaches(), readAll(files))));
    const coldReport = median(Array.from({ length: RUNS }, () => (dropCaches(), report(dir))));
    console.log(`  cold: read ${coldRead.toFixed(3)} s, report ${coldReport.toFixed(3)} s = ${(coldReport / coldRead).toFixed(2)}x the read time`);
  }
}
