// A run dir written by an attacker (DESIGN.md "Trust"): every string in it is hostile, and none may
// change the structure of the PR comment or the job summary, notify anyone, link anywhere, or start
// a workflow command on the runner's stdout. (A hostile model tree's own output: the fork pull
// request end to end, action-check.test.ts.)
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeGitHub } from '../helpers/github-server.ts';
import { makeGitRemote, git, type GitRemote } from '../helpers/git-remote.ts';
import { runAction, tamperedCopy, type ActionRunResult } from '../helpers/action-run.ts';
import { ensureDist } from '../helpers/dist.ts';
import { pullRequestEvent, workflowRunEvent } from '../helpers/events.ts';
import { COLS, fixture, lcg, npyOf, PADDED, REAL_LEN, refValues } from '../helpers/rundir.ts';
import { runHere } from '../helpers/action-here.ts';
import type { Ports } from '../../src/github/ports.ts';
import type { Probed } from '../../src/check/index.ts';

const MODEL = 'programming_examples/llms/tiny_llama';
const SHA = '7'.repeat(40);
const PR = 21;

/** Everything a string can try: HTML, a tracker image, links, a mention, a reference, a comment
 * opener, table pipes, backticks, a heading, emphasis, and workflow commands behind \r and \n. */
const H = '<img src="https://evil.example/t.png"><script>x</script> # **pwn** [click](https://evil.example/x) ![i](https://evil.example/i.png) @mallory acme/mlir-air#1 www.evil.example <!-- hide | a | b | `tick` \r::error::forged-cr\n::stop-commands::pwned\n  ::set-output name=outcome::pass\n##[error]forged-v1';
/** The same on one line (the run-dir reader refuses line breaks in most fields), at most 200 characters. */
const H_LINE = '<img src="https://evil.example/t.png"><script>x</script> # **pwn** [c](https://evil.example/x) ![i](https://evil.example/i.png) @mallory acme/x#1 www.evil.example <!-- hide | a | `t` ::error::x';
const H_STEP = 'step\r::error::forged-step';
const H_KERNEL = '::stop-commands::pwned2';

function show(r: ActionRunResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout.slice(-5000)}\n--- stderr\n${r.stderr.slice(-2000)}`;
}

/** Our own workflow commands: the only lines of stdout that may start one. */
const OURS = /^::(error|warning|notice|debug|group|endgroup|add-mask)(\s[^:]*)?::/;

/** Every line the runner would see (it splits on \r and \n) that starts a command, after the
 * leading whitespace the runner trims. */
function commandLines(stdout: string): string[] {
  return stdout.split(/\r\n|\r|\n/).map((l) => l.replace(/^[\s\u0085\u180e\u200b-\u200d\u2060\ufeff]*/, '')).filter((l) => l.startsWith('::') || l.startsWith('##['));
}

function checkStdout(r: ActionRunResult): void {
  for (const l of commandLines(r.stdout)) {
    assert.ok(OURS.test(l), `a foreign workflow command reached stdout: ${JSON.stringify(l.slice(0, 120))}`);
    // Foreign text may ride inside our own annotation (escaped: it cannot end the line), but a
    // command whose payload starts with it was written by the attacker.
    assert.not.match(l, /^::[a-z-]+(\s[^:]*)?::(forged|pwned|step)/, `a foreign command reached stdout: ${JSON.stringify(l.slice(0, 160))}`);
  }
  assert.not.match(r.stderr, /^::/m);
}

const stripCode = (md: string) => md.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, '');

/** The structure checks a PR comment or job summary must pass whatever the run dir said. */
function checkMarkdown(md: string, what: string, opts: { marker: boolean }): void {
  const prose = stripCode(md);
  // HTML: only the tags we write ourselves.
  const tags = [...prose.matchAll(/<\/?([A-Za-z!][^\s>]*)/g)].map((m) => m[1].toLowerCase());
  const allowed = ['details', 'summary', 'sub', 'br', '!--'];
  assert.equal(tags.filter((t) => !allowed.includes(t)), [], `${what}: foreign HTML`);
  const comments = (md.match(/<!--/g) ?? []).length;
  assert.is(comments, opts.marker ? 1 : 0, `${what}: <!-- only in our own marker`);
  if (opts.marker) assert.ok(md.startsWith('<!-- npu-block-gate:comment'), `${what}: marker first`);
  assert.is((md.match(/<details/g) ?? []).length, (md.match(/<\/details>/g) ?? []).length, `${what}: details balanced`);
  assert.is(md.split('\n').filter((l) => /^\s*(```|~~~)/.test(l)).length % 2, 0, `${what}: fences balanced`);
  // Links and images: only ours (the run, the artifact).
  for (const m of prose.matchAll(/\]\(([^)]*)\)/g)) assert.match(m[1], /^(https:\/\/github\.example\/|file:\/\/)/, `${what}: foreign link ${m[1]}`);
  assert.not.match(prose, /(^|[^\\])!\[/, `${what}: an image`);
  assert.not.match(prose, /https?:\/\/evil|www\.evil/, `${what}: a bare link that GitHub would auto-link`);
  // Mentions and cross-references: none.
  assert.not.match(prose, /(^|[^\w])@[A-Za-z0-9]/, `${what}: a mention`);
  assert.not.match(prose, /(^|[^\\])#\d/, `${what}: an issue reference`);
  // Tables: every row of a table has its header's number of cells.
  const lines = md.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith('|') || (i > 0 && lines[i - 1].startsWith('|'))) continue;
    const cells = (l: string) => l.replace(/\\\|/g, '').split('|').length;
    const n = cells(lines[i]);
    for (let j = i + 1; j < lines.length && lines[j].startsWith('|'); j++) assert.is(cells(lines[j]), n, `${what}: table row ${j} has a different number of cells: ${lines[j].slice(0, 200)}`);
  }
  assert.not.match(prose, /\*\*pwn\*\*/, `${what}: emphasis from a run dir`);
}

interface Ctx {
  remote: GitRemote;
  trusted: string;
  gh: FakeGitHub;
  artifacts: string;
  index: string;
  probeArtifact: string;
  runId: number;
}

assert.ok(H_LINE.length <= 200, String(H_LINE.length));

const s = suite<Ctx>('hostile run dir and model tree');

s.before(async (ctx) => {
  ctx.index = await ensureDist();
  ctx.remote = makeGitRemote();
  ctx.trusted = join(ctx.remote.root, 'trusted');
  git(ctx.remote.root, ['clone', '--quiet', ctx.remote.bare, ctx.trusted]);
  ctx.artifacts = join(ctx.remote.root, 'artifacts');
  ctx.gh = await new FakeGitHub({ pulls: [{ number: PR, headSha: SHA }], checkResponses: true }).start();
  ctx.runId = 7100;
  // A failing probe (a stale tail: so the bisect and the FAIL annotations are in play), uploaded by
  // mode probe, run in this process with the probe answered by the port from a recorded run dir (no Python).
  const ref = refValues();
  const stale = fixture({
    ref, npu: [...ref.map((row, i) => (i === REAL_LEN - 1 ? row.map((v, j) => (j % 2 ? v : -v)) : row)), ...refValues(PADDED - REAL_LEN, COLS, 3)],
    probe: (p) => { p.model.name = 'tiny_llama'; p.model.dir = MODEL; },
  });
  const ports: Ports = {
    check: () => { throw new Error('mode probe runs no check()'); },
    fetchRunDir: () => { throw new Error('mode probe fetches no run dir'); },
    plans: () => { throw new Error('mode probe makes no plans'); },
    probe: async (plan) => {
      cpSync(stale.runDir, plan.runDir, { recursive: true });
      return { runDir: plan.runDir, isolation: { mode: 'namespace', detail: 'bubblewrap: user+pid+mount+ipc+net namespaces, private /proc, read-only root', source: 'this run' } } as Probed;
    },
  };
  const r = await runHere({
    workspace: ctx.remote.work, eventName: 'pull_request', runId: 7000, job: 'probe', sha: SHA,
    payload: pullRequestEvent({ number: PR, headSha: SHA }), apiUrl: ctx.gh.url, artifactDir: ctx.artifacts,
    inputs: { 'model-dir': MODEL, mode: 'probe', 'github-token': '' }, ports,
  });
  assert.is(r.exitCode, 0, r.stdout);
  assert.is(r.outputs.outcome, 'probed', r.stdout);
  ctx.probeArtifact = r.outputs['artifact-name'];
});
s.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, []);
});

function report(ctx: Ctx, probeRun: number) {
  ctx.runId += 1;
  return runAction({
    index: ctx.index, workspace: ctx.trusted, eventName: 'workflow_run', runId: ctx.runId, job: 'report',
    payload: workflowRunEvent({ runId: probeRun, headSha: SHA, event: 'pull_request', pullRequests: [PR] }),
    apiUrl: ctx.gh.url, artifactDir: ctx.artifacts, inputs: { 'model-dir': MODEL, mode: 'report', 'github-token': 'ghs_writer' },
  });
}

s('every string of probe.json and bisect.json is hostile: the comment, the summary and stdout keep their structure', async (ctx) => {
  await tamperedCopy(ctx.artifacts, 7000, 7001, ctx.probeArtifact, (dir) => {
    const path = join(dir, 'probe.json');
    const p = JSON.parse(readFileSync(path, 'utf8'));
    p.prompt.text = H;
    p.prompt.source = H_LINE;
    Object.assign(p.integration, {
      entry: H_LINE, reason: H_LINE, kernels: [H_KERNEL, H_LINE], tiles: { [H_LINE]: H_LINE },
      workarounds: [{ id: H_LINE, detail: H_LINE, prerequisite: H_LINE }],
      step1: { matches: false, breaks: [{ rule: H_LINE, detail: H_LINE }], block: { function: H_LINE, file: H_LINE, where: H_LINE, via: null, compile: null } },
      coverage: { unwired: [{ section: H_LINE, shape: H_LINE, used_by: H_LINE }] },
    });
    p.defaults = { make_diagnosis: { prompt: H, model_choice: H_LINE, cpu_attn: null }, differs: [H_LINE, H_LINE] };
    Object.assign(p.reference, { runner: H_LINE, dtype: H_LINE.slice(0, 100), transformers: H_LINE, torch: H_LINE });
    Object.assign(p.environment, { python: H_LINE, python_executable: H_LINE, numpy: H_LINE, device: H_LINE, xrt: H_LINE });
    p.kernel_cache = { ...(p.kernel_cache ?? {}), entries: [H_LINE, H_KERNEL] };
    p.timings = { [H_LINE]: 1.5, total: 2 };
    writeFileSync(path, JSON.stringify(p));
    mkdirSync(join(dir, 'bisect'), { recursive: true });
    // The step's tensor is the reference itself: it "fixes" the block, so its name is the offender.
    copyFileSync(join(dir, p.tensors.ref.file), join(dir, 'bisect/00-s0.npy'));
    writeFileSync(join(dir, 'bisect/bisect.json'), JSON.stringify({
      schema: 'npu-block-gate/bisect', schema_version: 1, available: true, reason: H, hook: H,
      steps: [{ index: 0, step: H_STEP, kernel: H_KERNEL, cpu_equivalent: H, file: 'bisect/00-s0.npy' }],
    }));
  });
  const r = await report(ctx, 7001);
  assert.is(r.code, 1, show(r));
  assert.is(r.outputs.outcome, 'fail', show(r));
  assert.ok(r.errors.some((e) => /per-position/i.test(e)), `our FAIL annotation still works: ${r.errors.join(' | ')}`);
  checkStdout(r);
  const c = ctx.gh.commentsOn(PR);
  assert.is(c.length, 1);
  checkMarkdown(c[0].body, 'comment', { marker: true });
  assert.match(c[0].body, 'Phase 2 FAIL');
  assert.match(c[0].body, '(not a valid id)', 'an id that is not one is marked');
  assert.match(c[0].body, 'Offending boundary');
  checkMarkdown(r.summary, 'summary', { marker: false });
  assert.match(r.summary, 'Phase 2 FAIL');
});

s('a lens record with hostile text: the ffn_out gate passes, the lens warns in an annotation, EMULATED is marked, nothing foreign takes effect', async (ctx) => {
  await tamperedCopy(ctx.artifacts, 7000, 7004, ctx.probeArtifact, (dir) => {
    const path = join(dir, 'probe.json');
    const p = JSON.parse(readFileSync(path, 'utf8'));
    const [rows, cols] = [p.prompt.real_len, p.tensors.ref.shape[1]];
    // ffn_out as the reference itself (the gates pass); q_roped far from it (the lens warns).
    copyFileSync(join(dir, p.tensors.ref.file), join(dir, p.tensors.npu.file));
    p.tensors.npu.shape = [rows, cols];
    mkdirSync(join(dir, 'boundaries'), { recursive: true });
    const r = lcg(5);
    writeFileSync(join(dir, 'boundaries/10-q_roped.npu.npy'), npyOf(Array.from({ length: rows }, () => Array.from({ length: cols }, () => r() * 2 - 1))));
    copyFileSync(join(dir, p.tensors.ref.file), join(dir, 'boundaries/10-q_roped.ref.npy'));
    const t = (side: string) => ({ file: `boundaries/10-q_roped.${side}.npy`, dtype: 'f32', shape: [rows, cols] });
    p.boundaries = {
      source: 'launches', table: H_LINE, emulated: true, reference: H_LINE.slice(0, 200), layout: H_LINE,
      entries: [{ name: 'q_roped', order: 10, step: H_LINE.slice(0, 100), launch: H_LINE, arg: 11, source: 'launch', produced_by: H_LINE, npu: t('npu'), ref: t('ref') }],
      unpaired: [{ name: 'v', side: 'both', reason: H_LINE }],
    };
    p.emulate = { runtime: H_LINE, inject: 'interleaved_rope', config_from: H_LINE, config_changes: { emb_dim: [2048, 256] }, artifacts: [H_LINE], registry: [], launches: 3, compile: H_LINE };
    writeFileSync(path, JSON.stringify(p));
  });
  const r = await report(ctx, 7004);
  assert.is(r.code, 0, show(r));
  assert.is(r.outputs.outcome, 'pass', show(r));
  assert.ok(r.warnings.some((w) => /the lens: boundary q_roped .*the ffn_out gate may be hiding a bug/.test(w)), `the lens warning is an annotation: ${r.warnings.join(' | ')}`);
  checkStdout(r);
  const c = ctx.gh.commentsOn(PR);
  const body = c[c.length - 1].body;
  checkMarkdown(body, 'comment', { marker: true });
  assert.match(body, '**EMULATED** (no NPU ran)');
  assert.match(body, '**First boundary under the threshold');
  assert.match(body, 'the ffn\\_out gate may be hiding a bug');
  checkMarkdown(r.summary, 'summary', { marker: false });
  assert.match(r.summary, '**EMULATED**');
});

s('a run dir whose model name is not the model dir\'s is refused: ERROR, and the name cannot inject either', async (ctx) => {
  await tamperedCopy(ctx.artifacts, 7000, 7002, ctx.probeArtifact, (dir) => {
    const path = join(dir, 'probe.json');
    const p = JSON.parse(readFileSync(path, 'utf8'));
    p.model.name = H_LINE;
    writeFileSync(path, JSON.stringify(p));
  });
  const r = await report(ctx, 7002);
  assert.is(r.code, 1, show(r));
  assert.is(r.outputs.outcome, 'error');
  // Refused by probe.json's schema (a name with "/" or "<!--" is no directory name) or, a plain
  // name, by the model-dir check: either way one error naming probe.json.
  assert.match(r.stdout, /probe\.json: (model\.name must be a directory name|model\.name .* is not the model dir's name)/, show(r));
  checkStdout(r);
  const body = ctx.gh.commentsOn(PR)[0].body;
  assert.match(body, 'Phase 2 ERROR');
  checkMarkdown(body, 'comment', { marker: true });
  checkMarkdown(r.summary, 'summary', { marker: false });
});

s("a probe job's error message is foreign text too: ERROR, rendered inert", async (ctx) => {
  await tamperedCopy(ctx.artifacts, 7000, 7003, ctx.probeArtifact, (dir) => {
    const path = join(dir, 'github.json');
    const meta = JSON.parse(readFileSync(path, 'utf8'));
    meta.probe_error = { message: H, exit_code: 3 };
    writeFileSync(path, JSON.stringify(meta));
  });
  const r = await report(ctx, 7003);
  assert.is(r.code, 1, show(r));
  assert.is(r.outputs.outcome, 'error');
  checkStdout(r);
  const body = ctx.gh.commentsOn(PR)[0].body;
  assert.match(body, 'Phase 2 ERROR');
  assert.match(body, 'the probe job could not run the check');
  checkMarkdown(body, 'comment', { marker: true });
  checkMarkdown(r.summary, 'summary', { marker: false });
});

s.run();

// A hostile model tree whose code writes workflow commands to the probe's stderr: the fork pull
// request end to end in action-check.test.ts (the tree's output reaches the log inert).
