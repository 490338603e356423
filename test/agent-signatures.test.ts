// Every kernel-log signature of src/agent/signatures.ts, one test each, on the real text: the line
// the driver prints (test/fixtures/agent/kernel-log.ts names each one's source). Each is classified
// with its severity and its own fix, alone and through the fake host's journal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { classifyKernelLine, scanKernelLog } from '../src/agent/parse.ts';
import { SIGNATURE_IDS, type Severity, type SignatureId } from '../src/agent/signatures.ts';
import type { Check } from '../src/agent/checks.ts';
import { fakeRunner, agent } from './fixtures/agent/fake.ts';
import { BDF, LINES, journal } from './fixtures/agent/kernel-log.ts';

const POWER_CYCLE = /^power-cycle the runner \(a cold boot: mlir-air's CI finds a module reload does not bring the NPU back\), or remove and rescan the NPU's PCI device: echo 1 \| sudo tee \/sys\/bus\/pci\/devices\/0000:c5:00\.1\/remove && echo 1 \| sudo tee \/sys\/bus\/pci\/rescan$/;
const RELOAD = /^reload the driver: sudo modprobe -r amdxdna && sudo modprobe amdxdna; if \/dev\/accel does not come back/;
const MGMT = /^the driver dropped the NPU's management channel, so no hardware context can be created until the module is reloaded: sudo modprobe -r amdxdna && sudo modprobe amdxdna/;
const PROBE = /^npu-block-gate runs the functional probe on it/;

type Case = [line: string, id: SignatureId, severity: Severity, what: RegExp, fix: RegExp];

const CASES: Case[] = [
  [LINES.firmwareDirect, 'firmware-missing', 'fail', /the NPU firmware amdnpu\/17f0_11\/npu\.dev\.sbin could not be loaded \(error -2\)/,
    /^it is not there \(error -2, ENOENT\): install the NPU firmware \/lib\/firmware\/amdnpu\/17f0_11\/npu\.dev\.sbin .*then sudo modprobe -r amdxdna && sudo modprobe amdxdna$/],
  [LINES.firmwareRequestOot, 'firmware-missing', 'fail', /amdnpu\/17f0_11\/npu\.dev\.sbin could not be loaded/, /install the NPU firmware \/lib\/firmware\/amdnpu\/17f0_11\/npu\.dev\.sbin/],
  [LINES.firmwareRequestInTree, 'firmware-missing', 'fail', /amdnpu\/17f0_11\/ could not be loaded/, /install an NPU firmware file in \/lib\/firmware\/amdnpu\/17f0_11\/ \(the driver tries npu\.dev\.sbin, npu_7\.sbin, npu\.sbin\)/],
  [LINES.firmwareTooOld, 'firmware-too-old', 'fail', /protocol 5\.7\) is older than this driver needs \(6\.12\)/, /^install the NPU firmware that matches this amdxdna/],
  [LINES.hypervisor, 'hypervisor', 'host', /inside a virtual machine/, /bare metal/],
  [LINES.accessPower, 'smu-power', 'fail', /Access power failed/, POWER_CYCLE],
  [LINES.accessPowerInTree, 'smu-power', 'fail', /Access power failed/, POWER_CYCLE],
  [LINES.powerCycleFailed, 'power-cycle-failed', 'fail', /in-kernel NPU power-cycle failed/, POWER_CYCLE],
  [LINES.resumeFailed, 'power-cycle-failed', 'fail', /in-kernel NPU power-cycle failed/, POWER_CYCLE],
  [LINES.probeFailed, 'probe-failed', 'fail', /could not probe the NPU/, POWER_CYCLE],
  [LINES.hwInitFailed, 'hw-init-failed', 'fail', /hardware init failed/, POWER_CYCLE],
  [LINES.hwInitFailedOot, 'hw-init-failed', 'fail', /hardware init failed/, POWER_CYCLE],
  [LINES.fwNotAlive, 'fw-not-alive', 'fail', /firmware is not alive/, /^power-cycle the runner .*; if it is not alive after a cold boot either, the firmware may not match this amdxdna: install the NPU firmware that matches it/],
  // issue 28: a failed runtime resume, in-tree and out-of-tree (PR #1458's lines); old formats; a protocol mismatch.
  [LINES.pspNotReady, 'psp-not-ready', 'fail', /PSP\) is not ready/, POWER_CYCLE],
  [LINES.pspNotReadyOot, 'psp-not-ready', 'fail', /PSP\) is not ready/, POWER_CYCLE],
  [LINES.pspStartFailed, 'psp-start-failed', 'fail', /could not be started \(failed to start psp\)/, POWER_CYCLE],
  [LINES.pspStartFailedOot, 'psp-start-failed', 'fail', /failed to start psp/, POWER_CYCLE],
  [LINES.smuTimeout, 'smu-cmd', 'fail', /an SMU command \(3\) timed out/, POWER_CYCLE],
  [LINES.powerOnFailed, 'smu-power-on', 'fail', /could not power the NPU on/, POWER_CYCLE],
  [LINES.powerOnFailedOot, 'smu-power-on', 'fail', /could not power the NPU on/, POWER_CYCLE],
  [LINES.smuInitFailed, 'smu-power-on', 'fail', /could not power the NPU on/, POWER_CYCLE],
  [LINES.startHwFailed, 'resume-failed', 'fail', /did not wake from runtime suspend/, POWER_CYCLE],
  [LINES.resumeIoctlFailed, 'resume-failed', 'fail', /did not wake/, POWER_CYCLE],
  [LINES.resumeFailedOot, 'resume-failed', 'fail', /did not wake/, POWER_CYCLE],
  [LINES.protocolMismatch, 'firmware-protocol', 'fail', /another mailbox protocol/, /^install the NPU firmware that matches this amdxdna .*a power-cycle does not change the firmware$/],
  [LINES.hwInitFailedOld, 'hw-init-failed', 'fail', /hardware init failed/, POWER_CYCLE],
  [LINES.probeOfFailed, 'probe-failed', 'fail', /could not probe the NPU/, POWER_CYCLE],
  [LINES.waitTimeout, 'mgmt-timeout', 'fail', /management mailbox message timed out/, MGMT],
  [LINES.waitTimeoutInTree, 'mgmt-timeout', 'fail', /management mailbox message timed out/, MGMT],
  [LINES.mgmtReleased, 'mgmt-channel-released', 'fail', /management mailbox channel was released/, MGMT],
  [LINES.ctxConnect, 'ctx-connect', 'fail', /hardware context could not connect/, RELOAD],
  [LINES.badState, 'channel-bad-state', 'fail', /mailbox channel is in a bad state/, RELOAD],
  [LINES.badMessageId, 'bad-message-id', 'fail', /bad message ID/, RELOAD],
  [LINES.resetSkipped, 'reset-skipped', 'fail', /wedged again within the in-kernel reset window/, RELOAD],
  [LINES.ioPageFault, 'iommu-fault', 'warn', /IO_PAGE_FAULT/, /^remove and rescan the NPU's PCI device \(a module reload does not bring it back after an IOMMU fault\): echo 1 \| sudo tee \/sys\/bus\/pci\/devices\/0000:c5:00\.1\/remove/],
  [LINES.ioPageFaultSeg, 'iommu-fault', 'warn', /IO_PAGE_FAULT/, /remove and rescan/],
  [LINES.fwCommandFailed, 'fw-command-failed', 'warn', /the NPU firmware refused a command \(create context: ERT not available\)/, PROBE],
  [LINES.hwctxAlloc, 'hwctx-alloc-failed', 'warn', /got no NPU columns/, /another process holding \/dev\/accel/],
  [LINES.hwctxInit, 'hwctx-init-failed', 'warn', /hardware context could not be created/, PROBE],
  [LINES.contextCreate, 'context-create-failed', 'warn', /firmware could not create a context/, PROBE],
  [LINES.tdrTimeout, 'tdr', 'warn', /timed out \(the driver's TDR\)/, PROBE],
  [LINES.noProgress, 'tdr', 'warn', /TDR/, PROBE],
  [LINES.noProgressOot, 'tdr', 'warn', /TDR/, PROBE],
  [LINES.fwTimeoutCapture, 'fw-timeout-capture', 'warn', /timed out in the firmware/, PROBE],
  [LINES.ctxRestartRejected, 'ctx-restart-rejected', 'warn', /rejected a context restart/, PROBE],
  [LINES.svaBind, 'sva-bind-failed', 'host', /no shared virtual addressing/, /turn the IOMMU on/],
  [LINES.pasid, 'pasid-unavailable', 'host', /no PASID/, /turn the IOMMU on with PASID support/],
];

test('every signature in the table has a test with its real line', () => {
  assert.equal([...new Set(CASES.map((c) => c[1]))].sort(), [...SIGNATURE_IDS].sort());
});

for (const [line, id, severity, what, fix] of CASES) {
  test(`signature ${id} (${severity}): ${line.replace(/^amdxdna 0000:c5:00\.1: /, '').slice(0, 70)}`, async () => {
    const hit = classifyKernelLine(line, BDF)!;
    assert.ok(hit, line);
    assert.equal([hit.id, hit.severity], [id, severity]);
    assert.match(hit.what, what);
    assert.match(hit.fix, fix);
    // Through the fake host's journal, after the driver load: the kernel-log check says so, with that fix.
    const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load, line]) });
    const r = await agent(['doctor', '--json', '--root', f.root], f.deps);
    const checks = JSON.parse(r.out).checks as Check[];
    const k = checks.find((c) => c.id === 'kernel-log')!;
    const h = checks.find((c) => c.id === 'kernel-log-host');
    if (severity === 'host') {
      assert.is(k.status, 'ok', k.detail);
      assert.equal([h?.status, h?.scope], ['warn', 'host']);
      assert.match(h!.fix!, fix);
      assert.is(r.code, 0);
    } else {
      assert.is(k.status, severity, k.detail);
      assert.is(k.scope, 'device');
      assert.match(k.fix!, fix);
      assert.ok(k.detail.includes(line), k.detail);
      assert.is(h, undefined);
      assert.is(r.code, severity === 'fail' ? 3 : 0);
    }
  });
}

test('lines that are not a wedge: the driver load, normal channel teardown, and other devices', () => {
  for (const l of [LINES.load, LINES.enabling, LINES.hwReset, LINES.smuCmd, LINES.userReleased, LINES.jobTimedoutReset]) assert.is(classifyKernelLine(l, BDF), null, l);
  // Not the NPU's: never counted, whatever they say.
  for (const l of [LINES.usb, LINES.nvmeTimeout]) assert.is(classifyKernelLine(l, BDF), null, l);
  // The IOMMU's device= forms name the NPU only by its address.
  assert.is(classifyKernelLine(LINES.ioPageFaultBare, BDF)?.id, 'iommu-fault');
  assert.is(classifyKernelLine(LINES.ioPageFaultBare, null), null);
  assert.is(classifyKernelLine(LINES.ioPageFaultSeg, '0000:c6:00.1'), null);
  // Worst first, with counts and the last line of each.
  const s = scanKernelLog([LINES.tdrTimeout, LINES.tdrTimeout, LINES.badMessageId, LINES.accessPower].join('\n'));
  assert.equal(s.found.map((w) => [w.id, w.count]), [['smu-power', 1], ['bad-message-id', 1], ['tdr', 2]]);
});

test('a driver that could not probe the NPU for want of its firmware: the driver and device checks name the file, not a power cycle', async () => {
  const f = fakeRunner({ bound: null, node: false, journal: journal([LINES.enabling, LINES.firmwareDirect, LINES.firmwareRequestOot, LINES.probeFailed.replace('c6:00.1', 'c5:00.1').replace('-22', '-2')]) });
  const r = await agent(['doctor', '--json', '--root', f.root], f.deps);
  const by = (id: string) => (JSON.parse(r.out).checks as Check[]).find((c) => c.id === id)!;
  for (const id of ['kernel-log', 'driver', 'device']) {
    assert.is(by(id).status, 'fail', id);
    assert.match(by(id).fix!, /install the NPU firmware \/lib\/firmware\/amdnpu\/17f0_11\/npu\.dev\.sbin/, id);
    assert.not.match(by(id).fix!, /power-cycle/, id);
  }
  assert.match(by('kernel-log').detail, /the NPU firmware amdnpu\/17f0_11\/npu\.dev\.sbin could not be loaded \(error -2\) x2; the driver could not probe the NPU x1/);
  assert.is(r.code, 3);
});

test.run();
