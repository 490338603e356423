// `agent hook job-completed`: what the runner's job-completed hook runs after every job
// (diagnostics, the device checks again, drain on failure, the job's metrics, cache gc). Its own
// module, apart from `hooks install` (src/agent/hooks.ts), so the hook loads only what it runs.
import { appendFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultCacheRoot } from '../cache/kernel.ts';
import { oneLine } from '../errors.ts';
import type { Machine } from './machine.ts';
import { doctorReport, runXrtSmi, type FunctionalWhen } from './doctor.ts';
import { deviceFailures } from './checks.ts';
import { cacheGc, renderGc } from './cache.ts';
import { readJson, STATE_FILES, writeJson, type JobOutcome, type JobRecord, type LastJob } from './state.ts';
import { drain, drainStatus, finishPendingDrain } from './drain.ts';
import { appendJob, countJob, writeTextfile, type JobLine } from './metrics.ts';
import { readKernelLog, readNote } from './klog.ts';
import { lastFunctional } from './functional.ts';
import { runnerName, serviceName } from './runner.ts';
import { annotation, checkNote, type HookResult } from './job-started.ts';

export const LOG_DAYS = 14;

const day = (d: Date) => d.toISOString().slice(0, 10);

/** Appends the job's diagnostics to <dir>/logs/<date>.log and drops logs older than 14 days. */
export async function recordDiagnostics(m: Machine, dir: string, bdf: string | null = null): Promise<{ log: string; pruned: string[] }> {
  const logs = join(resolve(dir), 'logs');
  mkdirSync(logs, { recursive: true });
  const now = m.now();
  const e = m.env;
  const parts = [`=== job-completed ${now.toISOString()}${e.GITHUB_REPOSITORY ? ` ${e.GITHUB_REPOSITORY}` : ''}${e.GITHUB_RUN_ID ? ` run ${e.GITHUB_RUN_ID}` : ''}${e.GITHUB_JOB ? ` job ${e.GITHUB_JOB}` : ''} ===`];
  const k = await readKernelLog(m, { bdf, sinceHours: 1 });
  if ('error' in k) parts.push(`--- kernel log: ${k.error}`);
  else parts.push(`--- kernel log, NPU lines (${k.source}; ${readNote(k)}): ${k.lines.length}`, ...k.lines);
  const x = runXrtSmi(m);
  if (x.missing) parts.push('--- xrt-smi examine: not found');
  else parts.push(`--- xrt-smi examine (exit ${x.status ?? x.error})`, (x.stdout + x.stderr).trimEnd());
  const log = join(logs, `${day(now)}.log`);
  appendFileSync(log, parts.join('\n') + '\n');
  const oldest = day(new Date(now.getTime() - (LOG_DAYS - 1) * 86_400_000));
  const pruned: string[] = [];
  for (const n of readdirSync(logs)) {
    const m2 = /^(\d{4}-\d{2}-\d{2})\.log$/.exec(n);
    if (m2 && m2[1] < oldest) { rmSync(join(logs, n), { force: true }); pruned.push(n); }
  }
  return { log, pruned };
}

export interface CompletedOptions {
  dir: string;
  cacheDir: string | null;
  maxBytes: number;
  stateDir: string;
  runnerDir: string | null;
  drainOnFailure: boolean;
  tokenFile: string | null;
  labels: string[];
  apiUrl: string | null;
  textfile: string | null;
  functional?: FunctionalWhen;
  functionalMaxAgeS?: number;
  functionalTimeoutS?: number;
  functionalTest?: string | null;
  /** Seconds a background service stop waits for the job to finish reporting. */
  stopDelayS?: number;
  /** jobs.ndjson's rotation bounds. */
  jobsMaxBytes?: number;
  jobsMaxAgeDays?: number;
}

/**
 * After a job: diagnostics to the day log; the device checks again (a wedge this job caused shows
 * here); on a device failure, drain when the admin enabled it; a drain that waited for this job
 * stops the service; one JSON line for the job and the node_exporter textfile, from the agent's
 * own records only; cache gc. Never fails the job: what went wrong is in the log and on the job as
 * annotations.
 */
export async function jobCompleted(m: Machine, o: CompletedOptions): Promise<HookResult> {
  let out = '';
  const say = (s: string) => { out += s.endsWith('\n') ? s : s + '\n'; };
  const service = serviceName(o.runnerDir);
  const rep = await doctorReport(m, {
    deviceOnly: true, stateDir: o.stateDir, functional: o.functional ?? 'auto', service, functionalMaxAgeS: o.functionalMaxAgeS,
    functionalTimeoutS: o.functionalTimeoutS, functionalTest: o.functionalTest,
  });
  const fails = deviceFailures(rep.checks);
  try {
    const d = await recordDiagnostics(m, o.dir, rep.facts.npu?.bdf ?? null);
    say(`npu-block-gate: diagnostics appended to ${d.log}${d.pruned.length ? ` (dropped ${d.pruned.length} log(s) older than ${LOG_DAYS} days)` : ''}`);
  } catch (e) {
    say(`npu-block-gate: diagnostics not recorded: ${oneLine(e)}`);
  }
  for (const c of fails) say(annotation('error', `npu-block-gate: ${c.id} after the job`, checkNote(c)));
  for (const c of rep.checks.filter((x) => x.scope === 'host' && x.status !== 'ok' && x.id.startsWith('functional'))) say(annotation('warning', `npu-block-gate: ${c.id}`, checkNote(c)));
  try {
    if (fails.length && o.drainOnFailure && o.runnerDir) {
      const r = await drain(m, {
        runnerDir: o.runnerDir, tokenFile: o.tokenFile, labels: o.labels, apiUrl: o.apiUrl, stateDir: o.stateDir,
        reason: `hardware failure after ${m.env.GITHUB_REPOSITORY ?? 'a job'}${m.env.GITHUB_RUN_ID ? ` run ${m.env.GITHUB_RUN_ID}` : ''}: ${fails.map((c) => `${c.id}: ${c.detail}`).join('; ')}`,
        fromHook: true, stopDelayS: o.stopDelayS,
      });
      for (const l of r.lines) say(`npu-block-gate: drain: ${l}`);
      say(annotation('warning', r.record.state === 'drained' ? 'npu-block-gate: runner drained' : 'npu-block-gate: runner drain pending', `${r.lines.join('; ')}; after the fix: npu-block-gate agent undrain`));
    } else if (fails.length) {
      say(`npu-block-gate: the NPU failed device checks after this job (${fails.map((c) => c.id).join(', ')}); not drained (hooks install --drain-on-failure does that)`);
    } else {
      const line = finishPendingDrain(m, o.stateDir, o.stopDelayS);
      if (line) say(`npu-block-gate: drain: ${line}`);
    }
  } catch (e) {
    say(annotation('error', 'npu-block-gate: drain refused: not drained', oneLine(e)));
  }
  try {
    const now = m.now();
    const job = readJson<JobRecord>(join(o.stateDir, STATE_FILES.job));
    const started = job ? new Date(job.started_at) : null;
    const f = lastFunctional(o.stateDir);
    const drainNow = drainStatus(m, o.stateDir);
    const outcome: JobOutcome = job?.refused ? 'refused' : fails.length ? 'device_failed' : 'ok';
    const line: JobLine = {
      ts: now.toISOString(), runner: runnerName(m, o.runnerDir), repository: m.env.GITHUB_REPOSITORY ?? job?.repository ?? null, run_id: m.env.GITHUB_RUN_ID ?? job?.run_id ?? null,
      job: m.env.GITHUB_JOB ?? job?.job ?? null, started_at: job?.started_at ?? null,
      duration_s: started ? Math.round((now.getTime() - started.getTime()) / 100) / 10 : null,
      outcome, refused: job?.refused ?? null, device_ok: !fails.length, failing: fails.map((c) => c.id), versions: rep.facts.versions,
      functional: f ? { at: f.at, status: f.status, finding: f.finding ?? (f.status === 'ok' ? 'pass' : 'device') } : null,
      drained: !!drainNow?.drained, drain_pending: !!drainNow && !drainNow.drained && (drainNow.state === 'pending' || drainNow.state === 'waiting'),
    };
    const rot = appendJob(o.stateDir, line, { now, maxBytes: o.jobsMaxBytes, maxAgeDays: o.jobsMaxAgeDays });
    const counts = countJob(o.stateDir, outcome);
    const textfile = o.textfile ?? join(o.stateDir, STATE_FILES.textfile);
    writeTextfile(textfile, line, counts);
    const last: LastJob = { finished_at: line.ts, versions: rep.facts.versions, device_ok: line.device_ok, outcome, run_id: line.run_id };
    writeJson(join(o.stateDir, STATE_FILES.lastJob), last);
    rmSync(join(o.stateDir, STATE_FILES.job), { force: true });
    say(`npu-block-gate: job recorded in ${join(o.stateDir, STATE_FILES.jobs)}${rot.rotated ? ' (rotated the previous lines to jobs.ndjson.1)' : ''}; metrics in ${textfile}`);
  } catch (e) {
    say(`npu-block-gate: metrics not recorded: ${oneLine(e)}`);
  }
  out += renderGc(cacheGc(o.cacheDir ?? defaultCacheRoot(m.env), o.maxBytes));
  return { code: 0, out };
}
