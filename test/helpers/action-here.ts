// main.ts's run() in this process, with a runner's environment and a port (src/github/ports.ts)
// that answers from recorded results: the Action's effects without the bundle, a probe or Python.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { run } from '../../src/main.ts';
import type { Ports } from '../../src/github/ports.ts';
import { parseOutputFile } from './action-run.ts';

/** One runner temp dir a process: @actions/core keeps the summary file's path once it has written it. */
export const HERE_TEMP = mkdtempSync(join(tmpdir(), 'nbg-here-'));

export interface Ran { outputs: Record<string, string>; summary: string; stdout: string; exitCode: number }

export interface HereOptions {
  workspace: string; eventName: string; payload: unknown; apiUrl: string; inputs: Record<string, string>; runId: number; ports: Ports;
  sha?: string; job?: string;
  /** The directory standing in for the artifact service (default <HERE_TEMP>/artifacts). */
  artifactDir?: string;
}

/** run() in this process with a runner's environment (process.env, the cwd and stdout are restored after). */
export async function runHere(o: HereOptions): Promise<Ran> {
  const dir = mkdtempSync(join(HERE_TEMP, 'run-'));
  const [eventPath, outputPath, summaryPath] = [join(dir, 'event.json'), join(dir, 'output'), join(HERE_TEMP, 'summary.md')];
  writeFileSync(eventPath, JSON.stringify(o.payload));
  writeFileSync(outputPath, '');
  writeFileSync(summaryPath, '');
  const env: Record<string, string> = {
    CI: 'true', GITHUB_ACTIONS: 'true', GITHUB_EVENT_NAME: o.eventName, GITHUB_EVENT_PATH: eventPath, GITHUB_REPOSITORY: 'acme/mlir-air',
    GITHUB_REPOSITORY_OWNER: 'acme', GITHUB_WORKSPACE: o.workspace, GITHUB_OUTPUT: outputPath, GITHUB_STEP_SUMMARY: summaryPath,
    GITHUB_API_URL: o.apiUrl, GITHUB_SERVER_URL: 'https://github.example', GITHUB_RUN_ID: String(o.runId), GITHUB_RUN_ATTEMPT: '1',
    GITHUB_JOB: o.job ?? 'phase2', GITHUB_WORKFLOW: 'npu', GITHUB_SHA: o.sha ?? 'a'.repeat(40), GITHUB_REF: 'refs/heads/main', GITHUB_ACTOR: 'octocat',
    RUNNER_TEMP: dir, RUNNER_OS: 'Linux', NO_PROXY: '127.0.0.1,localhost', NPU_BLOCK_GATE_ARTIFACT_DIR: o.artifactDir ?? join(HERE_TEMP, 'artifacts'),
    // the fake GitHub has no secondary rate limit: writes unpaced (src/github/octokit.ts writePacer)
    NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS: '0',
    // no Python may start: none is findable by this name
    NPU_BLOCK_GATE_PYTHON: '/nonexistent/python-must-not-run',
    ...Object.fromEntries(Object.entries(o.inputs).map(([k, v]) => [`INPUT_${k.toUpperCase()}`, v])),
  };
  const saved = { ...process.env };
  const cwd = process.cwd();
  const write = process.stdout.write.bind(process.stdout);
  let stdout = '';
  Object.assign(process.env, env);
  process.chdir(o.workspace);
  process.stdout.write = ((chunk: string | Uint8Array) => { stdout += String(chunk); return true; }) as typeof process.stdout.write;
  try {
    await run(process.env, o.ports);
  } finally {
    process.stdout.write = write;
    process.chdir(cwd);
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
  const exitCode = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { outputs: parseOutputFile(readFileSync(outputPath, 'utf8')), summary: readFileSync(summaryPath, 'utf8'), stdout, exitCode };
}
