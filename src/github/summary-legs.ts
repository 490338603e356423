// mode summary's pure parts: which artifact is which leg of the matrix, and the sticky comment's
// body (marker, digest, the table within GitHub's limit). No effects, no @actions/core.
import { createHash } from 'node:crypto';
import { InputError } from '../errors.ts';
import { legModel, legRunner, type Leg } from '../fleet/legs.ts';
import { summaryMarkdown, type LegResult, type SummaryOptions } from '../fleet/summary.ts';
import { artifactName, artifactPattern, type FoundArtifact } from './artifact.ts';
import { marker, resultDigest, truncateBody, COMMENT_BUDGET } from './comment.ts';
import { legOf } from './inputs.ts';

/** A leg to judge: what the matrix ran (or an artifact found), and its artifact if it left one. */
export interface LegPlan {
  model: string | null;
  /** The artifact's model slug, when the leg is known only by its artifact. */
  slug: string | null;
  runner: string | null;
  leg: Leg | null;
  artifact: FoundArtifact | null;
  /** The name the artifact should have had (for the missing line). */
  expected: string | null;
}

/**
 * Which artifact is which leg. With the matrix's legs: exactly each leg's name (its model and the
 * hash of its matrix values), the newest attempt up to this run's. Without them: every artifact of
 * this prefix, one leg per model and matrix hash (nothing can then be named missing).
 */
export function matchLegs(found: FoundArtifact[], legs: Leg[] | null, prefix: string, attempt: number | null): LegPlan[] {
  const newest = (xs: { a: FoundArtifact; attempt: number }[]) => xs.filter((x) => attempt === null || x.attempt <= attempt).sort((p, q) => q.attempt - p.attempt || q.a.id - p.a.id)[0]?.a ?? null;
  if (legs) {
    return legs.map((leg, i) => {
      const model = legModel(leg);
      if (!model) throw new InputError(`input 'legs': leg ${i + 1} (${JSON.stringify(leg).slice(0, 120)}) names no model (a 'model' or 'model-dir' value)`);
      const id = legOf(JSON.stringify(leg));
      const pattern = artifactPattern(prefix, model);
      const mine = found.map((a) => ({ a, m: pattern.exec(a.name) })).filter((x) => x.m && (x.m[1] ?? null) === id).map((x) => ({ a: x.a, attempt: Number(x.m![2]) }));
      return { model, slug: null, runner: legRunner(leg), leg, artifact: newest(mine), expected: artifactName(prefix, model, id, attempt ?? 1) };
    });
  }
  const clean = prefix.replace(/[":<>|*?\\/\r\n\s]+/g, '_').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const any = new RegExp(`^${clean}-(.+?)(?:-(leg-[0-9a-f]{8}))?-attempt([1-9][0-9]{0,3})$`);
  const groups = new Map<string, { a: FoundArtifact; attempt: number }[]>();
  for (const a of found) {
    const m = any.exec(a.name);
    if (!m) continue;
    const k = `${m[1]}\0${m[2] ?? ''}`;
    groups.set(k, [...(groups.get(k) ?? []), { a, attempt: Number(m[3]) }]);
  }
  return [...groups].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, xs]) => ({ model: null, slug: k.split('\0')[0], runner: null, leg: null, artifact: newest(xs), expected: null }));
}

function digest(legs: LegResult[]): string {
  const h = createHash('sha256');
  for (const l of legs) h.update(JSON.stringify([l.model, l.runner, l.state, l.error, l.report ? resultDigest(l.report) : null, l.base])).update('\0');
  return h.digest('hex').slice(0, 32);
}

/**
 * The sticky comment: the marker (its digest says whether anything changed), then the summary;
 * when that would pass GitHub's limit, the passing legs' rows are left to the job summary, and
 * anything still too long is cut with a link to the run.
 */
export function summaryCommentBody(legs: LegResult[], opts: SummaryOptions, key: string): string {
  const head = marker(key, digest(legs)) + '\n';
  let content = summaryMarkdown(legs, opts);
  if (head.length + content.length > COMMENT_BUDGET) content = summaryMarkdown(legs, { ...opts, passingRows: false });
  if (head.length + content.length > COMMENT_BUDGET) {
    // Still too long: as many "needs a look" rows as fit (failures first), the rest counted, never cut silently.
    let lo = 0;
    let hi = legs.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (head.length + summaryMarkdown(legs, { ...opts, passingRows: false, openRows: mid }).length <= COMMENT_BUDGET) lo = mid;
      else hi = mid - 1;
    }
    content = summaryMarkdown(legs, { ...opts, passingRows: false, openRows: lo });
  }
  return head + truncateBody(content, COMMENT_BUDGET - head.length, opts.runUrl);
}
