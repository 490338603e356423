// `agent doctor`: health checks of an NPU runner, each {id, status, scope, detail, fix}.
// What the checks look for is in /work/shared/mlir-air.md "How NPU runners run today"; the kernel
// log signatures and their sources are in src/agent/signatures.ts. Device-scope checks (PCI,
// driver, node, firmware, an unrecovered wedge in this boot's kernel log, the functional probe)
// are the only ones that fail a job in the job-started hook; host-scope ones (memlock, XRT, disk,
// HF cache, Python, lock, a host problem the kernel log or the probe found) warn.
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { hfHubCache, hfOffline } from '../contract.ts';
import { defaultCacheRoot } from '../cache/kernel.ts';
import { findPythonAsync, keptTester } from '../probe/python.ts';
import { oneLine } from '../errors.ts';
import { generationOfName, generationOfPci } from '../npu/generation.ts';
import type { CmdResult, Machine } from './machine.ts';
import { formatBytes, parseXrtSmi, type KernelLogScan, type XrtInfo } from './parse.ts';
import { describeHolder, lockState } from './lock.ts';
import { bootId, defaultStateDir, STATE_FILES, type Versions } from './state.ts';
import { dev, host, summarize, type Check, type CheckStatus } from './checks.ts';
import { checkMemlock, lowMemlock, memlockLimits, MEMLOCK_FIRST, serviceLimits, type Limits } from './memlock.ts';
import { powerCycleFix, RELOAD } from './signatures.ts';
import { checkKernelLog, readKernelLog, resetAfter } from './klog.ts';
import {
  checksFromRecord, FUNCTIONAL_MAX_AGE_S, FUNCTIONAL_TIMEOUT_S, lastFunctional, lastPass, probeReason, reusable, runFunctional, withFix,
} from './functional.ts';
import type { Account } from './runner.ts';

export { DEFAULT_NPU_LOCK, npuLockPath, lockState, describeHolder, type LockState } from './lock.ts';
export { deviceFailures, summarize, type Check, type CheckScope, type CheckStatus } from './checks.ts';
export { FUNCTIONAL_MAX_AGE_S, FUNCTIONAL_TIMEOUT_S } from './functional.ts';

export type FunctionalWhen = 'never' | 'auto' | 'always';

export interface DoctorOptions {
  cacheDir?: string | null;
  workspace?: string | null;
  python?: string | null;
  /** Free-space floor for the cache root and the workspace. */
  minFreeBytes?: number;
  stateDir?: string | null;
  /** never; auto: whenever anything since the last good probe is not a plain ok, or it is older than the interval; always (doctor --functional: a fresh run). */
  functional?: FunctionalWhen;
  /** The xrt-smi validate test (default: latency on XRT >= 2.18, verify before). */
  functionalTest?: string | null;
  /** The interval: a good probe older than this is run again, and a failed result younger than it stands, seconds. */
  functionalMaxAgeS?: number;
  functionalTimeoutS?: number;
  /** The runner's systemd service (the memlock its jobs get, and the memlock fix), when known. */
  service?: string | null;
  /** The user the runner's jobs run as (the probe runs as it when this process is root). */
  runnerAccount?: Account | null;
  /** Only the device checks (and memlock, XRT): the job-completed hook's post-job look. */
  deviceOnly?: boolean;
  /** How much of the kernel log to read at most. */
  kernelLogMaxBytes?: number;
  /** A pass younger than the interval vouches for a log that cannot (job-completed after a job that did not fail). */
  recentPassVouches?: boolean;
}

const MIN_FREE_BYTES = 5 * 1024 ** 3;
/** amd/xdna-driver drivers/accel/amdxdna/amdxdna_pci_drv.c:88-95 pci_ids: AMD (1022) NPUs amdxdna drives. */
const NPU_PCI_DEVICE_IDS = ['1502', '17f0', '17f1', '17f2', '17f3', '1b0a', '1b0b', '1b0c'];
/** The NPU generation id (src/npu/generation.ts: contract.json's table, shared with the probe and the
 * records): from the driver's vbnv ("RyzenAI-npu5"), else from the PCI device and revision; the CPU
 * model tells Hawk Point from Phoenix. */
export function npuGeneration(n: { device: string; revision: string | null; vbnv: string | null } | null, cpu: string | null = null): string | null {
  if (!n) return null;
  return (generationOfName(n.vbnv, cpu) ?? generationOfPci(n.device, n.revision, cpu))?.id ?? null;
}

/** /proc/cpuinfo's first model name (e.g. "AMD Ryzen 7 8845HS w/ Radeon 780M Graphics"), or null. */
export function cpuModel(m: Machine): string | null {
  return /^model name\s*:\s*(.+)$/m.exec(m.read('/proc/cpuinfo') ?? '')?.[1].trim() ?? null;
}

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

interface AccelNode {
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

export function driverVersion(m: Machine): string | null {
  return m.read('/sys/module/amdxdna/version')?.trim() || null;
}

function checkPci(npus: Npu[] | null): Check {
  if (!npus) return dev.unknown('pci', 'cannot read /sys/bus/pci/devices', 'run on the NPU host itself (a container needs /sys mounted)');
  if (!npus.length) {
    return dev.fail('pci', `no AMD NPU on the PCI bus (vendor 1022, device ${NPU_PCI_DEVICE_IDS.join('/')})`,
      'enable the NPU (some BIOS setups call it IPU) and power-cycle; a host without one cannot take NPU jobs (take its NPU label off)');
  }
  return dev.ok('pci', npus.map((n) => `1022:${n.device}${n.revision ? ` rev ${n.revision}` : ''} at ${n.bdf}`).join(', '));
}

function checkDriver(m: Machine, npus: Npu[] | null, explained: string | null = null): Check {
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
      return dev.fail('driver', `${ver} loaded; the NPU at ${npus[0].bdf} is ${why}`, other ? `unbind ${other.driver} from ${other.bdf}, then ${RELOAD}` : explained ?? powerCycleFix(npus[0].bdf));
    }
    return dev.ok('driver', `${ver}, bound to ${bound.map((n) => n.bdf).join(', ')}`);
  }
  return dev.ok('driver', `${ver} loaded`);
}

function checkDevice(m: Machine, npus: Npu[] | null, nodes: AccelNode[], explained: string | null = null): Check {
  const ours = nodes.filter((n) => n.driver === 'amdxdna');
  const unverified = nodes.filter((n) => n.driver === null);
  if (!ours.length && !unverified.length) {
    const others = nodes.length ? `${nodes.map((n) => `${n.node} (${n.driver})`).join(', ')} but ` : '';
    const base = `${others}no /dev/accel node of amdxdna`;
    if (npus && !npus.length) return dev.fail('device', `${base}: no NPU on the PCI bus`, 'enable the NPU in the BIOS setup, or take this host out of NPU rotation');
    if (!m.exists('/sys/module/amdxdna')) return dev.fail('device', `${base}: the amdxdna module is not loaded`, 'sudo modprobe amdxdna');
    const bdf = npus?.[0]?.bdf ?? null;
    return dev.fail('device', `${base}: the driver could not probe the NPU${bdf ? ` at ${bdf}` : ''}`, explained ?? powerCycleFix(bdf));
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

function checkFirmware(npus: Npu[] | null): Check {
  const n = npus?.find((x) => x.driver === 'amdxdna');
  if (!n) return dev.unknown('firmware', 'no NPU bound to amdxdna: no firmware to ask', 'see driver and device');
  if (!n.fwVersion) return dev.unknown('firmware', `${n.vbnv ?? n.bdf}: the driver exposes no fw_version attribute (an older amdxdna)`, 'xrt-smi examine shows the NPU firmware version');
  if (/^0(\.0)*$/.test(n.fwVersion)) return dev.fail('firmware', `${n.vbnv ?? n.bdf}: firmware reports ${n.fwVersion} (not running)`, powerCycleFix(n.bdf));
  return dev.ok('firmware', `${n.vbnv ?? 'NPU'} [${n.bdf}], firmware ${n.fwVersion}`);
}

// ---- XRT

const XRT_SMI_INSTALLED = '/opt/xilinx/xrt/bin/xrt-smi';

/** xrt-smi from PATH, else the standard install under the root prefix. */
export function runXrtSmi(m: Machine, args: string[] = ['examine'], timeoutMs?: number): CmdResult {
  let r = m.run('xrt-smi', args, timeoutMs);
  if (r.missing && m.exists(XRT_SMI_INSTALLED)) r = m.run(m.path(XRT_SMI_INSTALLED), args, timeoutMs);
  return r;
}

/** runXrtSmi without blocking (the doctor's Python check runs meanwhile); its process group goes at the timeout. */
async function execXrtSmi(m: Machine, args: string[] = ['examine'], timeoutMs?: number): Promise<CmdResult> {
  let r: CmdResult = await m.exec('xrt-smi', args, { timeoutMs });
  if (r.missing && m.exists(XRT_SMI_INSTALLED)) r = await m.exec(m.path(XRT_SMI_INSTALLED), args, { timeoutMs });
  return r;
}

function checkXrt(m: Machine, r: CmdResult, limits: Limits | null, service: string | null): Check {
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

// ---- host checks

/** Free bytes where path lives (the nearest existing ancestor: the cache root may not exist yet). */
function freeBytes(m: Machine, path: string): { path: string; free: number } | null {
  let p = resolve(path);
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  try {
    const s = m.statfs(p);
    return { path: p, free: s.bavail * s.bsize };
  } catch { return null; }
}

function checkDisk(m: Machine, id: string, label: string, path: string, min: number): Check {
  const f = freeBytes(m, path);
  if (!f) return host.warn(id, `${label} ${path}: cannot stat the file system`, 'check the path exists and is readable');
  const detail = `${label} ${path}: ${formatBytes(f.free)} free`;
  if (f.free < min) return host.warn(id, `${detail} (under ${formatBytes(min)})`, `free space: npu-block-gate agent cache gc --max-bytes 5G, and clear old runs/ and build_peano/ dirs`);
  return host.ok(id, detail);
}

function checkHfCache(m: Machine): Check {
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
export async function checkPython(m: Machine, explicit: string | null, stateDir: string | null = null): Promise<Check> {
  try {
    // A Python that passed before is not started again while it and its numpy are unchanged (issue 30).
    const p = await findPythonAsync(explicit, m.env, stateDir ? keptTester(m.pythonAsync, join(stateDir, STATE_FILES.python)) : m.pythonAsync);
    const said = `${p.executable} (Python ${p.version}, numpy ${p.numpy}; from ${p.source})`;
    if (p.note) return host.warn('python', `${said}, but ${p.note}`, 'a wrapper script that starts a background job should not leave it holding stdout (redirect it, or exec the Python)');
    return host.ok('python', said);
  } catch (e) {
    const fix = 'pass --python (hooks install --python) or set NPU_BLOCK_GATE_PYTHON to the mlir-air environment (e.g. /opt/mlir-air/ironenv/bin/python)';
    if (explicit || m.env.NPU_BLOCK_GATE_PYTHON) return host.fail('python', oneLine(e), fix);
    return host.warn('python', `${oneLine(e)} (fine when the job builds its own venv, as mlir-air's CI does)`, fix);
  }
}

function checkLock(m: Machine): Check {
  const s = lockState(m);
  if (!s.path) return host.ok('npu-lock', 'off (NPU_BLOCK_GATE_NPU_LOCK=none)');
  if (!s.holder) return host.ok('npu-lock', `${s.path}: free${s.exists ? '' : ' (no lock file yet)'}`);
  return host.warn('npu-lock', `${s.path}: ${describeHolder(s)}`, `a run is using the NPU; wait for it (the kernel drops the lock when pid ${s.holder.pid} exits)`);
}

// ---- the whole doctor

interface DoctorFacts {
  npu: Npu | null;
  nodes: AccelNode[];
  xrt: XrtInfo | null;
  versions: Versions;
  powerMode: string | null;
  kernel: KernelLogScan | null;
  /** The functional probe ran now (not a cached result). */
  functionalRan: boolean;
  /** Why auto ran (or would have run) the probe, or null. */
  functionalReason: string | null;
}

interface DoctorReport { checks: Check[]; facts: DoctorFacts }

/** The signatures that explain a driver that could not probe the NPU better than "power-cycle" does. */
const EXPLAINS_PROBE = ['firmware-missing', 'firmware-too-old', 'hypervisor'];

export async function doctorReport(m: Machine, o: DoctorOptions = {}): Promise<DoctorReport> {
  const min = o.minFreeBytes ?? MIN_FREE_BYTES;
  const cacheRoot = o.cacheDir ?? defaultCacheRoot(m.env);
  const workspace = o.workspace ?? m.env.GITHUB_WORKSPACE ?? m.cwd;
  const stateDir = o.stateDir ?? defaultStateDir(m);
  const service = o.service ?? null;
  const intervalS = o.functionalMaxAgeS ?? FUNCTIONAL_MAX_AGE_S;
  // Python's numpy import is the slowest command here and touches neither the NPU nor the kernel
  // log: it runs while the device checks do (its check keeps its place in the list).
  const python = o.deviceOnly ? null : checkPython(m, o.python ?? null, stateDir);
  const npus = findNpus(m);
  const nodes = accelNodes(m);
  const npu = npus?.find((n) => n.driver === 'amdxdna') ?? npus?.[0] ?? null;
  const bdf = npu?.bdf ?? null;
  const limits = memlockLimits(m);
  const xr = await execXrtSmi(m);
  const xrt = xr.missing ? null : parseXrtSmi(xr.stdout + '\n' + xr.stderr);
  const boot = bootId(m);
  const node = nodes.some((n) => n.driver === 'amdxdna' || n.driver === null);
  const prev = lastFunctional(stateDir);
  let cleared = lastPass(prev, boot);
  const readOpts = { bdf, maxBytes: o.kernelLogMaxBytes };
  let log = await readKernelLog(m, { ...readOpts, since: cleared ? new Date(cleared.at) : null });
  let kl = checkKernelLog(log, { bdf, node, cleared });
  const explained = kl.scan?.found.find((w) => EXPLAINS_PROBE.includes(w.id))?.fix ?? null;
  const checks: Check[] = [checkPci(npus), checkDriver(m, npus, explained), checkDevice(m, npus, nodes, explained), checkFirmware(npus), kl.check];
  const tail: Check[] = [checkMemlock(limits, service), checkXrt(m, xr, limits, service)];
  const when = o.functional ?? 'never';
  const reason = node ? probeReason({ kernel: kl.check, lastPass: cleared, now: m.now(), intervalS, recentPassVouches: o.recentPassVouches }) : null;
  let functional: Check[] = [];
  let functionalRan = false;
  let power: string | null = prev?.power_mode ?? null;
  if (when === 'always' || (when === 'auto' && reason)) {
    const stands = when === 'auto' && prev && reusable(prev, { boot, now: m.now(), intervalS, resetSince: resetAfter(log, new Date(prev.at)) });
    if (stands) functional = checksFromRecord(prev!, { intervalS });
    else {
      // The memlock the runner's jobs get: the service's LimitMEMLOCK when this is not the service itself.
      const svcLimits = service ? serviceLimits(m, service) : null;
      const apply = !!svcLimits && (!limits || svcLimits.soft !== limits.soft || svcLimits.hard !== limits.hard);
      const device = kl.check.status === 'fail' || kl.check.status === 'warn' ? kl.check.fix : null;
      await python; // the probe runs alone, as a job would
      let res = await runFunctional(m, {
        stateDir, test: o.functionalTest ?? null, xrt: xrt?.xrt ?? null, timeoutS: o.functionalTimeoutS ?? FUNCTIONAL_TIMEOUT_S,
        limits: apply ? svcLimits : limits, limitsFrom: apply ? `${service}'s LimitMEMLOCK` : "this process's, as the runner's jobs get them",
        applyLimits: apply, runAs: o.runnerAccount ?? null, bdf, npuLines: kl.scan?.lines ?? null, service, kernelFix: device,
        npuLast: 'error' in log ? null : log.lines[log.lines.length - 1] ?? cleared?.npu_last ?? null,
        linesSince: async (t) => {
          const l = await readKernelLog(m, { ...readOpts, since: t });
          return 'error' in l ? [] : l.lines;
        },
        lastPass: cleared,
      });
      functionalRan = true;
      power = res.record.power_mode ?? power;
      if (res.record.status === 'ok') {
        // A pass clears the signatures logged before it.
        cleared = res.record.last_ok;
        kl = checkKernelLog(log, { bdf, node, cleared });
      } else if (res.record.status === 'fail') {
        // What the driver logged while the probe ran counts too, and one hang gets one fix.
        log = await readKernelLog(m, { ...readOpts, since: cleared ? new Date(cleared.at) : null });
        kl = checkKernelLog(log, { bdf, node, cleared });
        if ((kl.check.status === 'fail' || kl.check.status === 'warn') && kl.check.fix) res = withFix(res, stateDir, kl.check.fix);
      }
      functional = res.checks;
    }
  }
  checks[4] = kl.check;
  if (kl.host) checks.push(kl.host);
  checks.push(...tail, ...functional);
  if (python) checks.push(
    checkDisk(m, 'disk-cache', 'kernel cache', cacheRoot, min),
    checkDisk(m, 'disk-workspace', 'workspace', workspace, min),
    checkHfCache(m),
    await python,
    checkLock(m),
  );
  const versions: Versions = {
    xrt: xrt?.xrt ?? null,
    amdxdna: driverVersion(m) ?? xrt?.amdxdna ?? null,
    firmware: npu?.fwVersion ?? xrt?.firmware ?? null,
  };
  return { checks, facts: { npu, nodes, xrt, versions, powerMode: power, kernel: kl.scan, functionalRan, functionalReason: reason } };
}

export async function doctor(m: Machine, o: DoctorOptions = {}): Promise<Check[]> {
  return (await doctorReport(m, o)).checks;
}

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

