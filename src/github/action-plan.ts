// The Action's plan for one model, from the inputs and the trust decision (kept apart from
// @actions/core so it can be tested directly): what to run and where, what may be recorded and
// written, how the probe is isolated, which commit is recorded.
import { existsSync } from 'node:fs';
import { basename, isAbsolute, join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import type { Plan } from '../plan.ts';
import type { ActionInputs } from './inputs.ts';
import type { GhContext, WriteGate } from './context.ts';
import type { GitHubApi } from './api.ts';
import { modelSlug, type ArtifactStore } from './artifact.ts';
import type { TrustDecision } from './trust.ts';

export interface Session {
  inputs: ActionInputs;
  ctx: GhContext;
  trust: TrustDecision;
  writes: WriteGate;
  api: GitHubApi | null;
  store: ArtifactStore | null;
  workspace: string;
  /** Who the token writes comments as (resolved on first use). */
  login?: { login: string | null; why: string };
}

/** The model dir relative to the workspace: the key of its comment marker, artifact and docs branch. */
export function keyOf(s: Session, modelDir: string): string {
  const rel = relative(s.workspace, modelDir).split('\\').join('/');
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : basename(modelDir);
}

function runDirFor(s: Session, key: string): string {
  const slug = modelSlug(key);
  if (s.inputs.runDir) return s.inputs.modelDirs.length > 1 ? join(s.inputs.runDir, slug) : s.inputs.runDir;
  return join(process.env.RUNNER_TEMP || tmpdir(), 'npu-block-gate', `${slug}-${s.ctx.runId}-${s.ctx.runAttempt}`);
}

/** Documents are committed where the trust rule allows them and the token can write. */
export function commitsDocs(s: Session): boolean {
  return docsSkipReason(s) === null;
}

/** Why this run does not commit documents (G4's skip says it), or null when it does. */
function docsSkipReason(s: Session): string | null {
  const { inputs, trust } = s;
  if (inputs.docs === 'none') return "not written in this run (input 'docs' is none)";
  if (inputs.mode === 'probe') return 'not written in this run (mode probe only runs the probe; the report job documents)';
  // recordDocs: a trusted run on the default branch (or one docs-branches lists), or docs: pr's own case.
  if (!trust.recordDocs) return `not written in this run (${trust.trusted ? "a trusted run on a branch that is neither the default branch nor one input 'docs-branches' lists" : 'an untrusted run: documents are recorded only from trusted runs on the default branch or docs-branches'})`;
  if (s.api === null) return "not written in this run: no github-token was given, so the docs branch and its pull request cannot be pushed (give the input 'github-token' with contents: write and pull-requests: write)";
  if (!s.writes.allowed) return 'not written in this run: GitHub writes are off for this run (see the notice above)';
  return null;
}

export function docsBase(s: Session): string {
  return s.inputs.docsBaseBranch ?? s.ctx.defaultBranch ?? (s.ctx.ref.replace(/^refs\/heads\//, '') || 'main');
}

/** The Action's plan for one model: what to run, where, what to record and how to isolate. */
export function planFor(s: Session, modelDir: string, key: string): Plan {
  const { inputs, trust } = s;
  return {
    // mode summary judges each leg's run dir as mode report does (affected plans no model).
    mode: inputs.mode === 'summary' || inputs.mode === 'affected' ? 'report' : inputs.mode,
    modelDir: existsSync(modelDir) ? modelDir : null,
    promptStyle: inputs.promptStyle,
    prompt: inputs.prompt,
    python: inputs.python,
    runDir: runDirFor(s, key),
    threshold: inputs.threshold,
    // Documents go into the checkout's own model dir, never a path a run dir names, nor through a link.
    writeDocs: commitsDocs(s) && existsSync(modelDir),
    ...(docsSkipReason(s) !== null ? { docsSkipped: docsSkipReason(s)! } : {}),
    confineDocs: true,
    ...(inputs.breakLock ? { breakLock: true } : {}),
    timeoutSec: inputs.timeoutSec,
    // The judged run's head commit, never this job's GITHUB_SHA (a workflow_run's is main's).
    commit: trust.judged.headSha || null,
    layers: inputs.layers,
    positions: inputs.positions,
    cache: inputs.cache,
    cacheDir: inputs.cacheDir,
    // A pull request's code may read the caches but never write them: trusted runs only.
    cacheWrite: trust.trusted && inputs.mode !== 'report',
    isolation: { mode: inputs.isolation, untrusted: trust.untrustedCode, allowUnisolated: inputs.allowUnisolated, user: inputs.probeUser },
    probeEnvNames: inputs.probeEnv,
  };
}

