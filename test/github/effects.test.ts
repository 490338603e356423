// The Action's effects in-process (issue 27.1): main.ts's run() with the port (src/github/ports.ts)
// answering from recorded CheckResults (built like the goldens: test/helpers/report.ts), against the
// OpenAPI-checked fake GitHub and a bare git remote. No probe, no Python, no bundle: what is tested
// is the annotations, the artifact, the job summary, the sticky comment, the docs PR and the outputs.
// The three end-to-end bundle runs with a real probe stay in action.test.ts / split.test.ts.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HERE_TEMP, runHere } from '../helpers/action-here.ts';
import type { Ports } from '../../src/github/ports.ts';
import { check, type CheckDeps, type CheckResult } from '../../src/check/index.ts';
import { InfraError } from '../../src/errors.ts';
import type { Plan } from '../../src/plan.ts';
import type { Report } from '../../src/record/report.ts';
import { renderMarkdown } from '../../src/report/markdown.ts';
import { toJson } from '../../src/report/json.ts';
import { FakeGitHub } from '../helpers/github-server.ts';
import { makeGitRemote, git, type GitRemote } from '../helpers/git-remote.ts';
import { openArtifact } from '../helpers/action-run.ts';
import { pullRequestEvent, pushEvent } from '../helpers/events.ts';
import { fakeMetrics, fakeReport } from '../helpers/report.ts';
import { failing, failingTwins, hiddenRope, hostile, hostileTwins, passing } from '../helpers/results.ts';
import { fixture, lcg, refValues, PADDED, REAL_LEN, COLS, type Fixture } from '../helpers/rundir.ts';
import { plantHostileGit } from '../helpers/hostile-git.ts';

const MODEL = 'programming_examples/llms/tiny_llama';
const SHA_A = 'a'.repeat(40);
const MARKER = `<!-- npu-block-gate:comment model=${MODEL} `;

const TEMP = HERE_TEMP;

/** A recorded verdict, as check() returns it: report.json and report.md in its run dir. */
function recorded(report: Report, plan: Plan): CheckResult {
  mkdirSync(plan.runDir, { recursive: true });
  const markdown = renderMarkdown(report, { flavor: 'summary' });
  const json = toJson(report);
  writeFileSync(join(plan.runDir, 'report.json'), json);
  writeFileSync(join(plan.runDir, 'report.md'), markdown);
  return { report: { ...report, run_dir: plan.runDir }, runDir: plan.runDir, markdown, json, exitCode: report.exit_code as CheckResult['exitCode'], docs: null, probed: null, docsError: null };
}

function failingReport(): Report {
  const m = fakeMetrics({ cosines: [0.999, 0.998, 0.91, 0.85], whole: 0.97 });
  m.perPosition.badRuns = [{ start: 2, end: 3, length: 2 }];
  return fakeReport(m);
}

/** A port that answers check() with `answer`, and refuses the probe and the fetch (nothing here may start one). */
function ports(answer: (plan: Plan, deps: CheckDeps) => Promise<CheckResult>): Ports & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    check: (plan, deps) => { calls.push(`check ${plan.mode}`); return answer(plan, deps); },
    probe: () => { throw new Error('the probe port was called'); },
    fetchRunDir: () => { throw new Error('the run-dir port was called'); },
    plans: () => { throw new Error('the plans port was called'); },
  };
}

/** A probe's run dir, recorded (test/helpers/rundir.ts: probe.json and the block's tensors) for the
 * tree's tiny_llama: `npu` overrides the NPU side's rows. */
function recordedRunDir(npu?: (ref: number[][]) => number[][], o: { model?: string; padded?: number[][] } = {}): Fixture {
  const ref = refValues();
  const noise = lcg(11);
  const rows = npu ? npu(ref) : ref.map((r) => r.map((v) => v + (noise() - 0.5) * 1e-4));
  const model = o.model ?? 'tiny_llama';
  return fixture({ ref, npu: [...rows, ...(o.padded ?? refValues(PADDED - REAL_LEN, COLS, 3))], probe: (p) => { p.model.name = model; p.model.dir = `programming_examples/llms/${model}`; } });
}

/** The port's check(): the real one, judging the recorded run dir of the plan's model (mode report:
 * no probe, no Python). */
function judging(f: Fixture | ((model: string) => Fixture), seen: Plan[] = []): Ports {
  return ports(async (plan, deps) => {
    seen.push(plan);
    const model = (plan.modelDir ?? '').split('/').pop()!;
    cpSync((typeof f === 'function' ? f(model) : f).runDir, plan.runDir, { recursive: true });
    return check({ ...plan, mode: 'report' }, deps);
  });
}

// ---------------------------------------------------------------------------------------------
const pr = suite<{ remote: GitRemote; gh: FakeGitHub }>('effects: a pull request');

pr.before(async (ctx) => {
  ctx.remote = makeGitRemote();
  ctx.gh = await new FakeGitHub({
    tokens: { ghs_writer: { login: 'github-actions[bot]', type: 'Bot', installation: true }, ghs_readonly: { login: 'github-actions[bot]', type: 'Bot', installation: true, readOnly: true } },
    pulls: [{ number: 7, headSha: SHA_A }], gitRemote: ctx.remote.bare, checkResponses: true,
  }).start();
});
pr.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, [], 'every request matched the OpenAPI description');
});

const prRun = (ctx: { remote: GitRemote; gh: FakeGitHub }, p: Ports, token = 'ghs_writer', fork = false) => runHere({
  workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: 7, headSha: SHA_A, fork }), apiUrl: ctx.gh.url,
  inputs: { 'model-dir': MODEL, 'github-token': token }, runId: 3001, ports: p,
});

pr('a recorded FAIL: annotations per failed gate, the artifact, the summary, one sticky comment, outputs, the step failed', async (ctx) => {
  const p = ports(async (plan) => recorded(failingReport(), plan));
  const r = await prRun(ctx, p);
  assert.equal(p.calls, ['check full']);
  assert.is(r.outputs.outcome, 'fail', r.stdout);
  assert.is(r.exitCode, 1, 'the step fails on a FAIL verdict');
  assert.match(r.stdout, /^::error title=Phase 2 FAIL tiny_llama%3A G1::whole-tensor cosine: measured 0\.97, needs >= 0\.99\./m);
  assert.match(r.stdout, /^::error title=Phase 2 FAIL tiny_llama%3A G2::per-position min cosine \(head_dim 64\): measured 0\.85, needs >= 0\.99\. rows under 0\.99: 2-3$/m);
  assert.match(r.stdout, /^::error::Phase 2 FAIL: tiny_llama \(G1, G2 failed\)$/m);
  assert.match(r.summary, /FAIL/);
  const ours = ctx.gh.commentsOn(7).filter((c) => c.login === 'github-actions[bot]');
  assert.is(ours.length, 1);
  assert.ok(ours[0].body.startsWith(MARKER), ours[0].body.slice(0, 200));
  assert.match(ours[0].body, /FAIL/);
  assert.ok(r.outputs['comment-url'].length > 0);
  // the run dir went up as the artifact
  assert.ok(existsSync(join(TEMP, 'artifacts')) && readdirSync(join(TEMP, 'artifacts'), { recursive: true }).some((f) => String(f).endsWith('.zip')));
  assert.ok(r.outputs['artifact-name'].length > 0);
});

pr('a recorded PASS on the same pull request updates the one comment in place', async (ctx) => {
  const r = await prRun(ctx, ports(async (plan) => recorded(fakeReport(), plan)));
  assert.is(r.outputs.outcome, 'pass', r.stdout);
  assert.is(r.exitCode, 0);
  const ours = ctx.gh.commentsOn(7).filter((c) => c.login === 'github-actions[bot]');
  assert.is(ours.length, 1);
  assert.match(ours[0].body, /PASS/);
  assert.not.match(ours[0].body, /\bFAIL\b/);
});

pr('check() failing with an infrastructure error: outcome error, never a FAIL, said so in the comment', async (ctx) => {
  const r = await prRun(ctx, ports(async () => { throw new InfraError('the NPU lock is held by another job'); }));
  assert.is(r.outputs.outcome, 'error', r.stdout);
  assert.match(r.stdout, /could not judge programming_examples\/llms\/tiny_llama \(infrastructure; not a FAIL\)/);
  const ours = ctx.gh.commentsOn(7).filter((c) => c.login === 'github-actions[bot]');
  assert.is(ours.length, 1);
  assert.match(ours[0].body, /the NPU lock is held by another job/);
  assert.not.match(ours[0].body, /\bFAIL\b(?! verdict)/);
});

pr('a fork PR that fails (a NaN in a padded row) still fails the check, with no write, and says so once', async (ctx) => {
  const before = ctx.gh.attemptedWrites().length;
  const nanPadded = recordedRunDir(undefined, { padded: refValues(PADDED - REAL_LEN, COLS, 3).map((r, i) => (i === 1 ? r.map((v, j) => (j === 4 ? NaN : v)) : r)) });
  const r = await prRun(ctx, judging(nanPadded), 'ghs_readonly', true);
  assert.is(r.exitCode, 1, r.stdout);
  assert.is(r.outputs.outcome, 'fail');
  assert.is(r.outputs.g3, 'fail');
  assert.is(ctx.gh.attemptedWrites().length, before, 'not even an attempted write');
  assert.is(r.stdout.split('\n').filter((l) => l.startsWith('::notice') && /skipping every GitHub write/.test(l)).length, 1);
});

pr('a read-only token on a same-repo PR: the refused write turns every later write off, with one notice', async (ctx) => {
  const before = ctx.gh.calls.length;
  const runs = { tiny_llama: recordedRunDir(), tiny_qwen3: recordedRunDir(undefined, { model: 'tiny_qwen3' }) } as Record<string, Fixture>;
  const r = await runHere({
    workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: 7, headSha: SHA_A }), apiUrl: ctx.gh.url,
    inputs: { 'model-dir': `${MODEL}\nprogramming_examples/llms/tiny_qwen3`, 'github-token': 'ghs_readonly' }, runId: 3002, ports: judging((m) => runs[m]),
  });
  assert.is(r.exitCode, 0, r.stdout);
  const posts = ctx.gh.calls.slice(before).filter((c) => c.method !== 'GET' && c.route !== 'POST /graphql');
  assert.is(posts.length, 1, 'one refused attempt, then no more for the second model');
  assert.is(posts[0].status, 403);
  assert.is(r.stdout.split('\n').filter((l) => l.startsWith('::notice') && /skipping every GitHub write/.test(l)).length, 1);
  assert.equal(JSON.parse(r.outputs.results).map((x: { outcome: string }) => x.outcome), ['pass', 'pass']);
});

pr('a fork pull request with a read-only token: no write is even attempted', async (ctx) => {
  const before = ctx.gh.attemptedWrites().length;
  const r = await prRun(ctx, ports(async (plan) => recorded(failingReport(), plan)), 'ghs_readonly', true);
  assert.is(r.outputs.outcome, 'fail', r.stdout);
  assert.is(ctx.gh.attemptedWrites().length, before);
  assert.is(r.outputs['comment-url'], '');
});

pr.run();

// ---------------------------------------------------------------------------------------------
// The sticky comment, once action.test.ts's (each a bundle run with a real probe): the judge is
// the real check() on a recorded run dir, the effects are the Action's, in this process.
const sticky = suite<{ remote: GitRemote; gh: FakeGitHub; runId: number }>('effects: the sticky PR comment');
const SHA_B = 'b1'.repeat(20);
const PASSING = recordedRunDir();
// the last real row off (a stale tail tile): G2 fails
const STALE_TAIL = recordedRunDir((ref) => ref.map((r, i) => (i === REAL_LEN - 1 ? r.map((v, j) => (j % 2 ? v : -v)) : r)));
// 5% larger: a norm-ratio warning, a new result digest
const SCALED = recordedRunDir((ref) => ref.map((r) => r.map((v) => v * 1.05)));

sticky.before(async (ctx) => {
  ctx.remote = makeGitRemote();
  ctx.gh = await new FakeGitHub({ pulls: [{ number: 7, headSha: SHA_A }], gitRemote: ctx.remote.bare, checkResponses: true }).start();
  ctx.runId = 2000;
});
sticky.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, [], 'every request matched the OpenAPI description');
});

const stickyRun = (ctx: { remote: GitRemote; gh: FakeGitHub; runId: number }, p: Ports, o: { sha?: string; pr?: number } = {}) => runHere({
  workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: o.pr ?? 7, headSha: o.sha ?? SHA_A }), apiUrl: ctx.gh.url,
  inputs: { 'model-dir': MODEL, 'github-token': 'ghs_writer' }, runId: ++ctx.runId, ports: p,
});

sticky('first PR run creates the comment, the summary and the outputs', async (ctx) => {
  const plans: Plan[] = [];
  const r = await stickyRun(ctx, judging(PASSING, plans));
  assert.is(r.exitCode, 0, r.stdout);
  assert.is(plans[0].writeDocs, false, 'a pull request only previews the documents');
  assert.is(r.outputs.outcome, 'pass');
  assert.is(r.outputs.g1, 'pass');
  assert.is(r.outputs.g2, 'pass');
  assert.is(r.outputs.g3, 'pass');
  assert.is(r.outputs.g4, 'skip', 'a pull request only previews the documents');
  assert.ok(Number(r.outputs.cosine) > 0.99);
  assert.ok(Number(r.outputs['min-cosine']) > 0.99);
  assert.is(r.outputs.threshold, '0.99');
  for (const k of ['max-abs', 'max-rel', 'sqnr']) assert.ok(Number.isFinite(Number(r.outputs[k])), k);
  assert.ok(existsSync(r.outputs['report-path']), 'report.json exists');
  const comments = ctx.gh.commentsOn(7);
  assert.is(comments.length, 1);
  const body = comments[0].body;
  assert.ok(body.startsWith(MARKER), body.slice(0, 200));
  assert.match(body, 'Phase 2 PASS');
  assert.match(body, '| G1');
  assert.match(body, '```mermaid');
  assert.match(body, 'Documents a trusted run');
  assert.ok(body.length < 65_536);
  assert.is(r.outputs['comment-url'], `https://github.example/acme/mlir-air/pull/7#issuecomment-${comments[0].id}`);
  assert.match(r.summary, 'Phase 2 PASS');
  // The artifact holds the run dir, report.json and report.md.
  assert.is(r.outputs['artifact-name'], 'npu-block-gate-programming_examples__llms__tiny_llama-attempt1', 'exact name: prefix, model path, attempt');
  const art = await openArtifact(join(TEMP, 'artifacts'), ctx.runId, r.outputs['artifact-name']);
  for (const f of ['probe.json', 'block0.npu.npy', 'block0.ref.npy', 'report.json', 'report.md']) assert.ok(existsSync(join(art, f)), f);
  // A pull request never pushes documents.
  assert.equal(ctx.remote.branches(), ['main']);
  const leaks = r.stdout.split('\n').filter((l) => l.includes('ghs_writer') && l !== '::add-mask::ghs_writer');
  assert.equal(leaks, [], 'the token is only ever registered as a mask');
});

sticky('an unchanged result writes nothing', async (ctx) => {
  const before = ctx.gh.writes().length;
  const r = await stickyRun(ctx, judging(PASSING));
  assert.is(r.exitCode, 0, r.stdout);
  assert.is(ctx.gh.writes().length, before, 'no POST/PATCH/DELETE');
  assert.is(ctx.gh.commentsOn(7).length, 1);
  assert.match(r.stdout, 'comment unchanged');
});

sticky('a second run with a new result updates the comment in place', async (ctx) => {
  const id = ctx.gh.commentsOn(7)[0].id;
  ctx.gh.pulls[0].headSha = SHA_B;
  const r = await stickyRun(ctx, judging(PASSING), { sha: SHA_B });
  assert.is(r.exitCode, 0, r.stdout);
  const comments = ctx.gh.commentsOn(7);
  assert.is(comments.length, 1, 'no duplicate');
  assert.is(comments[0].id, id);
  assert.match(comments[0].body, SHA_B.slice(0, 12));
  const last = ctx.gh.writes().at(-1)!;
  assert.is(last.method, 'PATCH');
  assert.is(last.route, '/repos/{owner}/{repo}/issues/comments/{comment_id}');
});

sticky('a failing gate exits 1, annotates the gate, and the comment says FAIL', async (ctx) => {
  const r = await stickyRun(ctx, judging(STALE_TAIL), { sha: SHA_B });
  assert.is(r.exitCode, 1, r.stdout);
  assert.is(r.outputs.outcome, 'fail');
  assert.is(r.outputs.g2, 'fail');
  assert.match(r.stdout, /^::error title=Phase 2 FAIL tiny_llama%3A G2::per-position/m);
  assert.match(r.stdout, /Phase 2 FAIL/);
  const comments = ctx.gh.commentsOn(7);
  assert.is(comments.length, 1);
  assert.match(comments[0].body, 'Phase 2 FAIL');
  assert.match(comments[0].body, 'G2');
});

sticky('the lookup pages through other comments and ignores look-alikes from other users', async (ctx) => {
  // PR 8: 130 comments by people (one of them copies our marker), then ours on page 2.
  ctx.gh.pulls.push({ number: 8, title: 'PR 8', body: '', head: 'f8', headSha: SHA_A, headRepo: 'acme/mlir-air', base: 'main', state: 'open' });
  for (let i = 0; i < 130; i++) ctx.gh.addComment(8, i === 5 ? `${MARKER}digest=0000000000000000 -->\nfake` : `comment ${i}`, 'someone');
  const r1 = await stickyRun(ctx, judging(PASSING), { pr: 8 });
  assert.is(r1.exitCode, 0, r1.stdout);
  const ours = ctx.gh.commentsOn(8).filter((c) => c.login === 'github-actions[bot]');
  assert.is(ours.length, 1);
  const r2 = await stickyRun(ctx, judging(SCALED), { pr: 8 });
  assert.match(r2.stdout, /norm ratio/);
  const after = ctx.gh.commentsOn(8).filter((c) => c.login === 'github-actions[bot]');
  assert.is(after.length, 1, r2.stdout);
  assert.is(after[0].id, ours[0].id);
  assert.ok(after[0].body.includes('norm ratio'), 'updated in place with the new result');
  assert.is(ctx.gh.commentsOn(8).find((c) => c.login === 'someone' && c.body.includes('fake'))!.body.endsWith('fake'), true, 'the look-alike is untouched');
  assert.ok(ctx.gh.calls.some((c) => c.route === '/repos/{owner}/{repo}/issues/{issue_number}/comments' && /page=2/.test(c.query)), 'page 2 was read');
});

sticky.run();

// ---------------------------------------------------------------------------------------------
const push = suite<{ remote: GitRemote; gh: FakeGitHub }>('effects: a trusted push records the documents through the docs PR');

push.before(async (ctx) => {
  ctx.remote = makeGitRemote();
  ctx.gh = await new FakeGitHub({ gitRemote: ctx.remote.bare, checkResponses: true }).start();
});
push.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, [], 'every request matched the OpenAPI description');
});

push('the documents check() wrote into the checkout go up on the docs branch, one PR opened', async (ctx) => {
  const model = ctx.remote.model('tiny_llama');
  const p = ports(async (plan, deps) => {
    const r = recorded(fakeReport(), plan);
    // what check() does on a trusted run: writes the documents into the checkout, then proposes them
    mkdirSync(join(model, 'docs/development_progress'), { recursive: true });
    writeFileSync(join(model, 'docs/development_progress/phase2_block.md'), '# Phase 2\n\nrecorded\n');
    assert.ok(deps.proposeDocs, 'a trusted push proposes the documents');
    const refused = await deps.proposeDocs!({} as never, r.report);
    assert.is(refused, null);
    return r;
  });
  const r = await runHere({
    workspace: ctx.remote.work, eventName: 'push', payload: pushEvent(SHA_A), apiUrl: ctx.gh.url,
    inputs: { 'model-dir': MODEL, 'github-token': 'ghs_writer' }, runId: 3101, ports: p,
  });
  assert.is(r.outputs.outcome, 'pass', r.stdout);
  const branch = `npu-block-gate/phase2/${MODEL}`;
  assert.ok(ctx.remote.branches().includes(branch), ctx.remote.branches().join(', '));
  assert.is(ctx.remote.show(branch, `${MODEL}/docs/development_progress/phase2_block.md`), '# Phase 2\n\nrecorded\n');
  assert.is(ctx.gh.pulls.filter((x) => x.head === branch).length, 1);
  assert.ok(r.outputs['docs-pr-url'].length > 0, JSON.stringify(r.outputs));
});

push.run();

// ---------------------------------------------------------------------------------------------
// The docs PR on trusted pushes, once action.test.ts's (each a bundle run with a real probe): the
// real check() judges a recorded run dir and writes the documents into the checkout; the docs PR
// is the Action's, against the bare remote. (action-check.test.ts's trusted push keeps one end to end.)
const docs = suite<{ remote: GitRemote; gh: FakeGitHub; runId: number }>('effects: the docs PR on push');
const BRANCH = `npu-block-gate/phase2/${MODEL}`;
const PHASE2 = `${MODEL}/docs/development_progress/phase2_block.md`;

docs.before(async (ctx) => {
  ctx.remote = makeGitRemote();
  ctx.gh = await new FakeGitHub({ gitRemote: ctx.remote.bare, checkResponses: true }).start();
  ctx.runId = 3000;
});
docs.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, []);
});

const pushRun = (ctx: { remote: GitRemote; gh: FakeGitHub; runId: number }, f: Fixture) => runHere({
  workspace: ctx.remote.work, eventName: 'push', payload: pushEvent(ctx.remote.baseSha), apiUrl: ctx.gh.url,
  inputs: { 'model-dir': MODEL, 'github-token': 'ghs_writer' }, runId: ++ctx.runId, ports: judging(f), sha: ctx.remote.baseSha,
});

docs('a push opens the docs PR with both documents, saying which were force-added', async (ctx) => {
  const r = await pushRun(ctx, PASSING);
  assert.is(r.exitCode, 0, r.stdout);
  assert.is(r.outputs.g4, 'pass');
  assert.ok(ctx.remote.branches().includes(BRANCH), ctx.remote.branches().join(','));
  assert.is(ctx.remote.log(BRANCH).length, 2, 'one commit on top of main');
  const phase2 = ctx.remote.show(BRANCH, PHASE2);
  assert.ok(phase2 && /PASS/.test(phase2), 'phase2_block.md committed');
  assert.ok(ctx.remote.show(BRANCH, `${MODEL}/TODO.md`), 'TODO.md committed');
  assert.is(ctx.gh.pulls.length, 1);
  const p = ctx.gh.pulls[0];
  assert.is(p.head, BRANCH);
  assert.is(p.base, 'main');
  assert.match(p.body ?? '', 'Force-added');
  assert.match(p.body ?? '', PHASE2);
  assert.is(r.outputs['docs-pr-number'], String(p.number));
  assert.is(r.outputs['docs-pr-url'], `https://github.example/acme/mlir-air/pull/${p.number}`);
  // The user's checkout is left on main with a clean index.
  assert.is(git(ctx.remote.work, ['rev-parse', '--abbrev-ref', 'HEAD']), 'main');
  assert.is(git(ctx.remote.work, ['diff', '--cached', '--name-only']), '');
});

docs('a second identical push adds no commit and no PR churn', async (ctx) => {
  const tip = git(ctx.remote.bare, ['rev-parse', BRANCH]);
  const writes = ctx.gh.writes().length;
  const r = await pushRun(ctx, PASSING);
  assert.is(r.exitCode, 0, r.stdout);
  assert.is(git(ctx.remote.bare, ['rev-parse', BRANCH]), tip, 'no new commit, no push');
  assert.is(ctx.gh.writes().length, writes, 'no PR create or update');
  assert.is(ctx.gh.pulls.length, 1);
  assert.is(r.outputs['docs-pr-number'], String(ctx.gh.pulls[0].number));
});

docs('a push with a new result updates the same branch and PR', async (ctx) => {
  const r = await pushRun(ctx, STALE_TAIL);
  assert.is(r.exitCode, 1, r.stdout);
  assert.is(ctx.gh.pulls.length, 1, 'same PR');
  assert.is(ctx.remote.log(BRANCH).length, 2, 'the branch is rebuilt on main: still one commit');
  assert.match(ctx.remote.show(BRANCH, PHASE2) ?? '', 'FAIL');
  assert.match(ctx.gh.pulls[0].title, 'FAIL');
});

docs('once the base branch holds the recorded documents, the open docs PR is closed and nothing is pushed', async (ctx) => {
  // Someone merges the docs PR (fast-forward main to the docs branch); the next push checks it out.
  git(ctx.remote.bare, ['update-ref', 'refs/heads/main', `refs/heads/${BRANCH}`]);
  // actions/checkout gives a clean tree at the new main.
  git(ctx.remote.work, ['fetch', '--quiet', 'origin', 'main']);
  git(ctx.remote.work, ['reset', '--quiet', '--hard', 'origin/main']);
  git(ctx.remote.work, ['clean', '-ffdxq']);
  const branchTip = git(ctx.remote.bare, ['rev-parse', BRANCH]);
  const r = await pushRun(ctx, STALE_TAIL);
  assert.is(r.exitCode, 1, r.stdout);
  assert.is(ctx.gh.pulls[0].state, 'closed', r.stdout);
  assert.is(git(ctx.remote.bare, ['rev-parse', BRANCH]), branchTip, 'no push');
  assert.match(r.stdout, 'already records this result');
});

docs.run();

// ---------------------------------------------------------------------------------------------
// Who the comment is by, and a repository that refuses Actions-created PRs: once action.test.ts's.
const who = suite<{ remote: GitRemote; runId: number }>('effects: comment author, refused docs PR');

who.before((ctx) => {
  ctx.remote = makeGitRemote();
  ctx.runId = 4000;
});

const whoRun = (ctx: { remote: GitRemote; runId: number }, gh: FakeGitHub, o: { event: 'push' | 'pull_request'; token: string; f?: Fixture; inputs?: Record<string, string>; sha?: string }) => runHere({
  workspace: ctx.remote.work, eventName: o.event, apiUrl: gh.url, runId: ++ctx.runId,
  payload: o.event === 'push' ? pushEvent(ctx.remote.baseSha) : pullRequestEvent({ number: 7, headSha: o.sha ?? SHA_A }),
  sha: o.event === 'push' ? ctx.remote.baseSha : undefined,
  inputs: { 'model-dir': MODEL, 'github-token': o.token, ...o.inputs }, ports: judging(o.f ?? PASSING),
});

who('a GitHub App token finds and updates its own comment (the login is the token\'s, from GraphQL viewer)', async (ctx) => {
  const gh = await new FakeGitHub({ tokens: { ghs_app: { login: 'npu-gate[bot]', type: 'Bot', installation: true } }, pulls: [{ number: 7, headSha: SHA_A }], checkResponses: true }).start();
  try {
    const r1 = await whoRun(ctx, gh, { event: 'pull_request', token: 'ghs_app' });
    assert.is(r1.exitCode, 0, r1.stdout);
    gh.pulls[0].headSha = SHA_B;
    const r2 = await whoRun(ctx, gh, { event: 'pull_request', token: 'ghs_app', sha: SHA_B });
    assert.is(r2.exitCode, 0, r2.stdout);
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

who('when GraphQL cannot name the token, comment-author does; without either, no comment is posted (and none duplicated)', async (ctx) => {
  const gh = await new FakeGitHub({ tokens: { ghs_app: { login: 'npu-gate[bot]', type: 'Bot', installation: true, noGraphql: true } }, pulls: [{ number: 7, headSha: SHA_A }] }).start();
  try {
    const r0 = await whoRun(ctx, gh, { event: 'pull_request', token: 'ghs_app' });
    assert.is(r0.exitCode, 0, r0.stdout);
    assert.is(gh.commentsOn(7).length, 0);
    assert.ok(r0.stdout.split('\n').some((l) => l.startsWith('::warning') && /comment-author/.test(l)), r0.stdout);
    for (let i = 0; i < 2; i++) {
      const r = await whoRun(ctx, gh, { event: 'pull_request', token: 'ghs_app', inputs: { 'comment-author': 'npu-gate[bot]' }, f: i ? STALE_TAIL : PASSING });
      assert.is(r.exitCode, i ? 1 : 0, r.stdout);
    }
    assert.is(gh.commentsOn(7).length, 1);
  } finally {
    await gh.stop();
  }
});

who('a repository that refuses Actions-created PRs: G4 is a warning with the reason, never a silent pass', async (ctx) => {
  const gh = await new FakeGitHub({ gitRemote: ctx.remote.bare, refusePullCreation: true, checkResponses: true }).start();
  try {
    const r = await whoRun(ctx, gh, { event: 'push', token: 'ghs_writer' });
    assert.is(r.exitCode, 0, r.stdout);
    assert.is(r.outputs.outcome, 'pass', 'the numbers still pass');
    assert.is(r.outputs.g4, 'skip');
    assert.ok(r.stdout.split('\n').some((l) => l.startsWith('::warning') && /does not allow GitHub Actions to create pull requests/.test(l)), r.stdout);
    assert.match(r.summary, 'G4: the documents were not recorded');
    assert.ok(ctx.remote.branches().includes(`npu-block-gate/phase2/${MODEL}`), 'the documents wait on the docs branch');
    const report = JSON.parse(readFileSync(r.outputs['report-path'], 'utf8'));
    assert.is(report.gates.find((g: { id: string }) => g.id === 'G4').status, 'skip');
    assert.is(gh.pulls.length, 0);
  } finally {
    await gh.stop();
  }
});

who.run();

// ---------------------------------------------------------------------------------------------
// The goldens' results (test/helpers/results.ts), recorded, through the effects: each gets one
// comment and its annotations, and nothing foreign starts a workflow command on stdout.
const golden = suite<{ remote: GitRemote; gh: FakeGitHub; pr: number }>('effects: the goldens\' results (pass, fail, hostile, lens, twins)');

/** Our own workflow commands: the only lines of stdout that may start one. */
const OURS = /^::(error|warning|notice|debug|group|endgroup|add-mask)(\s[^:]*)?::/;
/** Every line the runner would see (it splits on \r and \n) that starts a command. */
const commandLines = (stdout: string) => stdout.split(/\r\n|\r|\n/).map((l) => l.replace(/^[\s\u0085\u180e\u200b-\u200d\u2060\ufeff]*/, '')).filter((l) => l.startsWith('::') || l.startsWith('##['));

golden.before(async (ctx) => {
  ctx.remote = makeGitRemote();
  ctx.gh = await new FakeGitHub({ pulls: [20, 21, 22, 23, 24, 25].map((number) => ({ number, headSha: SHA_A })), gitRemote: ctx.remote.bare, checkResponses: true }).start();
  ctx.pr = 19;
});
golden.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, [], 'every request matched the OpenAPI description');
});

async function goldenRun(ctx: { remote: GitRemote; gh: FakeGitHub; pr: number }, report: Report) {
  const pr = ++ctx.pr;
  const r = await runHere({
    workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: pr, headSha: SHA_A }), apiUrl: ctx.gh.url,
    inputs: { 'model-dir': MODEL, 'github-token': 'ghs_writer' }, runId: 7000 + pr, ports: ports(async (plan) => recorded(report, plan)),
  });
  assert.equal(commandLines(r.stdout).filter((l) => !OURS.test(l)), [], 'only our own workflow commands');
  const ours = ctx.gh.commentsOn(pr).filter((c) => c.login === 'github-actions[bot]');
  assert.is(ours.length, 1);
  assert.ok(ours[0].body.startsWith(MARKER));
  assert.is(r.outputs.outcome, report.outcome);
  assert.is(r.exitCode, report.outcome === 'fail' ? 1 : 0, r.stdout);
  return { ...r, body: ours[0].body };
}

golden('pass and fail: the verdict in the comment, one annotation per failed gate', async (ctx) => {
  const p = await goldenRun(ctx, passing());
  assert.match(p.body, 'Phase 2 PASS');
  assert.match(p.body, /\| probe isolation +\| namespace: bubblewrap/, 'the comment names the isolation');
  assert.is(commandLines(p.stdout).filter((l) => l.startsWith('::error')).length, 0);
  const f = await goldenRun(ctx, failing());
  assert.match(f.body, 'Phase 2 FAIL');
  assert.match(f.body, 'o_proj');
  assert.equal(commandLines(f.stdout).filter((l) => l.startsWith('::error title=Phase 2 FAIL')).map((l) => /%3A (G\d)::/.exec(l)?.[1]), ['G1', 'G2']);
  assert.match(f.stdout, /^::warning title=npu-block-gate tiny_llama%3A sqnr::SQNR 21\.3 dB/m);
});

golden('hostile strings: no markup, mention or workflow command gets through, in the comment or on stdout', async (ctx) => {
  for (const report of [hostile(), await hostileTwins()]) {
    const r = await goldenRun(ctx, report);
    assert.not.match(r.body, '<img');
    assert.is(r.body.split('<!--').length - 1, 1, 'our marker is the only HTML comment');
    assert.not.match(r.body, /@mallory/);
    assert.not.match(r.body, /^::/m);
  }
});

golden('the lens and the twins bisect: a hidden RoPE bug warns and passes, a transposed Q weight fails naming the ELF', async (ctx) => {
  const h = await goldenRun(ctx, await hiddenRope());
  assert.match(h.body, 'Phase 2 PASS');
  assert.match(h.stdout, /^::warning title=npu-block-gate tiny_llama%3A lens::the lens: boundary q_roped \(RoPE\) is well below the threshold/m);
  assert.match(h.body, 'q_roped');
  const t = await goldenRun(ctx, await failingTwins());
  assert.match(t.body, 'Phase 2 FAIL');
  assert.match(t.body, 'rms_gemms_rope');
  assert.match(t.body, /`q`/);
});

golden.run();

// Issue 25, acceptance: a same-repository pull request under `docs: pr` whose probe plants a .git in
// the model dir (its config naming core.sshCommand, hooks and fsmonitor, each a program that leaves
// a mark). The Action runs no program of it, and makes the docs PR from the workspace's real
// repository: the bare remote gets the docs branch on main. The plant is made before the run, as a
// probe with a writable model dir would have left it (the sandbox's one door keeps it out of the
// checkout now: test/probe-isolation.test.ts), so this holds the git layer on its own.
const planted = suite<{ remote: GitRemote; gh: FakeGitHub }>('effects: a .git planted in the model dir');

planted.before(async (ctx) => {
  ctx.remote = makeGitRemote();
  ctx.gh = await new FakeGitHub({ pulls: [{ number: 9, headSha: SHA_A }], gitRemote: ctx.remote.bare, checkResponses: true }).start();
});
planted.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, []);
});

planted('docs: pr on a same-repository PR: no program the planted config names runs, and the docs PR comes from the real repository', async (ctx) => {
  const model = ctx.remote.model('tiny_llama');
  const marks = join(ctx.remote.root, 'marks');
  plantHostileGit(model, marks);
  // What git's own discovery from the model dir would use.
  assert.is(git(model, ['rev-parse', '--show-toplevel']), model);
  const r = await runHere({
    workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: 9, headSha: SHA_A }), apiUrl: ctx.gh.url,
    inputs: { 'model-dir': MODEL, 'github-token': 'ghs_writer', docs: 'pr' }, runId: 4101, ports: judging(PASSING),
  });
  assert.is(r.exitCode, 0, r.stdout);
  assert.equal(readdirSync(marks), [], `programs of the planted .git ran\n${r.stdout}`);
  const branch = `npu-block-gate/phase2/${MODEL}`;
  assert.ok(ctx.remote.branches().includes(branch), `${ctx.remote.branches().join(',')}\n${r.stdout}`);
  assert.is(git(ctx.remote.bare, ['rev-parse', `${branch}^`]), ctx.remote.baseSha, 'one commit on the real main');
  assert.match(ctx.remote.show(branch, `${MODEL}/docs/development_progress/phase2_block.md`) ?? '', /PASS/);
  const docsPr = ctx.gh.pulls.find((p) => p.head === branch);
  assert.ok(docsPr, 'the docs PR was opened');
  assert.is(r.outputs['docs-pr-number'], String(docsPr!.number));
});

planted.run();
