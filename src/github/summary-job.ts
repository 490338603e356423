// mode summary (DESIGN.md "Fleet"): after the matrix legs, one trusted job takes every leg's run
// dir from the workflow run's artifacts (each checked to be that run's head commit and that leg's
// model, then judged here as mode report judges: no project code runs), and answers once: one
// table model x NPU generation in one sticky comment and one job summary, and, on a trusted run,
// one docs PR with a commit per model. A leg that errored is an error, never a failure; a leg the
// matrix ran that left no artifact is named as missing.
import * as core from '@actions/core';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EXIT, GateError, InfraError, InputError, oneLine, type ExitCode } from '../errors.ts';
import type { Plan } from '../plan.ts';
import { check, errorReport } from '../check/index.ts';
import { DOC_PATHS } from '../docs/markers.ts';
import { readHistory } from '../docs/phase2.ts';
import { readDocs } from '../check/documents.ts';
import { generationName, recordNpu } from '../npu/generation.ts';
import { counts, summaryMarkdown, verdictOf, withLegs, withRunnerGenerations, type BaseRecord, type LegResult, type SummaryOptions } from '../fleet/summary.ts';
import { modelStatusAt, writeFleetPage } from '../fleet/status.ts';
import { matchLegs, summaryCommentBody, type LegPlan } from './summary-legs.ts';
import { literal, plain } from '../text/escape.ts';
import { TOOL } from '../tool.ts';
import { classifyWriteError } from './api.ts';
import { fleetArtifactName, freshDir, modelSlug } from './artifact.ts';
import { truncateBody, upsertComment } from './comment.ts';
import { DocsPrRefused } from './docs-pr.ts';
import { FLEET_DOCS_BRANCH, restoreFleetDocs, upsertFleetDocsPr } from './fleet-docs.ts';
import type { FleetInputs } from './fleet-inputs.ts';
import { gitFor, type Git } from './git.ts';
import { isolationOf } from './jobs.ts';
import { META_FILE, probeJobError, resolvePr, verifyMeta, type RunMeta } from './split.ts';
import { actionLog, commitsDocs, docsBase, loginFor, out, planFor, type Session } from './session.ts';

const SUMMARY_BUDGET = 1_000_000;
/** The fleet page's file name in its artifact. */
const FLEET_PAGE = 'fleet.html';
const BASE_REF = 'refs/npu-block-gate/summary-base';

interface Judged {
  result: LegResult;
  meta: RunMeta | null;
  /** The plan that judged it (null: it could not be judged). */
  plan: Plan | null;
  abs: string | null;
}

function errorLeg(s: Session, lp: LegPlan, model: string, message: string, exitCode: ExitCode, artifactUrl: string | null): LegResult {
  const plan = { ...planFor(s, resolve(s.workspace, model), model), mode: 'report' as const };
  return { model, runner: lp.runner, leg: lp.leg, state: 'error', report: errorReport(plan, message, exitCode), error: message, artifactName: lp.artifact?.name ?? null, artifactUrl, base: null };
}

/** The model a run dir's github.json claims (checked against everything else by verifyMeta next). */
function claimedModel(dir: string): string | null {
  try {
    const path = join(dir, META_FILE);
    if (statSync(path).size > 64 * 1024) return null;
    const m = JSON.parse(readFileSync(path, 'utf8'))?.model;
    return typeof m === 'string' && /^[A-Za-z0-9._/-]{1,300}$/.test(m) ? m : null;
  } catch {
    return null;
  }
}

async function judgeLeg(s: Session, lp: LegPlan): Promise<Judged> {
  const j = s.trust.judged;
  const url = lp.artifact ? `${s.ctx.serverUrl}/${s.ctx.owner}/${s.ctx.repo}/actions/runs/${j.runId}/artifacts/${lp.artifact.id}` : null;
  if (!lp.artifact) {
    const model = lp.model ?? lp.slug ?? 'unknown';
    const why = `no artifact in run ${j.runId}: the leg never reported (runner offline, cancelled, or it stopped before uploading)`;
    return { result: { model, runner: lp.runner, leg: lp.leg, state: 'missing', report: null, error: why, artifactName: lp.expected, artifactUrl: null, base: null }, meta: null, plan: null, abs: null };
  }
  let model = lp.model ?? lp.slug ?? 'unknown';
  let meta: RunMeta | null = null;
  try {
    const dir = await freshDir('nbg-leg-');
    await s.store!.download({ owner: s.ctx.owner, repo: s.ctx.repo, runId: j.runId!, token: s.inputs.token }, lp.artifact, dir);
    if (!lp.model) {
      // Known by its artifact only: github.json names the model, and it must be the one the artifact's name carries.
      const named = claimedModel(dir);
      if (!named || modelSlug(named) !== lp.slug || named.split('/').includes('..') || named.startsWith('/')) throw new InputError(`artifact ${lp.artifact.name}: its ${META_FILE} does not name the model its name carries`);
      model = named;
    }
    meta = verifyMeta(dir, { repository: `${s.ctx.owner}/${s.ctx.repo}`, headSha: j.headSha, modelKey: model });
    const pe = probeJobError(meta);
    if (pe) return { result: errorLeg(s, lp, model, pe.message, pe.exitCode as ExitCode, url), meta, plan: null, abs: null };
    const abs = resolve(s.workspace, model);
    if (!existsSync(abs)) throw new InputError(`model dir ${model} is not in this checkout`);
    const base = planFor(s, abs, model);
    const plan: Plan = { ...base, mode: 'report', runDir: dir, writeDocs: false, docsSkipped: base.docsSkipped ?? 'not written yet: the summary documents each model once every leg is judged', commit: j.headSha, cacheWrite: false };
    const r = await check(plan, { log: actionLog, isolation: isolationOf(meta) });
    return { result: { model, runner: lp.runner, leg: lp.leg, state: 'judged', report: r.report, error: null, artifactName: lp.artifact.name, artifactUrl: url, base: null }, meta, plan, abs };
  } catch (e) {
    const code: ExitCode = e instanceof GateError ? e.exitCode : EXIT.infra;
    out.warning(`${model}${lp.runner ? ` on ${lp.runner}` : ''}: could not judge (${oneLine(e)}); an error, not a FAIL`);
    return { result: errorLeg(s, lp, model, oneLine(e), code, url), meta, plan: null, abs: null };
  }
}

/** Each model's last recorded result per NPU generation on the base branch (read before anything is written). */
async function baseRecords(s: Session, models: string[], base: string): Promise<Map<string, Map<string, BaseRecord>>> {
  const out_ = new Map<string, Map<string, BaseRecord>>();
  let git: Git | null = null;
  try {
    git = gitFor(s.workspace, null, (m) => out.debug(m));
    git.useToken(s.inputs.token);
    if (!(await git.fetchBranch('origin', base, BASE_REF))) git = null;
  } catch (e) {
    out.info(`base branch ${base} not fetched (${oneLine(e)}); the checkout's documents stand for it`);
    git = null;
  }
  for (const model of models) {
    const rel = `${model}/${DOC_PATHS.phase2}`;
    let text: string | null = null;
    try {
      if (git) {
        const blob = await git.blobAt(BASE_REF, rel);
        text = blob ? await git.readBlob(blob) : null;
      } else text = readDocs(resolve(s.workspace, model)).phase2;
      const byNpu = new Map<string, BaseRecord>();
      for (const h of readHistory(text, rel)) {
        const prev = byNpu.get(h.npu);
        if (prev && prev.date > h.date) continue;
        byNpu.set(h.npu, { outcome: h.outcome, cosine: Number.isFinite(h.cosine) ? h.cosine : null, minCosine: Number.isFinite(h.minCosine) ? h.minCosine : null, commit: h.commit, date: h.date });
      }
      out_.set(model, byNpu);
    } catch (e) {
      out.warning(`${rel} on ${base}: ${oneLine(e)}; no base record for ${model}`);
    }
  }
  return out_;
}

/** The commit message of a model's documents: its verdict on each generation. */
function commitMessage(model: string, legs: LegResult[], sha: string, runId: number): string {
  const name = plain(model.split('/').pop() ?? model, 64).replace(/\s+/g, '_');
  const verdicts = legs.map((l) => `${verdictOf(l).toUpperCase()} on ${l.report ? generationName(recordNpu(l.report)) : 'unknown'}`).join(', ');
  return `docs(${name}): record Phase 2 ${verdicts} for ${sha.slice(0, 12)}\n\nWritten by npu-block-gate's fleet summary from workflow run ${runId}.`;
}

/** On a trusted run: every judged model's documents written (passing legs first, so a failing
 * generation's blocker stays) and proposed through one docs PR with a commit per model. */
async function recordDocs(s: Session, judged: Judged[]): Promise<{ url: string | null; number: number | null; note: string }> {
  const j = s.trust.judged;
  const base = docsBase(s);
  let git: Git;
  try {
    git = gitFor(s.workspace, null, (m) => out.debug(m));
  } catch (e) {
    out.warning(`docs: could not record the results through a PR: ${oneLine(e)}`);
    return { url: null, number: null, note: `Documents were not recorded: ${plain(oneLine(e), 300)}.` };
  }
  git.useToken(s.inputs.token);
  const byModel = new Map<string, Judged[]>();
  for (const x of judged) if (x.plan && x.abs && x.result.state === 'judged') byModel.set(x.result.model, [...(byModel.get(x.result.model) ?? []), x]);
  const files = (abs: string) => [join(abs, DOC_PATHS.phase2), join(abs, DOC_PATHS.todo)];
  await restoreFleetDocs(git, 'origin', base, [...byModel.values()].flatMap((xs) => files(xs[0].abs!)), (m) => out.info(m)).catch((e) => out.warning(`docs: could not read ${FLEET_DOCS_BRANCH} (${oneLine(e)}); starting from the checked-out files`));
  const models: { model: string; files: string[]; commitMessage: string }[] = [];
  for (const [model, xs] of [...byModel].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const ordered = [...xs].sort((a, b) => (a.result.report?.outcome === 'pass' ? 0 : 1) - (b.result.report?.outcome === 'pass' ? 0 : 1));
    for (const x of ordered) {
      try {
        const r = await check({ ...x.plan!, writeDocs: true }, { log: actionLog, isolation: x.meta ? isolationOf(x.meta) : null });
        x.result.report = r.report;
      } catch (e) {
        out.warning(`docs: ${model}: not recorded (${oneLine(e)})`);
      }
    }
    models.push({ model, files: files(xs[0].abs!).filter(existsSync), commitMessage: commitMessage(model, xs.map((x) => x.result), j.headSha, s.ctx.runId) });
  }
  if (!models.length) return { url: null, number: null, note: 'No leg was judged, so no document was recorded.' };
  const title = `docs: Phase 2 single-block validation of ${models.length} model${models.length === 1 ? '' : 's'} at ${j.headSha.slice(0, 12)}`;
  const body = [
    `Phase 2 results of workflow run ${s.ctx.runId} for commit ${literal(j.headSha.slice(0, 12))}, one commit per model:`,
    '',
    ...models.map((m) => `- ${literal(m.model)}: ${plain(m.commitMessage.split('\n')[0].replace(/^docs\([^)]*\): record Phase 2 /, ''), 300)}`),
    '',
    `Written by npu-block-gate; the branch \`${FLEET_DOCS_BRANCH}\` is rebuilt on \`${base}\` by every trusted fleet run, keeping what earlier runs recorded until it is merged.`,
  ].join('\n');
  try {
    const r = await upsertFleetDocsPr({ git, api: s.api, remote: 'origin', base, models, title, body, log: (m) => out.info(m) });
    out.info(`docs PR ${r.action}${r.url ? `: ${r.url}` : ''}`);
    return { url: r.url, number: r.number, note: r.url ? `Documents: ${models.length} model${models.length === 1 ? '' : 's'} recorded through [the docs PR](${r.url}), one commit per model.` : `Documents: ${r.action === 'nothing' ? `${base} already records every result` : 'recorded'}.` };
  } catch (e) {
    if (e instanceof DocsPrRefused) return { url: null, number: null, note: plain(e.message, 400) };
    if (classifyWriteError(e) === 'permission') s.writes.deny(`the token cannot push or open PRs here (${oneLine(e)})`);
    out.warning(`docs: could not record the results through a PR: ${oneLine(e)}`);
    return { url: null, number: null, note: `Documents were not recorded: ${plain(oneLine(e), 300)}.` };
  }
}

/** The fleet page (models x NPU generations: the documents with this run's legs as the latest
 * cells) uploaded as its own artifact; the summary's line naming it, or null when it could not be. */
async function fleetPage(s: Session, legs: LegResult[], runUrl: string): Promise<string | null> {
  try {
    const models = [...new Set(legs.map((l) => l.model))].filter((m) => !m.split('/').includes('..') && !m.startsWith('/'));
    const recorded = models.filter((m) => existsSync(resolve(s.workspace, m))).map((m) => modelStatusAt(resolve(s.workspace, m), m.split('/').pop() ?? m, m));
    const dir = await freshDir('nbg-fleet-');
    // A leg without a record (an error) is shown under the generation its runner label ran elsewhere, as in the table.
    writeFleetPage(join(dir, FLEET_PAGE), withLegs(recorded, withRunnerGenerations(legs).legs), `${s.ctx.owner}/${s.ctx.repo}: the documents of this checkout, with the legs of workflow run ${s.trust.judged.runId} as the latest results`, `commit ${s.trust.judged.headSha.slice(0, 12)}; ${runUrl}`);
    const name = fleetArtifactName(s.inputs.artifactName, s.ctx.runAttempt);
    const up = await s.store!.upload(name, dir, s.inputs.retentionDays);
    out.info(`uploaded the fleet page as artifact ${up.name}`);
    return `Fleet page (models × NPU generations): ${FLEET_PAGE} in ${up.url ? `[the artifact ${literal(up.name)}](${up.url})` : `the artifact ${literal(up.name)}`}.`;
  } catch (e) {
    out.warning(`the fleet page was not uploaded: ${oneLine(e)}`);
    return null;
  }
}

interface SummaryOutcome {
  outputs: Record<string, string>;
  /** The step's failure line: failed legs, then what could not be judged (never a FAIL); null when all passed. */
  failure: string | null;
}

export async function summaryJob(s: Session, fi: FleetInputs): Promise<SummaryOutcome> {
  const j = s.trust.judged;
  if (!j.runId) throw new InfraError("mode summary needs the legs' workflow run: its own, a workflow_run event's, or the 'run-id' input");
  if (!j.headSha) throw new InfraError(`run ${j.runId} has no head commit to check the legs' artifacts against`);
  if (!s.store) throw new InfraError("mode summary downloads every leg's run dir: it needs the artifact service (ACTIONS_RUNTIME_TOKEN)");
  const found = await s.store.list({ owner: s.ctx.owner, repo: s.ctx.repo, runId: j.runId, token: s.inputs.token });
  const plans = matchLegs(found, fi.legs, s.inputs.artifactName, j.runAttempt);
  out.info(`summary: ${plans.length} leg${plans.length === 1 ? '' : 's'} of run ${j.runId} (${plans.filter((p) => p.artifact).length} with an artifact)`);
  const judged: Judged[] = [];
  for (const lp of plans) {
    core.startGroup(`npu-block-gate: ${lp.model ?? lp.slug}${lp.runner ? ` on ${lp.runner}` : ''}`);
    try {
      judged.push(await judgeLeg(s, lp));
    } finally {
      core.endGroup();
    }
  }
  const legs = judged.map((x) => x.result);
  const baseBranch = s.ctx.pr?.baseRef || docsBase(s);
  const bases = await baseRecords(s, [...new Set(legs.filter((l) => l.state === 'judged').map((l) => l.model))], baseBranch);
  for (const l of legs) if (l.report && l.state === 'judged') l.base = bases.get(l.model)?.get(recordNpu(l.report)) ?? null;

  const notes: string[] = [];
  if (!fi.legs) notes.push("> The `legs` input was not given: the legs are the artifacts found, so a leg that never reported cannot be named. Pass the affected step's `matrix` output as `legs`.");
  let docsPr: { url: string | null; number: number | null } = { url: null, number: null };
  if (commitsDocs(s)) {
    const r = await recordDocs(s, judged);
    docsPr = r;
    notes.push(r.note);
  } else if (s.inputs.docs !== 'none') notes.push('Documents (phase2_block.md, TODO.md) are recorded by a trusted run (push, schedule, workflow_dispatch), through one docs PR with a commit per model; this run records none.');

  const runUrl = `${s.ctx.serverUrl}/${s.ctx.owner}/${s.ctx.repo}/actions/runs/${j.runId}`;
  const page = await fleetPage(s, legs, runUrl);
  if (page) notes.push(page);
  const opts: SummaryOptions = { commit: j.headSha, runUrl, tool: TOOL, notes };
  const full = summaryMarkdown(legs, opts);
  await core.summary.addRaw(truncateBody(full, SUMMARY_BUDGET, runUrl)).addEOL().write();

  let commentUrl: string | null = null;
  const prNumber = s.ctx.pr?.number ?? (s.api && (j.pullRequests.length || judged.some((x) => x.meta?.pr_number)) ? await resolvePr(s.api, j.pullRequests, judged.find((x) => x.meta?.pr_number)?.meta?.pr_number ?? null, j.headSha, (m) => out.warning(m)) : null);
  if (s.inputs.comment && prNumber !== null) {
    if (!s.writes.allowed || !s.api) s.writes.tell();
    else {
      try {
        const login = await loginFor(s);
        if (login) {
          const key = `fleet-summary/${s.ctx.workflow || 'npu-block-gate'}`;
          const r = await upsertComment(s.api, prNumber, key, summaryCommentBody(legs, opts, key), login);
          out.info(`PR #${prNumber} summary comment ${r.action}: ${r.url}`);
          commentUrl = r.url;
        }
      } catch (e) {
        if (classifyWriteError(e) === 'permission') s.writes.deny(`the token cannot write here (${oneLine(e)})`);
        else out.warning(`could not post the PR comment: ${oneLine(e)}`);
      }
    }
  }

  const c = counts(legs);
  for (const l of legs.filter((x) => verdictOf(x) === 'fail')) {
    const gates = (l.report?.gates ?? []).filter((g) => g.status === 'fail').map((g) => g.id).join(', ');
    out.error(`${l.model} on ${generationName(l.report ? recordNpu(l.report) : null)}: ${gates} failed`, `Phase 2 FAIL ${plain(l.model.split('/').pop(), 64)}`);
  }
  const failed = legs.filter((l) => verdictOf(l) === 'fail').map((l) => `${plain(l.model.split('/').pop(), 64)} on ${generationName(l.report ? recordNpu(l.report) : null)}`);
  const unjudged = legs.filter((l) => verdictOf(l) === 'error' || verdictOf(l) === 'missing').map((l) => `${l.model}${l.runner ? ` on ${l.runner}` : ''} (${verdictOf(l)}: ${l.error ?? 'could not judge'})`);
  const parts: string[] = [];
  if (failed.length) parts.push(`Phase 2 FAIL: ${failed.join('; ')}`);
  if (unjudged.length) parts.push(`could not judge ${unjudged.join('; ')} (an error or a missing leg, not a FAIL verdict)`);
  const num = (x: number | undefined | null) => (typeof x === 'number' && Number.isFinite(x) ? x : x === undefined || x === null ? null : String(x));
  return {
    failure: parts.length ? parts.join('. ') : null,
    outputs: {
      outcome: c.fail ? 'fail' : c.error || c.missing ? 'error' : 'pass',
      legs: String(legs.length),
      passed: String(c.pass),
      failed: String(c.fail),
      errored: String(c.error),
      missing: String(c.missing),
      'comment-url': commentUrl ?? '',
      'docs-pr-url': docsPr.url ?? '',
      'docs-pr-number': docsPr.number ? String(docsPr.number) : '',
      results: JSON.stringify(legs.map((l) => ({
        model_dir: l.model, runner: l.runner, npu: l.report ? recordNpu(l.report) : null, outcome: verdictOf(l),
        cosine: num(l.report?.metrics?.wholeCosine), min_cosine: num(l.report?.metrics?.perPosition.min),
        threshold: l.report && l.state === 'judged' ? l.report.thresholds.perPosition : null,
        artifact_url: l.artifactUrl, error: l.error,
      }))),
    },
  };
}

