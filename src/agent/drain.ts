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
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InfraError, InputError, oneLine } from '../errors.ts';
import type { Octokit } from '@octokit/rest';
import type { Machine } from './machine.ts';
import { checkFunctional, defaultFunctionalTest, FUNCTIONAL_MAX_AGE_S, FUNCTIONAL_TIMEOUT_S, lastFunctional, memlockLimits, findNpus, runXrtSmi, type Check } from './doctor.ts';
import { parseXrtSmi } from './parse.ts';
import { readJson, STATE_FILES, writeJson, type DrainRecord } from './state.ts';

export interface RunnerSettings { agentId: number; agentName: string | null; gitHubUrl: string | null; ephemeral: boolean; file: string }

/** The runner's .runner file (JSON, UTF-8 with a BOM as .NET writes it). */
export function readRunnerSettings(runnerDir: string): RunnerSettings {
  const file = join(resolve(runnerDir), '.runner');
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch {
    throw new InputError(`no .runner file: is --runner-dir the runner's install dir (where config.sh wrote it)?`, file);
  }
  let j: Record<string, unknown>;
  try { j = JSON.parse(text.replace(/^\uFEFF/, '')); } catch (e) {
    throw new InputError(`not JSON (${oneLine(e)})`, file);
  }
  const id = Number(j.agentId);
  if (!Number.isInteger(id) || id <= 0) throw new InputError('no "agentId" (the runner id): configure the runner with config.sh first', file);
  return { agentId: id, agentName: typeof j.agentName === 'string' ? j.agentName : null, gitHubUrl: typeof j.gitHubUrl === 'string' ? j.gitHubUrl : null, ephemeral: j.ephemeral === true, file };
}

export type RunnerScope = { kind: 'repo'; owner: string; repo: string; apiUrl: string } | { kind: 'org'; org: string; apiUrl: string };

/** Where the runner is registered (its gitHubUrl: https://github.com/<org>[/<repo>]) and the API that serves it. */
export function runnerScope(s: RunnerSettings, apiUrl: string | null): RunnerScope {
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

/** The runner's systemd service, from the .service file svc.sh install writes; null when it runs otherwise. */
export function serviceName(runnerDir: string | null): string | null {
  if (!runnerDir) return null;
  try { return readFileSync(join(resolve(runnerDir), '.service'), 'utf8').trim() || null; } catch { return null; }
}

/** A job is running: the runner starts bin/Runner.Worker for each job. */
export function jobRunning(m: Machine): boolean {
  for (const pid of (m.list('/proc') ?? []).filter((n) => /^\d+$/.test(n))) {
    const c = m.readBytes(`/proc/${pid}/cmdline`)?.toString('utf8') ?? '';
    if (/Runner\.Worker/.test(c)) return true;
  }
  return false;
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

export interface DrainOptions {
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

export interface DrainResult { record: DrainRecord; lines: string[] }

const drainPath = (stateDir: string) => join(stateDir, STATE_FILES.drain);
export const readDrain = (stateDir: string) => readJson<DrainRecord>(drainPath(stateDir));

/**
 * A few label calls: retry on 5xx, the proxy variables honoured (proxyFetch), GHES through the API
 * URL; no write throttling. The GitHub client is imported here, only when a token is used, so
 * the job hooks and the rest of the agent never load octokit or undici.
 */
async function labelsFor(m: Machine, scope: RunnerScope, token: string, id: number): Promise<Labels> {
  const [{ Octokit }, { retry }, { httpStatus, proxyFetch }] = await Promise.all([import('@octokit/rest'), import('@octokit/plugin-retry'), import('../github/octokit.ts')]);
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const gh = new (Octokit.plugin(retry))({ auth: token, baseUrl: scope.apiUrl, userAgent: 'npu-block-gate-agent', request: { fetch: proxyFetch(m.env, scope.apiUrl) }, log: quiet, retry: { retries: 2 } });
  return new Labels(gh, scope, id, httpStatus);
}

const sudoers = (user: string, svc: string) => `${user} ALL=(root) NOPASSWD: /usr/bin/systemctl stop ${svc}, /usr/bin/systemctl start ${svc}`;

/** Stops the runner service now, or (from the job-completed hook) in the background after a delay. */
export function stopService(m: Machine, svc: string, o: { background: boolean; delayS: number }): string {
  if (o.background) {
    const r = m.run('sh', ['-c', `sleep ${o.delayS}; exec sudo -n systemctl stop ${svc}`], { detached: true });
    if (r.status !== 0) throw new InfraError(`could not start the background stop of ${svc}: ${r.error ?? r.stderr.trim()}`);
    return `the runner service ${svc} stops in ${o.delayS}s, after this job (sudo -n systemctl stop ${svc})`;
  }
  const r = m.run('sudo', ['-n', 'systemctl', 'stop', svc], 120_000);
  if (r.status !== 0) {
    throw new InfraError(`sudo -n systemctl stop ${svc} failed: ${oneLine(r.error ?? (r.stderr.trim() || `exit ${r.status}`))}; allow it in sudoers: ${sudoers(m.user(), svc)}`);
  }
  return `stopped the runner service ${svc}`;
}

export async function drain(m: Machine, o: DrainOptions): Promise<DrainResult> {
  const prev = readDrain(o.stateDir);
  const now = m.now().toISOString();
  const settings = readRunnerSettings(o.runnerDir);
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
      lines.push(`removed label ${name} from runner ${settings.agentName ?? settings.agentId} (id ${settings.agentId})`);
    }
    if (!removed.length && !prev) {
      throw new InputError(`nothing to drain: runner ${settings.agentName ?? settings.agentId} has labels ${current.map((l) => l.name).join(', ') || '(none)'} and none of them ${o.labels.length ? 'is one of --label' : 'is a custom label'}`, o.labels.length ? '--label' : undefined);
    }
    const record: DrainRecord = {
      at: prev?.at ?? now, reason: o.reason, method: 'labels', runner_id: settings.agentId, runner_name: settings.agentName,
      labels: [...new Set([...(prev?.labels ?? []), ...removed])], service: null, pending: false,
    };
    writeJson(drainPath(o.stateDir), record);
    return { record, lines };
  }
  const svc = serviceName(o.runnerDir);
  if (!svc) throw new InputError('no .service file (svc.sh install writes it): drain needs the runner installed as a service, or --token-file to drain by label', join(resolve(o.runnerDir), '.service'));
  const record: DrainRecord = { at: prev?.at ?? now, reason: o.reason, method: 'service', runner_id: settings.agentId, runner_name: settings.agentName, labels: [], service: svc, pending: false };
  let line: string;
  if (o.fromHook) line = stopService(m, svc, { background: true, delayS: o.stopDelayS ?? 30 });
  else if (jobRunning(m)) { record.pending = true; line = `a job is running: the job-completed hook stops ${svc} when it ends`; }
  else line = stopService(m, svc, { background: false, delayS: 0 });
  writeJson(drainPath(o.stateDir), record);
  return { record, lines: [line] };
}

/** The job-completed hook's part: a service drain that waited for this job. */
export function finishPendingDrain(m: Machine, stateDir: string, delayS = 30): string | null {
  const rec = readDrain(stateDir);
  if (!rec || rec.method !== 'service' || !rec.pending || !rec.service) return null;
  const line = stopService(m, rec.service, { background: true, delayS });
  writeJson(drainPath(stateDir), { ...rec, pending: false });
  return line;
}

export interface UndrainOptions {
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

export interface UndrainResult { functional: Check | null; lines: string[] }

export async function undrain(m: Machine, o: UndrainOptions): Promise<UndrainResult> {
  const rec = readDrain(o.stateDir);
  const settings = readRunnerSettings(o.runnerDir);
  let functional: Check | null = null;
  if (!o.force) {
    // A pass since the drain counts; anything older (or a failure) is probed again now.
    const last = lastFunctional(o.stateDir);
    const fresh = last && last.status === 'ok' && (!rec || new Date(last.at).getTime() >= new Date(rec.at).getTime());
    const x = runXrtSmi(m);
    const xrt = x.missing ? null : parseXrtSmi(x.stdout).xrt;
    const npu = findNpus(m)?.find((n) => n.driver === 'amdxdna') ?? null;
    functional = checkFunctional(m, {
      stateDir: o.stateDir, test: o.functionalTest ?? defaultFunctionalTest(xrt), xrt, limits: memlockLimits(m), maxAgeS: fresh ? FUNCTIONAL_MAX_AGE_S : 0,
      timeoutS: o.functionalTimeoutS ?? FUNCTIONAL_TIMEOUT_S, force: !fresh, bdf: npu?.bdf ?? null, npuLines: null, service: serviceName(o.runnerDir),
    });
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
    lines.push(`restored label${want.length > 1 ? 's' : ''} ${want.join(', ')} on runner ${settings.agentName ?? settings.agentId} (id ${settings.agentId})`);
  } else {
    const svc = rec?.service ?? serviceName(o.runnerDir);
    if (!svc) throw new InputError('no .service file: start the runner yourself (./run.sh)', join(resolve(o.runnerDir), '.service'));
    const r = m.run('sudo', ['-n', 'systemctl', 'start', svc], 120_000);
    if (r.status !== 0) throw new InfraError(`sudo -n systemctl start ${svc} failed: ${oneLine(r.error ?? (r.stderr.trim() || `exit ${r.status}`))}; allow it in sudoers: ${sudoers(m.user(), svc)}`);
    lines.push(`started the runner service ${svc}`);
  }
  rmSync(drainPath(o.stateDir), { force: true });
  return { functional, lines };
}
