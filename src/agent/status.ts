// `agent status`: one screen about the runner. Reads only: sysfs, /proc, the two NPU locks (never
// taken), xrt-smi examine (versions, power mode), the agent's state (last job, functional probe,
// drain, verified with systemctl is-active when a service stop is pending), the kernel cache and
// the last run dirs. No kernel log, no Python, no functional probe. Its --json is what
// `agent fleet` merges across runners.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { KernelStore, defaultCacheRoot } from '../cache/kernel.ts';
import type { Machine } from './machine.ts';
import { accelNodes, cpuModel, driverVersion, findNpus, npuGeneration, runXrtSmi } from './doctor.ts';
import { lastFunctional } from './functional.ts';
import { drainStatus } from './drain.ts';
import { runnerName } from './runner.ts';
import { lockState, describeHolder, npuLockPath } from './lock.ts';
import { formatBytes, parsePowerMode, parseXrtSmi } from './parse.ts';
import { defaultStateDir, readJson, STATE_FILES, type DrainRecord, type LastJob, type Versions } from './state.ts';

/** The lock mlir-air's KernelCache.load_and_run takes around every dispatch (and lit around NPU tests). Read, never held: holding it from outside deadlocks. */
const INNER_NPU_LOCK = '/tmp/npu.lock';

interface RunSummary { dir: string; outcome: string | null; model: string | null; created_at: string | null }

interface LockView { path: string; role: string; holder: string; waiters: number; exists: boolean }

interface AccelHolder { pid: number; cmdline: string; node: string }

interface VersionChange { what: keyof Versions; from: string | null; to: string | null }

/** ok: the last look at the NPU (the device checks after the last job, or a later functional probe) passed; failing: it failed; unknown: neither says. */
type Health = 'ok' | 'failing' | 'unknown';

export interface Status {
  root: string;
  /** The runner's name (its .runner agentName, RUNNER_NAME, else the host name). */
  runner: string;
  device: string[];
  npu: { bdf: string; name: string | null; driver: string | null; generation: string | null } | null;
  health: Health;
  driver: { loaded: boolean; version: string | null };
  /** The outer lock (kept for scripts that read .lock). */
  lock: { path: string | null; holder: string };
  locks: LockView[];
  accel_holders: AccelHolder[];
  /** /proc/<pid>/fd dirs this user could not read (other users' processes). */
  accel_unreadable: number;
  versions: Versions;
  versions_changed: VersionChange[];
  last_job: LastJob | null;
  power_mode: string | null;
  /** /sys/firmware/acpi/platform_profile (moves LLM decode numbers, per mlir-air's nightly benchmark). */
  platform_profile: string | null;
  functional: { at: string; status: string; detail: string } | null;
  /** The drain record as it stands now; drained is true only when verified. */
  drain: (DrainRecord & { drained: boolean }) | null;
  cache: { root: string; entries: number; bytes: number };
  runs: RunSummary[];
}

/** The newest run dirs under <dir> (default runs/ in the working directory), from their report.json. */
function lastRuns(dir: string, n = 3): RunSummary[] {
  if (!existsSync(dir)) return [];
  const dirs = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory())
    .map((e) => ({ p: join(dir, e.name), t: statSync(join(dir, e.name)).mtimeMs }))
    .sort((a, b) => b.t - a.t).slice(0, n);
  return dirs.map(({ p }) => {
    try {
      const r = JSON.parse(readFileSync(join(p, 'report.json'), 'utf8'));
      return { dir: p, outcome: r.outcome ?? null, model: r.model?.name ?? null, created_at: r.created_at ?? null };
    } catch {
      return { dir: p, outcome: null, model: null, created_at: null };
    }
  });
}

/** Processes with one of the accel nodes open (/proc/<pid>/fd/* links). */
function accelHolders(m: Machine, nodes: string[]): { holders: AccelHolder[]; unreadable: number } {
  const holders: AccelHolder[] = [];
  let unreadable = 0;
  if (!nodes.length) return { holders, unreadable };
  for (const pid of (m.list('/proc') ?? []).filter((n) => /^\d+$/.test(n))) {
    const fds = m.list(`/proc/${pid}/fd`);
    if (!fds) { unreadable++; continue; }
    const hit = fds.map((fd) => m.readlink(`/proc/${pid}/fd/${fd}`)).find((t) => t && nodes.includes(t));
    if (!hit) continue;
    const cmdline = (m.readBytes(`/proc/${pid}/cmdline`)?.toString('utf8') ?? '').replace(/\0/g, ' ').trim().slice(0, 120);
    holders.push({ pid: Number(pid), cmdline, node: hit });
  }
  return { holders: holders.sort((a, b) => a.pid - b.pid), unreadable };
}

export function versionChanges(before: Versions | null | undefined, now: Versions): VersionChange[] {
  if (!before) return [];
  return (['xrt', 'amdxdna', 'firmware'] as const)
    .filter((k) => now[k] !== null && before[k] !== null && now[k] !== before[k])
    .map((k) => ({ what: k, from: before[k], to: now[k] }));
}

export const describeChanges = (c: VersionChange[]) => c.map((x) => `${x.what === 'xrt' ? 'XRT' : x.what} ${x.from} -> ${x.to}`).join(', ');

/** The newest of the two looks at the NPU: the device checks after the last job, and the last functional probe. */
export function health(lastJob: LastJob | null, f: { at: string; status: string } | null): Health {
  const looks: [number, Health][] = [];
  if (lastJob) looks.push([new Date(lastJob.finished_at).getTime(), lastJob.device_ok ? 'ok' : 'failing']);
  if (f && f.status !== 'unknown') looks.push([new Date(f.at).getTime(), f.status === 'ok' ? 'ok' : 'failing']);
  looks.sort((a, b) => b[0] - a[0]);
  return looks[0]?.[1] ?? 'unknown';
}

export function status(m: Machine, o: { cacheDir?: string | null; runsDir?: string; stateDir?: string | null; runnerDir?: string | null } = {}): Status {
  const stateDir = o.stateDir ?? defaultStateDir(m);
  const outer = lockState(m);
  const lockViews: LockView[] = [];
  const view = (path: string, role: string) => {
    const s = lockState(m, path);
    lockViews.push({ path, role, holder: describeHolder(s), waiters: s.waiters, exists: s.exists });
  };
  if (outer.path) view(outer.path, 'whole runs (mlir-air skills: flock -x -w 1800)');
  const inner = npuLockPath({}, m.env.NPU_BLOCK_GATE_INNER_LOCK || INNER_NPU_LOCK) ?? INNER_NPU_LOCK;
  if (inner !== outer.path) view(inner, 'each dispatch (mlir-air load_and_run, lit NPU tests)');
  const nodes = accelNodes(m);
  const npus = findNpus(m);
  const npu = npus?.find((n) => n.driver === 'amdxdna') ?? npus?.[0] ?? null;
  const { holders, unreadable } = accelHolders(m, nodes.map((n) => n.node));
  const x = runXrtSmi(m, ['examine'], 20_000);
  const xrt = x.missing || x.status !== 0 ? null : parseXrtSmi(x.stdout);
  const p = runXrtSmi(m, ['examine', '-r', 'platform'], 20_000);
  const f = lastFunctional(stateDir);
  const versions: Versions = { xrt: xrt?.xrt ?? null, amdxdna: driverVersion(m) ?? xrt?.amdxdna ?? null, firmware: npu?.fwVersion ?? xrt?.firmware ?? null };
  const lastJob = readJson<LastJob>(join(stateDir, STATE_FILES.lastJob));
  const cacheRoot = o.cacheDir ?? defaultCacheRoot(m.env);
  const entries = new KernelStore(cacheRoot).list();
  return {
    root: m.root,
    runner: runnerName(m, o.runnerDir ?? null),
    device: nodes.map((n) => n.node),
    npu: npu ? { bdf: npu.bdf, name: npu.vbnv, driver: npu.driver, generation: npuGeneration(npu, cpuModel(m)) } : null,
    health: health(lastJob, f),
    driver: { loaded: m.exists('/sys/module/amdxdna'), version: driverVersion(m) },
    lock: { path: outer.path, holder: outer.path ? describeHolder(outer) : 'off' },
    locks: lockViews,
    accel_holders: holders,
    accel_unreadable: unreadable,
    versions,
    versions_changed: versionChanges(lastJob?.versions, versions),
    last_job: lastJob,
    power_mode: (p.status === 0 ? parsePowerMode(p.stdout) : null) ?? f?.power_mode ?? null,
    platform_profile: m.read('/sys/firmware/acpi/platform_profile')?.trim() || null,
    functional: f ? { at: f.at, status: f.status, detail: f.detail } : null,
    drain: drainStatus(m, stateDir),
    cache: { root: cacheRoot, entries: entries.length, bytes: entries.reduce((n, e) => n + e.bytes, 0) },
    runs: lastRuns(o.runsDir ?? join(m.cwd, 'runs')),
  };
}

export function renderStatus(s: Status): string {
  const v = s.versions;
  const lines = [
    `runner:    ${s.runner}${s.npu?.generation ? ` (${s.npu.generation})` : ''}; health ${s.health}`,
    `device:    ${s.device.length ? s.device.join(', ') : 'none (no /dev/accel: see agent doctor)'}${s.npu ? `  ${s.npu.name ?? 'NPU'} [${s.npu.bdf}]${s.npu.driver && s.npu.driver !== 'amdxdna' ? ` bound to ${s.npu.driver}` : ''}` : ''}`,
    `driver:    ${s.driver.loaded ? `amdxdna${s.driver.version ? ` ${s.driver.version}` : ' (in-tree)'}` : 'amdxdna not loaded'}`,
    `versions:  XRT ${v.xrt ?? '?'}, amdxdna ${v.amdxdna ?? '?'}, firmware ${v.firmware ?? '?'}`,
  ];
  if (s.versions_changed.length) lines.push(`WARNING:   changed since the last job (${s.last_job?.finished_at ?? '?'}): ${describeChanges(s.versions_changed)}`);
  lines.push(`power:     ${s.power_mode ?? 'not exposed (xrt-smi examine -r platform)'}${s.platform_profile ? `; ACPI platform profile ${s.platform_profile}` : ''}`);
  for (const l of s.locks) lines.push(`lock:      ${l.path}: ${l.holder}  (${l.role}; read only)`);
  if (!s.locks.length) lines.push('lock:      off');
  if (s.accel_holders.length) for (const h of s.accel_holders) lines.push(`using NPU: pid ${h.pid} ${h.cmdline}  (${h.node})`);
  else lines.push(`using NPU: nobody${s.accel_unreadable ? ` this user can see (${s.accel_unreadable} processes of other users unreadable)` : ''}`);
  if (s.functional) lines.push(`probe:     ${s.functional.status} at ${s.functional.at}: ${s.functional.detail}`);
  const d = s.drain;
  if (d?.drained) lines.push(`DRAINED:   since ${d.at} (${d.method}; ${d.evidence}): ${d.reason}; undo: npu-block-gate agent undrain`);
  else if (d) lines.push(`NOT DRAINED: ${d.state === 'refused' ? 'the drain was refused' : d.state === 'restarted' ? 'the drained service was started again and takes jobs' : d.state === 'waiting' ? 'the service stops after the current job' : 'a service stop is pending, not verified'} (${d.method}, ${d.at}): ${d.evidence}`);
  lines.push(`cache:     ${s.cache.root}: ${s.cache.entries} entr${s.cache.entries === 1 ? 'y' : 'ies'}, ${formatBytes(s.cache.bytes)}`);
  if (s.runs.length) {
    lines.push('runs:');
    for (const r of s.runs) lines.push(`  ${r.outcome ?? '?'}`.padEnd(9) + `${r.model ?? ''}${r.model ? '  ' : ''}${r.dir}`);
  }
  return lines.join('\n') + '\n';
}
