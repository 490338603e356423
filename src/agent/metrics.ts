// Fleet visibility: one JSON line per job (jobs.ndjson in the state dir) and a node_exporter
// textfile-collector file (written atomically, as the collector requires) with health, the last
// check, the job's NPU lock wait, the XRT/driver/firmware versions and the job outcome.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Versions } from './state.ts';
import { writeAtomic } from './state.ts';

export interface JobLine {
  ts: string;
  repository: string | null;
  run_id: string | null;
  job: string | null;
  started_at: string | null;
  duration_s: number | null;
  /** The run's verdict from its report.json (pass, fail, error), "refused" when the job-started hook refused it, else null. */
  outcome: string | null;
  /** Seconds the run waited for the NPU lock (probe.json timings.lock_wait). */
  lock_wait_s: number | null;
  run_dir: string | null;
  /** The device-level checks passed after the job. */
  device_ok: boolean;
  failing: string[];
  versions: Versions;
  functional: { at: string; status: string } | null;
  drained: boolean;
}

/** The run dir this job wrote (runs/* under the workspace, changed since the job started): outcome and lock wait. */
export function jobRun(workspace: string | null, since: Date | null): { run_dir: string | null; outcome: string | null; lock_wait_s: number | null } {
  const none = { run_dir: null, outcome: null, lock_wait_s: null };
  if (!workspace) return none;
  const runs = join(workspace, 'runs');
  if (!existsSync(runs)) return none;
  let best: { p: string; t: number } | null = null;
  for (const e of readdirSync(runs, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const p = join(runs, e.name);
    const t = statSync(p).mtimeMs;
    if (since && t < since.getTime() - 1000) continue;
    if (!best || t > best.t) best = { p, t };
  }
  if (!best) return none;
  const read = (f: string) => { try { return JSON.parse(readFileSync(join(best!.p, f), 'utf8')); } catch { return null; } };
  const report = read('report.json');
  const probe = read('probe.json');
  const wait = probe?.timings?.lock_wait;
  return { run_dir: best.p, outcome: typeof report?.outcome === 'string' ? report.outcome : null, lock_wait_s: typeof wait === 'number' ? wait : null };
}

/** Outcome counts over the JSON lines so far. */
export function outcomeCounts(ndjson: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of ndjson.split('\n')) {
    if (!line.trim()) continue;
    try {
      const j = JSON.parse(line) as { outcome?: string | null };
      const k = j.outcome ?? 'unknown';
      counts[k] = (counts[k] ?? 0) + 1;
    } catch { /* a torn line */ }
  }
  return counts;
}

const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const labels = (o: Record<string, string | null>) => `{${Object.entries(o).map(([k, v]) => `${k}="${esc(v ?? '')}"`).join(',')}}`;
const secs = (iso: string) => Math.round(new Date(iso).getTime() / 1000);

/** The node_exporter textfile (Prometheus text exposition format 0.0.4). */
export function renderTextfile(j: JobLine, counts: Record<string, number>): string {
  const out: string[] = [];
  const metric = (name: string, help: string, type: 'gauge' | 'counter', rows: [string, number][]) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [l, v] of rows) out.push(`${name}${l} ${Number.isFinite(v) ? v : 'NaN'}`);
  };
  metric('npu_block_gate_healthy', 'The NPU passed the device-level checks after the last job (1) or not (0).', 'gauge', [['', j.device_ok ? 1 : 0]]);
  metric('npu_block_gate_last_check_timestamp_seconds', 'When the job-completed hook last checked the NPU.', 'gauge', [['', secs(j.ts)]]);
  if (j.functional) {
    metric('npu_block_gate_functional_ok', 'The last functional probe (xrt-smi validate) passed (1) or not (0).', 'gauge', [['', j.functional.status === 'ok' ? 1 : 0]]);
    metric('npu_block_gate_functional_timestamp_seconds', 'When the last functional probe ran.', 'gauge', [['', secs(j.functional.at)]]);
  }
  metric('npu_block_gate_lock_wait_seconds', "The last job's wait for the NPU lock (NaN: the job ran no probe).", 'gauge', [['', j.lock_wait_s ?? NaN]]);
  if (j.duration_s !== null) metric('npu_block_gate_job_duration_seconds', 'Wall time of the last job, job-started to job-completed hook.', 'gauge', [['', j.duration_s]]);
  metric('npu_block_gate_last_job_info', 'The last job and its outcome (pass, fail, error, refused, unknown).', 'gauge', [[labels({ outcome: j.outcome ?? 'unknown', repository: j.repository, run_id: j.run_id, job: j.job }), 1]]);
  metric('npu_block_gate_jobs_total', 'Jobs seen by the job-completed hook, by outcome.', 'counter', Object.entries(counts).sort().map(([k, v]) => [labels({ outcome: k }), v]));
  metric('npu_block_gate_versions_info', 'XRT, amdxdna and NPU firmware versions at the last job.', 'gauge', [[labels({ xrt: j.versions.xrt, amdxdna: j.versions.amdxdna, firmware: j.versions.firmware }), 1]]);
  metric('npu_block_gate_drained', 'The runner is drained (out of rotation).', 'gauge', [['', j.drained ? 1 : 0]]);
  return out.join('\n') + '\n';
}

export function writeTextfile(path: string, j: JobLine, counts: Record<string, number>): void {
  writeAtomic(path, renderTextfile(j, counts));
}
