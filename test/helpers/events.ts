// Event payloads as GitHub sends them (only the fields the Action reads, plus a few neighbours).
export const OWNER = 'acme';
export const REPO_NAME = 'mlir-air';
export const FULL = `${OWNER}/${REPO_NAME}`;

const repository = { full_name: FULL, name: REPO_NAME, owner: { login: OWNER }, default_branch: 'main' };

export function pullRequestEvent(o: { number: number; headSha: string; fork?: boolean; headRef?: string }) {
  const headRepo = o.fork ? { full_name: `mallory/${REPO_NAME}`, fork: true } : { full_name: FULL, fork: false };
  return {
    action: 'synchronize',
    number: o.number,
    pull_request: {
      number: o.number,
      head: { sha: o.headSha, ref: o.headRef ?? 'feature', repo: headRepo },
      base: { sha: 'b'.repeat(40), ref: 'main', repo: { full_name: FULL } },
    },
    repository,
    sender: { login: o.fork ? 'mallory' : 'octocat' },
  };
}

export function pushEvent(sha: string) {
  return { ref: 'refs/heads/main', after: sha, repository, sender: { login: 'octocat' } };
}

export function workflowRunEvent(o: { runId: number; headSha: string; event: string; pullRequests?: number[]; fork?: boolean; headBranch?: string }) {
  return {
    action: 'completed',
    workflow_run: {
      id: o.runId,
      head_sha: o.headSha,
      head_branch: o.headBranch ?? (o.event === 'pull_request' ? 'feature' : 'main'),
      event: o.event,
      conclusion: 'success',
      head_repository: { full_name: o.fork ? `mallory/${REPO_NAME}` : FULL },
      pull_requests: (o.pullRequests ?? []).map((n) => ({ number: n })),
    },
    repository,
    sender: { login: 'octocat' },
  };
}
