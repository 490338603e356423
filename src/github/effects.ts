// The Action's effects for one model, after the job reached a verdict, a probed run dir or an
// error: annotations, the run dir as an artifact, the job summary, the sticky PR comment, and the
// documents through the docs PR. What they act on comes from the port (ports.ts), never from a
// probe run here: these are tested in-process against the fake GitHub and a bare remote.
import * as core from '@actions/core';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InfraError, oneLine } from '../errors.ts';
import type { Plan } from '../plan.ts';
import type { CheckDeps, CheckResult } from '../check/index.ts';
import { DOC_PATHS } from '../docs/markers.ts';
import { renderMarkdown } from '../report/markdown.ts';
import { commentContent, docsPrText, probedSummary, summaryText, type JudgedCommit } from '../report/github.ts';
import { plain } from '../text/escape.ts';
import type { IsolationRow, Report } from '../record/report.ts';
import type { ExitCode } from '../errors.ts';
import { classifyWriteError } from './api.ts';
import { artifactName } from './artifact.ts';
import { marker, resultDigest, truncateBody, upsertComment, COMMENT_BUDGET } from './comment.ts';
import { gitFor, type Git } from './git.ts';
import { docsBranch, restoreRecordedDocs, upsertDocsPr, DocsPrRefused } from './docs-pr.ts';
import { docsBase, loginFor, out, type Session } from './session.ts';

/** Job summaries hold at most 1 MiB per step. */
const SUMMARY_BUDGET = 1_000_000;

/** What a job reached: a verdict, the probe's run dir (mode probe), or an error (never a FAIL). */
export type Reached =
  | { kind: 'judged'; result: CheckResult }
  | { kind: 'probed'; runDir: string; isolation: IsolationRow }
  | { kind: 'error'; report: Report; message: string; exitCode: ExitCode; runDir: string | null };

/** What the Action's own effects produced. */
export interface Published {
  artifact: { name: string; url: string | null } | null;
  commentUrl: string | null;
  docsPr: { url: string | null; number: number | null } | null;
}

/** check()'s docs step for a plan that records documents: the docs PR, its URL handed to `opened`. */
export function docsProposer(s: Session, plan: Plan, key: string, judged: JudgedCommit, opened: (pr: NonNullable<Published['docsPr']>) => void): CheckDeps['proposeDocs'] {
  if (!plan.writeDocs || !plan.modelDir) return undefined;
  const modelDir = plan.modelDir;
  return async (_docs, report) => {
    const r = await recordDocs(s, key, report, modelDir, judged);
    if ('refused' in r) return r.refused;
    opened(r);
    return null;
  };
}

/** mode probe's summary: the probed line, or the error's report. */
export async function probedJobSummary(key: string, reached: Reached, artifact: Published['artifact']): Promise<void> {
  if (reached.kind === 'probed') await core.summary.addRaw(probedSummary(key, artifact?.name ?? null, reached.isolation)).write();
  else if (reached.kind === 'error') await core.summary.addRaw(renderMarkdown(reached.report, { flavor: 'summary', artifactUrl: artifact?.url ?? undefined })).addEOL().write();
}

export async function publish(s: Session, plan: Plan, key: string, r: Exclude<Reached, { kind: 'probed' }>, o: { prNumber: number | null; judged: JudgedCommit }): Promise<Omit<Published, 'docsPr'>> {
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

export async function upload(s: Session, key: string, dir: string): Promise<{ name: string; url: string | null }> {
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

export async function restoreDocs(s: Session, modelDir: string, key: string): Promise<void> {
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
