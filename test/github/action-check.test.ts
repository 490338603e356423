// Two of the three end-to-end runs of the Action (dist/index.js with a real probe; the third is the
// split pair in split.test.ts; every other GitHub effect is tested in-process, effects.test.ts):
//  - a trusted push stores both caches (kernel and reference) and opens the docs PR, every
//    rendering naming how the probe was isolated; the next trusted push, on a runner without a
//    sandbox, hits both caches and falls back to no isolation with a warning annotation;
//  - a fork pull request: isolated, reads the caches and stores nothing, writes nothing, its prompt
//    stays a prompt, and its model code cannot start a workflow command on the runner.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { tmpdir } from 'node:os';
import { FakeGitHub } from '../helpers/github-server.ts';
import { makeGitRemote, git, type GitRemote } from '../helpers/git-remote.ts';
import { runAction, openArtifact, assertIsolation, type ActionRunResult } from '../helpers/action-run.ts';
import { ensureDist } from '../helpers/dist.ts';
import { pullRequestEvent, pushEvent } from '../helpers/events.ts';
import { chooseIsolation } from '../../src/probe/isolate.ts';

const MODEL = 'programming_examples/llms/tiny_llama';
const SHA_PR = 'd'.repeat(40);

function show(r: ActionRunResult): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-2000)}`;
}

/** The mode `auto` gives on this machine, as the Action will pick it. */
function expectedMode(): 'uid' | 'namespace' | 'none' {
  return chooseIsolation({ mode: 'auto', untrusted: false, allowUnisolated: false }).mode;
}

/** Entries of a cache subdir (kernels/ or reference/), hidden temp dirs left out. */
function entries(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith('.')).sort() : [];
}

/** A PATH with every command this machine has except the ones that isolate (bwrap, setpriv, sudo). */
function pathWithoutSandbox(): string {
  const bin = mkdtempSync(join(tmpdir(), 'nbg-nobwrap-'));
  const seen = new Set<string>();
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    let names: string[];
    try { names = readdirSync(dir); } catch { continue; }
    for (const n of names) {
      if (seen.has(n) || ['bwrap', 'setpriv', 'sudo'].includes(n)) continue;
      seen.add(n);
      try { symlinkSync(join(dir, n), join(bin, n)); } catch { /* a name twice */ }
    }
  }
  return bin;
}

interface Ctx { remote: GitRemote; gh: FakeGitHub; runId: number; index: string; cache: string }
const s = suite<Ctx>('action: one check for both faces (caches, isolation)');

s.before(async (ctx) => {
  ctx.index = await ensureDist();
  ctx.remote = makeGitRemote();
  ctx.gh = await new FakeGitHub({
    tokens: { ghs_writer: { login: 'github-actions[bot]', type: 'Bot', installation: true }, ghs_readonly: { login: 'github-actions[bot]', type: 'Bot', installation: true, readOnly: true } },
    pulls: [{ number: 9, headSha: SHA_PR, headRepo: 'mallory/mlir-air' }], gitRemote: ctx.remote.bare, checkResponses: true,
  }).start();
  ctx.runId = 8000;
  ctx.cache = join(ctx.remote.root, 'runner-cache');
  mkdirSync(ctx.cache);
});
s.after(async (ctx) => {
  await ctx.gh?.stop();
  assert.equal(ctx.gh.problems, []);
});

function push(ctx: Ctx, o: { env?: Record<string, string>; inputs?: Record<string, string> } = {}) {
  ctx.runId += 1;
  return runAction({
    index: ctx.index, workspace: ctx.remote.work, eventName: 'push', payload: pushEvent(ctx.remote.baseSha), sha: ctx.remote.baseSha,
    apiUrl: ctx.gh.url, runId: ctx.runId, artifactDir: join(ctx.remote.root, 'artifacts'),
    inputs: { 'model-dir': MODEL, 'github-token': 'ghs_writer', 'cache-dir': ctx.cache, ...o.inputs }, env: o.env,
  });
}

s('a trusted push stores the kernel and the reference cache after the verdict, and names the isolation everywhere', async (ctx) => {
  const r = await push(ctx);
  assert.is(r.code, 0, show(r));
  assertIsolation(r, 'isolated');
  assert.is(entries(join(ctx.cache, 'kernels')).length, 1, `kernel cache stored\n${show(r)}`);
  assert.is(entries(join(ctx.cache, 'reference')).length, 1, `reference cache stored\n${show(r)}`);
  assert.match(r.stdout, /kernel cache: miss [0-9a-f]{12}/);
  assert.match(r.stdout, /kernel cache: stored [0-9a-f]{12}/);
  assert.match(r.stdout, /reference cache: stored [0-9a-f]{12}/);
  assert.match(r.summary, /\| kernel cache +\| compiled/);
  assert.match(r.summary, /\| reference cache +\| miss, stored/);
  // The isolation: the step output, report.json, report.md, the summary (and the artifact's copies).
  const mode = expectedMode();
  assert.is(r.outputs.isolation, mode);
  const report = JSON.parse(readFileSync(r.outputs['report-path'], 'utf8'));
  assert.is(report.isolation.mode, mode);
  assert.is(report.isolation.source, 'this run');
  assert.match(r.summary, new RegExp(`\\| probe isolation +\\| ${mode}: `));
  const art = await openArtifact(join(ctx.remote.root, 'artifacts'), ctx.runId, r.outputs['artifact-name']);
  assert.match(readFileSync(join(art, 'report.md'), 'utf8'), new RegExp(`\\| probe isolation +\\| ${mode}: `));
  assert.is(JSON.parse(readFileSync(join(art, 'report.json'), 'utf8')).isolation.mode, mode);
  // And the documents the docs PR records.
  const doc = ctx.remote.show(`npu-block-gate/phase2/${MODEL}`, `${MODEL}/docs/development_progress/phase2_block.md`) ?? '';
  assert.match(doc, new RegExp(`\\| probe isolation +\\| ${mode}: `));
  // The docs PR, end to end: opened on the docs branch, its number and URL in the outputs.
  const docsPr = ctx.gh.pulls.filter((p) => p.head === `npu-block-gate/phase2/${MODEL}`);
  assert.is(docsPr.length, 1, show(r));
  assert.is(r.outputs['docs-pr-number'], String(docsPr[0].number));
  assert.is(r.outputs.g4, 'pass');
});

s('the next trusted push, on a runner without a sandbox: both caches hit (nothing new stored), and the fallback to no isolation is a warning annotation, in the record too', async (ctx) => {
  const before = [entries(join(ctx.cache, 'kernels')), entries(join(ctx.cache, 'reference'))];
  const r = await push(ctx, { env: { PATH: pathWithoutSandbox() } });
  assert.is(r.code, 0, show(r));
  assert.match(r.stdout, /kernel cache: hit [0-9a-f]{12}/);
  assert.match(r.stdout, /reference cache hit [0-9a-f]{12}/);
  assert.match(r.summary, /\| kernel cache +\| hit/);
  assert.match(r.summary, /\| reference cache +\| hit /);
  assert.equal([entries(join(ctx.cache, 'kernels')), entries(join(ctx.cache, 'reference'))], before);
  assertIsolation(r, 'none');
  assert.is(r.outputs.isolation, 'none');
  const w = r.warnings.find((x) => /the probe ran without isolation/.test(x));
  assert.ok(w, `a warning annotation\n${r.warnings.join('\n')}`);
  assert.match(w!, /bubblewrap: not installed/);
  const report = JSON.parse(readFileSync(r.outputs['report-path'], 'utf8'));
  assert.is(report.isolation.mode, 'none');
  assert.ok(report.warnings.some((x: { id: string }) => x.id === 'isolation'));
  assert.match(r.summary, /\| probe isolation +\| none: /);
});

/** Our own workflow commands: the only lines of stdout that may start one. */
const OURS = /^::(error|warning|notice|debug|group|endgroup|add-mask)(\s[^:]*)?::/;

/** Every line the runner would see (it splits on \r and \n) that starts a command, after the leading whitespace it trims. */
const commandLines = (stdout: string) => stdout.split(/\r\n|\r|\n/).map((l) => l.replace(/^[\s\u0085\u180e\u200b-\u200d\u2060\ufeff]*/, '')).filter((l) => l.startsWith('::') || l.startsWith('##['));

s('a fork pull request: isolated, reads the caches and stores nothing, writes nothing, its prompt is the prompt, and its model code cannot start a workflow command', async (ctx) => {
  const before = [entries(join(ctx.cache, 'kernels')), entries(join(ctx.cache, 'reference'))];
  const calls = ctx.gh.calls.length;
  // The PR's model code writes straight to the probe's stderr, past the probe's own logging.
  const prefill = join(ctx.remote.model('tiny_llama'), 'tiny_llama_prefill.py');
  appendFileSync(prefill, '\nimport os as _os\n_os.write(2, b"::stop-commands::pwned\\nok\\r::error::forged-from-tree\\n  ::set-output name=outcome::pass\\n##[error]forged-v1\\n\\xc2\\xa0::warning::forged-nbsp\\n")\n');
  // A prompt of its own (the reference cache misses, and an untrusted run must not store it) that
  // looks like the probe's options.
  const prompt = '--out=/tmp/elsewhere --no-bisect The capital of France is';
  try {
    ctx.runId += 1;
    const r = await runAction({
      index: ctx.index, workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: 9, headSha: SHA_PR, fork: true }),
      apiUrl: ctx.gh.url, runId: ctx.runId, artifactDir: join(ctx.remote.root, 'artifacts'),
      inputs: { 'model-dir': MODEL, 'github-token': 'ghs_readonly', 'cache-dir': ctx.cache, prompt },
      // A stale tail: our FAIL annotations must still work after the tree's forged output.
      env: { AIR_MINI_INJECT: 'stale_tail' },
    });
    assert.is(r.code, 1, show(r));
    assert.is(r.outputs.outcome, 'fail');
    // Isolated, as every rendering says.
    assertIsolation(r, 'isolated');
    // The caches: read, never written.
    assert.match(r.stdout, /caches: read only \(untrusted run/);
    assert.equal([entries(join(ctx.cache, 'kernels')), entries(join(ctx.cache, 'reference'))], before);
    // No write, not even an attempted one; said once.
    assert.is(ctx.gh.calls.slice(calls).filter((c) => c.method !== 'GET' && c.route !== 'POST /graphql').length, 0, 'not even an attempted write');
    assert.is(r.notices.filter((n) => /skipping every GitHub write/.test(n)).length, 1, r.notices.join('\n'));
    assert.is(r.outputs['comment-url'], '');
    assert.equal(ctx.remote.branches().filter((b) => b !== `npu-block-gate/phase2/${MODEL}`), ['main'], 'nothing pushed');
    // The prompt is the prompt, not an option of the probe.
    const report = JSON.parse(readFileSync(r.outputs['report-path'], 'utf8'));
    assert.is(report.prompt.text, prompt);
    assert.not.ok(existsSync('/tmp/elsewhere/probe.json'));
    assert.ok(r.outputs['run-dir'].startsWith(r.runnerTemp), 'the run dir is where the Action put it');
    // The tree's output reached the log, inert; our own annotations still work.
    assert.match(r.stdout, 'stop-commands', show(r));
    for (const l of commandLines(r.stdout)) {
      assert.ok(OURS.test(l), `a foreign workflow command reached stdout: ${JSON.stringify(l.slice(0, 120))}`);
      assert.not.match(l, /^::[a-z-]+(\s[^:]*)?::(forged|pwned|step)/, `a foreign command reached stdout: ${JSON.stringify(l.slice(0, 160))}`);
    }
    assert.not.match(r.stderr, /^::/m);
    assert.ok(r.errors.some((e) => /per-position/i.test(e)), r.errors.join(' | '));
    assert.not.ok(r.errors.some((e) => /forged/.test(e)));
  } finally {
    git(ctx.remote.work, ['checkout', '--', prefill]);
  }
});

s.run();
