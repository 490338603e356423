// A pull request's model code, run by the probe, against the Action's secrets (issue 8): a hostile
// fake tree reads every /proc/*/environ it can, the checkout's .git/config and the runner's temp
// files, and tries to write into the cache root. The Action-like parent starts with tokens in its
// environment. In every isolation mode this machine supports, nothing leaks and nothing is written;
// unisolated (the admin's explicit, unsafe opt-in) shows the attack is real. Also: a probe timeout
// and a cancel stop the probe's whole tree, including a grandchild that left its process group.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { REPO } from './helpers/airmini.ts';
import { findNumpyPython } from './helpers/python.ts';
import { chooseIsolation, realHost } from '../src/probe/isolate.ts';
import { runProbe, ProbeInterrupted } from '../src/probe/run.ts';

const python = spawnSync(findNumpyPython()!, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim();
const CANARY = `canary-${process.pid}-${Date.now()}`;

function fakeTree(root: string): string {
  const r = spawnSync(python, ['-c', `import sys; sys.path.insert(0, ${JSON.stringify(REPO)}); from test.python.fakes import fake_tree; print(fake_tree.build(${JSON.stringify(root)}))`], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  return r.stdout.trim();
}

/** A workspace as a runner lays it out: <runner>/_work/<repo>/<repo> with .git, and _work/_temp. */
function workspace() {
  const runner = mkdtempSync(join(tmpdir(), 'nbg-runner-'));
  const ws = join(runner, '_work/repo/repo');
  const temp = join(runner, '_work/_temp');
  mkdirSync(join(ws, '.git'), { recursive: true });
  mkdirSync(join(temp, '_runner_file_commands'), { recursive: true });
  writeFileSync(join(ws, '.git/config'), `[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic ${CANARY}-checkout\n`);
  writeFileSync(join(runner, '.credentials'), `{"token": "${CANARY}-runner"}`);
  writeFileSync(join(temp, '_runner_file_commands/set_output_1'), '');
  const model = fakeTree(ws);
  const cache = join(runner, 'cache');
  mkdirSync(cache);
  const run = join(runner, 'run');
  mkdirSync(run);
  return { runner, ws, temp, model, cache, run };
}

/** The Action's own environment: tokens from the start (so they are in /proc/<pid>/environ too). */
function actionEnv(w: ReturnType<typeof workspace>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    'INPUT_GITHUB-TOKEN': `${CANARY}-input`,
    ACTIONS_RUNTIME_TOKEN: `${CANARY}-runtime`,
    ACTIONS_ID_TOKEN_REQUEST_TOKEN: `${CANARY}-oidc`,
    GITHUB_TOKEN: `${CANARY}-github`,
    DEPLOY_SECRET: `${CANARY}-secret`,
    RUNNER_TEMP: w.temp,
    GITHUB_OUTPUT: join(w.temp, '_runner_file_commands/set_output_1'),
    GITHUB_STEP_SUMMARY: join(w.temp, '_runner_file_commands/step_summary_1'),
    GITHUB_WORKSPACE: w.ws,
  };
}

function hostileRun(mode: string, w: ReturnType<typeof workspace>, user?: string) {
  const loot = join(w.run, `loot-${mode}.json`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(REPO, 'test/helpers/isolated-probe.ts'), JSON.stringify({
    python, mode, user, runDir: w.run, writable: [w.model, w.run], readable: [w.ws],
    args: ['--model-dir', w.model, '--out', w.run, '--ref-cache', 'none', '--npu-lock', 'none', '--seq-len', '64'],
    extraEnv: { FAKE_HOSTILE: loot, FAKE_HOSTILE_READ: `${w.temp}:${join(w.runner, '.credentials')}`, FAKE_HOSTILE_WRITE: `${w.cache}:${w.temp}` },
  })], { encoding: 'utf8', env: actionEnv(w), cwd: REPO });
  const result = JSON.parse(r.stdout.trim().split('\n').pop() || '{}');
  assert.ok(result.ok, `${mode}: ${result.error ?? r.stderr}`);
  return { result, loot: JSON.parse(readFileSync(loot, 'utf8')) as { env: Record<string, string>; proc: Record<string, string>; files: Record<string, string>; wrote: string[] } };
}

test('the probe\'s own environment never holds a token or a file-command path', () => {
  const w = workspace();
  const { loot } = hostileRun('none', w);
  assert.not.ok(JSON.stringify(loot.env).includes(CANARY), 'env leak');
  for (const v of ['GITHUB_OUTPUT', 'GITHUB_STEP_SUMMARY', 'ACTIONS_RUNTIME_TOKEN', 'INPUT_GITHUB-TOKEN', 'GITHUB_TOKEN', 'DEPLOY_SECRET']) assert.not.ok(v in loot.env, v);
});

test('unisolated (allow-unisolated): the attack is real, which is why untrusted runs refuse it', () => {
  const w = workspace();
  const { loot } = hostileRun('none', w);
  assert.ok(Object.values(loot.proc).some((e) => e.includes(`${CANARY}-input`)), 'the parent\'s /proc/<pid>/environ is readable');
  assert.ok(Object.values(loot.files).some((f) => f.includes(`${CANARY}-checkout`)), '.git/config is readable');
  assert.ok(loot.wrote.includes(w.cache));
  assert.throws(() => chooseIsolation({ mode: 'none', untrusted: true, allowUnisolated: false }), /refusing to run an untrusted event's model code without isolation/);
});

const bwrapWorks = realHost.which('bwrap') !== null && realHost.works(['bwrap', '--die-with-parent', '--unshare-pid', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true']);
(bwrapWorks ? test : test.skip)('namespace (bubblewrap): no token anywhere it can read, and it cannot write the caches', () => {
  const w = workspace();
  const { result, loot } = hostileRun('namespace', w);
  assert.is(result.mode, 'namespace');
  assert.not.ok(JSON.stringify(loot).includes(CANARY), `leak: ${JSON.stringify(loot).slice(JSON.stringify(loot).indexOf(CANARY) - 200, JSON.stringify(loot).indexOf(CANARY) + 50)}`);
  assert.not.ok(loot.wrote.includes(w.cache), 'the cache root is read-only');
  // The runner's temp dir is a private tmpfs inside the sandbox: a write there never reaches it.
  assert.equal(readdirSync(w.cache), []);
  assert.not.ok(existsSync(join(w.temp, 'poisoned')));
  assert.ok(existsSync(join(w.run, 'probe.json')), 'the probe itself still ran');
});
if (!bwrapWorks) console.warn('probe-isolation: namespace mode SKIPPED (bubblewrap missing or cannot create namespaces here)');

// uid mode needs a user to switch to (root here: setpriv) and a Python that user can run.
const uidUser = 'nobody';
function uidRuns(): boolean {
  if (realHost.uid() !== 0) return false;
  try {
    const iso = chooseIsolation({ mode: 'uid', untrusted: true, allowUnisolated: false, user: uidUser });
    const argv = iso.wrap([python, '-c', 'import numpy'], { writable: [tmpdir()], env: process.env, network: false });
    return spawnSync(argv[0], argv.slice(1), { stdio: 'ignore' }).status === 0;
  } catch {
    return false;
  }
}
const uidWorks = uidRuns();
(uidWorks ? test : test.skip)('uid (a separate user, as `agent setup` makes one): no token, no cache write', () => {
  const w = workspace();
  chmodSync(w.runner, 0o755); // a runner's home, as the runner service makes it
  for (const d of [w.run, w.model]) chmodSync(d, 0o777); // `agent setup` gives the probe user write access here
  const { result, loot } = hostileRun('uid', w, uidUser);
  assert.is(result.mode, 'uid');
  assert.not.ok(JSON.stringify(loot).includes(CANARY));
  assert.not.ok(loot.wrote.includes(w.cache));
  assert.equal(readdirSync(w.cache), []);
  assert.not.ok(existsSync(join(w.temp, 'poisoned')));
});
if (!uidWorks) console.warn('probe-isolation: uid mode SKIPPED (not root, or nobody cannot run this Python)');

/** check as the pipeline runs it, on one runner's cache root (the Action's trusted or untrusted plan). */
async function checkOn(w: ReturnType<typeof workspace>, cacheRoot: string, who: 'trusted' | 'hostile' | 'hostile-unisolated', extraEnv: Record<string, string> = {}) {
  const { check } = await import('../src/check/index.ts');
  const run = mkdtempSync(join(tmpdir(), `nbg-${who}-`));
  const plan = {
    mode: 'full' as const, modelDir: w.model, promptStyle: null, prompt: null, python, runDir: run, threshold: null,
    // No lens: the forger below forges an entry of the layer alone (a key made with the lens also needs its boundaries).
    writeDocs: false, timeoutSec: 120, commit: null, bisect: false, boundaries: false, cache: true, cacheDir: cacheRoot,
    cacheWrite: who === 'trusted', force: true, probeEnv: extraEnv,
    isolation: { mode: who === 'hostile-unisolated' ? 'none' as const : 'auto' as const, untrusted: who !== 'trusted', allowUnisolated: who === 'hostile-unisolated' },
  };
  const quiet = { step: () => undefined, warn: () => undefined };
  return check(plan, { log: quiet });
}

(bwrapWorks ? test : test.skip)('a trusted run after a hostile pull request on the same runner: the same verdict and numbers as on a clean runner', async () => {
  const w = workspace();
  // A clean runner: the trusted run's verdict and numbers, and the reference cache key it uses.
  const clean = await checkOn(w, mkdtempSync(join(tmpdir(), 'nbg-clean-cache-')), 'trusted');
  assert.is(clean.report.outcome, 'pass');
  const key = clean.report.reference!.cache!.key;
  // The forger's template and its loot live in the model dir, which the probe can read and write
  // in every mode: an isolated forge fails because the cache is read-only, not for want of a template.
  copyFileSync(join(clean.runDir, 'block0.ref.npy'), join(w.model, 'template.npy'));
  const forge = (root: string) => ({ FAKE_HOSTILE: join(w.model, 'loot.json'), FAKE_HOSTILE_FORGE: join(root, 'reference', key),
    FAKE_HOSTILE_FORGE_FROM: join(w.model, 'template.npy'), FAKE_HOSTILE_WRITE: join(root, 'reference') });
  // Unisolated (the admin's unsafe opt-in), the pull request forges the entry and flips the next trusted verdict:
  const unsafeRoot = mkdtempSync(join(tmpdir(), 'nbg-unsafe-cache-'));
  await checkOn(w, unsafeRoot, 'hostile-unisolated', forge(unsafeRoot));
  const flipped = await checkOn(w, unsafeRoot, 'trusted');
  assert.is(flipped.report.reference!.cache!.hit, true);
  assert.is(flipped.report.outcome, 'fail');
  // Isolated, it cannot: the trusted run after it is the clean runner's, number for number.
  const root = mkdtempSync(join(tmpdir(), 'nbg-runner-cache-'));
  const hostile = await checkOn(w, root, 'hostile', forge(root));
  assert.is(hostile.report.isolation!.mode, 'namespace');
  assert.not.ok(existsSync(join(root, 'reference', key)), 'no forged entry');
  const after = await checkOn(w, root, 'trusted');
  assert.is(after.report.outcome, clean.report.outcome);
  assert.is(after.report.reference!.cache!.hit, false);
  assert.equal(after.report.metrics, { ...clean.report.metrics!, engine: after.report.metrics!.engine });
});

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

/** A guard against a hung test (not a timing assertion): fail instead of hanging CI. */
function within<T>(p: Promise<T>, seconds: number, what: string): Promise<T> {
  return Promise.race([p, new Promise<T>((_, rej) => setTimeout(() => rej(new Error(`${what} did not return within ${seconds}s`)), seconds * 1000).unref())]);
}

test('a probe timeout stops its whole tree, a grandchild that left the group included, and returns', async () => {
  const w = workspace();
  const pidFile = join(w.run, 'grandchild.pid');
  const err = await within(runProbe([{ command: python, source: 'option' }], {
    subcommand: 'block', args: ['--model-dir', w.model, '--out', w.run, '--ref-cache', 'none', '--npu-lock', 'none'],
    runDir: w.run, timeoutSec: 3, extraEnv: { FAKE_COMPILE_GRANDCHILD: pidFile },
  }, { onLine: () => undefined }).then(() => null, (e) => e as Error), 3 + 30, 'the timed-out probe');
  assert.match(String(err?.message), /timed out after 3s/);
  const pid = Number(readFileSync(pidFile, 'utf8'));
  for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  assert.not.ok(alive(pid), `grandchild ${pid} survived`);
});

test('SIGINT to the CLI stops the probe group and ends with status 130', async () => {
  const w = workspace();
  const hang = join(w.run, 'hang');
  const run = runProbe([{ command: python, source: 'option' }], {
    subcommand: 'block', args: ['--model-dir', w.model, '--out', w.run, '--ref-cache', 'none', '--npu-lock', 'none'],
    runDir: w.run, timeoutSec: null, extraEnv: { FAKE_COMPILE_HANG: hang },
  }, { onLine: () => undefined }).then(() => null, (e) => e);
  for (let i = 0; i < 200 && !existsSync(hang); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(existsSync(hang), 'the probe reached its compile');
  process.kill(process.pid, 'SIGINT');
  const e = await within(run, 30, 'the interrupted probe');
  assert.instance(e, ProbeInterrupted);
  assert.is((e as ProbeInterrupted).status, 130);
  assert.not.ok(existsSync(join(w.run, 'probe.json')));
});

test.run();
