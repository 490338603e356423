// Every Action input, read once and validated into one typed object (action.yml lists the same
// names and defaults). All problems are collected so one run shows every bad input at once.
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { InputError } from '../errors.ts';
import { MAX_POSITIONS, parsePositions } from '../plan.ts';
import { parseEnvNames } from '../probe/env.ts';

const MODES = ['full', 'probe', 'report', 'affected', 'summary'] as const;
/** The fleet's modes (src/github/fleet.ts): about a tree and a workflow run, not one model dir. */
const FLEET_MODES: readonly Mode[] = ['affected', 'summary'];
const DOCS_MODES = ['auto', 'pr', 'none'] as const;
export const PROMPT_STYLES = ['base', 'instruct'] as const;
const ISOLATION_MODES = ['auto', 'uid', 'namespace', 'none'] as const;
export type Mode = (typeof MODES)[number];
export type DocsMode = (typeof DOCS_MODES)[number];
export type PromptStyle = (typeof PROMPT_STYLES)[number];
type IsolationInput = (typeof ISOLATION_MODES)[number];

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
  /** Block 0 on N real tokens (`check --positions N`); null: the prompt's own tokens. */
  positions: number | null;
  docs: DocsMode;
  /** null: the repository's default branch. */
  docsBaseBranch: string | null;
  cache: boolean;
  cacheDir: string | null;
  timeoutSec: number | null;
  /** mode report: the artifact holding the run dir (null: found by artifact-name in the triggering run). */
  runId: number | null;
  /** How the probe is kept from this process (auto: the strongest the runner offers). */
  isolation: IsolationInput;
  /** Run an untrusted event's probe unisolated when nothing else is available (unsafe). */
  allowUnisolated: boolean;
  /** Break at once a documents lock left in the checkout by a run on another host (`--break-lock`). */
  breakLock: boolean;
  /** uid isolation: the user the probe runs as (null: the agent's setup, or $NPU_BLOCK_GATE_PROBE_USER). */
  probeUser: string | null;
  /** Names of the runner's environment variables the probe also sees (beyond its allow-list). */
  probeEnv: string[];
  /** Branches besides the default branch whose trusted runs may propose documents. */
  docsBranches: string[];
  /** The login the sticky comment is written as, when the token cannot tell (GraphQL viewer fails). */
  commentAuthor: string | null;
  /** This job's matrix leg (a short hash of the matrix), so legs never share an artifact name; null outside a matrix. */
  matrixLeg: string | null;
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
  if (modelDirs.length === 0 && !FLEET_MODES.includes(mode)) problems.push("input 'model-dir': required; give one model directory per line");

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

  let positions: number | null = null;
  const rawP = get('positions');
  if (rawP) {
    try {
      positions = parsePositions(rawP, 'positions');
    } catch {
      bad('positions', `expected a whole number of tokens from 1 to ${MAX_POSITIONS} (at most the compiled seq_len, 2048 in production)`, rawP);
    }
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
  if (runId !== null && mode !== 'report' && mode !== 'summary') bad('run-id', "only used with mode 'report' or 'summary'", rawRun);

  const docsBaseBranch = text('docs-base-branch');
  if (docsBaseBranch !== null && !/^[A-Za-z0-9._/-]+$/.test(docsBaseBranch)) bad('docs-base-branch', 'not a branch name', docsBaseBranch);

  const isolation = oneOf('isolation', ISOLATION_MODES, 'auto');
  const allowUnisolated = bool('allow-unisolated', false);
  const probeUser = text('probe-user');
  if (probeUser !== null && !/^[a-z_][a-z0-9_-]{0,31}$/.test(probeUser)) bad('probe-user', 'expected a user name (lower case, up to 32 characters)', probeUser);
  const probeEnv = parseEnvNames(get('probe-env'));
  if (probeEnv.bad.length) bad('probe-env', 'expected environment variable names, separated by commas or new lines', probeEnv.bad.join(','));
  const docsBranches = [...new Set(get('docs-branches').split(/[\s,]+/).filter(Boolean))];
  for (const b of docsBranches) if (!/^[A-Za-z0-9._/-]+$/.test(b) || b.includes('..')) bad('docs-branches', 'not a branch name', b);
  const commentAuthor = text('comment-author');
  if (commentAuthor !== null && !/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$/.test(commentAuthor)) bad('comment-author', 'expected a GitHub login such as my-app[bot]', commentAuthor);
  const matrixLeg = legOf(get('matrix'));

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
    positions,
    docs: oneOf('docs', DOCS_MODES, 'auto'),
    docsBaseBranch,
    cache: bool('cache', true),
    cacheDir: cacheDirRaw ? abs(cacheDirRaw) : null,
    timeoutSec,
    runId,
    isolation,
    allowUnisolated,
    breakLock: bool('break-lock', false),
    probeUser,
    probeEnv: probeEnv.names,
    docsBranches,
    commentAuthor,
    matrixLeg,
  };
  if (problems.length) throw new InputError(problems.join('; '));
  return inputs;
}

/** Keys sorted at every level, so the same matrix always gives the same text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/**
 * The `matrix` input (action.yml defaults it to `${{ toJSON(matrix) }}`) as a leg id: `leg-` and
 * 8 hex digits of its hash; null for a job without a matrix.
 */
export function legOf(raw: string): string | null {
  const t = raw.trim();
  if (!t || t === 'null' || t === '{}' || t === '""') return null;
  let text = t;
  try {
    const v = JSON.parse(t);
    if (v === null || (typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0)) return null;
    text = canonical(v);
  } catch {
    // Not JSON (someone passed their own leg name): hash it as it is.
  }
  return `leg-${createHash('sha256').update(text).digest('hex').slice(0, 8)}`;
}
