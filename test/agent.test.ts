// The runner agent's doctor, status, cache and lock on a fake machine: a temp root laid out like a
// real NPU host (test/fixtures/agent/fake.ts), the real amdxdna kernel log lines and the xrt-smi
// output of each XRT version (test/fixtures/agent/, each line with its source).
import { ALLOWED as AGENT_ALLOWED } from '../src/agent/cli.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, writeFileSync, readFileSync, rmSync, statSync, chmodSync, chownSync, existsSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../src/cli.ts';
import {
  parseXrtSmi, parseXrtValidate, parseProcLocks, parseMemlock, parseMemlockLimits, parseSize, blindJournal, parsePowerMode,
} from '../src/agent/parse.ts';
import type { Check } from '../src/agent/doctor.ts';
import { fakeRunner, storeThreeKernels as store, agent, sink, ok, restub, limits, procLock, type Fake } from './fixtures/agent/fake.ts';
import { LINES, journal, dmesg, BLIND_JOURNAL, NO_JOURNAL_FILES, DMESG_RESTRICTED } from './fixtures/agent/kernel-log.ts';
import * as X from './fixtures/agent/xrt-smi.ts';

const XRT_SMI = X.EXAMINE_CURRENT;

async function doctorJson(f: Fake, extra: string[] = []) {
  const r = await agent(['doctor', '--json', '--root', f.root, ...extra], f.deps);
  const j = JSON.parse(r.out) as { checks: Check[]; summary: Record<string, number>; exit_code: number };
  const by = (id: string) => j.checks.find((c) => c.id === id)!;
  return { ...r, j, by };
}

const POWER_CYCLE = /^power-cycle the runner \(a cold boot: mlir-air's CI finds a module reload does not bring the NPU back\), or remove and rescan the NPU's PCI device: echo 1 \| sudo tee \/sys\/bus\/pci\/devices\/0000:c5:00\.1\/remove && echo 1 \| sudo tee \/sys\/bus\/pci\/rescan$/;

test('healthy fake runner: every check ok, exit 0', async () => {
  const f = fakeRunner();
  const r = await doctorJson(f);
  assert.is(r.code, 0, r.err);
  assert.equal(r.j.checks.map((c) => [c.id, c.status, c.scope]), [
    ['pci', 'ok', 'device'], ['driver', 'ok', 'device'], ['device', 'ok', 'device'], ['firmware', 'ok', 'device'], ['kernel-log', 'ok', 'device'],
    ['memlock', 'ok', 'host'], ['xrt-smi', 'ok', 'host'],
    ['disk-cache', 'ok', 'host'], ['disk-workspace', 'ok', 'host'], ['hf-cache', 'ok', 'host'], ['python', 'ok', 'host'], ['npu-lock', 'ok', 'host'],
  ]);
  assert.is(r.by('pci').detail, '1022:17f0 rev 11 at 0000:c5:00.1');
  assert.is(r.by('driver').detail, 'amdxdna 2.23.0_20260402, bound to 0000:c5:00.1');
  assert.is(r.by('device').detail, '/dev/accel/accel0 (amdxdna, 0000:c5:00.1)');
  // Device name and firmware from amdxdna's sysfs attributes (vbnv, fw_version): no XRT, no memlock needed.
  assert.is(r.by('firmware').detail, 'RyzenAI-npu5 [0000:c5:00.1], firmware 1.1.2.64');
  // Read newest first back to the driver load, and the bound stated.
  assert.match(r.by('kernel-log').detail, /^journalctl -k -b 0: no wedge signatures in 1 NPU line\(s\) since the driver load \(\d+ B read newest first, bound 64\.0 MiB\)$/);
  assert.match(r.by('xrt-smi').detail, /RyzenAI-npu5 \[0000:c5:00\.1\]; XRT 2\.23\.0, amdxdna 2\.23\.0_20260402, firmware 1\.1\.2\.64/);
  assert.match(r.by('memlock').detail, /soft unlimited, hard unlimited/);
  assert.ok(r.j.checks.every((c) => c.fix === null));
  // No functional probe unless asked.
  assert.ok(!f.calls.some(([n, a]) => n === 'xrt-smi' && a[0] === 'validate'));
  const t = await agent(['doctor', '--root', f.root], f.deps);
  assert.is(t.code, 0);
  assert.match(t.out, /12 ok, 0 warn, 0 fail, 0 unknown\n$/);
  assert.match(t.out, /^  ok       device +\/dev\/accel\/accel0 \(amdxdna, 0000:c5:00\.1\)$/m);
});

test('the doctor tests Python while xrt-smi examine runs (real processes); the checks keep their order and results', async () => {
  const f = fakeRunner();
  try {
    const bin = join(f.base, 'bin');
    mkdirSync(bin);
    const started = join(f.base, 'python-started');
    const examine = join(f.base, 'examine.txt');
    writeFileSync(examine, XRT_SMI);
    const script = (name: string, body: string) => { writeFileSync(join(bin, name), `#!/bin/sh\nPATH=/usr/bin:/bin\n${body}\n`); chmodSync(join(bin, name), 0o755); };
    script('python', `touch ${started}\nprintf '/opt/mlir-air/ironenv/bin/python3\\n3.12.3\\n1.26.4\\n'`);
    // Answers only once Python has started (waiting up to 10 s): a doctor that runs them one after another fails it.
    script('xrt-smi', `i=0\nwhile [ ! -e ${started} ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n[ -e ${started} ] || { echo 'Python has not started' >&2; exit 1; }\ncat ${examine}`);
    delete f.commands['xrt-smi'];
    const deps = { ...f.deps, python: undefined, spawn: true, env: { ...f.env, PATH: bin } };
    const r = await agent(['doctor', '--json', '--root', f.root, '--python', join(bin, 'python')], deps);
    assert.is(r.code, 0, r.out + r.err);
    const j = JSON.parse(r.out) as { checks: Check[] };
    assert.equal(j.checks.map((c) => [c.id, c.status]), [
      ['pci', 'ok'], ['driver', 'ok'], ['device', 'ok'], ['firmware', 'ok'], ['kernel-log', 'ok'], ['memlock', 'ok'], ['xrt-smi', 'ok'],
      ['disk-cache', 'ok'], ['disk-workspace', 'ok'], ['hf-cache', 'ok'], ['python', 'ok'], ['npu-lock', 'ok'],
    ]);
    assert.match(j.checks.find((c) => c.id === 'xrt-smi')!.detail, /^RyzenAI-npu5 \[0000:c5:00\.1\]; XRT 2\.23\.0/);
    assert.is(j.checks.find((c) => c.id === 'python')!.detail, '/opt/mlir-air/ironenv/bin/python3 (Python 3.12.3, numpy 1.26.4; from option)');
  } finally {
    rmSync(f.base, { recursive: true, force: true });
  }
});

test('no NPU on the PCI bus: pci and device fail with the BIOS fix, not a power cycle', async () => {
  const f = fakeRunner({ noNpu: true });
  const r = await doctorJson(f);
  assert.is(r.code, 3);
  assert.is(r.by('pci').status, 'fail');
  assert.match(r.by('pci').detail, /no AMD NPU on the PCI bus \(vendor 1022, device 1502\/17f0\/17f1\/17f2\/17f3\/1b0a\/1b0b\/1b0c\)/);
  assert.match(r.by('pci').fix!, /enable the NPU/);
  assert.is(r.by('device').status, 'fail');
  assert.match(r.by('device').detail, /no NPU on the PCI bus/);
  assert.not.match(r.by('device').fix!, /power-cycle/);
  assert.is(r.by('firmware').status, 'unknown');
});

test('amdxdna not loaded: driver and device say modprobe, not power-cycle', async () => {
  const f = fakeRunner({ module: false, bound: null, node: false });
  const r = await doctorJson(f);
  assert.is(r.code, 3);
  assert.is(r.by('driver').status, 'fail');
  assert.match(r.by('driver').fix!, /^sudo modprobe amdxdna/);
  assert.is(r.by('device').status, 'fail');
  assert.match(r.by('device').detail, /the amdxdna module is not loaded/);
  assert.is(r.by('device').fix, 'sudo modprobe amdxdna');
});

test('amdxdna loaded but the NPU not bound (its probe failed): power-cycle or PCI remove/rescan', async () => {
  const f = fakeRunner({ bound: null, node: false, journal: journal([LINES.enabling, LINES.hwInitFailedOot, LINES.probeFailed.replace('c6:00.1', 'c5:00.1')]) });
  const r = await doctorJson(f);
  assert.is(r.by('driver').status, 'fail');
  assert.match(r.by('driver').detail, /the NPU at 0000:c5:00\.1 is not bound to it: its probe failed/);
  assert.match(r.by('driver').fix!, POWER_CYCLE);
  assert.is(r.by('device').status, 'fail');
  assert.match(r.by('device').fix!, POWER_CYCLE);
  assert.is(r.by('kernel-log').status, 'fail');
  assert.match(r.by('kernel-log').detail, /the driver could not probe the NPU x1; NPU hardware init failed x1/);
});

test('an accel node of another driver does not count; a node sysfs cannot place is unknown', async () => {
  const f = fakeRunner({ bound: 'intel_vpu' });
  const r = await doctorJson(f);
  assert.is(r.by('device').status, 'fail');
  assert.match(r.by('device').detail, /^\/dev\/accel\/accel0 \(intel_vpu\) but no \/dev\/accel node of amdxdna/);
  assert.is(r.by('driver').status, 'fail');
  assert.match(r.by('driver').detail, /bound to intel_vpu, not amdxdna/);
  const g = fakeRunner();
  rmSync(join(g.root, 'sys/class/accel/accel0'), { recursive: true });
  const u = await doctorJson(g);
  assert.is(u.by('device').status, 'unknown');
  assert.match(u.by('device').detail, /sysfs does not say which driver/);
  assert.is(u.code, 0);
});

test('firmware from sysfs: missing attribute is unknown, 0.0.0.0 fails', async () => {
  let r = await doctorJson(fakeRunner({ fwVersion: null }));
  assert.is(r.by('firmware').status, 'unknown');
  assert.match(r.by('firmware').detail, /no fw_version attribute/);
  r = await doctorJson(fakeRunner({ fwVersion: '0.0.0.0' }));
  assert.is(r.by('firmware').status, 'fail');
  assert.match(r.by('firmware').fix!, POWER_CYCLE);
});

test('an in-kernel NPU reset (aie2_hw_reset) counts as recovery; a failed one does not', async () => {
  const before = [LINES.enabling, LINES.load, LINES.waitTimeout, LINES.badState, LINES.jobTimedoutReset, LINES.hwReset];
  let r = await doctorJson(fakeRunner({ journal: journal(before) }));
  assert.is(r.by('kernel-log').status, 'ok');
  // Read newest first, reading stops at the reset: what came before it is not even read.
  assert.match(r.by('kernel-log').detail, /^journalctl -k -b 0: no wedge signatures in 1 NPU line\(s\) since the in-kernel reset \(/);
  assert.is(r.code, 0);
  // dmesg is read whole, oldest first: the same reset clears the two signature lines before it.
  const d = fakeRunner();
  restub(d, 'journalctl', () => ({ status: 0, ...BLIND_JOURNAL }));
  restub(d, 'dmesg', (args) => (args[0] === '--time-format' ? ok(dmesg(before)) : ok('')));
  r = await doctorJson(d);
  assert.is(r.by('kernel-log').status, 'ok');
  assert.match(r.by('kernel-log').detail, /^dmesg: no wedge signatures in 6 NPU line\(s\) since the in-kernel reset; 2 older signature line\(s\) cleared by an in-kernel NPU reset \(aie2_hw_reset\) \(\d+ B read, bound 64\.0 MiB\)$/);
  r = await doctorJson(fakeRunner({ journal: journal([...before, LINES.powerCycleFailed]) }));
  assert.is(r.by('kernel-log').status, 'fail');
  assert.match(r.by('kernel-log').detail, /in-kernel NPU power-cycle failed x1/);
  assert.match(r.by('kernel-log').fix!, POWER_CYCLE);
  // A driver reload clears what came before it.
  r = await doctorJson(fakeRunner({ journal: journal([LINES.waitTimeout, LINES.badState, LINES.load]) }));
  assert.is(r.by('kernel-log').status, 'ok');
  assert.match(r.by('kernel-log').detail, /since the driver load/);
});

test('a blind journal is never ok: unreadable is UNKNOWN with the systemd-journal / dmesg fix', async () => {
  for (const j of [BLIND_JOURNAL, NO_JOURNAL_FILES, { stdout: '-- No entries --\n', stderr: '' }]) {
    const f = fakeRunner();
    restub(f, 'journalctl', () => ({ status: 0, ...j }));
    restub(f, 'dmesg', () => ({ status: 1, ...DMESG_RESTRICTED }));
    const r = await doctorJson(f);
    const k = r.by('kernel-log');
    assert.is(k.status, 'unknown', JSON.stringify(j));
    assert.match(k.detail, /^kernel log unreadable: journalctl -k: .+; dmesg: read kernel buffer failed: Operation not permitted: no wedge can be seen, so none is ruled out$/);
    assert.match(k.fix!, /sudo usermod -aG systemd-journal <runner user>.*sudo sysctl -w kernel\.dmesg_restrict=0/);
    assert.is(r.code, 0);
    const t = await agent(['doctor', '--root', f.root], f.deps);
    assert.match(t.out, /^  UNKNOWN  kernel-log +kernel log unreadable/m);
    assert.match(t.out, /1 unknown\n$/);
  }
  assert.match(blindJournal(BLIND_JOURNAL.stdout, BLIND_JOURNAL.stderr)!, /^You are currently not seeing messages from other users and the system\./);
  assert.is(blindJournal(journal([LINES.load]), ''), null);
  // A journal that shows the kernel lines is not blind, whatever else journalctl warns about.
  assert.is(blindJournal(journal([LINES.load]), 'Warning: some journal files were not opened due to insufficient permissions.\n'), null);
  assert.match(blindJournal('-- No entries --\n', 'Warning: some journal files were not opened due to insufficient permissions.\n')!, /insufficient permissions/);
  // journalctl blind but dmesg readable: the log comes from dmesg, monotonic stamps and all.
  const f = fakeRunner();
  restub(f, 'journalctl', () => ({ status: 0, ...BLIND_JOURNAL }));
  restub(f, 'dmesg', (args) => (args[0] === '--time-format' ? ok(dmesg([LINES.load, LINES.badMessageId])) : ok('')));
  const r = await doctorJson(f);
  assert.is(r.by('kernel-log').status, 'fail');
  assert.match(r.by('kernel-log').detail, /^dmesg: the mailbox got a bad message ID x1/);
});

test('a /dev/accel node with no driver-load line this boot is unknown, not ok', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.usb]) });
  const r = await doctorJson(f);
  assert.is(r.by('kernel-log').status, 'unknown');
  assert.match(r.by('kernel-log').detail, /no amdxdna driver-load line \("\[drm\] Initialized amdxdna_accel_driver"\) this boot/);
  assert.match(r.by('kernel-log').fix!, /doctor --functional/);
  // A passing functional probe this boot vouches for it.
  const p = await doctorJson(f, ['--functional']);
  assert.is(p.by('functional').status, 'ok');
  assert.is(p.by('kernel-log').status, 'ok');
  assert.match(p.by('kernel-log').detail, /no driver-load line this boot, but the functional probe passed at 2026-08-30T04:00:00\.000Z/);
});

test('doctor --functional: xrt-smi validate as the job would run it (its user, its memlock), 30 s timeout, a pass recorded', async () => {
  const f = fakeRunner();
  let r = await doctorJson(f, ['--functional']);
  const fc = r.by('functional');
  assert.is(fc.status, 'ok', fc.detail);
  assert.is(fc.scope, 'device');
  assert.is(fc.detail, "xrt-smi validate --run latency passed: Average latency: 41.2 us (power mode Turbo) [as runner, memlock soft unlimited, hard unlimited (this process's, as the runner's jobs get them)]");
  // Run directly (no prlimit: these are already the limits the runner's jobs get), with its own 30 s timeout.
  const v = f.calls.filter(([n, a]) => n === 'xrt-smi' && a[0] === 'validate');
  assert.equal(v.map(([, a, o]) => [a, o?.timeoutMs]), [[['validate', '--run', 'latency'], 30_000]]);
  assert.ok(!f.calls.some(([n]) => n === 'prlimit'));
  const rec = JSON.parse(readFileSync(join(f.state, 'functional.json'), 'utf8'));
  assert.equal([rec.status, rec.finding, rec.test, rec.boot_id, rec.power_mode, rec.user, rec.last_ok.at], ['ok', 'pass', 'latency', '5f0c1b8e-2d6a-4e1f-9a3b-7c8d9e0f1a2b', 'Turbo', 'runner', '2026-08-30T04:00:00.000Z']);
  // doctor --functional always runs afresh; --functional-timeout and --functional-test reach xrt-smi.
  f.clock.now = new Date('2026-08-30T04:05:00Z');
  r = await doctorJson(f, ['--functional', '--functional-test', 'verify', '--functional-timeout', '12']);
  const last = f.calls.filter(([n, a]) => n === 'xrt-smi' && a[0] === 'validate').pop()!;
  assert.equal(last[1], ['validate', '--run', 'verify']);
  assert.is(last[2]?.timeoutMs, 12_000);
});

test('doctor --functional as root with --runner-dir: as the runner user (setpriv), under the service\'s LimitMEMLOCK (prlimit)', async () => {
  const f = fakeRunner();
  const rd = join(f.base, 'actions-runner');
  mkdirSync(rd);
  writeFileSync(join(rd, '.runner'), '{}');
  writeFileSync(join(rd, '.service'), 'actions.runner.acme-mlir-air.npu-runner-1.service\n');
  // config.sh ran as the runner user: it owns .runner.
  try { chownSync(join(rd, '.runner'), 4321, 1234); } catch {
    console.warn('agent: not root, so .runner cannot be handed to another uid; the setpriv case is not exercised here');
    return;
  }
  mkdirSync(join(f.root, 'etc'), { recursive: true });
  writeFileSync(join(f.root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/bash\nnpu-runner:x:4321:1234::/home/npu-runner:/bin/bash\n');
  // The service gives its jobs 8 MiB: the probe hits the same mmap err=-11 a job would (a host finding, not the NPU).
  f.services['actions.runner.acme-mlir-air.npu-runner-1.service'].limitMemlock = '8388608';
  const r = await doctorJson({ ...f, deps: { ...f.deps, uid: 0 } }, ['--functional', '--runner-dir', rd]);
  const run = f.calls.find(([n]) => n === 'prlimit')!;
  assert.equal(run[1], ['--memlock=8388608:8388608', '--', 'setpriv', '--reuid', '4321', '--regid', '1234', '--init-groups', '--', 'xrt-smi', 'validate', '--run', 'latency']);
  const fc = r.by('functional');
  assert.equal([fc.status, fc.scope], ['warn', 'host']);
  assert.match(fc.detail, /failed on the memlock limit \(as npu-runner, memlock soft 8\.0 MiB, hard 8\.0 MiB \(actions\.runner\.acme-mlir-air\.npu-runner-1\.service's LimitMEMLOCK\)\), not on the NPU: \[xrt-smi\] ERROR: mmap\(.*\) failed \(err=-11\): Resource temporarily unavailable; the NPU itself was not tested$/);
  assert.match(fc.fix!, /^the hard limit \(8\.0 MiB\) caps every job and this tool: sudo systemctl edit actions\.runner\.acme-mlir-air\.npu-runner-1\.service with \[Service\] LimitMEMLOCK=infinity/);
  assert.is(r.code, 0, 'a host finding fails nothing');
});

test('functional probe: a pass clears the wedge signatures logged before it', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load, LINES.waitTimeout, LINES.badState]) });
  let r = await doctorJson(f);
  assert.is(r.by('kernel-log').status, 'fail');
  r = await doctorJson(f, ['--functional']);
  assert.is(r.by('functional').status, 'ok');
  assert.is(r.by('kernel-log').status, 'ok');
  assert.match(r.by('kernel-log').detail, /2 older signature line\(s\) cleared by a passing functional probe \(2026-08-30T04:00:00\.000Z\)/);
  assert.is(r.code, 0);
  // Still cleared later without probing again; a new wedge after the pass fails again.
  r = await doctorJson(f);
  assert.is(r.by('kernel-log').status, 'ok');
  f.setJournal(journal([LINES.enabling, LINES.load, LINES.waitTimeout, LINES.badState]) + journal([LINES.ctxConnect], '2026-08-30T04:30:00'));
  r = await doctorJson(f);
  assert.is(r.by('kernel-log').status, 'fail');
  assert.match(r.by('kernel-log').detail, /a hardware context could not connect x1; last: .*part_ctx_start/);
  // A pass on another boot clears nothing.
  writeFileSync(join(f.root, 'proc/sys/kernel/random/boot_id'), 'another-boot\n');
  f.setJournal(journal([LINES.enabling, LINES.load, LINES.badState]));
  r = await doctorJson(f);
  assert.is(r.by('kernel-log').status, 'fail');
});

test('functional probe failures: the NPU\'s (an ioctl error, a timeout with its evidence) fail; memlock is the host\'s, with the limits in force', async () => {
  const f = fakeRunner();
  restub(f, 'xrt-smi', (a) => (a[0] === 'validate' ? { status: 1, stdout: X.VALIDATE_FAIL, stderr: '' } : ok(XRT_SMI)));
  let r = await doctorJson(f, ['--functional']);
  assert.equal([r.by('functional').status, r.by('functional').scope], ['fail', 'device']);
  assert.is(r.by('functional').detail, "xrt-smi validate --run latency failed (as runner, memlock soft unlimited, hard unlimited (this process's, as the runner's jobs get them)): DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed (err=-5): Input/output error");
  assert.match(r.by('functional').fix!, /^the NPU does not run a command/);
  assert.is(r.code, 3);
  // A hang: xrt-smi is killed at its timeout; the driver's lines from meanwhile are the evidence, and its fix is the one for both checks.
  restub(f, 'xrt-smi', (a) => {
    if (a[0] !== 'validate') return ok(XRT_SMI);
    f.setJournal(journal([LINES.enabling, LINES.load]) + journal([LINES.waitTimeout, LINES.mgmtReleased], '2026-08-30T05:00:05'));
    return { status: null, stdout: 'Validate Device           : [0000:c5:00.1]\n', stderr: '', error: 'timed out after 30s' };
  });
  f.clock.now = new Date('2026-08-30T05:00:00Z');
  r = await doctorJson(f, ['--functional']);
  const fc = r.by('functional');
  assert.equal([fc.status, fc.scope], ['fail', 'device']);
  assert.match(fc.detail, /^xrt-smi validate --run latency did not finish in 30s and was killed \(as runner, .*\): the NPU does not answer; its last output: Validate Device +: \[0000:c5:00\.1\]; the driver logged meanwhile: .*xdna_send_msg_wait: Wait for completion timeout \| .*Mailbox channel released type 0 irq: 112$/);
  assert.is(r.by('kernel-log').status, 'fail');
  assert.is(fc.fix, r.by('kernel-log').fix);
  assert.match(fc.fix!, /dropped the NPU's management channel.*sudo modprobe -r amdxdna && sudo modprobe amdxdna/);
  assert.equal(JSON.parse(readFileSync(join(f.state, 'functional.json'), 'utf8')).finding, 'timeout');
  // A hard memlock limit of 8 MiB: the mmap fails with EAGAIN. That is the host's problem: a warning with the limits and the fix, never a device failure.
  f.setJournal(journal([LINES.enabling, LINES.load]));
  f.setLimits('8388608', '8388608');
  restub(f, 'xrt-smi', (a) => (a[0] === 'validate' ? { status: 1, stdout: '', stderr: X.VALIDATE_MMAP_EAGAIN } : { status: 1, stdout: '', stderr: X.EXAMINE_MMAP_EAGAIN }));
  f.clock.now = new Date('2026-08-30T06:00:00Z');
  r = await doctorJson(f, ['--functional']);
  const m = r.by('functional');
  assert.equal([m.status, m.scope], ['warn', 'host']);
  assert.match(m.detail, /^xrt-smi validate --run latency failed on the memlock limit \(as runner, memlock soft 8\.0 MiB, hard 8\.0 MiB .*\), not on the NPU: \[xrt-smi\] ERROR: mmap\(.*\) failed \(err=-11\): Resource temporarily unavailable; the NPU itself was not tested$/);
  assert.match(m.fix!, /^the hard limit \(8\.0 MiB\) caps every job and this tool: sudo systemctl edit <the runner service> with \[Service\] LimitMEMLOCK=infinity/);
  assert.is(r.code, 0);
  assert.is(r.by('memlock').status, 'warn');
  assert.match(r.by('memlock').detail, /soft 8\.0 MiB, hard 8\.0 MiB/);
  // xrt-smi examine under it names memlock first too, not XRT or the device.
  assert.is(r.by('xrt-smi').status, 'warn');
  assert.match(r.by('xrt-smi').fix!, /^memlock first/);
  // Nothing could be raised (soft == hard): one run, no prlimit.
  assert.ok(!f.calls.some(([n]) => n === 'prlimit'));
  // The runner service's name goes into the fix when --runner-dir names it.
  const rd = join(f.base, 'runner');
  mkdirSync(rd);
  writeFileSync(join(rd, '.service'), 'actions.runner.acme-mlir-air.npu1.service\n');
  f.services['actions.runner.acme-mlir-air.npu1.service'] = { state: 'active', limitMemlock: '8388608' };
  f.clock.now = new Date('2026-08-30T07:00:00Z');
  r = await doctorJson(f, ['--functional', '--runner-dir', rd]);
  assert.match(r.by('functional').fix!, /sudo systemctl edit actions\.runner\.acme-mlir-air\.npu1\.service/);
});

test('functional probe: xrt-smi missing is the XRT install\'s (a warning); XRT 2.17 runs verify; low soft memlock is retried raised, as a job raises it', async () => {
  const f = fakeRunner();
  delete f.commands['xrt-smi'];
  let r = await doctorJson(f, ['--functional']);
  assert.equal([r.by('functional').status, r.by('functional').scope], ['warn', 'host']);
  assert.match(r.by('functional').detail, /^xrt-smi not found/);
  assert.is(r.code, 0);
  const g = fakeRunner();
  g.setLimits('65536', 'unlimited');
  const pass = g.commands['xrt-smi'];
  restub(g, 'xrt-smi', (a, o) => (a[0] === 'validate' ? (pass(a, o).status === 0 ? ok(X.VALIDATE_2_17_PASS) : pass(a, o)) : ok(X.EXAMINE_2_17_OOT)));
  r = await doctorJson(g, ['--functional']);
  // Under the 64 KiB the runner's jobs get it fails on memlock (a host warning); raised to the hard limit it passes: the NPU is fine.
  assert.equal([r.by('functional').status, r.by('functional').scope], ['ok', 'device']);
  assert.match(r.by('functional').detail, /^xrt-smi validate --run verify passed: Average latency: 118\.0 us; Average throughput: 7952\.0 ops \(power mode Default\) \[as runner, memlock soft 64\.0 KiB, hard unlimited .*; then with memlock raised to unlimited, as a job that raises it\]$/);
  assert.equal([r.by('functional-host').status, r.by('functional-host').scope], ['warn', 'host']);
  assert.match(r.by('functional-host').fix!, /^raise it before NPU work: ulimit -l unlimited in the job/);
  assert.equal(g.calls.filter(([n]) => n === 'prlimit').map(([, a]) => a.slice(0, 2)), [['--memlock=unlimited:unlimited', '--']]);
  assert.is(r.code, 0);
});

test('xrt-smi output of XRT 2.17, 2.19 and current: versions, devices, in-tree, memlock', () => {
  assert.equal(parseXrtSmi(X.EXAMINE_2_17), { xrt: '2.17.0', amdxdna: '0.1', amdxdnaHash: null, inTree: true, firmware: null, devices: [{ bdf: '0000:c7:00.1', name: 'RyzenAI-npu1' }], layout: '2.17', memlockError: null });
  assert.equal(parseXrtSmi(X.EXAMINE_2_17_OOT).amdxdna, '2.17.0_20240607');
  assert.equal(parseXrtSmi(X.EXAMINE_2_17_OOT).firmware, '1.5.2.380');
  assert.equal(parseXrtSmi(X.EXAMINE_2_19), { xrt: '2.19.0', amdxdna: '2.19.0_20250330', amdxdnaHash: '7c1d273ef9946848a9f236f1216cfda10d9465cb', inTree: false, firmware: '1.0.0.63', devices: [{ bdf: '0000:67:00.1', name: 'RyzenAI-npu4' }], layout: '2.19', memlockError: null });
  assert.equal(parseXrtSmi(X.EXAMINE_CURRENT), { xrt: '2.23.0', amdxdna: '2.23.0_20260402', amdxdnaHash: '9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d', inTree: false, firmware: '1.1.2.64', devices: [{ bdf: '0000:c5:00.1', name: 'RyzenAI-npu5' }], layout: 'current', memlockError: null });
  const it = parseXrtSmi(X.EXAMINE_CURRENT_IN_TREE);
  assert.equal([it.amdxdna, it.inTree], ['7.0.0-0.rc7.55.fc45.x86_64', true]);
  assert.match(parseXrtSmi(X.EXAMINE_MMAP_EAGAIN).memlockError!, /err=-11/);
  assert.is(parsePowerMode(X.PLATFORM_CURRENT), 'Turbo');
  for (const [text, name, mode] of [[X.VALIDATE_2_17_PASS, 'verify', 'Default'], [X.VALIDATE_2_19_PASS, 'latency', 'Default'], [X.VALIDATE_CURRENT_PASS, 'latency', 'Turbo']] as const) {
    const v = parseXrtValidate(text);
    assert.equal([v.result, v.tests.map((t) => [t.name, t.status]), v.powerMode, v.bdf], ['passed', [[name, 'PASSED']], mode, '0000:c5:00.1']);
  }
  const bad = parseXrtValidate(X.VALIDATE_FAIL);
  assert.equal([bad.result, bad.tests[0].status, bad.tests[0].errors], ['failed', 'FAILED', ['DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed (err=-5): Input/output error']]);
});

test('doctor shows each XRT version\'s driver version (2.17 AMDXDNA, 2.19 amdxdna, current amdxdna Version)', async () => {
  for (const [text, want] of [[X.EXAMINE_2_17_OOT, /XRT 2\.17\.0, amdxdna 2\.17\.0_20240607, firmware 1\.5\.2\.380/], [X.EXAMINE_2_19, /XRT 2\.19\.0, amdxdna 2\.19\.0_20250330, firmware 1\.0\.0\.63/], [X.EXAMINE_CURRENT_IN_TREE, /amdxdna 7\.0\.0-0\.rc7\.55\.fc45\.x86_64 \(in-tree\)/]] as const) {
    const f = fakeRunner();
    restub(f, 'xrt-smi', () => ok(text));
    const r = await doctorJson(f);
    assert.is(r.by('xrt-smi').status, 'ok');
    assert.match(r.by('xrt-smi').detail, want);
  }
});

test('doctor: memlock soft and hard limits', async () => {
  const f = fakeRunner();
  f.setLimits('8388608', 'unlimited');
  const r = await doctorJson(f);
  assert.is(r.by('memlock').status, 'warn');
  assert.match(r.by('memlock').detail, /soft 8\.0 MiB, hard unlimited/);
  assert.match(r.by('memlock').fix!, /^raise it before NPU work: ulimit -l unlimited in the job \(the hard limit allows it, no sudo\), or sudo prlimit -lunlimited --pid \$\$/);
  assert.is(r.code, 0);
  assert.is(parseMemlock(limits('unlimited')), 'unlimited');
  assert.equal(parseMemlockLimits(limits('65536', 'unlimited')), { soft: 65536, hard: 'unlimited' });
  assert.is(parseMemlock('nothing'), null);
});

test('doctor: xrt-smi missing warns; no device listed warns (memlock first when it is low)', async () => {
  const f = fakeRunner();
  delete f.commands['xrt-smi'];
  let r = await doctorJson(f);
  assert.is(r.by('xrt-smi').status, 'warn');
  assert.match(r.by('xrt-smi').fix!, /source \/opt\/xilinx\/xrt\/setup\.sh/);
  assert.is(r.code, 0);
  f.commands['xrt-smi'] = () => ok(XRT_SMI.replace(/\|\[0000.*\n/, ''));
  r = await doctorJson(f);
  assert.is(r.by('xrt-smi').status, 'warn');
  assert.match(r.by('xrt-smi').detail, /no device listed \(XRT 2\.23\.0/);
  f.setLimits('65536', 'unlimited');
  r = await doctorJson(f);
  assert.match(r.by('xrt-smi').fix!, /^memlock first/);
});

test('doctor and status: a held NPU lock names its holder (matched by inode in /proc/locks)', async () => {
  const f = fakeRunner();
  const lock = join(f.root, 'tmp/mlir-air-npu.lock');
  writeFileSync(lock, '');
  const ino = statSync(lock).ino;
  writeFileSync(join(f.root, 'proc/locks'), [
    '1: POSIX  ADVISORY  WRITE 901 00:19:555 0 EOF',
    procLock(lock, 4242, { index: 2 }),
    procLock(lock, 4343, { index: 2, waiting: true }),
    // The same inode number on another device (another mount) is another file: never the NPU lock.
    `3: FLOCK  ADVISORY  WRITE 7777 fd:7f:${ino} 0 EOF`,
  ].join('\n') + '\n');
  mkdirSync(join(f.root, 'proc/4242'));
  writeFileSync(join(f.root, 'proc/4242/cmdline'), 'python3\0llama32_1b_inference.py\0--compile-only\0');
  const r = await doctorJson(f);
  const l = r.by('npu-lock');
  assert.is(l.status, 'warn');
  assert.is(l.detail, '/tmp/mlir-air-npu.lock: held by pid 4242 (python3 llama32_1b_inference.py --compile-only), 1 waiting');
  assert.is(r.code, 0);
  const s = await agent(['status', '--json', '--root', f.root], f.deps);
  assert.match(JSON.parse(s.out).lock.holder, /^held by pid 4242 \(python3 llama32_1b_inference\.py/);
  // The lock file exists but nobody holds it.
  writeFileSync(join(f.root, 'proc/locks'), '');
  assert.is((await doctorJson(f)).by('npu-lock').detail, '/tmp/mlir-air-npu.lock: free');
  assert.equal(parseProcLocks(`7: -> FLOCK  ADVISORY  WRITE 10 08:1f:99 0 EOF\n`), [{ kind: 'FLOCK', mode: 'ADVISORY', access: 'WRITE', pid: 10, major: 8, minor: 31, inode: 99, blocked: true }]);
  // Only the other device's lock on that inode: free.
  writeFileSync(join(f.root, 'proc/locks'), `1: FLOCK  ADVISORY  WRITE 7777 fd:7f:${ino} 0 EOF\n`);
  assert.is((await doctorJson(f)).by('npu-lock').detail, '/tmp/mlir-air-npu.lock: free');
});


test('doctor: the default runner spawns real commands from PATH (a stub xrt-smi executable)', async () => {
  const f = fakeRunner();
  const bin = join(f.root, '..', 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'xrt-smi'), `#!/bin/sh\ncat <<'EOF'\n${XRT_SMI}EOF\n`);
  chmodSync(join(bin, 'xrt-smi'), 0o755);
  delete f.commands['xrt-smi'];
  const r = await doctorJson({ ...f, deps: { ...f.deps, spawn: true, env: { ...f.env, PATH: `${bin}:/usr/bin:/bin` } } });
  assert.is(r.by('xrt-smi').status, 'ok', r.by('xrt-smi').detail);
  assert.match(r.by('xrt-smi').detail, /RyzenAI-npu5/);
});


test('doctor: low disk, offline HF cache missing, and no Python with numpy', async () => {
  const f = fakeRunner();
  rmSync(join(f.home, '.cache'), { recursive: true });
  const r = await doctorJson({
    ...f,
    deps: {
      ...f.deps,
      env: { ...f.env, HF_HUB_OFFLINE: '1' },
      statfs: () => ({ bavail: 1024, bsize: 1024 * 1024, blocks: 1 << 20 }), // 1 GiB free
      python: () => ({ ok: false, why: 'cannot import numpy' }),
    },
  });
  assert.is(r.by('disk-cache').status, 'warn');
  assert.match(r.by('disk-cache').detail, /1\.0 GiB free \(under 5\.0 GiB\)/);
  assert.is(r.by('disk-workspace').status, 'warn');
  assert.is(r.by('hf-cache').status, 'warn');
  assert.match(r.by('hf-cache').detail, /HF_HUB_OFFLINE=1/);
  // The runner's own python3 without numpy only warns (mlir-air builds its venv in the job) ...
  assert.is(r.by('python').status, 'warn');
  assert.match(r.by('python').detail, /no Python with numpy found.*fine when the job builds its own venv/);
  assert.is(r.code, 0);
  // ... a Python named by --python that does not work fails.
  const named = await agent(['doctor', '--json', '--root', f.root, '--python', '/opt/venv/bin/python'], { ...f.deps, python: () => ({ ok: false, why: 'cannot import numpy' }) });
  assert.is(JSON.parse(named.out).checks.find((c: Check) => c.id === 'python').status, 'fail');
  assert.is(named.code, 3);
  // Online, a missing HF cache is fine.
  const online = await doctorJson({ ...f, deps: { ...f.deps } });
  assert.is(online.by('hf-cache').status, 'ok');
});



test('agent cache stats lists entries most recent first with the total', async () => {
  const f = fakeRunner();
  const keys = store(f);
  const r = await agent(['cache', 'stats', '--json'], f.deps);
  assert.is(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.is(j.root, f.cache);
  assert.equal(j.entries.map((e: { key: string }) => e.key), [...keys].reverse());
  assert.is(j.total_bytes, 6000);
  assert.is(j.entries[0].last_used, '2025-06-12T00:00:00.000Z');
  const t = await agent(['cache', 'stats', '--cache-dir', f.cache], {});
  assert.match(t.out, /3 entries, 5\.9 KiB of 20\.0 GiB/);
  assert.match(t.out, /^  key +model +size +created +last used$/m);
  assert.match(t.out, /^  cccccccccccccccc  m2 +2\.9 KiB  2025-06-03 00:00:00Z  2025-06-12 00:00:00Z$/m);
});

test('agent cache gc trims least recently used first and prints what it dropped', async () => {
  const f = fakeRunner();
  const keys = store(f);
  const r = await agent(['cache', 'gc', '--max-bytes', '3500', '--json'], f.deps);
  assert.is(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.equal(j.dropped.map((e: { key: string }) => e.key), [keys[0], keys[1]]);
  assert.is(j.kept, 1);
  assert.is(j.total_bytes, 3000);
  assert.ok(!existsSync(join(f.cache, 'kernels', keys[0])) && existsSync(join(f.cache, 'kernels', keys[2])));
  const again = await agent(['cache', 'gc', '--max-bytes', '1K'], f.deps);
  assert.match(again.out, /dropped 1 \(2\.9 KiB\), kept 0 \(0 B of 1\.0 KiB\)/);
  assert.match(again.out, /cccccccccccccccc  m2/);
  const bad = await agent(['cache', 'gc', '--max-bytes', 'lots'], f.deps);
  assert.is(bad.code, 2);
  assert.match(bad.err, /^npu-block-gate: error: --max-bytes "lots": not a size/);
  assert.is(parseSize('20G'), 20 * 1024 ** 3);
  assert.is(parseSize('1.5GiB'), 1.5 * 1024 ** 3);
  assert.is(parseSize('-1'), null);
});



test('agent status: versions (changed since the last job), power mode, both locks read only, who holds the NPU', async () => {
  const f = fakeRunner();
  store(f);
  const run = join(f.cwd, 'runs/tiny_llama-20250612-031407');
  mkdirSync(run, { recursive: true });
  writeFileSync(join(run, 'report.json'), JSON.stringify({ outcome: 'pass', model: { name: 'tiny_llama' }, created_at: '2025-06-12T03:14:07Z' }));
  // The inner lock (mlir-air's load_and_run) held by a python process; a process holding the accel node.
  const inner = join(f.root, 'tmp/npu.lock');
  writeFileSync(inner, '');
  writeFileSync(join(f.root, 'proc/locks'), procLock(inner, 5150) + '\n');
  for (const pid of ['5150', '777']) {
    mkdirSync(join(f.root, `proc/${pid}/fd`), { recursive: true });
    writeFileSync(join(f.root, `proc/${pid}/cmdline`), pid === '5150' ? 'python3\0llama32_1b_inference.py\0' : 'bash\0');
    symlinkSync(pid === '5150' ? '/dev/accel/accel0' : '/dev/pts/0', join(f.root, `proc/${pid}/fd/7`));
  }
  mkdirSync(join(f.root, 'sys/firmware/acpi'), { recursive: true });
  writeFileSync(join(f.root, 'sys/firmware/acpi/platform_profile'), 'performance\n');
  mkdirSync(f.state, { recursive: true });
  writeFileSync(join(f.state, 'last-job.json'), JSON.stringify({ finished_at: '2026-08-29T22:00:00.000Z', versions: { xrt: '2.21.0', amdxdna: '2.23.0_20260402', firmware: '1.0.0.166' }, device_ok: true }));
  const r = await agent(['status', '--root', f.root], f.deps);
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /^device: +\/dev\/accel\/accel0  RyzenAI-npu5 \[0000:c5:00\.1\]$/m);
  assert.match(r.out, /^driver: +amdxdna 2\.23\.0_20260402$/m);
  assert.match(r.out, /^versions: +XRT 2\.23\.0, amdxdna 2\.23\.0_20260402, firmware 1\.1\.2\.64$/m);
  assert.match(r.out, /^WARNING: +changed since the last job \(2026-08-29T22:00:00\.000Z\): XRT 2\.21\.0 -> 2\.23\.0, firmware 1\.0\.0\.166 -> 1\.1\.2\.64$/m);
  assert.match(r.out, /^power: +Turbo; ACPI platform profile performance$/m);
  assert.match(r.out, /^lock: +\/tmp\/mlir-air-npu\.lock: free +\(whole runs \(mlir-air skills: flock -x -w 1800\); read only\)$/m);
  assert.match(r.out, /^lock: +\/tmp\/npu\.lock: held by pid 5150 \(python3 llama32_1b_inference\.py\) +\(each dispatch/m);
  assert.match(r.out, /^using NPU: pid 5150 python3 llama32_1b_inference\.py  \(\/dev\/accel\/accel0\)$/m);
  assert.match(r.out, /^cache: .*: 3 entries, 5\.9 KiB$/m);
  assert.match(r.out, /^  pass +tiny_llama  .*tiny_llama-20250612-031407$/m);
  // Read only: nothing took a lock (no flock run), the lock files are unchanged.
  assert.ok(!f.calls.some(([n]) => n === 'flock'));
  const j = JSON.parse((await agent(['status', '--json', '--root', f.root], f.deps)).out);
  assert.equal(j.accel_holders, [{ pid: 5150, cmdline: 'python3 llama32_1b_inference.py', node: '/dev/accel/accel0' }]);
  assert.equal(j.versions_changed.map((c: { what: string }) => c.what), ['xrt', 'firmware']);
  assert.equal(j.locks.map((l: { path: string }) => l.path), ['/tmp/mlir-air-npu.lock', '/tmp/npu.lock']);
  assert.is(j.power_mode, 'Turbo');
  assert.ok(r.out.split('\n').length < 20);
});

// ---- lock status | wait

function heldLock(f: Fake, o: { waiters?: number } = {}) {
  const lock = join(f.root, 'tmp/mlir-air-npu.lock');
  writeFileSync(lock, '');
  const lines = [procLock(lock, 4242)];
  for (let i = 0; i < (o.waiters ?? 0); i++) lines.push(procLock(lock, 5000 + i, { waiting: true }));
  writeFileSync(join(f.root, 'proc/locks'), lines.join('\n') + '\n');
  mkdirSync(join(f.root, 'proc/4242'), { recursive: true });
  writeFileSync(join(f.root, 'proc/4242/cmdline'), 'flock\0-x\0-w\x001800\0/tmp/mlir-air-npu.lock\0lit\0');
  return lock;
}

test('lock status: free, then held by a pid with its command line and the waiters', async () => {
  const f = fakeRunner();
  let r = await agent(['lock', 'status', '--root', f.root], f.deps);
  assert.is(r.code, 0, r.err);
  assert.is(r.out, '/tmp/mlir-air-npu.lock: free (no lock file yet); 0 waiting\n');
  heldLock(f, { waiters: 2 });
  r = await agent(['lock', 'status', '--root', f.root], f.deps);
  assert.is(r.out, '/tmp/mlir-air-npu.lock: held by pid 4242 (flock -x -w 1800 /tmp/mlir-air-npu.lock lit); 2 waiting\n');
  const j = JSON.parse((await agent(['lock', 'status', '--json', '--root', f.root], f.deps)).out);
  assert.equal([j.free, j.holder.pid, j.waiters, j.exists], [false, 4242, 2, true]);
  // --path and $NPU_BLOCK_GATE_NPU_LOCK pick another file (free: nobody locks its inode).
  writeFileSync(join(f.root, 'tmp/other.lock'), '');
  r = await agent(['lock', 'status', '--path', '/tmp/other.lock', '--root', f.root], f.deps);
  assert.is(r.out, '/tmp/other.lock: free; 0 waiting\n');
  r = await agent(['lock', 'status', '--root', f.root], { ...f.deps, env: { ...f.env, NPU_BLOCK_GATE_NPU_LOCK: '/tmp/other.lock' } });
  assert.is(r.out, '/tmp/other.lock: free; 0 waiting\n');
});

test('lock wait: returns at once when free; flock -w in 15 s slices with progress, exit 3 on timeout', async () => {
  const f = fakeRunner();
  const calls: string[][] = [];
  f.commands.flock = (args) => { calls.push(args); return { status: 0, stdout: '', stderr: '' }; };
  // No lock file: free without running flock.
  let r = await agent(['lock', 'wait', '--root', f.root], f.deps);
  assert.is(r.code, 0, r.err);
  assert.is(r.out, '/tmp/mlir-air-npu.lock: free\n');
  assert.is(calls.length, 0);
  const lock = heldLock(f);
  r = await agent(['lock', 'wait', '--root', f.root, '--json'], f.deps);
  assert.is(r.code, 0);
  assert.equal(JSON.parse(r.out), { path: '/tmp/mlir-air-npu.lock', free: true, waited_s: 0, method: 'flock', holder: null });
  assert.equal(calls, [['-w', '15', lock, 'true']]);
  // flock times out (exit 1) every slice: 15 + 15 + 10 s, a progress line naming the holder after each full slice.
  calls.length = 0;
  f.commands.flock = (args) => { calls.push(args); return { status: 1, stdout: '', stderr: '' }; };
  r = await agent(['lock', 'wait', '--timeout', '40', '--root', f.root], f.deps);
  assert.is(r.code, 3);
  assert.equal(calls.map((a) => a[1]), ['15', '15', '10']);
  assert.match(r.out, /^waiting for \/tmp\/mlir-air-npu\.lock: held by pid 4242 \(flock -x .*\) \(15s of 40s\)\nwaiting for .*\(30s of 40s\)\n\/tmp\/mlir-air-npu\.lock: still held by pid 4242 .* after 40s \(timeout\)\n$/);
  // A tiny timeout.
  r = await agent(['lock', 'wait', '--timeout', '0.05', '--root', f.root], f.deps);
  assert.is(r.code, 3);
  assert.equal(calls[calls.length - 1], ['-w', '0.05', lock, 'true']);
  const bad = await agent(['lock', 'wait', '--timeout', 'soon'], f.deps);
  assert.is(bad.code, 2);
});

test('lock wait without the flock command polls /proc/locks (no real sleeping)', async () => {
  const f = fakeRunner();
  heldLock(f);
  let slept = 0;
  const sleep = async (ms: number) => {
    slept += ms;
    if (slept >= 20_000) writeFileSync(join(f.root, 'proc/locks'), ''); // the holder exits after 20 s
  };
  const t0 = Date.now();
  let r = await agent(['lock', 'wait', '--root', f.root], { ...f.deps, sleep });
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /^waiting for .*: held by pid 4242 .*\(15s of 1800s\)\n\/tmp\/mlir-air-npu\.lock: free after 20s\n$/);
  heldLock(f);
  slept = -1e9;
  r = await agent(['lock', 'wait', '--timeout', '3', '--json', '--root', f.root], { ...f.deps, sleep });
  assert.is(r.code, 3);
  const j = JSON.parse(r.out);
  assert.equal([j.free, j.method, j.waited_s], [false, 'poll', 3]);
  assert.match(j.holder, /^held by pid 4242/);
  assert.ok(Date.now() - t0 < 1000);
});


test('usage: unknown subcommand, unknown cache command, stray option: exit 2, one line', async () => {
  for (const [args, re] of [
    [['agent', 'bogus'], /unknown agent command "bogus"/],
    [['agent', 'cache', 'wipe'], /unknown cache command "wipe"/],
    [['agent', 'cache'], /agent cache needs stats or gc/],
    [['agent', 'status', '--max-bytes', '1'], /option --max-bytes does not apply to agent status/],
    [['agent', 'doctor', '--frobnicate'], /Unknown option '--frobnicate'/],
    [['agent', 'doctor', 'extra'], /unexpected argument "extra"/],
  ] as [string[], RegExp][]) {
    const out = sink();
    const err = sink();
    const code = await main(args, out.w, err.w);
    assert.is(code, 2, args.join(' '));
    assert.match(err.text, re);
    assert.match(err.text, /^npu-block-gate: error: [^\n]+\n$/);
    assert.is(out.text, '');
  }
});

test('--help: agent, agent --help, help agent, and the top-level help names the agent', async () => {
  for (const args of [['agent'], ['agent', '--help'], ['help', 'agent'], ['agent', 'doctor', '--help'], ['agent', 'cache', '--help']]) {
    const out = sink();
    const code = await main(args, out.w, sink().w);
    assert.is(code, 0, args.join(' '));
    assert.match(out.text, /^npu-block-gate agent: the self-hosted NPU runner side/);
    assert.match(out.text, /agent cache gc \[--max-bytes N\]/);
  }
  const top = sink();
  assert.is(await main(['--help'], top.w, sink().w), 0);
  const line = /npu-block-gate agent ([a-z|]+) /.exec(top.text)?.[1].split('|') ?? [];
  // Every agent command (its first word) is named on the top-level help's agent line; `hook` is what
  // the installed hook scripts run, not a command for people (agent --help lists it).
  for (const cmd of new Set(Object.keys(AGENT_ALLOWED).map((k) => k.split(' ')[0]).filter((c) => c !== 'hook'))) assert.ok(line.includes(cmd), `top-level help lacks agent ${cmd}: ${line.join('|')}`);
});

test.run();
