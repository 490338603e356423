// mode affected: which model dirs the event's change affects, as outputs a workflow turns into its
// matrix (`strategy.matrix: ${{ fromJSON(needs.affected.outputs.matrix) }}`), and a table in the
// job summary saying why each model is in or out. Runs no model code (the plans read the tree
// statically), so it may run on a pull request's checkout with a read-only token.
import * as core from '@actions/core';
import { Git } from './git.ts';
import { affected, matrixOf, type Affected } from '../fleet/affected.ts';
import { affectedMarkdown, legCount } from '../fleet/affected-text.ts';
import { matrixLimitNote } from '../fleet/legs.ts';
import { changedBetween, checkoutOf, hasCommit, prefixOf } from '../fleet/changes.ts';
import { airRootAt, modelNames, planWithBase } from '../fleet/plans.ts';
import { InputError, oneLine } from '../errors.ts';
import { eventChange, type FleetInputs } from './fleet-inputs.ts';
import { actionLog, out, type Session } from './session.ts';
import type { Ports } from './ports.ts';

/** Fetches a commit the clone lacks (actions/checkout fetches one commit by default). */
async function ensureCommit(git: Git, rev: string): Promise<void> {
  if (hasCommit(git.checkout, rev)) return;
  const r = await git.talk(['fetch', '--no-tags', '--quiet', '--no-recurse-submodules', '--depth=200', 'origin', rev], { allowFail: true });
  if (r.code !== 0) out.warning(`could not fetch ${rev.slice(0, 12)} (${r.stderr.trim().split('\n').pop()}); check out with fetch-depth: 0`);
}

export async function affectedJob(s: Session, fi: FleetInputs, ports: Ports): Promise<{ outputs: Record<string, string>; result: Affected }> {
  const root = airRootAt(fi.tree);
  const top = checkoutOf(root);
  let changed: string[] = [];
  let all: string | null = null;
  let range: { base: string; head: string } | null = null;
  if (fi.changedFiles) changed = fi.changedFiles;
  else {
    const ev = fi.base ? { base: fi.base, head: fi.head ?? 'HEAD' } : eventChange(s.ctx);
    if ('none' in ev) all = ev.none;
    else {
      if (!top) throw new InputError('comparing commits needs a git checkout of the tree (or give changed-files)', root);
      const git = new Git(top, (m) => out.debug(m));
      git.useToken(s.inputs.token);
      for (const rev of [ev.base, ev.head]) if (/^[0-9a-f]{40}/.test(rev)) await ensureCommit(git, rev);
      const d = changedBetween(top, ev.base, ev.head);
      if (d.note) out.notice(d.note);
      changed = d.files;
      range = ev;
      out.info(`affected: ${changed.length} file${changed.length === 1 ? '' : 's'} changed in ${ev.base.slice(0, 12)}...${ev.head.slice(0, 12)}`);
    }
  }
  const names = modelNames(root);
  actionLog.step(`affected: planning ${names.length} model dirs (static: no model code runs)`);
  const opts = { python: s.inputs.python, timeoutSec: s.inputs.timeoutSec, log: actionLog };
  const headFacts = await ports.plans(root, names, opts);
  const prefix = prefixOf(root, top?.workTree ?? null);
  // What the change deletes or renames away: the models that read it at the base are in too.
  const facts = range && top ? await planWithBase({ top, airRoot: root, prefix, ...range, changed, facts: headFacts }, opts) : headFacts;
  const result = affected(facts, changed, prefix, all);
  for (const r of result.rows) out.info(`${r.in ? 'in ' : 'out'} ${r.name}: ${r.why}`);
  const limit = matrixLimitNote(legCount(result, fi.runners));
  if (limit) out.warning(limit);
  try {
    await core.summary.addRaw(affectedMarkdown(result, fi.runners)).addEOL().write();
  } catch (e) {
    out.warning(`could not write the job summary: ${oneLine(e)}`);
  }
  return {
    result,
    outputs: {
      models: JSON.stringify(result.models),
      matrix: JSON.stringify(matrixOf(result.models, fi.runners)),
      count: String(result.models.length),
      everything: String(result.everything),
    },
  };
}
