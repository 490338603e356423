// The Action's three jobs for one model, and what they publish:
//  - probe:  run the probe, upload the run dir with github.json (the event, and the error when
//            the probe could not finish, so the report job can say ERROR on the PR);
//  - report: download the triggering run's run dir, check it is that run's and that model's,
//            judge it (no project code runs here);
//  - full:   probe and judge here.
// Then: the docs PR (trusted runs), annotations, the artifact, the job summary, the sticky comment.
import * as core from '@actions/core';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { GateError, InfraError, InputError, EXIT, oneLine, type ExitCode } from '../errors.ts';
import type { Plan } from '../plan.ts';
import { probe, judge, errorReport, type CheckResult } from '../pipeline.ts';
import { readProbeJson } from '../rundir/read.ts';
import { RUN_FILES } from '../rundir/schema.ts';
import { DOC_PATHS } from '../docs/markers.ts';
import { writeAtomic } from '../docs/fs.ts';
import { toJson } from '../report/json.ts';
import { renderMarkdown } from '../report/markdown.ts';
import { commentContent, docsPrText, probedSummary, summaryText, type JudgedCommit } from '../report/github.ts';
import { plain, text } from '../report/escape.ts';
import type { Report } from '../report/types.ts';
import { classifyWriteError } from './api.ts';
import { artifactName, pickArtifact, freshDir } from './artifact.ts';
import { marker, resultDigest, truncateBody, upsertComment, COMMENT_BUDGET } from './comment.ts';
import { Git } from './git.ts';
import { docsBranch, restoreRecordedDocs, upsertDocsPr, DocsPrRefused } from './docs-pr.ts';
import { writeMeta, verifyMeta, resolvePr, probeJobError, type RunMeta } from './split.ts';
import type { ModelResult } from './outputs.ts';
import { actionLog, docsBase, keyOf, loginFor, out, planFor, type Session } from './session.ts';

/** Job summaries hold at most 1 MiB per step. */
const SUMMARY_BUDGET = 1_000_000;

export async function runModel(s: Session, modelDir: string): Promise<ModelResult> {
  const key = keyOf(s, modelDir);
  const res: ModelResult = {
    modelDir, key, outcome: 'error', exitCode: EXIT.infra, report: null, reportPath: null, runDir: null,
    artifactName: null, artifactUrl: null, commentUrl: null, docsPrUrl: null, docsPrNumber: null, error: null,
  };
  const plan = planFor(s, modelDir, key);
  core.startGroup(`npu-block-gate: ${key} (mode ${plan.mode})`);
  try {
    if (plan.mode === 'probe') await probeJob(s, res, plan);
    else if (plan.mode === 'report') await reportJob(s, res, plan);
    else await fullJob(s, res, plan);
  } finally {
    core.endGroup();
  }
  return res;
}

/** Records an error: never a FAIL verdict. */
function failed(res: ModelResult, plan: Plan, e: unknown): void {
  if (!(e instanceof GateError)) out.debug((e as Error)?.stack ?? String(e));
  const code: ExitCode = e instanceof GateError ? e.exitCode : EXIT.infra;
  res.error = oneLine(e);
  res.exitCode = code;
  res.outcome = 'error';
  res.report = errorReport(plan, res.error, code);
  res.report.model.name = basename(res.modelDir);
  out.error(`${res.key}: ${res.error}`, `npu-block-gate could not judge ${res.key} (${code === EXIT.input ? 'bad input' : 'infrastructure'}; not a FAIL)`);
}

function judged(res: ModelResult, result: CheckResult): void {
  res.report = result.report;
  res.runDir = result.runDir;
  res.reportPath = join(result.runDir, RUN_FILES.report);
  res.outcome = result.report.outcome;
  res.exitCode = result.exitCode;
}

/**
 * A run dir is about the model dir it is judged for: probe.json's model name must be the model
 * dir's own name (the name goes into titles, branches and documents).
 */
export function checkModelName(runDir: string, modelDir: string): void {
  const p = readProbeJson(runDir, false);
  const want = basename(modelDir);
  if (p.model.name !== want) {
    throw new InputError(`model.name ${JSON.stringify(plain(p.model.name, 64))} is not the model dir's name ${JSON.stringify(want)}; refusing a run dir for another model`, RUN_FILES.probe);
  }
}

async function checkoutSha(dir: string): Promise<string | null> {
  try {
    return await new Git(existsSync(dir) ? dir : process.cwd()).head();
  } catch {
    return null;
  }
}

// ----- the three jobs ----------------------------------------------------------------------------

async function fullJob(s: Session, res: ModelResult, plan: Plan): Promise<void> {
  let result: CheckResult | null = null;
  try {
    if (plan.writeDocs && plan.modelDir) await restoreDocs(s, plan.modelDir, res.key);
    const { runDir, python } = await probe(plan, actionLog);
    checkModelName(runDir, res.modelDir);
    result = await judge(plan, actionLog, python);
    judged(res, result);
  } catch (e) {
    failed(res, plan, e);
  }
  const commit: JudgedCommit = { head: s.trust.judged.headSha, merge: s.trust.mergeSha, checkout: await checkoutSha(res.modelDir) };
  await publish(s, res, plan, { result, prNumber: s.ctx.pr?.number ?? null, judged: commit });
}

async function reportJob(s: Session, res: ModelResult, plan: Plan): Promise<void> {
  let result: CheckResult | null = null;
  let prNumber: number | null = null;
  let meta: RunMeta | null = null;
  try {
    const got = await fetchRunDir(s, res.key);
    plan.runDir = got.dir;
    prNumber = got.prNumber;
    meta = got.meta;
    const pe = probeJobError(got.meta);
    if (pe) throw new GateError(pe.message, pe.exitCode as ExitCode);
    checkModelName(got.dir, res.modelDir);
    if (plan.writeDocs && plan.modelDir) await restoreDocs(s, plan.modelDir, res.key);
    result = await judge(plan, actionLog);
    judged(res, result);
  } catch (e) {
    failed(res, plan, e);
  }
  const commit: JudgedCommit = {
    head: s.trust.judged.headSha,
    merge: meta?.event === 'pull_request' && meta.sha && meta.sha !== s.trust.judged.headSha ? meta.sha : null,
    checkout: meta?.checkout_sha ?? null,
  };
  await publish(s, res, plan, { result, prNumber, judged: commit });
}

async function probeJob(s: Session, res: ModelResult, plan: Plan): Promise<void> {
  if (s.inputs.comment && s.ctx.pr) out.info('mode probe: the PR comment is posted by the mode report job');
  let error: { message: string; exitCode: number } | null = null;
  try {
    const { runDir } = await probe(plan, actionLog);
    res.runDir = runDir;
  } catch (e) {
    failed(res, plan, e);
    error = { message: res.error!, exitCode: res.exitCode };
  }
  // The run dir goes up even when the probe failed: github.json carries the error and probe.log
  // explains it, so the report job can tell the pull request ERROR instead of nothing.
  writeMeta(plan.runDir, s.ctx, s.trust, res.key, { checkoutSha: await checkoutSha(res.modelDir), error });
  res.runDir = plan.runDir;
  try {
    if (!s.store) throw new InfraError('mode probe hands the run dir to the report job as an artifact, but there is no artifact service here (ACTIONS_RUNTIME_TOKEN is unset)');
    await upload(s, res, plan.runDir);
  } catch (e) {
    if (!error) failed(res, plan, e);
    else out.warning(`artifact upload failed: ${oneLine(e)}`);
  }
  if (!error && !res.error) {
    res.outcome = 'probed';
    res.exitCode = EXIT.pass;
    await core.summary.addRaw(probedSummary(res.key, res.artifactName)).write();
  } else {
    await core.summary.addRaw(renderMarkdown(res.report!, { flavor: 'summary', artifactUrl: res.artifactUrl ?? undefined })).addEOL().write();
  }
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
  let prNumber: number | null = null;
  if (s.api && (j.pullRequests.length || meta.pr_number)) prNumber = await resolvePr(s.api, j.pullRequests, meta.pr_number, j.headSha, (m) => out.warning(m));
  return { dir, meta, prNumber };
}

// ----- publishing ---------------------------------------------------------------------------------

interface Publish {
  result: CheckResult | null;
  prNumber: number | null;
  judged: JudgedCommit;
}

async function publish(s: Session, res: ModelResult, plan: Plan, p: Publish): Promise<void> {
  const report = res.report!;
  const notes: string[] = [];

  // Documents first: a refused docs PR turns G4 into a warning, which the rest must show.
  if (plan.writeDocs && p.result?.docs && plan.modelDir) {
    const why = await docsPr(s, res, report, plan.modelDir, p.judged);
    if (why) {
      notRecorded(report, why);
      notes.push(`> [!WARNING]\n> ${text(`G4: the documents were not recorded: ${why}`, 800)}`);
      rewriteReport(report, p.result);
    }
  }

  for (const g of report.gates.filter((g) => g.status === 'fail')) {
    out.error(`${g.name}: measured ${g.value ?? 'n/a'}, needs ${g.bar}. ${g.detail}`, `Phase 2 FAIL ${plain(report.model.name, 64)}: ${g.id}`);
  }
  for (const w of report.warnings) out.warning(w.message, `npu-block-gate ${plain(report.model.name, 64)}: ${plain(w.id, 64)}`);

  // The run dir goes up even when it could not be judged: probe.log is what explains an error.
  const dir = p.result?.runDir ?? (existsSync(plan.runDir) ? plan.runDir : null);
  if (dir && s.store) await upload(s, res, dir).catch((e) => out.warning(`artifact upload failed: ${oneLine(e)}`));
  else if (dir) out.info(`no artifact service (ACTIONS_RUNTIME_TOKEN unset): the run dir stays at ${dir}`);

  const summary = summaryText(report, { artifactUrl: res.artifactUrl, judged: p.judged, notes });
  await core.summary.addRaw(truncateBody(summary, SUMMARY_BUDGET, res.artifactUrl)).addEOL().write();

  if (s.inputs.comment && p.prNumber !== null) await comment(s, res, report, p.prNumber, plan, p.judged, notes);
  else if (s.inputs.comment && s.ctx.pr === null && plan.mode !== 'report') out.debug('not a pull request event: no comment');
}

/** G4 is not a silent pass when the documents could not be recorded: skip, with the reason as a warning. */
export function notRecorded(report: Report, reason: string): void {
  const g4 = report.gates.find((g) => g.id === 'G4');
  if (g4) {
    g4.status = 'skip';
    g4.passed = true;
    g4.value = null;
    g4.detail = `not recorded: ${reason}`;
  }
  report.warnings.push({ id: 'docs', message: `G4: the documents were not recorded: ${reason}` });
}

function rewriteReport(report: Report, result: CheckResult): void {
  writeAtomic(join(result.runDir, RUN_FILES.report), toJson(report));
  writeAtomic(join(result.runDir, RUN_FILES.markdown), renderMarkdown(report, { flavor: 'summary' }));
}

async function upload(s: Session, res: ModelResult, dir: string): Promise<void> {
  if (!s.store) {
    out.warning('no artifact service here (ACTIONS_RUNTIME_TOKEN unset); the run dir was not uploaded');
    return;
  }
  const name = artifactName(s.inputs.artifactName, res.key, s.inputs.matrixLeg, s.ctx.runAttempt);
  const up = await s.store.upload(name, dir, s.inputs.retentionDays);
  res.artifactName = up.name;
  res.artifactUrl = up.url;
  out.info(`uploaded ${dir} as artifact ${up.name}`);
}

async function comment(s: Session, res: ModelResult, report: Report, prNumber: number, plan: Plan, commit: JudgedCommit, notes: string[]): Promise<void> {
  if (!s.writes.allowed || !s.api) {
    s.writes.tell();
    return;
  }
  try {
    const login = await loginFor(s);
    if (!login) return;
    const runUrl = `${s.ctx.serverUrl}/${s.ctx.owner}/${s.ctx.repo}/actions/runs/${s.ctx.runId}`;
    const content = commentContent(report, {
      modelKey: res.key, runUrl, artifactUrl: res.artifactUrl, judged: commit, notes,
      preview: s.inputs.docs !== 'none' && !plan.writeDocs,
    });
    const head = marker(res.key, resultDigest(report, plan.writeDocs ? 'docs' : 'preview')) + '\n';
    const body = head + truncateBody(content, COMMENT_BUDGET - head.length, res.artifactUrl ?? runUrl);
    const r = await upsertComment(s.api, prNumber, res.key, body, login);
    res.commentUrl = r.url;
    out.info(`PR #${prNumber} comment ${r.action}: ${r.url}`);
  } catch (e) {
    if (classifyWriteError(e) === 'permission') s.writes.deny(`the token cannot write here (${oneLine(e)})`);
    else out.warning(`could not post the PR comment: ${oneLine(e)}`);
  }
}

function git(s: Session, modelDir: string): Git {
  const g = new Git(modelDir, (m) => out.debug(m));
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

/** Records the documents through the docs PR; returns why they were not recorded, or null. */
async function docsPr(s: Session, res: ModelResult, report: Report, modelDir: string, commit: JudgedCommit): Promise<string | null> {
  const base = docsBase(s);
  const branch = docsBranch(res.key);
  const t = docsPrText(report, { modelKey: res.key, branch, base, runId: s.ctx.runId, judged: commit });
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
    res.docsPrUrl = r.url;
    res.docsPrNumber = r.number;
    if (r.forced.length) out.notice(`docs: force-added ${r.forced.join(', ')} (listed in .gitignore); the PR says so`);
    out.info(`docs PR ${r.action}${r.url ? `: ${r.url}` : ''}`);
    return null;
  } catch (e) {
    if (e instanceof DocsPrRefused) return e.message;
    const kind = classifyWriteError(e);
    if (kind === 'permission') {
      s.writes.deny(`the token cannot push or open PRs here (${oneLine(e)})`);
      return `the token cannot push or open pull requests here (${oneLine(e)})`;
    }
    if (kind === 'prs-disabled') return `the repository does not allow GitHub Actions to create pull requests (${oneLine(e)})`;
    out.warning(`docs: could not record the result through a PR: ${oneLine(e)}`);
    return `the docs PR failed (${oneLine(e)})`;
  }
}
