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

// A fork PR that fails (no write) and a read-only token on a same-repo PR: effects.test.ts, in-process.

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
const more = suite<{ remote: GitRemote; index: string; runId: number }>('action: prompt values reach the probe');

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

// The comment's author (a GitHub App token, comment-author) and a repository that refuses
// Actions-created PRs: effects.test.ts, in-process. What stays here needs the probe itself.

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
