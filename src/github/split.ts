// Split mode: the NPU job (mode probe, no token) uploads the run dir with a small record of the
// event it ran for, and of its error when the probe could not finish; the trusted job (mode report,
// workflow_run) downloads it, treats every byte as untrusted, and checks it belongs to the run that
// triggered it before judging and posting.
import { readFileSync, rmSync, statSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { InputError, EXIT, type ExitCode } from '../errors.ts';
import { writeAtomic } from '../fs/atomic.ts';
import type { IsolationRow } from '../record/report.ts';
import type { GhContext } from './context.ts';
import type { TrustDecision } from './trust.ts';
import type { GitHubApi } from './api.ts';

/** Written next to probe.json in the uploaded run dir. */
export const META_FILE = 'github.json';
export const META_SCHEMA = 'npu-block-gate/github';
/** The longest probe error message carried to the report job. */
const MAX_ERROR_CHARS = 2000;

export interface RunMeta {
  schema: typeof META_SCHEMA;
  schema_version: 1;
  repository: string;
  event: string;
  /** The judged commit: the PR head for pull requests, else GITHUB_SHA. */
  head_sha: string;
  /** GITHUB_SHA of the probe job (a pull_request's merge commit). */
  sha?: string | null;
  /** What the probe job had checked out (HEAD), when it could tell. */
  checkout_sha?: string | null;
  pr_number: number | null;
  run_id: number;
  run_attempt: number;
  /** Repository-relative model dir. */
  model: string;
  /** The probe could not finish: its one-line error and exit code (2 input, 3 infrastructure). */
  probe_error?: { message: string; exit_code: number } | null;
  /** How the probe ran, isolated from the Action (null when it did not get that far). */
  isolation?: { mode: IsolationRow['mode']; detail: string; degraded?: string | null } | null;
}

/** The longest isolation detail carried to the report job. */
const MAX_DETAIL_CHARS = 500;

export function writeMeta(
  runDir: string,
  ctx: GhContext,
  trust: TrustDecision,
  modelKey: string,
  extra: { checkoutSha: string | null; error: { message: string; exitCode: number } | null; isolation: IsolationRow | null },
): RunMeta {
  const meta: RunMeta = {
    schema: META_SCHEMA,
    schema_version: 1,
    repository: `${ctx.owner}/${ctx.repo}`,
    event: ctx.eventName,
    head_sha: trust.judged.headSha,
    sha: ctx.sha || null,
    checkout_sha: extra.checkoutSha,
    pr_number: ctx.pr?.number ?? null,
    run_id: ctx.runId,
    run_attempt: ctx.runAttempt,
    model: modelKey,
    probe_error: extra.error ? { message: extra.error.message.slice(0, MAX_ERROR_CHARS), exit_code: extra.error.exitCode } : null,
    isolation: extra.isolation ? { mode: extra.isolation.mode, detail: extra.isolation.detail.slice(0, MAX_DETAIL_CHARS), degraded: extra.isolation.degraded?.slice(0, MAX_DETAIL_CHARS) ?? null } : null,
  };
  mkdirSync(runDir, { recursive: true });
  // Beside files the probe wrote (none of its processes is left): whatever the probe put at this name
  // is removed (rm never follows a link), then the file is made with an exclusive create and renamed
  // into place, so a link planted meanwhile is replaced, never written through.
  rmSync(join(runDir, META_FILE), { recursive: true, force: true });
  writeAtomic(join(runDir, META_FILE), JSON.stringify(meta, null, 2) + '\n', false);
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
  if (raw?.schema !== META_SCHEMA) throw bad(`schema is ${JSON.stringify(String(raw?.schema)).slice(0, 80)}, expected ${META_SCHEMA}`);
  if (typeof raw.head_sha !== 'string' || !SHA.test(raw.head_sha)) throw bad('head_sha is not a commit SHA');
  if (raw.head_sha !== expected.headSha)
    throw bad(`head SHA ${raw.head_sha.slice(0, 12)} does not match the triggering run's head SHA ${expected.headSha.slice(0, 12)}; refusing to judge another commit's run dir`);
  if (typeof raw.repository !== 'string' || raw.repository.toLowerCase() !== expected.repository.toLowerCase())
    throw bad(`repository ${JSON.stringify(String(raw.repository)).slice(0, 80)} is not ${expected.repository}`);
  if (raw.pr_number !== null && raw.pr_number !== undefined && !(Number.isInteger(raw.pr_number) && raw.pr_number > 0)) throw bad('pr_number is not a pull request number');
  if (typeof raw.model !== 'string' || raw.model !== expected.modelKey)
    throw bad(`model ${JSON.stringify(String(raw.model)).slice(0, 80)} is not the model dir this step judges (${expected.modelKey})`);
  for (const k of ['sha', 'checkout_sha'] as const) {
    if (raw[k] !== null && raw[k] !== undefined && !(typeof raw[k] === 'string' && SHA.test(raw[k]))) throw bad(`${k} is not a commit SHA`);
  }
  const e = raw.probe_error;
  if (e !== null && e !== undefined) {
    if (typeof e !== 'object' || typeof e.message !== 'string' || e.message.length > MAX_ERROR_CHARS || ![EXIT.input, EXIT.infra].includes(e.exit_code)) {
      throw bad('probe_error must be { message: a string of at most 2000 characters, exit_code: 2 or 3 }');
    }
  }
  const iso = raw.isolation;
  if (iso !== null && iso !== undefined) {
    const okDegraded = iso.degraded === undefined || iso.degraded === null || (typeof iso.degraded === 'string' && iso.degraded.length <= MAX_DETAIL_CHARS);
    if (typeof iso !== 'object' || !['uid', 'namespace', 'none'].includes(iso.mode) || typeof iso.detail !== 'string' || iso.detail.length > MAX_DETAIL_CHARS || !okDegraded) {
      throw bad(`isolation must be { mode: uid, namespace or none, detail: a string of at most ${MAX_DETAIL_CHARS} characters, degraded: null or such a string }`);
    }
  }
  return { ...raw, pr_number: raw.pr_number ?? null, isolation: iso ? { mode: iso.mode, detail: iso.detail, degraded: iso.degraded ?? null } : null } as RunMeta;
}

/** The probe job's own error, as an error of this job (never a FAIL verdict). */
export function probeJobError(meta: RunMeta): { message: string; exitCode: ExitCode } | null {
  const e = meta.probe_error;
  if (!e) return null;
  return { message: `the probe job could not run the check: ${e.message.replace(/\s*[\r\n]+\s*/g, ' ')}`, exitCode: e.exit_code as ExitCode };
}

/**
 * The pull request a judged run was for. GitHub leaves workflow_run.pull_requests empty for
 * forks, so the number may come from the untrusted record; it is used only if that PR's head is
 * the commit the triggering run tested.
 */
export async function resolvePr(api: GitHubApi, candidates: number[], claimed: number | null, sha: string, warn: (m: string) => void): Promise<number | null> {
  const candidate = candidates[0] ?? claimed;
  if (!candidate) return null;
  try {
    const p = await api.getPull(candidate);
    if (p.headSha !== sha) {
      warn(`pull request #${candidate} is now at ${p.headSha.slice(0, 12)}, not ${sha.slice(0, 12)}; not commenting on it`);
      return null;
    }
    return candidate;
  } catch (e) {
    warn(`cannot read pull request #${candidate}: ${(e as Error).message}; not commenting`);
    return null;
  }
}
