// The fleet (issue 19), as a workflow runs it: `mode: affected` names the matrix, every leg runs
// `mode: probe` on its "runner" (two NPU generations; one leg's runner is broken: in this process,
// the probe answered by the port with a recorded run dir: test/helpers/action-here.ts),
// and one `mode: summary` job judges every leg's run dir and answers once: one sticky comment, one
// job summary, one docs PR with a commit per model. A second push updates the comment in place.
// Against the local OpenAPI-checked GitHub and a real bare git remote.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFileSync, cpSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeGitHub } from '../helpers/github-server.ts';
import { makeGitRemote, git, type GitRemote } from '../helpers/git-remote.ts';
import { runAction, openArtifact, type ActionRunResult } from '../helpers/action-run.ts';
import { ensureDist } from '../helpers/dist.ts';
import { pullRequestEvent } from '../helpers/events.ts';
import { readHistory } from '../../src/docs/phase2.ts';
import { InputError } from '../../src/errors.ts';
import type { Ports } from '../../src/github/ports.ts';
import type { Probed } from '../../src/check/index.ts';
import type { NpuFacts } from '../../src/npu/generation.ts';
import { runHere, type Ran } from '../helpers/action-here.ts';
import { REPO } from '../helpers/airmini.ts';
import { factsOf, promptSets } from '../../src/fleet/plans.ts';
import { fixture } from '../helpers/rundir.ts';

const L = 'programming_examples/llms';
const PR = 31;
const PREFIX = 'phase2-run';
const RUNNERS = ['npu-phoenix', 'npu-strix'];

function show(r: ActionRunResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout.slice(-6000)}\n--- stderr\n${r.stderr.slice(-2000)}`;
}

interface Ctx {
  remote: GitRemote;
  gh: FakeGitHub;
  artifacts: string;
  index: string;
  commentId: number;
}

const s = suite<Ctx>('action: the fleet (affected -> matrix of probe legs -> one summary)');

function prPayload(head: string, base: string) {
  const p = pullRequestEvent({ number: PR, headSha: head });
  p.pull_request.base.sha = base;
  return p;
}

/** Commits a change on the feature branch, pushes it, and moves the PR's head there. */
function push(ctx: Ctx, files: string[], note: string): string {
  for (const f of files) appendFileSync(join(ctx.remote.work, f), `\n# ${note}\n`);
  git(ctx.remote.work, ['add', '-A']);
  git(ctx.remote.work, ['commit', '--quiet', '-m', note]);
  git(ctx.remote.work, ['push', '--quiet', 'origin', 'HEAD:feature']);
  const head = git(ctx.remote.work, ['rev-parse', 'HEAD']);
  ctx.gh.pulls.find((p) => p.number === PR)!.headSha = head;
  return head;
}

/** `probe plans` of examples/air-mini's three models, recorded (test/fixtures/fleet/air-mini-plans.json,
 * its air root written <air-root>): what each model's check reads. test/fleet/affected.test.ts runs the real one. */
const PLANS = JSON.parse(readFileSync(join(REPO, 'test/fixtures/fleet/air-mini-plans.json'), 'utf8')).plans as { model_dir: string; plan: Record<string, unknown> }[];

/** The port of an affected job: the recorded plans, nothing else. */
const planPorts: Ports = {
  check: () => { throw new Error('mode affected runs no check()'); },
  probe: () => { throw new Error('mode affected runs no probe'); },
  fetchRunDir: () => { throw new Error('mode affected fetches no run dir'); },
  plans: async (airRoot, names) => names.map((name) => {
    const p = PLANS.find((x) => x.model_dir.endsWith(`/${name}`));
    if (!p) throw new Error(`no recorded plan for ${name}`);
    return factsOf(name, p.plan, airRoot, promptSets(airRoot));
  }),
};

/** mode affected, in this process (its plans recorded: no Python). */
async function affected(ctx: Ctx, runId: number, head: string, payload: unknown = prPayload(head, ctx.remote.baseSha)): Promise<Ran> {
  return runHere({
    workspace: ctx.remote.work, eventName: 'pull_request', runId, job: 'affected', sha: head, payload, apiUrl: ctx.gh.url, artifactDir: ctx.artifacts,
    inputs: { mode: 'affected', runners: RUNNERS.join(','), 'github-token': '' }, ports: planPorts,
  });
}

/** The NPU each runner label's probe finds (its xrt-smi: test/python/test_probe_npu.py holds that reading). */
const NPU_OF: Record<string, NpuFacts> = {
  'npu-phoenix': { generation: 'phoenix', name: 'RyzenAI-npu1', pci: null, bdf: '0000:c5:00.1', driver: '2.19.0_20250330', firmware: '1.0.0.63', xrt: '2.19.0', source: 'name' },
  'npu-strix': { generation: 'strix', name: 'NPU Strix', pci: null, bdf: '0000:c5:00.1', driver: '2.19.0_20250330', firmware: '1.0.0.63', xrt: '2.19.0', source: 'name' },
};

/**
 * A leg: mode probe on its runner, in this process, the probe answered by the port with a recorded
 * run dir (the leg's model, the NPU its runner has); everything after the probe (github.json, the
 * artifact, the summary, the outputs) is the Action's own. A broken runner's probe cannot start its Python.
 */
async function leg(ctx: Ctx, runId: number, head: string, l: { model: string; runner: string }, broken = false): Promise<Ran> {
  const ports: Ports = {
    check: () => { throw new Error('a leg runs no check()'); },
    fetchRunDir: () => { throw new Error('a leg fetches no run dir'); },
    plans: () => { throw new Error('a leg makes no plans'); },
    probe: async (plan) => {
      if (broken) throw new InputError('/nonexistent/bin/python3: no such Python (the probe needs a Python with numpy)');
      const name = l.model.split('/').pop()!;
      const f = fixture({ probe: (p) => { p.model.name = name; p.model.dir = l.model; p.environment.npu = NPU_OF[l.runner]; } });
      cpSync(f.runDir, plan.runDir, { recursive: true });
      return { runDir: plan.runDir, isolation: { mode: 'namespace', detail: 'bubblewrap: user+pid+mount+ipc+net namespaces, private /proc, read-only root', source: 'this run' } } as Probed;
    },
  };
  return runHere({
    workspace: ctx.remote.work, eventName: 'pull_request', runId, job: 'legs', sha: head, payload: prPayload(head, ctx.remote.baseSha), apiUrl: ctx.gh.url,
    artifactDir: ctx.artifacts, ports,
    // toJSON(matrix) as the runner renders it: pretty-printed.
    inputs: { mode: 'probe', 'model-dir': l.model, matrix: JSON.stringify(l, null, 2), 'github-token': '', 'artifact-name': PREFIX },
  });
}

async function summary(ctx: Ctx, runId: number, head: string, matrix: string): Promise<ActionRunResult> {
  return runAction({
    index: ctx.index, workspace: ctx.remote.work, eventName: 'pull_request', runId, job: 'summary', sha: head,
    payload: prPayload(head, ctx.remote.baseSha), apiUrl: ctx.gh.url, artifactDir: ctx.artifacts,
    inputs: { mode: 'summary', legs: matrix, 'github-token': 'ghs_writer', 'artifact-name': PREFIX, docs: 'pr' },
  });
}

s.before(async (ctx) => {
  ctx.index = await ensureDist();
  ctx.remote = makeGitRemote();
  ctx.artifacts = join(ctx.remote.root, 'artifacts');
  git(ctx.remote.work, ['checkout', '--quiet', '-b', 'feature']);
  ctx.gh = await new FakeGitHub({ gitRemote: ctx.remote.bare, pulls: [{ number: PR, headSha: '0'.repeat(40), head: 'feature' }], checkResponses: true }).start();
});
s.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, []);
});

s('a pull request: affected names two models (x two runner labels), three legs probe and one errors, one summary answers', async (ctx) => {
  const head = push(ctx, [`${L}/tiny_llama/tiny_llama_prefill.py`, `${L}/tiny_qwen3/tiny_qwen3_prefill.py`, 'README.md'], 'first change');
  const a = await affected(ctx, 7001, head);
  assert.is(a.exitCode, 0, a.stdout);
  assert.equal(JSON.parse(a.outputs.models), [`${L}/tiny_llama`, `${L}/tiny_qwen3`]);
  assert.is(a.outputs.count, '2');
  const matrix = JSON.parse(a.outputs.matrix) as { include: { model: string; runner: string }[] };
  assert.is(matrix.include.length, 4);
  assert.match(a.summary, /\| `tiny_qwen25` \| ➖ out +\| no changed file is among its inputs/);
  assert.is(ctx.gh.calls.length, 0, 'affected calls no API');

  // The legs: tiny_qwen3 on the Strix runner cannot start its Python (a broken runner).
  const broken = (l: { model: string; runner: string }) => l.model.endsWith('tiny_qwen3') && l.runner === 'npu-strix';
  for (const l of matrix.include) {
    const r = await leg(ctx, 7001, head, l, broken(l));
    if (broken(l)) {
      assert.is(r.outputs.outcome, 'error', r.stdout);
      // Its artifact carries the error for the summary (github.json probe_error).
      const meta = JSON.parse(readFileSync(join(await openArtifact(ctx.artifacts, 7001, r.outputs['artifact-name']), 'github.json'), 'utf8'));
      assert.match(meta.probe_error.message, /nonexistent/);
    } else assert.is(r.outputs.outcome, 'probed', r.stdout);
  }
  assert.is(ctx.gh.calls.length, 0, 'the legs hold no token');

  const r = await summary(ctx, 7001, head, a.outputs.matrix);
  // One leg could not be judged: the step fails as an error, never as a FAIL.
  assert.is(r.code, 1, show(r));
  assert.equal([r.outputs.outcome, r.outputs.legs, r.outputs.passed, r.outputs.failed, r.outputs.errored, r.outputs.missing], ['error', '4', '3', '0', '1', '0']);
  assert.match(r.stdout, /could not judge .*tiny_qwen3 on npu-strix \(error: the probe job could not run the check/);
  assert.not.match(r.stdout, /Phase 2 FAIL/);
  // One comment.
  const comments = ctx.gh.commentsOn(PR);
  assert.is(comments.length, 1);
  const body = comments[0].body;
  ctx.commentId = comments[0].id;
  assert.match(body, /^<!-- npu-block-gate:comment model=fleet-summary\/npu digest=[0-9a-f]{32} -->\n## npu-block-gate: Phase 2 across the fleet/);
  assert.match(body, `4 legs (2 models x 2 NPUs): ✅ 3 pass · ⚠️ 1 error at \`${head.slice(0, 12)}\``);
  // Each leg names the generation its probe found (the runner's xrt-smi); the broken leg is shown
  // under the generation its runner label ran in the other legs.
  assert.match(body, /\| `tiny_qwen3` \| Strix \| ⚠️ ERROR \|.*the probe job could not run the check/);
  assert.match(body, /\| model \| Phoenix \| Strix \|\n\| - \| - \| - \|\n\| `tiny_llama` \| ✅ \| ✅ \|\n\| `tiny_qwen3` \| ✅ \| ⚠️ \|\n/);
  assert.not.match(body, /❌ FAIL/);
  assert.is((body.match(/\[run dir\]\(https:\/\/github\.example\/acme\/mlir-air\/actions\/runs\/7001\/artifacts\/\d+\)/g) ?? []).length, 4, 'every leg links its artifact');
  // One job summary with the same table.
  assert.match(r.summary, /## npu-block-gate: Phase 2 across the fleet/);
  assert.match(r.summary, /⚠️ ERROR/);
  // The fleet page (issue 31.3): uploaded as its own artifact and named in the summary; each cell
  // the leg's verdict on its generation (the broken leg an error, never a FAIL).
  const page = /fleet\.html in \[the artifact `([^`]+)`\]/.exec(r.summary);
  assert.ok(page, r.summary.slice(-1500));
  const html = readFileSync(join(await openArtifact(ctx.artifacts, 7001, page![1]), 'fleet.html'), 'utf8');
  const cells = [...html.matchAll(/data-model="([^"]+)" data-npu="([^"]+)" data-verdict="([^"]+)"/g)].map((m) => m.slice(1).join(' '));
  assert.equal(cells.sort(), ['tiny_llama phoenix pass', 'tiny_llama strix pass', 'tiny_qwen3 phoenix pass', 'tiny_qwen3 strix error']);
  // One docs PR (docs: pr on a same-repository pull request), one commit per model.
  const docsPrs = ctx.gh.pulls.filter((p) => p.head === 'npu-block-gate/phase2-fleet');
  assert.is(docsPrs.length, 1);
  assert.is(r.outputs['docs-pr-number'], String(docsPrs[0].number));
  assert.equal(ctx.remote.log('npu-block-gate/phase2-fleet').slice(0, 2).map((m) => m.replace(/ for [0-9a-f]{12}$/, '')), [
    // The leg that could not be judged records nothing.
    'docs(tiny_qwen3): record Phase 2 PASS on Phoenix',
    'docs(tiny_llama): record Phase 2 PASS on Phoenix, PASS on Strix',
  ]);
  assert.equal(ctx.remote.log('npu-block-gate/phase2-fleet').slice(2), ctx.remote.log('main'), 'rebuilt on main');
  // One history row per generation, keyed by commit, prompt and NPU.
  const doc = ctx.remote.show('npu-block-gate/phase2-fleet', `${L}/tiny_llama/docs/development_progress/phase2_block.md`)!;
  assert.equal(readHistory(doc, 'phase2_block.md').map((h) => [h.commit, h.npu, h.outcome]), [[head.slice(0, 12), 'phoenix', 'PASS'], [head.slice(0, 12), 'strix', 'PASS']]);
  // The record itself: probe.json of a Strix leg names the device the runner's xrt-smi showed.
  const strixLeg = JSON.parse(r.outputs.results).find((x: { model_dir: string; runner: string }) => x.model_dir.endsWith('tiny_llama') && x.runner === 'npu-strix');
  assert.is(strixLeg.npu, 'strix');
});

s('a second push: the same comment is updated in place, the docs PR updated, nothing duplicated', async (ctx) => {
  const head = push(ctx, [`${L}/tiny_llama/tiny_llama_prefill.py`], 'second change');
  const a = await affected(ctx, 7002, head);
  assert.is(a.exitCode, 0, a.stdout);
  // The pull request as a whole (base...head) still touches both models.
  const matrix = JSON.parse(a.outputs.matrix) as { include: { model: string; runner: string }[] };
  assert.is(matrix.include.length, 4);
  for (const l of matrix.include) assert.is((await leg(ctx, 7002, head, l)).outputs.outcome, 'probed');
  const writes = ctx.gh.writes().length;
  const r = await summary(ctx, 7002, head, a.outputs.matrix);
  assert.is(r.code, 0, show(r));
  assert.equal([r.outputs.outcome, r.outputs.passed, r.outputs.errored], ['pass', '4', '0']);
  const comments = ctx.gh.commentsOn(PR);
  assert.is(comments.length, 1, 'still one comment');
  assert.is(comments[0].id, ctx.commentId, 'the same comment');
  assert.match(comments[0].body, `4 legs (2 models x 2 NPUs): ✅ 4 pass at \`${head.slice(0, 12)}\``);
  assert.not.match(comments[0].body, 'ERROR');
  const mine = ctx.gh.writes().slice(writes);
  assert.ok(mine.some((c) => c.method === 'PATCH' && c.route === '/repos/{owner}/{repo}/issues/comments/{comment_id}'), 'updated, not re-created');
  assert.not.ok(mine.some((c) => c.method === 'POST' && c.route === '/repos/{owner}/{repo}/issues/{issue_number}/comments'));
  assert.is(ctx.gh.pulls.filter((p) => p.head === 'npu-block-gate/phase2-fleet').length, 1, 'one docs PR');
  const log = ctx.remote.log('npu-block-gate/phase2-fleet');
  assert.equal(log.slice(0, 2).map((m) => m.replace(/ for [0-9a-f]{12}$/, '')), ['docs(tiny_qwen3): record Phase 2 PASS on Phoenix, PASS on Strix', 'docs(tiny_llama): record Phase 2 PASS on Phoenix, PASS on Strix']);
  // The history grows: each generation's row of the first push, and of this one.
  const doc = ctx.remote.show('npu-block-gate/phase2-fleet', `${L}/tiny_llama/docs/development_progress/phase2_block.md`)!;
  assert.equal(readHistory(doc, 'phase2_block.md').map((h) => h.npu), ['phoenix', 'strix', 'phoenix', 'strix']);
  assert.equal(log.slice(2), ctx.remote.log('main'));
});

/** A pull request of its own: a branch from main with these changes, and the fake's PR for it. */
function openPr(ctx: Ctx, number: number, branch: string, files: string[]): string {
  git(ctx.remote.work, ['checkout', '--quiet', '-B', branch, 'origin/main']);
  for (const f of files) { mkdirSync(join(ctx.remote.work, f, '..'), { recursive: true }); appendFileSync(join(ctx.remote.work, f), '\n# change\n'); }
  git(ctx.remote.work, ['add', '-A']);
  git(ctx.remote.work, ['commit', '--quiet', '-m', branch]);
  git(ctx.remote.work, ['push', '--quiet', 'origin', `HEAD:${branch}`]);
  const head = git(ctx.remote.work, ['rev-parse', 'HEAD']);
  ctx.gh.pulls.push({ number, title: branch, body: '', head: branch, headSha: head, headRepo: 'acme/mlir-air', base: 'main', state: 'open' });
  return head;
}

s('a documentation-only pull request affects no model: no legs, and the summary says there was nothing to judge', async (ctx) => {
  const head = openPr(ctx, 32, 'docs-only', [`${L}/tiny_llama/docs/notes.md`, 'README.md']);
  const a = await affected(ctx, 7101, head, { ...prPayload(head, ctx.remote.baseSha), number: 32, pull_request: { ...prPayload(head, ctx.remote.baseSha).pull_request, number: 32 } });
  assert.is(a.exitCode, 0, a.stdout);
  assert.equal([a.outputs.count, a.outputs.models, a.outputs.matrix], ['0', '[]', '{"include":[]}']);
  assert.match(a.summary, /2 changed files, none read by a model's check: no model to check\./);
  const r = await runAction({
    index: ctx.index, workspace: ctx.remote.work, eventName: 'pull_request', runId: 7101, job: 'summary', sha: head,
    payload: { ...prPayload(head, ctx.remote.baseSha), number: 32, pull_request: { ...prPayload(head, ctx.remote.baseSha).pull_request, number: 32 } },
    apiUrl: ctx.gh.url, artifactDir: ctx.artifacts, inputs: { mode: 'summary', legs: a.outputs.matrix, 'github-token': 'ghs_writer', 'artifact-name': PREFIX },
  });
  assert.is(r.code, 0, show(r));
  assert.equal([r.outputs.outcome, r.outputs.legs], ['pass', '0']);
  assert.match(ctx.gh.commentsOn(32)[0].body, '➖ **No leg to judge**: 0 legs');
});

s('a leg that never reported is named as missing, not judged, and fails the step as an error', async (ctx) => {
  const head = openPr(ctx, 33, 'qwen25', [`${L}/tiny_qwen25/tiny_qwen25_prefill.py`]);
  const payload = { ...prPayload(head, ctx.remote.baseSha), number: 33, pull_request: { ...prPayload(head, ctx.remote.baseSha).pull_request, number: 33 } };
  const a = await affected(ctx, 7201, head, payload);
  const matrix = JSON.parse(a.outputs.matrix) as { include: { model: string; runner: string }[] };
  assert.equal(matrix.include, RUNNERS.map((runner) => ({ model: `${L}/tiny_qwen25`, runner })));
  // Only the Phoenix runner picks its leg up; the Strix runner is offline.
  const l = await leg(ctx, 7201, head, matrix.include[0]);
  assert.is(l.outputs.outcome, 'probed', l.stdout);
  const r = await runAction({ index: ctx.index, workspace: ctx.remote.work, eventName: 'pull_request', runId: 7201, job: 'summary', sha: head, payload, apiUrl: ctx.gh.url, artifactDir: ctx.artifacts, inputs: { mode: 'summary', legs: a.outputs.matrix, 'github-token': 'ghs_writer', 'artifact-name': PREFIX } });
  assert.is(r.code, 1, show(r));
  assert.equal([r.outputs.outcome, r.outputs.passed, r.outputs.missing], ['error', '1', '1']);
  const body = ctx.gh.commentsOn(33)[0].body;
  assert.match(body, /\| `tiny_qwen25` \| `npu-strix` \(runner\) \| ❔ MISSING \|.*`phase2-run-programming_examples__llms__tiny_qwen25-leg-[0-9a-f]{8}-attempt1`: no artifact in run 7201: the leg never reported/);
  assert.match(r.stdout, /could not judge .*tiny_qwen25 on npu-strix \(missing: /);
  assert.not.match(r.stdout, 'Phase 2 FAIL');
});

s.run();
