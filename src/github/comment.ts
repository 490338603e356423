// The sticky PR comment: one per model, found by a hidden marker among the token's own comments
// (paginated), updated in place, left alone when the result did not change, and cut under
// GitHub's 65,536-character body limit with a notice and a link to the artifact.
import { createHash } from 'node:crypto';
import type { GateOctokit } from './octokit.ts';
import { httpStatus } from './octokit.ts';
import type { Report } from '../report/types.ts';

/** GitHub rejects issue comment bodies longer than this (characters). */
export const GITHUB_BODY_LIMIT = 65_536;
/** What we aim for: a margin under the limit for the marker and multi-unit characters. */
export const COMMENT_BUDGET = 65_000;
export const MARKER_PREFIX = 'npu-block-gate:comment';
/** GITHUB_TOKEN acts as this user; GET /user is refused to installation tokens. */
export const ACTIONS_BOT = 'github-actions[bot]';

/** The hidden first line: which model this comment is about, and a digest of the result. */
export function marker(modelKey: string, digest?: string): string {
  const key = modelKey.replace(/--+/g, '-').replace(/[<>\s]/g, '_');
  return `<!-- ${MARKER_PREFIX} model=${key}${digest ? ` digest=${digest}` : ''} -->`;
}

/** The part of a marker that identifies the model, for lookup. */
export function markerKey(modelKey: string): string {
  return marker(modelKey).replace(/ -->$/, '');
}

export function digestOf(body: string): string | null {
  return /digest=([0-9a-f]{16,64})/.exec(body)?.[1] ?? null;
}

/**
 * A digest of what the comment says, over the parts of the report that describe the result
 * (not the clock, the run dir or how long things took), so a re-run with the same result is
 * recognised as unchanged even though links to its run differ.
 */
export function resultDigest(report: Report, extra = ''): string {
  const stable = {
    tool: report.tool,
    outcome: report.outcome,
    error: report.error,
    model: report.model,
    commit: report.commit,
    prompt: report.prompt,
    thresholds: report.thresholds,
    gates: report.gates,
    metrics: report.metrics,
    warnings: report.warnings,
    integration: report.integration,
    // A reference-cache hit or miss says how the run went, not what it found.
    reference: report.reference && { ...report.reference, cache: undefined },
    environment: report.environment,
    bisect: report.bisect,
    layers: report.layers,
  };
  return createHash('sha256').update(JSON.stringify(stable)).update('\0').update(extra).digest('hex').slice(0, 32);
}

/**
 * Cuts markdown to at most `budget` characters at a line boundary, closes a code fence or
 * <details> left open by the cut, and appends a notice that links to the full report.
 */
export function truncateBody(body: string, budget: number, fullUrl: string | null): string {
  if (body.length <= budget) return body;
  const link = fullUrl ? `[the run's artifact](${fullUrl})` : "the run's artifact";
  const notice =
    `\n\n> [!WARNING]\n> This comment was cut: the full report is ${body.length.toLocaleString('en-US')} characters and ` +
    `GitHub comments hold at most ${GITHUB_BODY_LIMIT.toLocaleString('en-US')}. The complete report (report.md, report.json) is in ${link}.\n`;
  const room = budget - notice.length - 64; // room for closing tags
  let kept = body.slice(0, Math.max(0, room));
  const nl = kept.lastIndexOf('\n');
  if (nl > 0) kept = kept.slice(0, nl);
  let closers = '';
  const fences = kept.split('\n').filter((l) => /^\s*(```|~~~)/.test(l)).length;
  if (fences % 2 === 1) closers += '\n```';
  const opened = (kept.match(/<details\b/gi) ?? []).length - (kept.match(/<\/details>/gi) ?? []).length;
  for (let i = 0; i < opened; i++) closers += '\n\n</details>';
  return kept + closers + notice;
}

export interface CommentTarget {
  owner: string;
  repo: string;
  issueNumber: number;
}

export interface UpsertResult {
  action: 'created' | 'updated' | 'unchanged';
  id: number;
  url: string;
}

/** The login the token acts as: GET /user for personal tokens, github-actions[bot] for GITHUB_TOKEN. */
export async function tokenLogin(octokit: GateOctokit): Promise<string> {
  try {
    const { data } = await octokit.rest.users.getAuthenticated();
    return data.login;
  } catch (e) {
    const s = httpStatus(e);
    if (s === 403 || s === 401 || s === 404) return ACTIONS_BOT;
    throw e;
  }
}

interface Found {
  id: number;
  body: string;
  url: string;
}

async function findOwn(octokit: GateOctokit, t: CommentTarget, key: string, login: string): Promise<Found[]> {
  const found: Found[] = [];
  const iterator = octokit.paginate.iterator(octokit.rest.issues.listComments, {
    owner: t.owner,
    repo: t.repo,
    issue_number: t.issueNumber,
    per_page: 100,
  });
  for await (const page of iterator) {
    for (const c of page.data) {
      if (c.user?.login !== login) continue;
      const body = c.body ?? '';
      if (!body.startsWith(key + ' ') && !body.startsWith(key + '-->')) continue;
      found.push({ id: c.id, body, url: c.html_url });
    }
  }
  return found.sort((a, b) => a.id - b.id);
}

/**
 * Creates or updates the model's comment. `body` must start with marker(modelKey, digest).
 * When an own comment with the same digest exists, nothing is written. After a create, the
 * lookup runs again so a concurrent run's duplicate is folded into the oldest comment.
 */
export async function upsertComment(
  octokit: GateOctokit,
  t: CommentTarget,
  modelKey: string,
  body: string,
  login: string,
): Promise<UpsertResult> {
  if (body.length >= GITHUB_BODY_LIMIT) throw new Error(`comment body is ${body.length} characters; the limit is ${GITHUB_BODY_LIMIT}`);
  const key = markerKey(modelKey);
  const digest = digestOf(body.slice(0, body.indexOf('-->') + 3));
  const own = await findOwn(octokit, t, key, login);
  const first = own[0];
  if (first) {
    if (first.body === body || (digest !== null && digestOf(first.body.split('\n', 1)[0]) === digest)) {
      return { action: 'unchanged', id: first.id, url: first.url };
    }
    const { data } = await octokit.rest.issues.updateComment({ owner: t.owner, repo: t.repo, comment_id: first.id, body });
    return { action: 'updated', id: data.id, url: data.html_url };
  }
  const { data } = await octokit.rest.issues.createComment({ owner: t.owner, repo: t.repo, issue_number: t.issueNumber, body });
  // Two runs racing can both create; keep the oldest, drop the rest.
  const after = await findOwn(octokit, t, key, login);
  if (after.length > 1) {
    const keep = after[0];
    for (const extra of after.slice(1)) {
      await octokit.rest.issues.deleteComment({ owner: t.owner, repo: t.repo, comment_id: extra.id });
    }
    if (keep.id !== data.id) {
      if (keep.body !== body) await octokit.rest.issues.updateComment({ owner: t.owner, repo: t.repo, comment_id: keep.id, body });
      return { action: 'updated', id: keep.id, url: keep.url };
    }
  }
  return { action: 'created', id: data.id, url: data.html_url };
}
