// The fleet page (`status --tree DIR --html OUT`, and the summary job's artifact): models x NPU
// generations, each cell the latest verdict with its whole cosine and date, a sparkline of the
// generation's per-position min over its last runs, and each model's open blockers. One
// self-contained file like report.html (html-kit.ts); every value is text in the table itself.
import type { GenerationStatus, ModelStatus } from '../record/status.ts';
import { generationName } from '../npu/generation.ts';
import { fmtCos } from '../text/format.ts';
import { esc, page, sparkline, swatch, table } from './html-kit.ts';

interface FleetOptions {
  /** What the page shows, e.g. "programming_examples/llms of /path/to/mlir-air" (plain text). */
  source: string;
  /** A line under the title (plain text), e.g. the workflow run and commit of a summary job. */
  note?: string;
}

/** The verdict class of a history outcome ("PASS", "FAIL (emulated)", "ERROR", ...). */
function verdictClass(outcome: string): 'pass' | 'fail' | 'error' {
  const o = outcome.toUpperCase();
  return o.startsWith('PASS') ? 'pass' : o.startsWith('FAIL') ? 'fail' : 'error';
}

const MARK = { pass: '✓', fail: '✗', error: '!' } as const;

function cellOf(m: ModelStatus, g: GenerationStatus | undefined): string {
  if (!g) return '<td class="n" data-verdict="none">–</td>';
  const k = verdictClass(g.outcome);
  const spark = sparkline(g.trend, 'per-position min', { fmt: fmtCos, bar: g.threshold });
  return `<td class="cell-${k}" data-model="${esc(m.name, 120)}" data-npu="${esc(g.npu, 40)}" data-verdict="${k}"><strong class="${k === 'pass' ? 'ok' : k === 'fail' ? 'bad' : 'err'}">${MARK[k]} <span data-outcome>${esc(g.outcome, 40)}</span></strong><br>cosine <span data-cosine>${g.cosine === null ? 'n/a' : fmtCos(g.cosine)}</span><br><span data-date>${esc(g.date, 20)}</span> · <code>${esc(g.commit, 16)}</code>${spark ? `<br>${spark}` : ''}</td>`;
}

/** The fleet page of `models` (the tree's status). Pure: the same status gives the same bytes. */
export function renderFleetHtml(models: readonly ModelStatus[], o: FleetOptions): string {
  const npus = [...new Set(models.flatMap((m) => m.generations.map((g) => g.npu)))].sort();
  const head = ['model', ...npus.map((n) => esc(generationName(n), 60)), 'Phase 2', 'open blockers'];
  const rows = models.map((m) => {
    const name = `<code>${esc(m.name, 120)}</code>${m.problem ? `<br><span class="err">unreadable: ${esc(m.problem, 300)}</span>` : !m.generations.length ? '<br><span class="note">never recorded</span>' : ''}`;
    const cells = npus.map((n) => cellOf(m, m.generations.find((g) => g.npu === n)));
    const done = m.phase2_done === null ? '?' : m.phase2_done ? '☑ done' : '☐ open';
    const blockers = m.blockers.length ? `<ul>${m.blockers.map((b) => `<li>${esc(b, 300)}</li>`).join('')}</ul>` : 'none';
    return `<tr data-row="${esc(m.name, 120)}"><th scope="row">${name}</th>${cells.join('')}<td>${done}</td><td>${blockers}</td></tr>`;
  });
  const count = (k: 'pass' | 'fail' | 'error') => models.reduce((a, m) => a + m.generations.filter((g) => verdictClass(g.outcome) === k).length, 0);
  const blockers = models.filter((m) => m.blockers.length);
  const body = `<main>
<h1>npu-block-gate: Phase 2 status of the fleet</h1>
<p>${esc(o.source, 400)}${o.note ? `<br>${esc(o.note, 400)}` : ''}</p>
<p><strong>${models.length}</strong> model dirs × <strong>${npus.length}</strong> NPU generation${npus.length === 1 ? '' : 's'}: <span class="ok">${count('pass')} passing</span>, <span class="bad">${count('fail')} failing</span>, <span class="err">${count('error')} errors</span> (the latest recorded run of each).</p>
<div class="legend">${swatch('cell-pass', '✓ PASS', ' data-class="pass"')}${swatch('cell-fail', '✗ FAIL', ' data-class="fail"')}${swatch('cell-error', '! ERROR', ' data-class="error"')}<span>the line: per-position min of the last runs on the same prompt; dashed: its threshold</span></div>
<div class="scroll"><table class="fleet"><thead><tr>${head.map((h) => `<th scope="col">${h}</th>`).join('')}</tr></thead><tbody>
${rows.join('\n')}
</tbody></table></div>
<section id="blockers"><h2>Blockers</h2>${blockers.length ? table(['model', 'open blockers (TODO.md)'], blockers.map((m) => [`<code>${esc(m.name, 120)}</code>`, `<ul>${m.blockers.map((b) => `<li>${esc(b, 300)}</li>`).join('')}</ul>`])) : '<p>No open blockers.</p>'}</section>
</main>`;
  return page('npu-block-gate: fleet status', body);
}
