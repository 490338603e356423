// Locked memory: the NPU driver maps ~64 MiB locked per process, and XRT fails with mmap err=-11
// under a lower limit. The limits in force (/proc/self/limits, or the runner service's
// LimitMEMLOCK), the check, and the one fix text.
import type { Machine } from './machine.ts';
import { formatBytes, parseMemlockLimits, type Limit } from './parse.ts';
import { host, type Check } from './checks.ts';

/** mlir-air's nightlyPerfBenchmark.yml: "the NPU driver mmaps ~64MB of locked memory". */
export const MEMLOCK_NEEDED = 64 * 1024 ** 2;

export interface Limits { soft: Limit; hard: Limit }

/** This process's memlock limits (a hook's are the runner's jobs': both inherit the runner service's). */
export function memlockLimits(m: Machine): Limits | null {
  const text = m.read('/proc/self/limits');
  return text === null ? null : parseMemlockLimits(text);
}

/** systemd's value of LimitMEMLOCK / LimitMEMLOCKSoft: "infinity" or bytes. */
function systemdLimit(v: string | undefined): Limit | null {
  const t = v?.trim();
  if (!t) return null;
  if (t === 'infinity') return 'unlimited';
  return /^\d+$/.test(t) ? Number(t) : null;
}

/** The runner service's memlock limits (what its jobs get), from systemctl show; null when systemd does not say. */
export function serviceLimits(m: Machine, service: string): Limits | null {
  const r = m.run('systemctl', ['show', '-p', 'LimitMEMLOCK', '-p', 'LimitMEMLOCKSoft', service], 15_000);
  if (r.status !== 0) return null;
  const kv = Object.fromEntries(r.stdout.split('\n').map((l) => l.split('=')).filter((p) => p.length === 2).map(([k, v]) => [k.trim(), v]));
  const hard = systemdLimit(kv.LimitMEMLOCK);
  const soft = systemdLimit(kv.LimitMEMLOCKSoft) ?? hard;
  return hard !== null && soft !== null ? { soft, hard } : null;
}

export const big = (v: Limit, n = MEMLOCK_NEEDED) => v === 'unlimited' || v >= n;
export const lowMemlock = (l: Limits | null) => !!l && !big(l.soft);
export const fmtLimit = (v: Limit) => (v === 'unlimited' ? 'unlimited' : formatBytes(v));
export const fmtLimits = (l: Limits) => `soft ${fmtLimit(l.soft)}, hard ${fmtLimit(l.hard)}`;

export function memlockFix(l: Limits | null, service: string | null): string {
  const svc = service ?? '<the runner service>';
  if (l && !big(l.hard)) {
    return `the hard limit (${fmtLimit(l.hard)}) caps every job and this tool: sudo systemctl edit ${svc} with [Service] LimitMEMLOCK=infinity, then restart it (or sudo prlimit -lunlimited --pid $$ in each job, as mlir-air's CI does)`;
  }
  return `raise it before NPU work: ulimit -l unlimited in the job (the hard limit allows it, no sudo), or sudo prlimit -lunlimited --pid $$ as mlir-air's CI does; for every job: LimitMEMLOCK=infinity in ${svc}`;
}

export const MEMLOCK_FIRST = (limits: Limits | null, service: string | null) => `memlock first: ${memlockFix(limits, service)}`;

export function checkMemlock(l: Limits | null, service: string | null): Check {
  if (!l) return host.warn('memlock', 'cannot read "Max locked memory" from /proc/self/limits', memlockFix(null, service));
  const detail = `Max locked memory: ${fmtLimits(l)}`;
  if (l.soft === 'unlimited') return host.ok('memlock', detail);
  return host.warn('memlock', `${detail} (the NPU driver maps ~64 MiB locked; XRT fails with mmap err=-11 under it)`, memlockFix(l, service));
}
