// `agent hook job-started`: what the runner's job-started hook runs before every job (the doctor,
// then the fork policy). Its own module, apart from `hooks install` (src/agent/hooks.ts), so the
// hook loads only the health path: every job pays this process's start-up before its first step.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { oneLine } from '../errors.ts';
import type { Machine } from './machine.ts';
import { doctorReport, renderChecks, type DoctorOptions } from './doctor.ts';
import { deviceFailures, type Check } from './checks.ts';
import { describeChanges, readJson, STATE_FILES, versionChanges, writeJson, type JobRecord, type LastJob } from './state.ts';

/**
 * Pull requests from another repository on this runner: allow; deny; probe-only (the default):
 * allowed for the `pull_request` event, where GitHub gives a fork's run a read-only GITHUB_TOKEN and
 * no secrets (examples/workflows/phase2-probe.yml's probe job, permissions: {}), refused for
 * `pull_request_target` and any other event that runs fork code with the base repository's
 * secrets or a write token.
 */
export type ForkPolicy = 'allow' | 'probe-only' | 'deny';
export const FORK_POLICIES: ForkPolicy[] = ['allow', 'probe-only', 'deny'];
export const DEFAULT_FORK_POLICY: ForkPolicy = 'probe-only';

/** The fork policy's verdict on the job's event: null when allowed, else the one line why not. */
export function forkVerdict(env: NodeJS.ProcessEnv, policy: ForkPolicy): string | null {
  if (policy === 'allow') return null;
  const p = env.GITHUB_EVENT_PATH;
  if (!p) return null; // not a GitHub job event
  let ev: { pull_request?: { head?: { repo?: { full_name?: string } | null }; base?: { repo?: { full_name?: string } } } };
  try { ev = JSON.parse(readFileSync(p, 'utf8')); } catch (e) {
    return `npu-block-gate: fork policy ${policy}: cannot read the job's event ${p} (${oneLine(e)}); refusing to run`;
  }
  const pr = ev?.pull_request;
  if (!pr) return null;
  const head = pr.head?.repo?.full_name ?? null;
  const base = pr.base?.repo?.full_name ?? null;
  if (head && base && head === base) return null;
  const from = `pull request from ${head ?? 'a deleted fork'} into ${base ?? 'this repository'}`;
  const event = env.GITHUB_EVENT_NAME ?? null;
  if (policy === 'probe-only') {
    if (event === 'pull_request') return null;
    return `npu-block-gate: fork policy probe-only: ${from} under ${event ?? 'an unknown event'} would run its code with this repository's secrets or a write token; only pull_request (read-only token, no secrets: the split workflow's probe job) may run fork code here; refusing the job`;
  }
  return `npu-block-gate: fork policy deny: ${from} runs untrusted code on this runner's NPU; refusing the job`;
}

export interface HookResult { code: 0 | 1; out: string }

const escData = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const escProp = (s: string) => escData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

/** A workflow command the runner turns into an annotation on the job. */
export function annotation(kind: 'warning' | 'error', title: string, message: string): string {
  return `::${kind} title=${escProp(title)}::${escData(message)}\n`;
}

export const checkNote = (c: Check) => `${c.status}: ${c.detail}${c.fix ? ` (fix: ${c.fix})` : ''}`;

export interface StartedOptions extends DoctorOptions { forkPolicy: ForkPolicy; stateDir: string }

/**
 * Before a job: the doctor (the functional probe whenever anything since the last good probe is not
 * a plain ok), then the fork policy. Only device findings fail the job; every other finding (a host
 * problem the probe or the log found included) is a warning annotation on it with its fix.
 */
export async function jobStarted(m: Machine, o: StartedOptions): Promise<HookResult> {
  const rep = await doctorReport(m, { ...o, functional: o.functional ?? 'auto' });
  let out = renderChecks(rep.checks, m.root);
  const fails = deviceFailures(rep.checks);
  let warnings = 0;
  for (const c of rep.checks) {
    if (c.status === 'ok' || fails.includes(c)) continue;
    out += annotation('warning', `npu-block-gate: ${c.id}`, checkNote(c));
    warnings++;
  }
  const last = readJson<LastJob>(join(o.stateDir, STATE_FILES.lastJob));
  const changes = versionChanges(last?.versions, rep.facts.versions);
  if (changes.length) {
    out += annotation('warning', 'npu-block-gate: versions changed', `since the last job (${last!.finished_at}): ${describeChanges(changes)}; a result that differs from before may come from this`);
    warnings++;
  }
  const e = m.env;
  const job: JobRecord = {
    started_at: m.now().toISOString(), repository: e.GITHUB_REPOSITORY ?? null, run_id: e.GITHUB_RUN_ID ?? null, job: e.GITHUB_JOB ?? null,
    versions: rep.facts.versions, refused: null,
  };
  // Best effort, and written before every job: no fsync (a crash loses the job's start time, no more).
  const save = () => { try { writeJson(join(o.stateDir, STATE_FILES.job), job, { durable: false }); } catch { /* state is best effort */ } };
  if (fails.length) {
    for (const c of fails) out += annotation('error', `npu-block-gate: ${c.id}`, checkNote(c));
    job.refused = `device: ${fails.map((c) => c.id).join(', ')}`;
    save();
    return { code: 1, out: out + `npu-block-gate: job-started hook: the NPU is not usable (${fails.map((c) => c.id).join(', ')}); failing the job before it runs\n` };
  }
  const why = forkVerdict(m.env, o.forkPolicy);
  if (why) {
    job.refused = `fork policy ${o.forkPolicy}`;
    save();
    return { code: 1, out: out + annotation('error', 'npu-block-gate: fork policy', why) + why + '\n' };
  }
  save();
  out += `npu-block-gate: job-started hook: NPU usable${warnings ? `, ${warnings} warning(s) on the job` : ''}; fork policy ${o.forkPolicy}: ok\n`;
  return { code: 0, out };
}