// Issue 28's agent scenarios on the fake host (test/fixtures/agent/fake.ts), fed the real lines
// (test/fixtures/agent/kernel-log.ts names each line's driver source): a failed wake is a wedge; a
// dmesg clock that stopped in suspend clears nothing; an error line no signature knows has the
// probe run; --when-unknown; job-completed after a failed job; one validate per job on a blind
// journal; a flooded log; an xrt-smi that cannot run is the XRT install, never the NPU.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fakeRunner, agent, ok, restub, type Fake } from './fixtures/agent/fake.ts';
import { LINES, journal, BLIND_JOURNAL, DMESG_RESTRICTED } from './fixtures/agent/kernel-log.ts';
import { dotRunner } from './fixtures/agent/runner.ts';
import * as X from './fixtures/agent/xrt-smi.ts';

const started = (f: Fake, extra: string[] = []) => agent(['hook', 'job-started', '--root', f.root, ...extra], f.deps);
const completed = (f: Fake, extra: string[] = []) => agent(['hook', 'job-completed', '--root', f.root, '--dir', join(f.base, 'hooks'), ...extra], f.deps);
const annotations = (out: string) => out.split('\n').filter((l) => l.startsWith('::'));
const errors = (out: string) => annotations(out).filter((a) => a.startsWith('::error')).map((a) => /title=npu-block-gate%3A ([\w -]+?)::/.exec(a)![1]);
const validates = (f: Fake) => f.calls.filter(([n, a]) => n === 'xrt-smi' && a[0] === 'validate').length;

/** xrt-smi whose validate says this (exit 1 unless given). */
function validateSays(f: Fake, out: { stdout?: string; stderr?: string; status?: number | null }) {
  restub(f, 'xrt-smi', (a) => {
    if (a[0] !== 'validate') return a[1] === '-r' ? ok(X.PLATFORM_CURRENT) : ok(X.EXAMINE_CURRENT);
    return { status: out.status === undefined ? 1 : out.status, stdout: out.stdout ?? '', stderr: out.stderr ?? '' };
  });
}
/** After a failed resume the test's context cannot be created either (Resume failed -> -ETIMEDOUT). */
const RESUME_FAILS = { stdout: X.VALIDATE_CREATE_HWCTX_FAIL };

// ---- a failed wake

for (const [what, lines] of [
  ['PSP', [LINES.pspNotReady, LINES.pspStartFailed, LINES.startHwFailed, LINES.resumeIoctlFailed]],
  ['SMU', [LINES.smuTimeout, LINES.powerOnFailed, LINES.smuInitFailed, LINES.startHwFailed, LINES.resumeIoctlFailed]],
  ['PSP, out-of-tree driver', [LINES.pspNotReadyOot, LINES.pspStartFailedOot, LINES.resumeFailedOot]],
  ['SMU, out-of-tree driver', [LINES.powerOnFailedOot, LINES.resumeFailedOot]],
] as const) {
  test(`a failed ${what} resume after a passing probe makes job-started exit non-zero`, async () => {
    const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load]) });
    let r = await started(f);
    assert.is(r.code, 0, r.out);
    assert.is(validates(f), 1, 'the first job of the boot probes and passes');
    // Two minutes later (inside the 600 s interval) the runtime resume before the next job fails.
    f.setJournal(journal([LINES.enabling, LINES.load]) + journal([...lines], '2026-08-30T04:01:00'));
    f.clock.now = new Date('2026-08-30T04:02:00Z');
    validateSays(f, RESUME_FAILS);
    r = await started(f);
    assert.is(r.code, 1, r.out);
    assert.ok(errors(r.out).includes('kernel-log'), r.out);
    assert.match(r.out, /^  FAIL     kernel-log .*(did not wake from runtime suspend|\(PSP\) is not ready|could not power the NPU on)/m);
    assert.match(r.out, /fix: power-cycle the runner/);
  });
}

test('a dmesg-read host: a mailbox timeout after a 1 h suspend is not cleared by a probe that passed before it', async () => {
  // The journal is blind; dmesg --time-format iso works. Its stamps are boot time plus a clock that
  // stops during suspend: after a 1 h suspend earlier this boot every new line is stamped 1 h early.
  const f = fakeRunner();
  restub(f, 'journalctl', () => ({ status: 0, ...BLIND_JOURNAL }));
  const boot = ['2026-08-30T01:00:00,100000+00:00 ' + LINES.enabling, '2026-08-30T01:00:01,200000+00:00 ' + LINES.load];
  let dmesg = boot;
  restub(f, 'dmesg', (a) => (a.includes('iso') ? ok(dmesg.join('\n') + '\n') : { status: 1, ...DMESG_RESTRICTED }));
  let r = await started(f);
  assert.is(r.code, 0, r.out);
  assert.is(validates(f), 1);
  // 04:05 (true time), five minutes after the pass at 04:00: stamped 03:05.
  dmesg = [...boot, '2026-08-30T03:05:00,000000+00:00 ' + LINES.waitTimeoutInTree];
  f.clock.now = new Date('2026-08-30T04:06:00Z');
  // With the management channel gone, the test's context cannot be created (-ENODEV).
  validateSays(f, { stdout: X.VALIDATE_CREATE_HWCTX_FAIL.replace('(err=-22):', '(err=-19):').replace('Invalid argument', 'No such device') });
  r = await started(f);
  assert.is(r.code, 1, r.out);
  assert.ok(errors(r.out).includes('kernel-log'), r.out);
  assert.match(r.out, /^  FAIL     kernel-log +dmesg: a management mailbox message timed out/m);
});

test('an amdxdna error line no signature explains has the functional probe run before the job is accepted', async () => {
  const f = fakeRunner();
  assert.is((await started(f)).code, 0);
  assert.is(validates(f), 1);
  f.setJournal(journal([LINES.enabling, LINES.load]) + journal([LINES.unknownError], '2026-08-30T04:01:00'));
  f.clock.now = new Date('2026-08-30T04:02:00Z');
  const r = await started(f);
  assert.is(r.code, 0, r.out);
  assert.is(validates(f), 2, 'probed although the last pass is inside the interval');
  // The probe passed: the line is cleared, and the next job does not probe again.
  assert.match(r.out, /^  ok       kernel-log .*cleared by a passing functional probe|^  ok       kernel-log/m);
  f.clock.now = new Date('2026-08-30T04:03:00Z');
  assert.is((await started(f)).code, 0);
  assert.is(validates(f), 2);
  // The same line and a probe that fails: the job is refused.
  f.setJournal(journal([LINES.enabling, LINES.load]) + journal([LINES.unknownError], '2026-08-30T04:04:00'));
  f.clock.now = new Date('2026-08-30T04:05:00Z');
  validateSays(f, { stdout: X.VALIDATE_FAIL });
  const s = await started(f);
  assert.is(s.code, 1, s.out);
  assert.match(s.out, /^  WARN     kernel-log .*1 amdxdna error line\(s\) that no signature explains/m);
});

// ---- --when-unknown

test('--when-unknown: an IO_PAGE_FAULT under an 8 MiB hard memlock cap (the probe cannot test the NPU) is refused by default, run with warnings on request', async () => {
  const mk = () => {
    const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load, LINES.ioPageFault]) });
    f.setLimits('8388608', '8388608');
    return f;
  };
  const f = mk();
  const r = await started(f);
  assert.is(r.code, 1, r.out);
  assert.match(r.out, /::error title=npu-block-gate%3A untestable NPU::the kernel log shows a warning \(.*IO_PAGE_FAULT.*\) and the functional probe could not test the NPU \(.*memlock.*\); --when-unknown refuse/);
  const g = mk();
  const s = await started(g, ['--when-unknown', 'run']);
  assert.is(s.code, 0, s.out);
  assert.match(s.out, /::warning title=npu-block-gate%3A kernel-log::/);
  const bad = await started(g, ['--when-unknown', 'maybe']);
  assert.is(bad.code, 2);
  assert.match(bad.err, /--when-unknown "maybe": refuse or run/);
  // A blind journal alone (no warning signature) is not refused: the probe's host problem is a warning.
  const h = fakeRunner();
  restub(h, 'journalctl', () => ({ status: 0, ...BLIND_JOURNAL }));
  h.setLimits('8388608', '8388608');
  assert.is((await started(h)).code, 0);
});

// ---- job-completed

function runnerWithWorkerLog(f: Fake, log: string | null): string {
  const d = join(f.base, 'actions-runner');
  mkdirSync(join(d, '_diag'), { recursive: true });
  writeFileSync(join(d, '.runner'), dotRunner({ id: 42, name: 'npu-runner-1', gitHubUrl: 'https://github.com/acme/mlir-air' }));
  if (log !== null) writeFileSync(join(d, '_diag', 'Worker_20260830-040000-utc.log'), log);
  return d;
}
// actions/runner's StepsRunner trace: Trace.Info($"Step result: {step.ExecutionContext.Result}").
const WORKER_OK = '[2026-08-30 04:00:10Z INFO StepsRunner] Processing step: DisplayName=\'check\'\n[2026-08-30 04:01:10Z INFO StepsRunner] Step result: Succeeded\n';
const WORKER_FAILED = '[2026-08-30 04:00:10Z INFO StepsRunner] Processing step: DisplayName=\'check\'\n[2026-08-30 04:01:10Z INFO StepsRunner] Step result: Failed\n';
const lastJob = (f: Fake) => JSON.parse(readFileSync(join(f.state, 'jobs.ndjson'), 'utf8').trim().split('\n').pop()!);

test('job-completed after a failed job probes the NPU before writing device_ok; after a job that passed it does not', async () => {
  const f = fakeRunner();
  assert.is((await started(f)).code, 0);
  assert.is(validates(f), 1);
  // The job passed: job-started's probe stands, device_ok from the clean log.
  f.clock.now = new Date('2026-08-30T04:02:00Z');
  let c = await completed(f, ['--runner-dir', runnerWithWorkerLog(f, WORKER_OK)]);
  assert.is(c.code, 0, c.out);
  assert.is(validates(f), 1);
  assert.is(lastJob(f).device_ok, true);
  // The next job failed, with nothing in the kernel log, and the NPU no longer runs a command.
  assert.is((await started(f)).code, 0);
  validateSays(f, { stdout: X.VALIDATE_FAIL });
  c = await completed(f, ['--runner-dir', runnerWithWorkerLog(f, WORKER_FAILED)]);
  assert.is(c.code, 0);
  assert.is(validates(f), 2, 'probed after the failed job');
  assert.match(c.out, /the job failed \(Worker_20260830-040000-utc\.log: .*Step result: Failed\): the functional probe ran before recording the device/);
  assert.is(lastJob(f).device_ok, false);
  assert.equal(lastJob(f).failing, ['functional']);
});

test('a blind journal runs xrt-smi validate once per job, not twice', async () => {
  const f = fakeRunner();
  restub(f, 'journalctl', () => ({ status: 0, ...BLIND_JOURNAL }));
  assert.is((await started(f)).code, 0);
  assert.is(validates(f), 1);
  f.clock.now = new Date('2026-08-30T04:01:00Z');
  assert.is((await completed(f)).code, 0);
  assert.is(validates(f), 1, 'job-completed: the pass of this job vouches');
  f.clock.now = new Date('2026-08-30T04:02:00Z');
  assert.is((await started(f)).code, 0);
  assert.is(validates(f), 2, 'the next job probes again (the log still cannot vouch)');
});

test('job-completed keeps its diagnostics on a flooded log (no "Maximum call stack size exceeded")', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load, ...Array(300_000).fill(LINES.userReleased)], '2026-08-30T03:30:00') });
  f.clock.now = new Date('2026-08-30T04:00:00Z');
  const c = await completed(f);
  assert.is(c.code, 0);
  assert.match(c.out, /diagnostics appended to /);
  assert.not.match(c.out, /call stack/);
});

test('an xrt-smi that cannot run (exit 127), crashes (139) or finds no device is the XRT install, never a device failure', async () => {
  for (const [out, line] of [
    [{ status: 139, stderr: 'Segmentation fault (core dumped)\n' }, /xrt-smi crashed \(exit 139, SIGSEGV\)/],
    [{ status: 127, stderr: 'xrt-smi: error while loading shared libraries: libxrt_coreutil.so.2: cannot open shared object file: No such file or directory\n' }, /cannot open shared object file/],
    [{ status: 127, stderr: '' }, /xrt-smi could not run \(exit 127\)/],
    [{ status: 1, stderr: 'ERROR: Specified device 0000:c5:00.1 not found\n' }, /Specified device 0000:c5:00\.1 not found/],
  ] as const) {
    const f = fakeRunner({ journal: journal([LINES.enabling, LINES.usb]) });
    validateSays(f, out);
    const r = await started(f);
    assert.is(r.code, 0, r.out);
    assert.equal(errors(r.out), []);
    const rec = JSON.parse(readFileSync(join(f.state, 'functional.json'), 'utf8'));
    assert.is(rec.finding, 'xrt-install', rec.detail);
    assert.match(rec.detail, line);
  }
});

test.run();
