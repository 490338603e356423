// What every model of one Action step shares: the inputs, the event, the trust decision, the
// GitHub helper, the artifact store, the write gate, and the log (through @actions/core, with
// every line made unable to start a workflow command).
import * as core from '@actions/core';
import { InfraError, oneLine } from '../errors.ts';
import type { Log } from '../log.ts';
import { logLine } from '../text/escape.ts';
import type { ActionInputs } from './inputs.ts';
import { WriteGate, type GhContext } from './context.ts';
import { makeOctokit } from './octokit.ts';
import { GitHubApi } from './api.ts';
import { selectStore } from './artifact.ts';
import { decideTrust, triggeringRun, type RunFacts } from './trust.ts';
import { commentLogin } from './comment.ts';
import type { Session } from './action-plan.ts';

export { planFor, keyOf, commitsDocs, docsBase, type Session } from './action-plan.ts';

/** @actions/core, with every line we print neutralised for the runner's command parser. */
interface Out {
  info(m: string): void;
  debug(m: string): void;
  notice(m: string): void;
  warning(m: string, title?: string): void;
  error(m: string, title?: string): void;
}

export const out: Out = {
  info: (m) => core.info(logLine(m)),
  debug: (m) => core.debug(logLine(m)),
  notice: (m) => core.notice(logLine(m)),
  warning: (m, title) => core.warning(logLine(m), title ? { title: logLine(title) } : {}),
  error: (m, title) => core.error(logLine(m), title ? { title: logLine(title) } : {}),
};

/** The pipeline's progress lines (they carry the probe's output) into the runner's log. */
export const actionLog: Log = { step: (m) => out.info(m), warn: (m) => out.warning(m) };

export async function openSession(inputs: ActionInputs, ctx: GhContext, env: NodeJS.ProcessEnv): Promise<Session> {
  const octokit = inputs.token ? makeOctokit({ token: inputs.token, baseUrl: ctx.apiUrl, env, log: { debug: out.debug, info: out.info, warning: (m) => out.warning(m) } }) : null;
  const api = octokit ? new GitHubApi(octokit, ctx.owner, ctx.repo) : null;
  let judged: RunFacts | null = null;
  // mode summary judges another workflow run's legs like mode report (workflow_run, run-id), else its own run's.
  const otherRun = inputs.mode === 'report' || (inputs.mode === 'summary' && (inputs.runId !== null || ctx.workflowRun !== null));
  if (otherRun) {
    if (inputs.runId !== null) {
      // The run-id input is checked by the same rule as a workflow_run: its event and head
      // repository come from GitHub, not from anything the run uploaded.
      if (!api) throw new InfraError(`input 'run-id': looking up run ${inputs.runId} needs a github-token with actions: read`);
      try {
        judged = await api.workflowRun(inputs.runId);
      } catch (e) {
        throw new InfraError(`input 'run-id': cannot read workflow run ${inputs.runId} (${oneLine(e)})`);
      }
    } else judged = triggeringRun(ctx);
  }
  const trust = decideTrust(ctx, otherRun ? 'report' : inputs.mode, inputs.docs, judged, [...(inputs.docsBaseBranch ? [inputs.docsBaseBranch] : []), ...inputs.docsBranches]);
  out.info(`trust: ${trust.reason}`);
  return {
    inputs,
    ctx,
    trust,
    writes: new WriteGate(ctx.readOnlyReason, (m) => out.notice(m)),
    api,
    store: selectStore(env, ctx.serverUrl, ctx.owner, ctx.repo, ctx.runId),
    workspace: env.GITHUB_WORKSPACE || process.cwd(),
  };
}

/** The login the token writes comments as; null (with a warning, once) when it cannot tell. */
export async function loginFor(s: Session): Promise<string | null> {
  if (!s.api) return null;
  if (!s.login) {
    s.login = await commentLogin(s.api, s.inputs.commentAuthor, out.debug);
    if (s.login.login) out.info(`comments: ${s.login.why}`);
    else out.warning(`not posting the PR comment: ${s.login.why}; set the comment-author input to the token's login`);
  }
  return s.login.login;
}
