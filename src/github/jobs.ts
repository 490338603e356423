// The Action's three jobs for one model, each the one check() plus the Action's GitHub effects:
//  - full:   check() (probe, judge, documents proposed through the docs PR, caches on trusted runs);
//  - probe:  the probe step only; the run dir goes up as an artifact with github.json (the event,
//            how the probe was isolated, and its error when it could not finish);
//  - report: the probe job's run dir downloaded and checked to be that run's and that model's, then
//            check() on it (no project code runs here).
// Then what the Action adds (effects.ts): annotations, the artifact, the job summary, the sticky
// comment, the docs PR. What a job asks of the world outside GitHub (check, probe, the run-dir
// fetch) goes through the port (ports.ts): main.ts passes the real ones.
import * as core from '@actions/core';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { GateError, InfraError, EXIT, oneLine, type ExitCode } from '../errors.ts';
import type { Plan } from '../plan.ts';
import { errorReport } from '../check/index.ts';
import { RUN_FILES } from '../rundir/schema.ts';
import type { JudgedCommit } from '../report/github.ts';
import type { IsolationRow } from '../record/report.ts';
import { gitFor } from './git.ts';
import { writeMeta, probeJobError, type RunMeta } from './split.ts';
import type { ModelResult } from './outputs.ts';
import { actionLog, keyOf, out, planFor, type Session } from './session.ts';
import type { Ports } from './ports.ts';
import { docsProposer, probedJobSummary, publish, restoreDocs, upload, type Published, type Reached } from './effects.ts';

export async function runModel(s: Session, modelDir: string, ports: Ports): Promise<ModelResult> {
  const key = keyOf(s, modelDir);
  const plan = planFor(s, modelDir, key);
  core.startGroup(`npu-block-gate: ${key} (mode ${plan.mode})`);
  try {
    if (plan.mode === 'probe') return await probeJob(s, ports, plan, modelDir, key);
    if (plan.mode === 'report') return await reportJob(s, ports, plan, modelDir, key);
    return await fullJob(s, ports, plan, modelDir, key);
  } finally {
    core.endGroup();
  }
}

/** An error as the record says it: outcome error, never a FAIL verdict; logged as an annotation. */
function errored(plan: Plan, key: string, e: unknown, isolation: IsolationRow | null = null): Extract<Reached, { kind: 'error' }> {
  if (!(e instanceof GateError)) out.debug((e as Error)?.stack ?? String(e));
  const exitCode: ExitCode = e instanceof GateError ? e.exitCode : EXIT.infra;
  const message = oneLine(e);
  out.error(`${key}: ${message}`, `npu-block-gate could not judge ${key} (${exitCode === EXIT.input ? 'bad input' : 'infrastructure'}; not a FAIL)`);
  return { kind: 'error', report: errorReport(plan, message, exitCode, { isolation }), message, exitCode, runDir: existsSync(plan.runDir) ? plan.runDir : null };
}

/** The one ModelResult of a job, built once from what it reached and what it published. */
function resultOf(modelDir: string, key: string, r: Reached, p: Published): ModelResult {
  const common = {
    modelDir, key,
    artifactName: p.artifact?.name ?? null, artifactUrl: p.artifact?.url ?? null,
    commentUrl: p.commentUrl, docsPrUrl: p.docsPr?.url ?? null, docsPrNumber: p.docsPr?.number ?? null,
  };
  if (r.kind === 'judged') {
    const { report, runDir, exitCode } = r.result;
    return { ...common, outcome: report.outcome, exitCode, report, reportPath: join(runDir, RUN_FILES.report), runDir, error: null, isolation: report.isolation };
  }
  if (r.kind === 'probed') return { ...common, outcome: 'probed', exitCode: EXIT.pass, report: null, reportPath: null, runDir: r.runDir, error: null, isolation: r.isolation };
  return { ...common, outcome: 'error', exitCode: r.exitCode, report: r.report, reportPath: null, runDir: r.runDir, error: r.message, isolation: r.report.isolation };
}

async function checkoutSha(s: Session, dir: string): Promise<string | null> {
  try {
    return await gitFor(s.workspace, existsSync(dir) ? dir : null).head();
  } catch {
    return null;
  }
}

// ----- the three jobs ----------------------------------------------------------------------------

async function fullJob(s: Session, ports: Ports, plan: Plan, modelDir: string, key: string): Promise<ModelResult> {
  const judged: JudgedCommit = { head: s.trust.judged.headSha, merge: s.trust.mergeSha, checkout: await checkoutSha(s, modelDir) };
  let docsPr: Published['docsPr'] = null;
  let reached: Reached;
  try {
    if (plan.writeDocs && plan.modelDir) await restoreDocs(s, plan.modelDir, key);
    const proposeDocs = docsProposer(s, plan, key, judged, (pr) => { docsPr = pr; });
    reached = { kind: 'judged', result: await ports.check(plan, { log: actionLog, proposeDocs }) };
  } catch (e) {
    reached = errored(plan, key, e);
  }
  const published = await publish(s, plan, key, reached, { prNumber: s.ctx.pr?.number ?? null, judged });
  return resultOf(modelDir, key, reached, { ...published, docsPr });
}

async function reportJob(s: Session, ports: Ports, plan: Plan, modelDir: string, key: string): Promise<ModelResult> {
  let reached: Reached;
  let prNumber: number | null = null;
  let meta: RunMeta | null = null;
  let docsPr: Published['docsPr'] = null;
  let judgedPlan = plan;
  try {
    const got = await ports.fetchRunDir(s, key);
    judgedPlan = { ...plan, runDir: got.dir };
    prNumber = got.prNumber;
    meta = got.meta;
    const pe = probeJobError(got.meta);
    if (pe) throw new GateError(pe.message, pe.exitCode as ExitCode);
    if (plan.writeDocs && plan.modelDir) await restoreDocs(s, plan.modelDir, key);
    const judged = judgedOf(s, meta);
    const proposeDocs = docsProposer(s, plan, key, judged, (pr) => { docsPr = pr; });
    reached = { kind: 'judged', result: await ports.check(judgedPlan, { log: actionLog, proposeDocs, isolation: isolationOf(meta) }) };
  } catch (e) {
    reached = errored(judgedPlan, key, e, meta ? isolationOf(meta) : null);
  }
  const published = await publish(s, judgedPlan, key, reached, { prNumber, judged: judgedOf(s, meta) });
  return resultOf(modelDir, key, reached, { ...published, docsPr });
}

/** Which commit a report job judged: the triggering run's head, and what its probe job had checked out. */
function judgedOf(s: Session, meta: RunMeta | null): JudgedCommit {
  return {
    head: s.trust.judged.headSha,
    merge: meta?.event === 'pull_request' && meta.sha && meta.sha !== s.trust.judged.headSha ? meta.sha : null,
    checkout: meta?.checkout_sha ?? null,
  };
}

/** The probe job's account of its isolation (github.json: untrusted, validated, marked as its word). */
export function isolationOf(meta: RunMeta): IsolationRow | null {
  return meta.isolation ? { mode: meta.isolation.mode, detail: meta.isolation.detail, source: 'probe job', ...(meta.isolation.degraded ? { degraded: meta.isolation.degraded } : {}) } : null;
}

async function probeJob(s: Session, ports: Ports, plan: Plan, modelDir: string, key: string): Promise<ModelResult> {
  if (s.inputs.comment && s.ctx.pr) out.info('mode probe: the PR comment is posted by the mode report job');
  let reached: Reached;
  try {
    const probed = await ports.probe(plan, actionLog);
    reached = { kind: 'probed', runDir: probed.runDir, isolation: probed.isolation };
  } catch (e) {
    reached = errored(plan, key, e);
  }
  const error = reached.kind === 'error' ? { message: reached.message, exitCode: reached.exitCode } : null;
  const isolation = reached.kind === 'probed' ? reached.isolation : null;
  // The run dir goes up even when the probe failed: github.json carries the error and probe.log
  // explains it, so the report job can tell the pull request ERROR instead of nothing.
  writeMeta(plan.runDir, s.ctx, s.trust, key, { checkoutSha: await checkoutSha(s, modelDir), error, isolation });
  let artifact: Published['artifact'] = null;
  try {
    if (!s.store) throw new InfraError('mode probe hands the run dir to the report job as an artifact, but there is no artifact service here (ACTIONS_RUNTIME_TOKEN is unset)');
    artifact = await upload(s, key, plan.runDir);
  } catch (e) {
    if (reached.kind !== 'error') reached = errored(plan, key, e, isolation);
    else out.warning(`artifact upload failed: ${oneLine(e)}`);
  }
  await probedJobSummary(key, reached, artifact);
  return resultOf(modelDir, key, reached, { artifact, commentUrl: null, docsPr: null });
}

// ----- publishing ---------------------------------------------------------------------------------

