// `agent status`: one screen about the runner, cheap reads only (no xrt-smi, no kernel log, no Python).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { KernelStore, defaultCacheRoot } from '../cache/kernel.ts';
import type { Machine } from './machine.ts';
import { deviceNodes, driverVersion } from './doctor.ts';
import { lockState, describeHolder } from './lock.ts';
import { formatBytes } from './parse.ts';

export interface RunSummary { dir: string; outcome: string | null; model: string | null; created_at: string | null }

export interface Status {
  root: string;
  device: string[];
  driver: { loaded: boolean; version: string | null };
  lock: { path: string | null; holder: string };
  cache: { root: string; entries: number; bytes: number };
  runs: RunSummary[];
}

/** The newest run dirs under <dir> (default runs/ in the working directory), from their report.json. */
export function lastRuns(dir: string, n = 3): RunSummary[] {
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

export function status(m: Machine, o: { cacheDir?: string | null; runsDir?: string } = {}): Status {
  const lock = lockState(m);
  const cacheRoot = o.cacheDir ?? defaultCacheRoot(m.env);
  const entries = new KernelStore(cacheRoot).list();
  return {
    root: m.root,
    device: deviceNodes(m),
    driver: { loaded: m.exists('/sys/module/amdxdna'), version: driverVersion(m) },
    lock: { path: lock.path, holder: lock.path ? describeHolder(lock) : 'off' },
    cache: { root: cacheRoot, entries: entries.length, bytes: entries.reduce((n, e) => n + e.bytes, 0) },
    runs: lastRuns(o.runsDir ?? join(m.cwd, 'runs')),
  };
}

export function renderStatus(s: Status): string {
  const lines = [
    `device:  ${s.device.length ? s.device.join(', ') : 'none (no /dev/accel: power-cycle the runner)'}`,
    `driver:  ${s.driver.loaded ? `amdxdna${s.driver.version ? ` ${s.driver.version}` : ''}` : 'amdxdna not loaded'}`,
    `lock:    ${s.lock.path ? `${s.lock.path}: ${s.lock.holder}` : 'off'}`,
    `cache:   ${s.cache.root}: ${s.cache.entries} entr${s.cache.entries === 1 ? 'y' : 'ies'}, ${formatBytes(s.cache.bytes)}`,
  ];
  if (s.runs.length) {
    lines.push('runs:');
    for (const r of s.runs) lines.push(`  ${r.outcome ?? '?'}`.padEnd(9) + `${r.model ?? ''}${r.model ? '  ' : ''}${r.dir}`);
  }
  return lines.join('\n') + '\n';
}
