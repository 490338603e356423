// The probe step: the Python side runs block 0 into a fresh run dir, isolated from this process.
// One Python process: plan, config, a pause in which the kernel cache is restored (kernels.ts),
// then block 0. The probe runs the model tree's own code: it can read the caches, never write them.
import { chmodSync, existsSync, lstatSync, readdirSync, statSync, statfsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { EXIT, GateError, InfraError, InputError, fsError, oneLine } from '../errors.ts';
import type { Log } from '../log.ts';
import type { Plan } from '../plan.ts';
import { pythonCandidates, describePython, type PythonInfo } from '../probe/python.ts';
import { runProbe, blockArgs, modelArgs, type ModelArgs } from '../probe/run.ts';
import { chooseIsolation, type Isolation } from '../probe/isolate.ts';
import { defaultCacheRoot } from '../cache/kernel.ts';
import { referenceRoot } from '../cache/reference.ts';
import type { IsolationRow } from '../record/report.ts';
import { modelDirAt, type ModelDir } from './model-dir.ts';
import { prepareRunDir } from './rundir.ts';
import { restoreKernels, recordKernels, type KernelState } from './kernels.ts';

export interface Probed {
  runDir: string;
  model: ModelDir;
  python: PythonInfo;
  isolation: IsolationRow;
  /** Set when the run was meant to be isolated but ran with none: why (the verdict warns). */
  unisolatedFallback: string | null;
  /** The kernel cache's state for this run: stored after the verdict by a trusted run. */
  kernels: KernelState | null;
  /** The isolation the probe ran under; the bisect step runs under the same. */
  sandbox: Isolation;
}

/** The kernel cache root (the plan's, else $NPU_BLOCK_GATE_CACHE_DIR, else ~/.cache/npu-block-gate). */
export function cacheRootOf(plan: Plan): string {
  return plan.cacheDir ?? defaultCacheRoot();
}

/** The kernel cache root must be a directory (or not exist yet): one line naming it otherwise. */
function checkCacheRoot(plan: Plan): void {
  if (!plan.cache) return;
  const root = cacheRootOf(plan);
  const from = plan.cacheDir ? '--cache-dir' : process.env.NPU_BLOCK_GATE_CACHE_DIR ? '$NPU_BLOCK_GATE_CACHE_DIR' : 'the kernel cache root';
  try {
    const st = statSync(root);
    if (!st.isDirectory()) throw new InputError(`${from} is a file, not a directory; point it at a directory, or pass --no-cache`, root);
  } catch (e) {
    if (e instanceof GateError) throw e;
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw fsError(e, root, `cannot use ${from}`);
  }
}

/** A probe that died on a full disk says "disk full", naming the run dir, instead of numpy's "N requested and M written". */
function diskFull(e: unknown, runDir: string): GateError | null {
  const msg = oneLine(e);
  let free = Infinity;
  try {
    const fs = statfsSync(runDir);
    free = fs.bavail * fs.bsize;
  } catch {
    // statfs unavailable: judge by the message alone
  }
  const said = /No space left|ENOSPC|requested and \d+ written|disk full/i.test(msg);
  const likely = free < 64 * 1024 && !(e instanceof GateError && e.exitCode === EXIT.input) && !/timed out|timeout|interrupt|signal/i.test(msg);
  if (said || likely) return new InfraError(`disk full: the probe could not write the run dir (${msg})`, runDir);
  return null;
}

/** The model options the probe takes, from the plan. */
function modelOptions(plan: Plan, modelDir: string): ModelArgs {
  return { modelDir, promptStyle: plan.promptStyle, prompt: plan.prompt, model: plan.model ?? null, cpuAttn: plan.cpuAttn ?? null, online: plan.online };
}

/** What block 0 runs on and what it records beyond the block (`check` only; the plan takes none of these). */
export function runOptions(plan: Plan): string[] {
  const args: string[] = [];
  if (plan.positions !== undefined && plan.positions !== null) args.push('--positions', String(plan.positions));
  if (plan.emulate) args.push('--emulate');
  if (plan.emulate && plan.inject) args.push(`--inject=${plan.inject}`);
  if (plan.emulate && plan.twinEps) args.push(`--twin-eps=${plan.twinEps}`);
  if (plan.twinPrecision) args.push(`--twin-precision=${plan.twinPrecision}`);
  if (plan.boundaries === false) args.push('--no-boundaries');
  if (plan.layers) args.push('--layers');
  return args;
}

/** g+rwX on a dir and everything in it (no symlinks followed): the probe user's write access. */
function groupWritable(dir: string): void {
  const walk = (p: string) => {
    const st = lstatSync(p);
    if (st.isSymbolicLink()) return;
    chmodSync(p, (st.mode & 0o7777) | (st.isDirectory() ? 0o070 : 0o060));
    if (st.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
  };
  try {
    walk(dir);
  } catch (e) {
    throw fsError(e, dir, 'cannot give the probe user write access');
  }
}

/** The reference cache root this run reads (probe) and, when trusted, writes (caches step); null when off. */
export function refCacheRoot(plan: Plan): string | null {
  if (!plan.cache || process.env.NPU_BLOCK_GATE_REF_CACHE?.trim().toLowerCase() === 'none') return null;
  return referenceRoot(cacheRootOf(plan));
}

/** The probe step: a fresh run dir holding block 0 on the NPU and the reference. */
export async function probe(plan: Plan, log: Log): Promise<Probed> {
  if (!plan.modelDir) throw new InputError('a model dir is required to run the probe (--model-dir)');
  const model = modelDirAt(plan.modelDir);
  const runDir = resolve(plan.runDir);
  checkCacheRoot(plan);
  const request = plan.isolation ?? { mode: 'auto' as const, untrusted: false, allowUnisolated: false };
  const iso = chooseIsolation(request);
  prepareRunDir(runDir, plan.force);
  // uid isolation: the probe is another user in the runner's group (agent setup). It may write
  // exactly the model dir (build outputs) and the run dir, and leaves what it makes group-writable.
  if (iso.mode === 'uid') for (const d of [model.dir, runDir]) groupWritable(d);
  let kernels: KernelState | null = null;
  log.step(`probe: block 0 of ${basename(model.dir)}${plan.emulate ? ' on the emulated NPU (CPU twins of its ELFs; no NPU runs)' : ''} -> ${runDir}`);
  log.step(`isolation: ${iso.detail}`);
  const refRoot = refCacheRoot(plan);
  const { python } = await runProbe(pythonCandidates(plan.python), {
    subcommand: 'check',
    args: [...blockArgs(modelOptions(plan, model.dir), runDir), '--events', ...runOptions(plan), '--ref-cache', refRoot ?? 'none'],
    runDir, timeoutSec: plan.timeoutSec, extraEnv: { ...(iso.mode === 'uid' ? { NPU_BLOCK_GATE_UMASK: '002' } : {}), ...plan.probeEnv },
    // Readable inside the sandbox: the tree, and the reference cache (read only, wherever it lives).
    isolation: iso, writable: [model.dir, runDir], network: !!plan.online,
    readable: [...(model.airRoot ? [model.airRoot] : []), ...(refRoot && existsSync(refRoot) ? [refRoot] : [])],
  }, {
    onLine: (line) => log.step(`probe: ${line}`),
    onPython: (p) => log.step(`python: ${describePython(p)}`),
    onEvent: (ev) => {
      if (ev.event !== 'config') return;
      kernels = plan.cache ? restoreKernels(model, runDir, cacheRootOf(plan), log) : null;
      return { reuse_kernels: !!kernels?.restored };
    },
  }).catch((e: unknown) => {
    throw diskFull(e, runDir) ?? e;
  });
  if (kernels) recordKernels(runDir, kernels);
  const fellBack = iso.mode === 'none' && request.mode !== 'none' ? iso.detail.replace(/^none\s*/, '').replace(/^\((.*)\)$/, '$1') || 'no isolation was available' : null;
  return { runDir, model, python, isolation: { mode: iso.mode, detail: iso.detail, source: 'this run' }, unisolatedFallback: fellBack, kernels, sandbox: iso };
}

/** `npu-block-gate plan`: the probe's static plan (Steps 1-2, preflight), as text or JSON. */
export async function planModel(plan: Plan, json: boolean): Promise<string> {
  if (!plan.modelDir) throw new InputError('plan needs --model-dir DIR');
  const model = modelDirAt(plan.modelDir);
  const r = await runProbe(pythonCandidates(plan.python), {
    subcommand: 'plan', args: [...modelArgs(modelOptions(plan, model.dir)), ...(json ? ['--json'] : [])],
    runDir: null, timeoutSec: plan.timeoutSec, extraEnv: plan.probeEnv,
  }, { onLine: () => undefined });
  return r.stdout;
}

/** The bisect step: `probe bisect` on the run dir (same Python). A failure is returned, never thrown:
 * the bisect section says so, and it is never the run's outcome. */
export async function bisectStep(plan: Plan, probed: Probed, runDir: string, log: Log): Promise<string | null> {
  log.step('bisect: swapping kernels to their CPU equivalents (the model\'s hook, or the CPU twins of its ELFs)');
  const m = probed.model;
  try {
    // The same interpreter as the check (the command it was given, not the probe's sys.executable:
    // a wrapper stays a wrapper) and the same isolation: the bisect runs the model's code again.
    await runProbe([{ command: probed.python.command, source: probed.python.source }], {
      subcommand: 'bisect', args: ['--run-dir', runDir, ...(plan.twinPrecision ? [`--twin-precision=${plan.twinPrecision}`] : [])], runDir, timeoutSec: plan.timeoutSec,
      extraEnv: { ...(probed.sandbox.mode === 'uid' ? { NPU_BLOCK_GATE_UMASK: '002' } : {}), ...plan.probeEnv },
      isolation: probed.sandbox, writable: [m.dir, runDir], network: !!plan.online, readable: m.airRoot ? [m.airRoot] : [],
    }, { onLine: (line) => log.step(`probe: ${line}`) });
    return null;
  } catch (e) {
    log.warn(`bisect did not finish: ${oneLine(e)}`);
    return oneLine(e);
  }
}
