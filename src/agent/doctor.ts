// `agent doctor`: health checks of an NPU runner, each {id, status, detail, fix}.
// What the checks look for is in /work/shared/mlir-air.md "How NPU runners run today".
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { defaultCacheRoot } from '../cache/kernel.ts';
import { findPython } from '../probe/python.ts';
import { oneLine } from '../errors.ts';
import type { Machine } from './machine.ts';
import { formatBytes, parseMemlock, parseXrtSmi, scanKernelLog } from './parse.ts';
import { describeHolder, lockState } from './lock.ts';

export { DEFAULT_NPU_LOCK, npuLockPath, lockState, describeHolder, type LockState } from './lock.ts';

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface Check {
  id: string;
  status: CheckStatus;
  detail: string;
  /** What to do about a warn or fail; null when ok. */
  fix: string | null;
}

export interface DoctorOptions {
  cacheDir?: string | null;
  workspace?: string | null;
  python?: string | null;
  /** Free-space floor for the cache root and the workspace. */
  minFreeBytes?: number;
}

export const MIN_FREE_BYTES = 5 * 1024 ** 3;
const RELOAD = 'sudo modprobe -r amdxdna && sudo modprobe amdxdna';

const ok = (id: string, detail: string): Check => ({ id, status: 'ok', detail, fix: null });
const warn = (id: string, detail: string, fix: string): Check => ({ id, status: 'warn', detail, fix });
const fail = (id: string, detail: string, fix: string): Check => ({ id, status: 'fail', detail, fix });

/** The accel device nodes: /dev/accel/accel0 first, then any other entry. */
export function deviceNodes(m: Machine): string[] {
  return (m.list('/dev/accel') ?? []).map((n) => `/dev/accel/${n}`);
}

export function checkDevice(m: Machine): Check {
  const nodes = deviceNodes(m);
  if (!nodes.length) {
    return fail('device', `no /dev/accel device: the amdxdna driver could not probe the NPU`,
      'power-cycle the runner (a warm reboot does not always bring the NPU back)');
  }
  const denied = nodes.filter((n) => { try { accessSync(m.path(n), constants.R_OK | constants.W_OK); return false; } catch { return true; } });
  if (denied.length === nodes.length) {
    return warn('device', `${nodes.join(', ')} present but not readable and writable by this user`,
      'add the runner user to the render group (sudo usermod -aG render $USER), then log in again');
  }
  return ok('device', nodes.join(', '));
}

export function driverVersion(m: Machine): string | null {
  return m.read('/sys/module/amdxdna/version')?.trim() || null;
}

export function checkDriver(m: Machine): Check {
  if (!m.exists('/sys/module/amdxdna')) {
    return fail('driver', 'amdxdna module not loaded', 'sudo modprobe amdxdna (needs Linux >= 6.14 or the xrt-plugin-amdxdna package)');
  }
  const v = driverVersion(m);
  return ok('driver', `amdxdna loaded${v ? ` (version ${v})` : ' (in-tree, no version file)'}`);
}

/** xrt-smi from PATH, else the standard install under the root prefix. */
export function runXrtSmi(m: Machine) {
  let r = m.run('xrt-smi', ['examine']);
  const bundled = '/opt/xilinx/xrt/bin/xrt-smi';
  if (r.missing && m.exists(bundled)) r = m.run(m.path(bundled), ['examine']);
  return r;
}

export function checkXrt(m: Machine): Check {
  const r = runXrtSmi(m);
  if (r.missing) return warn('xrt-smi', 'xrt-smi not found', 'source /opt/xilinx/xrt/setup.sh (or install XRT) so xrt-smi is on PATH');
  if (r.status !== 0) {
    const why = r.error ?? (`${r.stderr}\n${r.stdout}`.trim().split('\n').pop() || `exit ${r.status}`);
    return warn('xrt-smi', `xrt-smi examine failed: ${oneLine(why)}`, 'check the XRT install and the amdxdna driver (xrt-smi examine by hand)');
  }
  const x = parseXrtSmi(r.stdout);
  const versions = [x.xrt && `XRT ${x.xrt}`, x.amdxdna && `amdxdna ${x.amdxdna}`, x.firmware && `firmware ${x.firmware}`].filter(Boolean).join(', ');
  if (!x.devices.length) return warn('xrt-smi', `no device listed${versions ? ` (${versions})` : ''}`, 'the driver sees no NPU: reload it, else power-cycle the runner');
  const devs = x.devices.map((d) => `${d.name} [${d.bdf}]`).join(', ');
  return ok('xrt-smi', `${devs}${versions ? `; ${versions}` : ''}`);
}

/** The kernel log of the last `hours` hours (journalctl -k; else all of dmesg). */
export function kernelLog(m: Machine, hours = 2): { text: string; source: string } | { error: string } {
  const j = m.run('journalctl', ['-k', '--since', `-${hours}h`, '--no-pager']);
  if (j.status === 0 && !/No journal files were opened|insufficient permissions/i.test(j.stderr)) return { text: j.stdout, source: `journalctl -k (last ${hours}h)` };
  const d = m.run('dmesg', []);
  if (d.status === 0) return { text: d.stdout, source: 'dmesg' };
  const why = [j, d].map((r) => r.error ?? (r.stderr.trim().split('\n').pop() || `exit ${r.status}`)).join('; ');
  return { error: `could not read the kernel log (journalctl, dmesg: ${oneLine(why)})` };
}

export function checkKernelLog(m: Machine): Check {
  const log = kernelLog(m);
  if ('error' in log) return warn('kernel-log', log.error, 'add the runner user to the systemd-journal (or adm) group to read the kernel log');
  const scan = scanKernelLog(log.text);
  const clearedNote = scan.cleared ? `; ${scan.cleared} older signature line(s) cleared by a driver reload` : '';
  if (!scan.found.length) return ok('kernel-log', `${log.source}: no wedge signatures in ${scan.lines} amdxdna line(s)${clearedNote}`);
  const worst = scan.found[0];
  const detail = `${log.source}: ${scan.found.map((w) => `${w.what} x${w.count}`).join('; ')}; last: ${worst.last}${clearedNote}`;
  if (worst.id === 'smu-power') return fail('kernel-log', detail, `${RELOAD}, else power-cycle the runner`);
  if (worst.severity === 'fail') return fail('kernel-log', detail, `the NPU is wedged (userspace sees EXEC_CMD err=-5): ${RELOAD}, else power-cycle`);
  return warn('kernel-log', detail, `if runs fail with DRM_IOCTL_AMDXDNA_EXEC_CMD err=-5: ${RELOAD}`);
}

export function checkMemlock(m: Machine): Check {
  const text = m.read('/proc/self/limits');
  const fix = 'sudo prlimit -lunlimited --pid $$ (in the job shell), or LimitMEMLOCK=infinity in the runner service';
  if (text === null) return warn('memlock', 'cannot read /proc/self/limits', fix);
  const v = parseMemlock(text);
  if (v === null) return warn('memlock', 'no "Max locked memory" line in /proc/self/limits', fix);
  if (v === 'unlimited') return ok('memlock', 'Max locked memory: unlimited');
  return warn('memlock', `Max locked memory: ${formatBytes(v)} (NPU buffers need it unlimited)`, fix);
}

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
  if (!f) return warn(id, `${label} ${path}: cannot stat the file system`, 'check the path exists and is readable');
  const detail = `${label} ${path}: ${formatBytes(f.free)} free`;
  if (f.free < min) return warn(id, `${detail} (under ${formatBytes(min)})`, `free space: npu-block-gate agent cache gc --max-bytes 5G, and clear old runs/ and build_peano/ dirs`);
  return ok(id, detail);
}

/** The HF hub cache: $HF_HUB_CACHE, $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub. */
export function hfHubCache(env: NodeJS.ProcessEnv, home: string): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return join(env.HF_HOME, 'hub');
  return join(env.XDG_CACHE_HOME || join(home, '.cache'), 'huggingface', 'hub');
}

export function checkHfCache(m: Machine): Check {
  const dir = hfHubCache(m.env, m.home());
  const offline = /^(1|true|yes|on)$/i.test(m.env.HF_HUB_OFFLINE ?? '');
  let entries: string[] = [];
  try { entries = readdirSync(dir).filter((n) => !n.startsWith('.')); } catch { /* missing */ }
  if (entries.length) {
    const models = entries.filter((n) => n.startsWith('models--')).length;
    return ok('hf-cache', `${dir}: ${models} model(s)${offline ? ' (HF_HUB_OFFLINE=1)' : ''}`);
  }
  if (offline) return warn('hf-cache', `${dir} missing or empty and HF_HUB_OFFLINE=1: reference runs cannot load a model`, 'warm the cache once online (huggingface-cli download <model>), or set HF_HOME to the warm cache');
  return ok('hf-cache', `${dir} missing or empty (models download on first use)`);
}

export function checkPython(m: Machine, explicit: string | null): Check {
  try {
    const p = findPython(explicit, m.env, m.python);
    return ok('python', `${p.executable} (Python ${p.version}, numpy ${p.numpy}; from ${p.source})`);
  } catch (e) {
    return fail('python', oneLine(e), 'pass --python, or set NPU_BLOCK_GATE_PYTHON to the mlir-air environment (e.g. /opt/mlir-air/ironenv/bin/python)');
  }
}

export function checkLock(m: Machine): Check {
  const s = lockState(m);
  if (!s.path) return ok('npu-lock', 'off (NPU_BLOCK_GATE_NPU_LOCK=none)');
  if (!s.holder) return ok('npu-lock', `${s.path}: free${s.exists ? '' : ' (no lock file yet)'}`);
  return warn('npu-lock', `${s.path}: ${describeHolder(s)}`, `a run is using the NPU; wait for it (the kernel drops the lock when pid ${s.holder.pid} exits)`);
}

export function doctor(m: Machine, o: DoctorOptions = {}): Check[] {
  const min = o.minFreeBytes ?? MIN_FREE_BYTES;
  const cacheRoot = o.cacheDir ?? defaultCacheRoot(m.env);
  const workspace = o.workspace ?? m.env.GITHUB_WORKSPACE ?? m.cwd;
  return [
    checkDevice(m),
    checkDriver(m),
    checkXrt(m),
    checkKernelLog(m),
    checkMemlock(m),
    checkDisk(m, 'disk-cache', 'kernel cache', cacheRoot, min),
    checkDisk(m, 'disk-workspace', 'workspace', workspace, min),
    checkHfCache(m),
    checkPython(m, o.python ?? null),
    checkLock(m),
  ];
}

export function summarize(checks: Check[]): Record<CheckStatus, number> {
  const s = { ok: 0, warn: 0, fail: 0 };
  for (const c of checks) s[c.status]++;
  return s;
}

export function renderChecks(checks: Check[], root: string): string {
  const w = Math.max(...checks.map((c) => c.id.length));
  const lines = [`npu-block-gate agent doctor${root === '/' ? '' : ` (root ${root})`}`];
  for (const c of checks) {
    lines.push(`  ${(c.status === 'ok' ? 'ok' : c.status.toUpperCase()).padEnd(4)}  ${c.id.padEnd(w)}  ${c.detail}`);
    if (c.fix) lines.push(`  ${''.padEnd(4)}  ${''.padEnd(w)}  fix: ${c.fix}`);
  }
  const s = summarize(checks);
  lines.push(`${s.ok} ok, ${s.warn} warn, ${s.fail} fail${s.fail ? ': this runner cannot run NPU jobs (exit 3)' : ''}`);
  return lines.join('\n') + '\n';
}
