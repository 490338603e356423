// `agent hooks install` and `agent hook job-started|job-completed`: the GitHub Actions runner's job
// hooks (ACTIONS_RUNNER_HOOK_JOB_STARTED / _COMPLETED in the runner's .env). The scripts are shims
// that call this CLI by absolute path; the logic is here.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultCacheRoot } from '../cache/kernel.ts';
import { InputError, oneLine } from '../errors.ts';
import type { Machine } from './machine.ts';
import { doctor, kernelLog, renderChecks, runXrtSmi, summarize, type DoctorOptions } from './doctor.ts';
import { cacheGc, renderGc } from './cache.ts';

export type ForkPolicy = 'allow' | 'deny';
export const HOOK_VARS = { 'job-started': 'ACTIONS_RUNNER_HOOK_JOB_STARTED', 'job-completed': 'ACTIONS_RUNNER_HOOK_JOB_COMPLETED' } as const;
export type HookName = keyof typeof HOOK_VARS;
export const LOG_DAYS = 14;

/** How the scripts call this CLI: node, its flags (tsx's loader when running src/cli.ts), the script. */
export interface SelfCommand { node: string; execArgv: string[]; script: string }

export function selfCommand(): SelfCommand {
  const script = resolve(process.argv[1] ?? 'dist/cli.js');
  return { node: process.execPath, execArgv: script.endsWith('.ts') ? process.execArgv : [], script };
}

export const defaultHooksDir = (m: Machine) => join(m.home(), '.npu-block-gate', 'hooks');

const sq = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

export function hookScript(self: SelfCommand, name: HookName, args: string[]): string {
  const cmd = [self.node, ...self.execArgv, self.script, 'agent', 'hook', name, ...args].map(sq).join(' ');
  return `#!/bin/sh\n# ${name} hook of the GitHub Actions runner, written by \`npu-block-gate agent hooks install\`.\nexec ${cmd} "$@"\n`;
}

/** Writes path atomically (temp + rename) unless it already has this content and mode. */
function writeAtomic(path: string, text: string, mode: number): boolean {
  try {
    if (readFileSync(path, 'utf8') === text && (statSync(path).mode & 0o777) === mode) return false;
  } catch { /* missing */ }
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, path);
  return true;
}

/** .env text with the two hook lines added or replaced; every other line kept byte for byte. */
export function updateEnv(text: string, lines: Record<string, string>): string {
  const parts = text.length ? text.split(/(?<=\n)/) : [];
  const seen = new Set<string>();
  const out: string[] = [];
  for (const p of parts) {
    const key = Object.keys(lines).find((k) => p.startsWith(`${k}=`));
    if (!key) { out.push(p); continue; }
    if (seen.has(key)) continue; // a duplicate: drop it
    seen.add(key);
    out.push(`${key}=${lines[key]}${p.endsWith('\r\n') ? '\r\n' : '\n'}`);
  }
  const missing = Object.keys(lines).filter((k) => !seen.has(k));
  if (missing.length && out.length && !out[out.length - 1].endsWith('\n')) out[out.length - 1] += '\n';
  for (const k of missing) out.push(`${k}=${lines[k]}\n`);
  return out.join('');
}

export interface InstallOptions { dir: string; runnerDir: string | null; forkPolicy: ForkPolicy; cacheMaxBytes: string | null; self: SelfCommand }

export function installHooks(o: InstallOptions): string {
  const dir = resolve(o.dir);
  mkdirSync(dir, { recursive: true });
  const report: string[] = [];
  const paths = { 'job-started': join(dir, 'job-started.sh'), 'job-completed': join(dir, 'job-completed.sh') };
  const args = {
    'job-started': ['--fork-policy', o.forkPolicy],
    'job-completed': ['--dir', dir, ...(o.cacheMaxBytes ? ['--cache-max-bytes', o.cacheMaxBytes] : [])],
  };
  for (const name of ['job-started', 'job-completed'] as HookName[]) {
    const changed = writeAtomic(paths[name], hookScript(o.self, name, args[name]), 0o755);
    report.push(`${changed ? 'wrote    ' : 'unchanged'} ${paths[name]}`);
  }
  const lines = { [HOOK_VARS['job-started']]: paths['job-started'], [HOOK_VARS['job-completed']]: paths['job-completed'] };
  if (o.runnerDir) {
    const runner = resolve(o.runnerDir);
    if (!existsSync(runner)) throw new InputError(`--runner-dir ${runner}: no such directory`);
    const env = join(runner, '.env');
    let text = '';
    let mode = 0o644;
    try { text = readFileSync(env, 'utf8'); mode = statSync(env).mode & 0o777; } catch { /* new .env */ }
    const next = updateEnv(text, lines);
    const changed = next !== text && writeAtomic(env, next, mode);
    report.push(`${changed ? 'updated  ' : 'unchanged'} ${env} (${Object.keys(lines).join(', ')})`);
    if (changed) report.push('restart the runner service (sudo ./svc.sh stop && sudo ./svc.sh start) so it reads .env');
  } else {
    report.push(`add these lines to the runner's .env (in its install dir), then restart the runner:`);
    for (const [k, v] of Object.entries(lines)) report.push(`  ${k}=${v}`);
  }
  return report.join('\n') + '\n';
}

/** The fork policy's verdict on the job's event: null when allowed, else the one line why not. */
export function forkVerdict(env: NodeJS.ProcessEnv, policy: ForkPolicy): string | null {
  if (policy === 'allow') return null;
  const p = env.GITHUB_EVENT_PATH;
  if (!p) return null; // not a GitHub job event
  let ev: { pull_request?: { head?: { repo?: { full_name?: string } | null }; base?: { repo?: { full_name?: string } } } };
  try { ev = JSON.parse(readFileSync(p, 'utf8')); } catch (e) {
    return `npu-block-gate: fork policy deny: cannot read the job's event ${p} (${oneLine(e)}); refusing to run`;
  }
  const pr = ev?.pull_request;
  if (!pr) return null;
  const head = pr.head?.repo?.full_name ?? null;
  const base = pr.base?.repo?.full_name ?? null;
  if (head && base && head === base) return null;
  return `npu-block-gate: fork policy deny: pull request from ${head ?? 'a deleted fork'} into ${base ?? 'this repository'} runs untrusted code on this runner's NPU; refusing the job`;
}

export interface HookResult { code: 0 | 1; out: string }

export function jobStarted(m: Machine, o: DoctorOptions & { forkPolicy: ForkPolicy }): HookResult {
  const checks = doctor(m, o);
  let out = renderChecks(checks, m.root);
  if (summarize(checks).fail) return { code: 1, out: out + 'npu-block-gate: job-started hook: the runner is not healthy; failing the job before it runs\n' };
  const why = forkVerdict(m.env, o.forkPolicy);
  if (why) return { code: 1, out: out + why + '\n' };
  out += `npu-block-gate: job-started hook: runner healthy${o.forkPolicy === 'deny' ? ', fork policy deny: ok' : ''}\n`;
  return { code: 0, out };
}

const day = (d: Date) => d.toISOString().slice(0, 10);

/** Appends the job's diagnostics to <dir>/logs/<date>.log and drops logs older than 14 days. */
export function recordDiagnostics(m: Machine, dir: string): { log: string; pruned: string[] } {
  const logs = join(resolve(dir), 'logs');
  mkdirSync(logs, { recursive: true });
  const now = m.now();
  const e = m.env;
  const parts = [`=== job-completed ${now.toISOString()}${e.GITHUB_REPOSITORY ? ` ${e.GITHUB_REPOSITORY}` : ''}${e.GITHUB_RUN_ID ? ` run ${e.GITHUB_RUN_ID}` : ''}${e.GITHUB_JOB ? ` job ${e.GITHUB_JOB}` : ''} ===`];
  const k = kernelLog(m, 1);
  if ('error' in k) parts.push(`--- kernel log: ${k.error}`);
  else {
    const lines = k.text.split(/\r?\n/).filter((l) => /amdxdna|aie2_/i.test(l));
    parts.push(`--- kernel log, amdxdna lines (${k.source}): ${lines.length}`, ...lines);
  }
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

export function jobCompleted(m: Machine, o: { dir: string; cacheDir: string | null; maxBytes: number }): HookResult {
  let out = '';
  try {
    const d = recordDiagnostics(m, o.dir);
    out += `npu-block-gate: diagnostics appended to ${d.log}${d.pruned.length ? ` (dropped ${d.pruned.length} log(s) older than ${LOG_DAYS} days)` : ''}\n`;
  } catch (e) {
    out += `npu-block-gate: diagnostics not recorded: ${oneLine(e)}\n`;
  }
  out += renderGc(cacheGc(o.cacheDir ?? defaultCacheRoot(m.env), o.maxBytes));
  return { code: 0, out };
}
