// Split mode: the NPU job (mode probe, no token) uploads the run dir with a small record of the
// event it ran for; the trusted job (mode report, workflow_run) downloads it, treats every byte as
// untrusted, and checks it belongs to the run that triggered it before judging and posting.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../errors.ts';
import type { GhContext } from './context.ts';
import { headSha } from './context.ts';
import type { GateOctokit } from './octokit.ts';

/** Written next to probe.json in the uploaded run dir. */
export const META_FILE = 'github.json';
export const META_SCHEMA = 'npu-block-gate/github';

export interface RunMeta {
  schema: typeof META_SCHEMA;
  schema_version: 1;
  repository: string;
  event: string;
  head_sha: string;
  pr_number: number | null;
  run_id: number;
  run_attempt: number;
  /** Repository-relative model dir. */
  model: string;
}

export function writeMeta(runDir: string, ctx: GhContext, modelKey: string): RunMeta {
  const meta: RunMeta = {
    schema: META_SCHEMA,
    schema_version: 1,
    repository: `${ctx.owner}/${ctx.repo}`,
    event: ctx.eventName,
    head_sha: headSha(ctx),
    pr_number: ctx.pr?.number ?? null,
    run_id: ctx.runId,
    run_attempt: ctx.runAttempt,
    model: modelKey,
  };
  writeFileSync(join(runDir, META_FILE), JSON.stringify(meta, null, 2) + '\n');
  return meta;
}

const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/** Reads github.json from a downloaded run dir and checks it against the triggering run. */
export function verifyMeta(runDir: string, expected: { repository: string; headSha: string; modelKey: string }): RunMeta {
  const path = join(runDir, META_FILE);
  let raw: any;
  try {
    if (statSync(path).size > 64 * 1024) throw new Error('larger than 64 KiB');
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new InputError(`not a valid split-mode record (${(e as Error).message}); was it uploaded by mode: probe?`, META_FILE);
  }
  const bad = (what: string) => new InputError(what, META_FILE);
  if (raw?.schema !== META_SCHEMA) throw bad(`schema is ${JSON.stringify(raw?.schema)}, expected ${META_SCHEMA}`);
  if (typeof raw.head_sha !== 'string' || !SHA.test(raw.head_sha)) throw bad('head_sha is not a commit SHA');
  if (raw.head_sha !== expected.headSha)
    throw bad(`head SHA ${raw.head_sha.slice(0, 12)} does not match the triggering run's head SHA ${expected.headSha.slice(0, 12)}; refusing to judge another commit's run dir`);
  if (typeof raw.repository !== 'string' || raw.repository.toLowerCase() !== expected.repository.toLowerCase())
    throw bad(`repository ${JSON.stringify(raw.repository)} is not ${expected.repository}`);
  if (raw.pr_number !== null && !(Number.isInteger(raw.pr_number) && raw.pr_number > 0)) throw bad('pr_number is not a pull request number');
  if (typeof raw.model !== 'string' || raw.model !== expected.modelKey)
    throw bad(`model ${JSON.stringify(raw.model)} is not the model dir this step judges (${expected.modelKey})`);
  return raw as RunMeta;
}

/**
 * The pull request a workflow_run was for. GitHub leaves workflow_run.pull_requests empty for
 * forks, so the number may come from the untrusted record; it is used only if that PR's head is
 * the commit the triggering run tested.
 */
export async function resolvePr(
  octokit: GateOctokit,
  ctx: GhContext,
  sha: string,
  claimed: number | null,
  warn: (m: string) => void,
): Promise<number | null> {
  const candidate = ctx.workflowRun?.pullRequests[0] ?? claimed;
  if (!candidate) return null;
  try {
    const { data } = await octokit.rest.pulls.get({ owner: ctx.owner, repo: ctx.repo, pull_number: candidate });
    if (data.head.sha !== sha) {
      warn(`pull request #${candidate} is now at ${data.head.sha.slice(0, 12)}, not ${sha.slice(0, 12)}; not commenting on it`);
      return null;
    }
    return candidate;
  } catch (e) {
    warn(`cannot read pull request #${candidate}: ${(e as Error).message}; not commenting`);
    return null;
  }
}
