// What the agent remembers between runs, under one state dir (default ~/.npu-block-gate/state,
// or $NPU_BLOCK_GATE_STATE_DIR), outside any job's workspace: the last functional probe (its
// cache, and the last pass that clears older kernel-log signatures), the versions and start of the
// current and last job, the drain record, the per-job JSON lines, the job counters and the
// node_exporter textfile. Every file here is written by the agent's own hooks and commands.
import { writeAtomic as writeFileAtomic } from '../fs/atomic.ts';
import { mkdirSync, readFileSync, appendFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Machine } from './machine.ts';
import type { CheckStatus } from './checks.ts';

export const defaultStateDir = (m: Machine) => resolve(m.env.NPU_BLOCK_GATE_STATE_DIR || join(m.home(), '.npu-block-gate', 'state'));

export const STATE_FILES = {
  functional: 'functional.json',
  job: 'job.json',
  lastJob: 'last-job.json',
  drain: 'drain.json',
  jobs: 'jobs.ndjson',
  /** jobs.ndjson's previous generation (rotated by size and age). */
  jobsOld: 'jobs.ndjson.1',
  counters: 'counters.json',
  textfile: 'npu_block_gate.prom',
  /** The numpy check's kept answers, per interpreter (probe/answers.ts): a job need not start Python. */
  python: 'python-answers.json',
} as const;

export function readJson<T>(path: string): T | null {
  try { return JSON.parse(readFileSync(path, 'utf8')) as T; } catch { return null; }
}

/** Writes path atomically (temp file + rename; a symlink there is replaced), making its directory; `durable: false` skips the fsync (src/fs/atomic.ts). */
export function writeAtomic(path: string, text: string, mode = 0o644, durable = true): void {
  writeFileAtomic(path, text, { mode, follow: false, durable });
}

export const writeJson = (path: string, value: unknown, o: { durable?: boolean } = {}) => writeAtomic(path, JSON.stringify(value, null, 2) + '\n', 0o644, o.durable ?? true);

export function appendLine(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, JSON.stringify(value) + '\n');
}

/** This boot's id (/proc/sys/kernel/random/boot_id): a functional pass clears signatures of its own boot only. */
export const bootId = (m: Machine) => m.read('/proc/sys/kernel/random/boot_id')?.trim() || null;

export interface Versions { xrt: string | null; amdxdna: string | null; firmware: string | null }

/** Who is at fault in a probe that did not pass: the NPU (a timeout, a failed command) or the host. */
export type ProbeFindingKind = 'pass' | 'device' | 'timeout' | 'memlock' | 'permissions' | 'xrt-install';

export interface FunctionalRecord {
  at: string;
  /** The device verdict: ok (passed), fail (a device finding), unknown (a host problem kept the NPU from being tested). */
  status: CheckStatus;
  finding: ProbeFindingKind;
  detail: string;
  fix: string | null;
  test: string;
  boot_id: string | null;
  /** NPU kernel-log lines when it ran (clears untimestamped lines before them). */
  npu_lines: number | null;
  power_mode: string | null;
  /** The user it ran as, and the memlock limits in force. */
  user: string | null;
  memlock: { soft: number | 'unlimited'; hard: number | 'unlimited' } | null;
  /** The host problem it found (memlock, permissions, the XRT install), with its fix; null when none. */
  host: { kind: ProbeFindingKind; detail: string; fix: string } | null;
  /** The newest NPU kernel-log line when it ran. */
  npu_last?: string | null;
  /** The last pass this boot (this probe, or an earlier one): the point older kernel-log signatures are cleared to. */
  last_ok: { at: string; npu_lines: number | null; npu_last?: string | null } | null;
}

export interface JobRecord {
  started_at: string;
  repository: string | null;
  run_id: string | null;
  job: string | null;
  versions: Versions;
  /** The job-started hook refused the job (device failure or fork policy). */
  refused: string | null;
}

/** A job's outcome as the agent saw it itself (never from files the job wrote). */
export type JobOutcome = 'ok' | 'refused' | 'device_failed';
export const JOB_OUTCOMES: JobOutcome[] = ['ok', 'refused', 'device_failed'];

export interface LastJob { finished_at: string; versions: Versions; device_ok: boolean; outcome?: JobOutcome; run_id?: string | null }

/**
 * drained: out of rotation, verified (the labels read back gone, or systemctl is-active says the
 * service is stopped); waiting: a service drain waits for the running job (the job-completed hook
 * stops it); pending: a service stop is scheduled and not yet verified; refused: the drain was
 * tried and refused (evidence says why): the runner still takes jobs; restarted: a drained service
 * was started again (a reboot, ./run.sh): it takes jobs (status and the metrics re-verify it).
 */
type DrainState = 'drained' | 'waiting' | 'pending' | 'refused' | 'restarted';

export interface DrainRecord {
  at: string;
  reason: string;
  /** labels: the runner's labels were removed through the API; service: the runner service is (to be) stopped. */
  method: 'labels' | 'service';
  runner_id: number | null;
  runner_name: string | null;
  labels: string[];
  service: string | null;
  state: DrainState;
  /** How the drain was verified, or why it was refused. */
  evidence: string;
  /** A scheduled service stop: the background stop acts only while the record still names it (undrain cancels it). */
  stop_id?: string;
}
