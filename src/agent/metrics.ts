// Fleet visibility: one JSON line per job (jobs.ndjson in the state dir, rotated by size and age)
// and a node_exporter textfile-collector file (written atomically, as the collector requires).
// Every fact comes from what the agent itself saw or wrote in its state dir (outside any job's
// workspace, which a fork's code can write): the job-started hook's record, the device checks
// after the job, the functional probe, the drain. The textfile has a fixed set of series whatever
// the jobs were (no per-job label values: the last job's facts are gauge values), each with the
// runner's name as its `runner` label, so runners sharing one collector directory never collide.
import { existsSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { appendLine, readJson, STATE_FILES, writeAtomic, writeJson, JOB_OUTCOMES, type JobOutcome, type Versions } from './state.ts';

export interface JobLine {
  ts: string;
  runner: string;
  repository: string | null;
  run_id: string | null;
  job: string | null;
  started_at: string | null;
  duration_s: number | null;
  /** ok: ran, and the NPU passed the device checks after it; refused: the job-started hook refused it; device_failed: the NPU failed the device checks after it. */
  outcome: JobOutcome;
  /** Why the job-started hook refused it, else null. */
  refused: string | null;
  /** The device-level checks passed after the job. */
  device_ok: boolean;
  failing: string[];
  versions: Versions;
  functional: { at: string; status: string; finding: string } | null;
  /** The runner is out of rotation (a verified drain), or a service stop is pending. */
  drained: boolean;
  drain_pending: boolean;
}

/** jobs.ndjson is rotated to jobs.ndjson.1 past either bound; one old generation is kept, dropped when older than the age bound. */
const JOBS_MAX_BYTES = 1024 * 1024;
const JOBS_MAX_AGE_DAYS = 30;

interface RotateOptions { maxBytes?: number; maxAgeDays?: number; now: Date }

/** Appends the job's line, first rotating jobs.ndjson when it is too big or its oldest line too old. */
export function appendJob(stateDir: string, line: JobLine, o: RotateOptions): { rotated: boolean; dropped: boolean } {
  const path = join(stateDir, STATE_FILES.jobs);
  const old = join(stateDir, STATE_FILES.jobsOld);
  const maxBytes = o.maxBytes ?? JOBS_MAX_BYTES;
  const maxAgeMs = (o.maxAgeDays ?? JOBS_MAX_AGE_DAYS) * 86_400_000;
  let rotated = false;
  let dropped = false;
  if (existsSync(old) && o.now.getTime() - statSync(old).mtimeMs > maxAgeMs) { rmSync(old, { force: true }); dropped = true; }
  if (existsSync(path)) {
    const size = statSync(path).size;
    let first: string | null = null;
    try { first = (JSON.parse(readFileSync(path, 'utf8').split('\n', 1)[0]) as { ts?: string }).ts ?? null; } catch { /* a torn first line: size decides */ }
    const tooOld = first !== null && o.now.getTime() - new Date(first).getTime() > maxAgeMs;
    if (size + JSON.stringify(line).length + 1 > maxBytes || tooOld) { renameSync(path, old); rotated = true; }
  }
  appendLine(path, line);
  return { rotated, dropped };
}

type Counters = Record<JobOutcome, number>;

/** The job counters (counters.json): kept by the agent, so rotating jobs.ndjson never resets them. */
export function countJob(stateDir: string, outcome: JobOutcome): Counters {
  const path = join(stateDir, STATE_FILES.counters);
  const prev = readJson<Partial<Counters>>(path) ?? {};
  const c = Object.fromEntries(JOB_OUTCOMES.map((k) => [k, Number.isFinite(prev[k]) ? prev[k]! : 0])) as Counters;
  c[outcome]++;
  writeJson(path, c);
  return c;
}

/** A Prometheus label value, escaped as the text format requires (backslash, double quote, newline). */
const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const labels = (o: Record<string, string | null>) => `{${Object.entries(o).map(([k, v]) => `${k}="${esc(v ?? '')}"`).join(',')}}`;
const secs = (iso: string | null | undefined) => (iso ? Math.round(new Date(iso).getTime() / 1000) : NaN);
const num = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? NaN : v);
const value = (v: number) => (Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v));

/** The node_exporter textfile (Prometheus text exposition format 0.0.4): the same series after every job. */
export function renderTextfile(j: JobLine, counts: Counters): string {
  const out: string[] = [];
  const runner = { runner: j.runner };
  const metric = (name: string, help: string, type: 'gauge' | 'counter', rows: [Record<string, string | null>, number][]) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [l, v] of rows) out.push(`${name}${labels({ ...runner, ...l })} ${value(v)}`);
  };
  metric('npu_block_gate_healthy', 'The NPU passed the device-level checks after the last job (1) or not (0).', 'gauge', [[{}, j.device_ok ? 1 : 0]]);
  metric('npu_block_gate_last_check_timestamp_seconds', 'When the job-completed hook last checked the NPU.', 'gauge', [[{}, secs(j.ts)]]);
  metric('npu_block_gate_functional_ok', 'The last functional probe (xrt-smi validate) passed (1), failed on the NPU (0), or did not test it (NaN).', 'gauge',
    [[{}, !j.functional || j.functional.status === 'unknown' ? NaN : j.functional.status === 'ok' ? 1 : 0]]);
  metric('npu_block_gate_functional_timestamp_seconds', 'When the last functional probe ran (NaN: never).', 'gauge', [[{}, secs(j.functional?.at)]]);
  metric('npu_block_gate_last_job_timestamp_seconds', 'When the last job ended (its job-completed hook).', 'gauge', [[{}, secs(j.ts)]]);
  metric('npu_block_gate_last_job_duration_seconds', 'Wall time of the last job, job-started to job-completed hook (NaN: unknown).', 'gauge', [[{}, num(j.duration_s)]]);
  metric('npu_block_gate_last_job_run_id', "The last job's GitHub run id (GITHUB_RUN_ID; NaN: none).", 'gauge', [[{}, j.run_id && /^\d+$/.test(j.run_id) ? Number(j.run_id) : NaN]]);
  metric('npu_block_gate_last_job_outcome', "The last job's outcome: 1 for it, 0 for the others (ok, refused, device_failed).", 'gauge',
    JOB_OUTCOMES.map((k) => [{ outcome: k }, j.outcome === k ? 1 : 0]));
  metric('npu_block_gate_jobs_total', 'Jobs seen by the job-completed hook, by outcome.', 'counter', JOB_OUTCOMES.map((k) => [{ outcome: k }, counts[k] ?? 0]));
  metric('npu_block_gate_versions_info', 'XRT, amdxdna and NPU firmware versions at the last job.', 'gauge', [[{ xrt: j.versions.xrt, amdxdna: j.versions.amdxdna, firmware: j.versions.firmware }, 1]]);
  metric('npu_block_gate_drained', 'The runner is out of rotation, verified (labels read back gone, or the service stopped).', 'gauge', [[{}, j.drained ? 1 : 0]]);
  metric('npu_block_gate_drain_pending', 'A service stop is scheduled and not yet verified (agent status verifies it).', 'gauge', [[{}, j.drain_pending ? 1 : 0]]);
  return out.join('\n') + '\n';
}

export function writeTextfile(path: string, j: JobLine, counts: Counters): void {
  writeAtomic(path, renderTextfile(j, counts));
}
