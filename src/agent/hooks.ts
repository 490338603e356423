// `agent hooks install` and `agent hook job-started|job-completed`: the GitHub Actions runner's job
// hooks (ACTIONS_RUNNER_HOOK_JOB_STARTED / _COMPLETED in the runner's .env). The scripts are shims
// that call a stable copy of this CLI by absolute path; the logic is here.
//
// Facts from actions/runner this relies on: the runner reads .env into its own environment at
// start; it runs a hook as a step with an empty step environment (JobHookProvider: job and step
// `env:` never reach it; ScriptHandler still adds the GITHUB_* context variables such as
// GITHUB_EVENT_NAME and GITHUB_EVENT_PATH), .sh hooks with `bash --noprofile --norc -e -o pipefail` (HostContext
// GetDefaultShellForScript, ScriptHandlerHelpers); job-started runs before the job's steps and
// fails the job when it exits non-zero; job-completed runs under always().
import { writeAtomic as writeFileAtomic } from '../fs/atomic.ts';
import type * as Crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { defaultCacheRoot } from '../cache/kernel.ts';
import { InputError, oneLine } from '../errors.ts';
import type { Machine } from './machine.ts';
import { doctorReport, renderChecks, runXrtSmi, type DoctorOptions, type FunctionalWhen } from './doctor.ts';
import { deviceFailures, type Check } from './checks.ts';
import { cacheGc, renderGc } from './cache.ts';
import { readJson, STATE_FILES, writeJson, type JobOutcome, type JobRecord, type LastJob } from './state.ts';
import { describeChanges, versionChanges } from './status.ts';
import { drain, drainStatus, finishPendingDrain, readTokenFile } from './drain.ts';
import { appendJob, countJob, writeTextfile, type JobLine } from './metrics.ts';
import { readKernelLog, readNote } from './klog.ts';
import { lastFunctional } from './functional.ts';
import { runnerName, serviceName } from './runner.ts';

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
/**
 * When nothing can vouch for the NPU (the kernel log shows a warning, or an error line no signature
 * explains, and the functional probe could not run: memlock, permissions, the XRT install): refuse
 * the job (the default: a wedge may hide there), or run it with the warnings.
 */
export type WhenUnknown = 'refuse' | 'run';
export const DEFAULT_WHEN_UNKNOWN: WhenUnknown = 'refuse';
const HOOK_VARS = { 'job-started': 'ACTIONS_RUNNER_HOOK_JOB_STARTED', 'job-completed': 'ACTIONS_RUNNER_HOOK_JOB_COMPLETED' } as const;
type HookName = keyof typeof HOOK_VARS;
const LOG_DAYS = 14;
const MARKER = 'written by `npu-block-gate agent hooks install`';

/** How the hooks call this CLI: node, its flags (tsx's loader for src/cli.ts), the script; a bundle (dist/cli.js) is copied, sources are used in place. */
export interface SelfCommand { node: string; execArgv: string[]; script: string; kind: 'bundle' | 'source' }

export function selfCommand(): SelfCommand {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) {
    let loader: string[] = [];
    try {
      const pkg = createRequire(import.meta.url).resolve('tsx/package.json');
      loader = ['--import', pathToFileURL(join(dirname(pkg), 'dist', 'loader.mjs')).href];
    } catch { /* no tsx: the shim will say so when it runs */ }
    return { node: process.execPath, execArgv: loader, script: resolve(dirname(here), '..', 'cli.ts'), kind: 'source' };
  }
  // The bundle: this module is in dist/ or in dist/chunks/; the hooks run dist/hook.js (the agent
  // without the judging pipeline), else dist/cli.js.
  for (const dir of [dirname(here), dirname(dirname(here))]) {
    for (const entry of ['hook.js', 'cli.js']) if (existsSync(join(dir, entry))) return { node: process.execPath, execArgv: [], script: join(dir, entry), kind: 'bundle' };
  }
  return { node: process.execPath, execArgv: [], script: here, kind: 'bundle' };
}

// esbuild's code splitting writes `import ... from "./chunks/x.js"`, `import "./x.js"` and `import("./chunks/y.js")`.
const BUNDLE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^import\s*)["'](\.{1,2}\/[^"'\n]+?\.js)["']/gm;

/**
 * A bundle entry and every file it imports, at start or (with onDemand) on demand, as paths
 * relative to the entry's dir (the entry first): what a copy of it needs. A match naming no file
 * is not one of the bundle's own imports (text inside a bundled dependency) and is left out.
 */
export function bundleFiles(entry: string, onDemand = true): string[] {
  const base = dirname(entry);
  const files = [basename(entry)];
  for (let i = 0; i < files.length; i++) {
    const from = join(base, files[i]);
    for (const m of readFileSync(from, 'utf8').matchAll(BUNDLE_IMPORT)) {
      if (!onDemand && m[0].includes('(')) continue;
      const rel = relative(base, join(dirname(from), m[1]));
      if (rel.startsWith('..') || isAbsolute(rel) || files.includes(rel) || !existsSync(join(base, rel))) continue;
      files.push(rel);
    }
  }
  return files;
}

/** Why a path will not last (npm prunes its npx cache; the runner replaces _work/_actions), or null. */
function unstableReason(path: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const p = resolve(path).replace(/\\/g, '/');
  if (/\/_npx\//.test(p)) return 'an npx cache, which npm prunes';
  const cache = env.npm_config_cache ? resolve(env.npm_config_cache).replace(/\\/g, '/') : null;
  if ((cache && p.startsWith(cache + '/')) || /\/\.npm\//.test(p)) return 'the npm cache';
  if (/\/(\.cache\/pnpm|pnpm\/dlx|\.bun\/install\/cache|\.yarn\/berry\/cache)\//.test(p)) return 'a package manager cache';
  if (/\/_work\/(_actions|_temp|_tool)\//.test(p)) return "the runner's work folder, which the runner replaces or cleans";
  const tmp = resolve(tmpdir()).replace(/\\/g, '/');
  if (p.startsWith(tmp + '/') || /^\/(tmp|var\/tmp)\//.test(p)) return 'a temp dir';
  return null;
}

interface InstalledCli { argv: string[]; line: string }

/**
 * The command the hooks run. A bundle is copied to <dir>/cli/<content hash>/cli.js (beside a
 * package.json that makes it an ES module, as in the package), so pruning the place it was
 * installed from (an npx cache, a runner _work dir) breaks nothing; a source checkout is used
 * where it is, and refused when that place will not last. The name stays cli.js: src/cli.ts runs
 * main() only when invoked as cli.js, cli.ts or npu-block-gate.
 */
function installCli(self: SelfCommand, dir: string, env: NodeJS.ProcessEnv): InstalledCli {
  const nodeWhy = unstableReason(self.node, env);
  if (nodeWhy) throw new InputError(`is under ${nodeWhy}: the hooks need a node that stays (install Node.js system-wide, then run hooks install with it)`, `node ${self.node}`);
  if (self.kind === 'source') {
    const why = unstableReason(self.script, env);
    if (why) throw new InputError(`is under ${why}, so every job would break once it goes: install npu-block-gate where it stays (npm install -g npu-block-gate, or a git checkout) and run hooks install from there`, self.script);
    return { argv: [self.node, ...self.execArgv, self.script], line: `hooks run the CLI in place: ${self.script} (a source checkout: keep it there)` };
  }
  let files: { rel: string; bytes: Buffer }[];
  try {
    files = bundleFiles(self.script).map((rel) => ({ rel, bytes: readFileSync(join(dirname(self.script), rel)) }));
  } catch (e) { throw new InputError(`cannot read the CLI to copy it (${oneLine(e)})`, self.script); }
  // crypto is loaded here, by hooks install only: the hooks themselves never pay its load.
  const h = (process.getBuiltinModule('node:crypto') as typeof Crypto).createHash('sha256');
  for (const f of files) h.update(f.rel).update('\0').update(f.bytes).update('\0');
  const hash = h.digest('hex').slice(0, 12);
  const root = join(dir, 'cli');
  const copy = join(root, hash);
  const dest = join(copy, files[0].rel);
  const pkg = join(copy, 'package.json');
  const pkgText = JSON.stringify({ type: 'module', private: true, description: 'the copy of npu-block-gate the runner hooks run' }) + '\n';
  const same = (f: { rel: string; bytes: Buffer }) => { try { return readFileSync(join(copy, f.rel)).equals(f.bytes); } catch { return false; } };
  let line = `unchanged copy of the CLI ${dest}`;
  if (!existsSync(pkg) || !files.every(same)) {
    mkdirSync(copy, { recursive: true });
    writeFileSync(pkg, pkgText);
    // The chunks first, the entry last: the copy runs only once it is whole.
    for (const f of [...files.slice(1), files[0]]) {
      const to = join(copy, f.rel);
      mkdirSync(dirname(to), { recursive: true });
      writeFileAtomic(to, f.bytes, { mode: f === files[0] ? 0o755 : 0o644, follow: false });
    }
    const chunks = files.length > 1 ? ` and the ${files.length - 1} chunk(s) it loads` : '';
    line = `installed a copy of the CLI ${dest}${chunks} (from ${self.script}; the hooks no longer depend on where that lives)`;
  }
  for (const old of readdirSync(root)) if (old !== hash) rmSync(join(root, old), { recursive: true, force: true });
  return { argv: [self.node, ...self.execArgv, dest], line };
}

export const defaultHooksDir = (m: Machine) => join(m.home(), '.npu-block-gate', 'hooks');

const sq = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** How the runner itself would run a hook script (HostContext.GetDefaultShellForScript), as a shell command. */
function chainCommand(path: string, node: string): string {
  switch (extname(path)) {
    case '.sh': return `if command -v bash >/dev/null 2>&1; then bash --noprofile --norc -e -o pipefail ${sq(path)}; else sh -e ${sq(path)}; fi`;
    case '.js': return `${sq(node)} ${sq(path)}`;
    case '.ps1': return `pwsh -command ${sq(`. '${path.replace(/'/g, "''")}'`)}`;
    default: throw new InputError('the runner only runs hooks ending in .sh, .ps1 or .js, so there is nothing to chain to', path);
  }
}

interface ShimOptions {
  name: HookName;
  /** node, its flags and the CLI. */
  argv: string[];
  hookArgs: string[];
  /** Set in the shim: the runner gives hooks none of the job's env:. */
  env: Record<string, string>;
  /** The hook this runner had before ours: it keeps running, first. */
  chain: string | null;
}

function hookScript(o: ShimOptions): string {
  const lines = ['#!/bin/sh', `# ${o.name} hook of the GitHub Actions runner, ${MARKER}.`];
  if (Object.keys(o.env).length) {
    lines.push("# The runner starts hooks without the job's env:, so what the checks need is set here.");
    for (const [k, v] of Object.entries(o.env)) lines.push(`${k}=${sq(v)}; export ${k}`);
  }
  const ours = [...o.argv, 'agent', 'hook', o.name, ...o.hookArgs].map(sq).join(' ');
  if (o.chain) {
    const run = chainCommand(o.chain, o.argv[0]);
    lines.push(`# npu-block-gate-chain: ${o.chain}`, '# The hook this runner had before runs first and keeps its say: its failure fails the job, as before.');
    if (o.name === 'job-started') lines.push(`${run} || exit $?`, `exec ${ours}`);
    else lines.push('status=0', `${run} || status=$?`, `${ours} || exit $?`, 'exit $status');
  } else {
    lines.push(`exec ${ours}`);
  }
  return lines.join('\n') + '\n';
}

/** The hook an existing shim of ours chains to, or null; undefined when the file is not ours. */
function shimChain(path: string): string | null | undefined {
  let text: string;
  try { text = readFileSync(path, 'utf8'); } catch { return undefined; }
  if (!text.includes(MARKER)) return undefined;
  return /^# npu-block-gate-chain: (.+)$/m.exec(text)?.[1] ?? null;
}

/** Writes path atomically (temp + rename) unless it already has this content and mode. */
function writeAtomic(path: string, text: string, mode: number): boolean {
  try {
    if (readFileSync(path, 'utf8') === text && (statSync(path).mode & 0o777) === mode) return false;
  } catch { /* missing */ }
  writeFileAtomic(path, text, { mode, follow: false });
  return true;
}

/** The value of KEY=value in .env text (the last one wins, as the runner reads it), or null. */
function envValue(text: string, key: string): string | null {
  let v: string | null = null;
  for (const line of text.split(/\r?\n/)) if (line.startsWith(`${key}=`)) v = line.slice(key.length + 1).trim();
  return v || null;
}

/** .env text with the two hook lines added or replaced; every other line kept byte for byte. */
function updateEnv(text: string, lines: Record<string, string>): string {
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

interface InstallOptions {
  dir: string;
  runnerDir: string | null;
  forkPolicy: ForkPolicy;
  cacheMaxBytes: string | null;
  self: SelfCommand;
  /** The mlir-air environment's Python, passed to the checks. */
  python: string | null;
  /** HF_HOME for the checks (the warm cache the jobs use). */
  hfHome: string | null;
  /** HF_HUB_OFFLINE=1 for the checks (as the jobs run). */
  offline: boolean;
  /** Keep an existing, different hook running before ours. */
  chain: boolean;
  stateDir: string | null;
  functionalWhen: FunctionalWhen | null;
  /** --functional-max-age for both hooks (seconds, as given), or null for the default. */
  functionalMaxAge?: string | null;
  whenUnknown?: WhenUnknown | null;
  drainOnFailure: boolean;
  tokenFile: string | null;
  labels: string[];
  apiUrl: string | null;
  textfile: string | null;
  env: NodeJS.ProcessEnv;
}

export function installHooks(o: InstallOptions): string {
  const dir = resolve(o.dir);
  const runner = o.runnerDir ? resolve(o.runnerDir) : null;
  if (runner && !existsSync(runner)) throw new InputError('no such directory', `--runner-dir ${runner}`);
  if (o.python && o.python.includes('/') && !existsSync(o.python)) throw new InputError('no such file', `--python ${o.python}`);
  if (o.hfHome && !existsSync(o.hfHome)) throw new InputError('no such directory (the HF cache the jobs use, e.g. ~/.cache/huggingface)', `--hf-home ${o.hfHome}`);
  if (o.tokenFile) readTokenFile(o.tokenFile);
  if (o.labels.length && !o.tokenFile) throw new InputError('labels are removed through the GitHub API: pass --token-file too', '--label');
  if (o.drainOnFailure && !runner) throw new InputError('needs --runner-dir (its .runner names the runner; its .service the service to stop)', '--drain-on-failure');
  mkdirSync(dir, { recursive: true });
  const report: string[] = [];
  const paths = { 'job-started': join(dir, 'job-started.sh'), 'job-completed': join(dir, 'job-completed.sh') };
  const envPath = runner ? join(runner, '.env') : null;
  let envText = '';
  let envMode = 0o644;
  if (envPath) { try { envText = readFileSync(envPath, 'utf8'); envMode = statSync(envPath).mode & 0o777; } catch { /* a new .env */ } }

  // What each hook chains to: an admin's hook already in .env (only with --chain), else what our shim chained to before.
  const chains: Record<HookName, string | null> = { 'job-started': null, 'job-completed': null };
  for (const name of Object.keys(paths) as HookName[]) {
    let chain = shimChain(paths[name]) ?? null;
    const existing = envPath ? envValue(envText, HOOK_VARS[name]) : null;
    if (existing && resolve(existing) !== paths[name]) {
      const theirs = shimChain(existing);
      if (theirs !== undefined) {
        chain = theirs; // our own shim from another --dir: replace it, keep what it chained to
        report.push(`replacing the npu-block-gate ${name} hook ${existing}`);
      } else if (!o.chain) {
        throw new InputError(`${HOOK_VARS[name]}=${existing} is another hook the runner runs ${name === 'job-started' ? 'before' : 'after'} every job: pass --chain to keep it running (first, with its exit status kept), or take that line out of .env yourself`, envPath!);
      } else {
        if (!existsSync(existing)) throw new InputError(`${HOOK_VARS[name]}=${existing} does not exist, so it cannot be chained (the runner would fail every job on it now)`, envPath!);
        chain = existing;
      }
    }
    if (chain) chainCommand(chain, o.self.node); // refuses a kind the runner would not run
    chains[name] = chain;
  }

  const cli = installCli(o.self, dir, o.env);
  report.push(cli.line);
  const shimEnv: Record<string, string> = {};
  if (o.hfHome) shimEnv.HF_HOME = resolve(o.hfHome);
  if (o.offline) shimEnv.HF_HUB_OFFLINE = '1';
  const common = [...(o.stateDir ? ['--state-dir', resolve(o.stateDir)] : []), ...(runner ? ['--runner-dir', runner] : [])];
  const args: Record<HookName, string[]> = {
    'job-started': [
      '--fork-policy', o.forkPolicy, ...(o.python ? ['--python', o.python] : []),
      ...(o.functionalWhen ? ['--functional-when', o.functionalWhen] : []), ...common,
      ...(o.functionalMaxAge ? ['--functional-max-age', o.functionalMaxAge] : []),
      ...(o.whenUnknown ? ['--when-unknown', o.whenUnknown] : []),
    ],
    'job-completed': [
      '--dir', dir, ...(o.cacheMaxBytes ? ['--cache-max-bytes', o.cacheMaxBytes] : []), ...common,
      ...(o.functionalMaxAge ? ['--functional-max-age', o.functionalMaxAge] : []),
      ...(o.drainOnFailure ? ['--drain-on-failure'] : []),
      ...(o.tokenFile ? ['--token-file', resolve(o.tokenFile)] : []),
      ...o.labels.flatMap((l) => ['--label', l]),
      ...(o.apiUrl ? ['--api-url', o.apiUrl] : []),
      ...(o.textfile ? ['--textfile', resolve(o.textfile)] : []),
    ],
  };
  for (const name of ['job-started', 'job-completed'] as HookName[]) {
    const changed = writeAtomic(paths[name], hookScript({ name, argv: cli.argv, hookArgs: args[name], env: shimEnv, chain: chains[name] }), 0o755);
    report.push(`${changed ? 'wrote    ' : 'unchanged'} ${paths[name]}${chains[name] ? ` (runs ${chains[name]} first)` : ''}`);
  }
  const lines = { [HOOK_VARS['job-started']]: paths['job-started'], [HOOK_VARS['job-completed']]: paths['job-completed'] };
  if (envPath) {
    const next = updateEnv(envText, lines);
    const changed = next !== envText && writeAtomic(envPath, next, envMode);
    report.push(`${changed ? 'updated  ' : 'unchanged'} ${envPath} (${Object.keys(lines).join(', ')})`);
    if (changed) report.push('restart the runner service (sudo ./svc.sh stop && sudo ./svc.sh start) so it reads .env');
  } else {
    report.push(`add these lines to the runner's .env (in its install dir), then restart the runner (if .env already names a hook, run this again with --runner-dir and --chain instead, so that hook keeps running):`);
    for (const [k, v] of Object.entries(lines)) report.push(`  ${k}=${v}`);
  }
  return report.join('\n') + '\n';
}

/** The fork policy's verdict on the job's event: null when allowed, else the one line why not. */
function forkVerdict(env: NodeJS.ProcessEnv, policy: ForkPolicy): string | null {
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

interface HookResult { code: 0 | 1; out: string }

const escData = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const escProp = (s: string) => escData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

/** A workflow command the runner turns into an annotation on the job. */
export function annotation(kind: 'warning' | 'error', title: string, message: string): string {
  return `::${kind} title=${escProp(title)}::${escData(message)}\n`;
}

const checkNote = (c: Check) => `${c.status}: ${c.detail}${c.fix ? ` (fix: ${c.fix})` : ''}`;

interface StartedOptions extends DoctorOptions { forkPolicy: ForkPolicy; stateDir: string; whenUnknown?: WhenUnknown }

/**
 * Nothing can vouch for the NPU: the kernel log shows a warning (the probe decides) and the probe
 * could not run (a host problem left it untested: functional is a host-scope warning). The detail, or null.
 */
export function untestable(checks: Check[]): string | null {
  const k = checks.find((c) => c.id === 'kernel-log');
  const f = checks.find((c) => c.id === 'functional');
  if (!k || k.scope !== 'device' || k.status !== 'warn') return null;
  if (f && (f.scope === 'device' || f.status === 'ok')) return null;
  return `the kernel log shows a warning (${k.detail}) and the functional probe could not test the NPU (${f ? f.detail : 'it did not run'})`;
}

/**
 * Before a job: the doctor (the functional probe whenever anything since the last good probe is not
 * a plain ok), then the fork policy. Only device findings fail the job; every other finding (a host
 * problem the probe or the log found included) is a warning annotation on it with its fix.
 */
export async function jobStarted(m: Machine, o: StartedOptions): Promise<HookResult> {
  // A drain in flight (a service stop scheduled or waiting for the running job): a job accepted now
  // would be killed by the stop, so it is refused before anything else runs.
  const draining = drainStatus(m, o.stateDir);
  if (draining && !draining.drained && (draining.state === 'pending' || draining.state === 'waiting')) {
    const why = `npu-block-gate: job-started hook: this runner is being drained (${draining.state === 'waiting' ? 'its service stops after the running job' : 'a service stop is scheduled'}: ${draining.reason}); refusing the job so the stop does not kill it (npu-block-gate agent undrain cancels the drain)`;
    const e = m.env;
    const job: JobRecord = { started_at: m.now().toISOString(), repository: e.GITHUB_REPOSITORY ?? null, run_id: e.GITHUB_RUN_ID ?? null, job: e.GITHUB_JOB ?? null, versions: { xrt: null, amdxdna: null, firmware: null }, refused: `drain ${draining.state}` };
    try { writeJson(join(o.stateDir, STATE_FILES.job), job, { durable: false }); } catch { /* state is best effort */ }
    return { code: 1, out: annotation('error', 'npu-block-gate: drain in progress', why) + why + '\n' };
  }
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
  const blind = (o.whenUnknown ?? DEFAULT_WHEN_UNKNOWN) === 'refuse' ? untestable(rep.checks) : null;
  if (blind) {
    const msg = `${blind}; --when-unknown refuse: nothing can vouch for the NPU, refusing the job (fix the probe's host problem, or hooks install --when-unknown run to run such jobs with warnings)`;
    out += annotation('error', 'npu-block-gate: untestable NPU', msg);
    job.refused = 'untestable: kernel-log warning, probe could not run';
    save();
    return { code: 1, out: out + `npu-block-gate: job-started hook: ${msg}\n` };
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

const day = (d: Date) => d.toISOString().slice(0, 10);

/** How much of the runner's worker log is read back, at most. */
const WORKER_LOG_TAIL = 4 * 1024 ** 2;

/**
 * Whether the running job has a failed step, from the runner's own trace of it: the newest
 * <runner dir>/_diag/Worker_*.log (one per job), where actions/runner's StepsRunner writes
 * "Step result: Failed" after each step. The line that says so, or null (none, or no log).
 */
function jobFailed(m: Machine, runnerDir: string): string | null {
  const diag = join(resolve(runnerDir), '_diag');
  let names: string[];
  try { names = readdirSync(diag).filter((n) => /^Worker_.*\.log$/.test(n)).sort(); } catch { return null; }
  const newest = names[names.length - 1];
  if (!newest) return null;
  let text: string;
  try {
    const buf = readFileSync(join(diag, newest));
    text = buf.subarray(Math.max(0, buf.length - WORKER_LOG_TAIL)).toString('utf8');
  } catch { return null; }
  const line = text.split('\n').reverse().find((l) => /\bStep result: Failed\b/.test(l));
  return line ? `${newest}: ${line.trim().slice(0, 200)}` : null;
}

/** Appends the job's diagnostics to <dir>/logs/<date>.log and drops logs older than 14 days. */
async function recordDiagnostics(m: Machine, dir: string, bdf: string | null = null): Promise<{ log: string; pruned: string[] }> {
  const logs = join(resolve(dir), 'logs');
  mkdirSync(logs, { recursive: true });
  const now = m.now();
  const e = m.env;
  const parts = [`=== job-completed ${now.toISOString()}${e.GITHUB_REPOSITORY ? ` ${e.GITHUB_REPOSITORY}` : ''}${e.GITHUB_RUN_ID ? ` run ${e.GITHUB_RUN_ID}` : ''}${e.GITHUB_JOB ? ` job ${e.GITHUB_JOB}` : ''} ===`];
  const k = await readKernelLog(m, { bdf, sinceHours: 1 });
  if ('error' in k) parts.push(`--- kernel log: ${k.error}`);
  else {
    // One push per line: spreading a flooded log's lines into one call overflows the stack.
    parts.push(`--- kernel log, NPU lines (${k.source}; ${readNote(k)}): ${k.lines.length}`);
    for (const l of k.lines) parts.push(l);
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

interface CompletedOptions {
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
  // A job that failed may have failed on the NPU with nothing in the kernel log: probe the NPU before
  // device_ok is written. Otherwise job-started's probe of this job stands for a log that cannot vouch.
  const failedStep = o.runnerDir && (o.functional ?? 'auto') !== 'never' ? jobFailed(m, o.runnerDir) : null;
  const rep = await doctorReport(m, {
    deviceOnly: true, stateDir: o.stateDir, functional: failedStep ? 'always' : o.functional ?? 'auto', service, functionalMaxAgeS: o.functionalMaxAgeS,
    functionalTimeoutS: o.functionalTimeoutS, functionalTest: o.functionalTest, recentPassVouches: !failedStep,
  });
  if (failedStep) say(`npu-block-gate: the job failed (${failedStep}): the functional probe ran before recording the device`);
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
