// npx tsx bench/affected.ts [--runs 3] [--air DIR] [--python P]
//
// `npu-block-gate affected` reads every model dir's static plan. On the real mlir-air tree (--air,
// else $NPU_BLOCK_GATE_MLIR_AIR, else ../shared/mlir-air; plans only read it), the plans of all
// its model dirs: one `probe plan --json` process per model (how it started), against one
// `probe plans` process for the whole tree (what affected runs), wall clock, median of --runs,
// and the ratio. Then `affected` itself through the CLI (plans + the closure, Node's start-up
// included). No assertions: figures and a ratio measured in the same run.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findNumpyPython } from '../test/helpers/python.ts';
import { realTreeRoot } from '../test/helpers/mlirair.ts';

const args = process.argv.slice(2);
const opt = (name: string, def: string | null) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const RUNS = Number(opt('runs', '3'));
const air = opt('air', realTreeRoot());
if (!air || !existsSync(join(air, 'programming_examples/llms'))) throw new Error('the mlir-air tree is not found: pass --air DIR');
const python = opt('python', findNumpyPython() ?? 'python3')!;
const PROBE = fileURLToPath(new URL('../scripts/probe', import.meta.url));
const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const llms = join(air, 'programming_examples/llms');
const models = readdirSync(llms).filter((m) => existsSync(join(llms, m, 'verify_adapter.py'))).sort();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const timed = (cmd: string, argv: string[], okCodes = [0]) => {
  const t = process.hrtime.bigint();
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 256 << 20, env: { ...process.env, HF_HUB_OFFLINE: '1' } });
  if (r.status === null || !okCodes.includes(r.status)) throw new Error(`${cmd} ${argv.slice(0, 3).join(' ')} exited ${r.status}: ${r.stderr}`);
  return Number(process.hrtime.bigint() - t) / 1e9;
};

console.log(`load average at start: ${loadavg().map((x) => x.toFixed(2)).join(' ')}; python ${python}; ${models.length} model dirs of ${air}; ${RUNS} runs`);
const each: number[] = [];
const batch: number[] = [];
const cli: number[] = [];
for (let i = 0; i < RUNS; i++) {
  // A refused model (q4nx, int4, smolvla) prints its plan and exits 2.
  each.push(models.reduce((sum, m) => sum + timed(python, [PROBE, 'plan', '--model-dir', join(llms, m), '--json'], [0, 2]), 0));
  batch.push(timed(python, [PROBE, 'plans', ...models.flatMap((m) => ['--model-dir', join(llms, m)])]));
  cli.push(timed(process.execPath, ['--import', 'tsx', CLI, 'affected', '--tree', air, '--changed', 'programming_examples/llms/llama32_1b/llama32_1b_prefill.py', '--json', '--python', python]));
}
const f = (x: number) => `${x.toFixed(2)} s`;
console.log(`one process per model (plan --json x ${models.length})  ${f(median(each))}`);
console.log(`one process for the tree (plans)             ${f(median(batch))}`);
console.log(`ratio per-model / tree                       ${(median(each) / median(batch)).toFixed(2)}x`);
console.log(`affected through the CLI (tsx, plans, closure) ${f(median(cli))}`);
console.log(`load average at end: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
