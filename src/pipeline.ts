// The one pipeline behind the CLI and the Action:
//   probe (Python, NPU host) -> run dir -> judge (metrics, gates) -> documents -> reports.
import { chmodSync, existsSync, statSync, mkdirSync, rmSync, lstatSync, readdirSync, statfsSync } from 'node:fs';
import { join, resolve, isAbsolute, basename, dirname } from 'node:path';
import pkg from '../package.json' with { type: 'json' };
import { InputError, InfraError, GateError, EXIT, oneLine, fsError, type ExitCode } from './errors.ts';
import type { Log } from './log.ts';
import type { Plan } from './plan.ts';
import { pythonCandidates, describePython, type PythonInfo } from './probe/python.ts';
import { runProbe, blockArgs, modelArgs, type ModelArgs } from './probe/run.ts';
import { readProbeJson, tensorPath, openRunTensor, runDirReal } from './rundir/read.ts';
import { RUN_FILES, type ProbeJson } from './rundir/schema.ts';
import { compare } from './metrics/index.ts';
import { perPositionThreshold, WHOLE_COSINE_MIN } from './gates/thresholds.ts';
import { metricGates, documentationGate, outcomeOf, warningsFor, type Documented } from './gates/evaluate.ts';
import { REPORT_SCHEMA, REPORT_SCHEMA_VERSION, type Report, type Thresholds } from './report/types.ts';
import { renderMarkdown } from './report/markdown.ts';
import { toJson } from './report/json.ts';
import { writeAtomic, commitWrites, readDocument, type PlannedWrite } from './docs/fs.ts';
import { decodeDoc, encodeDoc } from './docs/text.ts';
import { referenceFault } from './gates/reference.ts';
import { CONTRACT } from './contract.ts';
import { DOC_PATHS } from './docs/markers.ts';
import { updatePhase2, readHistory, baselineFor } from './docs/phase2.ts';
import { updateTodo } from './docs/todo.ts';
import type { Metrics } from './metrics/types.ts';
import { judgeBisect, situationOf } from './bisect/judge.ts';
import { judgeLayers } from './layers/judge.ts';
import { judgeLens, lensWarning, type LensReport } from './lens/judge.ts';
import type { BisectReport } from './bisect/types.ts';
import { KernelStore, kernelCacheKey, defaultCacheRoot, type StoredMeta } from './cache/kernel.ts';
import { referenceRoot, storeReference } from './cache/reference.ts';
import { chooseIsolation, type Isolation } from './probe/isolate.ts';

export const TOOL = { name: 'npu-block-gate', version: pkg.version };

export interface DocsResult { phase2: string; todo: string; changed: boolean; notes?: string[] }

export interface CheckResult {
  report: Report;
  runDir: string;
  markdown: string;
  exitCode: ExitCode;
  docs: DocsResult | null;
}

function requireModelDir(dir: string): string {
  const abs = resolve(dir);
  let st;
  try {
    st = statSync(abs);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new InputError('model dir does not exist', dir);
    throw fsError(e, dir, 'cannot read the model dir');
  }
  if (!st.isDirectory()) throw new InputError('model dir is not a directory', dir);
  return abs;
}

/** Every file and dir a run leaves in its run dir (the contract's names, plus bisect/ and layers/). */
const RUN_ENTRIES = [...Object.values(RUN_FILES), CONTRACT.bisect.dir, CONTRACT.layers_dir, CONTRACT.boundaries.dir];

/**
 * The run dir, ready for a new probe: created if need be; an existing one is refused unless
 * `plan.force` allows it (the CLI asks for --force; the Action always starts afresh), and then
 * everything an earlier run left there is removed, so nothing stale (a report, a bisect, a
 * layer) can be judged with the new block. Other files in the dir are never touched.
 */
function prepareRunDir(plan: Plan, runDir: string): void {
  let st;
  try {
    st = lstatSync(runDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw fsError(e, runDir, 'cannot use as the run dir');
  }
  if (st && !st.isDirectory() && !(st.isSymbolicLink() && existsSync(runDir) && statSync(runDir).isDirectory())) {
    throw new InputError('is an existing file, not a directory; the run dir (--out) must be a new or empty directory', runDir);
  }
  if (st) {
    let entries: string[];
    try {
      entries = readdirSync(runDir);
    } catch (e) {
      throw fsError(e, runDir, 'cannot read the run dir');
    }
    if (entries.length && plan.force === false) {
      const isRun = entries.some((n) => n === RUN_FILES.probe || n === RUN_FILES.report || n === RUN_FILES.probeLog);
      throw new InputError(`${isRun ? 'already holds a run' : 'exists and is not empty'}; pass --force to replace ${isRun ? 'it' : 'the run files in it'}, or choose another --out`, runDir);
    }
    for (const name of RUN_ENTRIES) {
      try {
        rmSync(join(runDir, name), { recursive: true, force: true });
      } catch (e) {
        throw fsError(e, join(runDir, name), 'cannot remove what an earlier run left');
      }
    }
  }
  try {
    mkdirSync(runDir, { recursive: true });
  } catch (e) {
    throw fsError(e, runDir, 'cannot create the run dir');
  }
}

/** The kernel cache root must be a directory (or not exist yet): one line naming it otherwise. */
function checkCacheRoot(plan: Plan): void {
  if (!plan.cache) return;
  const root = plan.cacheDir ?? defaultCacheRoot();
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
  if (said || likely) {
    return new InfraError(`disk full: the probe could not write the run dir (${msg})`, runDir);
  }
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

/** The mlir-air tree root above a model dir (programming_examples/llms/<model>), or null. */
function airRootOf(modelDir: string): string | null {
  let d = modelDir;
  while (d !== dirname(d)) {
    if (basename(d) === 'llms' && basename(dirname(d)) === 'programming_examples') return dirname(dirname(d));
    d = dirname(d);
  }
  return null;
}

export interface Probed {
  runDir: string;
  python: PythonInfo;
  isolation: { mode: Isolation['mode']; detail: string };
  /** The kernel cache's state for this run: stored after the verdict by a trusted run. */
  kernels: CacheState | null;
}

/** mode probe: run the Python side and leave a complete run dir. One Python process: plan,
 * config, a pause in which the kernel cache is restored, then block 0. The probe runs the model
 * tree's own code, isolated from this process (src/probe/isolate.ts): it can read the caches, never
 * write them; they are stored by this process after the verdict of a trusted run (storeCaches). */
export async function probe(plan: Plan, log: Log): Promise<Probed> {
  if (!plan.modelDir) throw new InputError('a model dir is required to run the probe (--model-dir)');
  const modelDir = requireModelDir(plan.modelDir);
  const runDir = resolve(plan.runDir);
  checkCacheRoot(plan);
  const iso = chooseIsolation(plan.isolation ?? { mode: 'auto', untrusted: false, allowUnisolated: false });
  prepareRunDir(plan, runDir);
  // uid isolation: the probe is another user in the runner's group (agent setup). It may write
  // exactly the model dir (build outputs) and the run dir, and leaves what it makes group-writable.
  if (iso.mode === 'uid') for (const d of [modelDir, runDir]) groupWritable(d);
  let cache: CacheState | null = null;
  log.step(`probe: block 0 of ${basename(modelDir)} -> ${runDir}`);
  log.step(`isolation: ${iso.detail}`);
  const airRoot = airRootOf(modelDir);
  const { python } = await runProbe(pythonCandidates(plan.python), {
    subcommand: 'check',
    args: [...blockArgs(modelOptions(plan, modelDir), runDir), '--events', ...runOptions(plan), ...refCacheArgs(plan)],
    runDir, timeoutSec: plan.timeoutSec, extraEnv: { ...(iso.mode === 'uid' ? { NPU_BLOCK_GATE_UMASK: '002' } : {}), ...plan.probeEnv },
    // Readable inside the sandbox: the tree, and the reference cache (read only, wherever it lives).
    isolation: iso, writable: [modelDir, runDir], network: !!plan.online,
    readable: [...(airRoot ? [airRoot] : []), ...readableRefRoot(plan)],
  }, {
    onLine: (line) => log.step(`probe: ${line}`),
    onPython: (p) => log.step(`python: ${describePython(p)}`),
    onEvent: (ev) => {
      if (ev.event !== 'config') return;
      cache = plan.cache ? restoreKernels(plan, runDir, log) : null;
      return { reuse_kernels: !!cache?.restored };
    },
  }).catch((e: unknown) => {
    throw diskFull(e, runDir) ?? e;
  });
  if (cache) recordKernels(runDir, cache);
  return { runDir, python, isolation: { mode: iso.mode, detail: iso.detail }, kernels: cache };
}

/** `npu-block-gate plan`: the probe's static plan (Steps 1-2, preflight), as text or JSON. */
export async function planModel(plan: Plan, json: boolean): Promise<string> {
  if (!plan.modelDir) throw new InputError('plan needs --model-dir DIR');
  const modelDir = requireModelDir(plan.modelDir);
  const r = await runProbe(pythonCandidates(plan.python), {
    subcommand: 'plan', args: [...modelArgs(modelOptions(plan, modelDir)), ...(json ? ['--json'] : [])],
    runDir: null, timeoutSec: plan.timeoutSec, extraEnv: plan.probeEnv,
  }, { onLine: () => undefined });
  return r.stdout;
}

/** The reference cache follows the kernel cache's switch and root (the probe keys and stores it). */
function refCacheArgs(plan: Plan): string[] {
  const root = refCacheRoot(plan);
  return ['--ref-cache', root ?? 'none'];
}

/** The reference cache root, for the sandbox's read-only binds, when it exists. */
function readableRefRoot(plan: Plan): string[] {
  const root = refCacheRoot(plan);
  return root && existsSync(root) ? [root] : [];
}

/** The reference cache root this run reads (probe) and, when trusted, writes (here); null when off. */
function refCacheRoot(plan: Plan): string | null {
  if (!plan.cache || process.env.NPU_BLOCK_GATE_REF_CACHE?.trim().toLowerCase() === 'none') return null;
  return referenceRoot(plan.cacheDir ?? defaultCacheRoot());
}

/**
 * After the verdict of a trusted run on the NPU host: store a reference-cache miss from the run
 * dir (the probe only looks entries up). A failure to store is a warning, never the run's outcome.
 */
function storeReferenceCache(plan: Plan, runDir: string, p: ProbeJson, log: Log): void {
  const root = refCacheRoot(plan);
  if (!root || plan.cacheWrite === false || !p.reference.cache || p.reference.cache.hit) return;
  try {
    const r = storeReference(root, runDir, p);
    if (r.stored) log.step(`reference cache: stored ${p.reference.cache.key.slice(0, 12)} (layers ${r.layers.join(', ')}${r.boundaries ? `; ${r.boundaries.length} boundaries` : ''}) in ${root}`);
    else log.step(`reference cache: not stored (${r.why})`);
  } catch (e) {
    log.warn(`reference cache: not stored (${fsError(e, root, 'cannot write').message})`);
  }
}

interface CacheState { store: KernelStore; key: string; target: string; restored: StoredMeta | null }

/** After the probe's config stage: the content key, and a restore into the model's kernel cache dir on a hit. */
function restoreKernels(plan: Plan, runDir: string, log: Log): CacheState | null {
  const p = readProbeJson(runDir, false);
  if (p.emulate) {
    log.step('kernel cache: not used (emulated run: nothing compiles; the twins stand in for the ELFs)');
    return null;
  }
  const kc = p.kernel_cache;
  const airRoot = p.environment.air_root;
  if (!kc?.dir || !airRoot || isAbsolute(kc.dir) || kc.dir.split(/[\\/]/).includes('..')) {
    log.step('kernel cache: not used (this model path keeps no prefill kernel cache dir)');
    return null;
  }
  const { key, files } = kernelCacheKey({
    airRoot, modelDir: join(airRoot, p.model.dir), config: p.model.config,
    seqLen: kc.seq_len ?? p.prompt.padded_len, cpuAttn: kc.cpu_attn ?? p.integration.cpu_attn,
    toolchain: kc.toolchain ?? null, compileCommand: kc.compile_command ?? null, inputs: kc.inputs ?? null,
  });
  const store = new KernelStore(plan.cacheDir ?? defaultCacheRoot());
  const target = join(airRoot, kc.dir);
  const restored = store.restore(key, target, (why) => log.step(`kernel cache: entry ${key.slice(0, 12)} refused (${why}); kernels will compile`));
  log.step(restored
    ? `kernel cache: hit ${key.slice(0, 12)} (stored ${restored.created_at}${restored.compile_seconds ? `, saves about ${restored.compile_seconds.toFixed(1)}s of compile` : ''}) -> ${kc.dir}`
    : `kernel cache: miss ${key.slice(0, 12)} (${files} source files hashed); kernels will compile`);
  return { store, key, target, restored };
}

/** Records key, hit and seconds saved in probe.json (this process's own account of the restore). */
function recordKernels(runDir: string, c: CacheState): void {
  const p = readProbeJson(runDir);
  const kc = p.kernel_cache;
  const hit = !!c.restored && (kc.compiled ?? []).length === 0;
  p.kernel_cache = { ...kc, key: c.key, hit, seconds_saved: hit ? c.restored?.compile_seconds ?? null : null };
  writeAtomic(join(runDir, RUN_FILES.probe), JSON.stringify(p, null, 2) + '\n', false); // never through a link the probe left
}

/**
 * After the verdict, by this process, for a trusted run only: a fresh compile into the kernel
 * store, a reference-cache miss into the reference cache. An untrusted run only read them.
 */
function storeCaches(plan: Plan, probed: Probed, log: Log): void {
  const p = readProbeJson(probed.runDir);
  const c = probed.kernels;
  if (plan.cacheWrite === false) {
    if (c || p.reference.cache) log.step(`caches: read only (untrusted run${c?.restored || p.reference.cache?.hit ? '; cache hit (untrusted run)' : ''}); nothing stored`);
    return;
  }
  const compiled = p.kernel_cache.compiled ?? [];
  if (c && (!c.restored || compiled.length > 0) && existsSync(c.target)) {
    try {
      c.store.store(c.key, c.target, { model: p.model.name, created_at: new Date().toISOString(), compile_seconds: p.kernel_cache.compile_seconds ?? null });
      log.step(`kernel cache: stored ${c.key.slice(0, 12)} in ${c.store.root}`);
    } catch (e) {
      log.warn(`kernel cache: not stored (${fsError(e, c.store.root, 'cannot write').message})`);
    }
  }
  storeReferenceCache(plan, probed.runDir, p, log);
}

/** Runs `probe bisect` on a failed run dir. A crash here is reported in the bisect section, never turned into an error outcome. */
async function runBisect(plan: Plan, python: PythonInfo, runDir: string, log: Log): Promise<string | null> {
  log.step('bisect: swapping kernels to their CPU equivalents (the model\'s hook, or the CPU twins of its ELFs)');
  try {
    await runProbe(python, { subcommand: 'bisect', args: ['--run-dir', runDir], runDir, timeoutSec: plan.timeoutSec, extraEnv: plan.probeEnv },
      { onLine: (line) => log.step(`probe: ${line}`) });
    return null;
  } catch (e) {
    log.warn(`bisect did not finish: ${oneLine(e)}`);
    return oneLine(e);
  }
}

/** Where documents go: the plan's model dir, else the model dir recorded in the run dir when it exists here. */
function docsModelDir(plan: Plan, p: ProbeJson): string | null {
  if (plan.modelDir) return requireModelDir(plan.modelDir);
  const rel = p.model.dir;
  if (isAbsolute(rel) || rel.split(/[\\/]/).includes('..')) return null;
  const candidate = join(p.environment.air_root ?? '', rel);
  return p.environment.air_root && existsSync(candidate) ? candidate : null;
}

function commitOf(plan: Plan, p: ProbeJson): string {
  // Every source is a hex id or nothing (probe.json's is checked by its schema): a history row's key never carries a '|' or a newline.
  const sha = process.env.GITHUB_SHA;
  return plan.commit ?? p.environment.git_commit?.toLowerCase() ?? (sha && /^[0-9a-fA-F]{7,64}$/.test(sha) ? sha.toLowerCase() : null) ?? 'uncommitted';
}

/** report.json and report.md of an earlier judge of this run dir: removed before judging again, so a
 * stale verdict never outlives a judge that fails. */
function removeStaleReports(runDir: string): void {
  // Only in a run dir: one with a probe.json, or whose report.json is ours.
  const ours = existsSync(join(runDir, RUN_FILES.probe)) || (() => {
    try {
      return (JSON.parse(readDocument(join(runDir, RUN_FILES.report))?.toString('utf8') ?? '{}') as { schema?: unknown }).schema === REPORT_SCHEMA;
    } catch {
      return false;
    }
  })();
  if (!ours) return;
  for (const name of [RUN_FILES.report, RUN_FILES.markdown]) {
    const path = join(runDir, name);
    let st;
    try {
      st = lstatSync(path);
    } catch {
      continue;
    }
    if (st.isDirectory()) throw new InputError(`is a directory; the run dir's ${name} must be a file`, path);
    try {
      rmSync(path, { force: true });
    } catch (e) {
      throw fsError(e, path, 'cannot remove the report of an earlier judge');
    }
  }
}

/** A document as text (bytes that are not UTF-8 kept as escapes, see docs/text.ts), or null when absent. */
function readDoc(path: string): string | null {
  const b = readDocument(path);
  return b === null ? null : decodeDoc(b);
}

/** mode report: judge an existing run dir (no Python), then write report.json/report.md and the docs
 * as one transaction, only once the verdict is known. `python` (mode full) lets a failed block be
 * bisected on this host. On any error nothing is written (the documents are left byte for byte)
 * and no report.json is left in the run dir. */
export async function judge(plan: Plan, log: Log, python: PythonInfo | null = null, isolation: Report['isolation'] = null): Promise<CheckResult> {
  const runDir = resolve(plan.runDir);
  runDirReal(runDir);
  removeStaleReports(runDir);
  const p = readProbeJson(runDir);
  const cfg = p.model.config;
  const thresholds: Thresholds = {
    whole: WHOLE_COSINE_MIN,
    perPosition: plan.threshold ?? perPositionThreshold(cfg.head_dim),
    headDim: cfg.head_dim,
    overridden: plan.threshold !== null,
  };
  const realLen = p.prompt.real_len;
  const npu = openRunTensor(runDir, p.tensors.npu!, 'tensors.npu');
  let metrics: Metrics;
  try {
    const ref = openRunTensor(runDir, p.tensors.ref!, 'tensors.ref');
    try {
      if (ref.rows !== realLen) {
        throw new InputError(`reference has ${ref.rows} rows but probe.json says real_len ${realLen}`, ref.path);
      }
      // A broken reference is the HF side's failure: an error naming it, never a gate verdict on the NPU.
      const fault = referenceFault(ref, realLen);
      if (fault) throw new InfraError(`the reference is broken: ${fault}; not a verdict on the NPU`, ref.path);
      log.step(`judge: comparing ${npu.rows}x${npu.cols} NPU rows against ${ref.rows} reference rows`);
      metrics = await compare(npu, ref, { realLen, threshold: thresholds.perPosition });
    } finally {
      ref.close();
    }
  } finally {
    npu.close();
  }
  log.step(`judge: engine ${metrics.engine}, whole cosine ${metrics.wholeCosine.toFixed(6)}, per-position min ${metrics.perPosition.min.toFixed(6)}`);

  const gates = metricGates(metrics, thresholds);
  const blockFails = gates.some((g) => g.status === 'fail');
  const layers = p.layers ? await judgeLayers(runDir, p.layers, thresholds.perPosition) : null;
  if (layers) log.step(`judge: ${layers.length} layers (informational), lowest per-position min ${Math.min(...layers.map((l) => l.perPositionMin)).toFixed(6)}`);
  const lens = p.boundaries ? await judgeLens(runDir, p.boundaries, thresholds.perPosition) : null;
  const lensWarn = lens ? lensWarning(lens, !blockFails) : null;
  if (lens) logLens(lens, log);
  // The bisect runs on a failed gate, and also when the lens names a boundary under the threshold
  // while ffn_out passes (a bug the gate may be hiding): the launch-level table then names the launch.
  const bisect = blockFails ? await bisectFailure(plan, p, runDir, thresholds, metrics, python, log)
    : lens?.firstBelow ? await bisectLens(plan, p, runDir, thresholds, metrics, python, log) : null;
  const modelDir = plan.writeDocs ? docsModelDir(plan, p) : null;
  const phase2Path = modelDir ? join(modelDir, DOC_PATHS.phase2) : null;
  const todoPath = modelDir ? join(modelDir, DOC_PATHS.todo) : null;
  const oldPhase2 = phase2Path ? readDoc(phase2Path) : null;
  const oldTodo = todoPath ? readDoc(todoPath) : null;

  const report: Report = {
    schema: REPORT_SCHEMA,
    schema_version: REPORT_SCHEMA_VERSION,
    tool: TOOL,
    created_at: new Date().toISOString(),
    outcome: 'pass',
    exit_code: EXIT.pass,
    error: null,
    model: { name: p.model.name, dir: p.model.dir, hf_id: p.model.hf_id, config: cfg },
    commit: commitOf(plan, p),
    prompt: {
      style: p.prompt.style, text: p.prompt.text, source: p.prompt.source, real_len: p.prompt.real_len, padded_len: p.prompt.padded_len,
      ...(p.prompt.positions ? { positions: p.prompt.positions } : {}),
    },
    emulate: p.emulate ? { runtime: p.emulate.runtime, inject: p.emulate.inject } : null,
    thresholds,
    gates,
    metrics,
    warnings: [],
    integration: p.integration,
    isolation,
    defaults: p.defaults ?? null,
    reference: p.reference,
    environment: p.environment,
    kernel_cache: p.kernel_cache ?? null,
    bisect,
    layers,
    lens,
    timings: p.timings ?? {},
    docs: null,
    run_dir: runDir,
  };
  const baseline = phase2Path ? baselineFor(readHistory(oldPhase2, phase2Path), report) : null;
  report.warnings = warningsFor(metrics, baseline);
  if (lensWarn) report.warnings.push(lensWarn);

  // G4 is judged on what is about to be written; the documents record the verdict including it.
  const documented: Documented = modelDir
    ? { attempted: true, ok: true, path: DOC_PATHS.phase2, detail: `latest result and history row written${p.emulate ? ' (emulated run, marked so; TODO.md left as it is: no NPU ran)' : ''}` }
    : { attempted: false, ok: false, path: '', detail: plan.writeDocs ? 'model dir not available here; pass --model-dir to document' : 'not written in this run (documents turned off, or a pull request)' };
  report.gates = [...gates, documentationGate(documented)];
  report.outcome = outcomeOf(report.gates);
  report.exit_code = report.outcome === 'pass' ? EXIT.pass : EXIT.fail;

  // Every file's new content first (a refused marker stops here, before anything is written) ...
  const planned = phase2Path && todoPath ? planDocuments(report, phase2Path, oldPhase2, todoPath, oldTodo, !p.emulate) : null;
  const docs = planned?.result ?? null;
  report.docs = docs;
  const markdown = renderMarkdown(report, { flavor: 'summary' });
  // ... then all of them written, or none.
  commitWrites([
    ...(planned?.writes ?? []),
    { path: join(runDir, RUN_FILES.markdown), data: Buffer.from(markdown, 'utf8'), follow: false },
    { path: join(runDir, RUN_FILES.report), data: Buffer.from(toJson(report), 'utf8'), follow: false },
  ]);
  if (docs) {
    log.step(`docs: ${docs.changed ? 'updated' : 'unchanged'} ${docs.phase2} and ${docs.todo}`);
    for (const n of docs.notes ?? []) log.warn(`docs: ${n}`);
  }
  return { report, runDir, markdown, exitCode: report.exit_code as ExitCode, docs };
}

/** The lens on the progress log: how many boundaries, and the one it names. */
function logLens(lens: LensReport, log: Log): void {
  if (!lens.rows.length) {
    log.step(`judge: lens: no boundary pairs${lens.unpaired.length ? ` (${lens.unpaired.length} unpaired)` : ''}`);
    return;
  }
  const lowest = Math.min(...lens.rows.map((r) => Math.min(r.wholeCosine, r.perPositionMin)));
  log.step(`judge: lens: ${lens.rows.length} boundaries, lowest ${lowest.toFixed(6)}${lens.firstBelow ? `; first under the threshold: ${lens.firstBelow.name}` : ''}`);
}

/**
 * The block passes but the lens names a boundary under the threshold: bisect on this host when it
 * can, else judge a bisect the run dir holds; null when there is none (nothing failed to explain).
 */
async function bisectLens(plan: Plan, p: ProbeJson, runDir: string, th: Thresholds, metrics: Metrics, python: PythonInfo | null, log: Log): Promise<BisectReport | null> {
  if (python && plan.bisect !== false) {
    const crashed = await runBisect(plan, python, runDir, log);
    if (crashed) return { available: false, reason: `probe bisect failed: ${crashed}`, hook: null, steps: [], offender: null, situation: null };
  }
  const b = await judgeBisect(runDir, tensorPath(runDir, p.tensors.ref!), p.prompt.real_len, th, metrics, true);
  if (b?.launchOffender) log.step(`bisect: first launch off its twin: ${b.launchOffender.launch} (${b.launchOffender.buffer})`);
  return b;
}

/** On a failed gate: bisect on this host when it can (mode full), else judge a bisect the run dir holds, else say why not. */
async function bisectFailure(plan: Plan, p: ProbeJson, runDir: string, th: Thresholds, metrics: Metrics, python: PythonInfo | null, log: Log): Promise<BisectReport> {
  const unavailable = (reason: string): BisectReport => ({ available: false, reason, hook: null, steps: [], offender: null, situation: situationOf(metrics) });
  if (python && plan.bisect !== false) {
    const crashed = await runBisect(plan, python, runDir, log);
    if (crashed) return unavailable(`probe bisect failed: ${crashed}`);
  }
  const b = await judgeBisect(runDir, tensorPath(runDir, p.tensors.ref!), p.prompt.real_len, th, metrics);
  if (!b) {
    return unavailable(plan.bisect === false ? 'bisect turned off (--no-bisect)' : 'bisect runs on the NPU host (mode full); this run dir holds no bisect/bisect.json');
  }
  if (b.offender) log.step(`bisect: offending boundary ${b.offender.step} (${b.offender.kernel})`);
  if (b.launchOffender) log.step(`bisect: first launch off its twin: ${b.launchOffender.launch} (${b.launchOffender.buffer})`);
  return b;
}

/**
 * The new phase2_block.md and TODO.md, as writes for the transaction (only the files whose bytes
 * change). `todo` false (an emulated run): TODO.md is left as it is; no NPU ran, so Phase 2 is
 * neither done nor blocked by it.
 */
function planDocuments(report: Report, phase2Path: string, oldPhase2: string | null, todoPath: string, oldTodo: string | null, withTodo = true): { writes: PlannedWrite[]; result: DocsResult } {
  const newPhase2 = updatePhase2(oldPhase2, report, renderMarkdown(report, { flavor: 'doc' }), phase2Path);
  const todo = withTodo ? updateTodo(oldTodo, report, todoPath) : null;
  const writes: PlannedWrite[] = [];
  if (newPhase2 !== oldPhase2) writes.push({ path: phase2Path, data: encodeDoc(newPhase2) });
  if (todo && todo.text !== oldTodo) writes.push({ path: todoPath, data: encodeDoc(todo.text) });
  return { writes, result: { phase2: phase2Path, todo: todoPath, changed: writes.length > 0, ...(todo?.notes.length ? { notes: todo.notes } : {}) } };
}

/** mode full: probe, judge the run dir it wrote, then (trusted runs) store what the caches missed. */
export async function runCheck(plan: Plan, log: Log): Promise<CheckResult> {
  const probed = await probe(plan, log);
  const result = await judge(plan, log, probed.python, probed.isolation);
  storeCaches(plan, probed, log);
  return result;
}

/** The report for a run that could not be judged: outcome error, never a FAIL verdict. */
export function errorReport(plan: Plan, message: string, exitCode: ExitCode): Report {
  return {
    schema: REPORT_SCHEMA,
    schema_version: REPORT_SCHEMA_VERSION,
    tool: TOOL,
    created_at: new Date().toISOString(),
    outcome: 'error',
    exit_code: exitCode,
    error: message,
    model: { name: plan.modelDir ? basename(resolve(plan.modelDir)) : 'unknown', dir: plan.modelDir ?? '', hf_id: null, config: null },
    commit: plan.commit ?? process.env.GITHUB_SHA ?? 'uncommitted',
    prompt: null,
    thresholds: { whole: WHOLE_COSINE_MIN, perPosition: plan.threshold ?? NaN, headDim: NaN, overridden: plan.threshold !== null },
    gates: [],
    metrics: null,
    warnings: [],
    integration: null,
    reference: null,
    environment: null,
    kernel_cache: null,
    bisect: null,
    layers: null,
    timings: {},
    docs: null,
    run_dir: resolve(plan.runDir),
  };
}
