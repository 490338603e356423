// A stateful stand-in for the GitHub REST API on 127.0.0.1, for the routes npu-block-gate uses.
// Every request is checked against GitHub's OpenAPI description (@octokit/openapi): an unknown
// route, an undeclared or mistyped query parameter, or a body that breaks the schema is answered
// 400/404 and recorded in `problems`, which every test asserts is empty.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { execFileSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { validateRequest, validateResponse, type Operation } from './openapi.ts';

export interface Identity {
  login: string;
  type: 'User' | 'Bot';
  /** Installation tokens (GITHUB_TOKEN) may not call GET /user. */
  installation?: boolean;
  /** Every write answers 403 "Resource not accessible by integration". */
  readOnly?: boolean;
  /** GraphQL refuses this token (default: GraphQL answers `viewer { login }`). */
  noGraphql?: boolean;
}

export interface Call {
  method: string;
  path: string;
  query: string;
  route: string | null;
  status: number;
  body: unknown;
}

export interface Fault {
  method?: string;
  /** Matched against the path. */
  path: RegExp;
  status: number;
  headers?: Record<string, string>;
  message?: string;
  /** How many matching requests get the fault (default 1). */
  times?: number;
}

interface Comment {
  id: number;
  issue: number;
  body: string;
  login: string;
  type: 'User' | 'Bot';
  created_at: string;
  updated_at: string;
}

interface Pull {
  number: number;
  title: string;
  body: string | null;
  head: string;
  headSha: string;
  headRepo: string;
  base: string;
  state: 'open' | 'closed';
}

export interface FakeGitHubOptions {
  owner?: string;
  repo?: string;
  tokens?: Record<string, Identity>;
  /** Bare repository that backs the repo: PR heads must exist there. */
  gitRemote?: string;
  /** Path prefix of the API, e.g. "/api/v3" for GitHub Enterprise Server. */
  prefix?: string;
  /** Pull requests that already exist (the PR under test). */
  pulls?: Array<Partial<Pull> & { number: number; headSha: string }>;
  workflowRuns?: Array<{ id: number; head_sha: string; event: string; head_repository?: string | null; run_attempt?: number; conclusion?: string | null; pull_requests?: number[] }>;
  /** POST /repos/{owner}/{repo}/pulls answers 403 as when "Allow GitHub Actions to create and approve pull requests" is off. */
  refusePullCreation?: boolean;
  /** Self-hosted runners of the repository (and of the owner as an org): their labels, for the runner label routes. */
  runners?: Array<{ id: number; name: string; labels: string[]; readOnlyLabels?: string[] }>;
  /** Validate our responses against the spec too (keeps the fake honest). */
  checkResponses?: boolean;
}

const NOW = '2026-01-01T00:00:00Z';

export class FakeGitHub {
  readonly owner: string;
  readonly repo: string;
  readonly calls: Call[] = [];
  readonly problems: string[] = [];
  readonly comments: Comment[] = [];
  readonly pulls: Pull[] = [];
  /** Self-hosted runners: custom labels (editable) and the read-only ones configuration applied. */
  readonly runners: Array<{ id: number; name: string; labels: string[]; readOnlyLabels: string[] }> = [];
  faults: Fault[] = [];
  url = '';
  private origin = '';
  private server: Server | null = null;
  private nextId = 1000;
  private readonly tokens: Record<string, Identity>;

  constructor(private readonly opts: FakeGitHubOptions = {}) {
    this.owner = opts.owner ?? 'acme';
    this.repo = opts.repo ?? 'mlir-air';
    this.tokens = opts.tokens ?? { 'ghs_writer': { login: 'github-actions[bot]', type: 'Bot', installation: true } };
    for (const r of opts.runners ?? []) this.runners.push({ readOnlyLabels: ['self-hosted', 'Linux', 'X64'], ...r, labels: [...r.labels] });
    for (const p of opts.pulls ?? [])
      this.pulls.push({ title: 'PR', body: '', head: 'feature', headRepo: `${this.owner}/${this.repo}`, base: 'main', state: 'open', ...p });
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    const { port } = this.server.address() as AddressInfo;
    this.origin = `http://127.0.0.1:${port}`;
    this.url = `${this.origin}${this.opts.prefix ?? ''}`;
    return this;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections?.();
    await new Promise<void>((r) => this.server!.close(() => r()));
    this.server = null;
  }

  /** Requests that changed state (not GET, not a GraphQL query). */
  writes(): Call[] {
    return this.calls.filter((c) => c.method !== 'GET' && c.route !== 'POST /graphql' && c.status < 400);
  }

  /** Requests that tried to change state, refused or not. */
  attemptedWrites(): Call[] {
    return this.calls.filter((c) => c.method !== 'GET' && c.route !== 'POST /graphql');
  }

  commentsOn(issue: number): Comment[] {
    return this.comments.filter((c) => c.issue === issue);
  }

  /** Seeds a comment written by someone else (or by us, earlier). */
  addComment(issue: number, body: string, login: string, type: 'User' | 'Bot' = 'User'): Comment {
    const c = { id: this.nextId++, issue, body, login, type, created_at: NOW, updated_at: NOW };
    this.comments.push(c);
    return c;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = (req.method ?? 'GET').toUpperCase();
    let path = u.pathname;
    const prefix = this.opts.prefix ?? '';
    const call: Call = { method, path, query: u.search, route: null, status: 0, body: null };
    this.calls.push(call);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}, op?: Operation) => {
      call.status = status;
      if (op && this.opts.checkResponses && status < 300 && body !== null) this.problems.push(...validateResponse(op, status, body));
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'x-github-media-type': 'github.v3', ...headers });
      res.end(body === null ? '' : JSON.stringify(body));
    };

    // GraphQL lives at /graphql (github.com) or /api/graphql (GHES, beside /api/v3).
    const graphqlPath = prefix ? prefix.replace(/\/v3$/, '') + '/graphql' : '/graphql';
    if (method === 'POST' && path === graphqlPath) return this.graphql(req, raw, call, send);

    if (prefix) {
      if (!path.startsWith(prefix + '/')) {
        this.problems.push(`${method} ${path}: outside the API prefix ${prefix}`);
        return send(404, { message: 'Not Found' });
      }
      path = path.slice(prefix.length);
      call.path = path;
    }
    const v = validateRequest(method, path, u.searchParams, req.headers['content-type'], raw);
    call.route = v.operation?.template ?? null;
    if (!v.operation) {
      this.problems.push(...v.problems);
      return send(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });
    }
    if (v.problems.length) {
      this.problems.push(...v.problems);
      return send(422, { message: 'Validation Failed', errors: v.problems });
    }
    const body = raw ? JSON.parse(raw) : null;
    call.body = body;

    const fault = this.faults.find((f) => (!f.method || f.method === method) && f.path.test(path) && (f.times ?? 1) > 0);
    if (fault) {
      fault.times = (fault.times ?? 1) - 1;
      return send(fault.status, { message: fault.message ?? `injected ${fault.status}` }, fault.headers ?? {});
    }

    const auth = req.headers.authorization ?? '';
    const token = /^(?:token|bearer)\s+(.+)$/i.exec(auth)?.[1] ?? '';
    const who = this.tokens[token];
    if (!who) return send(401, { message: 'Bad credentials' });

    const op = v.operation;
    const p = op.params;
    if (p.owner !== undefined && (p.owner !== this.owner || p.repo !== this.repo)) return send(404, { message: 'Not Found' });
    if (p.org !== undefined && p.org !== this.owner) return send(404, { message: 'Not Found' });
    if (method !== 'GET' && who.readOnly) return send(403, { message: 'Resource not accessible by integration' });

    switch (op.operationId) {
      case 'users/get-authenticated':
        if (who.installation) return send(403, { message: 'Resource not accessible by integration' });
        return send(200, this.user(who.login, who.type), {}, op);
      case 'issues/list-comments': {
        const all = this.commentsOn(Number(p.issue_number)).sort((a, b) => a.id - b.id);
        return this.page(send, op, u, all.map((c) => this.commentJson(c)));
      }
      case 'issues/create-comment': {
        const c = this.addComment(Number(p.issue_number), body.body, who.login, who.type);
        return send(201, this.commentJson(c), {}, op);
      }
      case 'issues/update-comment': {
        const c = this.comments.find((x) => x.id === Number(p.comment_id));
        if (!c) return send(404, { message: 'Not Found' });
        if (c.login !== who.login) return send(403, { message: 'Resource not accessible by integration' });
        c.body = body.body;
        c.updated_at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
        return send(200, this.commentJson(c), {}, op);
      }
      case 'issues/delete-comment': {
        const i = this.comments.findIndex((x) => x.id === Number(p.comment_id));
        if (i < 0) return send(404, { message: 'Not Found' });
        this.comments.splice(i, 1);
        return send(204, null);
      }
      case 'pulls/list': {
        const state = (v.query.state as string) ?? 'open';
        const head = v.query.head as string | undefined;
        const list = this.pulls
          .filter((x) => state === 'all' || x.state === state)
          .filter((x) => !head || `${x.headRepo.split('/')[0]}:${x.head}` === head)
          .sort((a, b) => b.number - a.number);
        return this.page(send, null, u, list.map((x) => this.pullJson(x)));
      }
      case 'pulls/get': {
        const x = this.pulls.find((y) => y.number === Number(p.pull_number));
        return x ? send(200, this.pullJson(x)) : send(404, { message: 'Not Found' });
      }
      case 'pulls/create': {
        if (this.opts.refusePullCreation) return send(403, { message: 'GitHub Actions is not permitted to create or approve pull requests.', documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request' });
        const head = String(body.head).replace(/^[^:]+:/, '');
        if (this.pulls.some((x) => x.state === 'open' && x.head === head))
          return send(422, { message: 'Validation Failed', errors: [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${this.owner}:${head}.` }] });
        const sha = this.branchSha(head);
        if (this.opts.gitRemote && !sha) return send(422, { message: 'Validation Failed', errors: [{ resource: 'PullRequest', field: 'head', code: 'invalid' }] });
        const x: Pull = { number: this.nextPullNumber(), title: body.title, body: body.body ?? null, head, headSha: sha ?? '0'.repeat(40), headRepo: `${this.owner}/${this.repo}`, base: body.base, state: 'open' };
        this.pulls.push(x);
        return send(201, this.pullJson(x));
      }
      case 'pulls/update': {
        const x = this.pulls.find((y) => y.number === Number(p.pull_number));
        if (!x) return send(404, { message: 'Not Found' });
        if (body.title !== undefined) x.title = body.title;
        if (body.body !== undefined) x.body = body.body;
        if (body.base !== undefined) x.base = body.base;
        if (body.state !== undefined) x.state = body.state;
        return send(200, this.pullJson(x));
      }
      case 'actions/get-workflow-run': {
        const r = (this.opts.workflowRuns ?? []).find((w) => w.id === Number(p.run_id));
        if (!r) return send(404, { message: 'Not Found' });
        const headRepo = r.head_repository === undefined ? `${this.owner}/${this.repo}` : r.head_repository;
        return send(200, {
          id: r.id, head_sha: r.head_sha, event: r.event, run_attempt: r.run_attempt ?? 1, conclusion: r.conclusion ?? 'success', status: 'completed',
          head_repository: headRepo === null ? null : { full_name: headRepo, name: headRepo.split('/')[1], owner: { login: headRepo.split('/')[0] } },
          repository: { full_name: `${this.owner}/${this.repo}` },
          pull_requests: (r.pull_requests ?? []).map((n) => ({ number: n })),
        });
      }
      case 'actions/list-labels-for-self-hosted-runner-for-repo':
      case 'actions/list-labels-for-self-hosted-runner-for-org':
      case 'actions/add-custom-labels-to-self-hosted-runner-for-repo':
      case 'actions/add-custom-labels-to-self-hosted-runner-for-org':
      case 'actions/remove-custom-label-from-self-hosted-runner-for-repo':
      case 'actions/remove-custom-label-from-self-hosted-runner-for-org': {
        const r = this.runners.find((x) => x.id === Number(p.runner_id));
        if (!r) return send(404, { message: 'Not Found' });
        if (op.operationId.startsWith('actions/add-')) {
          for (const l of body.labels as string[]) if (!r.labels.includes(l) && !r.readOnlyLabels.includes(l)) r.labels.push(l);
        } else if (op.operationId.startsWith('actions/remove-')) {
          const i = r.labels.indexOf(p.name);
          if (i < 0) return send(404, { message: 'Not Found' });
          r.labels.splice(i, 1);
        }
        return send(200, this.labelsJson(r), {}, op);
      }
      default:
        this.problems.push(`${method} ${op.template} (${op.operationId}): valid, but the fake does not implement it`);
        return send(501, { message: 'not implemented by the fake' });
    }
  }

  /** The one GraphQL query the Action makes: `query { viewer { login } }`. */
  private graphql(req: IncomingMessage, raw: string, call: Call, send: (s: number, b: unknown) => void): void {
    call.route = 'POST /graphql';
    let body: any = null;
    try {
      body = JSON.parse(raw);
    } catch {
      this.problems.push('POST /graphql: body is not JSON');
      return send(400, { message: 'Problems parsing JSON' });
    }
    call.body = body;
    const query = typeof body?.query === 'string' ? body.query : '';
    if (!/^\s*(query\s*)?\{\s*viewer\s*\{\s*login\s*\}\s*\}\s*$/.test(query)) {
      this.problems.push(`POST /graphql: the fake answers only { viewer { login } }, got ${JSON.stringify(query).slice(0, 120)}`);
      return send(200, { errors: [{ message: 'not implemented by the fake' }] });
    }
    const token = /^(?:token|bearer)\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const who = this.tokens[token];
    if (!who) return send(401, { message: 'Bad credentials' });
    if (who.noGraphql) return send(403, { message: 'Resource not accessible by integration' });
    return send(200, { data: { viewer: { login: who.login } } });
  }

  private page(send: (s: number, b: unknown, h?: Record<string, string>, op?: Operation) => void, op: Operation | null, u: URL, items: unknown[]) {
    const perPage = Math.min(100, Number(u.searchParams.get('per_page') ?? 30));
    const page = Number(u.searchParams.get('page') ?? 1);
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const slice = items.slice((page - 1) * perPage, page * perPage);
    const link = (n: number, rel: string) => {
      const next = new URL(u.toString());
      next.searchParams.set('page', String(n));
      return `<${this.origin}${next.pathname}${next.search}>; rel="${rel}"`;
    };
    const links: string[] = [];
    if (page < last) links.push(link(page + 1, 'next'), link(last, 'last'));
    if (page > 1) links.push(link(1, 'first'), link(page - 1, 'prev'));
    send(200, slice, links.length ? { link: links.join(', ') } : {}, op ?? undefined);
  }

  private labelsJson(r: { readOnlyLabels: string[]; labels: string[] }) {
    const labels = [
      ...r.readOnlyLabels.map((name, i) => ({ id: i + 1, name, type: 'read-only' as const })),
      ...r.labels.map((name, i) => ({ id: 100 + i, name, type: 'custom' as const })),
    ];
    return { total_count: labels.length, labels };
  }

  private nextPullNumber(): number {
    return Math.max(0, ...this.pulls.map((x) => x.number)) + 1;
  }

  private branchSha(branch: string): string | null {
    if (!this.opts.gitRemote) return null;
    try {
      return execFileSync('git', ['--git-dir', this.opts.gitRemote, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { encoding: 'utf8' }).trim() || null;
    } catch {
      return null;
    }
  }

  private web(path: string): string {
    return `https://github.example/${this.owner}/${this.repo}${path}`;
  }

  private user(login: string, type: 'User' | 'Bot') {
    const id = login === 'github-actions[bot]' ? 41898282 : 1 + [...login].reduce((a, c) => a + c.charCodeAt(0), 0);
    const api = `${this.url}/users/${encodeURIComponent(login)}`;
    return {
      login, id, node_id: `U_${id}`, avatar_url: `https://avatars.example/${id}`, gravatar_id: '', url: api, html_url: `https://github.example/${login}`,
      followers_url: `${api}/followers`, following_url: `${api}/following{/other_user}`, gists_url: `${api}/gists{/gist_id}`, starred_url: `${api}/starred{/owner}{/repo}`,
      subscriptions_url: `${api}/subscriptions`, organizations_url: `${api}/orgs`, repos_url: `${api}/repos`, events_url: `${api}/events{/privacy}`,
      received_events_url: `${api}/received_events`, type, site_admin: false,
      // GET /user (private-user) requires these too.
      name: null, company: null, blog: null, location: null, email: null, hireable: null, bio: null, public_repos: 0, public_gists: 0,
      followers: 0, following: 0, created_at: NOW, updated_at: NOW,
    };
  }

  private simpleUser(login: string, type: 'User' | 'Bot') {
    const { name, company, blog, location, email, hireable, bio, public_repos, public_gists, followers, following, created_at, updated_at, ...simple } = this.user(login, type);
    void [name, company, blog, location, email, hireable, bio, public_repos, public_gists, followers, following, created_at, updated_at];
    return simple;
  }

  private commentJson(c: Comment) {
    const api = `${this.url}/repos/${this.owner}/${this.repo}/issues/comments/${c.id}`;
    return {
      id: c.id, node_id: `IC_${c.id}`, url: api, html_url: this.web(`/pull/${c.issue}#issuecomment-${c.id}`), body: c.body,
      user: this.simpleUser(c.login, c.type), created_at: c.created_at, updated_at: c.updated_at,
      issue_url: `${this.url}/repos/${this.owner}/${this.repo}/issues/${c.issue}`, author_association: c.type === 'Bot' ? 'NONE' : 'MEMBER',
    };
  }

  private pullJson(x: Pull) {
    // A pull request has many required fields; we fill the ones our code and octokit read and
    // skip response validation for it (checkResponses covers comments and users).
    const repoJson = (full: string) => ({ full_name: full, name: full.split('/')[1], owner: { login: full.split('/')[0] }, fork: full !== `${this.owner}/${this.repo}` });
    return {
      id: 5000 + x.number, number: x.number, state: x.state, title: x.title, body: x.body, html_url: this.web(`/pull/${x.number}`),
      url: `${this.url}/repos/${this.owner}/${this.repo}/pulls/${x.number}`, merged: false, draft: false,
      head: { ref: x.head, sha: x.headSha, label: `${x.headRepo.split('/')[0]}:${x.head}`, repo: repoJson(x.headRepo) },
      base: { ref: x.base, sha: '0'.repeat(40), label: `${this.owner}:${x.base}`, repo: repoJson(`${this.owner}/${this.repo}`) },
    };
  }
}
