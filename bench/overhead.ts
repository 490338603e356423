// npx tsx bench/overhead.ts [--runs 7] [--python P] [--model tiny_llama]
//
// The tool's own time on a check: `node dist/cli.js check` on a copy of examples/air-mini
// (no docs, no cache, so every run does the same work), wall clock from process start to exit,
// minus the probe's own time (probe.json timings.total: from the probe's start, after its numpy
// import, to its last write). What is left is Node's start-up, the Python start-up and numpy
// import, the plan hand-off and the judging. Printed beside the floor measured in the same run,
// interleaved: `node -e 0` + `python -c "import numpy"` + one `bwrap --ro-bind / / --unshare-all
// true` (issue 30: the overhead's bar is 2x that floor). The Python is the one the CLI would
// pick (or --python P), named by its real executable (a pyenv shim adds its own ~0.2 s; pass
// --python shim-name to see it). No assertions: figures, median (min) of --runs.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findPython } from '../src/probe/python.ts';
import { interleave, isMain, load, machineLine, median, medMin, option, spawnTimed, type Contender } from './lib.ts';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const AIR_MINI = fileURLToPath(new URL('../examples/air-mini', import.meta.url));

/** One bubblewrap start, the floor's third part: the root bound read-only, `true` run in it. */
export const BWRAP_TRUE = ['--ro-bind', '/', '/', '--unshare-all', 'true'];

export interface OverheadBench {
  contenders: Contender[];
  summary(times: Record<string, number[]>): string[];
  /** The median overhead over its floor (node -e 0 + python -c "import numpy" + one bwrap true, medians of the same run). */
  overFloor(times: Record<string, number[]>): number;
  cleanup(): void;
}

export function overheadBench(runs: number, args: string[]): OverheadBench {
  const found = findPython(option(args, 'python', null));
  // The real executable: a pyenv shim in front of it would add its own start-up to every floor.
  const python = spawnSync(found.command, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim() || found.command;
  const model = option(args, 'model', 'tiny_llama');
  const bwrap = ['/usr/bin/bwrap', '/bin/bwrap'].find((p) => spawnSync(p, BWRAP_TRUE).status === 0) ?? null;
  const tree = mkdtempSync(join(tmpdir(), 'nbg-overhead-'));
  cpSync(AIR_MINI, tree, { recursive: true, filter: (s) => !/(__pycache__|build_peano)/.test(s) });
  const modelDir = join(tree, 'programming_examples/llms', model);
  let n = 0;
  const wall: number[] = [];
  const probe: number[] = [];
  const contenders: Contender[] = [
    {
      name: 'check/overhead', runs, run: () => {
        const out = join(tree, `run-${n++}`);
        const w = spawnTimed(process.execPath, [CLI, 'check', '--model-dir', modelDir, '--out', out, '--no-docs', '--no-cache', '--python', python]).seconds;
        const p = JSON.parse(readFileSync(join(out, 'probe.json'), 'utf8')).timings.total as number;
        wall.push(w);
        probe.push(p);
        return w - p;
      },
    },
    { name: 'check/node -e 0', runs, run: () => spawnTimed(process.execPath, ['-e', '0']).seconds },
    { name: 'check/python numpy', runs, run: () => spawnTimed(python, ['-c', 'import numpy']).seconds },
    ...(bwrap ? [{ name: 'check/bwrap true', runs, run: () => spawnTimed(bwrap, BWRAP_TRUE).seconds }] : []),
  ];
  const floor = (t: Record<string, number[]>) => median(t['check/node -e 0']) + median(t['check/python numpy']) + (bwrap ? median(t['check/bwrap true']) : 0);
  const overFloor = (t: Record<string, number[]>) => median(t['check/overhead']) / floor(t);
  const summary = (t: Record<string, number[]>) => {
    const node0 = median(t['check/node -e 0']);
    const py0 = median(t['check/python numpy']);
    const over = median(t['check/overhead']);
    return [
      `check: dist/cli.js check on examples/air-mini (${model}), python ${python}, median (min) of ${wall.length} interleaved runs`,
      `  check wall          ${medMin(wall)}`,
      `  probe's own time    ${medMin(probe)}   (probe.json timings.total)`,
      `  tool overhead       ${medMin(t['check/overhead'])}   (wall - probe, per run)`,
      `  floors              node -e 0 ${medMin(t['check/node -e 0'])}, python -c "import numpy" ${medMin(t['check/python numpy'])}, ` +
        (bwrap ? `${bwrap} ${BWRAP_TRUE.join(' ')} ${medMin(t['check/bwrap true'])}` : 'bwrap: NOT INSTALLED (left out of the floor)'),
      `  overhead ${over.toFixed(3)} s = ${overFloor(t).toFixed(2)}x its floor (${floor(t).toFixed(3)} s: the sum of the floors' medians); ${(over - node0 - py0).toFixed(3)} s above node + python`,
    ];
  };
  return { contenders, summary, overFloor, cleanup: () => rmSync(tree, { recursive: true, force: true }) };
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  console.log(`bench/overhead: ${machineLine()}`);
  const b = overheadBench(Number(option(args, 'runs', '7')), args);
  try {
    const { times } = await interleave(b.contenders);
    for (const l of b.summary(times)) console.log(l);
    console.log(`bench/overhead: load average at the end ${load()}`);
  } finally {
    b.cleanup();
  }
}
