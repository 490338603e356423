// Issue 26.1: a run dir belongs to one run. Six `check --out D` at once on one model: each either
// judges its own data (its prompt, and the numbers its prompt gives when it runs alone) or is refused
// with the run dir's holder named. `report` waits for a run dir in use. Default run dir names never
// collide.
import { test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyAirMini } from './helpers/airmini.ts';
import { ensureCli } from './helpers/dist.ts';
import { missingNumpy } from './helpers/python.ts';
import { defaultRunDirName } from '../src/plan.ts';
import { RUN_LOCK } from '../src/check/rundir.ts';

const tree = copyAirMini();
const runs = mkdtempSync(join(tmpdir(), 'nbg-runlock-'));
const MODEL = tree.model('tiny_llama');
/** The refusal's exit code: sysexits' EX_TEMPFAIL (try again later), distinct from 0-3. */
const BUSY = 75;

interface Run { code: number | null; out: string; err: string }

async function cli(args: string[], delayMs = 0): Promise<Run> {
  const js = await ensureCli();
  if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
  return new Promise((res) => {
    const child = spawn(process.execPath, [js, ...args], { stdio: ['ignore', 'pipe', 'pipe'], cwd: runs });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('close', (code) => res({ code, out, err }));
  });
}

interface Judged { prompt: string; realLen: number; cosine: number; maxAbs: number; sqnr: number }

function judged(r: Run): Judged {
  const j = JSON.parse(r.out) as { prompt: { text: string; real_len: number }; metrics: { realLen: number; wholeCosine: number; errors: { maxAbs: number; sqnrDb: number } } };
  assert.is(j.metrics.realLen, j.prompt.real_len, 'the tensors judged have the prompt\'s real_len rows');
  return { prompt: j.prompt.text, realLen: j.metrics.realLen, cosine: j.metrics.wholeCosine, maxAbs: j.metrics.errors.maxAbs, sqnr: j.metrics.errors.sqnrDb };
}

// Prompts of different lengths: another run's tensors have another number of rows, and other numbers.
const PROMPTS = ['one', 'one two three', 'the quick brown fox jumps', 'a b c d e f g h i j k', 'Explain the role of a residual connection in a transformer block.', 'x y'];

test.unless(missingNumpy())('issue 26.1: six concurrent check --out D: each judges its own prompt and tensors, or is refused naming the holder', async () => {
  const D = join(runs, 'shared');
  // Three at once, three a little later: some overlap a running check, some start after one ended.
  const results = await Promise.all(PROMPTS.map((p, i) => cli(['check', '--model-dir', MODEL, '--out', D, '--force', '--no-docs', '--no-cache', '--json', `--prompt=${p}`], i < 3 ? 0 : 2500 * (i - 2))));
  const winners: { prompt: string; judged: Judged }[] = [];
  results.forEach((r, i) => {
    if (r.code === BUSY) {
      // One line naming the run dir, the holder's pid and host and its start time.
      const lines = r.err.split('\n').filter((l) => l.startsWith('npu-block-gate:'));
      assert.is(lines.length, 1, r.err);
      assert.match(lines[0], new RegExp(`${D}: is in use by another run \\(pid \\d+ on ${hostname()}, started \\d{4}-\\d\\d-\\d\\dT`), r.err);
      return;
    }
    assert.ok(r.code === 0 || r.code === 1, `run ${i} (${PROMPTS[i]}) neither judged nor was refused: exit ${r.code}\n${r.err}`);
    const j = judged(r);
    assert.is(j.prompt, PROMPTS[i], `run ${i} judged another run's prompt`);
    winners.push({ prompt: PROMPTS[i], judged: j });
  });
  assert.ok(winners.length >= 1, results.map((r) => r.err).join('\n---\n'));
  assert.not.ok(existsSync(join(D, RUN_LOCK)), 'the last run released the run dir');
  // Each winner's numbers are the ones its prompt gives in a run dir of its own.
  for (const w of winners) {
    const alone = await cli(['check', '--model-dir', MODEL, '--out', join(runs, `alone-${PROMPTS.indexOf(w.prompt)}`), '--no-docs', '--no-cache', '--json', `--prompt=${w.prompt}`]);
    assert.ok(alone.code === 0 || alone.code === 1, alone.err);
    assert.equal(w.judged, judged(alone), `the concurrent run with prompt ${JSON.stringify(w.prompt)} judged other data than its own`);
  }
});

/** A lock on D held by a live process on this host: this test's own. */
function holdBy(D: string, pid = process.pid, host = hostname()): string {
  mkdirSync(D, { recursive: true });
  const lock = join(D, RUN_LOCK);
  writeFileSync(lock, JSON.stringify({ pid, host, start: null, since: '2026-01-02T03:04:05.000Z', nonce: 'held-by-test' }));
  return lock;
}

test.unless(missingNumpy())('issue 26.1: check on a run dir in use is refused at once, touching nothing; a lock whose pid is gone is broken and said', async () => {
  const D = join(runs, 'held');
  const lock = holdBy(D);
  writeFileSync(join(D, 'probe.json'), 'not ours to touch');
  const r = await cli(['check', '--model-dir', MODEL, '--out', D, '--force', '--no-docs', '--no-cache']);
  assert.is(r.code, BUSY, r.err);
  assert.ok(r.err.includes(`npu-block-gate: error (infrastructure, not a verdict): ${D}: is in use by another run (pid ${process.pid} on ${hostname()}, started 2026-01-02T03:04:05.000Z); wait for it to finish, or choose another --out\n`), r.err);
  assert.not.match(r.err, /probe:/, 'no probe ran');
  assert.equal(readdirSync(D).sort(), [RUN_LOCK, 'probe.json'].sort());
  // The holder is gone (a pid no process has): its lock is stale, broken, and the run goes ahead.
  rmSync(lock);
  holdBy(D, 2 ** 22 + 12345);
  const after = await cli(['check', '--model-dir', MODEL, '--out', D, '--force', '--no-docs', '--no-cache']);
  assert.ok(after.code === 0 || after.code === 1, after.err);
  assert.match(after.err, new RegExp(`run dir: removed a stale lock ${join(D, RUN_LOCK)} \\(pid ${2 ** 22 + 12345} on ${hostname()} is no longer running\\)`));
  assert.not.ok(existsSync(join(D, RUN_LOCK)));
});

test.unless(missingNumpy())('issue 26.1: report on a run dir in use waits for it, says so, then judges; check refused on a new dir leaves no dir behind', async () => {
  const D = join(runs, 'to-report');
  const made = await cli(['check', '--model-dir', MODEL, '--out', D, '--no-docs', '--no-cache']);
  assert.ok(made.code === 0 || made.code === 1, made.err);
  const lock = holdBy(D);
  setTimeout(() => rmSync(lock, { force: true }), 1500);
  const r = await cli(['report', '--run-dir', D, '--no-docs']);
  assert.is(r.code, made.code, r.err);
  assert.match(r.err, new RegExp(`run dir: waiting for ${D}: in use by another run \\(pid ${process.pid} on ${hostname()}, started 2026-01-02T03:04:05.000Z\\), which is still writing it`));
  assert.ok(existsSync(join(D, 'report.json')));
});

test('issue 26.1: default run dir names differ for runs started in the same second, and in the same millisecond', () => {
  const t = new Date('2026-03-04T05:06:07.890Z');
  const a = defaultRunDirName('tiny_llama', t, 100);
  assert.is(a, 'runs/tiny_llama-20260304-050607-890-100');
  assert.is.not(defaultRunDirName('tiny_llama', new Date('2026-03-04T05:06:07.891Z'), 100), a);
  assert.is.not(defaultRunDirName('tiny_llama', t, 101), a);
});

test.unless(missingNumpy())('issue 26.1: three checks without --out started at once get three run dirs', async () => {
  const cwd = join(runs, 'defaults');
  mkdirSync(cwd);
  const js = await ensureCli();
  const codes = await Promise.all([0, 1, 2].map(() => new Promise<number | null>((res) => {
    const c = spawn(process.execPath, [js, 'check', '--model-dir', MODEL, '--no-docs', '--no-cache'], { cwd, stdio: 'ignore' });
    c.on('close', res);
  })));
  for (const c of codes) assert.ok(c === 0 || c === 1, String(codes));
  assert.is(readdirSync(join(cwd, 'runs')).length, 3);
});

test.after(() => {
  rmSync(runs, { recursive: true, force: true });
  rmSync(tree.root, { recursive: true, force: true });
});

test.run();
