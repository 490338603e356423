// Every Action input, read once and validated into one typed object (action.yml lists the same
// names and defaults). All problems are collected so one run shows every bad input at once.
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { InputError } from '../errors.ts';

export const MODES = ['full', 'probe', 'report'] as const;
export const DOCS_MODES = ['auto', 'pr', 'none'] as const;
export const PROMPT_STYLES = ['base', 'instruct'] as const;
export type Mode = (typeof MODES)[number];
export type DocsMode = (typeof DOCS_MODES)[number];
export type PromptStyle = (typeof PROMPT_STYLES)[number];

export interface ActionInputs {
  /** Absolute model directories, in the order given, without duplicates. */
  modelDirs: string[];
  promptStyle: PromptStyle | null;
  prompt: string | null;
  python: string | null;
  /** Per-position cosine threshold override; null means T(head_dim). */
  threshold: number | null;
  mode: Mode;
  /** Absolute root for run dirs; each model gets `<runDir>/<model>` when several are given. */
  runDir: string | null;
  /** Artifact name prefix; the job and attempt are appended so names never collide. */
  artifactName: string;
  /** null: the repository's default retention. */
  retentionDays: number | null;
  token: string;
  comment: boolean;
  layers: boolean;
  docs: DocsMode;
  /** null: the repository's default branch. */
  docsBaseBranch: string | null;
  cache: boolean;
  cacheDir: string | null;
  timeoutSec: number | null;
  /** mode report: the artifact holding the run dir (null: found by artifact-name in the triggering run). */
  runId: number | null;
}

/** Reads one raw input ('' when unset), like core.getInput without `required`. */
export type InputGetter = (name: string) => string;

/** core.getInput's environment lookup, without @actions/core (so tests and the CLI can use it). */
export function envInputs(env: NodeJS.ProcessEnv): InputGetter {
  return (name) => (env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] ?? '').trim();
}

const TRUE = ['true', 'yes', 'on', '1'];
const FALSE = ['false', 'no', 'off', '0'];

export function parseInputs(get: InputGetter, env: NodeJS.ProcessEnv = process.env): ActionInputs {
  const problems: string[] = [];
  const bad = (name: string, what: string, got: string) =>
    problems.push(`input '${name}': ${what}; got ${JSON.stringify(got)}`);
  const workspace = env.GITHUB_WORKSPACE || process.cwd();
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(workspace, p));

  const oneOf = <T extends string>(name: string, allowed: readonly T[], dflt: T): T => {
    const raw = get(name);
    if (!raw) return dflt;
    const v = raw.toLowerCase() as T;
    if (allowed.includes(v)) return v;
    bad(name, `expected one of ${allowed.join(', ')}`, raw);
    return dflt;
  };
  const bool = (name: string, dflt: boolean): boolean => {
    const raw = get(name);
    if (!raw) return dflt;
    const v = raw.toLowerCase();
    if (TRUE.includes(v)) return true;
    if (FALSE.includes(v)) return false;
    bad(name, 'expected true or false', raw);
    return dflt;
  };
  const text = (name: string): string | null => get(name) || null;

  const mode = oneOf('mode', MODES, 'full');

  // model-dir: one per line, or separated by commas.
  const rawModels = get('model-dir');
  const modelDirs: string[] = [];
  for (const part of rawModels.split(/[\n,]/).map((s) => s.trim()).filter(Boolean)) {
    const dir = abs(part);
    if (modelDirs.includes(dir)) continue;
    if (mode !== 'report') {
      if (!existsSync(dir)) bad('model-dir', 'no such directory', part);
      else if (!statSync(dir).isDirectory()) bad('model-dir', 'not a directory', part);
    }
    modelDirs.push(dir);
  }
  if (modelDirs.length === 0) problems.push("input 'model-dir': required; give one model directory per line");

  const promptStyle = get('prompt-style') ? oneOf('prompt-style', PROMPT_STYLES, 'instruct') : null;
  const prompt = text('prompt');
  if (prompt !== null && /[\r\n]/.test(prompt)) bad('prompt', 'one line expected', prompt.slice(0, 60));

  let threshold: number | null = null;
  const rawT = get('threshold');
  if (rawT) {
    const t = Number(rawT);
    if (!Number.isFinite(t) || t <= 0 || t > 1) bad('threshold', 'expected a cosine in (0, 1]', rawT);
    else threshold = t;
  }

  let retentionDays: number | null = null;
  const rawR = get('retention-days');
  if (rawR) {
    const r = Number(rawR);
    if (!Number.isInteger(r) || r < 1 || r > 90) bad('retention-days', 'expected a whole number of days from 1 to 90', rawR);
    else retentionDays = r;
  }

  const artifactName = get('artifact-name') || 'npu-block-gate';
  // The artifact service rejects these characters in names.
  if (/[":<>|*?\\/\r\n]/.test(artifactName)) bad('artifact-name', 'must not contain " : < > | * ? \\ / or newlines', artifactName);

  let timeoutSec: number | null = null;
  const rawTo = get('timeout');
  if (rawTo) {
    const m = /^(\d+(?:\.\d+)?)\s*(s|m|h)?$/i.exec(rawTo);
    const secs = m ? Number(m[1]) * ({ s: 1, m: 60, h: 3600 } as Record<string, number>)[(m[2] ?? 's').toLowerCase()] : NaN;
    if (!m || !(secs > 0)) bad('timeout', 'expected a duration such as 1800, 30m or 1h', rawTo);
    else timeoutSec = Math.round(secs);
  }

  let runId: number | null = null;
  const rawRun = get('run-id');
  if (rawRun) {
    if (!/^\d+$/.test(rawRun)) bad('run-id', 'expected a workflow run id (digits)', rawRun);
    else runId = Number(rawRun);
  }
  if (runId !== null && mode !== 'report') bad('run-id', "only used with mode 'report'", rawRun);

  const docsBaseBranch = text('docs-base-branch');
  if (docsBaseBranch !== null && !/^[A-Za-z0-9._/-]+$/.test(docsBaseBranch)) bad('docs-base-branch', 'not a branch name', docsBaseBranch);

  const runDirRaw = text('run-dir');
  const cacheDirRaw = text('cache-dir');
  const inputs: ActionInputs = {
    modelDirs,
    promptStyle,
    prompt,
    python: text('python'),
    threshold,
    mode,
    runDir: runDirRaw ? abs(runDirRaw) : null,
    artifactName,
    retentionDays,
    token: get('github-token'),
    comment: bool('comment', true),
    layers: bool('layers', false),
    docs: oneOf('docs', DOCS_MODES, 'auto'),
    docsBaseBranch,
    cache: bool('cache', true),
    cacheDir: cacheDirRaw ? abs(cacheDirRaw) : null,
    timeoutSec,
    runId,
  };
  if (problems.length) throw new InputError(problems.join('; '));
  return inputs;
}
