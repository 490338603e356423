// The Action's three jobs for one model, each the one check() plus the Action's GitHub effects:
//  - full:   check() (probe, judge, documents proposed through the docs PR, caches on trusted runs);
//  - probe:  the probe step only; the run dir goes up as an artifact with github.json (the event,
//            how the probe was isolated, and its error when it could not finish);
//  - report: the probe job's run dir downloaded and checked to be that run's and that model's, then
//            check() on it (no project code runs here).
// Then what the Action adds: annotations, the artifact, the job summary, the sticky comment, outputs.
import * as core from '@actions/core';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { GateError, InfraError, EXIT, oneLine, type ExitCode } from '../errors.ts';
import type { Plan } from '../plan.ts';
import { check, errorReport, probe, type CheckDeps, type CheckResult } from '../check/index.ts';
import { RUN_FILES } from '../rundir/schema.ts';
import { DOC_PATHS } from '../docs/markers.ts';
import { renderMarkdown } from '../report/markdown.ts';
import { commentContent, docsPrText, probedSummary, summaryText, type JudgedCommit } from '../report/github.ts';
import { plain } from '../text/escape.ts';
import type { IsolationRow, Report } from '../record/report.ts';
import { classifyWriteError } from './api.ts';
import { artifactName, pickArtifact, freshDir, removeDir } from './artifact.ts';
import { takeRunFiles } from '../probe/staging.ts';
import { marker, resultDigest, truncateBody, upsertComment, COMMENT_BUDGET } from './comment.ts';
import { gitFor, type Git } from './git.ts';
import { docsBranch, restoreRecordedDocs, upsertDocsPr, DocsPrRefused } from './docs-pr.ts';
import { writeMeta, verifyMeta, resolvePr, probeJobError, type RunMeta } from './split.ts';
import type { ModelResult } from './outputs.ts';
import { actionLog, docsBase, keyOf, loginFor, out, planFor, type Session } from './session.ts';

/** Job summaries hold at most 1 MiB per step. */
const SUMMARY_BUDGET = 1_000_000;

/** What a job reached: a verdict, the probe's run dir (mode probe), or an error (never a FAIL). */
type Reached =
  | { kind: 'judged'; result: CheckResult }
  | { kind: 'probed'; runDir: string; isolation: IsolationRow }
  | { kind: 'error'; report: Report; message: string; exitCode: ExitCode; runDir: string | null };

/** What the Action's own effects produced. */
interface Published {
  artifact: { name: string; url: string | null } | null;
  commentUrl: string | null;
  docsPr: { url: string | null; number: number | null } | null;
}

export async function runModel(s: Session, modelDir: string): Promise<ModelResult> {
  const key = keyOf(s, modelDir);
  const plan = planFor(s, modelDir, key);
  core.startGroup(`npu-block-gate: ${key} (mode ${plan.mode})`);
  try {
    if (plan.mode === 'probe') return await probeJob(s, plan, modelDir, key);
    if (plan.mode === 'report') return await reportJob(s, plan, modelDir, key);
    return await fullJob(s, plan, modelDir, key);
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

async function fullJob(s: Session, plan: Plan, modelDir: string, key: string): Promise<ModelResult> {
  const judged: JudgedCommit = { head: s.trust.judged.headSha, merge: s.trust.mergeSha, checkout: await checkoutSha(s, modelDir) };
  let docsPr: Published['docsPr'] = null;
  let reached: Reached;
  try {
    if (plan.writeDocs && plan.modelDir) await restoreDocs(s, plan.modelDir, key);
    const proposeDocs = docsProposer(s, plan, key, judged, (pr) => { docsPr = pr; });
    reached = { kind: 'judged', result: await check(plan, { log: actionLog, proposeDocs }) };
  } catch (e) {
    reached = errored(plan, key, e);
  }
  const published = await publish(s, plan, key, reached, { prNumber: s.ctx.pr?.number ?? null, judged });
  return resultOf(modelDir, key, reached, { ...published, docsPr });
}

async function reportJob(s: Session, plan: Plan, modelDir: string, key: string): Promise<ModelResult> {
  let reached: Reached;
  let prNumber: number | null = null;
  let meta: RunMeta | null = null;
  let docsPr: Published['docsPr'] = null;
  let judgedPlan = plan;
  try {
    const got = await fetchRunDir(s, key);
    judgedPlan = { ...plan, runDir: got.dir };
    prNumber = got.prNumber;
    meta = got.meta;
    const pe = probeJobError(got.meta);
    if (pe) throw new GateError(pe.message, pe.exitCode as ExitCode);
    if (plan.writeDocs && plan.modelDir) await restoreDocs(s, plan.modelDir, key);
    const judged = judgedOf(s, meta);
    const proposeDocs = docsProposer(s, plan, key, judged, (pr) => { docsPr = pr; });
    reached = { kind: 'judged', result: await check(judgedPlan, { log: actionLog, proposeDocs, isolation: isolationOf(meta) }) };
  } catch (e) {
    reached = errored(judgedPlan, key, e, meta ? isolationOf(meta) : null);
  }
  const published = await publish(s, judgedPlan, key, reached, { prNumber, judged: judgedOf(s, meta) });
  return resultOf(modelDir, key, reached, { ...published, docsPr });
}

/** check()'s docs step for a plan that records documents: the docs PR, its URL handed to `opened`. */
function docsProposer(s: Session, plan: Plan, key: string, judged: JudgedCommit, opened: (pr: NonNullable<Published['docsPr']>) => void): CheckDeps['proposeDocs'] {
  if (!plan.writeDocs || !plan.modelDir) return undefined;
  const modelDir = plan.modelDir;
  return async (_docs, report) => {
    const r = await recordDocs(s, key, report, modelDir, judged);
    if ('refused' in r) return r.refused;
    opened(r);
    return null;
  };
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

async function probeJob(s: Session, plan: Plan, modelDir: string, key: string): Promise<ModelResult> {
  if (s.inputs.comment && s.ctx.pr) out.info('mode probe: the PR comment is posted by the mode report job');
  let reached: Reached;
  try {
    const probed = await probe(plan, actionLog);
    probed.release(actionLog); // mode probe judges nothing here: no bisect reads the staging area
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
  if (reached.kind === 'probed') await core.summary.addRaw(probedSummary(key, artifact?.name ?? null, reached.isolation)).write();
  else await core.summary.addRaw(renderMarkdown(reached.report, { flavor: 'summary', artifactUrl: artifact?.url ?? undefined })).addEOL().write();
  return resultOf(modelDir, key, reached, { artifact, commentUrl: null, docsPr: null });
}

/** mode report: the probe job's run dir from the judged run, checked to be that run's and this model's. */
async function fetchRunDir(s: Session, key: string): Promise<{ dir: string; meta: RunMeta; prNumber: number | null }> {
  const j = s.trust.judged;
  if (!j.runId) throw new InfraError("mode report needs a workflow_run event or the 'run-id' input to find the probe job's artifact");
  if (!j.headSha) throw new InfraError(`run ${j.runId} has no head commit to check the artifact against`);
  if (!s.store) throw new InfraError('mode report needs the artifact service (ACTIONS_RUNTIME_TOKEN) to download the run dir');
  const ref = { owner: s.ctx.owner, repo: s.ctx.repo, runId: j.runId, token: s.inputs.token };
  const found = pickArtifact(await s.store.list(ref), s.inputs.artifactName, key, j.runAttempt);
  if (!found) {
    const why = j.conclusion && j.conclusion !== 'success' ? ` (that run's conclusion is ${j.conclusion}: see its log)` : '';
    throw new InfraError(`no artifact named ${artifactName(s.inputs.artifactName, key, null, j.runAttempt)} (or a matrix leg of it) in run ${j.runId}${why}; did the mode probe job upload one?`);
  }
  const dir = await freshDir('nbg-run-');
  await s.store.download(ref, found, dir);
  if (s.store.note) out.warning(s.store.note);
  out.info(`downloaded artifact ${found.name} from run ${j.runId} into ${dir}`);
  const meta = verifyMeta(dir, { repository: `${s.ctx.owner}/${s.ctx.repo}`, headSha: j.headSha, modelKey: key });
  // The artifact is the probe job's, which ran the pull request's code: only the run-dir contract's
  // files come through (the one door, as out of the sandbox), so nothing else it carries (a report
  // of its own making, a page, a link) is judged, posted or uploaded again under our name.
  const run = await freshDir('nbg-run-');
  const taken = takeRunFiles(dir, run);
  for (const r of taken.refused) out.warning(`artifact ${found.name}: ${r.name} left out: ${r.why}`);
  await removeDir(dir);
  let prNumber: number | null = null;
  if (s.api && (j.pullRequests.length || meta.pr_number)) prNumber = await resolvePr(s.api, j.pullRequests, meta.pr_number, j.headSha, (m) => out.warning(m));
  return { dir: run, meta, prNumber };
}

// ----- publishing ---------------------------------------------------------------------------------

async function publish(s: Session, plan: Plan, key: string, r: Exclude<Reached, { kind: 'probed' }>, o: { prNumber: number | null; judged: JudgedCommit }): Promise<Omit<Published, 'docsPr'>> {
  const report = r.kind === 'judged' ? r.result.report : r.report;
  for (const g of report.gates.filter((g) => g.status === 'fail')) {
    out.error(`${g.name}: measured ${g.value ?? 'n/a'}, needs ${g.bar}. ${g.detail}`, `Phase 2 FAIL ${plain(report.model.name, 64)}: ${g.id}`);
  }
  for (const w of report.warnings) out.warning(w.message, `npu-block-gate ${plain(report.model.name, 64)}: ${plain(w.id, 64)}`);

  // The run dir goes up even when it could not be judged: probe.log is what explains an error.
  const dir = r.kind === 'judged' ? r.result.runDir : r.runDir;
  let artifact: Published['artifact'] = null;
  if (dir && s.store) artifact = await upload(s, key, dir).catch((e) => { out.warning(`artifact upload failed: ${oneLine(e)}`); return null; });
  else if (dir) out.info(`no artifact service (ACTIONS_RUNTIME_TOKEN unset): the run dir stays at ${dir}`);

  const summary = summaryText(report, { artifactUrl: artifact?.url ?? null, judged: o.judged });
  await core.summary.addRaw(truncateBody(summary, SUMMARY_BUDGET, artifact?.url ?? null)).addEOL().write();

  let commentUrl: string | null = null;
  if (s.inputs.comment && o.prNumber !== null) commentUrl = await comment(s, key, report, o.prNumber, plan, o.judged, artifact?.url ?? null);
  else if (s.inputs.comment && s.ctx.pr === null && plan.mode !== 'report') out.debug('not a pull request event: no comment');
  return { artifact, commentUrl };
}

async function upload(s: Session, key: string, dir: string): Promise<{ name: string; url: string | null }> {
  if (!s.store) throw new InfraError('no artifact service here (ACTIONS_RUNTIME_TOKEN unset); the run dir was not uploaded');
  const name = artifactName(s.inputs.artifactName, key, s.inputs.matrixLeg, s.ctx.runAttempt);
  const up = await s.store.upload(name, dir, s.inputs.retentionDays);
  out.info(`uploaded ${dir} as artifact ${up.name}`);
  return { name: up.name, url: up.url };
}

async function comment(s: Session, key: string, report: Report, prNumber: number, plan: Plan, judged: JudgedCommit, artifactUrl: string | null): Promise<string | null> {
  if (!s.writes.allowed || !s.api) {
    s.writes.tell();
    return null;
  }
  try {
    const login = await loginFor(s);
    if (!login) return null;
    const runUrl = `${s.ctx.serverUrl}/${s.ctx.owner}/${s.ctx.repo}/actions/runs/${s.ctx.runId}`;
    const content = commentContent(report, { modelKey: key, runUrl, artifactUrl, judged, preview: s.inputs.docs !== 'none' && !plan.writeDocs });
    const head = marker(key, resultDigest(report, plan.writeDocs ? 'docs' : 'preview')) + '\n';
    const body = head + truncateBody(content, COMMENT_BUDGET - head.length, artifactUrl ?? runUrl);
    const r = await upsertComment(s.api, prNumber, key, body, login);
    out.info(`PR #${prNumber} comment ${r.action}: ${r.url}`);
    return r.url;
  } catch (e) {
    if (classifyWriteError(e) === 'permission') s.writes.deny(`the token cannot write here (${oneLine(e)})`);
    else out.warning(`could not post the PR comment: ${oneLine(e)}`);
    return null;
  }
}

/** Git for the docs of a model: the workspace's checkout, never a repository found in the model dir. */
function git(s: Session, modelDir: string): Git {
  const g = gitFor(s.workspace, modelDir, (m) => out.debug(m));
  g.useToken(s.inputs.token);
  return g;
}

function docFiles(modelDir: string): string[] {
  return [join(modelDir, DOC_PATHS.phase2), join(modelDir, DOC_PATHS.todo)];
}

async function restoreDocs(s: Session, modelDir: string, key: string): Promise<void> {
  const branch = docsBranch(key);
  try {
    const restored = await restoreRecordedDocs(git(s, modelDir), 'origin', docsBase(s), branch, docFiles(modelDir), (m) => out.info(m));
    if (restored.length) out.info(`docs: continuing from ${branch}: ${restored.join(', ')}`);
  } catch (e) {
    out.warning(`docs: could not read the docs branch (${oneLine(e)}); starting from the checked-out files`);
  }
}

/** Records the documents (already written into the checkout) through the docs PR: its URL, or why not. */
async function recordDocs(s: Session, key: string, report: Report, modelDir: string, judged: JudgedCommit): Promise<{ url: string | null; number: number | null } | { refused: string }> {
  const base = docsBase(s);
  const branch = docsBranch(key);
  const t = docsPrText(report, { modelKey: key, branch, base, runId: s.ctx.runId, judged });
  try {
    const r = await upsertDocsPr({
      git: git(s, modelDir),
      api: s.api,
      remote: 'origin',
      base,
      branch,
      files: docFiles(modelDir).filter(existsSync),
      title: t.title,
      body: t.body,
      commitMessage: t.commitMessage,
      // The checkout's own commit moves when the docs PR is merged; the result does not.
      digest: resultDigest({ ...report, environment: report.environment && { ...report.environment, git_commit: null } }, 'docs'),
      log: (m) => out.info(m),
    });
    if (r.forced.length) out.notice(`docs: force-added ${r.forced.join(', ')} (listed in .gitignore); the PR says so`);
    out.info(`docs PR ${r.action}${r.url ? `: ${r.url}` : ''}`);
    return { url: r.url, number: r.number };
  } catch (e) {
    if (e instanceof DocsPrRefused) return { refused: e.message };
    const kind = classifyWriteError(e);
    if (kind === 'permission') {
      s.writes.deny(`the token cannot push or open PRs here (${oneLine(e)})`);
      return { refused: `the token cannot push or open pull requests here (${oneLine(e)})` };
    }
    if (kind === 'prs-disabled') return { refused: `the repository does not allow GitHub Actions to create pull requests (${oneLine(e)})` };
    out.warning(`docs: could not record the result through a PR: ${oneLine(e)}`);
    return { refused: `the docs PR failed (${oneLine(e)})` };
  }
}
