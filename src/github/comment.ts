// The sticky PR comment: one per model, found by a hidden marker among the token's own comments
// (the token's login from GraphQL viewer; paginated), updated in place, left alone when the result did not change, and cut under
// GitHub's 65,536-character body limit with a notice and a link to the artifact.
import { createHash } from 'node:crypto';
import type { GitHubApi, IssueComment } from './api.ts';
import type { Report } from '../record/report.ts';

/** GitHub rejects issue comment bodies longer than this (characters). */
export const GITHUB_BODY_LIMIT = 65_536;
/** What we aim for: a margin under the limit for the marker and multi-unit characters. */
export const COMMENT_BUDGET = 65_000;
const MARKER_PREFIX = 'npu-block-gate:comment';

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

interface UpsertResult {
  action: 'created' | 'updated' | 'unchanged';
  id: number;
  url: string;
}

/**
 * Who the token writes comments as. The token itself says (GraphQL `viewer`), so a GitHub App's
 * token finds its own `<app>[bot]` comments instead of guessing github-actions[bot]; when it
 * cannot say (GraphQL refused), the `comment-author` input; else null (the caller then does not
 * post, rather than add a new comment every run).
 */
export async function commentLogin(api: GitHubApi, fallback: string | null, debug: (m: string) => void = () => {}): Promise<{ login: string | null; why: string }> {
  try {
    const login = await api.viewerLogin();
    return { login, why: `the token acts as ${login} (GraphQL viewer)` };
  } catch (e) {
    debug(`GraphQL viewer failed: ${(e as Error)?.message ?? e}`);
    if (fallback) return { login: fallback, why: `the comment-author input (${fallback}); the token could not tell (GraphQL viewer refused)` };
    return { login: null, why: 'the token cannot tell who it acts as (GraphQL viewer refused) and no comment-author input was given' };
  }
}

/** A comment written by `login`. REST shows bots as `<name>[bot]`; accept a login given without it. */
function writtenBy(c: IssueComment, login: string): boolean {
  if (c.login === login) return true;
  return c.type === 'Bot' && !login.endsWith('[bot]') && c.login === `${login}[bot]`;
}

interface Found {
  id: number;
  body: string;
  url: string;
}

async function findOwn(api: GitHubApi, issue: number, key: string, login: string): Promise<Found[]> {
  const found: Found[] = [];
  for await (const c of api.issueComments(issue)) {
    if (!writtenBy(c, login)) continue;
    if (!c.body.startsWith(key + ' ') && !c.body.startsWith(key + '-->')) continue;
    found.push({ id: c.id, body: c.body, url: c.url });
  }
  return found.sort((a, b) => a.id - b.id);
}

/**
 * Creates or updates the model's comment. `body` must start with marker(modelKey, digest).
 * When an own comment with the same digest exists, nothing is written. After a create, the
 * lookup runs again so a concurrent run's duplicate is folded into the oldest comment.
 */
export async function upsertComment(api: GitHubApi, issue: number, modelKey: string, body: string, login: string): Promise<UpsertResult> {
  if (body.length >= GITHUB_BODY_LIMIT) throw new Error(`comment body is ${body.length} characters; the limit is ${GITHUB_BODY_LIMIT}`);
  const key = markerKey(modelKey);
  const digest = digestOf(body.slice(0, body.indexOf('-->') + 3));
  const own = await findOwn(api, issue, key, login);
  const first = own[0];
  if (first) {
    if (first.body === body || (digest !== null && digestOf(first.body.split('\n', 1)[0]) === digest)) {
      return { action: 'unchanged', id: first.id, url: first.url };
    }
    const r = await api.updateComment(first.id, body);
    return { action: 'updated', id: r.id, url: r.url };
  }
  const created = await api.createComment(issue, body);
  // Two runs racing can both create; keep the oldest, drop the rest.
  const after = await findOwn(api, issue, key, login);
  if (after.length > 1) {
    const keep = after[0];
    for (const extra of after.slice(1)) await api.deleteComment(extra.id);
    if (keep.id !== created.id) {
      if (keep.body !== body) await api.updateComment(keep.id, body);
      return { action: 'updated', id: keep.id, url: keep.url };
    }
  }
  return { action: 'created', id: created.id, url: created.url };
}
