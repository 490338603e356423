// npx tsx bench/lens.ts [--runs 9] [--model tiny_llama] [--cli dist/cli.js] [--baseline OTHER_CLI] [--real]
//
// What the lens costs a `check` (issue 10: less than 20% more time on air-mini). The same CLI
// on a scratch copy of examples/air-mini (no docs, no cache, so every run does the same work),
// alternately
//   - without the lens: `check --no-boundaries` (no buffers copied or read back, no HF hooks, no
//     boundaries/ in the probe; nothing for the judge to compare), and
//   - with it: `check` as it runs by default;
// wall clock from process start to exit, median of --runs each, and the ratio. Interleaved, so
// drift in the machine's load hits both alike. `--baseline CLI` also times another build's plain
// `check` (e.g. a dist/cli.js built before the lens) on the same tree. `--real`: the same pair on
// the real mlir-air tree's llama32_1b on the emulated NPU (needs the tests' torch Python; the lens
// there judges 16 boundary pairs), informational. No assertions: figures and ratios.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findNumpyPython } from '../test/helpers/python.ts';

const args = process.argv.slice(2);
const opt = (name: string, def: string | null) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const RUNS = Number(opt('runs', '9'));
const MODEL = opt('model', 'tiny_llama')!;
const CLI = resolve(opt('cli', fileURLToPath(new URL('../dist/cli.js', import.meta.url)))!);
const BASELINE = opt('baseline', null);
const AIR_MINI = fileURLToPath(new URL('../examples/air-mini', import.meta.url));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f = (x: number) => `${x.toFixed(3)} s`;

function timed(cli: string, argv: string[], env: NodeJS.ProcessEnv = process.env): number {
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [cli, ...argv], { encoding: 'utf8', env });
  if (r.status !== 0 && r.status !== 1) throw new Error(`check exited ${r.status}: ${r.stderr.slice(-2000)}`);
  return Number(process.hrtime.bigint() - t) / 1e9;
}

function pair(label: string, modelDir: string, extra: string[], env: NodeJS.ProcessEnv = process.env, runs = RUNS): void {
  const off: number[] = [];
  const on: number[] = [];
  const base: number[] = [];
  for (let i = 0; i < runs; i++) {
    const out = mkdtempSync(join(tmpdir(), 'nbg-lens-bench-'));
    const run = (cli: string, name: string, more: string[]) => timed(cli, ['check', '--model-dir', modelDir, '--out', join(out, name), '--no-docs', '--no-cache', ...extra, ...more], env);
    off.push(run(CLI, 'off', ['--no-boundaries']));
    on.push(run(CLI, 'on', []));
    if (BASELINE && !extra.includes('--emulate')) base.push(run(resolve(BASELINE), 'base', []));
    rmSync(out, { recursive: true, force: true });
  }
  console.log(`${label}: median of ${runs}`);
  console.log(`  check --no-boundaries (no lens)   ${f(median(off))}`);
  console.log(`  check (with the lens)             ${f(median(on))}`);
  console.log(`  lens cost                          ${((median(on) / median(off) - 1) * 100).toFixed(1)}%  (ratio ${(median(on) / median(off)).toFixed(3)})`);
  if (base.length) console.log(`  baseline ${BASELINE} check  ${f(median(base))}  (with the lens / baseline: ${(median(on) / median(base)).toFixed(3)})`);
}

const python = findNumpyPython();
if (!python) throw new Error('no Python with numpy');
console.log(`load average at start: ${loadavg().map((x) => x.toFixed(2)).join(' ')}; cli ${CLI}; python ${python}`);
const tree = mkdtempSync(join(tmpdir(), 'nbg-lens-bench-tree-'));
cpSync(AIR_MINI, tree, { recursive: true, filter: (s) => !/(__pycache__|build_peano)/.test(s) });
pair(`air-mini ${MODEL}`, join(tree, 'programming_examples/llms', MODEL), ['--python', python]);
rmSync(tree, { recursive: true, force: true });

if (args.includes('--real')) {
  const { missingTwins, twinsTree } = await import('../test/helpers/twins.ts');
  const why = missingTwins()?.why;
  if (why) console.log(`real tree: NOT MEASURED (${why})`);
  else {
    const t = twinsTree(['llama']);
    const env = { ...process.env, ...t.env, NPU_BLOCK_GATE_NPU_LOCK: 'none' };
    pair('real tree llama32_1b, emulated NPU (16 boundary pairs)', t.model('llama32_1b'),
      ['--emulate', '--model', t.hfId('llama32_1b'), '--prompt-style', 'instruct', '--python', t.python], env, Math.max(3, Math.ceil(RUNS / 3)));
    rmSync(t.root, { recursive: true, force: true });
  }
}
console.log(`load average at end: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
