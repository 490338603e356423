// What the runner tells us about this job: the event, the repository, the pull request (if any),
// the triggering run of a workflow_run, and whether this job may write (fork PRs and Dependabot get
// a read-only token). Whether the event is trusted is decided in trust.ts, from these facts.
import { readFileSync } from 'node:fs';
import { InputError } from '../errors.ts';

interface PullRequestInfo {
  number: number;
  headSha: string;
  /** owner/name of the head repository; null when the fork was deleted. */
  headRepo: string | null;
  baseRepo: string;
  baseRef: string;
  isFork: boolean;
  /** GITHUB_SHA of a pull_request event: the merge commit GitHub made of head and base (what
   * actions/checkout checks out by default); null when the event has none. */
  mergeSha: string | null;
}

interface WorkflowRunInfo {
  id: number;
  headSha: string;
  /** The event that started the triggering run, e.g. 'pull_request' or 'push'. */
  event: string;
  /** owner/name the triggering run's code came from; null when a fork was deleted. */
  headRepo: string | null;
  runAttempt: number;
  conclusion: string | null;
  /** Empty for fork PRs: GitHub does not fill it across repositories. */
  pullRequests: number[];
  /** The branch the triggering run ran on (null for a tag, or when GitHub did not say). */
  headBranch: string | null;
}

export interface GhContext {
  eventName: string;
  payload: any;
  owner: string;
  repo: string;
  serverUrl: string;
  apiUrl: string;
  runId: number;
  runAttempt: number;
  job: string;
  workflow: string;
  sha: string;
  ref: string;
  actor: string;
  defaultBranch: string | null;
  /** owner/name of the repository the event payload names (normally GITHUB_REPOSITORY). */
  payloadRepo: string | null;
  pr: PullRequestInfo | null;
  workflowRun: WorkflowRunInfo | null;
  /** Why writes are impossible from the start (fork PR, Dependabot, no token), or null. */
  readOnlyReason: string | null;
}

export const PR_EVENTS = ['pull_request', 'pull_request_target', 'pull_request_review', 'pull_request_review_comment'];

export function readContext(env: NodeJS.ProcessEnv, token: string): GhContext {
  const eventName = env.GITHUB_EVENT_NAME ?? '';
  let payload: any = {};
  const path = env.GITHUB_EVENT_PATH;
  if (path) {
    try {
      payload = JSON.parse(readFileSync(path, 'utf8'));
    } catch (e) {
      throw new InputError(`cannot read the event payload: ${(e as Error).message}`, path);
    }
  }
  const full = env.GITHUB_REPOSITORY ?? payload?.repository?.full_name ?? '';
  const [owner, repo] = full.split('/');
  if (!owner || !repo) throw new InputError('GITHUB_REPOSITORY is not set to owner/name; is this running inside GitHub Actions?');

  const pr = pullRequestOf(eventName, payload, full, env.GITHUB_SHA ?? '');
  const workflowRun = workflowRunOf(eventName, payload);

  let readOnlyReason: string | null = null;
  if (!token) readOnlyReason = 'no github-token was given';
  else if (eventName === 'pull_request' && pr?.isFork) readOnlyReason = `pull request #${pr.number} comes from a fork, so the token is read-only`;
  else if (PR_EVENTS.includes(eventName) && (env.GITHUB_ACTOR === 'dependabot[bot]' || payload?.sender?.login === 'dependabot[bot]') && eventName !== 'pull_request_target')
    readOnlyReason = 'Dependabot runs get a read-only token';

  return {
    eventName,
    payload,
    owner,
    repo,
    serverUrl: (env.GITHUB_SERVER_URL || 'https://github.com').replace(/\/+$/, ''),
    apiUrl: (env.GITHUB_API_URL || 'https://api.github.com').replace(/\/+$/, ''),
    runId: Number(env.GITHUB_RUN_ID ?? 0) || 0,
    runAttempt: Number(env.GITHUB_RUN_ATTEMPT ?? 1) || 1,
    job: env.GITHUB_JOB ?? '',
    workflow: env.GITHUB_WORKFLOW ?? '',
    sha: env.GITHUB_SHA ?? '',
    ref: env.GITHUB_REF ?? '',
    actor: env.GITHUB_ACTOR ?? '',
    defaultBranch: payload?.repository?.default_branch ?? null,
    payloadRepo: typeof payload?.repository?.full_name === 'string' ? payload.repository.full_name : null,
    pr,
    workflowRun,
    readOnlyReason,
  };
}

function pullRequestOf(eventName: string, payload: any, full: string, githubSha: string): PullRequestInfo | null {
  const p = payload?.pull_request;
  if (!PR_EVENTS.includes(eventName) || !p || typeof p.number !== 'number') return null;
  const headRepo: string | null = p.head?.repo?.full_name ?? null;
  const baseRepo: string = p.base?.repo?.full_name ?? full;
  const headSha = String(p.head?.sha ?? '');
  return {
    number: p.number,
    headSha,
    headRepo,
    baseRepo,
    baseRef: String(p.base?.ref ?? ''),
    isFork: headRepo === null || headRepo.toLowerCase() !== baseRepo.toLowerCase(),
    mergeSha: eventName === 'pull_request' && githubSha && githubSha !== headSha ? githubSha : null,
  };
}

function workflowRunOf(eventName: string, payload: any): WorkflowRunInfo | null {
  const w = payload?.workflow_run;
  if (eventName !== 'workflow_run' || !w) return null;
  return {
    id: Number(w.id),
    headSha: String(w.head_sha ?? ''),
    event: String(w.event ?? ''),
    headRepo: typeof w.head_repository?.full_name === 'string' ? w.head_repository.full_name : null,
    runAttempt: Number(w.run_attempt ?? 1) || 1,
    conclusion: w.conclusion ?? null,
    pullRequests: Array.isArray(w.pull_requests) ? w.pull_requests.map((p: any) => Number(p.number)).filter(Number.isInteger) : [],
    headBranch: typeof w.head_branch === 'string' && w.head_branch ? w.head_branch : null,
  };
}

/**
 * Every write goes through one of these. It starts read-only when the context says so, turns
 * read-only the first time GitHub answers a write with a permission error, and says so once.
 */
export class WriteGate {
  private reason: string | null;
  private told = false;
  constructor(
    reason: string | null,
    private readonly notice: (msg: string) => void,
  ) {
    this.reason = reason;
  }
  get allowed(): boolean {
    return this.reason === null;
  }
  /** Records that writes are impossible, and prints the one notice. */
  deny(reason: string): void {
    if (this.reason === null) this.reason = reason;
    this.tell();
  }
  /** Called where a write would happen: prints the one notice if writes are off. */
  tell(): void {
    if (this.reason !== null && !this.told) {
      this.told = true;
      this.notice(`npu-block-gate: skipping every GitHub write (PR comment, docs branch and PR): ${this.reason}. The check still passes or fails on the numbers.`);
    }
  }
}
