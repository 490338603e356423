// Issue 18's scenarios on the fake host (test/fixtures/agent/fake.ts), each with the real text the
// drivers and XRT print (test/fixtures/agent/, each line with its source): every wedged NPU makes
// job-started exit non-zero; every host problem leaves it at 0 with a warning naming the fix; the
// hook is bounded in time and in how much kernel log it reads.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Machine } from '../src/agent/machine.ts';
import type { FunctionalRecord } from '../src/agent/state.ts';
import { fakeRunner, agent, ok, restub, type Fake } from './fixtures/agent/fake.ts';
import { LINES, journal, BLIND_JOURNAL, DMESG_RESTRICTED } from './fixtures/agent/kernel-log.ts';
import { dotRunner } from './fixtures/agent/runner.ts';
import * as X from './fixtures/agent/xrt-smi.ts';

const started = (f: Fake, extra: string[] = [], deps = f.deps) => agent(['hook', 'job-started', '--root', f.root, ...extra], deps);
const annotations = (out: string) => out.split('\n').filter((l) => l.startsWith('::'));
const errors = (out: string) => annotations(out).filter((a) => a.startsWith('::error')).map((a) => /title=npu-block-gate%3A ([\w-]+)/.exec(a)![1]);
const warning = (out: string, id: string) => annotations(out).find((a) => a.startsWith(`::warning title=npu-block-gate%3A ${id}::`));
const validates = (f: Fake) => f.calls.filter(([n, a]) => n === 'xrt-smi' && a[0] === 'validate');
const record = (f: Fake) => JSON.parse(readFileSync(join(f.state, 'functional.json'), 'utf8')) as FunctionalRecord;

/** xrt-smi with this validate output (exit 1, as XRT exits on a failed or refused validate). */
function validateSays(f: Fake, out: { stdout?: string; stderr?: string; status?: number | null; error?: string }) {
  restub(f, 'xrt-smi', (a) => {
    if (a[0] !== 'validate') return a[1] === '-r' ? ok(X.PLATFORM_CURRENT) : ok(X.EXAMINE_CURRENT);
    return { status: out.status === undefined ? 1 : out.status, stdout: out.stdout ?? '', stderr: out.stderr ?? '', ...(out.error ? { error: out.error } : {}) };
  });
}

// ---- wedged devices that used to take jobs

test('wedged: a management-mailbox timeout (the driver drops the channel) fails the job, probe or no probe', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load, LINES.waitTimeout, LINES.mgmtReleased]) });
  // With the management channel gone, creating the test's context fails with -ENODEV (aie.c:67-68).
  validateSays(f, { stdout: X.VALIDATE_CREATE_HWCTX_FAIL.replace('(err=-22):', '(err=-19):').replace('Invalid argument', 'No such device') });
  const r = await started(f);
  assert.is(r.code, 1, r.out);
  assert.equal(errors(r.out), ['kernel-log', 'functional']);
  assert.match(r.out, /^  FAIL     kernel-log .*a management mailbox message timed out \(the driver then drops the channel\) x1; the NPU's management mailbox channel was released x1/m);
  // One hang, one fix: the same for both checks.
  const fixes = annotations(r.out).filter((a) => a.startsWith('::error')).map((a) => /\(fix: (.*)\)$/.exec(a)?.[1]);
  assert.is(new Set(fixes).size, 1, fixes.join('\n'));
  assert.match(fixes[0]!, /dropped the NPU's management channel, so no hardware context can be created until the module is reloaded: sudo modprobe -r amdxdna && sudo modprobe amdxdna/);
  // The probe cannot run (a host problem): the signature alone still fails the job.
  const g = fakeRunner({ journal: journal([LINES.enabling, LINES.load, LINES.waitTimeoutInTree]) });
  g.setLimits('8388608', '8388608');
  const s = await started(g);
  assert.is(s.code, 1, s.out);
  assert.equal(errors(s.out), ['kernel-log']);
  assert.ok(warning(s.out, 'functional'), 'the memlock finding is a warning');
});

test('wedged: a hang with no old signature (command opcode 0x2 failed, Alloc hw resource failed, Init hwctx failed) fails the job', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load, LINES.fwCommandFailed, LINES.hwctxAlloc, LINES.hwctxInit]) });
  validateSays(f, { stdout: X.VALIDATE_CREATE_HWCTX_FAIL });
  const r = await started(f);
  assert.is(r.code, 1, r.out);
  // The signatures are warnings (they can be a busy NPU): the probe decides, and it fails on the NPU.
  assert.match(r.out, /^  WARN     kernel-log .*the NPU firmware refused a command \(create context: ERT not available\) x1; a hardware context got no NPU columns x1; a hardware context could not be created x1/m);
  assert.match(r.out, /^  FAIL     functional +xrt-smi validate --run latency failed \(as runner, .*\): DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed \(err=-22\): Invalid argument/m);
  assert.equal(errors(r.out), ['functional']);
  assert.is(record(f).finding, 'device');
});

test('wedged: a hang after an IOMMU IO_PAGE_FAULT: the probe times out (30 s), a device failure with the evidence and the PCI rescan fix', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load, LINES.ioPageFault]) });
  validateSays(f, { status: null, stdout: 'Validate Device           : [0000:c5:00.1]\n    Platform              : RyzenAI-npu5\n', error: 'timed out after 30s' });
  const r = await started(f);
  assert.is(r.code, 1, r.out);
  assert.equal(errors(r.out), ['functional']);
  assert.is(validates(f)[0][2]?.timeoutMs, 30_000);
  assert.match(r.out, /^  FAIL     functional +xrt-smi validate --run latency did not finish in 30s and was killed \(as runner, .*\): the NPU does not answer; its last output: Validate Device .* \| Platform +: RyzenAI-npu5$/m);
  const fix = annotations(r.out).find((a) => a.startsWith('::error title=npu-block-gate%3A functional'))!;
  assert.match(fix, /\(fix: remove and rescan the NPU's PCI device \(a module reload does not bring it back after an IOMMU fault\): echo 1 \| sudo tee \/sys\/bus\/pci\/devices\/0000:c5:00\.1\/remove && echo 1 \| sudo tee \/sys\/bus\/pci\/rescan; else power-cycle the runner\)$/);
  // The kernel-log check gives the same fix for the same hang.
  assert.match(r.out, /^  WARN     kernel-log .*IO_PAGE_FAULT/m);
  assert.is(record(f).finding, 'timeout');
});

test('a warning from a recovered timeout does not stay: the probe runs on it, passes, and clears it for every later job', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load, LINES.tdrTimeout, LINES.fwTimeoutCapture]) });
  let r = await started(f);
  assert.is(r.code, 0, r.out);
  assert.match(r.out, /^  ok       kernel-log .*2 older signature line\(s\) cleared by a passing functional probe/m);
  assert.match(r.out, /^  ok       functional +xrt-smi validate --run latency passed/m);
  assert.is(warning(r.out, 'kernel-log'), undefined);
  // The next job reads the log back to that pass only: clean, no probe, no warning.
  f.clock.now = new Date('2026-08-30T04:03:00Z');
  r = await started(f);
  assert.is(r.code, 0);
  assert.is(annotations(r.out).length, 0, r.out);
  assert.is(validates(f).length, 1);
  // A new warning after the pass: probed again.
  f.setJournal(journal([LINES.enabling, LINES.load, LINES.tdrTimeout]) + journal([LINES.noProgress], '2026-08-30T04:05:00'));
  f.clock.now = new Date('2026-08-30T04:06:00Z');
  r = await started(f);
  assert.is(r.code, 0);
  assert.is(validates(f).length, 2);
  // Older than the interval: probed again even on a clean log.
  f.clock.now = new Date('2026-08-30T04:30:00Z');
  r = await started(f);
  assert.is(validates(f).length, 3);
});

// ---- healthy NPUs that used to be refused for a host problem

test('host: a low memlock and an unreadable journal: exit 0, warnings naming the fixes (mlir-air jobs raise memlock themselves)', async () => {
  const f = fakeRunner();
  restub(f, 'journalctl', () => ({ status: 0, ...BLIND_JOURNAL }));
  restub(f, 'dmesg', () => ({ status: 1, ...DMESG_RESTRICTED }));
  f.setLimits('8388608', '8388608');
  const r = await started(f);
  assert.is(r.code, 0, r.out);
  assert.equal(errors(r.out), []);
  assert.match(warning(r.out, 'functional')!, /failed on the memlock limit \(as runner, memlock soft 8\.0 MiB, hard 8\.0 MiB .*\), not on the NPU: \[xrt-smi\] ERROR: mmap\(.*\) failed \(err=-11\).*\(fix: the hard limit \(8\.0 MiB\) caps every job and this tool: sudo systemctl edit <the runner service> with \[Service\] LimitMEMLOCK=infinity/);
  assert.match(warning(r.out, 'kernel-log')!, /sudo usermod -aG systemd-journal <runner user>/);
  assert.match(r.out, /NPU usable, \d+ warning\(s\) on the job/);
  // The next job in the interval is not refused either (the host finding stands, the NPU is not hammered).
  f.clock.now = new Date('2026-08-30T04:02:00Z');
  const again = await started(f);
  assert.is(again.code, 0);
  assert.match(again.out, /cached: ran at 2026-08-30T04:00:00\.000Z/);
  assert.is(validates(f).length, 1);
});

test('host: XRT 2.19 validate as non-root (SET_STATE err=13): exit 0 with the XRT fix; with --drain-on-failure the label stays', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.usb]) }); // no driver-load line this boot: the log cannot vouch
  validateSays(f, { stderr: X.VALIDATE_SET_STATE_EACCES });
  const r = await started(f);
  assert.is(r.code, 0, r.out);
  assert.equal(errors(r.out), []);
  assert.match(warning(r.out, 'functional')!, /failed on a permission .*not on the NPU: \[xrt-smi\] ERROR: DRM_IOCTL_AMDXDNA_SET_STATE IOCTL failed \(err=13\): Permission denied.*\(fix: XRT 2\.23\.0's xrt-smi validate first sets the NPU's power mode, which only root may: upgrade XRT to 2\.19\.194 or later/);
  assert.not.match(r.out, /wedged/);
  assert.is(record(f).finding, 'permissions');
  // After the job: no device failure, so no drain.
  const d = join(f.base, 'actions-runner');
  mkdirSync(d);
  writeFileSync(join(d, '.runner'), dotRunner({ id: 42, name: 'npu-runner-1', gitHubUrl: 'https://github.com/acme/mlir-air' }));
  writeFileSync(join(d, '.service'), 'actions.runner.acme-mlir-air.npu-runner-1.service\n');
  const c = await agent(['hook', 'job-completed', '--root', f.root, '--dir', join(f.base, 'hooks'), '--runner-dir', d, '--drain-on-failure'], f.deps);
  assert.is(c.code, 0);
  assert.not.match(c.out, /drain/i);
  assert.ok(!f.calls.some(([n]) => n === 'sh' || n === 'sudo'));
  assert.is(f.services['actions.runner.acme-mlir-air.npu-runner-1.service'].state, 'active');
  // The user cannot open the node: the render-group fix, still a warning.
  const g = fakeRunner({ journal: journal([LINES.enabling, LINES.usb]) });
  validateSays(g, { stderr: X.VALIDATE_OPEN_EACCES });
  const s = await started(g);
  assert.is(s.code, 0);
  assert.match(warning(s.out, 'functional')!, /\(fix: runner cannot open \/dev\/accel\/accel0: add it to the node's group \(sudo usermod -aG render runner\), then restart the runner service\)/);
});

test('host: a broken XRT install (no validate archive, no test run, no such test): exit 0 with the install fix, never "the device"', async () => {
  for (const [out, fix] of [
    [{ stdout: X.VALIDATE_NO_ARCHIVE }, /the XRT install lacks xrt-smi's validate archive \(amdxdna\/bins\/xrt_smi_\*\.a, found through XRT's platform path\): reinstall the amdxdna plugin package that matches XRT 2\.23\.0/],
    [{ stdout: X.VALIDATE_NOTHING_RAN, status: 0 }, /run xrt-smi validate --run latency --verbose to see why \(XRT prints nothing for a skipped test\)/],
    [{ stderr: X.VALIDATE_INVALID_TEST }, /this XRT has no "latency" test: pass --functional-test/],
  ] as const) {
    const f = fakeRunner({ journal: journal([LINES.enabling, LINES.usb]) });
    validateSays(f, out);
    const r = await started(f);
    assert.is(r.code, 0, r.out);
    assert.equal(errors(r.out), []);
    const w = warning(r.out, 'functional')!;
    assert.match(w, /failed on the XRT install/);
    assert.match(w, fix);
    assert.is(record(f).finding, 'xrt-install');
  }
});

// ---- bounded

test('bounded: a kernel log over 64 MiB is read as a stream up to the bound (stated), never "unreadable"', async () => {
  const f = fakeRunner();
  const bin = join(f.base, 'bin');
  mkdirSync(bin);
  // A real journalctl on PATH (newest first): a wedge line, 70 MB of other lines, then the driver load.
  writeFileSync(join(bin, 'journalctl'), `#!/bin/sh\necho '2026-08-30T03:59:00.000000+00:00 host kernel: ${LINES.badState}'\nyes '2026-08-30T03:30:00.000000+00:00 host kernel: ${LINES.usb}' | head -c 70000000\necho\necho '2026-08-30T03:00:01.000000+00:00 host kernel: ${LINES.load}'\n`);
  chmodSync(join(bin, 'journalctl'), 0o755);
  delete f.commands.journalctl;
  const deps = { ...f.deps, spawn: true, env: { ...f.env, PATH: `${bin}:/usr/bin:/bin` } };
  const r = await agent(['doctor', '--json', '--root', f.root], deps);
  const k = JSON.parse(r.out).checks.find((c: { id: string }) => c.id === 'kernel-log');
  assert.is(k.status, 'fail', k.detail);
  assert.match(k.detail, /a mailbox channel is in a bad state x1/);
  assert.match(k.detail, /\(64\.0 MiB read newest first, bound 64\.0 MiB\)$/);
  // A clean log over the bound: it cannot vouch (unknown, with the bound stated), and auto probes the NPU.
  writeFileSync(join(bin, 'journalctl'), `#!/bin/sh\nyes '2026-08-30T03:30:00.000000+00:00 host kernel: ${LINES.usb}' | head -c 70000000\n`);
  const s = await started(f, [], deps);
  assert.is(s.code, 0, s.out);
  assert.match(s.out, /^  ok       kernel-log .*the functional probe passed at 2026-08-30T04:00:00\.000Z \(64\.0 MiB read newest first, bound 64\.0 MiB\)$/m);
  assert.is(validates(f).length, 1);
});

test('bounded: Machine.exec kills a command that hangs at its timeout and returns, with what it printed', async () => {
  const m = new Machine({ env: { PATH: '/usr/bin:/bin' } });
  const r = await m.exec('sh', ['-c', 'echo started; exec sleep 30'], { timeoutMs: 300 });
  assert.ok(r.timedOut);
  assert.is(r.status, null);
  assert.match(r.stdout, /^started\n/);
  assert.match(r.error!, /timed out after 0\.3s/);
  // A byte bound stops a long stream; onLine sees the lines, and may stop it early.
  const seen: string[] = [];
  const b = await m.exec('sh', ['-c', 'yes line | head -c 1000000'], { maxBytes: 100, onLine: (l) => { seen.push(l); } });
  assert.ok(b.truncated);
  assert.is(b.bytes, 100);
  assert.is(seen.length, 20);
  const s = await m.exec('sh', ['-c', 'yes x'], { onLine: (l) => l !== 'x' });
  assert.ok(s.stopped);
  const missing = await m.exec('no-such-command-here', []);
  assert.ok(missing.missing);
});

test.run();
