// Finds the Python of the user's mlir-air environment, in this order: the explicit option,
// $NPU_BLOCK_GATE_PYTHON, an active virtualenv ($VIRTUAL_ENV), the environments mlir-air's build
// docs have the user create in or beside the tree (`sandbox`, `airenv`, mlir-aie's `ironenv`), then
// `python3` on PATH and /usr/bin/python3. The first that imports numpy is taken, and the CLI says
// which and why. The tool's own test venv (.venv in its checkout) is never taken for a user's tree.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants as osConstants } from 'node:os';
import { InputError, InfraError } from '../errors.ts';
import { EXIT_GRACE_MS, runBounded } from './bounded.ts';
import { keepAnswer, keptAnswer, mtimeOf } from './answers.ts';

export interface PythonInfo {
  /** What was asked for (a name on PATH or a path). */
  command: string;
  executable: string;
  version: string;
  numpy: string;
  /** Why this one was asked. */
  source: PythonSource;
  /** Where it comes from, in words (the tree env's path and the docs that create it). */
  why?: string;
  /** Something its test saw beside the answer (a process it left holding its output). */
  note?: string;
}

type PythonSource = 'option' | 'env' | 'venv' | 'tree' | 'PATH' | 'fallback';

const PROBE_SNIPPET = 'import sys, numpy; print(sys.executable); print(sys.version.split()[0]); print(numpy.__version__); print(numpy.__file__)';

/** numpyFile: where numpy was imported from (a kept answer stands only while that file is unchanged). note: what the
 * tester saw beside a working Python (a process it started kept its output open). */
export type PythonTest = { ok: true; executable: string; version: string; numpy: string; numpyFile?: string; note?: string } | { ok: false; why: string };
export type PythonTester = (command: string) => PythonTest;
/** A tester that does not block: the agent's doctor runs its other checks while Python imports numpy. */
export type PythonTesterAsync = (command: string) => Promise<PythonTest>;

const TEST_TIMEOUT_MS = 30_000;
/** `python -c` puts its working directory first on sys.path: run from /, so a numpy.py a pull request
 * left in the workspace (a runner's hooks start there) is never imported by this test, unsandboxed. */
const TEST_CWD = '/';
/** A command named by a relative path, resolved here (it is run from TEST_CWD). */
const fromHere = (command: string) => (command.includes('/') ? resolve(command) : command);

/** A signal's number and meaning: "SIGSEGV (signal 11: segmentation fault)". */
export function signalWords(signal: string): string {
  const n = osConstants.signals[signal as keyof typeof osConstants.signals];
  const words: Record<string, string> = { SIGSEGV: 'segmentation fault', SIGABRT: 'aborted', SIGBUS: 'bus error', SIGILL: 'illegal instruction', SIGFPE: 'floating-point exception', SIGKILL: 'killed', SIGTERM: 'terminated' };
  return `${signal}${n ? ` (signal ${n}${words[signal] ? `: ${words[signal]}` : ''})` : ''}`;
}

/** What one run of the probe snippet says: the same words from the blocking and the background tester. */
function testResult(r: { error?: NodeJS.ErrnoException; status: number | null; signal?: string | null; stdout: string; stderr: string; heldOpen?: boolean }): PythonTest {
  if (r.error) {
    // "spawnSync python3 EACCES" and "spawn python3 EACCES" alike: "python3 EACCES".
    const why = r.error.code === 'ENOENT' ? 'not found' : r.error.code === 'ETIMEDOUT' ? `timed out after ${TEST_TIMEOUT_MS / 1000}s (it did not exit)` : r.error.message.replace(/^spawn(Sync)? /, '');
    return { ok: false, why };
  }
  if (r.status === null && r.signal) return { ok: false, why: `crashed: killed by ${signalWords(r.signal)}` };
  const held = r.heldOpen ? `a process it started kept its output open after it exited (stopped after ${EXIT_GRACE_MS / 1000}s)` : null;
  if (r.status !== 0) {
    const last = (r.stderr || '').trim().split('\n').pop() ?? '';
    return { ok: false, why: /No module named ['"]?numpy/.test(last) ? 'cannot import numpy' : last || `exit ${r.status}` };
  }
  const [executable, version, numpy, numpyFile] = r.stdout.trim().split('\n');
  return { ok: true, executable, version, numpy, ...(numpyFile && isAbsolute(numpyFile) ? { numpyFile } : {}), ...(held ? { note: held } : {}) };
}

export const testPython: PythonTester = (command) => {
  const r = spawnSync(fromHere(command), ['-c', PROBE_SNIPPET], { encoding: 'utf8', timeout: TEST_TIMEOUT_MS, cwd: TEST_CWD });
  return testResult({ error: r.error, status: r.status, signal: r.signal, stdout: r.stdout ?? '', stderr: r.stderr ?? '' });
};

/** testPython in the background: the same command, timeout and words. Bounded whatever it leaves
 * running: its answer is taken when it exits (a background child holding its output is given a short
 * grace, then stopped with its whole process group, and said). */
export const testPythonAsync: PythonTesterAsync = async (command) => {
  const r = await runBounded(fromHere(command), ['-c', PROBE_SNIPPET], { cwd: TEST_CWD, timeoutMs: TEST_TIMEOUT_MS });
  const error = r.timedOut ? Object.assign(new Error(`${command} timed out`), { code: 'ETIMEDOUT' }) : r.error ?? undefined;
  return testResult({ error, status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, heldOpen: r.heldOpen });
};

/** The program a tester runs for `command`: as spawn finds it (this process's PATH), absolute; null when not found. */
function programOf(command: string): string | null {
  if (command.includes('/')) return fromHere(command);
  for (const d of (process.env.PATH ?? '').split(delimiter)) {
    if (!isAbsolute(d)) continue;
    const p = join(d, command);
    try { if (statSync(p).isFile()) return p; } catch { /* not here */ }
  }
  return null;
}

/**
 * `test` with its good answers kept in `file` (answers.ts; issue 30: the job-started hook must not
 * start Python on every job): a Python that imported numpy before is taken again without being run
 * while the program it resolves to (real path, size, mtime), numpy's own __init__.py (mtime) and
 * PYTHONPATH / PYTHONHOME are unchanged. A failure is never kept (it is tested again next time), nor
 * an answer without numpy's file (a stub), nor a wrapper script (a pyenv shim: not an ELF program).
 */
export function keptTester(test: PythonTesterAsync, file: string): PythonTesterAsync {
  const stamps = (t: { numpyFile?: string }) => ({
    numpy: t.numpyFile ? mtimeOf(t.numpyFile) : null, PYTHONPATH: process.env.PYTHONPATH ?? null, PYTHONHOME: process.env.PYTHONHOME ?? null,
  });
  return async (command) => {
    const program = programOf(command);
    const kept = program ? keptAnswer<PythonTest & { ok: true }>(file, program, stamps) : null;
    if (kept) return kept;
    const t = await test(command);
    if (program && t.ok && t.numpyFile && mtimeOf(t.numpyFile) !== null) keepAnswer(file, program, t, stamps(t));
    return t;
  };
}

export interface PythonCandidate {
  command: string;
  source: PythonSource;
  /** Where it comes from, in words. */
  why?: string;
  /** Set when the candidate is passed over without being run: why (the tool's own test venv). */
  skip?: string;
}

/**
 * The virtualenvs mlir-air's build docs (docs/buildingRyzenLin.md) have the user create, relative
 * to the tree root and to the dir beside it: `sandbox` (utils/setup_python_packages.sh, the source
 * build), `airenv` (the wheel install), and mlir-aie's `ironenv` (in its clone).
 */
const TREE_ENVS: readonly { dir: string; docs: string }[] = [
  { dir: 'sandbox', docs: "mlir-air's utils/setup_python_packages.sh" },
  { dir: 'airenv', docs: "mlir-air's wheel install (docs/buildingRyzenLin.md)" },
  { dir: 'ironenv', docs: "mlir-aie's setup" },
  { dir: 'mlir-aie/ironenv', docs: "mlir-aie's setup" },
];

interface CandidateContext {
  /** The mlir-air tree root the model dir is in (its envs are looked for in and beside it). */
  airRoot?: string | null;
  modelDir?: string | null;
  exists?: (path: string) => boolean;
  /** This tool's checkout (its .venv is the tool's own test venv). */
  toolRoot?: string | null;
  /**
   * Set when the Python runs outside the sandbox (`plan`): the dirs a pull request controls (the
   * mlir-air tree, the model dir). A Python found in them (a venv in the tree, PATH or $VIRTUAL_ENV
   * leading into it, as named or as its links resolve) is passed over, saying why; one named there
   * by --python or $NPU_BLOCK_GATE_PYTHON is refused (exit 2). `python3` is looked up on PATH
   * without the entries inside them (outsideEnv), by the path found.
   */
  outside?: readonly string[];
}

/** A path and where its links lead, made absolute (the path itself when it does not exist). */
function realOr(p: string): string {
  try { return realpathSync(p); } catch { return resolve(p); }
}

/** The first of `dirs` that holds `path`, as named or as its links resolve, or null. */
export function heldBy(path: string, dirs: readonly string[]): string | null {
  const named = resolve(path);
  const real = realOr(path);
  for (const d of dirs) {
    for (const dd of new Set([resolve(d), realOr(d)])) {
      if (named === dd || named.startsWith(dd + sep) || real === dd || real.startsWith(dd + sep)) return d;
    }
  }
  return null;
}

/** Why a Python is never run outside the sandbox (`plan`): it is the pull request's code. */
const TREE_PYTHON = 'inside the mlir-air tree or the model dir: plan runs outside the probe\'s sandbox and never runs a Python from there (check runs it in the sandbox)';

/**
 * A search path (PATH, PYTHONPATH, LD_LIBRARY_PATH) without its entries inside `dirs` and without
 * relative or empty ones (the working directory, often the tree): what a Python run outside the
 * sandbox gets, so nothing of the tree is run, imported (sitecustomize) or loaded (a .so) by it.
 * PYTHONHOME inside them is dropped (''). Only the variables set in `env` are returned.
 */
export function outsideEnv(env: NodeJS.ProcessEnv, dirs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['PATH', 'PYTHONPATH', 'LD_LIBRARY_PATH']) {
    const v = env[k];
    if (v === undefined) continue;
    out[k] = v.split(delimiter).filter((e) => isAbsolute(e) && !heldBy(e, dirs)).join(delimiter);
  }
  if (env.PYTHONHOME !== undefined && (!isAbsolute(env.PYTHONHOME) || heldBy(env.PYTHONHOME, dirs))) out.PYTHONHOME = '';
  return out;
}

/** This tool's own root (the dir of its package.json), or null. */
export function toolRoot(): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      if ((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }).name === 'npu-block-gate') return dir;
    } catch { /* not here */ }
    dir = dirname(dir);
  }
  return null;
}

const inside = (path: string, dir: string) => resolve(path).startsWith(resolve(dir) + sep);

/** The first `name` on PATH, as PATH names it (a venv's python3 is a link out of the venv: not resolved). */
function onPath(name: string, env: NodeJS.ProcessEnv, exists: (p: string) => boolean): string | null {
  for (const d of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const p = join(d, name);
    if (exists(p)) return p;
  }
  return null;
}

/** The Pythons to try, in order: one asked for by name (option, then env) is the only one. */
export function pythonCandidates(explicit: string | null, env: NodeJS.ProcessEnv = process.env, ctx: CandidateContext = {}): PythonCandidate[] {
  const exists = ctx.exists ?? existsSync;
  if (ctx.outside) return outsideCandidates(explicit, env, ctx, ctx.outside, exists);
  if (explicit) return [{ command: explicit, source: 'option', why: '--python' }];
  if (env.NPU_BLOCK_GATE_PYTHON) return [{ command: env.NPU_BLOCK_GATE_PYTHON, source: 'env', why: '$NPU_BLOCK_GATE_PYTHON' }];
  const tool = ctx.toolRoot === undefined ? toolRoot() : ctx.toolRoot;
  // The tool's own test venv is for the tool's own tests (air-mini in its checkout), never a user's tree.
  const ownVenv = tool && !(ctx.modelDir && inside(ctx.modelDir, tool)) ? join(tool, '.venv') : null;
  const own = (p: string) => (ownVenv && inside(p, ownVenv) ? `the tool's own test venv (${ownVenv}), not your mlir-air environment` : undefined);
  const out: PythonCandidate[] = [];
  const add = (c: PythonCandidate) => {
    if (!out.some((o) => o.command === c.command)) out.push({ ...c, ...(own(c.command) ? { skip: own(c.command) } : {}) });
  };
  if (env.VIRTUAL_ENV) {
    const py = join(env.VIRTUAL_ENV, 'bin', 'python');
    if (exists(py)) add({ command: py, source: 'venv', why: `the active virtualenv ($VIRTUAL_ENV=${env.VIRTUAL_ENV})` });
  }
  if (ctx.airRoot) {
    for (const base of [ctx.airRoot, dirname(ctx.airRoot)]) {
      for (const e of TREE_ENVS) {
        const py = join(base, e.dir, 'bin', 'python3');
        if (exists(py)) add({ command: py, source: 'tree', why: `${join(base, e.dir)}, ${base === ctx.airRoot ? 'in' : 'beside'} the mlir-air tree (${e.docs})` });
      }
    }
  }
  const path = onPath('python3', env, exists);
  add({ command: 'python3', source: 'PATH', why: path ? `python3 on PATH (${path})` : 'python3 on PATH', ...(path && own(path) ? { skip: own(path) } : {}) });
  add({ command: '/usr/bin/python3', source: 'fallback', why: '/usr/bin/python3' });
  return out;
}

/**
 * The candidates for a Python run outside the sandbox: the same order, but nothing from `dirs`. A
 * name without a slash is looked up here, on PATH without the entries in `dirs`, and run by the
 * path found (as the Python's own environment gets that PATH: outsideEnv).
 */
function outsideCandidates(explicit: string | null, env: NodeJS.ProcessEnv, ctx: CandidateContext, dirs: readonly string[], exists: (p: string) => boolean): PythonCandidate[] {
  const path = outsideEnv(env, dirs).PATH;
  const found = (cmd: string) => (cmd.includes('/') ? cmd : onPath(cmd, { PATH: path }, exists));
  const named = explicit ? { command: explicit, flag: '--python', source: 'option' as const } : env.NPU_BLOCK_GATE_PYTHON ? { command: env.NPU_BLOCK_GATE_PYTHON, flag: 'NPU_BLOCK_GATE_PYTHON', source: 'env' as const } : null;
  if (named) {
    // As the user's own PATH finds it: a name that leads into the tree there is refused, not swapped.
    const at = named.command.includes('/') ? named.command : onPath(named.command, env, exists);
    if (at && heldBy(at, dirs)) throw new InputError(`${named.flag} ${named.command}${at !== named.command ? ` (${at})` : ''}: ${TREE_PYTHON}; name a Python outside ${heldBy(at, dirs)}`);
    return [{ command: at ?? named.command, source: named.source, why: named.source === 'option' ? '--python' : '$NPU_BLOCK_GATE_PYTHON' }];
  }
  return pythonCandidates(null, { ...env, PATH: path }, { ...ctx, outside: undefined }).map((c) => {
    const at = found(c.command);
    if (c.skip || !at) return c;
    return heldBy(at, dirs) ? { ...c, skip: TREE_PYTHON } : { ...c, command: at };
  });
}

/**
 * One candidate's test taken: the Python when it works; a Python asked for by name (option, env)
 * that does not is an error; otherwise null, and why goes into tried.
 */
function take(c: PythonCandidate, t: PythonTest, tried: string[]): PythonInfo | null {
  if (t.ok) return { command: c.command, executable: t.executable, version: t.version, numpy: t.numpy, source: c.source, why: c.why, ...(t.note ? { note: t.note } : {}) };
  if (c.source === 'option') throw new InputError(`--python ${c.command}: ${t.why}`);
  if (c.source === 'env') throw new InputError(`NPU_BLOCK_GATE_PYTHON=${c.command}: ${t.why}`);
  tried.push(`${c.command} (${t.why})`);
  return null;
}

const noneFound = (tried: string[]) => new InfraError(`no Python with numpy found: tried ${tried.join(', ')}; pass --python or set NPU_BLOCK_GATE_PYTHON`);

/** The first candidate that imports numpy (the agent's doctor; a check lets the probe itself find out). */
export function findPython(explicit: string | null, env: NodeJS.ProcessEnv = process.env, test: PythonTester = testPython, ctx: CandidateContext = {}): PythonInfo {
  const tried: string[] = [];
  for (const c of pythonCandidates(explicit, env, ctx)) {
    if (c.skip) { tried.push(`${c.command} (${c.skip})`); continue; }
    const p = take(c, test(c.command), tried);
    if (p) return p;
  }
  throw noneFound(tried);
}

/** findPython with a tester that does not block (the candidates are still tried one after another). */
export async function findPythonAsync(explicit: string | null, env: NodeJS.ProcessEnv, test: PythonTesterAsync, ctx: CandidateContext = {}): Promise<PythonInfo> {
  const tried: string[] = [];
  for (const c of pythonCandidates(explicit, env, ctx)) {
    if (c.skip) { tried.push(`${c.command} (${c.skip})`); continue; }
    const p = take(c, await test(c.command), tried);
    if (p) return p;
  }
  throw noneFound(tried);
}

/** How a report names the Python and why it was picked. */
export function describePython(p: PythonInfo): string {
  const why = p.why ?? (p.source === 'option' ? '--python' : p.source === 'env' ? '$NPU_BLOCK_GATE_PYTHON' : p.command);
  return `${p.executable} (Python ${p.version}, numpy ${p.numpy}; from ${why})`;
}
