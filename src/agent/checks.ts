// What every check returns, and the helpers that build one. The bottom room of src/agent: the
// doctor, the kernel log, the functional probe and the agent's state all speak these types, and
// this file imports nothing.

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

const mk = (scope: CheckScope) => ({
  ok: (id: string, detail: string): Check => ({ id, status: 'ok', scope, detail, fix: null }),
  warn: (id: string, detail: string, fix: string): Check => ({ id, status: 'warn', scope, detail, fix }),
  fail: (id: string, detail: string, fix: string): Check => ({ id, status: 'fail', scope, detail, fix }),
  unknown: (id: string, detail: string, fix: string): Check => ({ id, status: 'unknown', scope, detail, fix }),
});
export const dev = mk('device');
export const host = mk('host');

/** The device-scope checks that failed: what fails a job in the job-started hook. */
export const deviceFailures = (checks: Check[]) => checks.filter((c) => c.scope === 'device' && c.status === 'fail');

export function summarize(checks: Check[]): Record<CheckStatus, number> {
  const s = { ok: 0, warn: 0, fail: 0, unknown: 0 };
  for (const c of checks) s[c.status]++;
  return s;
}
