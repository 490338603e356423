// npx tsx bench/overhead.ts [--runs 7] [--python P] [--model tiny_llama]
//
// The tool's own time on a check: `node dist/cli.js check` on a copy of examples/air-mini
// (no docs, no cache, so every run does the same work), wall clock from process start to exit,
// minus the probe's own time (probe.json timings.total: from the probe's start, after its numpy
// import, to its last write). What is left is Node's start-up, the Python start-up and numpy
// import, the plan hand-off and the judging. Printed beside the floors measured in the same run:
// `node -e 0` and `python -c "import numpy"`. The Python is the one the CLI would pick, named by
// its real executable (a pyenv shim adds its own ~0.2 s; pass --python shim-name to see it).
// No assertions: a ratio and figures, median of --runs.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findNumpyPython } from '../test/helpers/python.ts';

const args = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const RUNS = Number(opt('runs', '7'));
const MODEL = opt('model', 'tiny_llama');
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const AIR_MINI = fileURLToPath(new URL('../examples/air-mini', import.meta.url));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const seconds = (cmd: string, argv: string[]) => {
  const t = process.hrtime.bigint();
  const r = spawnSync(cmd, argv, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  return Number(process.hrtime.bigint() - t) / 1e9;
};

const found = findNumpyPython();
if (!found) throw new Error('no Python with numpy');
const python = opt('python', spawnSync(found, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim());
const tree = mkdtempSync(join(tmpdir(), 'nbg-overhead-'));
cpSync(AIR_MINI, tree, { recursive: true, filter: (s) => !/(__pycache__|build_peano)/.test(s) });
const modelDir = join(tree, 'programming_examples/llms', MODEL);

console.log(`load average at start: ${loadavg().map((x) => x.toFixed(2)).join(' ')}; python ${python}; ${RUNS} runs`);
const wall: number[] = [];
const probe: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const out = join(tree, `run-${i}`);
  wall.push(seconds(process.execPath, [CLI, 'check', '--model-dir', modelDir, '--out', out, '--no-docs', '--no-cache', '--python', python]));
  probe.push(JSON.parse(readFileSync(join(out, 'probe.json'), 'utf8')).timings.total);
}
const overhead = wall.map((w, i) => w - probe[i]);
const node0 = median(Array.from({ length: RUNS }, () => seconds(process.execPath, ['-e', '0'])));
const py0 = median(Array.from({ length: RUNS }, () => seconds(python, ['-c', 'import numpy'])));
const f = (x: number) => `${x.toFixed(3)} s`;
console.log(`check wall          ${f(median(wall))}`);
console.log(`probe's own time    ${f(median(probe))}   (probe.json timings.total)`);
console.log(`tool overhead       ${f(median(overhead))}   (wall - probe, median of per-run differences)`);
console.log(`floors              node -e 0 ${f(node0)}, python -c "import numpy" ${f(py0)}; sum ${f(node0 + py0)}`);
console.log(`overhead above the floors: ${f(median(overhead) - node0 - py0)}`);
console.log(`load average at end: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
rmSync(tree, { recursive: true, force: true });
