// The GitHub Action: inputs -> one typed object -> for each model dir: probe / judge per mode ->
// job summary, annotations, artifact, sticky PR comment, docs PR -> step outputs. One try/catch
// ends in core.setFailed; an infrastructure or input error says so and is never a FAIL verdict.
import * as core from '@actions/core';
import { existsSync } from 'node:fs';
import { basename, join, relative, isAbsolute } from 'node:path';
import { tmpdir } from 'node:os';
import { GateError, InfraError, EXIT, oneLine } from './errors.ts';
import type { Log } from './log.ts';
import type { Plan } from './plan.ts';
import { probe, judge, runCheck, errorReport, type CheckResult } from './pipeline.ts';
import { renderMarkdown } from './report/markdown.ts';
import type { Report } from './report/types.ts';
import { RUN_FILES } from './rundir/schema.ts';
import { DOC_PATHS } from './docs/markers.ts';
import { parseInputs, type ActionInputs } from './github/inputs.ts';
import { readContext, headSha, WriteGate, type GhContext } from './github/context.ts';
import { makeOctokit, isPermissionError, type GateOctokit } from './github/octokit.ts';
import { selectStore, artifactName, artifactPrefix, pickArtifact, freshDir, type ArtifactStore } from './github/artifact.ts';
import { marker, resultDigest, truncateBody, tokenLogin, upsertComment, COMMENT_BUDGET } from './github/comment.ts';
import { Git } from './github/git.ts';
import { docsBranch, restoreRecordedDocs, upsertDocsPr } from './github/docs-pr.ts';
import { writeMeta, verifyMeta, resolvePr } from './github/split.ts';
import { outputsFor, type ModelResult } from './github/outputs.ts';

/** Job summaries hold at most 1 MiB per step. */
const SUMMARY_BUDGET = 1_000_000;

interface Session {
  inputs: ActionInputs;
  ctx: GhContext;
  writes: WriteGate;
  octokit: GateOctokit | null;
  store: ArtifactStore | null;
  login: string | null;
  log: Log;
  workspace: string;
}

export async function run(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  try {
    const inputs = parseInputs((name) => core.getInput(name), env);
    if (inputs.token) core.setSecret(inputs.token);
    const ctx = readContext(env, inputs.token);
    const s: Session = {
      inputs,
      ctx,
      writes: new WriteGate(ctx.readOnlyReason, (m) => core.notice(m)),
      octokit: inputs.token ? makeOctokit({ token: inputs.token, baseUrl: ctx.apiUrl, env, log: { debug: core.debug, info: core.info, warning: core.warning } }) : null,
      store: selectStore(env, ctx.serverUrl, ctx.owner, ctx.repo, ctx.runId),
      login: null,
      log: { step: (m) => core.info(m), warn: (m) => core.warning(m) },
      workspace: env.GITHUB_WORKSPACE || process.cwd(),
    };
    if (inputs.mode === 'probe' && inputs.comment && ctx.pr) core.info('mode probe: the PR comment is posted by the mode report job');

    const results: ModelResult[] = [];
    for (const modelDir of inputs.modelDirs) results.push(await runModel(s, modelDir));

    const outs = outputsFor(results);
    for (const [k, v] of Object.entries(outs)) core.setOutput(k, v);

    const failed = results.filter((r) => r.outcome === 'fail');
    const errored = results.filter((r) => r.outcome === 'error');
    const parts: string[] = [];
    if (failed.length)
      parts.push(
        `Phase 2 FAIL: ${failed
          .map((r) => `${r.report?.model.name ?? r.key} (${(r.report?.gates ?? []).filter((g) => g.status === 'fail').map((g) => g.id).join(', ')} failed)`)
          .join('; ')}`,
      );
    if (errored.length)
      parts.push(`could not judge ${errored.map((r) => `${r.key}: ${r.error}`).join('; ')} (an input or infrastructure error, not a FAIL verdict)`);
    if (parts.length) core.setFailed(parts.join('. '));
  } catch (e) {
    core.setOutput('outcome', 'error');
    const kind = e instanceof GateError && e.exitCode === EXIT.input ? 'bad input' : 'infrastructure error';
    core.setFailed(`npu-block-gate could not run (${kind}, not a FAIL verdict): ${oneLine(e)}`);
  }
}

function slugOf(modelDir: string): string {
  return basename(modelDir).replace(/[^A-Za-z0-9._-]+/g, '_') || 'model';
}

function keyOf(s: Session, modelDir: string): string {
  const rel = relative(s.workspace, modelDir).split('\\').join('/');
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : basename(modelDir);
}

function runDirFor(s: Session, modelDir: string): string {
  const slug = slugOf(modelDir);
  if (s.inputs.runDir) return s.inputs.modelDirs.length > 1 ? join(s.inputs.runDir, slug) : s.inputs.runDir;
  const base = process.env.RUNNER_TEMP || tmpdir();
  return join(base, 'npu-block-gate', `${slug}-${s.ctx.runId}-${s.ctx.runAttempt}`);
}

/** Docs are committed on trusted events (docs: auto) or wherever the token can write (docs: pr). */
function commitsDocs(s: Session): boolean {
  const { inputs, ctx } = s;
  if (inputs.docs === 'none' || inputs.mode === 'probe') return false;
  if (inputs.docs === 'auto' && !ctx.trusted) return false;
  if (inputs.docs === 'pr' && ctx.pr?.isFork) return false;
  return s.writes.allowed && s.octokit !== null;
}

function docsBase(s: Session): string {
  return s.inputs.docsBaseBranch ?? s.ctx.defaultBranch ?? s.ctx.ref.replace(/^refs\/heads\//, '') ?? 'main';
}

async function runModel(s: Session, modelDir: string): Promise<ModelResult> {
  const key = keyOf(s, modelDir);
  const slug = slugOf(modelDir);
  const res: ModelResult = {
    modelDir, key, outcome: 'error', exitCode: EXIT.infra, report: null, reportPath: null, runDir: null,
    artifactName: null, artifactUrl: null, commentUrl: null, docsPrUrl: null, docsPrNumber: null, error: null,
  };
  const writeDocs = commitsDocs(s);
  const plan: Plan = {
    mode: s.inputs.mode,
    modelDir: existsSync(modelDir) ? modelDir : null,
    promptStyle: s.inputs.promptStyle,
    prompt: s.inputs.prompt,
    python: s.inputs.python,
    runDir: runDirFor(s, modelDir),
    threshold: s.inputs.threshold,
    writeDocs,
    timeoutSec: s.inputs.timeoutSec,
    commit: headSha(s.ctx) || null,
    layers: s.inputs.layers,
    cache: s.inputs.cache,
    cacheDir: s.inputs.cacheDir,
    // A pull request's code may restore kernels but never store them: a fresh compile from an
    // untrusted job must not land in a store that trusted runs restore from.
    cacheWrite: s.ctx.trusted,
  };
  let prNumber: number | null = s.ctx.pr?.number ?? null;
  let result: CheckResult | null = null;

  core.startGroup(`npu-block-gate: ${key} (mode ${plan.mode})`);
  try {
    if (plan.mode === 'probe') {
      const { runDir } = await probe(plan, s.log);
      res.runDir = runDir;
      writeMeta(runDir, s.ctx, key);
      if (!s.store) throw new InfraError('mode probe hands the run dir to the report job as an artifact, but there is no artifact service here (ACTIONS_RUNTIME_TOKEN is unset)');
      await upload(s, res, slug, runDir);
      res.outcome = 'probed';
      res.exitCode = EXIT.pass;
      await core.summary.addRaw(`## npu-block-gate: ${key} probed\n\nThe run dir was uploaded as \`${res.artifactName ?? '(not uploaded)'}\`; the verdict comes from the \`mode: report\` job.\n`).write();
      return res;
    }
    if (writeDocs && plan.modelDir) await restoreDocs(s, plan.modelDir, slug);
    if (plan.mode === 'report') {
      const got = await fetchRunDir(s, slug, key);
      plan.runDir = got.dir;
      prNumber = got.prNumber;
    }
    result = plan.mode === 'report' ? await judge(plan, s.log) : await runCheck(plan, s.log);
    res.report = result.report;
    res.runDir = result.runDir;
    res.reportPath = join(result.runDir, RUN_FILES.report);
    res.outcome = result.report.outcome;
    res.exitCode = result.exitCode;
  } catch (e) {
    if (!(e instanceof GateError)) core.debug((e as Error)?.stack ?? String(e));
    const code = e instanceof GateError ? e.exitCode : EXIT.infra;
    res.error = oneLine(e);
    res.exitCode = code;
    res.outcome = 'error';
    res.report = errorReport(plan, res.error, code);
    core.error(`${key}: ${res.error}`, { title: `npu-block-gate could not judge ${key} (${code === EXIT.input ? 'bad input' : 'infrastructure'}; not a FAIL)` });
    if (plan.mode === 'probe') {
      await core.summary.addRaw(renderMarkdown(res.report, { flavor: 'summary' })).addEOL().write();
      return res;
    }
  } finally {
    core.endGroup();
  }

  const report = res.report!;
  for (const g of report.gates.filter((g) => g.status === 'fail')) {
    core.error(`${g.name}: measured ${g.value ?? 'n/a'}, needs ${g.bar}. ${g.detail}`, { title: `Phase 2 FAIL ${report.model.name}: ${g.id}` });
  }
  for (const w of report.warnings) core.warning(w.message, { title: `npu-block-gate ${report.model.name}: ${w.id}` });

  // The run dir goes up even when it could not be judged: probe.log is what explains an error.
  const toUpload = result?.runDir ?? (existsSync(plan.runDir) ? plan.runDir : null);
  if (toUpload && s.store) await upload(s, res, slug, toUpload).catch((e) => core.warning(`artifact upload failed: ${oneLine(e)}`));
  else if (toUpload) core.info(`no artifact service (ACTIONS_RUNTIME_TOKEN unset): the run dir stays at ${toUpload}`);

  const summaryMd = result ? result.markdown : renderMarkdown(report, { flavor: 'summary', artifactUrl: res.artifactUrl ?? undefined });
  await core.summary.addRaw(truncateBody(summaryMd, SUMMARY_BUDGET, res.artifactUrl)).addEOL().write();

  if (s.inputs.comment && prNumber !== null) await comment(s, res, report, prNumber, writeDocs);
  else if (s.inputs.comment && s.ctx.pr === null && plan.mode !== 'report') core.debug('not a pull request event: no comment');

  if (writeDocs && result?.docs && plan.modelDir) await docsPr(s, res, report, plan.modelDir, slug);
  return res;
}

async function upload(s: Session, res: ModelResult, slug: string, dir: string): Promise<void> {
  if (!s.store) {
    core.warning('no artifact service here (ACTIONS_RUNTIME_TOKEN unset); the run dir was not uploaded');
    return;
  }
  const name = artifactName(s.inputs.artifactName, slug, s.ctx.job, s.ctx.runAttempt);
  const up = await s.store.upload(name, dir, s.inputs.retentionDays);
  res.artifactName = up.name;
  res.artifactUrl = up.url;
  core.info(`uploaded ${dir} as artifact ${up.name}`);
}

/** mode report: download the probe job's run dir from the triggering run and check it is that run's. */
async function fetchRunDir(s: Session, slug: string, key: string): Promise<{ dir: string; prNumber: number | null }> {
  const runId = s.inputs.runId ?? s.ctx.workflowRun?.id ?? null;
  if (!runId) throw new InfraError("mode report needs a workflow_run event or the 'run-id' input to find the probe job's artifact");
  if (!s.store) throw new InfraError('mode report needs the artifact service (ACTIONS_RUNTIME_TOKEN) to download the run dir');
  const ref = { owner: s.ctx.owner, repo: s.ctx.repo, runId, token: s.inputs.token };
  const prefix = artifactPrefix(s.inputs.artifactName, slug);
  const found = pickArtifact(await s.store.list(ref), prefix);
  if (!found) {
    const c = s.ctx.workflowRun?.conclusion;
    const why = c && c !== 'success' ? ` (that run's conclusion is ${c}: see its log)` : '';
    throw new InfraError(`no artifact named ${prefix}* in run ${runId}${why}; did the mode probe job upload one?`);
  }
  const dir = await freshDir('nbg-run-');
  await s.store.download(ref, found, dir);
  core.info(`downloaded artifact ${found.name} from run ${runId} into ${dir}`);

  let sha = s.ctx.workflowRun?.headSha ?? '';
  if (!sha && s.octokit) {
    const { data } = await s.octokit.rest.actions.getWorkflowRun({ owner: s.ctx.owner, repo: s.ctx.repo, run_id: runId });
    sha = data.head_sha;
  }
  const meta = verifyMeta(dir, { repository: `${s.ctx.owner}/${s.ctx.repo}`, headSha: sha, modelKey: key });
  let prNumber: number | null = null;
  if (s.octokit && (s.ctx.workflowRun?.pullRequests.length || meta.pr_number)) {
    prNumber = await resolvePr(s.octokit, s.ctx, sha, meta.pr_number, (m) => core.warning(m));
  }
  return { dir, prNumber };
}

async function ensureLogin(s: Session): Promise<string> {
  if (s.login === null) s.login = await tokenLogin(s.octokit!);
  return s.login;
}

function commentBody(s: Session, res: ModelResult, report: Report, committingDocs: boolean): string {
  const artifactUrl = res.artifactUrl ?? undefined;
  const parts = [renderMarkdown(report, { flavor: 'comment', artifactUrl })];
  if (s.inputs.docs !== 'none' && !committingDocs && report.outcome !== 'error') parts.push(docsPreview(res, report));
  const runUrl = `${s.ctx.serverUrl}/${s.ctx.owner}/${s.ctx.repo}/actions/runs/${s.ctx.runId}`;
  parts.push(`<sub>${report.tool.name} ${report.tool.version} · [workflow run](${runUrl})${artifactUrl ? ` · [run dir artifact](${artifactUrl})` : ''}</sub>`);
  const content = parts.join('\n\n');
  const head = marker(res.key, resultDigest(report, committingDocs ? 'docs' : 'preview')) + '\n';
  return head + truncateBody(content, COMMENT_BUDGET - head.length, artifactUrl ?? runUrl);
}

/** On pull requests: what a trusted run will record, instead of recording it. */
function docsPreview(res: ModelResult, report: Report): string {
  const pass = report.outcome === 'pass';
  const short = report.commit.slice(0, 12);
  const lines = [
    `- \`${res.key}/${DOC_PATHS.phase2}\`: this report as the latest result, and a history row for commit \`${short}\` (${report.prompt?.style ?? 'default'} prompt).`,
    pass
      ? `- \`${res.key}/${DOC_PATHS.todo}\`: \`- [x] 2: Single-Block Validation\`, and any Phase 2 blocker line removed.`
      : `- \`${res.key}/${DOC_PATHS.todo}\`: a Phase 2 blocker under \`## Active blockers\` naming ${report.gates.filter((g) => g.status === 'fail').map((g) => g.id).join(', ')}.`,
  ];
  for (const w of report.integration?.workarounds ?? []) lines.push(`- \`${res.key}/${DOC_PATHS.todo}\`: Phase 4/5 prerequisite for \`${w.id}\`.`);
  return `<details><summary>Documents a trusted run (push, schedule, dispatch) will record</summary>\n\n${lines.join('\n')}\n\n</details>`;
}

async function comment(s: Session, res: ModelResult, report: Report, prNumber: number, committingDocs: boolean): Promise<void> {
  if (!s.writes.allowed || !s.octokit) {
    s.writes.tell();
    return;
  }
  try {
    const body = commentBody(s, res, report, committingDocs);
    const login = await ensureLogin(s);
    const r = await upsertComment(s.octokit, { owner: s.ctx.owner, repo: s.ctx.repo, issueNumber: prNumber }, res.key, body, login);
    res.commentUrl = r.url;
    core.info(`PR #${prNumber} comment ${r.action}: ${r.url}`);
  } catch (e) {
    if (isPermissionError(e)) s.writes.deny(`the token cannot write here (${oneLine(e)})`);
    else core.warning(`could not post the PR comment: ${oneLine(e)}`);
  }
}

function git(s: Session, modelDir: string): Git {
  const g = new Git(modelDir, (m) => core.debug(m));
  g.useToken(s.inputs.token);
  return g;
}

function docFiles(modelDir: string): string[] {
  return [join(modelDir, DOC_PATHS.phase2), join(modelDir, DOC_PATHS.todo)];
}

async function restoreDocs(s: Session, modelDir: string, slug: string): Promise<void> {
  try {
    const restored = await restoreRecordedDocs(git(s, modelDir), 'origin', docsBase(s), docsBranch(slug), docFiles(modelDir), (m) => core.info(m));
    if (restored.length) core.info(`docs: continuing from ${docsBranch(slug)}: ${restored.join(', ')}`);
  } catch (e) {
    core.warning(`docs: could not read the docs branch (${oneLine(e)}); starting from the checked-out files`);
  }
}

async function docsPr(s: Session, res: ModelResult, report: Report, modelDir: string, slug: string): Promise<void> {
  const base = docsBase(s);
  const verdict = report.outcome === 'pass' ? 'PASS' : 'FAIL';
  const m = report.metrics;
  const body = [
    `Phase 2 (single-block validation) result for \`${res.key}\`: **${verdict}**.`,
    '',
    m ? `Whole-tensor cosine ${m.wholeCosine.toFixed(6)}, per-position min ${m.perPosition.min.toFixed(6)} (threshold ${report.thresholds.perPosition}).` : '',
    '',
    `Records \`${DOC_PATHS.phase2}\` and \`${DOC_PATHS.todo}\` for commit \`${report.commit.slice(0, 12)}\`. Written by npu-block-gate; the branch \`${docsBranch(slug)}\` is rebuilt on \`${base}\` by every trusted run.`,
  ].join('\n');
  try {
    const r = await upsertDocsPr({
      git: git(s, modelDir),
      octokit: s.octokit,
      owner: s.ctx.owner,
      repo: s.ctx.repo,
      remote: 'origin',
      base,
      branch: docsBranch(slug),
      files: docFiles(modelDir).filter(existsSync),
      title: `docs(${report.model.name}): Phase 2 single-block validation ${verdict}`,
      body,
      commitMessage: `docs(${report.model.name}): record Phase 2 ${verdict} for ${report.commit.slice(0, 12)}\n\nWritten by npu-block-gate from workflow run ${s.ctx.runId}.`,
      // The checkout's own commit moves when the docs PR is merged; the result does not.
      digest: resultDigest({ ...report, environment: report.environment && { ...report.environment, git_commit: null } }, 'docs'),
      log: (m) => core.info(m),
    });
    res.docsPrUrl = r.url;
    res.docsPrNumber = r.number;
    if (r.forced.length) core.notice(`docs: force-added ${r.forced.join(', ')} (listed in .gitignore); the PR says so`);
    core.info(`docs PR ${r.action}${r.url ? `: ${r.url}` : ''}`);
  } catch (e) {
    if (isPermissionError(e) || /403|denied|not allowed|Permission/i.test(oneLine(e))) s.writes.deny(`the token cannot push or open PRs here (${oneLine(e)})`);
    else core.warning(`docs: could not record the result through a PR: ${oneLine(e)}`);
  }
}
