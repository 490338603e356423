// npx tsx bench/hook.ts [--runs 20]
//
// The runner's job-started hook as every job pays it: `agent hooks install` from the built
// dist/ (so the hooks run their own copy of dist/hook.js and the chunks it loads), then that
// copy's job-started command, as the shim runs it, against a healthy fake NPU host (the agent
// tests' fake root, test/fixtures/agent/fake.ts: sysfs of an NPU bound to amdxdna, a clean kernel
// log; its commands as stub scripts on PATH: xrt-smi, journalctl, dmesg, prlimit), with a real
// Python named by --python (the one the check would pick, or this bench's --python P, by its
// sys.executable: issue 30 times the hook with a real numpy check). Process start to exit, median
// and minimum of --runs, interleaved with `node -e 0` in the same environment (Node's own start-up,
// the floor: a variable such as NODE_EXTRA_CA_CERTS in this shell's environment makes every Node
// start read a certificate bundle, and the hook's environment has none of this shell's) and with
// the same command through dist/cli.js (the whole CLI) for comparison. Exit 0 and "NPU usable"
// are checked on every run. No assertions on time: figures.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fakeRunner, stubProgs } from '../test/fixtures/agent/fake.ts';
import { interleave, isMain, load, machineLine, median, medMin, option, pythonEnv, spawnTimed, type Contender } from './lib.ts';

const DIST = fileURLToPath(new URL('../dist/', import.meta.url));

export interface HookBench {
  /** The real interpreter the hooks were installed with (--python): its sys.executable. */
  python: string;
  contenders: Contender[];
  summary(times: Record<string, number[]>): string[];
  cleanup(): void;
}

/** The fake host, the hooks installed from dist/, and the contenders. */
export function hookBench(runs: number, args: string[] = []): HookBench {
  // A real Python with numpy (the one the check would pick, or --python P), by its real executable.
  const python = pythonEnv(args).executable;
  const f = fakeRunner();
  const { env } = stubProgs(f);
  const hooks = join(f.base, 'hooks');
  spawnTimed(process.execPath, [join(DIST, 'cli.js'), 'agent', 'hooks', 'install', '--dir', hooks, '--python', python], { env });
  // The shim's own command line (exec node COPY/hook.js agent hook job-started ...), plus the fake root.
  const shim = readFileSync(join(hooks, 'job-started.sh'), 'utf8');
  const exec = /^exec (\S+) (\S+) (agent hook job-started.*)$/m.exec(shim);
  if (!exec) throw new Error(`bench/hook: no exec line in ${join(hooks, 'job-started.sh')}:\n${shim}`);
  const [, node, copy, rest] = exec;
  const argv = [...rest.split(' '), '--root', f.root];
  const healthy = (out: string) => {
    if (!/job-started hook: NPU usable/.test(out)) throw new Error(`bench/hook: the fake host is not healthy:\n${out}`);
  };
  const contenders: Contender[] = [
    { name: 'hook/node -e 0', runs, run: () => spawnTimed(node, ['-e', '0'], { env }).seconds },
    { name: 'hook/job-started', runs, run: () => { const r = spawnTimed(node, [copy, ...argv], { env }); healthy(r.stdout); return r.seconds; } },
    { name: 'hook/via cli.js', runs, run: () => { const r = spawnTimed(node, [join(DIST, 'cli.js'), ...argv], { env }); healthy(r.stdout); return r.seconds; } },
  ];
  const summary = (t: Record<string, number[]>) => [
    `hook: job-started on a healthy fake NPU host, --python ${python} (a real interpreter), process start to exit, median (min) of ${t['hook/job-started'].length} interleaved runs`,
    `  job-started            ${medMin(t['hook/job-started'])}   (the hooks' copy: ${copy})`,
    `  node -e 0              ${medMin(t['hook/node -e 0'])}   (Node's start-up in the hook's environment: the floor)`,
    `  job-started via cli.js ${medMin(t['hook/via cli.js'])}   (the same command through the whole CLI)`,
    `  job-started above node -e 0: ${(median(t['hook/job-started']) - median(t['hook/node -e 0'])).toFixed(3)} s (medians)`,
  ];
  return { python, contenders, summary, cleanup: () => rmSync(f.base, { recursive: true, force: true }) };
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  console.log(`bench/hook: ${machineLine()}`);
  const b = hookBench(Number(option(args, 'runs', '20')), args);
  try {
    const { times } = await interleave(b.contenders);
    for (const l of b.summary(times)) console.log(l);
    console.log(`bench/hook: load average at the end ${load()}`);
  } finally {
    b.cleanup();
  }
}
