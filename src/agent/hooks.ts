// `agent hooks install` and `agent hook job-started|job-completed`: the GitHub Actions runner's job
// hooks (ACTIONS_RUNNER_HOOK_JOB_STARTED / _COMPLETED in the runner's .env). The scripts are shims
// that call a stable copy of this CLI by absolute path; the logic is here.
//
// Facts from actions/runner this relies on: the runner reads .env into its own environment at
// start; it runs a hook as a step with an empty step environment (JobHookProvider: job and step
// `env:` never reach it; ScriptHandler still adds the GITHUB_* context variables such as
// GITHUB_EVENT_NAME and GITHUB_EVENT_PATH), .sh hooks with `bash --noprofile --norc -e -o pipefail` (HostContext
// GetDefaultShellForScript, ScriptHandlerHelpers); job-started runs before the job's steps and
// fails the job when it exits non-zero; job-completed runs under always(). What the hooks run is in
// job-started.ts and job-completed.ts, apart from this file, so a hook never loads the installer.
import { writeAtomic as writeFileAtomic } from '../fs/atomic.ts';
import type * as Crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { InputError, oneLine } from '../errors.ts';
import type { FunctionalWhen } from './doctor.ts';
import type { ForkPolicy } from './job-started.ts';
import { readTokenFile } from './drain.ts';

export const HOOK_VARS = { 'job-started': 'ACTIONS_RUNNER_HOOK_JOB_STARTED', 'job-completed': 'ACTIONS_RUNNER_HOOK_JOB_COMPLETED' } as const;
export type HookName = keyof typeof HOOK_VARS;
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
export function unstableReason(path: string, env: NodeJS.ProcessEnv = process.env): string | null {
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

export interface InstalledCli { argv: string[]; line: string }

/**
 * The command the hooks run. A bundle is copied to <dir>/cli/<content hash>/cli.js (beside a
 * package.json that makes it an ES module, as in the package), so pruning the place it was
 * installed from (an npx cache, a runner _work dir) breaks nothing; a source checkout is used
 * where it is, and refused when that place will not last. The name stays cli.js: src/cli.ts runs
 * main() only when invoked as cli.js, cli.ts or npu-block-gate.
 */
export function installCli(self: SelfCommand, dir: string, env: NodeJS.ProcessEnv): InstalledCli {
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

const sq = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** How the runner itself would run a hook script (HostContext.GetDefaultShellForScript), as a shell command. */
export function chainCommand(path: string, node: string): string {
  switch (extname(path)) {
    case '.sh': return `if command -v bash >/dev/null 2>&1; then bash --noprofile --norc -e -o pipefail ${sq(path)}; else sh -e ${sq(path)}; fi`;
    case '.js': return `${sq(node)} ${sq(path)}`;
    case '.ps1': return `pwsh -command ${sq(`. '${path.replace(/'/g, "''")}'`)}`;
    default: throw new InputError('the runner only runs hooks ending in .sh, .ps1 or .js, so there is nothing to chain to', path);
  }
}

export interface ShimOptions {
  name: HookName;
  /** node, its flags and the CLI. */
  argv: string[];
  hookArgs: string[];
  /** Set in the shim: the runner gives hooks none of the job's env:. */
  env: Record<string, string>;
  /** The hook this runner had before ours: it keeps running, first. */
  chain: string | null;
}

export function hookScript(o: ShimOptions): string {
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
export function envValue(text: string, key: string): string | null {
  let v: string | null = null;
  for (const line of text.split(/\r?\n/)) if (line.startsWith(`${key}=`)) v = line.slice(key.length + 1).trim();
  return v || null;
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

export interface InstallOptions {
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
    ],
    'job-completed': [
      '--dir', dir, ...(o.cacheMaxBytes ? ['--cache-max-bytes', o.cacheMaxBytes] : []), ...common,
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
