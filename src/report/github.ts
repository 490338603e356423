// The texts the Action writes to GitHub, beside the other renderers: the sticky comment's content,
// the preview of what a trusted run will record, the docs PR (title, body, commit message), the
// lines the job summary adds, and which commit of a pull request was judged. Every foreign string
// goes through escape.ts; test/golden/*.md holds what they render to.
import type { IsolationRow, Report } from '../record/report.ts';
import { renderMarkdown } from './markdown.ts';
import { code, id, literal, plain, str, text } from '../text/escape.ts';
import { DOC_PATHS } from '../docs/markers.ts';

/** Which commit a run judged. */
export interface JudgedCommit {
  /** The judged run's head commit: what the documents and the comment record. */
  head: string;
  /** pull_request: GITHUB_SHA, the merge commit of head and base (null when none or equal to head). */
  merge: string | null;
  /** What the probe actually had checked out, when known. */
  checkout: string | null;
}

const short = (sha: unknown) => literal(str(sha).slice(0, 12));

/** One sentence on whether a pull request's merge commit or its head was judged; null when not a question. */
export function judgedLine(j: JudgedCommit | null): string | null {
  if (!j || !j.merge || j.merge === j.head) return null;
  if (j.checkout === j.merge)
    return `Judged the merge commit ${short(j.merge)} (pull request head ${short(j.head)} merged into its base, what \`actions/checkout\` checks out for a pull request); recorded as the head ${short(j.head)}.`;
  if (j.checkout === j.head) return `Judged the pull request head ${short(j.head)} itself, not the merge commit ${short(j.merge)}.`;
  if (j.checkout) return `Judged the checkout at ${short(j.checkout)}: neither the pull request head ${short(j.head)} nor its merge commit ${short(j.merge)}.`;
  return `Judged pull request head ${short(j.head)} or its merge commit ${short(j.merge)}; the probe did not say which was checked out.`;
}

interface CommentOptions {
  /** Repository-relative model dir. */
  modelKey: string;
  runUrl: string;
  artifactUrl?: string | null;
  /** Show what a trusted run will record (this run records nothing). */
  preview: boolean;
  judged?: JudgedCommit | null;
  /** Extra lines (e.g. why the documents were not recorded), already safe markdown. */
  notes?: string[];
}

/** The sticky comment's content (the caller adds the marker and cuts it to GitHub's limit). */
export function commentContent(report: Report, o: CommentOptions): string {
  const artifactUrl = o.artifactUrl ?? undefined;
  const parts = [renderMarkdown(report, { flavor: 'comment', artifactUrl })];
  const judged = judgedLine(o.judged ?? null);
  if (judged) parts.push(judged);
  for (const n of o.notes ?? []) parts.push(n);
  if (o.preview && report.outcome !== 'error') parts.push(docsPreview(report, o.modelKey));
  parts.push(`<sub>${plain(report.tool.name, 40)} ${plain(report.tool.version, 20)} · [workflow run](${o.runUrl})${artifactUrl ? ` · [run dir artifact](${artifactUrl})` : ''}</sub>`);
  return parts.join('\n\n');
}

/** On pull requests: what a trusted run will record, instead of recording it. */
export function docsPreview(report: Report, modelKey: string): string {
  const pass = report.outcome === 'pass';
  const at = (p: string) => code(`${modelKey}/${p}`);
  const failed = report.gates.filter((g) => g.status === 'fail').map((g) => g.id).join(', ');
  const lines = [
    `- ${at(DOC_PATHS.phase2)}: this report as the latest result, and a history row for commit ${short(report.commit)} (${literal(report.prompt?.style ?? 'default', { max: 40 })} prompt).`,
    pass
      ? `- ${at(DOC_PATHS.todo)}: \`- [x] 2: Single-Block Validation\`, and any Phase 2 blocker line removed.`
      : `- ${at(DOC_PATHS.todo)}: a Phase 2 blocker under \`## Active blockers\` naming ${failed}.`,
  ];
  const workarounds = Array.isArray(report.integration?.workarounds) ? report.integration!.workarounds : [];
  for (const w of workarounds.slice(0, 20)) lines.push(`- ${at(DOC_PATHS.todo)}: Phase 4/5 prerequisite for ${id(w?.id)}.`);
  return `<details><summary>Documents a trusted run (push, schedule, dispatch) will record</summary>\n\n${lines.join('\n')}\n\n</details>`;
}

interface DocsPrText {
  title: string;
  body: string;
  commitMessage: string;
}

/** Title, body and commit message of the docs PR. The model name is the model dir's basename. */
export function docsPrText(report: Report, o: { modelKey: string; branch: string; base: string; runId: number; judged?: JudgedCommit | null }): DocsPrText {
  const verdict = report.outcome === 'pass' ? 'PASS' : 'FAIL';
  const name = plain(report.model.name, 64).replace(/\s+/g, '_');
  const m = report.metrics;
  const sha12 = str(report.commit).slice(0, 12);
  const body = [
    `Phase 2 (single-block validation) result for ${code(o.modelKey)}: **${verdict}**.`,
    '',
    m ? `Whole-tensor cosine ${m.wholeCosine.toFixed(6)}, per-position min ${m.perPosition.min.toFixed(6)} (threshold ${report.thresholds.perPosition}).` : '',
    '',
    `Records \`${DOC_PATHS.phase2}\` and \`${DOC_PATHS.todo}\` for commit ${literal(sha12)}. Written by npu-block-gate; the branch ${code(o.branch)} is rebuilt on ${code(o.base)} by every trusted run.`,
  ];
  const judged = judgedLine(o.judged ?? null);
  if (judged) body.push('', judged);
  return {
    title: `docs(${name}): Phase 2 single-block validation ${verdict}`,
    body: body.join('\n'),
    commitMessage: `docs(${name}): record Phase 2 ${verdict} for ${sha12}\n\nWritten by npu-block-gate from workflow run ${o.runId}.`,
  };
}

/** The job summary of a `mode: probe` job that uploaded its run dir. */
export function probedSummary(modelKey: string, artifactName: string | null, isolation: IsolationRow): string {
  return `## npu-block-gate: ${code(modelKey)} probed\n\nThe run dir was uploaded as ${artifactName ? code(artifactName) : '(not uploaded)'}; the verdict comes from the \`mode: report\` job.\n\nProbe isolation: **${text(isolation.mode, 16)}** (${text(isolation.detail, 500)}).\n`;
}

/** The job summary: the report, and which commit was judged. */
export function summaryText(report: Report, o: { artifactUrl?: string | null; judged?: JudgedCommit | null; notes?: string[]; markdown?: string }): string {
  const md = o.markdown ?? renderMarkdown(report, { flavor: 'summary', artifactUrl: o.artifactUrl ?? undefined });
  const extra = [judgedLine(o.judged ?? null), ...(o.notes ?? [])].filter((x): x is string => !!x);
  return extra.length ? `${md.trimEnd()}\n\n${extra.join('\n\n')}\n` : md;
}
