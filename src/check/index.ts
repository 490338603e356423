// The one check both faces run (DESIGN.md "Shape"): from a validated Plan to a verdict.
//   probe (full mode; isolated) -> measure the run dir -> bisect (when a gate fails or the lens names
//   a boundary, and the probe ran here) -> read the documents -> verdict (pure) -> write the
//   documents and the report (all or none; the Action proposes the documents through a PR first)
//   -> store the caches (trusted runs only, after the verdict).
// The CLI prints the record; the Action adds its GitHub effects (artifact, summary, comment,
// outputs). Neither changes the record: a later fact means a new verdict.
import { basename, isAbsolute, join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { EXIT, GateError, InfraError, InputError, fsError, type ExitCode } from '../errors.ts';
import type { Log } from '../log.ts';
import type { Plan } from '../plan.ts';
import { ChangedSinceRead, commitWrites, type PlannedWrite } from '../fs/atomic.ts';
import type { Lock } from '../fs/lock.ts';
import type { ProbeJson } from '../rundir/schema.ts';
import { storeReference } from '../cache/reference.ts';
import { plain } from '../text/escape.ts';
import type { DocsResult, IsolationRow, Report } from '../record/report.ts';
import { measure, wantsBisect, withBisect, type Measured } from '../judge/measure.ts';
import { verdict, errorVerdict, type VerdictContext } from '../judge/verdict.ts';
import { ranBy } from '../bisect/judge.ts';
import { modelDirAt } from './model-dir.ts';
import { holdRunDir, removeStaleReports } from './rundir.ts';
import { probe, bisectStep, refCacheRoot, type Probed } from './probe.ts';
import type { IsolationHost } from '../probe/isolate.ts';
import { storeKernels } from './kernels.ts';
import {
  baselineIn, documentedPlan, historyIn, isDocsError, lockDocs, logDocs, planDocs, readDocs, reportWrites, runDirUnwritable, sweepDocs, type OldDocs, type Rendered,
} from './documents.ts';
import { DOC_PATHS } from '../docs/markers.ts';
import { RUN_FILES } from '../rundir/schema.ts';

export { probe, planModel, runOptions, type Probed } from './probe.ts';

/** Rounds of read, merge and write a document may be edited through before the run refuses, naming it. */
const CHANGED_TRIES = 5;

export interface CheckDeps {
  log: Log;
  now?: () => Date;
  /** Where GITHUB_SHA is read (the history row's commit when nothing else names it). */
  env?: NodeJS.ProcessEnv;
  /** How the judged run dir's probe was isolated, when this process did not run it (the Action's
   * report job: what the probe job's github.json says). */
  isolation?: IsolationRow | null;
  /** How the machine is asked which isolation it offers (tests stand in a host where bubblewrap is refused). */
  isolationHost?: IsolationHost;
  /** The Action: once the documents are written into the checkout, record them (the docs PR).
   * Returns null when recorded, else why not (G4 then says so, as a skip and a warning). */
  proposeDocs?: (docs: DocsResult, report: Report) => Promise<string | null>;
}

export interface CheckResult {
  report: Report;
  runDir: string;
  /** report.md as written into the run dir (the summary flavour). */
  markdown: string;
  /** report.json as written into the run dir (what `--json` prints). */
  json: string;
  exitCode: ExitCode;
  docs: DocsResult | null;
  /** The probe step's facts (mode full); null when an existing run dir was judged. */
  probed: Probed | null;
  /** The documents could not be written (the verdict stands; report.docs is null): why. */
  docsError: GateError | null;
}

/** The run dir must be about the model dir it is judged for: probe.json's model name is the model dir's own. */
function checkModelName(p: ProbeJson, modelDir: string): void {
  const want = modelDirAt(modelDir).name;
  if (p.model.name !== want) {
    throw new InputError(`model.name ${JSON.stringify(plain(p.model.name, 64))} is not the model dir's name ${JSON.stringify(want)}; refusing a run dir for another model`, 'probe.json');
  }
}

/** Where documents go: the plan's model dir, else (the CLI's report) the model dir the run dir recorded, when it exists here. */
function docsModelDir(plan: Plan, p: ProbeJson): string | null {
  if (plan.modelDir) return modelDirAt(plan.modelDir).dir;
  const rel = p.model.dir;
  if (!p.environment.air_root || isAbsolute(rel) || rel.split(/[\\/]/).includes('..')) return null;
  const candidate = join(p.environment.air_root, rel);
  return existsSync(candidate) ? candidate : null;
}

/** "a", "a and b", "a, b and c". */
function andList(xs: string[]): string {
  return xs.length > 1 ? `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}` : xs.join('');
}

/** The history row's commit: the plan's, else the tree's HEAD the probe saw, else GITHUB_SHA. */
function commitOf(plan: Plan, p: ProbeJson, env: NodeJS.ProcessEnv): string {
  // Every source is a hex id or nothing (probe.json's is checked by its schema): a row's key never carries a '|' or a newline.
  const sha = env.GITHUB_SHA;
  return plan.commit ?? p.environment.git_commit?.toLowerCase() ?? (sha && /^[0-9a-fA-F]{7,64}$/.test(sha) ? sha.toLowerCase() : null) ?? 'uncommitted';
}

/** After the verdict, by this process, for a trusted run only: a fresh compile and a reference-cache miss stored. */
function storeCaches(plan: Plan, probed: Probed, p: ProbeJson, now: Date, log: Log): void {
  const c = probed.kernels;
  if (plan.cacheWrite === false) {
    if (c || p.reference.cache) log.step(`caches: read only (untrusted run${c?.restored || p.reference.cache?.hit ? '; cache hit' : ''}); nothing stored`);
    return;
  }
  if (c) storeKernels(c, p, now, log);
  const root = refCacheRoot(plan);
  const rc = p.reference.cache;
  if (!root || !rc || rc.hit) return;
  try {
    const r = storeReference(root, probed.runDir, p);
    if (r.stored) log.step(`reference cache: stored ${rc.key.slice(0, 12)} (layers ${r.layers.join(', ')}${r.boundaries ? `; ${r.boundaries.length} boundaries` : ''}) in ${root}`);
    else log.step(`reference cache: not stored (${r.why})`);
  } catch (e) {
    log.warn(`reference cache: not stored (${fsError(e, root, 'cannot write').message})`);
  }
}

/** Runs the bisect step when one applies and the probe ran here; the measurements with it read. */
async function bisected(plan: Plan, probed: Probed | null, m: Measured, log: Log): Promise<{ m: Measured; failed: string | null }> {
  if (!probed || plan.bisect === false || !wantsBisect(m)) return { m, failed: null };
  const failed = await bisectStep(plan, probed, m.runDir, log);
  if (failed) return { m, failed };
  const withB = await withBisect(m, log);
  return { m: withB.bisect ? { ...withB, bisect: ranBy(withB.bisect, probed.python.command) } : withB, failed: null };
}

/**
 * The check: mode full probes first, mode report judges the run dir the plan names. Throws a
 * GateError (input, infrastructure) when no verdict can be reached; the faces turn it into an
 * error record (errorVerdict) that is never a FAIL.
 */
export async function check(plan: Plan, deps: CheckDeps): Promise<CheckResult> {
  if (plan.mode === 'probe') throw new InputError('mode probe only runs the probe (probe()); check() reaches a verdict');
  // A run dir belongs to one run: a check holds it from before the probe to the last report file
  // (and refuses one in use); a report waits until no run holds it, then holds it while it judges.
  const runDir = resolve(plan.runDir);
  const hold = await holdRunDir(runDir, plan.mode === 'full' ? 'refuse' : 'wait', deps.log);
  try {
    return await checkHeld(plan, deps, runDir);
  } finally {
    hold.release();
  }
}

async function checkHeld(plan: Plan, deps: CheckDeps, runDir: string): Promise<CheckResult> {
  const { log } = deps;
  const probed = plan.mode === 'full' ? await probe(plan, log, deps.isolationHost) : null;
  try {
    return await judged(plan, deps, probed, runDir);
  } finally {
    // What the probe left outside the run dir (its staging area) goes, whoever owns it.
    probed?.release(log);
  }
}

async function judged(plan: Plan, deps: CheckDeps, probed: Probed | null, runDir: string): Promise<CheckResult> {
  const { log } = deps;
  const now = deps.now ?? (() => new Date());
  const env = deps.env ?? process.env;
  const staleKept = removeStaleReports(runDir);
  const measured = await measure(runDir, plan.threshold, log);
  if (plan.modelDir) checkModelName(measured.probe, plan.modelDir);
  const { m, failed } = await bisected(plan, probed, measured, log);
  const p = m.probe;

  // A run dir on read-only media is judged all the same: the verdict is printed (and returned),
  // and the report files that cannot be written are named.
  const unwritable = runDirUnwritable(runDir);
  const unwritten = unwritable
    ? `${RUN_FILES.report}, ${RUN_FILES.markdown} and ${RUN_FILES.html} were not written (${unwritable})${staleKept.length ? `; an earlier judge's ${andList(staleKept.map((x) => basename(x)))} could not be removed and may not match this verdict` : ''}`
    : null;
  if (unwritten) log.warn(unwritten);
  const docsDir = plan.writeDocs ? docsModelDir(plan, p) : null;
  // One run at a time reads, merges and renames a model dir's documents (two runs at once would
  // each write their own history row over the other's). A lock that cannot be taken (held by a
  // live run on another host, a wait that timed out, a full disk) never costs the verdict: it is a
  // documents failure like a read-only file, and the report is written and printed all the same.
  let docsError: GateError | null = null;
  let lock: Lock | null = null;
  if (docsDir) {
    try {
      lock = await lockDocs(docsDir, log, { breakLock: plan.breakLock });
    } catch (e) {
      if (!isDocsError(e, docsDir, runDir)) throw e;
      docsError = e;
    }
  }
  try {
    sweepDocs(lock ? docsDir : null, runDir, log, !!plan.confineDocs);
    const commit = commitOf(plan, p, env);
    let old: OldDocs | null = null;
    try {
      old = docsDir && !docsError ? readDocs(docsDir, !!plan.confineDocs) : null;
    } catch (e) {
      if (!isDocsError(e, docsDir, runDir)) throw e;
      docsError = e;
    }
    const documented = documentedPlan(old, !!p.emulate, plan.writeDocs ? 'model dir not available here; pass --model-dir to document' : plan.docsSkipped ?? 'not written in this run (documents turned off: --no-docs)');
    const ctx: VerdictContext = {
      now: now(), commit,
      isolation: probed?.isolation ?? deps.isolation ?? null,
      unisolatedFallback: probed?.unisolatedFallback ?? null,
      baseline: null,
      documented, docs: null,
      bisectFailed: failed,
      bisectUnavailable: plan.bisect === false ? 'bisect turned off (--no-bisect)' : 'bisect runs on the NPU host (mode full); this run dir holds no bisect/bisect.json',
      unwritten,
    };
    try {
      ctx.baseline = baselineIn(old, { commit, prompt: p.prompt, emulate: p.emulate, environment: p.environment, metrics: m.metrics });
    } catch (e) {
      if (!isDocsError(e, docsDir, runDir)) throw e;
      docsError = e;
    }
    /** The record with the documents failed: the verdict stands, G4 says why, the run exits with the failure's code. */
    const withoutDocs = (e: GateError): Report => verdict(m, {
      ...ctx, docs: null,
      documented: { attempted: true, ok: false, path: DOC_PATHS.phase2, detail: e.message, failed: { message: e.message, exitCode: e.exitCode === EXIT.infra ? EXIT.infra : EXIT.input } },
    });
    const reportOnly = (r: Report): Rendered => {
      const rw = reportWrites(r, runDir, historyIn(old));
      if (!unwritten) commitWrites(rw.writes);
      return rw;
    };
    /** Every document's new content, from the verdict they record (a refused marker stops here, before anything is written). */
    const plannedFrom = (o: OldDocs): ReturnType<typeof planDocs> | null => {
      try {
        return planDocs(verdict(m, ctx), o, !p.emulate);
      } catch (e) {
        if (!isDocsError(e, docsDir, runDir)) throw e;
        docsError = e;
        return null;
      }
    };
    /**
     * Writes the documents (and `also`), all or none. A document edited since it was read (a hand
     * edit saved meanwhile) is read again and merged again, never overwritten; after
     * CHANGED_TRIES such rounds the run refuses, naming the file.
     */
    const placeDocs = (first: NonNullable<ReturnType<typeof planDocs>>, also: (docs: DocsResult) => PlannedWrite[]): NonNullable<ReturnType<typeof planDocs>> => {
      let planned = first;
      for (let tries = 1; ; tries++) {
        try {
          commitWrites([...planned.writes, ...also(planned.result)]);
          return planned;
        } catch (e) {
          if (!(e instanceof ChangedSinceRead) || !docsDir) throw e;
          if (tries >= CHANGED_TRIES) throw new InfraError(`changed while npu-block-gate was writing it, ${tries} times in a row (an editor saving it over and over?); nothing was changed: save your edit, then re-judge this run dir`, e.file);
          log.step(`docs: ${e.file} changed since it was read (an edit saved meanwhile): reading it again and merging again`);
          const again = readDocs(docsDir, !!plan.confineDocs);
          const next = plannedFrom(again);
          if (!next) throw docsError!;
          planned = next;
        }
      }
    };
    let report: Report;
    let rendered: Rendered;
    const planned = old && !docsError ? plannedFrom(old) : null;
    if (docsError) {
      report = withoutDocs(docsError);
      rendered = reportOnly(report);
    } else if (!planned || !deps.proposeDocs) {
      // ... then the documents and the report written, all or none. Documents that cannot be
      // written (read-only, disk full, edited over and over) leave the verdict standing: the
      // report alone is written.
      let rw: ReturnType<typeof reportWrites> | null = null;
      try {
        if (planned) {
          placeDocs(planned, (docs) => {
            report = verdict(m, { ...ctx, docs });
            rw = reportWrites(report, runDir, historyIn(old));
            return unwritten ? [] : rw.writes;
          });
        } else {
          report = verdict(m, { ...ctx, docs: null });
          rw = reportWrites(report, runDir, historyIn(old));
          if (!unwritten) commitWrites(rw.writes);
        }
        rendered = rw!;
      } catch (e) {
        if (!isDocsError(e, docsDir, runDir)) throw e;
        docsError = e;
        report = withoutDocs(e);
        rendered = reportOnly(report);
      }
    } else {
      // The Action: the documents into the checkout, proposed through the docs PR; the report records
      // whether that worked.
      const placed = placeDocs(planned, () => []);
      report = verdict(m, { ...ctx, docs: placed.result });
      const refused = await deps.proposeDocs(placed.result, report);
      if (refused !== null) report = verdict(m, { ...ctx, docs: placed.result, documented: { ...documented, refused } });
      rendered = reportOnly(report);
    }
    logDocs(report!.docs, log);
    if (probed) storeCaches(plan, probed, p, ctx.now, log);
    return { report: report!, runDir, markdown: rendered.markdown, json: rendered.json, exitCode: report!.exit_code as ExitCode, docs: report!.docs, probed, docsError };
  } finally {
    lock?.release();
  }
}

/** The record of a plan that could not be judged: outcome error, never a FAIL verdict. */
export function errorReport(plan: Plan, message: string, exitCode: ExitCode, o: { now?: Date; env?: NodeJS.ProcessEnv; isolation?: IsolationRow | null } = {}): Report {
  return errorVerdict({
    now: o.now ?? new Date(), message, exitCode,
    model: { name: plan.modelDir ? basename(resolve(plan.modelDir)) : 'unknown', dir: plan.modelDir ?? '' },
    commit: plan.commit ?? (o.env ?? process.env).GITHUB_SHA ?? 'uncommitted',
    threshold: plan.threshold, runDir: resolve(plan.runDir), isolation: o.isolation ?? null,
  });
}
