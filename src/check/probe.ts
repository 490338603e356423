// The probe step: the Python side runs block 0 into a fresh run dir, isolated from this process.
// One Python process: plan, config, a pause in which the kernel cache is restored (kernels.ts),
// then block 0. The probe runs the model tree's own code: it can read the caches, never write them.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, readFileSync, rmdirSync, statSync, statfsSync } from 'node:fs';
import { RUN_FILES } from '../rundir/schema.ts';
import { basename, dirname, join, resolve } from 'node:path';
import { EXIT, GateError, InfraError, InputError, fsError, oneLine } from '../errors.ts';
import type { Log } from '../log.ts';
import type { Plan } from '../plan.ts';
import { pythonCandidates, describePython, outsideEnv, type PythonInfo } from '../probe/python.ts';
import { askInterpreterEarly, firstRunnable, installRoot, runProbe, blockArgs, modelArgs, type ModelArgs } from '../probe/run.ts';
import { compileProbe } from '../probe/bytecode.ts';
import { chooseIsolation, realHost, type Isolation, type IsolationHost } from '../probe/isolate.ts';
import { MODEL_COPY_MAX_BYTES, Staging, sweepStaging } from '../probe/staging.ts';
import { allowed, ENV_NAME } from '../probe/env.ts';
import { defaultCacheRoot } from '../cache/kernel.ts';
import { referenceRoot } from '../cache/reference.ts';
import type { IsolationRow } from '../record/report.ts';
import { modelDirAt, type ModelDir } from './model-dir.ts';
import { prepareRunDir } from './rundir.ts';
import { restoreKernels, recordKernels, placeDirect, PLACE_SCRIPT, type KernelState, type Placer } from './kernels.ts';

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
  /** The tree's environment knobs passed to the probe (a trusted run's); the bisect gets the same. */
  knobs: string[];
  /** Where the probe wrote (outside the checkout); the bisect writes there too. */
  staging: Staging;
  /** Removes the staging area (check() does, when the run is over). */
  release: (log?: Log) => void;
}

/** Under the cache root: what trusted interpreters said about their dirs (probe/answers.ts). */
const PYTHON_DIRS_ANSWERS = 'python-dirs.json';

/** The kernel cache root (the plan's, else $NPU_BLOCK_GATE_CACHE_DIR, else ~/.cache/npu-block-gate). */
function cacheRootOf(plan: Plan): string {
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

/**
 * uid isolation: the checkout's git dir (and a worktree's git and common dir) closed to group and
 * others, so the probe user never reads a token actions/checkout persisted in .git/config, even
 * where its sandbox is refused (agent setup closes the other checkouts under the work dir). Only
 * dirs this process owns; a failure is left to the sandbox, which hides .git anyway.
 */
export function closeGitDirs(dir: string): void {
  const uid = process.getuid?.();
  const close = (d: string) => {
    try {
      const st = lstatSync(d);
      if (st.isDirectory() && st.uid === uid && st.mode & 0o077) chmodSync(d, st.mode & 0o7700);
    } catch { /* not ours, or gone */ }
  };
  for (let up = resolve(dir); ; up = dirname(up)) {
    const g = join(up, '.git');
    let st;
    try { st = lstatSync(g); } catch { st = null; }
    if (st?.isDirectory()) return close(g);
    if (st?.isFile()) {
      const m = /^gitdir:\s*(.+)$/m.exec(readFileSync(g, 'utf8'));
      if (!m) return;
      const real = resolve(up, m[1].trim());
      close(real);
      try { close(resolve(real, readFileSync(join(real, 'commondir'), 'utf8').trim())); } catch { /* not a worktree */ }
      return;
    }
    if (up === '/') return;
  }
}

/** The reference cache root this run reads (probe) and, when trusted, writes (caches step); null when off. */
export function refCacheRoot(plan: Plan): string | null {
  if (!plan.cache || process.env.NPU_BLOCK_GATE_REF_CACHE?.trim().toLowerCase() === 'none') return null;
  return referenceRoot(cacheRootOf(plan));
}

/** The tree's environment knobs the probe names (kernel_cache.inputs.env) that this run passes it:
 * all but credential-looking names on a trusted run, none on an untrusted one (the names are the
 * pull request's to choose); the admin's probe-env list passes either way. */
function knobsFor(ev: { names?: unknown }, plan: Plan, log: Log): { pass: string[]; env: Record<string, string> } {
  const names = (Array.isArray(ev.names) ? ev.names : []).filter((n): n is string => typeof n === 'string' && ENV_NAME.test(n));
  const admin = plan.probeEnvNames ?? [];
  const set = names.filter((n) => process.env[n] !== undefined && !allowed(n, { names: admin }));
  if (!set.length) return { pass: [], env: {} };
  if (plan.isolation?.untrusted) {
    log.step(`probe env: the tree's knobs ${set.join(', ')} are set here but not passed to an untrusted run (list them in probe-env to pass them)`);
    return { pass: [], env: {} };
  }
  const pass = set.filter((n) => allowed(n, { knobs: set }));
  const held = set.filter((n) => !pass.includes(n));
  if (held.length) log.step(`probe env: the tree's knobs ${held.join(', ')} look like credentials and are not passed (list them in probe-env to pass them)`);
  return { pass, env: Object.fromEntries(pass.map((n) => [n, process.env[n]!])) };
}

/** The placer of a kernel-cache restore: inside the probe's own sandbox (see kernels.ts), where
 * the model dir is the probe's private copy. */
export function sandboxedPlacer(iso: Isolation, staging: Staging): Placer {
  if (iso.mode === 'none') return placeDirect;
  return (staged, target) => {
    const sh = ['/bin/sh', '-c', PLACE_SCRIPT, 'sh', target, staged, iso.mode === 'uid' ? '002' : '022'];
    const env = { PATH: '/usr/bin:/bin' };
    const argv = iso.wrap(sh, { ...staging.binds(), readable: [staged], env: process.env, probeEnv: env, network: false, cwd: staging.out });
    const r = spawnSync(argv[0], argv.slice(1), { env, cwd: staging.out, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'], timeout: 600_000 });
    if (r.status !== 0) throw new InfraError(`the copy into ${target} failed: ${oneLine(r.stderr?.trim().split('\n').pop() || r.error?.message || `exit ${r.status}`)}`);
  };
}

/** Why the run dir a probe left behind is not a finished one (probe.json missing, or still at stage
 * config), or null. A probe that exits 0 without finishing is the probe's failure, not bad input. */
function probeUnfinished(runDir: string): string | null {
  let text: string;
  try {
    text = readFileSync(join(runDir, RUN_FILES.probe), 'utf8');
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? `wrote no ${RUN_FILES.probe}` : null;
  }
  try {
    const stage = (JSON.parse(text) as { stage?: unknown }).stage;
    return stage === 'config' ? `${RUN_FILES.probe} is still at stage config (block 0 never finished)` : null;
  } catch {
    return null; // judged (and refused, naming the file) by the measure step
  }
}

/** Copies the probe's results through the one door into the run dir; names what it refused. */
function takeResults(staging: Staging, runDir: string, log: Log, only?: { top: string[]; dirs: boolean }): void {
  const t = staging.take(runDir, only);
  for (const r of t.refused) log.warn(`probe result ${r.name} left in the sandbox: ${r.why}`);
}

/** The probe step: a fresh run dir holding block 0 on the NPU and the reference. */
export async function probe(plan: Plan, log: Log, host: IsolationHost = realHost): Promise<Probed> {
  if (!plan.modelDir) throw new InputError('a model dir is required to run the probe (--model-dir)');
  const model = modelDirAt(plan.modelDir);
  const runDir = resolve(plan.runDir);
  checkCacheRoot(plan);
  const request = plan.isolation ?? { mode: 'auto' as const, untrusted: false, allowUnisolated: false };
  const refRoot = refCacheRoot(plan);
  // What the probe reads: the tree (read-only, the model dir too), the reference cache. It writes
  // only the staging dirs made for it below, outside the checkout (one door out: staging.ts).
  const readable = [...(model.airRoot ? [model.airRoot] : [model.dir]), ...(refRoot && existsSync(refRoot) ? [refRoot] : [])];
  const fresh = !existsSync(runDir);
  prepareRunDir(runDir, plan.force);
  const candidates = pythonCandidates(plan.python, process.env, { airRoot: model.airRoot, modelDir: model.dir });
  const envAllow = { names: plan.probeEnvNames ?? [] };
  // The dirs the pull request controls: its interpreter there is never run outside the sandbox.
  // A trusted interpreter's answer is kept under the cache root (whatever --no-cache says: that is
  // the kernel cache), so a later run need not start it before the probe (issue 30).
  const answers = join(cacheRootOf(plan), PYTHON_DIRS_ANSWERS);
  const untrusted = { writable: [runDir], readable: [...readable, model.dir], envAllow, answers };
  // The interpreter's dirs are read in the sandbox too: the feature test checks the probe's uid can.
  const pyDirs = request.mode !== 'none' ? await askInterpreterEarly(candidates, untrusted) : [];
  // The probe's own package compiled for that Python (a trusted one only), beside the isolation tests.
  const first = firstRunnable(candidates, untrusted);
  const bytecode = first ? compileProbe(first.command, first.env, first.untrusted, answers) : Promise.resolve(null);
  let iso: Isolation;
  let staging: Staging;
  try {
    // This installation's probe package too: installed under a dir only root may enter, uid 65534 could not run it.
    iso = chooseIsolation(request, host, { writable: [], readable: [...readable, ...pyDirs, installRoot()], env: process.env, network: !!plan.online, cwd: '/' });
    staging = Staging.create({ modelDir: model.dir, iso });
  } catch (e) {
    if (fresh) try { rmdirSync(runDir); } catch { /* not empty, or gone */ }
    throw e;
  }
  const release = (l: Log = log) => {
    const left = staging.remove();
    if (left) l.warn(`the probe's staging dir was not removed: ${left}`);
  };
  // What a killed run left (its pid gone) goes now, whoever owns it.
  for (const d of sweepStaging(iso.asProbe ?? null)) log.step(`removed ${d}: the staging area of a run that was killed`);
  if (staging.leftOut.length) log.step(`model dir: the probe sees a private copy; left out of it (over ${MODEL_COPY_MAX_BYTES / 1024 ** 2} MiB, seen empty): ${staging.leftOut.join(', ')}`);
  // uid isolation: the checkout's git dir is closed to the probe user even where its sandbox is refused.
  if (iso.mode === 'uid') closeGitDirs(model.dir);
  let kernels: KernelState | null = null;
  let knobs: string[] = [];
  log.step(`probe: block 0 of ${basename(model.dir)}${plan.emulate ? ' on the emulated NPU (CPU twins of its ELFs; no NPU runs)' : ''} -> ${runDir}`);
  log.step(`isolation: ${iso.detail}`);
  if (iso.degraded) log.warn(`isolation degraded: ${iso.degraded}`);
  const binds = staging.binds();
  const compiled = await bytecode;
  if (compiled?.compiled) log.step(`probe: its own package ${compiled.why}`);
  let python: PythonInfo;
  try {
    ({ python } = await runProbe(candidates, {
      subcommand: 'check',
      args: [...blockArgs(modelOptions(plan, model.dir), staging.out), '--events', ...runOptions(plan), '--ref-cache', refRoot ?? 'none'],
      runDir, cwd: staging.out, timeoutSec: plan.timeoutSec,
      extraEnv: { ...(iso.mode === 'uid' ? { NPU_BLOCK_GATE_UMASK: '002' } : {}), TMPDIR: staging.scratch, ...plan.probeEnv },
      envAllow,
      // Readable inside the sandbox: the tree, and the reference cache (read only, wherever it lives).
      isolation: iso, ...binds, network: !!plan.online, readable, answers,
    }, {
      onLine: (line) => log.step(`probe: ${line}`),
      onPython: (p) => log.step(`python: ${describePython(p)}`),
      onSkip: (c, why) => log.step(`python: passed over ${c.command}${c.why ? ` (${c.why})` : ''}: ${why}`),
      onEvent: (ev) => {
        if (ev.event === 'knobs') {
          const k = knobsFor(ev as { names?: unknown }, plan, log);
          knobs = k.pass;
          if (knobs.length) log.step(`probe env: the tree's knobs ${knobs.join(', ')} passed`);
          return { env: k.env };
        }
        if (ev.event !== 'config') return;
        // The config stage's probe.json, through the door, is what the restore reads.
        takeResults(staging, runDir, log, { top: [RUN_FILES.probe], dirs: false });
        kernels = plan.cache ? restoreKernels(model, runDir, cacheRootOf(plan), log, sandboxedPlacer(iso, staging), (p) => staging.hostPath(p)) : null;
        return { reuse_kernels: !!kernels?.restored };
      },
    }));
  } catch (e) {
    // probe.log (and whatever else it wrote) still comes out: it says why.
    try { takeResults(staging, runDir, log); } catch { /* the error below is the one to report */ }
    release();
    throw diskFull(e, runDir) ?? e;
  }
  try {
    takeResults(staging, runDir, log);
  } catch (e) {
    release();
    throw e;
  }
  const unfinished = probeUnfinished(runDir);
  if (unfinished) {
    release();
    throw new InfraError(`probe check (${python.executable}) exited 0 but ${unfinished}: the probe, or the model code it ran, ended the process early (os._exit, sys.exit in the block?); log: ${join(runDir, RUN_FILES.probeLog)}`, runDir);
  }
  if (kernels) recordKernels(runDir, kernels);
  const fellBack = iso.mode === 'none' && request.mode !== 'none' ? (iso.unavailable ?? []).join('; ') || 'no isolation was available' : null;
  return {
    runDir, model, python, unisolatedFallback: fellBack, kernels, sandbox: iso, knobs, staging, release,
    isolation: { mode: iso.mode, detail: iso.detail, source: 'this run', ...(iso.degraded ? { degraded: iso.degraded } : {}) },
  };
}

/** `npu-block-gate plan`: the probe's static plan (Steps 1-2, preflight), as text or JSON. */
export async function planModel(plan: Plan, json: boolean, log?: Log): Promise<string> {
  if (plan.hfConfig !== undefined) return planHfConfig(plan, plan.hfConfig, json, log);
  if (!plan.modelDir) throw new InputError('plan needs --model-dir DIR');
  const model = modelDirAt(plan.modelDir);
  // No sandbox here: nothing of the tree or the model dir (a pull request's) is run, imported or loaded (issue 25).
  const outside = [model.dir, ...(model.airRoot ? [model.airRoot] : [])];
  const r = await runProbe(pythonCandidates(plan.python, process.env, { airRoot: model.airRoot, modelDir: model.dir, outside }), {
    subcommand: 'plan', args: [...modelArgs(modelOptions(plan, model.dir)), ...(json ? ['--json'] : []), ...(plan.sanity ? ['--sanity'] : [])],
    runDir: null, timeoutSec: plan.timeoutSec, extraEnv: { ...outsideEnv(process.env, outside), ...plan.probeEnv }, envAllow: { names: plan.probeEnvNames ?? [] },
  }, { onLine: () => undefined, onSkip: (c, why) => log?.step(`python: passed over ${c.command}${c.why ? ` (${c.why})` : ''}: ${why}`) });
  log?.step(`python: ${r.python.command} (from ${r.python.why ?? r.python.source})`);
  return r.stdout;
}

/** `npu-block-gate plan --hf-config`: Steps 1 and 2 from a config.json alone (a path, or a model id in the
 * local HF cache); no model dir, no tree. */
async function planHfConfig(plan: Plan, source: string, json: boolean, log?: Log): Promise<string> {
  const arg = existsSync(source) ? resolve(source) : source;
  const r = await runProbe(pythonCandidates(plan.python, process.env, {}), {
    subcommand: 'plan', args: ['--hf-config', arg, ...(json ? ['--json'] : [])],
    runDir: null, timeoutSec: plan.timeoutSec, extraEnv: plan.probeEnv, envAllow: { names: plan.probeEnvNames ?? [] },
  }, { onLine: () => undefined, onSkip: (c, why) => log?.step(`python: passed over ${c.command}${c.why ? ` (${c.why})` : ''}: ${why}`) });
  return r.stdout;
}

/** The bisect step: `probe bisect` on the probe's own run dir in its staging area (same Python,
 * same isolation), its bisect/ then taken through the door into the run dir. A failure is returned,
 * never thrown: the bisect section says so, and it is never the run's outcome. */
export async function bisectStep(plan: Plan, probed: Probed, runDir: string, log: Log): Promise<string | null> {
  log.step('bisect: swapping kernels to their CPU equivalents (the model\'s hook, or the CPU twins of its ELFs)');
  const m = probed.model;
  const staging = probed.staging;
  try {
    // The same interpreter as the check (the command it was given, not the probe's sys.executable:
    // a wrapper stays a wrapper) and the same isolation: the bisect runs the model's code again.
    await runProbe([{ command: probed.python.command, source: probed.python.source }], {
      subcommand: 'bisect', args: ['--run-dir', staging.out, ...(plan.twinPrecision ? [`--twin-precision=${plan.twinPrecision}`] : [])], runDir, cwd: staging.out, timeoutSec: plan.timeoutSec,
      extraEnv: { ...(probed.sandbox.mode === 'uid' ? { NPU_BLOCK_GATE_UMASK: '002' } : {}), TMPDIR: staging.scratch, ...plan.probeEnv },
      envAllow: { names: plan.probeEnvNames ?? [], knobs: probed.knobs },
      isolation: probed.sandbox, ...staging.binds(), network: !!plan.online, readable: m.airRoot ? [m.airRoot] : [m.dir],
    }, { onLine: (line) => log.step(`probe: ${line}`) });
    return null;
  } catch (e) {
    log.warn(`bisect did not finish: ${oneLine(e)}`);
    return oneLine(e);
  } finally {
    try { takeResults(staging, runDir, log, { top: [], dirs: true }); } catch (e) { log.warn(`bisect results not taken: ${oneLine(e)}`); }
  }
}
