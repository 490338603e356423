// Issue 25, acceptance: a same-repository pull request under `docs: pr` whose probe plants a .git
// in the model dir (its config naming core.sshCommand, hooks and fsmonitor, each a program that
// leaves a mark). The Action runs no program of it outside the sandbox, and makes the docs PR from
// the workspace's real repository: the bare remote gets the docs branch on main. The plant is made
// before the run, as a probe with a writable model dir would have left it, so this tests the git
// layer on its own, whatever the sandbox binds.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { FakeGitHub } from '../helpers/github-server.ts';
import { makeGitRemote, git, type GitRemote } from '../helpers/git-remote.ts';
import { runAction, assertIsolation, type ActionRunResult } from '../helpers/action-run.ts';
import { ensureDist } from '../helpers/dist.ts';
import { pullRequestEvent } from '../helpers/events.ts';
import { plantHostileGit } from '../helpers/hostile-git.ts';

const MODEL = 'programming_examples/llms/tiny_llama';
const BRANCH = `npu-block-gate/phase2/${MODEL}`;
const PHASE2 = `${MODEL}/docs/development_progress/phase2_block.md`;
const SHA = 'c'.repeat(40);

function show(r: ActionRunResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout.slice(-5000)}\n--- stderr\n${r.stderr.slice(-2000)}`;
}

const s = suite<{ remote: GitRemote; gh: FakeGitHub; index: string }>('action: a .git planted in the model dir');

s.before(async (ctx) => {
  ctx.index = await ensureDist();
  ctx.remote = makeGitRemote();
  ctx.gh = await new FakeGitHub({ pulls: [{ number: 9, headSha: SHA }], gitRemote: ctx.remote.bare, checkResponses: true }).start();
});
s.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, []);
});

s('docs: pr on a same-repository PR: no program the planted config names runs, and the docs PR comes from the real repository', async (ctx) => {
  const model = ctx.remote.model('tiny_llama');
  const marks = join(ctx.remote.root, 'marks');
  plantHostileGit(model, marks);
  // What git's own discovery from the model dir would use.
  assert.is(git(model, ['rev-parse', '--show-toplevel']), model);
  const r = await runAction({
    index: ctx.index,
    workspace: ctx.remote.work,
    eventName: 'pull_request',
    payload: pullRequestEvent({ number: 9, headSha: SHA }),
    apiUrl: ctx.gh.url,
    runId: 4101,
    artifactDir: join(ctx.remote.root, 'artifacts'),
    inputs: { 'model-dir': MODEL, 'github-token': 'ghs_writer', docs: 'pr' },
  });
  assert.is(r.code, 0, show(r));
  assertIsolation(r, 'isolated');
  assert.equal(readdirSync(marks), [], `programs of the planted .git ran\n${show(r)}`);
  assert.ok(ctx.remote.branches().includes(BRANCH), `${ctx.remote.branches().join(',')}\n${show(r)}`);
  assert.is(git(ctx.remote.bare, ['rev-parse', `${BRANCH}^`]), ctx.remote.baseSha, 'one commit on the real main');
  assert.match(ctx.remote.show(BRANCH, PHASE2) ?? '', /PASS/);
  const docsPr = ctx.gh.pulls.find((p) => p.head === BRANCH);
  assert.ok(docsPr, 'the docs PR was opened');
  assert.is(r.outputs['docs-pr-number'], String(docsPr!.number));
});

s.run();
