// What every bench shares: options, statistics, the machine's state beside each figure, the
// Python the check would use, and the interleaved runner. Measurements only: nothing asserts.
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { findPython } from '../src/probe/python.ts';

export const REPO = fileURLToPath(new URL('..', import.meta.url));

/** `--name value` from argv, else the default. */
export function option(args: string[], name: string, dflt: string): string;
export function option(args: string[], name: string, dflt: null): string | null;
export function option(args: string[], name: string, dflt: string | null): string | null {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
}

/** True when this module is the script node was started with (not imported by another bench). */
export const isMain = (url: string) => !!process.argv[1] && pathToFileURL(resolve(process.argv[1])).href === url;

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
export const minimum = (xs: number[]) => Math.min(...xs);

export const secs = (x: number, d = 3) => `${x.toFixed(d)} s`;
/** "0.123 s (min 0.118)": median and minimum of one contender's runs. */
export const medMin = (xs: number[], d = 3) => `${median(xs).toFixed(d)} s (min ${minimum(xs).toFixed(d)})`;
export const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

/** The mlir-air tree: --air DIR, else $NPU_BLOCK_GATE_MLIR_AIR, else ../shared/mlir-air beside the repo. */
export function airTree(args: string[]): { dir: string; from: string } {
  const flag = option(args, 'air', null);
  if (flag) return { dir: resolve(flag), from: '--air' };
  if (process.env.NPU_BLOCK_GATE_MLIR_AIR) return { dir: resolve(process.env.NPU_BLOCK_GATE_MLIR_AIR), from: '$NPU_BLOCK_GATE_MLIR_AIR' };
  return { dir: resolve(REPO, '..', 'shared', 'mlir-air'), from: 'default ../shared/mlir-air' };
}
export const verifyDir = (air: string) => join(air, 'programming_examples', 'llms', 'verify');

export interface PythonEnv {
  /** What to run (as the check would: --python, $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3). */
  command: string;
  executable: string;
  version: string;
  numpy: string;
  mlDtypes: string | null;
  /** OPENBLAS_CORETYPE as this process passes it on ("unset" when it is not set). */
  openblasCoretype: string;
  /** One line for the bench's header. */
  line: string;
}

/** The Python the check would pick (or --python P), with the versions the figures depend on. */
export function pythonEnv(args: string[]): PythonEnv {
  const p = findPython(option(args, 'python', null));
  const r = spawnSync(p.command, ['-c', 'try:\n import ml_dtypes; print(ml_dtypes.__version__)\nexcept ImportError:\n print("")'], { encoding: 'utf8' });
  const mlDtypes = r.stdout.trim() || null;
  const openblasCoretype = process.env.OPENBLAS_CORETYPE ?? 'unset';
  const why = p.source === 'option' ? '--python' : p.source === 'env' ? '$NPU_BLOCK_GATE_PYTHON' : p.command;
  return {
    command: p.command, executable: p.executable, version: p.version, numpy: p.numpy, mlDtypes, openblasCoretype,
    line: `python ${p.executable} (from ${why}): Python ${p.version}, numpy ${p.numpy}, ml_dtypes ${mlDtypes ?? 'NOT INSTALLED'}; OPENBLAS_CORETYPE ${openblasCoretype}`,
  };
}

export function machineLine(): string {
  return `${availableParallelism()} cores; node ${process.version}; load average ${load()}`;
}

const readBuf = Buffer.allocUnsafe(8 << 20);
/** Read every file once with readSync into one reused buffer: the bytes read. */
export function readAll(files: string[]): number {
  let total = 0;
  for (const f of files) {
    const fd = openSync(f, 'r');
    try {
      for (;;) {
        const n = readSync(fd, readBuf, 0, readBuf.length, null);
        if (n === 0) break;
        total += n;
      }
    } finally {
      closeSync(fd);
    }
  }
  return total;
}

export async function timed(fn: () => unknown): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

/** A spawned command's wall time in seconds; throws with its stderr when the exit code is not one of `ok`. */
export function spawnTimed(cmd: string, argv: string[], o: { env?: NodeJS.ProcessEnv; ok?: number[]; cwd?: string } = {}): { seconds: number; stdout: string } {
  const t0 = performance.now();
  const r = spawnSync(cmd, argv, { encoding: 'utf8', env: o.env ?? process.env, cwd: o.cwd, maxBuffer: 1 << 26 });
  const seconds = (performance.now() - t0) / 1000;
  if (r.status === null || !(o.ok ?? [0]).includes(r.status)) {
    throw new Error(`${cmd} ${argv.join(' ')} exited ${r.status ?? r.signal}: ${(r.stderr || r.error?.message || '').trim().split('\n').slice(-3).join(' | ')}`);
  }
  return { seconds, stdout: r.stdout };
}

/** One thing timed per run; `value` may be a derived time (e.g. wall minus the probe's own time). */
export interface Contender {
  name: string;
  /** How many runs it wants (spread evenly over the rounds). */
  runs: number;
  run(): Promise<number> | number;
}

/**
 * Runs every contender `runs` times, interleaved: in each round each contender due runs once, so a
 * change in the machine's load hits all of them alike. Returns the times by name, and the load
 * average seen at each round's start.
 */
export async function interleave(contenders: Contender[], onRound?: (round: number, rounds: number) => void): Promise<{ times: Record<string, number[]>; loads: number[] }> {
  const rounds = Math.max(...contenders.map((c) => c.runs));
  const times: Record<string, number[]> = Object.fromEntries(contenders.map((c) => [c.name, []]));
  const loads: number[] = [];
  for (let r = 0; r < rounds; r++) {
    onRound?.(r, rounds);
    loads.push(loadavg()[0]);
    for (const c of contenders) {
      // Contender c runs in the rounds where floor(r * c.runs / rounds) steps up: evenly spread.
      if (Math.floor(((r + 1) * c.runs) / rounds) > Math.floor((r * c.runs) / rounds)) times[c.name].push(await c.run());
    }
  }
  return { times, loads };
}
