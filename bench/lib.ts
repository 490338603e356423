// What every bench shares: options, statistics, the machine's state beside each figure, the
// Python the check would use, and the interleaved runner. Measurements only: nothing asserts.
import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { closeSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
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
  /** What to run: the real interpreter (`sys.executable`) of the Python the check would pick
   * (--python, $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3), never a pyenv shim in front of
   * it (a shim adds its own start-up, 10-14% of the peer's time): the one the header names. */
  command: string;
  /** What was asked for (a shim's name on PATH, say), for the header. */
  asked: string;
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
  const r = spawnSync(p.executable, ['-c', 'try:\n import ml_dtypes; print(ml_dtypes.__version__)\nexcept ImportError:\n print("")'], { encoding: 'utf8' });
  const mlDtypes = r.stdout.trim() || null;
  const openblasCoretype = process.env.OPENBLAS_CORETYPE ?? 'unset';
  const why = p.source === 'option' ? '--python' : p.source === 'env' ? '$NPU_BLOCK_GATE_PYTHON' : p.command;
  return {
    command: p.executable, asked: p.command, executable: p.executable, version: p.version, numpy: p.numpy, mlDtypes, openblasCoretype,
    line: `python ${p.executable} (run as such; from ${why}${p.command !== p.executable ? `, which names ${p.command}` : ''}): Python ${p.version}, numpy ${p.numpy}, ml_dtypes ${mlDtypes ?? 'NOT INSTALLED'}; OPENBLAS_CORETYPE ${openblasCoretype}`,
  };
}

export function machineLine(): string {
  return `${availableParallelism()} cores; node ${process.version}; load average ${load()}`;
}

/** The read bar's buffer: read(2) of 1 MiB at a time (the fastest of 128 KiB-8 MiB here, within the noise of 512 KiB-2 MiB). */
export const READ_BAR_BUFFER = 1 << 20;

/**
 * The compare benches' bar: the machine's one-thread read of the same files at the same
 * page-cache state, as C does it (bench/read.c: open, read(2) into one reused 1 MiB buffer to
 * EOF, close; timed inside the program, so no process start counts), in a server started once
 * so its runs interleave with the other contenders'. Without a C compiler, Node's readSync into
 * the same buffer size, and `what` says so (it reads 1.2-1.9x slower than C's read here).
 */
export class ReadBar {
  readonly what: string;
  private child: ChildProcessByStdio<Writable, Readable, null> | null = null;
  private lines: AsyncIterableIterator<string> | null = null;
  private dir: string | null = null;
  constructor(readonly files: string[]) {
    const cc = ['cc', 'gcc', 'clang'].find((c) => spawnSync(c, ['--version']).status === 0);
    if (cc) {
      this.dir = mkdtempSync(join(tmpdir(), 'nbg-read-'));
      const exe = join(this.dir, 'read');
      const b = spawnSync(cc, ['-O2', '-o', exe, fileURLToPath(new URL('./read.c', import.meta.url))], { encoding: 'utf8' });
      if (b.status === 0) {
        this.child = spawn(exe, [String(READ_BAR_BUFFER), ...files], { stdio: ['pipe', 'pipe', 'inherit'] });
        this.lines = createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
        this.what = `C read(2), ${READ_BAR_BUFFER >> 10} KiB buffer, one thread (bench/read.c, ${cc} -O2)`;
        return;
      }
      this.what = `Node readSync, ${READ_BAR_BUFFER >> 10} KiB buffer, one thread (bench/read.c did not build with ${cc}: ${b.stderr.trim().split('\n').pop()})`;
    } else {
      this.what = `Node readSync, ${READ_BAR_BUFFER >> 10} KiB buffer, one thread (no C compiler for bench/read.c)`;
    }
  }
  private async line(): Promise<string> {
    const r = await this.lines!.next();
    if (r.done) throw new Error('bench: the read bar (bench/read.c) stopped');
    return r.value;
  }
  /** One pass over every file: seconds. */
  async run(): Promise<number> {
    if (!this.child) return timed(() => readAll(this.files));
    if (!this.started) {
      if ((await this.line()) !== 'ready') throw new Error('bench: the read bar did not start');
      this.started = true;
    }
    this.child.stdin.write('r\n');
    return Number((await this.line()).split(' ')[0]);
  }
  private started = false;
  close(): void {
    this.child?.stdin.end();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}

const readBuf = Buffer.allocUnsafe(READ_BAR_BUFFER);
/** Read every file once with readSync into one reused buffer: the bytes read (warms the page cache). */
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
