// The Octokit the Action uses, against the fake GitHub: retries, rate limits, GHES, proxies.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { FakeGitHub } from '../helpers/github-server.ts';
import { makeOctokit, proxyConfigured, writePacer, writeSpacing } from '../../src/github/octokit.ts';
import { GitHubApi, isPermissionError, classifyWriteError } from '../../src/github/api.ts';
import { upsertComment, commentLogin, marker } from '../../src/github/comment.ts';

const lines: string[] = [];
const log = { debug: () => {}, info: (m: string) => lines.push(m), warning: (m: string) => lines.push(`warning: ${m}`) };
const target = 7;

function octo(gh: FakeGitHub, over: Partial<Parameters<typeof makeOctokit>[0]> = {}) {
  return new GitHubApi(makeOctokit({ token: 'ghs_writer', baseUrl: gh.url, log, retryBaseMs: 5, env: { NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS: '0' }, ...over }), 'acme', 'mlir-air');
}

const t = suite<{ gh: FakeGitHub }>('octokit');
t.before.each(async (ctx) => {
  lines.length = 0;
  ctx.gh = await new FakeGitHub({ checkResponses: true }).start();
});
t.after.each(async (ctx) => {
  await ctx.gh.stop();
  assert.equal(ctx.gh.problems, []);
});

t('500 and 502 responses are retried', async ({ gh }) => {
  gh.faults.push({ method: 'GET', path: /\/comments$/, status: 500 }, { method: 'GET', path: /\/comments$/, status: 502 });
  const r = await upsertComment(octo(gh), target, 'm', `${marker('m', 'a'.repeat(32))}\nhello`, 'github-actions[bot]');
  assert.is(r.action, 'created');
  const gets = gh.calls.filter((c) => c.method === 'GET' && c.route === '/repos/{owner}/{repo}/issues/{issue_number}/comments');
  assert.equal(gets.map((c) => c.status), [500, 502, 200, 200]);
});

t('a 500 on every attempt gives up after the configured retries', async ({ gh }) => {
  gh.faults.push({ method: 'GET', path: /\/comments$/, status: 500, times: 100 });
  let err: unknown = null;
  await upsertComment(octo(gh, { retries: 2 }), target, 'm', `${marker('m')}\nx`, 'github-actions[bot]').catch((e) => (err = e));
  assert.is((err as { status?: number })?.status, 500);
  assert.is(gh.calls.length, 3, 'first try + 2 retries, then no more traffic');
});

t('a secondary rate limit (403 with retry-after) is waited out', async ({ gh }) => {
  gh.faults.push({ method: 'POST', path: /\/comments$/, status: 403, headers: { 'retry-after': '2' }, message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.' });
  const r = await upsertComment(octo(gh), target, 'm', `${marker('m')}\nbody`, 'github-actions[bot]');
  assert.is(r.action, 'created');
  assert.equal(gh.calls.filter((c) => c.method === 'POST').map((c) => c.status), [403, 201]);
  assert.ok(lines.some((l) => /secondary rate limit .* waiting 2s/.test(l)), lines.join('\n'));
  assert.is(gh.commentsOn(7).length, 1);
});

t('a secondary rate limit longer than the bound is not waited for', async ({ gh }) => {
  gh.faults.push({ method: 'POST', path: /\/comments$/, status: 403, headers: { 'retry-after': '3600' }, message: 'You have exceeded a secondary rate limit.' });
  let err: unknown = null;
  await upsertComment(octo(gh, { maxRateLimitWaitSec: 60 }), target, 'm', `${marker('m')}\nbody`, 'github-actions[bot]').catch((e) => (err = e));
  assert.is((err as { status?: number })?.status, 403);
  assert.is(gh.calls.filter((c) => c.method === 'POST').length, 1, 'no retry');
  assert.ok(lines.some((l) => /over the 60s bound/.test(l)), lines.join('\n'));
});

t('repeated secondary limits stop after the retry budget', async ({ gh }) => {
  gh.faults.push({ method: 'POST', path: /\/comments$/, status: 403, headers: { 'retry-after': '1' }, message: 'secondary rate limit', times: 10 });
  let err: unknown = null;
  await upsertComment(octo(gh, { maxRateLimitRetries: 2 }), target, 'm', `${marker('m')}\nbody`, 'github-actions[bot]').catch((e) => (err = e));
  assert.is((err as { status?: number })?.status, 403);
  assert.is(gh.calls.filter((c) => c.method === 'POST').length, 3);
});

t('a primary rate limit with a reset in the near future is waited out', async ({ gh }) => {
  const reset = String(Math.floor(Date.now() / 1000));
  gh.faults.push({ method: 'GET', path: /\/comments$/, status: 403, headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset }, message: 'API rate limit exceeded' });
  const r = await upsertComment(octo(gh), target, 'm', `${marker('m')}\nbody`, 'github-actions[bot]');
  assert.is(r.action, 'created');
});

t('the comment author comes from the token itself: GITHUB_TOKEN is github-actions[bot] (GraphQL viewer)', async ({ gh }) => {
  assert.equal(await commentLogin(octo(gh), null), { login: 'github-actions[bot]', why: 'the token acts as github-actions[bot] (GraphQL viewer)' });
  assert.ok(gh.calls.some((c) => c.route === 'POST /graphql'));
  assert.not.ok(gh.calls.some((c) => c.route === '/user'), 'no guess through GET /user');
});

t('a GitHub App token is its own <app>[bot]; a personal token its user', async () => {
  const gh = await new FakeGitHub({ tokens: { ghs_app: { login: 'npu-gate[bot]', type: 'Bot', installation: true }, ghp_person: { login: 'octocat', type: 'User' } }, checkResponses: true }).start();
  try {
    assert.is((await commentLogin(octo(gh, { token: 'ghs_app' }), null)).login, 'npu-gate[bot]');
    assert.is((await commentLogin(octo(gh, { token: 'ghp_person' }), null)).login, 'octocat');
    assert.equal(gh.problems, []);
  } finally {
    await gh.stop();
  }
});

t('when GraphQL refuses the token, the comment-author input is used; without it, no login (no guess)', async () => {
  const gh = await new FakeGitHub({ tokens: { ghs_nogql: { login: 'npu-gate[bot]', type: 'Bot', installation: true, noGraphql: true } } }).start();
  try {
    const api = octo(gh, { token: 'ghs_nogql' });
    assert.is((await commentLogin(api, 'npu-gate[bot]')).login, 'npu-gate[bot]');
    const none = await commentLogin(api, null);
    assert.is(none.login, null);
    assert.match(none.why, 'comment-author');
  } finally {
    await gh.stop();
  }
});

t('a read-only token is recognised as a permission error', async () => {
  const gh = await new FakeGitHub({ tokens: { ro: { login: 'github-actions[bot]', type: 'Bot', installation: true, readOnly: true } } }).start();
  try {
    let err: unknown = null;
    await upsertComment(octo(gh, { token: 'ro' }), target, 'm', `${marker('m')}\nx`, 'github-actions[bot]').catch((e) => (err = e));
    assert.ok(isPermissionError(err), String(err));
    assert.is(gh.calls.filter((c) => c.method === 'POST').length, 1, '403 is not retried');
    assert.is(classifyWriteError(Object.assign(new Error('GitHub Actions is not permitted to create or approve pull requests.'), { status: 403 })), 'prs-disabled');
    assert.is(classifyWriteError(Object.assign(new Error('You have exceeded a secondary rate limit'), { status: 403 })), 'other');
    assert.is(classifyWriteError(new Error('git push failed (exit 128): remote: Permission to acme/mlir-air.git denied to github-actions[bot].')), 'permission');
  } finally {
    await gh.stop();
  }
});

t('GitHub Enterprise Server: every route goes under GITHUB_API_URL /api/v3', async () => {
  const gh = await new FakeGitHub({ prefix: '/api/v3', checkResponses: true }).start();
  try {
    for (let i = 0; i < 120; i++) gh.addComment(7, `c${i}`, 'someone');
    const api = new GitHubApi(makeOctokit({ token: 'ghs_writer', log, env: { GITHUB_API_URL: gh.url } }), 'acme', 'mlir-air');
    assert.is((await commentLogin(api, null)).login, 'github-actions[bot]', 'GraphQL at /api/graphql beside /api/v3');
    const r = await upsertComment(api, target, 'm', `${marker('m')}\nx`, 'github-actions[bot]');
    assert.is(r.action, 'created');
    assert.ok(gh.calls.every((c) => c.route !== null));
    assert.ok(gh.calls.some((c) => /page=2/.test(c.query)), 'pagination links keep the prefix');
    assert.equal(gh.problems, []);
  } finally {
    await gh.stop();
  }
});

/** A forward proxy that supports CONNECT (what undici's proxy agent speaks) and counts tunnels. */
async function startProxy(): Promise<{ url: string; tunnels: string[]; server: Server }> {
  const tunnels: string[] = [];
  const server = createServer((req, res) => {
    // Plain absolute-form proxying, for agents that do not tunnel http.
    tunnels.push(`GET ${req.url}`);
    const u = new URL(req.url!);
    const up = httpRequest({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    req.pipe(up);
  });
  server.on('connect', (req, socket, head) => {
    tunnels.push(`CONNECT ${req.url}`);
    const [host, port] = String(req.url).split(':');
    if (host !== '127.0.0.1') {
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    const up = connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tunnels, server };
}

t('HTTP_PROXY is honoured, and NO_PROXY bypasses it', async ({ gh }) => {
  const proxy = await startProxy();
  try {
    const via = makeOctokit({ token: 'ghs_writer', baseUrl: gh.url, log, env: { HTTP_PROXY: proxy.url } });
    await via.rest.issues.listComments({ owner: 'acme', repo: 'mlir-air', issue_number: 7 });
    assert.ok(proxy.tunnels.length >= 1, 'the request went through the proxy');
    const before = proxy.tunnels.length;
    const bypass = makeOctokit({ token: 'ghs_writer', baseUrl: gh.url, log, env: { http_proxy: proxy.url, NO_PROXY: '127.0.0.1' } });
    await bypass.rest.issues.listComments({ owner: 'acme', repo: 'mlir-air', issue_number: 7 });
    assert.is(proxy.tunnels.length, before, 'NO_PROXY host went direct');
    assert.ok(proxyConfigured({ HTTPS_PROXY: 'http://p:1' }, 'https://api.github.com'));
    assert.not.ok(proxyConfigured({ HTTP_PROXY: 'http://p:1' }, 'https://api.github.com'));
  } finally {
    proxy.server.closeAllConnections();
    await new Promise((r) => proxy.server.close(r));
  }
});

t.run();

// GitHub asks integrations to make content-creating requests one at a time, a second apart: the
// throttling plugin waits on writePacer before each write. On a clock of our own (no timing in tests).
const pacing = suite('octokit: write pacing');

function clock() {
  let now = 0;
  const slept: number[] = [];
  return { slept, c: { now: () => now, sleep: async (ms: number) => { slept.push(ms); now += ms; } } };
}

pacing('writes run one at a time, each at least the spacing after the one before (a second, GitHub\'s guidance, unless told)', async () => {
  const { slept, c } = clock();
  const order: string[] = [];
  const p = writePacer(1000, c).key();
  let release!: () => void;
  const first = p.schedule({}, () => new Promise<void>((r) => { order.push('first starts'); release = () => { order.push('first ends'); r(); }; }));
  const second = p.schedule({}, () => { order.push('second starts'); });
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(order, ['first starts'], 'the second waits for the first');
  release();
  await Promise.all([first, second]);
  assert.equal(order, ['first starts', 'first ends', 'second starts']);
  assert.equal(slept, [1000], 'the second write a second after the first');
  // A failed write does not stop the next one.
  const failed = p.schedule({}, () => { throw new Error('boom'); });
  await assert.throws(() => { throw new Error('x'); });
  await failed.catch(() => undefined);
  await p.schedule({}, () => undefined);
  assert.equal(slept, [1000, 1000, 1000]);
  // Spacing 0: nothing waits.
  const z = clock();
  const q = writePacer(0, z.c).key();
  await Promise.all([q.schedule({}, () => 1), q.schedule({}, () => 2)]);
  assert.equal(z.slept, []);
});

pacing('writes are a second apart unless told (GitHub\'s guidance), 0-60000 ms when told', () => {
  lines.length = 0;
  assert.is(writeSpacing({}, log), 1000);
  assert.is(writeSpacing({ NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS: '0' }, log), 0);
  assert.is(writeSpacing({ NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS: '60000' }, log), 60000);
  assert.equal(lines, []);
  assert.is(writeSpacing({ NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS: '60001' }, log), 1000);
  assert.is(lines.length, 1);
});

pacing('$NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS that is not whole milliseconds 0-60000 keeps the second, and says so', () => {
  lines.length = 0;
  makeOctokit({ token: 't', baseUrl: 'http://127.0.0.1:9', log, env: { NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS: '5s' } });
  assert.ok(lines.some((l) => /^warning: NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS="5s" is not whole milliseconds from 0 to 60000; writes stay 1000 ms apart/.test(l)), lines.join('\n'));
});

pacing.run();

