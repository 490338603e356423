// Peak memory while judging a 16-layer run dir (not a test: it measures and prints).
//   npx tsx bench/memory.ts [--layers 16 --rows 2048 --cols 2048 --dir DIR]
// For each engine (native, js) and dtype, a fresh child process imports the pipeline, warms up
// on a tiny pair (the addon loaded, the code compiled), notes its RSS, judges every layer one
// after the other, and reports the kernel's RSS high-water mark (getrusage maxrss). The
// figure that matters is the peak above the warm baseline, against the size of one layer's
// pair: streaming in row blocks must keep it under 1.5x.
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from './files.ts';

const args = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const LAYERS = Number(opt('layers', '16'));
const ROWS = Number(opt('rows', '2048'));
const COLS = Number(opt('cols', '2048'));
const DIR = opt('dir', join(tmpdir(), `npu-block-gate-bench-${LAYERS}x${ROWS}x${COLS}`));
const MiB = 1 << 20;

if (args[0] === '--child') {
  const [, engine, dtype, ...files] = args;
  const { compare, selectEngine } = await import('../src/metrics/index.ts');
  const { openTensor } = await import('../src/tensor/index.ts');
  const { memTensor } = await import('../test/helpers/mem-tensor.ts');
  const k = selectEngine({ NPU_BLOCK_GATE_ENGINE: engine });
  await compare(memTensor([[1, 2, 3, 4]]), memTensor([[1, 2, 3, 5]]), { threshold: 0.99 }, k);
  globalThis.gc?.();
  const before = process.memoryUsage.rss();
  for (let i = 0; i < files.length; i += 2) {
    const a = openTensor(files[i], { u2IsBf16: true });
    const b = openTensor(files[i + 1], { u2IsBf16: true });
    try {
      await compare(a, b, { threshold: 0.99 }, k);
    } finally {
      a.close();
      b.close();
    }
  }
  const peak = process.resourceUsage().maxRSS * 1024;
  console.log(JSON.stringify({ engine: k.name, dtype, before, peak }));
} else {
  const self = fileURLToPath(import.meta.url);
  console.log(`memory: ${LAYERS} layers x ${ROWS} x ${COLS}; peak RSS of a fresh process judging them all, one after the other`);
  for (const dtype of ['f32', 'bf16'] as const) {
    const pairs = generate(DIR, dtype, LAYERS, ROWS, COLS);
    const pairBytes = 2 * ROWS * COLS * (dtype === 'f32' ? 4 : 2);
    for (const engine of ['native', 'js']) {
      const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', self, '--child', engine, dtype, ...pairs.flatMap((p) => [p.npu, p.ref])], {
        encoding: 'utf8',
      });
      if (r.status !== 0) {
        console.log(`  ${dtype} ${engine}: failed: ${r.stderr.trim().split('\n').pop()}`);
        continue;
      }
      const m = JSON.parse(r.stdout.trim().split('\n').pop()!);
      const over = m.peak - m.before;
      console.log(
        `  ${dtype.padEnd(4)} ${m.engine.padEnd(6)} peak RSS ${(m.peak / MiB).toFixed(1)} MiB, warm baseline ${(m.before / MiB).toFixed(1)} MiB, ` +
          `peak over baseline ${(over / MiB).toFixed(1)} MiB = ${(over / pairBytes).toFixed(2)}x one layer's pair (${(pairBytes / MiB).toFixed(0)} MiB)`,
      );
    }
  }
}
