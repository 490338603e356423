// Who may be believed (DESIGN.md "Trust"), as an allow-list. The probe imports the code of the
// commit it runs on; the numbers it writes are only as good as that code. So:
//  - mode full / probe (code runs here): trusted only on push, schedule and workflow_dispatch on
//    the repository itself. Everything else (pull_request, pull_request_target, merge_group,
//    issue_comment, workflow_run, repository_dispatch, check_suite, ...) is untrusted, and the
//    probe then runs the event's code isolated.
//  - mode report (no code runs here): trusted only when the run whose artifact is judged (the
//    triggering workflow_run, or the `run-id` input, looked up through the API) was itself one of
//    those events and its head repository is this repository.
// A trusted run writes the caches, and records documents (docs: auto) when it ran on the default
// branch or one `docs-branches` lists: a push elsewhere is judged and reported, but opens no docs
// PR against main. `docs: pr` additionally records from same-repository pull requests (the admin's
// choice), never from forks.
// The commit recorded is always the judged run's head commit, never this job's GITHUB_SHA.
import type { GhContext } from './context.ts';
import { PR_EVENTS } from './context.ts';
import type { DocsMode, Mode } from './inputs.ts';

export const TRUSTED_EVENTS = ['push', 'schedule', 'workflow_dispatch'] as const;

/** What is known about the run whose code produced the numbers. */
export interface RunFacts {
  event: string;
  /** owner/name the code came from; null when unknown (a deleted fork). */
  headRepo: string | null;
  headSha: string;
  runId: number | null;
  runAttempt: number;
  conclusion: string | null;
  /** Pull requests GitHub associates with the run (empty for forks). */
  pullRequests: number[];
  /** The branch it ran on (null: a tag, or not known). Documents come only from the default branch or listed ones. */
  branch?: string | null;
  /** Where the facts came from, for messages. */
  source: 'this job' | 'workflow_run event' | 'run-id lookup';
}

export interface TrustDecision {
  /** On the allow-list: documents with docs: auto, cache writes. */
  trusted: boolean;
  /** This job runs (mode full / probe) code from an event that is not trusted: isolate the probe. */
  untrustedCode: boolean;
  /** Documents may be committed from this run (trusted, or docs: pr on a same-repository PR). */
  recordDocs: boolean;
  /** One line for the log: why. */
  reason: string;
  /** The run judged: its event, head repository and head commit (the commit recorded). */
  judged: RunFacts;
  /** The judged head and this repository are the same repository. */
  sameRepo: boolean;
  /** pull_request in mode full: GITHUB_SHA, the merge commit that was checked out (null otherwise). */
  mergeSha: string | null;
}

function same(a: string | null, b: string): boolean {
  return a !== null && a.toLowerCase() === b.toLowerCase();
}

/** The facts of this job's own event (mode full / probe). */
function ownRun(ctx: GhContext): RunFacts {
  const full = `${ctx.owner}/${ctx.repo}`;
  const isPr = PR_EVENTS.includes(ctx.eventName);
  return {
    event: ctx.eventName,
    headRepo: isPr ? (ctx.pr?.headRepo ?? null) : (ctx.payloadRepo ?? full),
    headSha: (isPr ? ctx.pr?.headSha : null) || ctx.sha,
    runId: ctx.runId || null,
    runAttempt: ctx.runAttempt,
    conclusion: null,
    pullRequests: ctx.pr ? [ctx.pr.number] : [],
    source: 'this job',
    branch: isPr ? null : (/^refs\/heads\/(.+)$/.exec(ctx.ref)?.[1] ?? null),
  };
}

/** The facts of the triggering run, from the workflow_run payload. */
export function triggeringRun(ctx: GhContext): RunFacts | null {
  const w = ctx.workflowRun;
  if (!w) return null;
  return { event: w.event, headRepo: w.headRepo, headSha: w.headSha, runId: w.id, runAttempt: w.runAttempt, conclusion: w.conclusion, pullRequests: w.pullRequests, source: 'workflow_run event', branch: w.headBranch };
}

/** The facts of a run read from GET /repos/{owner}/{repo}/actions/runs/{run_id}. */
export function runFromApi(data: any): RunFacts {
  return {
    event: String(data?.event ?? ''),
    headRepo: typeof data?.head_repository?.full_name === 'string' ? data.head_repository.full_name : null,
    headSha: String(data?.head_sha ?? ''),
    runId: Number(data?.id) || null,
    runAttempt: Number(data?.run_attempt ?? 1) || 1,
    conclusion: typeof data?.conclusion === 'string' ? data.conclusion : null,
    pullRequests: Array.isArray(data?.pull_requests) ? data.pull_requests.map((p: any) => Number(p?.number)).filter((n: number) => Number.isInteger(n) && n > 0) : [],
    source: 'run-id lookup',
    branch: typeof data?.head_branch === 'string' && data.head_branch ? data.head_branch : null,
  };
}

/**
 * The decision for this job. `judged` is the run whose artifact mode report judges (from the
 * workflow_run payload or the run-id lookup); ignored in mode full / probe.
 */
export function decideTrust(ctx: GhContext, mode: Mode, docs: DocsMode, judged: RunFacts | null, docsBranches: readonly string[] = []): TrustDecision {
  const full = `${ctx.owner}/${ctx.repo}`;
  const allowListed = (event: string) => (TRUSTED_EVENTS as readonly string[]).includes(event);
  // A trusted run anywhere is judged and reported; its documents are proposed against the default
  // branch only when it ran there, or on a branch the admin lists (docs-branches).
  const docsFrom = [...new Set([...(ctx.defaultBranch ? [ctx.defaultBranch] : []), ...docsBranches])];
  const onDocsBranch = (b: string | null | undefined) => !!b && docsFrom.includes(b);
  const elsewhere = (b: string | null | undefined) =>
    `; documents are proposed only from ${docsFrom.length ? docsFrom.join(', ') : 'the default branch'} (docs-branches lists more): ${b ? `branch ${b}` : 'this ref'} is judged and reported, no docs PR`;

  if (mode !== 'report') {
    const run = ownRun(ctx);
    const sameRepo = same(run.headRepo, full);
    const trusted = allowListed(ctx.eventName) && sameRepo;
    const samePr = ctx.eventName === 'pull_request' && ctx.pr !== null && !ctx.pr.isFork;
    const recordDocs = (trusted && onDocsBranch(run.branch)) || (docs === 'pr' && samePr);
    const reason = trusted
      ? `${ctx.eventName} on ${full}: trusted${onDocsBranch(run.branch) ? '' : elsewhere(run.branch)}`
      : `${ctx.eventName || 'unknown event'}${run.headRepo && !sameRepo ? ` from ${run.headRepo}` : ''} is not on the allow-list (push, schedule, workflow_dispatch on ${full}): untrusted${recordDocs ? '; documents recorded (docs: pr, same-repository pull request)' : ''}`;
    return { trusted, untrustedCode: !trusted, recordDocs, reason, judged: run, sameRepo, mergeSha: ctx.pr?.mergeSha ?? null };
  }

  // mode report: this job runs no project code; what matters is where the numbers came from.
  if (!judged) {
    return {
      trusted: false, untrustedCode: false, recordDocs: false, sameRepo: false, mergeSha: null,
      reason: 'no triggering run to judge (not a workflow_run event and no run-id): untrusted',
      judged: { event: '', headRepo: null, headSha: '', runId: null, runAttempt: 1, conclusion: null, pullRequests: [], source: 'this job' },
    };
  }
  const sameRepo = same(judged.headRepo, full);
  // A pull request can run this job's workflow too (pull_request with run-id): never trusted.
  const ownEventOk = !PR_EVENTS.includes(ctx.eventName);
  const trusted = ownEventOk && allowListed(judged.event) && sameRepo;
  const recordDocs = (trusted && onDocsBranch(judged.branch)) || (ownEventOk && docs === 'pr' && judged.event === 'pull_request' && sameRepo);
  const what = `run ${judged.runId ?? '?'} (${judged.source}): ${judged.event || 'unknown event'} from ${judged.headRepo ?? 'an unknown repository'}`;
  const reason = trusted
    ? `${what}: trusted${onDocsBranch(judged.branch) ? '' : elsewhere(judged.branch)}`
    : `${what}${ownEventOk ? '' : `, judged from a ${ctx.eventName} job`} is not a push, schedule or workflow_dispatch on ${full}: untrusted${recordDocs ? '; documents recorded (docs: pr, same-repository pull request)' : ''}`;
  return { trusted, untrustedCode: false, recordDocs, reason, judged, sameRepo, mergeSha: null };
}
