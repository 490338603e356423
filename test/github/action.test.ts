// dist/index.js as a child process with a runner's environment, against a copy of examples/air-mini
// in a real git checkout and an OpenAPI-checked fake GitHub on 127.0.0.1, where no probe runs: a
// Python that is not there, and inputs refused before anything runs. The three end-to-end runs with
// a real probe are action-check.test.ts's (a trusted push, a fork pull request) and split.test.ts's;
// what the Action's effects do with a verdict is tested in-process (test/github/effects.test.ts,
// through src/github/ports.ts).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeGitHub } from '../helpers/github-server.ts';
import { makeGitRemote, type GitRemote } from '../helpers/git-remote.ts';
import { runAction, type ActionRunResult } from '../helpers/action-run.ts';
import { ensureDist } from '../helpers/dist.ts';
import { pullRequestEvent } from '../helpers/events.ts';

const MODEL = 'programming_examples/llms/tiny_llama';
const SHA_A = 'a'.repeat(40);

function show(r: ActionRunResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-2000)}`;
}

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

