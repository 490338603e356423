// The one GitHub helper: every REST and GraphQL route the Action calls (comments, pull requests,
// workflow runs, the token's own login) and the one place that decides what a failed write means.
import type { GateOctokit } from './octokit.ts';
import { httpStatus } from './octokit.ts';
import { runFromApi, type RunFacts } from './trust.ts';

export interface IssueComment {
  id: number;
  body: string;
  url: string;
  login: string | null;
  type: string | null;
}

export interface PullRequest {
  number: number;
  url: string;
  title: string;
  body: string;
  state: string;
  base: string;
  headSha: string;
  headRepo: string | null;
}

/** Why a write failed, as the callers need it. */
type WriteFailure =
  /** The token may not write here (fork PR, Dependabot, read-only permissions, bad credentials). */
  | 'permission'
  /** The repository does not let GitHub Actions create or approve pull requests. */
  | 'prs-disabled'
  | 'other';

/** The message GitHub gives when "Allow GitHub Actions to create and approve pull requests" is off. */
const PRS_DISABLED = /not permitted to create or approve pull requests/i;

export function classifyWriteError(err: unknown): WriteFailure {
  const status = httpStatus(err);
  const msg = String((err as Error)?.message ?? err ?? '');
  if (PRS_DISABLED.test(msg)) return 'prs-disabled';
  if (/rate limit/i.test(msg)) return 'other';
  if (status === 401) return 'permission';
  if ((status === 403 || status === 404) && /Resource not accessible|must have (admin|push|write)|Write access|Not Found|Bad credentials/i.test(msg)) return 'permission';
  // git push refusals reach us as GitError text, not an HTTP status.
  if (status === null && /(?:\b403\b|permission to .* denied|Write access to repository not granted|The requested URL returned error: 40[13])/i.test(msg)) return 'permission';
  return 'other';
}

/** The token cannot write here: fork PRs, Dependabot, read-only permissions. */
export function isPermissionError(err: unknown): boolean {
  return classifyWriteError(err) === 'permission';
}

function pull(d: any): PullRequest {
  return {
    number: d.number,
    url: d.html_url,
    title: d.title ?? '',
    body: d.body ?? '',
    state: d.state,
    base: d.base?.ref ?? '',
    headSha: d.head?.sha ?? '',
    headRepo: d.head?.repo?.full_name ?? null,
  };
}

export class GitHubApi {
  constructor(
    readonly octokit: GateOctokit,
    readonly owner: string,
    readonly repo: string,
  ) {}

  private get where() {
    return { owner: this.owner, repo: this.repo };
  }

  /**
   * The login the token acts as, from the token itself (GraphQL `viewer`): `github-actions[bot]`
   * for GITHUB_TOKEN, `<app>[bot]` for a GitHub App's installation token, the user for a PAT.
   */
  async viewerLogin(): Promise<string> {
    const r = await this.octokit.graphql<{ viewer: { login: string } }>('query { viewer { login } }');
    const login = r?.viewer?.login;
    if (typeof login !== 'string' || !login) throw new Error('GraphQL viewer has no login');
    return login;
  }

  /** Every comment on an issue or pull request, oldest first, 100 per page. */
  async *issueComments(issue: number): AsyncGenerator<IssueComment> {
    const it = this.octokit.paginate.iterator(this.octokit.rest.issues.listComments, { ...this.where, issue_number: issue, per_page: 100 });
    for await (const page of it) {
      for (const c of page.data) yield { id: c.id, body: c.body ?? '', url: c.html_url, login: c.user?.login ?? null, type: c.user?.type ?? null };
    }
  }

  async createComment(issue: number, body: string): Promise<IssueComment> {
    const { data } = await this.octokit.rest.issues.createComment({ ...this.where, issue_number: issue, body });
    return { id: data.id, body: data.body ?? '', url: data.html_url, login: data.user?.login ?? null, type: data.user?.type ?? null };
  }

  async updateComment(id: number, body: string): Promise<{ id: number; url: string }> {
    const { data } = await this.octokit.rest.issues.updateComment({ ...this.where, comment_id: id, body });
    return { id: data.id, url: data.html_url };
  }

  async deleteComment(id: number): Promise<void> {
    await this.octokit.rest.issues.deleteComment({ ...this.where, comment_id: id });
  }

  async getPull(n: number): Promise<PullRequest> {
    const { data } = await this.octokit.rest.pulls.get({ ...this.where, pull_number: n });
    return pull(data);
  }

  /** The newest pull request from a branch of this repository, open or in any state. */
  async findPull(branch: string, state: 'open' | 'all'): Promise<PullRequest | null> {
    const { data } = await this.octokit.rest.pulls.list({ ...this.where, state, head: `${this.owner}:${branch}`, per_page: 10 });
    return data[0] ? pull(data[0]) : null;
  }

  async createPull(p: { head: string; base: string; title: string; body: string }): Promise<PullRequest> {
    const { data } = await this.octokit.rest.pulls.create({ ...this.where, ...p });
    return pull(data);
  }

  async updatePull(n: number, p: { title?: string; body?: string; base?: string; state?: 'open' | 'closed' }): Promise<PullRequest> {
    const { data } = await this.octokit.rest.pulls.update({ ...this.where, pull_number: n, ...p });
    return pull(data);
  }

  /** A workflow run of this repository: its event, head repository and head commit. */
  async workflowRun(id: number): Promise<RunFacts> {
    const { data } = await this.octokit.rest.actions.getWorkflowRun({ ...this.where, run_id: id });
    return runFromApi(data);
  }
}

/** A pull request creation that lost a race: another run opened the same head first. */
export function isAlreadyExists(err: unknown): boolean {
  return httpStatus(err) === 422 && /already exists/i.test(String((err as Error)?.message ?? ''));
}
