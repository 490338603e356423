// Runs dist/index.js as a child process with the environment a GitHub runner sets, and reads back
// what the runner would: exit code, step outputs (GITHUB_OUTPUT), the job summary, workflow
// commands (::error::, ::notice::) on stdout.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { REPO } from './airmini.ts';
import { extractZip } from '../../src/github/unzip.ts';
import { LocalStore } from '../../src/github/artifact.ts';

export const DIST_INDEX = join(REPO, 'dist/index.js');

export interface ActionRunOptions {
  workspace: string;
  eventName: string;
  payload: unknown;
  inputs: Record<string, string>;
  apiUrl: string;
  owner?: string;
  repo?: string;
  runId?: number;
  runAttempt?: number;
  job?: string;
  sha?: string;
  /** The bundle to run (default dist/index.js). */
  index?: string;
  /** Directory standing in for the artifact service. */
  artifactDir: string;
  env?: Record<string, string>;
  timeoutMs?: number;
}

export interface ActionRunResult {
  code: number;
  stdout: string;
  stderr: string;
  outputs: Record<string, string>;
  summary: string;
  errors: string[];
  warnings: string[];
  notices: string[];
  runnerTemp: string;
}

/** Parses the GITHUB_OUTPUT file: `name<<DELIM\nvalue\nDELIM` and `name=value` lines. */
export function parseOutputFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const heredoc = /^([^=<]+)<<(.+)$/.exec(lines[i]);
    if (heredoc) {
      const value: string[] = [];
      for (i++; i < lines.length && lines[i] !== heredoc[2]; i++) value.push(lines[i]);
      out[heredoc[1]] = value.join('\n');
      continue;
    }
    const eq = /^([^=]+)=(.*)$/.exec(lines[i]);
    if (eq) out[eq[1]] = eq[2];
  }
  return out;
}

function commands(stdout: string, kind: string): string[] {
  const re = new RegExp(`^::${kind}(?: [^:]*)?::(.*)$`, 'gm');
  return [...stdout.matchAll(re)].map((m) => m[1].replace(/%0A/g, '\n').replace(/%0D/g, '\r').replace(/%25/g, '%'));
}

export async function runAction(o: ActionRunOptions): Promise<ActionRunResult> {
  const index = o.index ?? DIST_INDEX;
  if (!existsSync(index)) throw new Error(`${index} is missing: run npm run build first`);
  const runnerTemp = mkdtempSync(join(tmpdir(), 'nbg-runner-'));
  const eventPath = join(runnerTemp, 'event.json');
  const outputPath = join(runnerTemp, 'output');
  const summaryPath = join(runnerTemp, 'summary.md');
  writeFileSync(eventPath, JSON.stringify(o.payload));
  writeFileSync(outputPath, '');
  writeFileSync(summaryPath, '');
  mkdirSync(o.artifactDir, { recursive: true });
  const owner = o.owner ?? 'acme';
  const repo = o.repo ?? 'mlir-air';
  // A clean environment: nothing from the machine running the tests (a real runner's
  // ACTIONS_RUNTIME_TOKEN or proxy settings) may leak into the Action under test.
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? runnerTemp,
    LANG: 'C.UTF-8',
    CI: 'true',
    GITHUB_ACTIONS: 'true',
    GITHUB_EVENT_NAME: o.eventName,
    GITHUB_EVENT_PATH: eventPath,
    GITHUB_REPOSITORY: `${owner}/${repo}`,
    GITHUB_REPOSITORY_OWNER: owner,
    GITHUB_WORKSPACE: o.workspace,
    GITHUB_OUTPUT: outputPath,
    GITHUB_STEP_SUMMARY: summaryPath,
    GITHUB_API_URL: o.apiUrl,
    GITHUB_SERVER_URL: 'https://github.example',
    GITHUB_RUN_ID: String(o.runId ?? 1001),
    GITHUB_RUN_ATTEMPT: String(o.runAttempt ?? 1),
    GITHUB_JOB: o.job ?? 'phase2',
    GITHUB_WORKFLOW: 'npu',
    GITHUB_SHA: o.sha ?? '0'.repeat(40),
    GITHUB_REF: 'refs/heads/main',
    GITHUB_ACTOR: 'octocat',
    RUNNER_TEMP: runnerTemp,
    RUNNER_OS: 'Linux',
    NO_PROXY: '127.0.0.1,localhost',
    NPU_BLOCK_GATE_ARTIFACT_DIR: o.artifactDir,
    NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS: '0', // the fake GitHub has no secondary rate limit
    // The kernel cache of a test run stays inside the runner's temp dir, never the user's ~/.cache.
    NPU_BLOCK_GATE_CACHE_DIR: join(runnerTemp, 'kernel-cache'),
    ...(process.env.NPU_BLOCK_GATE_PYTHON ? { NPU_BLOCK_GATE_PYTHON: process.env.NPU_BLOCK_GATE_PYTHON } : {}),
    ...Object.fromEntries(Object.entries(o.inputs).map(([k, v]) => [`INPUT_${k.toUpperCase()}`, v])),
    ...o.env,
  };
  const child = spawn(process.execPath, [index], { cwd: o.workspace, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code: number = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`dist/index.js did not finish in ${o.timeoutMs ?? 120_000} ms\n${stdout}\n${stderr}`));
    }, o.timeoutMs ?? 120_000);
    child.on('close', (c) => {
      clearTimeout(timer);
      resolve(c ?? 1);
    });
  });
  return {
    code,
    stdout,
    stderr,
    outputs: parseOutputFile(readFileSync(outputPath, 'utf8')),
    summary: readFileSync(summaryPath, 'utf8'),
    errors: commands(stdout, 'error'),
    warnings: commands(stdout, 'warning'),
    notices: commands(stdout, 'notice'),
    runnerTemp,
  };
}

/**
 * The content of an artifact the local store holds (<dir>/<owner>/<repo>/<run>/<name>.zip), unzipped
 * into a fresh directory.
 */
export async function openArtifact(artifactDir: string, runId: number, name: string, owner = 'acme', repo = 'mlir-air'): Promise<string> {
  const dest = mkdtempSync(join(tmpdir(), 'nbg-art-'));
  await extractZip(join(artifactDir, owner, repo, String(runId), `${name}.zip`), dest);
  return dest;
}

/** Uploads a directory as an artifact of a run, the way a (possibly hostile) probe job would. */
export async function putArtifact(artifactDir: string, runId: number, name: string, dir: string, owner = 'acme', repo = 'mlir-air'): Promise<void> {
  await new LocalStore(artifactDir, owner, repo, runId).upload(name, dir, null);
}

/** Copies a run's artifact into another run, changed by `edit` on the way (a tampered upload). */
export async function tamperedCopy(artifactDir: string, fromRun: number, toRun: number, name: string, edit: (dir: string) => void | Promise<void>): Promise<void> {
  const dir = await openArtifact(artifactDir, fromRun, name);
  await edit(dir);
  await putArtifact(artifactDir, toRun, name, dir);
}

/**
 * How the run's probe was kept from the Action, as every output of the run says it: the step
 * output, report.json (when the run judged) and the job summary. `isolated`: uid or bubblewrap
 * namespaces, with a detail that names the mechanism (an untrusted run must never go unisolated);
 * `none`: unisolated, by the admin's choice or a fallback. `from`: the report job's record is the
 * probe job's word.
 */
export function assertIsolation(r: ActionRunResult, want: 'isolated' | 'none', from: 'this run' | 'probe job' = 'this run'): void {
  const fail = (what: string) => { throw new Error(`isolation: ${what}\n--- summary\n${r.summary.slice(0, 3000)}`); };
  const mode = r.outputs.isolation;
  if (want === 'isolated' ? mode !== 'uid' && mode !== 'namespace' : mode !== 'none') fail(`step output isolation is ${JSON.stringify(mode)}, expected ${want}`);
  const detail = mode === 'namespace' ? /bubblewrap: (user\+)?pid\+mount\+ipc\+net namespaces/ : mode === 'uid' ? /uid [a-z_][a-z0-9_-]* \((setpriv|sudo -n)\)/ : /none/;
  if (r.outputs['report-path']) {
    const rec = JSON.parse(readFileSync(r.outputs['report-path'], 'utf8')).isolation;
    if (!rec || rec.mode !== mode || rec.source !== from || !detail.test(rec.detail)) fail(`report.json isolation is ${JSON.stringify(rec)}, expected mode ${mode} from ${from}`);
  }
  const row = /\| probe isolation +\| ([a-z]+): ([^|]*)\|/.exec(r.summary) ?? /Probe isolation: \*\*([a-z]+)\*\* \(([^\n]*)\)/.exec(r.summary);
  if (!row || row[1] !== mode || !detail.test(row[2].replace(/\\/g, ''))) fail(`the summary's isolation is ${JSON.stringify(row?.[0] ?? null)}, expected ${mode}`);
}
