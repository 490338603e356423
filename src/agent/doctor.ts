// `agent doctor`: health checks of an NPU runner, each {id, status, scope, detail, fix}.
// What the checks look for is in /work/shared/mlir-air.md "How NPU runners run today" and in the
// real sources named in src/agent/parse.ts. Device-scope checks (PCI, driver, node, firmware, an
// unrecovered wedge in this boot's kernel log, the functional probe) are the only ones that fail
// a job in the job-started hook; host-scope ones (memlock, XRT, disk, HF cache, Python, lock) warn.
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { hfHubCache, hfOffline } from '../contract.ts';
import { defaultCacheRoot } from '../cache/kernel.ts';
import { findPython } from '../probe/python.ts';
import { oneLine } from '../errors.ts';
import type { CmdResult, Machine } from './machine.ts';
import {
  blindJournal, compareVersions, formatBytes, memlockError, parseMemlockLimits, parseXrtSmi, parseXrtValidate,
  scanKernelLog, type KernelLogScan, type Limit, type WedgeFix, type XrtInfo,
} from './parse.ts';
import { describeHolder, lockState } from './lock.ts';
import { bootId, defaultStateDir, readJson, STATE_FILES, writeJson, type FunctionalRecord, type Versions } from './state.ts';

export { DEFAULT_NPU_LOCK, npuLockPath, lockState, describeHolder, type LockState } from './lock.ts';

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'unknown';
/** device: the NPU itself (fails a job in the hook); host: the machine around it (a warning in the hook). */
export type CheckScope = 'device' | 'host';

export interface Check {
  id: string;
  status: CheckStatus;
  scope: CheckScope;
  detail: string;
  /** What to do about a warn, fail or unknown; null when ok. */
  fix: string | null;
}

export type FunctionalWhen = 'never' | 'auto' | 'always';

export interface DoctorOptions {
  cacheDir?: string | null;
  workspace?: string | null;
  python?: string | null;
  /** Free-space floor for the cache root and the workspace. */
  minFreeBytes?: number;
  stateDir?: string | null;
  /** never; auto: when the kernel log shows an unrecovered wedge or cannot vouch for the NPU, or the last probe failed; always (doctor --functional). */
  functional?: FunctionalWhen;
  /** The xrt-smi validate test (default: latency on XRT >= 2.18, verify before). */
  functionalTest?: string | null;
  /** A probe result younger than this is reused (rate limit), seconds. */
  functionalMaxAgeS?: number;
  functionalTimeoutS?: number;
  /** Ignore the cached result (undrain). */
  functionalForce?: boolean;
  /** The runner's systemd service (for the memlock fix), when known. */
  service?: string | null;
  /** Only the device checks (and memlock, XRT): the job-completed hook's post-job look. */
  deviceOnly?: boolean;
}

export const MIN_FREE_BYTES = 5 * 1024 ** 3;
export const FUNCTIONAL_MAX_AGE_S = 600;
export const FUNCTIONAL_TIMEOUT_S = 120;
/** mlir-air's nightlyPerfBenchmark.yml: "the NPU driver mmaps ~64MB of locked memory". */
export const MEMLOCK_NEEDED = 64 * 1024 ** 2;
/** amd/xdna-driver drivers/accel/amdxdna/amdxdna_pci_drv.c pci_ids: AMD (1022) NPUs amdxdna drives. */
export const NPU_PCI_DEVICE_IDS = ['1502', '17f0', '17f1', '17f2', '17f3', '1b0a', '1b0b', '1b0c'];

export const RELOAD = 'sudo modprobe -r amdxdna && sudo modprobe amdxdna';
export const powerCycleFix = (bdf: string | null) =>
  `power-cycle the runner (a cold boot: mlir-air's CI finds a module reload does not bring the NPU back), or remove and rescan the NPU's PCI device: echo 1 | sudo tee /sys/bus/pci/devices/${bdf ?? '<bdf>'}/remove && echo 1 | sudo tee /sys/bus/pci/rescan`;
export const RELOAD_FIX = `the NPU is wedged (userspace sees DRM_IOCTL_AMDXDNA_EXEC_CMD err=-5): ${RELOAD}; if /dev/accel does not come back or the log then says "Access power failed", power-cycle the runner`;
export const WATCH_FIX = `if NPU calls then fail with DRM_IOCTL_AMDXDNA_EXEC_CMD err=-5: ${RELOAD}, else power-cycle the runner`;
export const JOURNAL_FIX = 'let the runner user read the kernel log: sudo usermod -aG systemd-journal <runner user> (then restart the runner service), or allow dmesg: sudo sysctl -w kernel.dmesg_restrict=0';

export function fixFor(fix: WedgeFix, bdf: string | null): string {
  return fix === 'power-cycle' ? powerCycleFix(bdf) : fix === 'reload' ? RELOAD_FIX : WATCH_FIX;
}

const mk = (scope: CheckScope) => ({
  ok: (id: string, detail: string): Check => ({ id, status: 'ok', scope, detail, fix: null }),
  warn: (id: string, detail: string, fix: string): Check => ({ id, status: 'warn', scope, detail, fix }),
  fail: (id: string, detail: string, fix: string): Check => ({ id, status: 'fail', scope, detail, fix }),
  unknown: (id: string, detail: string, fix: string): Check => ({ id, status: 'unknown', scope, detail, fix }),
});
const dev = mk('device');
const host = mk('host');

// ---- the NPU on the PCI bus, its driver and its accel node (sysfs: needs neither XRT nor memlock)

export interface Npu {
  bdf: string;
  /** PCI device id, e.g. "17f0". */
  device: string;
  revision: string | null;
  /** The driver bound to it (basename of the driver link), or null. */
  driver: string | null;
  /** amdxdna's sysfs attributes (amdxdna_sysfs.c): the device name and firmware version. */
  vbnv: string | null;
  fwVersion: string | null;
}

const hex = (s: string | null) => s?.trim().replace(/^0x/i, '').toLowerCase() ?? null;

/** The AMD NPUs on the PCI bus; null when /sys/bus/pci/devices cannot be read. */
export function findNpus(m: Machine): Npu[] | null {
  const base = '/sys/bus/pci/devices';
  const all = m.list(base);
  if (!all) return null;
  const out: Npu[] = [];
  for (const bdf of all) {
    const d = `${base}/${bdf}`;
    if (hex(m.read(`${d}/vendor`)) !== '1022') continue;
    const device = hex(m.read(`${d}/device`));
    if (!device || !NPU_PCI_DEVICE_IDS.includes(device)) continue;
    const link = m.readlink(`${d}/driver`);
    out.push({
      bdf, device, revision: hex(m.read(`${d}/revision`)), driver: link ? basename(link) : null,
      vbnv: m.read(`${d}/vbnv`)?.trim() || null, fwVersion: m.read(`${d}/fw_version`)?.trim() || null,
    });
  }
  return out;
}

export interface AccelNode {
  /** /dev/accel/accel0 */
  node: string;
  /** The PCI device behind it (/sys/class/accel/<name>/device), or null when sysfs does not say. */
  bdf: string | null;
  /** Its driver, or null when sysfs does not say. */
  driver: string | null;
}

/** The accel device nodes and what drives them. */
export function accelNodes(m: Machine): AccelNode[] {
  return (m.list('/dev/accel') ?? []).map((name) => {
    const link = m.readlink(`/sys/class/accel/${name}/device`);
    const bdf = link ? basename(link) : null;
    const drv = m.readlink(`/sys/class/accel/${name}/device/driver`) ?? (bdf ? m.readlink(`/sys/bus/pci/devices/${bdf}/driver`) : null);
    return { node: `/dev/accel/${name}`, bdf, driver: drv ? basename(drv) : null };
  });
}

/** The accel device nodes: /dev/accel/accel0 first, then any other entry. */
export function deviceNodes(m: Machine): string[] {
  return accelNodes(m).map((n) => n.node);
}

export function driverVersion(m: Machine): string | null {
  return m.read('/sys/module/amdxdna/version')?.trim() || null;
}

export function checkPci(npus: Npu[] | null): Check {
  if (!npus) return dev.unknown('pci', 'cannot read /sys/bus/pci/devices', 'run on the NPU host itself (a container needs /sys mounted)');
  if (!npus.length) {
    return dev.fail('pci', `no AMD NPU on the PCI bus (vendor 1022, device ${NPU_PCI_DEVICE_IDS.join('/')})`,
      'enable the NPU (some BIOS setups call it IPU) and power-cycle; a host without one cannot take NPU jobs (take its NPU label off)');
  }
  return dev.ok('pci', npus.map((n) => `1022:${n.device}${n.revision ? ` rev ${n.revision}` : ''} at ${n.bdf}`).join(', '));
}

export function checkDriver(m: Machine, npus: Npu[] | null): Check {
  if (!m.exists('/sys/module/amdxdna')) {
    return dev.fail('driver', 'amdxdna module not loaded', 'sudo modprobe amdxdna (in-tree since Linux 6.14; older kernels need amd/xdna-driver\'s xrt_plugin-amdxdna package)');
  }
  const v = driverVersion(m);
  const ver = v ? `amdxdna ${v}` : 'amdxdna (in-tree: no version file)';
  if (npus?.length) {
    const bound = npus.filter((n) => n.driver === 'amdxdna');
    if (!bound.length) {
      const other = npus.find((n) => n.driver);
      const why = other ? `bound to ${other.driver}, not amdxdna` : 'not bound to it: its probe failed (see kernel-log)';
      return dev.fail('driver', `${ver} loaded; the NPU at ${npus[0].bdf} is ${why}`, other ? `unbind ${other.driver} from ${other.bdf}, then ${RELOAD}` : powerCycleFix(npus[0].bdf));
    }
    return dev.ok('driver', `${ver}, bound to ${bound.map((n) => n.bdf).join(', ')}`);
  }
  return dev.ok('driver', `${ver} loaded`);
}

export function checkDevice(m: Machine, npus: Npu[] | null, nodes: AccelNode[]): Check {
  const ours = nodes.filter((n) => n.driver === 'amdxdna');
  const unverified = nodes.filter((n) => n.driver === null);
  if (!ours.length && !unverified.length) {
    const others = nodes.length ? `${nodes.map((n) => `${n.node} (${n.driver})`).join(', ')} but ` : '';
    const base = `${others}no /dev/accel node of amdxdna`;
    if (npus && !npus.length) return dev.fail('device', `${base}: no NPU on the PCI bus`, 'enable the NPU in the BIOS setup, or take this host out of NPU rotation');
    if (!m.exists('/sys/module/amdxdna')) return dev.fail('device', `${base}: the amdxdna module is not loaded`, 'sudo modprobe amdxdna');
    const bdf = npus?.[0]?.bdf ?? null;
    return dev.fail('device', `${base}: the driver could not probe the NPU${bdf ? ` at ${bdf}` : ''}`, powerCycleFix(bdf));
  }
  const use = ours.length ? ours : unverified;
  const denied = use.filter((n) => { try { accessSync(m.path(n.node), constants.R_OK | constants.W_OK); return false; } catch { return true; } });
  const names = use.map((n) => (n.driver ? `${n.node} (amdxdna${n.bdf ? `, ${n.bdf}` : ''})` : n.node)).join(', ');
  if (denied.length === use.length) {
    return host.warn('device', `${names} present but not readable and writable by this user`,
      'add the runner user to the render group (sudo usermod -aG render $USER), then restart the runner service');
  }
  if (!ours.length) return dev.unknown('device', `${names}: sysfs does not say which driver it belongs to (no /sys/class/accel entry)`, 'check readlink /sys/class/accel/accel0/device/driver names amdxdna');
  return dev.ok('device', names);
}

export function checkFirmware(npus: Npu[] | null): Check {
  const n = npus?.find((x) => x.driver === 'amdxdna');
  if (!n) return dev.unknown('firmware', 'no NPU bound to amdxdna: no firmware to ask', 'see driver and device');
  if (!n.fwVersion) return dev.unknown('firmware', `${n.vbnv ?? n.bdf}: the driver exposes no fw_version attribute (an older amdxdna)`, 'xrt-smi examine shows the NPU firmware version');
  if (/^0(\.0)*$/.test(n.fwVersion)) return dev.fail('firmware', `${n.vbnv ?? n.bdf}: firmware reports ${n.fwVersion} (not running)`, powerCycleFix(n.bdf));
  return dev.ok('firmware', `${n.vbnv ?? 'NPU'} [${n.bdf}], firmware ${n.fwVersion}`);
}

// ---- XRT

/** xrt-smi from PATH, else the standard install under the root prefix. */
export function runXrtSmi(m: Machine, args: string[] = ['examine'], timeoutMs?: number): CmdResult {
  let r = m.run('xrt-smi', args, timeoutMs);
  const bundled = '/opt/xilinx/xrt/bin/xrt-smi';
  if (r.missing && m.exists(bundled)) r = m.run(m.path(bundled), args, timeoutMs);
  return r;
}

const MEMLOCK_FIRST = (limits: Limits | null, service: string | null) => `memlock first: ${memlockFix(limits, service)}`;

export function checkXrt(m: Machine, r: CmdResult, limits: Limits | null, service: string | null): Check {
  if (r.missing) return host.warn('xrt-smi', 'xrt-smi not found', 'source /opt/xilinx/xrt/setup.sh (or install XRT) so xrt-smi is on PATH');
  const x = parseXrtSmi(r.stdout + '\n' + r.stderr);
  if (x.memlockError) return host.warn('xrt-smi', `xrt-smi examine: ${oneLine(x.memlockError)}`, MEMLOCK_FIRST(limits, service));
  if (r.status !== 0) {
    const why = r.error ?? (`${r.stderr}\n${r.stdout}`.trim().split('\n').pop() || `exit ${r.status}`);
    return host.warn('xrt-smi', `xrt-smi examine failed: ${oneLine(why)}`, lowMemlock(limits) ? MEMLOCK_FIRST(limits, service) : 'check the XRT install and the amdxdna driver (xrt-smi examine by hand)');
  }
  const versions = [x.xrt && `XRT ${x.xrt}`, x.amdxdna && `amdxdna ${x.amdxdna}${x.inTree ? ' (in-tree)' : ''}`, x.firmware && `firmware ${x.firmware}`].filter(Boolean).join(', ');
  if (!x.devices.length) {
    // Before XRT 2.20 a memlock failure showed only as "0 devices found".
    return host.warn('xrt-smi', `no device listed${versions ? ` (${versions})` : ''}`, lowMemlock(limits) ? MEMLOCK_FIRST(limits, service) : 'XRT sees no NPU: see device and kernel-log');
  }
  const devs = x.devices.map((d) => `${d.name} [${d.bdf}]`).join(', ');
  return host.ok('xrt-smi', `${devs}${versions ? `; ${versions}` : ''}`);
}

// ---- memlock

export interface Limits { soft: Limit; hard: Limit }

export function memlockLimits(m: Machine): Limits | null {
  const text = m.read('/proc/self/limits');
  return text === null ? null : parseMemlockLimits(text);
}

const big = (v: Limit, n = MEMLOCK_NEEDED) => v === 'unlimited' || v >= n;
const lowMemlock = (l: Limits | null) => !!l && !big(l.soft);
const fmtLimit = (v: Limit) => (v === 'unlimited' ? 'unlimited' : formatBytes(v));

export function memlockFix(l: Limits | null, service: string | null): string {
  const svc = service ?? '<the runner service>';
  if (l && !big(l.hard)) {
    return `the hard limit (${fmtLimit(l.hard)}) caps every job and this tool: sudo systemctl edit ${svc} with [Service] LimitMEMLOCK=infinity, then restart it (or sudo prlimit -lunlimited --pid $$ in each job, as mlir-air's CI does)`;
  }
  return `raise it before NPU work: ulimit -l unlimited in the job (the hard limit allows it, no sudo), or sudo prlimit -lunlimited --pid $$ as mlir-air's CI does; for every job: LimitMEMLOCK=infinity in ${svc}`;
}

export function checkMemlock(l: Limits | null, service: string | null): Check {
  if (!l) return host.warn('memlock', 'cannot read "Max locked memory" from /proc/self/limits', memlockFix(null, service));
  const detail = `Max locked memory: soft ${fmtLimit(l.soft)}, hard ${fmtLimit(l.hard)}`;
  if (l.soft === 'unlimited') return host.ok('memlock', detail);
  return host.warn('memlock', `${detail} (the NPU driver maps ~64 MiB locked; XRT fails with mmap err=-11 under it)`, memlockFix(l, service));
}

// ---- the kernel log

export type KernelLog = { text: string; source: string } | { error: string };

/**
 * This boot's kernel log: journalctl -k -b 0 (ISO timestamps), else dmesg (ISO timestamps, else
 * plain). A log the user cannot read (the journal's "not seeing messages" hint, "No journal files
 * were found.", dmesg_restrict) is an error even when the command exits 0.
 */
export function kernelLog(m: Machine, o: { sinceHours?: number } = {}): KernelLog {
  const since = o.sinceHours ? ['--since', `-${o.sinceHours}h`] : [];
  const j = m.run('journalctl', ['-k', '-b', '0', ...since, '--no-pager', '-o', 'short-iso-precise']);
  const jWhy = j.missing ? 'not found' : j.status !== 0 ? (j.error ?? (j.stderr.trim().split('\n').pop() || `exit ${j.status}`)) : blindJournal(j.stdout, j.stderr);
  if (!jWhy) return { text: j.stdout, source: `journalctl -k -b 0${o.sinceHours ? ` (last ${o.sinceHours}h)` : ''}` };
  let d = m.run('dmesg', ['--time-format', 'iso']);
  if (d.status !== 0 && /unrecognized option|invalid option|unknown time format/i.test(d.stderr)) d = m.run('dmesg', []);
  const dWhy = d.missing ? 'not found' : d.status !== 0 ? (d.error ?? (d.stderr.trim().split('\n').pop() || `exit ${d.status}`)) : blindJournal(d.stdout, d.stderr);
  if (!dWhy) return { text: d.stdout, source: 'dmesg' };
  const bare = (why: string) => oneLine(why).replace(/^(dmesg|journalctl):\s*/, '');
  return { error: `kernel log unreadable: journalctl -k: ${bare(jWhy)}; dmesg: ${bare(dWhy)}` };
}

export interface KernelLogCheck { check: Check; scan: KernelLogScan | null }

export function checkKernelLog(log: KernelLog, o: { bdf: string | null; node: boolean; functional: FunctionalRecord | null; boot: string | null }): KernelLogCheck {
  if ('error' in log) return { check: dev.unknown('kernel-log', `${log.error}: no wedge can be seen, so none is ruled out`, JOURNAL_FIX), scan: null };
  const f = o.functional && o.functional.status === 'ok' && o.functional.boot_id && o.functional.boot_id === o.boot ? o.functional : null;
  const scan = scanKernelLog(log.text, { bdf: o.bdf, clearedAt: f ? new Date(f.at) : null, clearedLines: f?.npu_lines ?? null });
  const resetNote = scan.cleared
    ? `; ${scan.cleared} older signature line(s) cleared by ${scan.reset?.kind === 'recovery' ? 'an in-kernel NPU reset (aie2_hw_reset)' : scan.reset?.kind === 'functional' ? `a passing functional probe (${f!.at})` : 'a driver load'}`
    : '';
  if (scan.found.length) {
    const worst = scan.found[0];
    const detail = `${log.source}: ${scan.found.map((w) => `${w.what} x${w.count}`).join('; ')}; last: ${worst.last}${resetNote}`;
    const fix = fixFor(worst.fix, o.bdf);
    return { check: worst.severity === 'fail' ? dev.fail('kernel-log', detail, fix) : dev.warn('kernel-log', detail, fix), scan };
  }
  if (o.node && !scan.loaded) {
    if (f) return { check: dev.ok('kernel-log', `${log.source}: no wedge signatures in ${scan.lines} NPU line(s); no driver-load line this boot, but the functional probe passed at ${f.at}`), scan };
    return {
      check: dev.unknown('kernel-log', `${log.source}: ${scan.lines} NPU line(s) and no amdxdna driver-load line ("[drm] Initialized amdxdna_accel_driver") this boot: the log does not reach back to the driver load, so it cannot vouch for the NPU`,
        'npu-block-gate agent doctor --functional tests the NPU itself; make the journal keep this boot (Storage=persistent, a larger SystemMaxUse)'),
      scan,
    };
  }
  const since = !scan.reset ? 'this boot' : `since the ${scan.reset.kind === 'recovery' ? 'in-kernel reset' : scan.reset.kind === 'functional' ? 'functional pass' : 'driver load'}`;
  return { check: dev.ok('kernel-log', `${log.source}: no wedge signatures in ${scan.lines} NPU line(s) ${since}${resetNote}`), scan };
}

// ---- the functional probe: xrt-smi validate under a raised memlock, with a timeout, rate-limited

export interface FunctionalContext {
  stateDir: string;
  test: string | null;
  xrt: string | null;
  limits: Limits | null;
  maxAgeS: number;
  timeoutS: number;
  force: boolean;
  bdf: string | null;
  npuLines: number | null;
  service: string | null;
}

export const functionalPath = (stateDir: string) => join(stateDir, STATE_FILES.functional);

export function lastFunctional(stateDir: string): FunctionalRecord | null {
  return readJson<FunctionalRecord>(functionalPath(stateDir));
}

/** The xrt-smi validate test: "latency" (XRT >= 2.18), else "verify" (2.17's NPU test, which also measured latency). */
export const defaultFunctionalTest = (xrt: string | null) => (!xrt || compareVersions(xrt, '2.18') >= 0 ? 'latency' : 'verify');

const limitArg = (v: Limit) => (v === 'unlimited' ? 'unlimited' : String(v));

export function checkFunctional(m: Machine, c: FunctionalContext): Check {
  const prev = lastFunctional(c.stateDir);
  const ageS = prev ? (m.now().getTime() - new Date(prev.at).getTime()) / 1000 : Infinity;
  if (prev && !c.force && ageS >= 0 && ageS < c.maxAgeS) {
    return { id: 'functional', status: prev.status, scope: 'device', detail: `${prev.detail} (cached: ran at ${prev.at}, re-runs after ${c.maxAgeS}s)`, fix: prev.fix };
  }
  const test = c.test ?? defaultFunctionalTest(c.xrt);
  const args = ['validate', '--run', test];
  const fallback = ['/opt/xilinx/xrt/bin/xrt-smi'];
  if (!m.has('xrt-smi', fallback)) return { id: 'functional', status: 'unknown', scope: 'device', detail: 'xrt-smi not found: the functional probe needs XRT', fix: 'source /opt/xilinx/xrt/setup.sh (or install XRT) so xrt-smi is on PATH' };
  const exe = m.which('xrt-smi', fallback) ?? 'xrt-smi';
  const timeoutMs = c.timeoutS * 1000;
  // Raise the soft memlock limit to the hard one for xrt-smi (no privilege needed for that).
  const raise = c.limits && c.limits.soft !== c.limits.hard;
  let r = raise ? m.run('prlimit', [`--memlock=${limitArg(c.limits!.hard)}:${limitArg(c.limits!.hard)}`, '--', exe, ...args], { timeoutMs }) : m.run(exe, args, { timeoutMs });
  let note = raise ? ` (memlock raised to ${fmtLimit(c.limits!.hard)})` : '';
  if (raise && r.missing) { r = m.run(exe, args, { timeoutMs }); note = ' (prlimit not found: memlock not raised)'; }
  const cmd = `xrt-smi validate --run ${test}`;
  const effective = raise && !note.includes('not raised') ? c.limits!.hard : c.limits?.soft ?? null;
  const memlockLikely = (out: string) => !!memlockError(out) || (effective !== null && !big(effective));
  const record = (status: Check['status'], detail: string, fix: string | null, power: string | null): Check => {
    const rec: FunctionalRecord = { at: m.now().toISOString(), status, detail, fix, test, boot_id: bootId(m), npu_lines: c.npuLines, power_mode: power };
    try { writeJson(functionalPath(c.stateDir), rec); } catch { /* a read-only state dir: no cache */ }
    return { id: 'functional', status, scope: 'device', detail, fix };
  };
  const out = `${r.stdout}\n${r.stderr}`;
  if (r.status === null && /timed out/.test(r.error ?? '')) {
    return record('fail', `${cmd} did not finish in ${c.timeoutS}s${note}: the NPU does not answer`, memlockLikely(out) ? MEMLOCK_FIRST(c.limits, c.service) + `; then ${RELOAD_FIX}` : RELOAD_FIX, null);
  }
  const v = parseXrtValidate(out);
  const passed = r.status === 0 && (v.result === 'passed' || v.result === 'warning' || (v.result === null && v.tests.length > 0 && v.tests.every((t) => /^PASSED/.test(t.status))));
  const power = v.powerMode;
  if (passed) {
    const details = v.tests.flatMap((t) => t.details).join('; ');
    return record('ok', `${cmd} passed${note}${details ? `: ${details}` : ''}${power ? ` (power mode ${power})` : ''}`, null, power);
  }
  const why = memlockError(out) ?? v.tests.flatMap((t) => t.errors)[0] ?? (r.error || out.trim().split('\n').filter(Boolean).pop() || `exit ${r.status}`);
  const fix = memlockLikely(out) ? `${MEMLOCK_FIRST(c.limits, c.service)}; if it still fails: ${RELOAD_FIX}` : RELOAD_FIX;
  return record('fail', `${cmd} failed${note}: ${oneLine(why)}`, fix, power);
}

// ---- host checks

/** Free bytes where path lives (the nearest existing ancestor: the cache root may not exist yet). */
export function freeBytes(m: Machine, path: string): { path: string; free: number } | null {
  let p = resolve(path);
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  try {
    const s = m.statfs(p);
    return { path: p, free: s.bavail * s.bsize };
  } catch { return null; }
}

export function checkDisk(m: Machine, id: string, label: string, path: string, min: number): Check {
  const f = freeBytes(m, path);
  if (!f) return host.warn(id, `${label} ${path}: cannot stat the file system`, 'check the path exists and is readable');
  const detail = `${label} ${path}: ${formatBytes(f.free)} free`;
  if (f.free < min) return host.warn(id, `${detail} (under ${formatBytes(min)})`, `free space: npu-block-gate agent cache gc --max-bytes 5G, and clear old runs/ and build_peano/ dirs`);
  return host.ok(id, detail);
}

export function checkHfCache(m: Machine): Check {
  const dir = hfHubCache(m.env, m.home());
  const offline = hfOffline(m.env);
  let entries: string[] = [];
  try { entries = readdirSync(dir).filter((n) => !n.startsWith('.')); } catch { /* missing */ }
  if (entries.length) {
    const models = entries.filter((n) => n.startsWith('models--')).length;
    return host.ok('hf-cache', `${dir}: ${models} model(s)${offline ? ' (HF_HUB_OFFLINE=1)' : ''}`);
  }
  if (offline) return host.warn('hf-cache', `${dir} missing or empty and HF_HUB_OFFLINE=1: reference runs cannot load a model`, 'warm the cache once online (huggingface-cli download <model>), or point hooks install --hf-home at the warm cache');
  return host.ok('hf-cache', `${dir} missing or empty (models download on first use)`);
}

/**
 * Python with numpy. The runner's own python3 usually has none (mlir-air builds its venv inside
 * the job), so a missing one only warns; a Python named by --python or $NPU_BLOCK_GATE_PYTHON that
 * does not work fails (host scope: a warning in the job-started hook).
 */
export function checkPython(m: Machine, explicit: string | null): Check {
  try {
    const p = findPython(explicit, m.env, m.python);
    return host.ok('python', `${p.executable} (Python ${p.version}, numpy ${p.numpy}; from ${p.source})`);
  } catch (e) {
    const fix = 'pass --python (hooks install --python) or set NPU_BLOCK_GATE_PYTHON to the mlir-air environment (e.g. /opt/mlir-air/ironenv/bin/python)';
    if (explicit || m.env.NPU_BLOCK_GATE_PYTHON) return host.fail('python', oneLine(e), fix);
    return host.warn('python', `${oneLine(e)} (fine when the job builds its own venv, as mlir-air's CI does)`, fix);
  }
}

export function checkLock(m: Machine): Check {
  const s = lockState(m);
  if (!s.path) return host.ok('npu-lock', 'off (NPU_BLOCK_GATE_NPU_LOCK=none)');
  if (!s.holder) return host.ok('npu-lock', `${s.path}: free${s.exists ? '' : ' (no lock file yet)'}`);
  return host.warn('npu-lock', `${s.path}: ${describeHolder(s)}`, `a run is using the NPU; wait for it (the kernel drops the lock when pid ${s.holder.pid} exits)`);
}

// ---- the whole doctor

export interface DoctorFacts {
  npu: Npu | null;
  nodes: AccelNode[];
  xrt: XrtInfo | null;
  versions: Versions;
  powerMode: string | null;
  kernel: KernelLogScan | null;
  functionalRan: boolean;
}

export interface DoctorReport { checks: Check[]; facts: DoctorFacts }

export function doctorReport(m: Machine, o: DoctorOptions = {}): DoctorReport {
  const min = o.minFreeBytes ?? MIN_FREE_BYTES;
  const cacheRoot = o.cacheDir ?? defaultCacheRoot(m.env);
  const workspace = o.workspace ?? m.env.GITHUB_WORKSPACE ?? m.cwd;
  const stateDir = o.stateDir ?? defaultStateDir(m);
  const service = o.service ?? null;
  const npus = findNpus(m);
  const nodes = accelNodes(m);
  const npu = npus?.find((n) => n.driver === 'amdxdna') ?? npus?.[0] ?? null;
  const limits = memlockLimits(m);
  const xr = runXrtSmi(m);
  const xrt = xr.missing ? null : parseXrtSmi(xr.stdout + '\n' + xr.stderr);
  const boot = bootId(m);
  const log = kernelLog(m);
  const node = nodes.some((n) => n.driver === 'amdxdna' || n.driver === null);
  let kl = checkKernelLog(log, { bdf: npu?.bdf ?? null, node, functional: lastFunctional(stateDir), boot });
  const checks: Check[] = [checkPci(npus), checkDriver(m, npus), checkDevice(m, npus, nodes), checkFirmware(npus), kl.check, checkMemlock(limits, service), checkXrt(m, xr, limits, service)];
  const when = o.functional ?? 'never';
  const prev = lastFunctional(stateDir);
  const wanted = when === 'always' || (when === 'auto' && node && (kl.check.status === 'fail' || kl.check.status === 'unknown' || (prev !== null && prev.status === 'fail')));
  let functionalRan = false;
  if (wanted) {
    const f = checkFunctional(m, {
      stateDir, test: o.functionalTest ?? null, xrt: xrt?.xrt ?? null, limits, maxAgeS: o.functionalMaxAgeS ?? FUNCTIONAL_MAX_AGE_S,
      timeoutS: o.functionalTimeoutS ?? FUNCTIONAL_TIMEOUT_S, force: !!o.functionalForce, bdf: npu?.bdf ?? null, npuLines: kl.scan?.lines ?? null, service,
    });
    functionalRan = true;
    if (f.status === 'ok' && kl.check.status !== 'ok') {
      // A pass clears the signatures logged before it.
      kl = checkKernelLog(log, { bdf: npu?.bdf ?? null, node, functional: lastFunctional(stateDir), boot });
      checks[4] = kl.check;
    }
    checks.push(f);
  }
  if (!o.deviceOnly) checks.push(
    checkDisk(m, 'disk-cache', 'kernel cache', cacheRoot, min),
    checkDisk(m, 'disk-workspace', 'workspace', workspace, min),
    checkHfCache(m),
    checkPython(m, o.python ?? null),
    checkLock(m),
  );
  const lastF = lastFunctional(stateDir);
  const versions: Versions = {
    xrt: xrt?.xrt ?? null,
    amdxdna: driverVersion(m) ?? xrt?.amdxdna ?? null,
    firmware: npu?.fwVersion ?? xrt?.firmware ?? null,
  };
  return { checks, facts: { npu, nodes, xrt, versions, powerMode: lastF?.power_mode ?? null, kernel: kl.scan, functionalRan } };
}

export function doctor(m: Machine, o: DoctorOptions = {}): Check[] {
  return doctorReport(m, o).checks;
}

export function summarize(checks: Check[]): Record<CheckStatus, number> {
  const s = { ok: 0, warn: 0, fail: 0, unknown: 0 };
  for (const c of checks) s[c.status]++;
  return s;
}

/** The device-scope checks that failed: what fails a job in the job-started hook. */
export const deviceFailures = (checks: Check[]) => checks.filter((c) => c.scope === 'device' && c.status === 'fail');

const LABEL: Record<CheckStatus, string> = { ok: 'ok', warn: 'WARN', fail: 'FAIL', unknown: 'UNKNOWN' };

export function renderChecks(checks: Check[], root: string): string {
  const w = Math.max(...checks.map((c) => c.id.length));
  const lines = [`npu-block-gate agent doctor${root === '/' ? '' : ` (root ${root})`}`];
  for (const c of checks) {
    lines.push(`  ${LABEL[c.status].padEnd(7)}  ${c.id.padEnd(w)}  ${c.detail}`);
    if (c.fix) lines.push(`  ${''.padEnd(7)}  ${''.padEnd(w)}  fix: ${c.fix}`);
  }
  const s = summarize(checks);
  lines.push(`${s.ok} ok, ${s.warn} warn, ${s.fail} fail, ${s.unknown} unknown${s.fail ? ': this runner cannot run NPU jobs (exit 3)' : ''}`);
  return lines.join('\n') + '\n';
}

