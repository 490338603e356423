// What the agent remembers between runs, under one state dir (default ~/.npu-block-gate/state,
// or $NPU_BLOCK_GATE_STATE_DIR): the last functional probe (rate limit, cache, and the point that
// clears older kernel-log signatures), the versions and start of the current and last job, the
// drain record, the per-job JSON lines and the node_exporter textfile.
import { mkdirSync, readFileSync, renameSync, writeFileSync, appendFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Machine } from './machine.ts';

/** A check's verdict (doctor.ts), recorded here with the functional probe. */
export type CheckStatus = 'ok' | 'warn' | 'fail' | 'unknown';

export const defaultStateDir = (m: Machine) => resolve(m.env.NPU_BLOCK_GATE_STATE_DIR || join(m.home(), '.npu-block-gate', 'state'));

export const STATE_FILES = {
  functional: 'functional.json',
  job: 'job.json',
  lastJob: 'last-job.json',
  drain: 'drain.json',
  jobs: 'jobs.ndjson',
  textfile: 'npu_block_gate.prom',
} as const;

export function readJson<T>(path: string): T | null {
  try { return JSON.parse(readFileSync(path, 'utf8')) as T; } catch { return null; }
}

/** Writes path atomically (temp file + rename), making its directory. */
export function writeAtomic(path: string, text: string, mode = 0o644): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode });
  renameSync(tmp, path);
}

export const writeJson = (path: string, value: unknown) => writeAtomic(path, JSON.stringify(value, null, 2) + '\n');

export function appendLine(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, JSON.stringify(value) + '\n');
}

/** This boot's id (/proc/sys/kernel/random/boot_id): a functional pass clears signatures of its own boot only. */
export const bootId = (m: Machine) => m.read('/proc/sys/kernel/random/boot_id')?.trim() || null;

export interface Versions { xrt: string | null; amdxdna: string | null; firmware: string | null }

export interface FunctionalRecord {
  at: string;
  status: CheckStatus;
  detail: string;
  fix: string | null;
  test: string;
  boot_id: string | null;
  /** NPU kernel-log lines when it ran (clears untimestamped lines before them). */
  npu_lines: number | null;
  power_mode: string | null;
}

export interface JobRecord {
  started_at: string;
  repository: string | null;
  run_id: string | null;
  job: string | null;
  workspace: string | null;
  versions: Versions;
  /** The job-started hook refused the job (device failure or fork policy). */
  refused: string | null;
}

export interface LastJob { finished_at: string; versions: Versions; device_ok: boolean }

export interface DrainRecord {
  at: string;
  reason: string;
  /** labels: the runner's labels were removed through the API; service: the runner service is (to be) stopped. */
  method: 'labels' | 'service';
  runner_id: number | null;
  runner_name: string | null;
  labels: string[];
  service: string | null;
  /** service drain waiting for the current job to end (the job-completed hook stops the service). */
  pending: boolean;
}
