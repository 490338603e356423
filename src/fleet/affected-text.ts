// affected's answer for people (a terminal table, the job summary's markdown) and for workflows
// (JSON with the matrix). Every model name and path came from the tree: escaped for its sink.
import { markdownTable } from 'markdown-table';
import { cell, code, plain } from '../text/escape.ts';
import { matrixOf, type Affected, type Change } from './affected.ts';
import { matrixLimitNote } from './legs.ts';

/** How many legs the matrix has: models x runner labels (models alone without labels). */
export const legCount = (a: Affected, runners: string[]) => a.models.length * Math.max(1, runners.length);

const AFFECTED_SCHEMA = 'npu-block-gate/affected';

export function affectedJson(a: Affected, runners: string[]): string {
  return JSON.stringify({
    schema: AFFECTED_SCHEMA,
    schema_version: 1,
    models: a.models,
    matrix: matrixOf(a.models, runners),
    count: a.models.length,
    everything: a.everything,
    changes: a.changes,
    rows: a.rows,
  }, null, 2) + '\n';
}

function headline(a: Affected): string {
  const n = a.models.length;
  const files = a.changes.length;
  if (a.everything && !a.changes.some((c) => c.kind === 'unplaced')) return `Every model (${n}) is checked: ${a.rows.find((r) => r.in)?.why ?? 'no change to compare'}.`;
  if (!files) return 'No file changed: no model to check.';
  if (a.everything) {
    const un = a.changes.filter((c) => c.kind === 'unplaced').map((c) => c.file);
    return `${un.length === 1 ? `${un[0]} is` : `${un.length} changed files are`} outside every model's inputs and cannot be placed: every model (${n}) is checked.`;
  }
  if (!n) return `${files} changed file${files === 1 ? '' : 's'}, none read by a model's check: no model to check.`;
  return `${n} model${n === 1 ? '' : 's'} to check for ${files} changed file${files === 1 ? '' : 's'}.`;
}

const KIND: Record<Change['kind'], string> = {
  input: 'read by', 'model-dir': 'in the model dir of', docs: 'documentation', unread: 'read by no model', unplaced: 'cannot be placed: every model',
};

/** The terminal answer: the headline, one line per model (in or out and why), the changed files. */
export function affectedTerminal(a: Affected): string {
  const width = Math.max(5, ...a.rows.map((r) => r.name.length));
  const lines = [headline(a), ''];
  for (const r of a.rows) lines.push(`  ${r.in ? 'in ' : 'out'}  ${plain(r.name, 64).padEnd(width)}  ${plain(r.why, 400).replace(/\n/g, ' ')}`);
  lines.push('', 'changed:');
  for (const c of a.changes) lines.push(`  ${plain(c.file, 200)}: ${KIND[c.kind]}${c.kind === 'input' || c.kind === 'model-dir' ? ` ${c.models.join(', ')}` : ''}`);
  return lines.join('\n') + '\n';
}

/** The job summary: the headline, the table of models, the changed files folded away. */
export function affectedMarkdown(a: Affected, runners: string[]): string {
  const rows = [['model', 'checked', 'why'], ...a.rows.map((r) => [code(r.name, { inTable: true, max: 64 }), r.in ? '✅ in' : r.touched ? '➖ touched, not run' : '➖ out', cell(r.why, 600)])];
  const changes = a.changes.map((c) => `- ${code(c.file, { max: 200 })}: ${KIND[c.kind]}${c.kind === 'input' || c.kind === 'model-dir' ? ` ${c.models.map((m) => code(m, { max: 64 })).join(', ')}` : ''}`);
  const legs = runners.length ? ` on ${runners.map((r) => code(r, { max: 64 })).join(', ')} (${a.models.length * runners.length} legs)` : '';
  return [
    '## npu-block-gate: affected models',
    '',
    `${plain(headline(a), 400)}${a.models.length ? legs : ''}`,
    '',
    ...(matrixLimitNote(legCount(a, runners)) ? [`> [!WARNING]\n> ${plain(matrixLimitNote(legCount(a, runners))!, 400)}`, ''] : []),
    markdownTable(rows),
    '',
    `<details><summary>${a.changes.length} changed file${a.changes.length === 1 ? '' : 's'}</summary>`,
    '',
    ...(changes.length ? changes : ['(none)']),
    '',
    '</details>',
    '',
  ].join('\n');
}
