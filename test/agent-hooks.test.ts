// The runner's job hooks, drain/undrain and the per-job metrics, on the fake NPU runner
// (test/fixtures/agent/fake.ts) and the local GitHub fake (test/helpers/github-server.ts, every
// request checked against GitHub's OpenAPI description). Traffic goes to 127.0.0.1 only.
import { test, skip } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { FakeGitHub } from './helpers/github-server.ts';
import { selfCommand } from '../src/agent/hooks.ts';
import { fakeRunner, storeThreeKernels as store, agent, ok, restub, type Fake } from './fixtures/agent/fake.ts';
import { LINES, journal, BLIND_JOURNAL, DMESG_RESTRICTED } from './fixtures/agent/kernel-log.ts';
import { dotRunner } from './fixtures/agent/runner.ts';
import * as X from './fixtures/agent/xrt-smi.ts';

const started = (f: Fake, extra: string[] = [], deps = f.deps) => agent(['hook', 'job-started', '--root', f.root, ...extra], deps);
const annotations = (out: string) => out.split('\n').filter((l) => l.startsWith('::'));

function event(f: Fake, head: string | null, base: string) {
  const p = join(f.cwd, 'event.json');
  writeFileSync(p, JSON.stringify({ action: 'opened', pull_request: { number: 7, head: { repo: head ? { full_name: head } : null }, base: { repo: { full_name: base } } } }));
  return p;
}

const validateFails = (f: Fake) => restub(f, 'xrt-smi', (a) => (a[0] === 'validate' ? { status: 1, stdout: X.VALIDATE_FAIL, stderr: '' } : a[1] === '-r' ? ok(X.PLATFORM_CURRENT) : ok(X.EXAMINE_CURRENT)));

// ---- job-started: only device-level findings fail the job

test('job-started: a healthy NPU and a runner python3 without numpy: exit 0 with a warning annotation', async () => {
  const f = fakeRunner({ numpy: false });
  const r = await started(f);
  assert.is(r.code, 0, r.out + r.err);
  assert.equal(annotations(r.out), [
    '::warning title=npu-block-gate%3A python::warn: no Python with numpy found: tried python3 (cannot import numpy), /usr/bin/python3 (cannot import numpy); pass --python or set NPU_BLOCK_GATE_PYTHON (fine when the job builds its own venv, as mlir-air\'s CI does) (fix: pass --python (hooks install --python) or set NPU_BLOCK_GATE_PYTHON to the mlir-air environment (e.g. /opt/mlir-air/ironenv/bin/python))',
  ]);
  assert.match(r.out, /\nnpu-block-gate: job-started hook: NPU usable, 1 warning\(s\) on the job; fork policy probe-only: ok\n$/);
  // Even a --python that does not work, an offline HF cache that is missing, low disk and a held lock only warn.
  rmSync(join(f.home, '.cache'), { recursive: true });
  const deps = { ...f.deps, env: { ...f.env, HF_HUB_OFFLINE: '1' }, statfs: () => ({ bavail: 1, bsize: 1024, blocks: 1 }) };
  const w = await started(f, ['--python', '/opt/venv/bin/python'], deps);
  assert.is(w.code, 0, w.out);
  assert.equal(annotations(w.out).map((a) => /title=npu-block-gate%3A ([\w-]+)::(\w+)/.exec(a)!.slice(1)), [['disk-cache', 'warn'], ['disk-workspace', 'warn'], ['hf-cache', 'warn'], ['python', 'fail']]);
  // The first job of this boot probes the NPU (no good probe yet); the next ones, within the interval and on a clean log, do not.
  assert.is(f.calls.filter(([n, a]) => n === 'xrt-smi' && a[0] === 'validate').length, 1);
});

test('job-started: device failures fail the job with error annotations; a passing functional probe clears an old wedge', async () => {
  // No node: fail before the job.
  const none = fakeRunner({ bound: null, node: false });
  let r = await started(none);
  assert.is(r.code, 1);
  assert.ok(annotations(r.out).some((a) => a.startsWith('::error title=npu-block-gate%3A device::fail: no /dev/accel node of amdxdna: the driver could not probe the NPU at 0000:c5:00.1')));
  assert.match(r.out, /the NPU is not usable \(driver, device\); failing the job before it runs\n$/);
  // A wedge this boot: the hook probes the NPU (rate-limited); a pass clears it and the job runs.
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load, LINES.waitTimeout, LINES.badState]) });
  r = await started(f);
  assert.is(r.code, 0, r.out);
  assert.match(r.out, /^  ok       kernel-log .*cleared by a passing functional probe/m);
  assert.match(r.out, /^  ok       functional +xrt-smi validate --run latency passed/m);
  // The same wedge and a failing probe: the job fails on both.
  const g = fakeRunner({ journal: journal([LINES.enabling, LINES.load, LINES.waitTimeout, LINES.badState]) });
  validateFails(g);
  r = await started(g);
  assert.is(r.code, 1);
  assert.equal(annotations(r.out).filter((a) => a.startsWith('::error')).map((a) => /title=npu-block-gate%3A ([\w-]+)/.exec(a)![1]), ['kernel-log', 'functional']);
  assert.match(r.out, /not usable \(kernel-log, functional\)/);
  // The next job within 10 minutes reuses the failed result instead of probing again.
  r = await started(g);
  assert.is(r.code, 1);
  assert.match(r.out, /cached: ran at/);
  assert.is(g.calls.filter(([n, a]) => n === 'xrt-smi' && a[0] === 'validate').length, 1);
});

test('job-started: a blind journal is a warning, never ok; the functional probe decides', async () => {
  const f = fakeRunner();
  restub(f, 'journalctl', () => ({ status: 0, ...BLIND_JOURNAL }));
  restub(f, 'dmesg', () => ({ status: 1, ...DMESG_RESTRICTED }));
  let r = await started(f);
  assert.is(r.code, 0, r.out);
  assert.ok(annotations(r.out).some((a) => a.startsWith('::warning title=npu-block-gate%3A kernel-log::unknown: kernel log unreadable')));
  assert.match(r.out, /^  UNKNOWN  kernel-log/m);
  assert.match(r.out, /^  ok       functional/m);
  validateFails(f);
  f.clock.now = new Date('2026-08-30T05:00:00Z');
  r = await started(f);
  assert.is(r.code, 1);
});

test('job-started: fork policy probe-only (default) fits the split workflow; deny and allow', async () => {
  const f = fakeRunner();
  const with_ = (head: string | null, name?: string) => ({ ...f.deps, env: { ...f.env, GITHUB_EVENT_PATH: event(f, head, 'acme/mlir-air'), ...(name ? { GITHUB_EVENT_NAME: name } : {}) } });
  // examples/workflows/phase2-probe.yml: on pull_request, permissions {}: a fork's run has no secrets and a read-only token.
  assert.is((await started(f, [], with_('mallory/mlir-air', 'pull_request'))).code, 0);
  let r = await started(f, [], with_('mallory/mlir-air', 'pull_request_target'));
  assert.is(r.code, 1);
  assert.match(r.out, /\nnpu-block-gate: fork policy probe-only: pull request from mallory\/mlir-air into acme\/mlir-air under pull_request_target would run its code with this repository's secrets or a write token; only pull_request .* may run fork code here; refusing the job\n$/);
  assert.ok(annotations(r.out).some((a) => a.startsWith('::error title=npu-block-gate%3A fork policy::')));
  assert.is((await started(f, [], with_('mallory/mlir-air'))).code, 1, 'no event name: refused');
  assert.is((await started(f, [], with_('acme/mlir-air', 'pull_request_target'))).code, 0, 'same repository');
  r = await started(f, ['--fork-policy', 'deny'], with_('mallory/mlir-air', 'pull_request'));
  assert.is(r.code, 1);
  assert.match(r.out, /fork policy deny: pull request from mallory\/mlir-air into acme\/mlir-air runs untrusted code on this runner's NPU; refusing the job\n$/);
  assert.match((await started(f, ['--fork-policy', 'deny'], with_(null, 'pull_request'))).out, /from a deleted fork/);
  assert.is((await started(f, ['--fork-policy', 'allow'], with_('mallory/mlir-air', 'pull_request_target'))).code, 0);
  const bad = await started(f, ['--fork-policy', 'maybe']);
  assert.is(bad.code, 2);
  assert.match(bad.err, /^npu-block-gate: error: --fork-policy "maybe": allow, probe-only, deny\n$/);
});

test('job-started: XRT, driver or firmware changed since the last job is a warning on the job', async () => {
  const f = fakeRunner();
  mkdirSync(f.state, { recursive: true });
  writeFileSync(join(f.state, 'last-job.json'), JSON.stringify({ finished_at: '2026-08-29T22:00:00.000Z', versions: { xrt: '2.23.0', amdxdna: '2.21.0_20251202', firmware: '1.1.2.64' }, device_ok: true }));
  const r = await started(f);
  assert.is(r.code, 0);
  assert.ok(annotations(r.out).includes('::warning title=npu-block-gate%3A versions changed::since the last job (2026-08-29T22:00:00.000Z): amdxdna 2.21.0_20251202 -> 2.23.0_20260402; a result that differs from before may come from this'));
});

// ---- hooks install

// Like dist/cli.js: an ES module that runs only when invoked as .../cli.js (src/cli.ts's guard).
const FAKE_CLI = `#!/usr/bin/env node\nimport { basename } from 'node:path';\nif (basename(process.argv[1]) === 'cli.js') {\n  console.log('ours:', process.argv.slice(2).join(' '));\n  process.exit(Number(process.env.OURS_EXIT || 0));\n}\n`;

function fakeBundle(f: Fake, where: string) {
  const p = join(f.base, where, 'dist', 'cli.js');
  mkdirSync(join(p, '..'), { recursive: true });
  writeFileSync(p, FAKE_CLI);
  return { node: process.execPath, execArgv: [], script: p, kind: 'bundle' as const };
}

function runnerDir(f: Fake, env = '') {
  const d = join(f.base, 'actions-runner');
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, '.env'), env);
  return d;
}

const bash = (script: string, env: NodeJS.ProcessEnv = {}) => spawnSync('bash', ['--noprofile', '--norc', '-e', '-o', 'pipefail', script], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } });

test('hooks install: --python, --hf-home and --offline go into the shim; .env updated in place; idempotent', async () => {
  const f = fakeRunner();
  const dir = join(f.home, 'hooks dir');
  const hf = join(f.home, 'hf');
  mkdirSync(hf);
  const runner = runnerDir(f, 'LANG=C.UTF-8\nHF_HUB_OFFLINE=1\n# comment  kept\nPATH=/usr/bin:/bin');
  const self = fakeBundle(f, 'pkg');
  const args = ['hooks', 'install', '--dir', dir, '--runner-dir', runner, '--python', '/usr/bin/env', '--hf-home', hf, '--offline', '--cache-max-bytes', '10G'];
  const r = await agent(args, { ...f.deps, self });
  assert.is(r.code, 0, r.err);
  const shim = readFileSync(join(dir, 'job-started.sh'), 'utf8');
  assert.ok(shim.includes(`HF_HOME=${hf}; export HF_HOME\nHF_HUB_OFFLINE=1; export HF_HUB_OFFLINE\n`), shim);
  assert.match(shim, / agent hook job-started --fork-policy probe-only --python \/usr\/bin\/env --runner-dir /);
  const completed = readFileSync(join(dir, 'job-completed.sh'), 'utf8');
  assert.ok(completed.includes(`agent hook job-completed --dir '${dir}' --cache-max-bytes 10G --runner-dir ${runner}\n`), completed);
  for (const p of ['job-started.sh', 'job-completed.sh']) assert.is(statSync(join(dir, p)).mode & 0o777, 0o755);
  assert.is(readFileSync(join(runner, '.env'), 'utf8'),
    `LANG=C.UTF-8\nHF_HUB_OFFLINE=1\n# comment  kept\nPATH=/usr/bin:/bin\nACTIONS_RUNNER_HOOK_JOB_STARTED=${join(dir, 'job-started.sh')}\nACTIONS_RUNNER_HOOK_JOB_COMPLETED=${join(dir, 'job-completed.sh')}\n`);
  // The shim runs with the environment the runner gives hooks (none of the job's env:): the exports reach our CLI.
  const run = bash(join(dir, 'job-started.sh'));
  assert.is(run.status, 0, run.stderr);
  assert.match(run.stdout, /^ours: agent hook job-started --fork-policy probe-only --python \/usr\/bin\/env/);
  const again = await agent(args, { ...f.deps, self });
  assert.equal(again.out.split('\n').filter(Boolean).map((l) => l.split(/\s+/)[0]), ['unchanged', 'unchanged', 'unchanged', 'unchanged']);
  // Bad input: one line naming the option, exit 2.
  for (const [extra, re] of [
    [['--hf-home', join(f.home, 'nope')], /^npu-block-gate: error: --hf-home .*nope: no such directory/],
    [['--python', '/nonexistent/python3'], /^npu-block-gate: error: --python \/nonexistent\/python3: no such file\n$/],
    [['--fork-policy', 'maybe'], /--fork-policy "maybe": allow, probe-only, deny/],
    [['--functional-when', 'sometimes'], /--functional-when "sometimes": auto, always or never/],
    [['--label', 'x'], /--label: labels are removed through the GitHub API: pass --token-file too/],
  ] as [string[], RegExp][]) {
    const b = await agent(['hooks', 'install', '--dir', dir, ...extra], { ...f.deps, self });
    assert.is(b.code, 2, extra.join(' '));
    assert.match(b.err, re);
    assert.is(b.err.split('\n').length, 2);
  }
});

test('issue 28: hooks install sets the probe interval and --when-unknown for the hooks', async () => {
  const f = fakeRunner();
  const dir = join(f.home, 'hooks-interval');
  const self = fakeBundle(f, 'pkg-interval');
  const r = await agent(['hooks', 'install', '--dir', dir, '--functional-max-age', '1200', '--when-unknown', 'run'], { ...f.deps, self });
  assert.is(r.code, 0, r.err);
  const startedShim = readFileSync(join(dir, 'job-started.sh'), 'utf8');
  assert.match(startedShim, / agent hook job-started --fork-policy probe-only .*--functional-max-age 1200 --when-unknown run/);
  assert.match(readFileSync(join(dir, 'job-completed.sh'), 'utf8'), / agent hook job-completed .*--functional-max-age 1200/);
  const bad = await agent(['hooks', 'install', '--dir', dir, '--functional-max-age', 'soon'], { ...f.deps, self });
  assert.is(bad.code, 2);
  assert.match(bad.err, /functional-max-age/);
});

test('hooks install over an existing admin hook: refused without --chain; with it the admin hook keeps running', async () => {
  const f = fakeRunner();
  const dir = join(f.base, 'hooks');
  const marks = join(f.base, 'marks');
  const admin = join(f.base, 'admin-start.sh');
  writeFileSync(admin, `echo admin-started >> '${marks}'\nexit \${ADMIN_EXIT:-0}\n`);
  const adminDone = join(f.base, 'admin-done.sh');
  writeFileSync(adminDone, `echo admin-completed >> '${marks}'\nexit \${ADMIN_EXIT:-0}\n`);
  const runner = runnerDir(f, `ACTIONS_RUNNER_HOOK_JOB_STARTED=${admin}\nACTIONS_RUNNER_HOOK_JOB_COMPLETED=${adminDone}\n`);
  const self = fakeBundle(f, 'pkg');
  let r = await agent(['hooks', 'install', '--dir', dir, '--runner-dir', runner], { ...f.deps, self });
  assert.is(r.code, 2);
  assert.is(r.err, `npu-block-gate: error: ${join(runner, '.env')}: ACTIONS_RUNNER_HOOK_JOB_STARTED=${admin} is another hook the runner runs before every job: pass --chain to keep it running (first, with its exit status kept), or take that line out of .env yourself\n`);
  assert.ok(!existsSync(join(dir, 'job-started.sh')), 'nothing written');
  assert.is(readFileSync(join(runner, '.env'), 'utf8'), `ACTIONS_RUNNER_HOOK_JOB_STARTED=${admin}\nACTIONS_RUNNER_HOOK_JOB_COMPLETED=${adminDone}\n`);
  r = await agent(['hooks', 'install', '--dir', dir, '--runner-dir', runner, '--chain'], { ...f.deps, self });
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /job-started\.sh \(runs .*admin-start\.sh first\)/);
  const started = join(dir, 'job-started.sh');
  const completed = join(dir, 'job-completed.sh');
  assert.is(readFileSync(join(runner, '.env'), 'utf8'), `ACTIONS_RUNNER_HOOK_JOB_STARTED=${started}\nACTIONS_RUNNER_HOOK_JOB_COMPLETED=${completed}\n`);
  // Run the shims as the runner does (bash -e): the admin's hook first, then ours.
  let s = bash(started);
  assert.is(s.status, 0, s.stderr);
  assert.is(readFileSync(marks, 'utf8'), 'admin-started\n');
  assert.match(s.stdout, /^ours: agent hook job-started/m);
  // The admin's hook failing fails the job as before; ours does not run after it.
  s = bash(started, { ADMIN_EXIT: '7' });
  assert.is(s.status, 7);
  assert.not.match(s.stdout, /ours:/);
  // job-completed: both run; the admin's failure is kept, ours still ran.
  s = bash(completed, { ADMIN_EXIT: '5' });
  assert.is(s.status, 5);
  assert.match(s.stdout, /^ours: agent hook job-completed/m);
  assert.match(readFileSync(marks, 'utf8'), /admin-completed\n$/);
  // Installing again (no --chain needed now) keeps the chain; so does moving our hooks to another dir.
  r = await agent(['hooks', 'install', '--dir', dir, '--runner-dir', runner], { ...f.deps, self });
  assert.is(r.code, 0, r.err);
  assert.match(readFileSync(started, 'utf8'), new RegExp(`# npu-block-gate-chain: ${admin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n`));
  const dir2 = join(f.base, 'hooks2');
  r = await agent(['hooks', 'install', '--dir', dir2, '--runner-dir', runner], { ...f.deps, self });
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /replacing the npu-block-gate job-started hook/);
  assert.match(readFileSync(join(dir2, 'job-started.sh'), 'utf8'), /# npu-block-gate-chain: .*admin-start\.sh/);
  // A chained hook that is gone, or one the runner would not run, is refused.
  const gone = runnerDir(f, `ACTIONS_RUNNER_HOOK_JOB_STARTED=${join(f.base, 'missing.sh')}\n`);
  rmSync(dir2, { recursive: true });
  r = await agent(['hooks', 'install', '--dir', dir2, '--runner-dir', gone, '--chain'], { ...f.deps, self });
  assert.is(r.code, 2);
  assert.match(r.err, /missing\.sh does not exist, so it cannot be chained/);
});

test('hooks install copies the CLI out of an npx cache, so pruning the cache breaks no job; refuses sources there', async () => {
  const f = fakeRunner();
  const dir = join(f.base, 'hooks');
  const self = fakeBundle(f, '.npm/_npx/4f1c2a/node_modules/npu-block-gate');
  const r = await agent(['hooks', 'install', '--dir', dir], { ...f.deps, self });
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /^installed a copy of the CLI .*\/hooks\/cli\/[0-9a-f]{12}\/cli\.js \(from .*_npx.*\)/m);
  const shim = readFileSync(join(dir, 'job-started.sh'), 'utf8');
  assert.ok(!shim.includes('_npx'), shim);
  rmSync(join(f.base, '.npm'), { recursive: true });
  const s = bash(join(dir, 'job-started.sh'));
  assert.is(s.status, 0, s.stderr);
  assert.match(s.stdout, /^ours: agent hook job-started --fork-policy probe-only$/m);
  // The same bundle again: unchanged; a new version replaces the old copy.
  assert.match((await agent(['hooks', 'install', '--dir', dir], { ...f.deps, self: fakeBundle(f, '.npm/_npx/4f1c2a/node_modules/npu-block-gate') })).out, /^unchanged copy of the CLI/m);
  writeFileSync(self.script, FAKE_CLI + '// 0.2.0\n');
  await agent(['hooks', 'install', '--dir', dir], { ...f.deps, self });
  assert.is(readdirSync(join(dir, 'cli')).length, 1);
  // A source checkout in an npx cache cannot be copied: refused, one line.
  const src = { node: process.execPath, execArgv: [], script: join(f.base, '_npx/9/node_modules/npu-block-gate/src/cli.ts'), kind: 'source' as const };
  const b = await agent(['hooks', 'install', '--dir', join(f.base, 'h2')], { ...f.deps, self: src });
  assert.is(b.code, 2);
  assert.match(b.err, /^npu-block-gate: error: .*_npx\/9\/node_modules\/npu-block-gate\/src\/cli\.ts: is under an npx cache, which npm prunes, so every job would break once it goes: install npu-block-gate where it stays/);
  const n = await agent(['hooks', 'install', '--dir', join(f.base, 'h3')], { ...f.deps, self: { ...self, node: join(f.base, '_npx/node') } });
  assert.is(n.code, 2);
  assert.match(n.err, /node .*_npx\/node: is under an npx cache/);
});

test('the shim written from this checkout runs this CLI (src/cli.ts through tsx)', async () => {
  const f = fakeRunner();
  const dir = join(f.base, 'hooks');
  let self = selfCommand();
  let stable: string | null = null;
  const checkout = realpathSync(fileURLToPath(new URL('..', import.meta.url)));
  if (checkout.startsWith(realpathSync(tmpdir()) + '/') || /^\/(tmp|var\/tmp)\//.test(checkout)) {
    // A checkout under the temp dir (a CI clone in /tmp) is not a place hooks may point at: refused, one line.
    const r = await agent(['hooks', 'install', '--dir', dir], f.deps);
    assert.is(r.code, 2, r.out);
    assert.match(r.err, /^npu-block-gate: error: .*src\/cli\.ts: is under a temp dir, so every job would break once it goes/);
    assert.not.ok(existsSync(join(dir, 'job-started.sh')), 'no shim written');
    // The in-place shim itself, from this checkout reached through a path outside the temp dir.
    try {
      stable = mkdtempSync('/dev/shm/nbg-checkout-');
    } catch (e) {
      skip('stable-dir', `this checkout is under the temp dir and /dev/shm is not writable (${(e as Error).message}); clone it elsewhere to run this`);
    }
    symlinkSync(checkout, join(stable, 'checkout'));
    self = { ...self, script: join(stable, 'checkout', relative(checkout, realpathSync(self.script))) };
  }
  const r = await agent(['hooks', 'install', '--dir', dir], { ...f.deps, self });
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /^hooks run the CLI in place: .*src\/cli\.ts/m);
  assert.ok(r.out.includes(self.script), r.out);
  const text = readFileSync(join(dir, 'job-started.sh'), 'utf8');
  const exec = /^exec (.*) agent hook job-started --fork-policy probe-only "?\$?@?"?$/m.exec(text) ?? /^exec (.*) agent hook job-started --fork-policy probe-only$/m.exec(text);
  assert.ok(exec, text);
  const argv = exec![1].split(' ');
  assert.is(argv[0], process.execPath);
  const h = spawnSync(argv[0], [...argv.slice(1), 'agent', '--help'], { encoding: 'utf8', cwd: f.base });
  assert.is(h.status, 0, h.stderr);
  assert.match(h.stdout, /^npu-block-gate agent: the self-hosted NPU runner side/);
  if (stable) rmSync(stable, { recursive: true }); // the link, not the checkout
});

// ---- drain / undrain

async function github(runners = [{ id: 42, name: 'npu-runner-1', labels: ['amdryzenai5pro340'] }]) {
  return new FakeGitHub({ owner: 'acme', repo: 'mlir-air', tokens: { ghp_admin: { login: 'fleet-admin', type: 'User' }, ghs_ro: { login: 'bot', type: 'Bot', installation: true, readOnly: true } }, runners, checkResponses: true }).start();
}

let tokens = 0;
function tokenFile(f: Fake, token = 'ghp_admin', mode = 0o600) {
  const p = join(f.base, `drain-token-${++tokens}`);
  writeFileSync(p, token + '\n');
  chmodSync(p, mode);
  return p;
}

function registered(f: Fake, gitHubUrl = 'https://github.com/acme/mlir-air') {
  const d = runnerDir(f);
  writeFileSync(join(d, '.runner'), dotRunner({ id: 42, name: 'npu-runner-1', gitHubUrl }));
  writeFileSync(join(d, '.service'), 'actions.runner.acme-mlir-air.npu-runner-1.service\n');
  return d;
}

test('drain and undrain round-trip against the GitHub fake: the NPU label removed, then restored after the probe passes', async () => {
  const gh = await github();
  try {
    const f = fakeRunner();
    const rd = registered(f);
    const tf = tokenFile(f);
    const common = ['--root', f.root, '--runner-dir', rd, '--token-file', tf, '--api-url', gh.url];
    let r = await agent(['drain', ...common, '--reason', 'maintenance'], f.deps);
    assert.is(r.code, 0, r.err);
    assert.is(r.out, 'removed label amdryzenai5pro340 from runner npu-runner-1 (id 42); read back: gone\ndrained: maintenance; undo with npu-block-gate agent undrain\n');
    assert.equal(gh.runners[0].labels, []);
    assert.equal(gh.writes().map((c) => `${c.method} ${c.route}`), ['DELETE /repos/{owner}/{repo}/actions/runners/{runner_id}/labels/{name}']);
    // Verified: the labels were read back after the DELETE.
    assert.equal(gh.calls.map((c) => c.method), ['GET', 'DELETE', 'GET']);
    const rec = JSON.parse(readFileSync(join(f.state, 'drain.json'), 'utf8'));
    assert.equal([rec.method, rec.labels, rec.runner_id, rec.reason, rec.state], ['labels', ['amdryzenai5pro340'], 42, 'maintenance', 'drained']);
    const s = await agent(['status', '--root', f.root], f.deps);
    assert.match(s.out, /^DRAINED: +since 2026-08-30T04:00:00\.000Z \(labels; labels read back: amdryzenai5pro340 gone \(runner has self-hosted, Linux, X64\)\): maintenance; undo: npu-block-gate agent undrain$/m);
    // Draining again changes nothing and keeps what to restore.
    r = await agent(['drain', ...common], f.deps);
    assert.is(r.code, 0, r.err);
    assert.equal(JSON.parse(readFileSync(join(f.state, 'drain.json'), 'utf8')).labels, ['amdryzenai5pro340']);
    // Undrain: the functional probe runs first, then the label comes back.
    f.clock.now = new Date('2026-08-30T05:00:00Z');
    r = await agent(['undrain', ...common], f.deps);
    assert.is(r.code, 0, r.err);
    assert.is(r.out, "functional probe: xrt-smi validate --run latency passed: Average latency: 41.2 us (power mode Turbo) [as runner, memlock soft unlimited, hard unlimited (this process's)]\nrestored label amdryzenai5pro340 on runner npu-runner-1 (id 42); read back: present\n");
    assert.equal(gh.runners[0].labels, ['amdryzenai5pro340']);
    assert.ok(!existsSync(join(f.state, 'drain.json')));
    assert.equal(gh.writes().map((c) => `${c.method} ${c.route}`).slice(-1), ['POST /repos/{owner}/{repo}/actions/runners/{runner_id}/labels']);
    assert.equal(gh.problems, []);
  } finally { await gh.stop(); }
});

test('undrain keeps the runner out while the functional probe fails; --force skips it', async () => {
  const gh = await github();
  try {
    const f = fakeRunner();
    const rd = registered(f);
    const common = ['--root', f.root, '--runner-dir', rd, '--token-file', tokenFile(f), '--api-url', gh.url];
    assert.is((await agent(['drain', ...common], f.deps)).code, 0);
    validateFails(f);
    let r = await agent(['undrain', ...common], f.deps);
    assert.is(r.code, 3);
    assert.match(r.err, /^npu-block-gate: error \(infrastructure\): the functional probe did not pass \(fail: xrt-smi validate --run latency failed \(as runner, .*\): DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed \(err=-5\): Input\/output error\); the runner stays drained; fix: the NPU does not run a command/);
    assert.equal(gh.runners[0].labels, []);
    assert.ok(existsSync(join(f.state, 'drain.json')));
    r = await agent(['undrain', ...common, '--force'], f.deps);
    assert.is(r.code, 0, r.err);
    assert.equal(gh.runners[0].labels, ['amdryzenai5pro340']);
    assert.equal(gh.problems, []);
  } finally { await gh.stop(); }
});

test('drain: an organization runner, chosen labels, and every bad input as one line', async () => {
  const gh = await github([{ id: 42, name: 'npu-runner-1', labels: ['amdryzenai5pro340', 'gpu-less'] }]);
  try {
    const f = fakeRunner();
    const rd = registered(f, 'https://github.com/acme');
    const tf = tokenFile(f);
    let r = await agent(['drain', '--root', f.root, '--runner-dir', rd, '--token-file', tf, '--api-url', gh.url, '--label', 'amdryzenai5pro340'], f.deps);
    assert.is(r.code, 0, r.err);
    assert.equal(gh.runners[0].labels, ['gpu-less']);
    assert.ok(gh.calls.every((c) => c.path.startsWith('/orgs/acme/actions/runners/42/labels')));
    for (const [args, code, re] of [
      [['--label', 'amdhx370'], 2, /^npu-block-gate: error: --label: nothing to drain: runner npu-runner-1 has labels self-hosted, Linux, X64, gpu-less and none of them is one of --label\n$/],
      [['--token-file', tokenFile(f, 'ghp_admin', 0o644)], 2, /^npu-block-gate: error: --token-file .*drain-token-\d+: readable by group or others \(mode 0644\): chmod 600 it\n$/],
      [['--token-file', tokenFile(f, 'ghp_wrong')], 3, /^npu-block-gate: error \(infrastructure\): GitHub GET \/orgs\/\{org\}\/actions\/runners\/42\/labels: 401 .*the token is not valid\n$/],
      [['--token-file', tokenFile(f, 'ghs_ro')], 3, /403 .*the token may not administer this runner/],
    ] as [string[], number, RegExp][]) {
      rmSync(join(f.state, 'drain.json'), { force: true });
      const b = await agent(['drain', '--root', f.root, '--runner-dir', rd, '--api-url', gh.url, '--token-file', tf, ...args], f.deps);
      assert.is(b.code, code, args.join(' ') + b.err);
      assert.match(b.err, re);
    }
    assert.equal(gh.problems, []);
    // The runner's files.
    const empty = runnerDir(f);
    rmSync(join(empty, '.runner'), { force: true });
    r = await agent(['drain', '--root', f.root, '--runner-dir', empty, '--token-file', tf], f.deps);
    assert.is(r.code, 2);
    assert.match(r.err, /^npu-block-gate: error: .*actions-runner\/\.runner: no \.runner file: is --runner-dir the runner's install dir/);
    writeFileSync(join(empty, '.runner'), '\uFEFF{"agentName": "x"}');
    assert.match((await agent(['drain', '--runner-dir', empty, '--token-file', tf], f.deps)).err, /\.runner: no "agentId"/);
    writeFileSync(join(empty, '.runner'), '\uFEFF{"agentId": 1, "gitHubUrl": "https://github.com/enterprises/big"}');
    assert.match((await agent(['drain', '--runner-dir', empty, '--token-file', tf], f.deps)).err, /is an enterprise runner/);
    assert.match((await agent(['drain'], f.deps)).err, /^npu-block-gate: error: --runner-dir: agent drain needs --runner-dir/);
  } finally { await gh.stop(); }
});

test('drain without a token stops the runner service, verified by systemctl is-active; after the running job when one runs', async () => {
  const f = fakeRunner();
  const rd = registered(f);
  const svc = 'actions.runner.acme-mlir-air.npu-runner-1.service';
  let r = await agent(['drain', '--root', f.root, '--runner-dir', rd], f.deps);
  assert.is(r.code, 0, r.err);
  assert.equal(f.calls.filter(([n]) => n === 'sudo').map(([, a]) => a), [['-n', 'systemctl', 'stop', svc]]);
  assert.match(r.out, /^stopped the runner service actions\.runner\.acme-mlir-air\.npu-runner-1\.service \(systemctl is-active: inactive\)\n/);
  assert.is(f.services[svc].state, 'inactive');
  assert.match((await agent(['status', '--root', f.root], f.deps)).out, /^DRAINED: .*\(service; stopped the runner service .*\(systemctl is-active: inactive\)\)/m);
  // Undrain starts it after the probe passes.
  r = await agent(['undrain', '--root', f.root, '--runner-dir', rd], f.deps);
  assert.is(r.code, 0, r.err);
  assert.equal(f.calls.filter(([n]) => n === 'sudo').map(([, a]) => a[2]), ['stop', 'start']);
  assert.match(r.out, /started the runner service .* \(systemctl is-active: active\)\n$/);
  // A job is running (the runner's Runner.Worker): sudo is asked now whether it will allow the stop; the stop waits for the job-completed hook.
  mkdirSync(join(f.root, 'proc/3131'), { recursive: true });
  writeFileSync(join(f.root, 'proc/3131/cmdline'), '/home/runner/actions-runner/bin/Runner.Worker\x00spawnclient\x00107\x00110\x00');
  f.calls.length = 0;
  r = await agent(['drain', '--root', f.root, '--runner-dir', rd], f.deps);
  assert.match(r.out, /^a job is running: the job-completed hook stops actions\.runner\.acme-mlir-air\.npu-runner-1\.service when it ends \(not drained until then\)\n/);
  assert.equal(f.calls.filter(([n]) => n === 'sudo').map(([, a]) => a), [['-n', '-l', 'systemctl', 'stop', svc]]);
  assert.is(JSON.parse(readFileSync(join(f.state, 'drain.json'), 'utf8')).state, 'waiting');
  const c = await agent(['hook', 'job-completed', '--root', f.root, '--dir', join(f.base, 'hooks'), '--runner-dir', rd], f.deps);
  assert.is(c.code, 0, c.err);
  const sh = f.calls.filter(([n]) => n === 'sh');
  assert.equal(sh.map(([, a, o]) => [a[0], o?.detached]), [['-c', true]]);
  assert.match(sh[0][1][1], new RegExp(`^sleep 30; grep -qF '"stop_id": "[^"]+"' '[^']+/drain\\.json' 2>/dev/null \\|\\| exit 0; exec sudo -n systemctl stop ${svc.replace(/\./g, '\\.')}$`));
  assert.match(c.out, /drain: the runner service actions\.runner\.acme-mlir-air\.npu-runner-1\.service is to stop in 30s, after this job .*not drained until systemctl is-active says so/);
  assert.is(JSON.parse(readFileSync(join(f.state, 'drain.json'), 'utf8')).state, 'pending');
  // Not drained until systemd says so: status verifies it, the metrics say pending.
  assert.match((await agent(['status', '--root', f.root], f.deps)).out, /^NOT DRAINED: a service stop is pending, not verified .*systemctl is-active actions\.runner\.acme-mlir-air\.npu-runner-1\.service: active$/m);
  assert.match(readFileSync(join(f.state, 'npu_block_gate.prom'), 'utf8'), /^npu_block_gate_drained\{runner="npu-runner-1"\} 0$/m);
  assert.match(readFileSync(join(f.state, 'npu_block_gate.prom'), 'utf8'), /^npu_block_gate_drain_pending\{runner="npu-runner-1"\} 1$/m);
  f.services[svc].state = 'inactive'; // the background stop ran
  const st = JSON.parse((await agent(['status', '--json', '--root', f.root], f.deps)).out);
  assert.equal([st.drain.drained, st.drain.state, st.drain.evidence], [true, 'drained', `systemctl is-active ${svc}: inactive`]);
  // sudo without a rule: one line with the rule agent setup installs, exit 3, not drained.
  rmSync(join(f.root, 'proc/3131'), { recursive: true });
  rmSync(join(f.state, 'drain.json'));
  f.services[svc].state = 'active';
  restub(f, 'sudo', () => ({ status: 1, stdout: '', stderr: 'sudo: a password is required\n' }));
  r = await agent(['drain', '--root', f.root, '--runner-dir', rd], f.deps);
  assert.is(r.code, 3);
  assert.is(r.err, `npu-block-gate: error (infrastructure): sudo -n systemctl stop ${svc} failed: sudo: a password is required; not drained: install the sudoers rule drain needs with sudo npu-block-gate agent setup --runner-user runner --runner-dir <runner dir> (it writes: runner ALL=(root) NOPASSWD: /usr/bin/systemctl stop ${svc}, /usr/bin/systemctl start ${svc})\n`);
  assert.match((await agent(['status', '--root', f.root], f.deps)).out, /^NOT DRAINED: the drain was refused \(service, 2026-08-30T04:00:00\.000Z\): .*sudo: a password is required/m);
  // systemctl stop exits 0 but the service is still up: not drained either.
  restub(f, 'sudo', () => ok(''));
  r = await agent(['drain', '--root', f.root, '--runner-dir', rd], f.deps);
  assert.is(r.code, 3);
  assert.match(r.err, /exited 0 but systemctl is-active says active: not drained\n$/);
  assert.is(JSON.parse((await agent(['status', '--json', '--root', f.root], f.deps)).out).drain.drained, false);
  // No .service (not installed as a service) and no token: nothing to stop.
  rmSync(join(rd, '.service'));
  r = await agent(['drain', '--root', f.root, '--runner-dir', rd], f.deps);
  assert.is(r.code, 2);
  assert.match(r.err, /\.service: no \.service file \(svc\.sh install writes it\)/);
});

/** Runs a background stop's script for real (sh, the delay cut to 0) with a sudo that records what it was asked. */
function runStop(f: Fake, script: string): string | null {
  const bin = join(f.base, 'stop-bin');
  mkdirSync(bin, { recursive: true });
  const said = join(f.base, 'sudo-said');
  rmSync(said, { force: true });
  writeFileSync(join(bin, 'sudo'), `#!/bin/sh\nprintf '%s\\n' "$*" > '${said}'\n`);
  chmodSync(join(bin, 'sudo'), 0o755);
  const r = spawnSync('sh', ['-c', script.replace(/^sleep \d+;/, 'sleep 0;')], { env: { PATH: `${bin}:/usr/bin:/bin` }, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  return existsSync(said) ? readFileSync(said, 'utf8').trim() : null;
}

test('issue 28: drains without races: a job assigned while the stop is pending is refused; undrain in the window cancels the stop; a drained service started again is not drained', async () => {
  const f = fakeRunner();
  const rd = registered(f);
  const svc = 'actions.runner.acme-mlir-air.npu-runner-1.service';
  // A job runs: drain waits for it, and says it is not drained yet.
  mkdirSync(join(f.root, 'proc/3131'), { recursive: true });
  writeFileSync(join(f.root, 'proc/3131/cmdline'), '/home/runner/actions-runner/bin/Runner.Worker\x00spawnclient\x00107\x00110\x00');
  let r = await agent(['drain', '--root', f.root, '--runner-dir', rd, '--reason', 'maintenance'], f.deps);
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /^not drained yet: maintenance; undo with npu-block-gate agent undrain$/m);
  assert.not.match(r.out, /^drained:/m);
  // The job ends: the stop is scheduled (30 s). A job assigned in that window is refused.
  rmSync(join(f.root, 'proc/3131'), { recursive: true });
  const c = await agent(['hook', 'job-completed', '--root', f.root, '--dir', join(f.base, 'hooks'), '--runner-dir', rd], f.deps);
  assert.is(c.code, 0, c.err);
  const script = f.calls.filter(([n]) => n === 'sh').map(([, a]) => a[1]).pop()!;
  const s = await started(f);
  assert.is(s.code, 1, s.out);
  assert.match(s.out, /::error title=npu-block-gate%3A drain in progress::.*a service stop is scheduled: maintenance\); refusing the job so the stop does not kill it/);
  // The stop, run now, stops the service (the record still names it) ...
  assert.is(runStop(f, script), `-n systemctl stop ${svc}`);
  // ... but undrain within the window cancels it: the service keeps running.
  r = await agent(['undrain', '--root', f.root, '--runner-dir', rd], f.deps);
  assert.is(r.code, 0, r.err);
  assert.is(runStop(f, script), null, 'the cancelled stop did not run systemctl stop');
  assert.is(f.services[svc].state, 'active');
  assert.is((await started(f)).code, 0, 'after undrain jobs are taken again');
  // A drained (stopped) service started again (a reboot, ./run.sh) is not drained: status and the metrics re-verify it.
  r = await agent(['drain', '--root', f.root, '--runner-dir', rd], f.deps);
  assert.is(r.code, 0, r.err);
  assert.match((await agent(['status', '--root', f.root], f.deps)).out, /^DRAINED: /m);
  f.services[svc].state = 'active';
  const st = await agent(['status', '--root', f.root], f.deps);
  assert.match(st.out, /^NOT DRAINED: the drained service was started again and takes jobs \(service, .*systemctl is-active actions\.runner\.acme-mlir-air\.npu-runner-1\.service: active$/m);
  assert.is(JSON.parse((await agent(['status', '--json', '--root', f.root], f.deps)).out).drain.drained, false);
  await agent(['hook', 'job-completed', '--root', f.root, '--dir', join(f.base, 'hooks'), '--runner-dir', rd], f.deps);
  assert.match(readFileSync(join(f.state, 'npu_block_gate.prom'), 'utf8'), /^npu_block_gate_drained\{runner="npu-runner-1"\} 0$/m);
});

test('a drain refused in the job-completed hook never reports drained: said on the job, status and metrics say not drained', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load, LINES.waitTimeout, LINES.mgmtReleased]) });
  const rd = registered(f);
  const svc = 'actions.runner.acme-mlir-air.npu-runner-1.service';
  validateFails(f);
  // No sudoers rule: sudo -n -l refuses (no password can be asked).
  restub(f, 'sudo', (a) => (a.includes('-l') ? { status: 1, stdout: '', stderr: 'sudo: a password is required\n' } : ok('')));
  const c = await agent(['hook', 'job-completed', '--root', f.root, '--dir', join(f.base, 'hooks'), '--runner-dir', rd, '--drain-on-failure'], f.deps);
  assert.is(c.code, 0, c.err);
  assert.ok(annotations(c.out).some((a) => a.startsWith('::error title=npu-block-gate%3A drain refused%3A not drained::sudo will not run systemctl stop') && a.includes('sudo npu-block-gate agent setup --runner-user runner')), c.out);
  assert.not.match(c.out, /stops in|is to stop in|runner drained/);
  assert.ok(!f.calls.some(([n]) => n === 'sh'), 'no background stop was started');
  const rec = JSON.parse(readFileSync(join(f.state, 'drain.json'), 'utf8'));
  assert.equal([rec.state, rec.service], ['refused', svc]);
  const st = JSON.parse((await agent(['status', '--json', '--root', f.root], f.deps)).out);
  assert.is(st.drain.drained, false);
  assert.match((await agent(['status', '--root', f.root], f.deps)).out, /^NOT DRAINED: the drain was refused/m);
  const prom = readFileSync(join(f.state, 'npu_block_gate.prom'), 'utf8');
  assert.match(prom, /^npu_block_gate_drained\{runner="npu-runner-1"\} 0$/m);
  assert.match(prom, /^npu_block_gate_drain_pending\{runner="npu-runner-1"\} 0$/m);
  assert.equal(JSON.parse(readFileSync(join(f.state, 'jobs.ndjson'), 'utf8').trim()).drained, false);
  assert.is(f.services[svc].state, 'active');
});

// ---- job-completed: diagnostics, auto-drain, metrics


test('job-completed: diagnostics to the day log (14 days kept), one JSON line per job from the agent\'s own records, a node_exporter textfile, cache gc', async () => {
  const f = fakeRunner();
  const keys = store(f);
  const dir = join(f.home, 'hooks');
  mkdirSync(join(dir, 'logs'), { recursive: true });
  writeFileSync(join(dir, 'logs/2026-08-01.log'), 'old\n');
  writeFileSync(join(dir, 'logs/2026-08-20.log'), 'recent\n');
  const rd = registered(f);
  const env = { ...f.env, GITHUB_REPOSITORY: 'acme/mlir-air', GITHUB_RUN_ID: '99', GITHUB_JOB: 'probe', GITHUB_WORKSPACE: f.cwd };
  const deps = { ...f.deps, env };
  assert.is((await started(f, ['--runner-dir', rd], deps)).code, 0);
  // The job's workspace has a run dir claiming a verdict and a lock wait: a fork's code could write those, so the agent reads neither.
  f.clock.now = new Date('2026-08-30T04:12:30Z');
  const run = join(f.cwd, 'runs/llama32_1b-20260830-040100');
  mkdirSync(run, { recursive: true });
  writeFileSync(join(run, 'report.json'), JSON.stringify({ outcome: 'fail', model: { name: 'llama32_1b' } }));
  writeFileSync(join(run, 'probe.json'), JSON.stringify({ timings: { lock_wait: 12.5, total: 300 } }));
  const textfile = join(f.base, 'textfile_collector', 'npu_block_gate.prom');
  const r = await agent(['hook', 'job-completed', '--root', f.root, '--dir', dir, '--cache-max-bytes', '3500', '--textfile', textfile, '--runner-dir', rd], deps);
  assert.is(r.code, 0, r.err);
  const log = readFileSync(join(dir, 'logs/2026-08-30.log'), 'utf8');
  assert.match(log, /^=== job-completed 2026-08-30T04:12:30\.000Z acme\/mlir-air run 99 job probe ===\n--- kernel log, NPU lines \(journalctl -k -b 0 \(last 1h\); \d+ B read newest first, bound 64\.0 MiB\): 1\n/);
  assert.match(log, /--- xrt-smi examine \(exit 0\)\nSystem Configuration/);
  assert.equal(readdirSync(join(dir, 'logs')).sort(), ['2026-08-20.log', '2026-08-30.log']);
  assert.match(r.out, /dropped 1 log\(s\) older than 14 days/);
  assert.match(r.out, /dropped 2 .*kept 1/);
  assert.ok(!existsSync(join(f.cache, 'kernels', keys[0])) && existsSync(join(f.cache, 'kernels', keys[2])));
  const lines = readFileSync(join(f.state, 'jobs.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.is(lines.length, 1);
  assert.equal(lines[0], {
    ts: '2026-08-30T04:12:30.000Z', runner: 'npu-runner-1', repository: 'acme/mlir-air', run_id: '99', job: 'probe', started_at: '2026-08-30T04:00:00.000Z', duration_s: 750,
    outcome: 'ok', refused: null, device_ok: true, failing: [],
    // The last good probe (04:00, job-started) was older than the 600 s interval by now: probed again after the job.
    versions: { xrt: '2.23.0', amdxdna: '2.23.0_20260402', firmware: '1.1.2.64' }, functional: { at: '2026-08-30T04:12:30.000Z', status: 'ok', finding: 'pass' },
    drained: false, drain_pending: false,
  });
  const prom = readFileSync(textfile, 'utf8');
  for (const l of [
    'npu_block_gate_healthy{runner="npu-runner-1"} 1',
    'npu_block_gate_last_check_timestamp_seconds{runner="npu-runner-1"} 1788063150',
    'npu_block_gate_functional_ok{runner="npu-runner-1"} 1',
    'npu_block_gate_last_job_duration_seconds{runner="npu-runner-1"} 750',
    'npu_block_gate_last_job_run_id{runner="npu-runner-1"} 99',
    'npu_block_gate_last_job_outcome{runner="npu-runner-1",outcome="ok"} 1',
    'npu_block_gate_last_job_outcome{runner="npu-runner-1",outcome="refused"} 0',
    'npu_block_gate_jobs_total{runner="npu-runner-1",outcome="ok"} 1',
    'npu_block_gate_jobs_total{runner="npu-runner-1",outcome="device_failed"} 0',
    'npu_block_gate_versions_info{runner="npu-runner-1",xrt="2.23.0",amdxdna="2.23.0_20260402",firmware="1.1.2.64"} 1',
    'npu_block_gate_drained{runner="npu-runner-1"} 0',
    '# TYPE npu_block_gate_jobs_total counter',
  ]) assert.ok(prom.split('\n').includes(l), `${l}\n${prom}`);
  assert.not.match(prom, /run_id="|repository=|lock_wait|fail"/);
  assert.ok(!readdirSync(join(f.base, 'textfile_collector')).some((n) => n.includes('.tmp-')));
  const last = JSON.parse(readFileSync(join(f.state, 'last-job.json'), 'utf8'));
  assert.equal([last.finished_at, last.device_ok, last.outcome], ['2026-08-30T04:12:30.000Z', true, 'ok']);
  assert.ok(!existsSync(join(f.state, 'job.json')));
  // A second job the same day appends; a job refused at start counts as refused.
  const fork = { ...deps, env: { ...env, GITHUB_EVENT_PATH: event(f, 'mallory/mlir-air', 'acme/mlir-air'), GITHUB_EVENT_NAME: 'pull_request_target', GITHUB_RUN_ID: '100' } };
  assert.is((await started(f, [], fork)).code, 1);
  await agent(['hook', 'job-completed', '--root', f.root, '--dir', dir, '--runner-dir', rd], fork);
  assert.is(readFileSync(join(dir, 'logs/2026-08-30.log'), 'utf8').match(/=== job-completed/g)!.length, 2);
  const second = JSON.parse(readFileSync(join(f.state, 'jobs.ndjson'), 'utf8').trim().split('\n')[1]);
  assert.equal([second.outcome, second.refused, second.run_id], ['refused', 'fork policy probe-only', '100']);
  assert.match(readFileSync(join(f.state, 'npu_block_gate.prom'), 'utf8'), /npu_block_gate_jobs_total\{runner="npu-runner-1",outcome="ok"\} 1\nnpu_block_gate_jobs_total\{runner="npu-runner-1",outcome="refused"\} 1\nnpu_block_gate_jobs_total\{runner="npu-runner-1",outcome="device_failed"\} 0\n/);
});

test('job-completed: a hardware failure during the job drains the runner when the admin enabled it', async () => {
  const gh = await github();
  try {
    const f = fakeRunner();
    const rd = registered(f);
    const tf = tokenFile(f);
    const dir = join(f.base, 'hooks');
    const env = { ...f.env, GITHUB_REPOSITORY: 'acme/mlir-air', GITHUB_RUN_ID: '99' };
    const deps = { ...f.deps, env };
    assert.is((await started(f, [], deps)).code, 0);
    // The job wedged the NPU: the mailbox and a context failed after the job started, and validate fails.
    f.setJournal(journal([LINES.enabling, LINES.load]) + journal([LINES.waitTimeout, LINES.badState, LINES.ctxConnect], '2026-08-30T04:05:00'));
    validateFails(f);
    f.clock.now = new Date('2026-08-30T04:10:00Z');
    // Not enabled: said, not done.
    let r = await agent(['hook', 'job-completed', '--root', f.root, '--dir', dir, '--runner-dir', rd], deps);
    assert.is(r.code, 0);
    assert.match(r.out, /the NPU failed device checks after this job \(kernel-log, functional\); not drained \(hooks install --drain-on-failure does that\)/);
    assert.ok(annotations(r.out).some((a) => a.startsWith('::error title=npu-block-gate%3A kernel-log after the job::fail: journalctl -k -b 0: a management mailbox message timed out (the driver then drops the channel) x1; a hardware context could not connect x1; a mailbox channel is in a bad state x1')), r.out);
    assert.equal(gh.runners[0].labels, ['amdryzenai5pro340']);
    // Enabled: the label goes.
    r = await agent(['hook', 'job-completed', '--root', f.root, '--dir', dir, '--runner-dir', rd, '--drain-on-failure', '--token-file', tf, '--api-url', gh.url], deps);
    assert.is(r.code, 0, r.err);
    assert.match(r.out, /npu-block-gate: drain: removed label amdryzenai5pro340 from runner npu-runner-1 \(id 42\); read back: gone/);
    assert.ok(annotations(r.out).some((a) => a.startsWith('::warning title=npu-block-gate%3A runner drained::')));
    assert.equal(gh.runners[0].labels, []);
    const rec = JSON.parse(readFileSync(join(f.state, 'drain.json'), 'utf8'));
    assert.match(rec.reason, /^hardware failure after acme\/mlir-air run 99: kernel-log: /);
    const line = JSON.parse(readFileSync(join(f.state, 'jobs.ndjson'), 'utf8').trim().split('\n').pop()!);
    assert.equal([line.device_ok, line.failing, line.drained, line.outcome], [false, ['kernel-log', 'functional'], true, 'device_failed']);
    assert.match(readFileSync(join(f.state, 'npu_block_gate.prom'), 'utf8'), /^npu_block_gate_healthy\{runner="npu-runner-1"\} 0$/m);
    assert.match(readFileSync(join(f.state, 'npu_block_gate.prom'), 'utf8'), /^npu_block_gate_drained\{runner="npu-runner-1"\} 1$/m);
    // Once fixed (a reload this boot), undrain puts it back.
    f.setJournal(journal([LINES.enabling, LINES.load]) + journal([LINES.badState, LINES.load], '2026-08-30T04:05:00'));
    restub(f, 'xrt-smi', (a) => (a[0] === 'validate' ? ok(X.VALIDATE_CURRENT_PASS) : ok(X.EXAMINE_CURRENT)));
    f.clock.now = new Date('2026-08-30T04:30:00Z');
    r = await agent(['undrain', '--root', f.root, '--runner-dir', rd, '--token-file', tf, '--api-url', gh.url], f.deps);
    assert.is(r.code, 0, r.err);
    assert.equal(gh.runners[0].labels, ['amdryzenai5pro340']);
    assert.equal(gh.problems, []);
  } finally { await gh.stop(); }
});

test('hooks install --drain-on-failure writes the drain settings into job-completed only', async () => {
  const f = fakeRunner();
  const rd = registered(f);
  const tf = tokenFile(f);
  const dir = join(f.base, 'hooks');
  const self = fakeBundle(f, 'pkg');
  const r = await agent(['hooks', 'install', '--dir', dir, '--runner-dir', rd, '--drain-on-failure', '--token-file', tf, '--label', 'amdryzenai5pro340', '--textfile', join(f.base, 'tc/npu.prom'), '--functional-when', 'always'], { ...f.deps, self });
  assert.is(r.code, 0, r.err);
  const completed = readFileSync(join(dir, 'job-completed.sh'), 'utf8');
  assert.match(completed, new RegExp(` --runner-dir ${rd} --drain-on-failure --token-file ${tf} --label amdryzenai5pro340 --textfile ${join(f.base, 'tc/npu.prom')}\\n`));
  assert.ok(!completed.includes('ghp_admin'), 'the token itself never goes into a shim');
  assert.match(readFileSync(join(dir, 'job-started.sh'), 'utf8'), / --functional-when always /);
  const b = await agent(['hooks', 'install', '--dir', dir, '--drain-on-failure'], { ...f.deps, self });
  assert.is(b.code, 2);
  assert.match(b.err, /^npu-block-gate: error: --drain-on-failure: needs --runner-dir/);
});

test.run();
