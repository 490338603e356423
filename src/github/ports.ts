// The port between check() and the Action's effects (issue 27): what a job asks of the world
// outside GitHub's API (every one of them a probe or its records). main.ts passes the real ones;
// tests pass recorded results, so the effects (effects.ts: the artifact, the summary, the comment,
// the docs PR, the outputs) and the fleet's jobs are tested in-process against the fake GitHub
// without starting a probe.
import { InfraError } from '../errors.ts';
import type { Log } from '../log.ts';
import type { Plan } from '../plan.ts';
import { check, probe, type CheckDeps, type CheckResult, type Probed } from '../check/index.ts';
import type { ModelFacts } from '../fleet/affected.ts';
import { planFacts, type PlanOptions } from '../fleet/plans.ts';
import { artifactName, pickArtifact, freshDir, removeDir } from './artifact.ts';
import { takeRunFiles } from '../probe/staging.ts';
import { verifyMeta, resolvePr, type RunMeta } from './split.ts';
import { out, type Session } from './session.ts';

/** The probe job's run dir, downloaded and checked to be the judged run's and this model's. */
interface FetchedRunDir { dir: string; meta: RunMeta; prNumber: number | null }

export interface Ports {
  /** The one check() (probe, judge, documents): mode full and report. */
  check(plan: Plan, deps: CheckDeps): Promise<CheckResult>;
  /** The probe step alone: mode probe. */
  probe(plan: Plan, log: Log): Promise<Probed>;
  /** mode report: the probe job's run dir. */
  fetchRunDir(s: Session, key: string): Promise<FetchedRunDir>;
  /** mode affected: every model's inputs, from the probe's static plans (no model code runs). */
  plans(airRoot: string, names: string[], o: PlanOptions): Promise<ModelFacts[]>;
}

/** mode report: the probe job's run dir from the judged run, checked to be that run's and this model's. */
async function fetchRunDir(s: Session, key: string): Promise<FetchedRunDir> {
  const j = s.trust.judged;
  if (!j.runId) throw new InfraError("mode report needs a workflow_run event or the 'run-id' input to find the probe job's artifact");
  if (!j.headSha) throw new InfraError(`run ${j.runId} has no head commit to check the artifact against`);
  if (!s.store) throw new InfraError('mode report needs the artifact service (ACTIONS_RUNTIME_TOKEN) to download the run dir');
  const ref = { owner: s.ctx.owner, repo: s.ctx.repo, runId: j.runId, token: s.inputs.token };
  const found = pickArtifact(await s.store.list(ref), s.inputs.artifactName, key, j.runAttempt);
  if (!found) {
    const why = j.conclusion && j.conclusion !== 'success' ? ` (that run's conclusion is ${j.conclusion}: see its log)` : '';
    throw new InfraError(`no artifact named ${artifactName(s.inputs.artifactName, key, null, j.runAttempt)} (or a matrix leg of it) in run ${j.runId}${why}; did the mode probe job upload one?`);
  }
  const dir = await freshDir('nbg-run-');
  await s.store.download(ref, found, dir);
  if (s.store.note) out.warning(s.store.note);
  out.info(`downloaded artifact ${found.name} from run ${j.runId} into ${dir}`);
  const meta = verifyMeta(dir, { repository: `${s.ctx.owner}/${s.ctx.repo}`, headSha: j.headSha, modelKey: key });
  // The artifact is the probe job's, which ran the pull request's code: only the run-dir contract's
  // files come through (the one door, as out of the sandbox), so nothing else it carries (a report
  // of its own making, a page, a link) is judged, posted or uploaded again under our name.
  const run = await freshDir('nbg-run-');
  const taken = takeRunFiles(dir, run);
  for (const r of taken.refused) out.warning(`artifact ${found.name}: ${r.name} left out: ${r.why}`);
  await removeDir(dir);
  let prNumber: number | null = null;
  if (s.api && (j.pullRequests.length || meta.pr_number)) prNumber = await resolvePr(s.api, j.pullRequests, meta.pr_number, j.headSha, (m) => out.warning(m));
  return { dir: run, meta, prNumber };
}

/** The real ones: what main.ts runs. */
export const REAL_PORTS: Ports = {
  check,
  // mode probe judges nothing here (no bisect reads the staging area): the probe's area goes at once.
  probe: async (plan, log) => { const p = await probe(plan, log); p.release(log); return p; },
  fetchRunDir,
  plans: planFacts,
};
