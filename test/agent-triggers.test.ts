// Every verdict that sends the functional probe to the NPU (issue 27.4), each with a case that
// fails without it: the kernel log's three ways of not vouching (blind, truncated at the bound, no
// driver-load line this boot), a warning or failure signature, no pass this boot, and the interval
// (a pass older than --functional-max-age; a failure that stands only while younger than it). A
// wedged NPU on a host whose journal the runner cannot read must not take a job on an old pass.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkKernelLog, type KernelLogText } from '../src/agent/klog.ts';
import { probeReason, reusable } from '../src/agent/functional.ts';
import { dev } from '../src/agent/checks.ts';
import { Machine } from '../src/agent/machine.ts';
import { doctorReport } from '../src/agent/doctor.ts';
import type { FunctionalRecord } from '../src/agent/state.ts';
import { fakeRunner, agent, restub, type Fake } from './fixtures/agent/fake.ts';
import { BDF, LINES, journal, BLIND_JOURNAL, DMESG_RESTRICTED } from './fixtures/agent/kernel-log.ts';

const NOW = new Date('2026-08-30T04:00:00Z');
const INTERVAL = 600;
const ago = (s: number) => ({ at: new Date(NOW.getTime() - s * 1000).toISOString(), npu_lines: 2 });
const ok = dev.ok('kernel-log', 'clean');

test('probeReason: a kernel log that cannot vouch sends the probe, even right after a good probe', () => {
  const reason = probeReason({ kernel: dev.unknown('kernel-log', 'kernel log unreadable', 'x'), lastPass: ago(5), now: NOW, intervalS: INTERVAL });
  assert.is(reason, 'the kernel log cannot vouch for the NPU');
});

test('probeReason: a warning or failure signature since the last good probe sends the probe', () => {
  assert.match(probeReason({ kernel: dev.warn('kernel-log', 'TDR', 'x'), lastPass: ago(5), now: NOW, intervalS: INTERVAL })!, 'warning signature');
  assert.match(probeReason({ kernel: dev.fail('kernel-log', 'mailbox', 'x'), lastPass: ago(5), now: NOW, intervalS: INTERVAL })!, 'failure signature');
});

test('probeReason: no good probe this boot sends the probe; a clean log and a fresh pass do not', () => {
  assert.is(probeReason({ kernel: ok, lastPass: null, now: NOW, intervalS: INTERVAL }), 'no functional probe has passed this boot');
  assert.is(probeReason({ kernel: ok, lastPass: ago(5), now: NOW, intervalS: INTERVAL }), null);
});

test('probeReason: the interval, on its line: a pass exactly the interval old stands, one millisecond older does not; a pass from the future does not', () => {
  assert.is(probeReason({ kernel: ok, lastPass: ago(600), now: NOW, intervalS: 600 }), null);
  assert.is(probeReason({ kernel: ok, lastPass: ago(600.001), now: NOW, intervalS: 600 }), 'the last good probe is 600s old (interval 600s)');
  assert.is(probeReason({ kernel: ok, lastPass: ago(0), now: NOW, intervalS: 600 }), null);
  // a clock set back (or a pass recorded ahead of it): no proof of a recent pass
  assert.match(probeReason({ kernel: ok, lastPass: ago(-60), now: NOW, intervalS: 600 })!, 'the last good probe is -60s old');
  assert.match(probeReason({ kernel: ok, lastPass: { at: 'garbage', npu_lines: null }, now: NOW, intervalS: 600 })!, 'the last good probe is');
});

test('reusable: a failure of this boot stands while younger than the interval, not at it, not after a reset, never a pass', () => {
  const rec = (s: number, status: FunctionalRecord['status'] = 'fail', boot = 'b1') => ({ at: ago(s).at, status, boot_id: boot } as FunctionalRecord);
  const o = { boot: 'b1', now: NOW, intervalS: 600, resetSince: false };
  assert.is(reusable(rec(599.999), o), true);
  assert.is(reusable(rec(600), o), false);
  assert.is(reusable(rec(0), o), true);
  assert.is(reusable(rec(-1), o), false);
  assert.is(reusable(rec(10, 'unknown'), o), true);
  assert.is(reusable(rec(10, 'ok'), o), false);
  assert.is(reusable(rec(10, 'fail', 'b0'), o), false, 'another boot');
  assert.is(reusable(rec(10), { ...o, resetSince: true }), false, 'a driver reload or NPU reset since');
  assert.is(reusable(null, o), false);
});

/** A journal read: the NPU's lines, newest-first reading, stopped where given. */
function read(lines: string[], o: Partial<KernelLogText> = {}): KernelLogText {
  return { source: 'journalctl -k -b 0', lines, bytes: 4096, bound: 64 * 1024 ** 2, truncated: false, stop: null, newestFirst: true, readAt: NOW.toISOString(), ...o };
}
const stamped = (msgs: string[], start = '2026-08-30T03:00:00') => journal(msgs, start).trim().split('\n');

test('checkKernelLog: a blind log (unreadable journal and dmesg) cannot vouch', () => {
  const k = checkKernelLog({ error: 'kernel log unreadable: journalctl -k: No journal files were found.; dmesg: read kernel buffer failed: Operation not permitted' }, { bdf: BDF, node: true, cleared: null });
  assert.is(k.check.status, 'unknown');
  assert.match(k.check.detail, 'no wedge can be seen, so none is ruled out');
  // and it cannot vouch after a recent pass either
  assert.is(checkKernelLog({ error: 'kernel log unreadable' }, { bdf: BDF, node: true, cleared: ago(5) }).check.status, 'unknown');
});

test('checkKernelLog: a log truncated at the bound with no reset point in it cannot vouch; a reset point or a pass after the read can', () => {
  const clean = stamped([LINES.enabling, LINES.usb]);
  const t = checkKernelLog(read(clean, { truncated: true }), { bdf: BDF, node: true, cleared: null });
  assert.is(t.check.status, 'unknown', t.check.detail);
  assert.match(t.check.detail, 'the older part was not read, so it cannot vouch for the NPU');
  // the driver load inside the part read: it vouches from there
  const loaded = checkKernelLog(read(stamped([LINES.enabling, LINES.load, LINES.usb]), { truncated: true, stop: 'load' }), { bdf: BDF, node: true, cleared: null });
  assert.is(loaded.check.status, 'ok', loaded.check.detail);
  // a pass that came after the read covers the whole log, beyond the bound too
  const covered = checkKernelLog(read(clean, { truncated: true, readAt: ago(10).at }), { bdf: BDF, node: true, cleared: ago(5) });
  assert.is(covered.check.status, 'ok', covered.check.detail);
  // a pass before the read does not (every line read is newer than it: the bound came first)
  const after = stamped([LINES.enabling, LINES.usb], '2026-08-30T03:59:58');
  const before = checkKernelLog(read(after, { truncated: true, readAt: NOW.toISOString() }), { bdf: BDF, node: true, cleared: ago(5) });
  assert.is(before.check.status, 'unknown', before.check.detail);
});

test('checkKernelLog: NPU lines but no driver-load line this boot cannot vouch; with a pass this boot, or no accel node, it can', () => {
  const lines = stamped([LINES.enabling, LINES.usb]);
  const k = checkKernelLog(read(lines), { bdf: BDF, node: true, cleared: null });
  assert.is(k.check.status, 'unknown', k.check.detail);
  assert.match(k.check.detail, 'no amdxdna driver-load line');
  assert.is(checkKernelLog(read(lines), { bdf: BDF, node: true, cleared: ago(5) }).check.status, 'ok');
  assert.is(checkKernelLog(read(stamped([LINES.enabling, LINES.load, LINES.usb])), { bdf: BDF, node: true, cleared: null }).check.status, 'ok');
  assert.is(checkKernelLog(read(lines), { bdf: BDF, node: false, cleared: null }).check.status, 'ok');
});

// ---- the same triggers through the hook, on the fake host

const started = (f: Fake) => agent(['hook', 'job-started', '--root', f.root], f.deps);
const validates = (f: Fake) => f.calls.filter(([n, a]) => n === 'xrt-smi' && a[0] === 'validate').length;

test('job-started: after a good probe, a journal that turns blind sends the probe again within the interval; a clean one does not', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load]) });
  let r = await started(f);
  assert.is(r.code, 0, r.out);
  assert.is(validates(f), 1, 'no pass this boot yet: probed');
  f.clock.now = new Date('2026-08-30T04:02:00Z');
  r = await started(f);
  assert.is(validates(f), 1, 'clean log, fresh pass: not probed');
  restub(f, 'journalctl', () => ({ status: 0, ...BLIND_JOURNAL }));
  restub(f, 'dmesg', () => ({ status: 1, ...DMESG_RESTRICTED }));
  f.clock.now = new Date('2026-08-30T04:03:00Z');
  r = await started(f);
  assert.is(r.code, 0, r.out);
  assert.is(validates(f), 2, `a blind log on a fresh pass: probed\n${r.out}`);
});

test('job-started: a log over the bound, all of it newer than the last pass, sends the probe again within the interval', async () => {
  const f = fakeRunner({ journal: journal([LINES.enabling, LINES.load]) });
  await started(f);
  assert.is(validates(f), 1);
  // 200 NPU lines after the pass, read newest first with a 4 KiB bound: the read stops before the pass
  f.setJournal(journal([LINES.enabling, LINES.load]) + journal(Array.from({ length: 200 }, () => LINES.enabling), '2026-08-30T04:00:30'));
  f.clock.now = new Date('2026-08-30T04:05:00Z');
  const m = new Machine({ ...f.deps, root: f.root });
  const auto = { functional: 'auto' as const, stateDir: f.state, deviceOnly: true };
  // the whole log read (the 64 MiB bound): the fresh pass stands, no probe
  let rep = await doctorReport(m, auto);
  assert.is(rep.checks.find((c) => c.id === 'kernel-log')!.status, 'ok');
  assert.is(validates(f), 1);
  // a 4 KiB bound: the read stops before it reaches the pass
  rep = await doctorReport(m, { ...auto, kernelLogMaxBytes: 4096 });
  assert.is(validates(f), 2, 'truncated: probed');
  // the probe passed, and its pass (after the read) is what now vouches for the part beyond the bound
  assert.match(rep.checks.find((c) => c.id === 'kernel-log')!.detail, 'the functional probe passed at 2026-08-30T04:05:00.000Z (4.0 KiB read newest first, bound 4.0 KiB)');
  assert.is(rep.checks.find((c) => c.id === 'functional')!.status, 'ok');
});

test.run();
