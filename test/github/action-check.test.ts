// The Action runs the one check() the CLI runs: a trusted push stores both caches (kernel and
// reference) and the next trusted push hits both, saying so in the summary; every rendering names
// how the probe was isolated; a run that fell back to no isolation gets a warning annotation; a
// pull request only reads the caches.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { tmpdir } from 'node:os';
import { FakeGitHub } from '../helpers/github-server.ts';
import { makeGitRemote, type GitRemote } from '../helpers/git-remote.ts';
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
  ctx.gh = await new FakeGitHub({ pulls: [{ number: 9, headSha: SHA_PR }], gitRemote: ctx.remote.bare, checkResponses: true }).start();
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

s('the next trusted push hits both caches and says so in the summary; nothing new is stored', async (ctx) => {
  const before = [entries(join(ctx.cache, 'kernels')), entries(join(ctx.cache, 'reference'))];
  const r = await push(ctx);
  assert.is(r.code, 0, show(r));
  assert.match(r.stdout, /kernel cache: hit [0-9a-f]{12}/);
  assert.match(r.stdout, /reference cache hit [0-9a-f]{12}/);
  assert.match(r.summary, /\| kernel cache +\| hit/);
  assert.match(r.summary, /\| reference cache +\| hit /);
  assert.equal([entries(join(ctx.cache, 'kernels')), entries(join(ctx.cache, 'reference'))], before);
});

s('a pull request reads the caches but stores nothing; its comment names the isolation', async (ctx) => {
  const before = [entries(join(ctx.cache, 'kernels')), entries(join(ctx.cache, 'reference'))];
  ctx.runId += 1;
  const r = await runAction({
    index: ctx.index, workspace: ctx.remote.work, eventName: 'pull_request', payload: pullRequestEvent({ number: 9, headSha: SHA_PR }),
    apiUrl: ctx.gh.url, runId: ctx.runId, artifactDir: join(ctx.remote.root, 'artifacts'),
    // A prompt of its own: the reference cache misses, and an untrusted run must not store it.
    inputs: { 'model-dir': MODEL, 'github-token': 'ghs_writer', 'cache-dir': ctx.cache, prompt: 'A pull request of its own' },
  });
  assert.is(r.code, 0, show(r));
  assert.match(r.stdout, /caches: read only \(untrusted run/);
  assert.equal([entries(join(ctx.cache, 'kernels')), entries(join(ctx.cache, 'reference'))], before);
  const mode = expectedMode();
  assert.is.not(mode, 'none', 'this machine isolates untrusted runs (bubblewrap is installed)');
  const body = ctx.gh.commentsOn(9)[0]?.body ?? '';
  assert.match(body, new RegExp(`\\| probe isolation +\\| ${mode}: `));
  assert.is(r.outputs.isolation, mode);
});

s('a trusted run that falls back to no isolation says so as a warning annotation, in the record too', async (ctx) => {
  const r = await push(ctx, { env: { PATH: pathWithoutSandbox() } });
  assert.is(r.code, 0, show(r));
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

s.run();
