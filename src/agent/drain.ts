// `agent drain` / `agent undrain`: take the runner out of rotation and put it back.
// Two ways, chosen by whether the admin configured a token:
// - labels: remove the runner's NPU label(s) through the GitHub REST API (the runner id comes from
//   the runner's .runner file, which actions/runner's config.sh writes as JSON with "agentId",
//   "agentName" and "gitHubUrl"); workflows that ask for the label stop landing here. Undrain adds
//   the same labels back.
// - service: without a token, stop the runner's systemd service (its name is in the runner dir's
//   .service file, written by svc.sh install) once the current job is over, so it takes no job.
//   Stopping it during a job would cancel that job (the listener treats SIGINT as a cancel).
// Undrain happens only after the functional probe passes.
// A drain is reported as drained only once it is verified: the labels read back gone, or
// `systemctl is-active` saying the service is stopped. A refused one says why and is recorded as
// refused (status shows the runner as not drained).
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InfraError, InputError, oneLine } from '../errors.ts';
import type { Octokit } from '@octokit/rest';
import type { Machine } from './machine.ts';
import { findNpus, runXrtSmi } from './doctor.ts';
import type { Check } from './checks.ts';
import { lastFunctional, runFunctional, FUNCTIONAL_MAX_AGE_S, FUNCTIONAL_TIMEOUT_S } from './functional.ts';
import { memlockLimits } from './memlock.ts';
import { parseXrtSmi } from './parse.ts';
import { readJson, STATE_FILES, writeJson, type DrainRecord } from './state.ts';
import { drainSudoersRule, jobRunning, readRunnerSettings, runnerAccount, serviceName, systemctlPath, type RunnerSettings } from './runner.ts';

export { readRunnerSettings, serviceName, jobRunning, type RunnerSettings } from './runner.ts';

type RunnerScope = { kind: 'repo'; owner: string; repo: string; apiUrl: string } | { kind: 'org'; org: string; apiUrl: string };

/** Where the runner is registered (its gitHubUrl: https://github.com/<org>[/<repo>]) and the API that serves it. */
function runnerScope(s: RunnerSettings, apiUrl: string | null): RunnerScope {
  if (!s.gitHubUrl) throw new InputError('no "gitHubUrl": cannot tell which repository or organization the runner belongs to', s.file);
  let u: URL;
  try { u = new URL(s.gitHubUrl); } catch { throw new InputError(`"gitHubUrl" ${JSON.stringify(s.gitHubUrl)} is not a URL`, s.file); }
  const parts = u.pathname.split('/').filter(Boolean);
  const api = (apiUrl ?? (u.hostname === 'github.com' ? 'https://api.github.com' : `${u.origin}/api/v3`)).replace(/\/+$/, '');
  if (parts[0] === 'enterprises') throw new InputError(`${s.gitHubUrl} is an enterprise runner: drain it from the enterprise settings, or drain by stopping the service (no --token-file)`, s.file);
  if (parts.length === 1) return { kind: 'org', org: parts[0], apiUrl: api };
  if (parts.length === 2) return { kind: 'repo', owner: parts[0], repo: parts[1], apiUrl: api };
  throw new InputError(`"gitHubUrl" ${s.gitHubUrl} names neither a repository nor an organization`, s.file);
}

/** The admin's token: a file only its owner can read (the hooks and their logs never hold the token itself). */
export function readTokenFile(path: string): string {
  const p = resolve(path);
  let mode: number;
  try { mode = statSync(p).mode & 0o777; } catch { throw new InputError('no such token file', `--token-file ${p}`); }
  if (mode & 0o077) throw new InputError(`readable by group or others (mode ${mode.toString(8).padStart(4, '0')}): chmod 600 it`, `--token-file ${p}`);
  const token = readFileSync(p, 'utf8').trim();
  if (!token || /\s/.test(token)) throw new InputError('empty, or more than one word: it must hold only the token', `--token-file ${p}`);
  return token;
}

interface Label { name: string; type?: string }

class Labels {
  constructor(
    private readonly gh: Pick<Octokit, 'request'>,
    private readonly scope: RunnerScope,
    private readonly id: number,
    private readonly httpStatus: (e: unknown) => number | null,
  ) {}
  private base() {
    return this.scope.kind === 'repo'
      ? { route: 'repos/{owner}/{repo}', params: { owner: this.scope.owner, repo: this.scope.repo } }
      : { route: 'orgs/{org}', params: { org: this.scope.org } };
  }
  private async call(method: string, tail: string, extra: Record<string, unknown> = {}): Promise<Label[]> {
    const b = this.base();
    const what = `${method} /${b.route}/actions/runners/${this.id}/labels${tail.replace('{name}', String(extra.name ?? ''))}`;
    try {
      const r = await this.gh.request(`${method} /${b.route}/actions/runners/{runner_id}/labels${tail}`, { ...b.params, runner_id: this.id, ...extra });
      return ((r.data as { labels?: Label[] }).labels ?? []);
    } catch (e) {
      const st = this.httpStatus(e);
      const hint = st === 401 ? ': the token is not valid' : st === 403 ? ': the token may not administer this runner (repository Administration: write, or organization Self-hosted runners: write)' : st === 404 ? ': no such runner here (or the token cannot see it)' : '';
      throw new InfraError(`GitHub ${what}: ${st ?? 'no answer'} ${oneLine(e)}${hint}`);
    }
  }
  list() { return this.call('GET', ''); }
  remove(name: string) { return this.call('DELETE', '/{name}', { name }); }
  add(labels: string[]) { return this.call('POST', '', { labels }); }
}

interface DrainOptions {
  runnerDir: string;
  tokenFile: string | null;
  /** The labels to remove (default: every custom label of the runner). */
  labels: string[];
  apiUrl: string | null;
  stateDir: string;
  reason: string;
  /** Called from the job-completed hook: the job is ending, stop the service in the background. */
  fromHook: boolean;
  /** Seconds the background service stop waits, so the job finishes reporting first. */
  stopDelayS?: number;
}

interface DrainResult { record: DrainRecord; lines: string[] }

const drainPath = (stateDir: string) => join(stateDir, STATE_FILES.drain);
const readDrain = (stateDir: string) => readJson<DrainRecord>(drainPath(stateDir));

/**
 * A few label calls: retry on 5xx, the proxy variables honoured (proxyFetch), GHES through the API
 * URL; no write throttling. The GitHub client is imported here, only when a token is used, so
 * the job hooks and the rest of the agent never load octokit or undici.
 */
async function labelsFor(m: Machine, scope: RunnerScope, token: string, id: number): Promise<Labels> {
  // One module: dist/hook.js (one file) leaves this import alone as the one chunk it may load (scripts/build.mjs).
  const { RetryOctokit, httpStatus, proxyFetch } = await import('../github/octokit.ts');
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const gh = new RetryOctokit({ auth: token, baseUrl: scope.apiUrl, userAgent: 'npu-block-gate-agent', request: { fetch: proxyFetch(m.env, scope.apiUrl) }, log: quiet, retry: { retries: 2 } });
  return new Labels(gh, scope, id, httpStatus);
}

/** Why the service drain cannot work, with the one fix: the narrow sudoers rule `agent setup` installs. */
function sudoersHint(m: Machine, svc: string): string {
  let rule: string;
  try { rule = drainSudoersRule(m.user(), svc, systemctlPath(m)); } catch (e) { return `agent setup installs no rule for it: ${oneLine(e)}`; }
  return `install the sudoers rule drain needs with sudo npu-block-gate agent setup --runner-user ${m.user()} --runner-dir <runner dir> (it writes: ${rule})`;
}

const why = (r: { error?: string; stderr: string; stdout: string; status: number | null }) => oneLine(r.error ?? (r.stderr.trim() || r.stdout.trim() || `exit ${r.status}`));

/** `systemctl is-active`: the service's state as systemd says it ("active", "inactive", "failed", ...), or null. */
function serviceState(m: Machine, svc: string): string | null {
  const r = m.run('systemctl', ['is-active', svc], 15_000);
  if (r.missing) return null;
  return r.stdout.trim().split('\n').pop() || null;
}

const stopped = (state: string | null) => state === 'inactive' || state === 'failed';

/** Stops the service now and verifies it with systemctl is-active (a few seconds for deactivating). */
async function stopNow(m: Machine, svc: string): Promise<string> {
  const r = m.run('sudo', ['-n', 'systemctl', 'stop', svc], 120_000);
  if (r.status !== 0) throw new InfraError(`sudo -n systemctl stop ${svc} failed: ${why(r)}; not drained: ${sudoersHint(m, svc)}`);
  let state = serviceState(m, svc);
  for (let i = 0; i < 10 && state === 'deactivating'; i++) { await m.sleep(1000); state = serviceState(m, svc); }
  if (!stopped(state)) throw new InfraError(`sudo -n systemctl stop ${svc} exited 0 but systemctl is-active says ${state ?? 'nothing (systemctl not found)'}: not drained`);
  return `stopped the runner service ${svc} (systemctl is-active: ${state})`;
}

/**
 * From the job-completed hook: the job is ending, so the stop runs in the background after a delay.
 * sudo is asked first whether it will allow the stop (sudo -n -l): a refused rule is said now, not
 * 30 s later where nobody sees it. The record stays pending until systemctl is-active says stopped.
 */
function scheduleStop(m: Machine, svc: string, delayS: number, stateDir: string, stopId: string): string {
  const may = m.run('sudo', ['-n', '-l', 'systemctl', 'stop', svc], 15_000);
  if (may.status !== 0) throw new InfraError(`sudo will not run systemctl stop ${svc} for ${m.user()} (sudo -n -l: ${why(may)}): not drained, the runner keeps taking jobs; ${sudoersHint(m, svc)}`);
  const r = m.run('sh', ['-c', stopScript(drainPath(stateDir), svc, delayS, stopId)], { detached: true });
  if (r.status !== 0) throw new InfraError(`could not start the background stop of ${svc}: ${why(r)}: not drained`);
  return `the runner service ${svc} is to stop in ${delayS}s, after this job (sudo -n systemctl stop ${svc}; sudo allows it; undrain before then cancels it); not drained until systemctl is-active says so (agent status checks)`;
}

const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The background stop: after the delay it re-reads the drain record and stops the service only when
 * the record still names this stop (its stop_id): an undrain (which removes the record) or a newer
 * drain within the window cancels it.
 */
function stopScript(recordPath: string, svc: string, delayS: number, stopId: string): string {
  return `sleep ${delayS}; grep -qF ${shQuote(`"stop_id": "${stopId}"`)} ${shQuote(recordPath)} 2>/dev/null || exit 0; exec sudo -n systemctl stop ${svc}`;
}

const newStopId = (m: Machine) => `${m.now().getTime().toString(36)}-${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 10)}`;

export async function drain(m: Machine, o: DrainOptions): Promise<DrainResult> {
  const prev = readDrain(o.stateDir);
  const now = m.now().toISOString();
  const settings = readRunnerSettings(o.runnerDir);
  const base = { at: prev?.state === 'drained' ? prev.at : now, reason: o.reason, runner_id: settings.agentId, runner_name: settings.agentName };
  if (o.tokenFile) {
    const scope = runnerScope(settings, o.apiUrl);
    const labels = await labelsFor(m, scope, readTokenFile(o.tokenFile), settings.agentId);
    const current = await labels.list();
    const custom = current.filter((l) => l.type !== 'read-only').map((l) => l.name);
    const want = o.labels.length ? o.labels : custom;
    const lines: string[] = [];
    const removed: string[] = [];
    for (const name of want) {
      if (!current.some((l) => l.name === name)) { lines.push(`label ${name}: not on runner ${settings.agentName ?? settings.agentId}`); continue; }
      await labels.remove(name);
      removed.push(name);
    }
    const had = [...new Set([...(prev?.state === 'drained' ? prev.labels : []), ...removed])];
    if (!had.length) {
      throw new InputError(`nothing to drain: runner ${settings.agentName ?? settings.agentId} has labels ${current.map((l) => l.name).join(', ') || '(none)'} and none of them ${o.labels.length ? 'is one of --label' : 'is a custom label'}`, o.labels.length ? '--label' : undefined);
    }
    // Read back: a label GitHub still lists is not drained, whatever the DELETE said.
    const after = (await labels.list()).map((l) => l.name);
    const left = had.filter((l) => after.includes(l));
    if (left.length) {
      const record: DrainRecord = { ...base, method: 'labels', labels: had, service: null, state: 'refused', evidence: `label${left.length > 1 ? 's' : ''} ${left.join(', ')} still on the runner after DELETE` };
      if (prev?.state !== 'drained') writeJson(drainPath(o.stateDir), record);
      throw new InfraError(`runner ${settings.agentName ?? settings.agentId} still has ${left.join(', ')} after removing them (read back): not drained`);
    }
    for (const name of removed) lines.push(`removed label ${name} from runner ${settings.agentName ?? settings.agentId} (id ${settings.agentId}); read back: gone`);
    const record: DrainRecord = { ...base, method: 'labels', labels: had, service: null, state: 'drained', evidence: `labels read back: ${had.join(', ')} gone (runner has ${after.join(', ') || 'no labels'})` };
    writeJson(drainPath(o.stateDir), record);
    return { record, lines };
  }
  const svc = serviceName(o.runnerDir);
  if (!svc) throw new InputError('no .service file (svc.sh install writes it): drain needs the runner installed as a service, or --token-file to drain by label', join(resolve(o.runnerDir), '.service'));
  const rec = (state: DrainRecord['state'], evidence: string): DrainRecord => ({ ...base, method: 'service', labels: [], service: svc, state, evidence });
  const refuse = (e: unknown): never => {
    if (prev?.state !== 'drained') writeJson(drainPath(o.stateDir), rec('refused', oneLine(e)));
    throw e;
  };
  let record: DrainRecord;
  let line: string;
  try {
    if (o.fromHook) {
      const stopId = newStopId(m);
      // The record names the stop before the stop can look for it.
      writeJson(drainPath(o.stateDir), { ...rec('pending', 'scheduling the service stop'), stop_id: stopId });
      line = scheduleStop(m, svc, o.stopDelayS ?? 30, o.stateDir, stopId);
      record = { ...rec('pending', line), stop_id: stopId };
    } else if (jobRunning(m)) {
      // Checked now, so a refusal is said now; the job-completed hook stops it when the job ends.
      const may = m.run('sudo', ['-n', '-l', 'systemctl', 'stop', svc], 15_000);
      if (may.status !== 0) throw new InfraError(`sudo will not run systemctl stop ${svc} for ${m.user()} (sudo -n -l: ${why(may)}): not drained; ${sudoersHint(m, svc)}`);
      line = `a job is running: the job-completed hook stops ${svc} when it ends (not drained until then)`;
      record = rec('waiting', line);
    } else {
      line = await stopNow(m, svc);
      record = rec('drained', line);
    }
  } catch (e) { return refuse(e); }
  writeJson(drainPath(o.stateDir), record);
  return { record, lines: [line] };
}

/** The job-completed hook's part: a service drain that waited for this job. */
export function finishPendingDrain(m: Machine, stateDir: string, delayS = 30): string | null {
  const rec = readDrain(stateDir);
  if (!rec || rec.method !== 'service' || rec.state !== 'waiting' || !rec.service) return null;
  try {
    const stopId = newStopId(m);
    // The record names the stop before the stop can look for it.
    writeJson(drainPath(stateDir), { ...rec, state: 'pending', stop_id: stopId });
    const line = scheduleStop(m, rec.service, delayS, stateDir, stopId);
    writeJson(drainPath(stateDir), { ...rec, state: 'pending', evidence: line, stop_id: stopId });
    return line;
  } catch (e) {
    writeJson(drainPath(stateDir), { ...rec, state: 'refused', evidence: oneLine(e) });
    throw e;
  }
}

/** The drain as it stands now: a pending service stop is verified with systemctl is-active (read only). */
export function drainStatus(m: Machine, stateDir: string): (DrainRecord & { drained: boolean }) | null {
  const rec = readDrain(stateDir);
  if (!rec) return null;
  if (rec.method === 'service' && rec.service && (rec.state === 'pending' || rec.state === 'waiting')) {
    const state = serviceState(m, rec.service);
    if (stopped(state)) return { ...rec, state: 'drained', evidence: `systemctl is-active ${rec.service}: ${state}`, drained: true };
    return { ...rec, evidence: `${rec.evidence}; systemctl is-active ${rec.service}: ${state ?? 'unknown'}`, drained: false };
  }
  // A stopped service can be started again (a reboot, ./run.sh, systemctl start): re-verified every time.
  if (rec.method === 'service' && rec.service && rec.state === 'drained') {
    const state = serviceState(m, rec.service);
    if (state !== null && !stopped(state)) return { ...rec, state: 'restarted', evidence: `drained at ${rec.at}, but the service was started again: systemctl is-active ${rec.service}: ${state}`, drained: false };
  }
  return { ...rec, drained: rec.state === 'drained' };
}

interface UndrainOptions {
  runnerDir: string;
  tokenFile: string | null;
  labels: string[];
  apiUrl: string | null;
  stateDir: string;
  /** Put it back without a passing functional probe. */
  force: boolean;
  functionalTest: string | null;
  functionalTimeoutS?: number;
}

interface UndrainResult { functional: Check | null; lines: string[] }

export async function undrain(m: Machine, o: UndrainOptions): Promise<UndrainResult> {
  const rec = readDrain(o.stateDir);
  const settings = readRunnerSettings(o.runnerDir);
  let functional: Check | null = null;
  if (!o.force) {
    // A pass since the drain counts; anything older (or a failure) is probed again now.
    const last = lastFunctional(o.stateDir);
    const fresh = last && last.status === 'ok' && (!rec || new Date(last.at).getTime() >= new Date(rec.at).getTime())
      && (m.now().getTime() - new Date(last.at).getTime()) / 1000 < FUNCTIONAL_MAX_AGE_S;
    if (fresh) functional = { id: 'functional', status: 'ok', scope: 'device', detail: `${last.detail} (ran at ${last.at}, after the drain)`, fix: null };
    else {
      const x = runXrtSmi(m);
      const xrt = x.missing ? null : parseXrtSmi(x.stdout).xrt;
      const npu = findNpus(m)?.find((n) => n.driver === 'amdxdna') ?? null;
      const res = await runFunctional(m, {
        stateDir: o.stateDir, test: o.functionalTest, xrt, timeoutS: o.functionalTimeoutS ?? FUNCTIONAL_TIMEOUT_S, limits: memlockLimits(m),
        limitsFrom: "this process's", applyLimits: false, runAs: m.uid === 0 ? runnerAccount(m, o.runnerDir) : null, bdf: npu?.bdf ?? null, npuLines: null,
        service: serviceName(o.runnerDir), kernelFix: null, linesSince: async () => [], lastPass: last?.last_ok ?? null,
      });
      functional = res.checks[0];
    }
    if (functional.status !== 'ok') {
      throw new InfraError(`the functional probe did not pass (${functional.status}: ${functional.detail}); the runner stays drained${functional.fix ? `; fix: ${functional.fix}` : ''}`);
    }
  }
  const lines: string[] = [];
  const method = rec?.method ?? (o.tokenFile ? 'labels' : 'service');
  if (method === 'labels') {
    if (!o.tokenFile) throw new InputError('the runner was drained by label: pass --token-file (or hooks install --token-file) to put the labels back', '--token-file');
    const want = [...new Set([...(rec?.labels ?? []), ...o.labels])];
    if (!want.length) throw new InputError('no drain record names the labels to restore: pass --label', '--label');
    const scope = runnerScope(settings, o.apiUrl);
    const labels = await labelsFor(m, scope, readTokenFile(o.tokenFile), settings.agentId);
    await labels.add(want);
    const after = (await labels.list()).map((l) => l.name);
    const missing = want.filter((l) => !after.includes(l));
    if (missing.length) throw new InfraError(`runner ${settings.agentName ?? settings.agentId} lacks ${missing.join(', ')} after adding them (read back): still drained`);
    lines.push(`restored label${want.length > 1 ? 's' : ''} ${want.join(', ')} on runner ${settings.agentName ?? settings.agentId} (id ${settings.agentId}); read back: present`);
  } else {
    const svc = rec?.service ?? serviceName(o.runnerDir);
    if (!svc) throw new InputError('no .service file: start the runner yourself (./run.sh)', join(resolve(o.runnerDir), '.service'));
    const r = m.run('sudo', ['-n', 'systemctl', 'start', svc], 120_000);
    if (r.status !== 0) throw new InfraError(`sudo -n systemctl start ${svc} failed: ${why(r)}; ${sudoersHint(m, svc)}`);
    const state = serviceState(m, svc);
    if (state !== null && state !== 'active' && state !== 'activating') throw new InfraError(`sudo -n systemctl start ${svc} exited 0 but systemctl is-active says ${state}: still out of rotation`);
    lines.push(`started the runner service ${svc}${state ? ` (systemctl is-active: ${state})` : ''}`);
  }
  rmSync(drainPath(o.stateDir), { force: true });
  return { functional, lines };
}
