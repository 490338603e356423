// End to end: dist/index.js as a child process with a runner's environment, against a copy of
// examples/air-mini in a real git checkout, an OpenAPI-checked fake GitHub on 127.0.0.1 and a
// local directory standing in for the artifact service. What the Action's effects do with a
// verdict is tested in-process (test/github/effects.test.ts, through src/github/ports.ts).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeGitHub } from '../helpers/github-server.ts';
import { makeGitRemote, type GitRemote } from '../helpers/git-remote.ts';
import { runAction, assertIsolation, type ActionRunResult } from '../helpers/action-run.ts';
import { ensureDist } from '../helpers/dist.ts';
import { pullRequestEvent, pushEvent } from '../helpers/events.ts';

const MODEL = 'programming_examples/llms/tiny_llama';
const SHA_A = 'a'.repeat(40);
const SHA_B = 'b1'.repeat(20);

function show(r: ActionRunResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-2000)}`;
}

// The sticky PR comment (first run, unchanged, updated in place, FAIL, paging past look-alikes)
// is test/github/effects.test.ts's, in-process: the effects need no bundle and no probe.

// ---------------------------------------------------------------------------------------------
const fork = suite<{ remote: GitRemote; gh: FakeGitHub; index: string }>('action: fork pull request');

fork.before(async (ctx) => {
  ctx.index = await ensureDist();
  ctx.remote = makeGitRemote();
  ctx.gh = await new FakeGitHub({
    tokens: { ghs_readonly: { login: 'github-actions[bot]', type: 'Bot', installation: true, readOnly: true } },
    pulls: [{ number: 11, headSha: SHA_A, headRepo: 'mallory/mlir-air' }],
  }).start();
});
fork.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, []);
});

fork('a fork PR makes no write, says so once, and still passes on the numbers', async (ctx) => {
  const r = await runAction({
    index: ctx.index,
    workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: 11, headSha: SHA_A, fork: true }), apiUrl: ctx.gh.url,
    artifactDir: join(ctx.remote.root, 'artifacts'), inputs: { 'model-dir': MODEL, 'github-token': 'ghs_readonly' },
  });
  assert.is(r.code, 0, show(r));
  assertIsolation(r, 'isolated');
  assert.is(r.outputs.outcome, 'pass');
  assert.is(ctx.gh.writes().length, 0);
  assert.is(ctx.gh.calls.filter((c) => c.method !== 'GET').length, 0, 'not even an attempted write');
  assert.is(r.notices.filter((n) => /skipping every GitHub write/.test(n)).length, 1, r.notices.join('\n'));
  assert.is(r.outputs['comment-url'], '');
  assert.equal(ctx.remote.branches(), ['main']);
});

fork('a fork PR that fails still fails the check, with no write', async (ctx) => {
  const r = await runAction({
    index: ctx.index,
    workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: 11, headSha: SHA_A, fork: true }), apiUrl: ctx.gh.url,
    artifactDir: join(ctx.remote.root, 'artifacts2'), inputs: { 'model-dir': MODEL, 'github-token': 'ghs_readonly' }, env: { AIR_MINI_INJECT: 'nan_padded' },
  });
  assert.is(r.code, 1, show(r));
  assertIsolation(r, 'isolated');
  assert.is(r.outputs.outcome, 'fail');
  assert.is(r.outputs.g3, 'fail');
  assert.is(ctx.gh.calls.filter((c) => c.method !== 'GET').length, 0);
});

fork('a read-only token on a same-repo PR: the refused write turns every later write off, with one notice', async (ctx) => {
  const before = ctx.gh.calls.length;
  const r = await runAction({
    index: ctx.index, workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: 11, headSha: SHA_A }), apiUrl: ctx.gh.url,
    artifactDir: join(ctx.remote.root, 'artifacts3'), inputs: { 'model-dir': `${MODEL}\nprogramming_examples/llms/tiny_qwen3`, 'github-token': 'ghs_readonly' },
  });
  assert.is(r.code, 0, show(r));
  assertIsolation(r, 'isolated');
  const posts = ctx.gh.calls.slice(before).filter((c) => c.method !== 'GET' && c.route !== 'POST /graphql');
  assert.is(posts.length, 1, 'one refused attempt, then no more for the second model');
  assert.is(posts[0].status, 403);
  assert.is(r.notices.filter((n) => /skipping every GitHub write/.test(n)).length, 1, r.notices.join('\n'));
  assert.is(JSON.parse(r.outputs.results).length, 2);
});

fork.run();

// The docs PR on push (opened, no churn, updated, closed once the base holds the documents) is
// test/github/effects.test.ts's, in-process; action-check.test.ts's trusted push keeps one end to end.

// ---------------------------------------------------------------------------------------------
const errs = suite<{ remote: GitRemote; gh: FakeGitHub; index: string }>('action: errors are not verdicts');

errs.before(async (ctx) => {
  ctx.index = await ensureDist();
  ctx.remote = makeGitRemote();
  ctx.gh = await new FakeGitHub({ pulls: [{ number: 7, headSha: SHA_A }] }).start();
});
errs.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, []);
});

errs('a missing Python is an infrastructure error: different message, ERROR comment, never FAIL', async (ctx) => {
  const r = await runAction({
    index: ctx.index,
    workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: 7, headSha: SHA_A }), apiUrl: ctx.gh.url,
    artifactDir: join(ctx.remote.root, 'artifacts'), inputs: { 'model-dir': MODEL, 'github-token': 'ghs_writer', python: '/nonexistent/python3' },
  });
  assert.is(r.code, 1, show(r));
  assert.is(r.outputs.outcome, 'error');
  assert.match(r.stdout, 'not a FAIL verdict');
  assert.not.match(r.stdout, 'Phase 2 FAIL');
  const c = ctx.gh.commentsOn(7);
  assert.is(c.length, 1);
  assert.match(c[0].body, 'Phase 2 ERROR');
  assert.not.match(c[0].body, 'FAIL**');
  assert.is(r.outputs.g1, '');
});

errs('bad inputs are all named in one precise error', async (ctx) => {
  const r = await runAction({
    index: ctx.index,
    workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: 7, headSha: SHA_A }), apiUrl: ctx.gh.url,
    artifactDir: join(ctx.remote.root, 'artifacts'),
    inputs: { 'model-dir': 'programming_examples/llms/nope', 'github-token': 'ghs_writer', mode: 'fulll', threshold: '1.5', docs: 'always' },
  });
  assert.is(r.code, 1, show(r));
  assert.is(r.outputs.outcome, 'error');
  const msg = r.errors.join('\n');
  for (const bit of ["input 'mode'", "input 'threshold'", "input 'docs'", "input 'model-dir': no such directory", 'bad input, not a FAIL verdict']) assert.match(msg, bit);
  assert.is(ctx.gh.calls.length - 1 >= 0, true);
  void readFileSync;
});

errs.run();

// ---------------------------------------------------------------------------------------------
const more = suite<{ remote: GitRemote; index: string; runId: number }>('action: comment author, refused docs PR, prompt values');

more.before(async (ctx) => {
  ctx.index = await ensureDist();
  ctx.remote = makeGitRemote();
  ctx.runId = 4000;
});

function run(ctx: { remote: GitRemote; index: string; runId: number }, gh: FakeGitHub, o: { event: 'push' | 'pull_request'; token: string; env?: Record<string, string>; inputs?: Record<string, string>; sha?: string }) {
  ctx.runId += 1;
  return runAction({
    index: ctx.index, workspace: ctx.remote.work, eventName: o.event, apiUrl: gh.url, runId: ctx.runId,
    payload: o.event === 'push' ? pushEvent(ctx.remote.baseSha) : pullRequestEvent({ number: 7, headSha: o.sha ?? SHA_A }),
    sha: o.event === 'push' ? ctx.remote.baseSha : undefined,
    artifactDir: join(ctx.remote.root, 'artifacts'), inputs: { 'model-dir': MODEL, 'github-token': o.token, ...o.inputs }, env: o.env,
  });
}

more("a GitHub App token finds and updates its own comment (the login is the token's, from GraphQL viewer)", async (ctx) => {
  const gh = await new FakeGitHub({ tokens: { ghs_app: { login: 'npu-gate[bot]', type: 'Bot', installation: true } }, pulls: [{ number: 7, headSha: SHA_A }], checkResponses: true }).start();
  try {
    const r1 = await run(ctx, gh, { event: 'pull_request', token: 'ghs_app' });
    assert.is(r1.code, 0, show(r1));
    gh.pulls[0].headSha = SHA_B;
    const r2 = await run(ctx, gh, { event: 'pull_request', token: 'ghs_app', sha: SHA_B });
    assert.is(r2.code, 0, show(r2));
    assertIsolation(r2, 'isolated');
    const c = gh.commentsOn(7);
    assert.is(c.length, 1, 'one comment, updated in place, not a new one per run');
    assert.is(c[0].login, 'npu-gate[bot]');
    assert.match(c[0].body, SHA_B.slice(0, 12));
    assert.match(r2.stdout, 'comment updated');
    assert.equal(gh.problems, []);
  } finally {
    await gh.stop();
  }
});

more('when GraphQL cannot name the token, comment-author does; without either, no comment is posted (and none duplicated)', async (ctx) => {
  const gh = await new FakeGitHub({ tokens: { ghs_app: { login: 'npu-gate[bot]', type: 'Bot', installation: true, noGraphql: true } }, pulls: [{ number: 7, headSha: SHA_A }] }).start();
  try {
    const r0 = await run(ctx, gh, { event: 'pull_request', token: 'ghs_app' });
    assert.is(r0.code, 0, show(r0));
    assert.is(gh.commentsOn(7).length, 0);
    assert.ok(r0.warnings.some((w) => /comment-author/.test(w)), r0.warnings.join('\n'));
    for (let i = 0; i < 2; i++) {
      const r = await run(ctx, gh, { event: 'pull_request', token: 'ghs_app', inputs: { 'comment-author': 'npu-gate[bot]' }, env: i ? { AIR_MINI_INJECT: 'stale_tail' } : {} });
      assert.is(r.code, i ? 1 : 0, show(r));
      assertIsolation(r, 'isolated');
    }
    assert.is(gh.commentsOn(7).length, 1);
  } finally {
    await gh.stop();
  }
});

more('a repository that refuses Actions-created PRs: G4 is a warning with the reason, never a silent pass', async (ctx) => {
  const gh = await new FakeGitHub({ gitRemote: ctx.remote.bare, refusePullCreation: true, checkResponses: true }).start();
  try {
    const r = await run(ctx, gh, { event: 'push', token: 'ghs_writer' });
    assert.is(r.code, 0, show(r));
    assertIsolation(r, 'isolated');
    assert.is(r.outputs.outcome, 'pass', 'the numbers still pass');
    assert.is(r.outputs.g4, 'skip');
    assert.ok(r.warnings.some((w) => /does not allow GitHub Actions to create pull requests/.test(w)), r.warnings.join('\n'));
    assert.match(r.summary, 'G4: the documents were not recorded');
    assert.ok(ctx.remote.branches().includes(`npu-block-gate/phase2/${MODEL}`), 'the documents wait on the docs branch');
    const report = JSON.parse(readFileSync(r.outputs['report-path'], 'utf8'));
    assert.is(report.gates.find((g: { id: string }) => g.id === 'G4').status, 'skip');
    assert.is(gh.pulls.length, 0);
  } finally {
    await gh.stop();
  }
});

more('a prompt that starts with -- is the prompt, not an option of the probe', async (ctx) => {
  const gh = await new FakeGitHub({ pulls: [{ number: 7, headSha: SHA_A }] }).start();
  try {
    const prompt = '--out=/tmp/elsewhere --no-bisect The capital of France is';
    const r = await run(ctx, gh, { event: 'pull_request', token: 'ghs_writer', inputs: { prompt } });
    assert.is(r.code, 0, show(r));
    assertIsolation(r, 'isolated');
    const report = JSON.parse(readFileSync(r.outputs['report-path'], 'utf8'));
    assert.is(report.prompt.text, prompt);
    assert.not.ok(existsSync('/tmp/elsewhere/probe.json'));
    assert.ok(r.outputs['run-dir'].startsWith(r.runnerTemp), 'the run dir is where the Action put it');
  } finally {
    await gh.stop();
  }
});

more.run();
