// One markdown rendering of a Report for the job summary, the PR comment and phase2_block.md.
import { markdownTable } from 'markdown-table';
import type { Report, GateResult } from './types.ts';
import { cell, code, escapeHtml } from './escape.ts';
import { fmtCos, fmtSci, fmtDb, fmtSqnr, fmtRatio, fmtRun, fmtSeconds } from './format.ts';
import { formatThreshold, SQNR_GOOD_DB } from '../gates/thresholds.ts';
import type { Hint } from '../bisect/hints.ts';

export type Flavor = 'summary' | 'comment' | 'doc';

export interface MarkdownOptions {
  flavor: Flavor;
  artifactUrl?: string;
  /** Points the chart keeps; per-position cosines are bucketed (min per bucket) beyond it. */
  chartPoints?: number;
}

const ICON = { pass: '✅', fail: '❌', skip: '➖', error: '⚠️' } as const;

export function verdictLine(r: Report): string {
  if (r.outcome === 'error') return `${ICON.error} **Phase 2 ERROR** (${escapeHtml(r.model.name)}): could not judge; this is not a FAIL verdict`;
  const failed = r.gates.filter((g) => g.status === 'fail').map((g) => g.id);
  return r.outcome === 'pass'
    ? `${ICON.pass} **Phase 2 PASS** (${escapeHtml(r.model.name)})`
    : `${ICON.fail} **Phase 2 FAIL** (${escapeHtml(r.model.name)}): ${failed.join(', ')} failed`;
}

function gateValue(g: GateResult): string {
  if (typeof g.value === 'number') return g.id === 'G3' ? String(g.value) : fmtCos(g.value);
  return g.value ?? '';
}

function gatesTable(r: Report): string {
  return markdownTable([
    ['gate', 'check', 'measured', 'bar', 'result', 'detail'],
    ...r.gates.map((g) => [g.id, cell(g.name), cell(gateValue(g)), cell(g.bar), `${ICON[g.status]} ${g.status}`, cell(g.detail)]),
  ]);
}

/** Mermaid xychart of per-position cosine with the threshold as a second line. */
export function cosineChart(r: Report, maxPoints = 120): string {
  const m = r.metrics;
  if (!m || m.perPosition.cosines.length === 0) return '';
  const cos = m.perPosition.cosines;
  const bucket = Math.max(1, Math.ceil(cos.length / maxPoints));
  const pts: number[] = [];
  for (let i = 0; i < cos.length; i += bucket) {
    let lo = Infinity;
    for (let j = i; j < Math.min(cos.length, i + bucket); j++) lo = Math.min(lo, Number.isNaN(cos[j]) ? -Infinity : cos[j]);
    pts.push(lo);
  }
  const t = r.thresholds.perPosition;
  const finite = pts.filter(Number.isFinite);
  const floorRaw = Math.min(t, ...(finite.length ? finite : [t])) - 0.005;
  const yMin = Math.max(-1, Math.floor(floorRaw * 1000) / 1000);
  const shown = pts.map((p) => (Number.isFinite(p) ? p : yMin).toFixed(4));
  const xLabel = bucket > 1 ? `position (min per ${bucket} rows)` : 'position';
  return [
    '```mermaid',
    'xychart-beta',
    '  title "Per-position cosine, layer 0 ffn_out"',
    `  x-axis "${xLabel}" 0 --> ${pts.length - 1}`,
    `  y-axis "cosine" ${yMin} --> 1`,
    `  line [${shown.join(', ')}]`,
    `  line [${pts.map(() => t.toFixed(4)).join(', ')}]`,
    '```',
  ].join('\n');
}

function metricsSection(r: Report): string[] {
  const m = r.metrics;
  if (!m) return [];
  const e = m.errors;
  const pp = m.perPosition;
  const out = [
    '### Error metrics (informational)',
    '',
    markdownTable([
      ['max_abs', 'mean_abs', 'max_rel', 'mean_rel', 'mean_rel_L1', 'SQNR', 'norm ratio'],
      [fmtSci(e.maxAbs), fmtSci(e.meanAbs), fmtSci(e.maxRel), fmtSci(e.meanRel), fmtSci(e.meanRelL1), fmtSqnr(e.sqnrDb, SQNR_GOOD_DB), fmtRatio(e.normRatio)],
    ]),
    '',
    '### Per-position cosine (real tokens only)',
    '',
    markdownTable([
      ['min', 'p5', 'median', 'mean', 'rows', 'threshold'],
      [fmtCos(pp.min), fmtCos(pp.p5), fmtCos(pp.median), fmtCos(pp.mean), `${m.realLen} of ${m.npuRows}`, formatThreshold(r.thresholds.perPosition)],
    ]),
    '',
  ];
  if (pp.worst.length) {
    out.push(`Worst positions: ${pp.worst.map((w) => `${w.row} (${fmtCos(w.cosine)})`).join(', ')}`, '');
  }
  if (pp.badRuns.length) {
    const tail = (end: number) => (end === m.realLen - 1 ? ', at the tail of the prompt' : '');
    out.push('Contiguous runs under the threshold:', '');
    for (const b of pp.badRuns) out.push(`- rows ${fmtRun(b.start, b.end)} (${b.length} row${b.length > 1 ? 's' : ''}${tail(b.end)})`);
    out.push('');
  }
  return out;
}

function integrationSection(r: Report, flavor: Flavor): string[] {
  const out: string[] = [];
  const i = r.integration;
  if (i) {
    out.push('### Integration', '');
    out.push(`- path: **${escapeHtml(i.path)}**, entry ${code(i.entry)}`);
    if (i.reason) out.push(`- why: ${escapeHtml(i.reason)}`);
    const s1 = i.step1;
    if (s1 && s1.matches !== undefined) {
      out.push(s1.matches
        ? '- Step 1: the per-layer kernel sequence matches llama\'s, so inheritance is allowed'
        : `- Step 1: the kernel sequence differs from llama's; kernel-first is forced by ${(s1.breaks ?? []).map((b) => `(${escapeHtml(b.rule)}) ${escapeHtml(b.detail)}`).join('; ')}`);
      if (s1.block) out.push(`- block 0 runs in ${code(s1.block.function)} (${escapeHtml(s1.block.where)}${s1.block.file ? `, ${code(s1.block.file)}` : ''})`);
    }
    const unwired = (i.coverage?.unwired ?? []) as { shape?: string; section?: string; used_by?: string }[];
    if (unwired.length) {
      out.push('- Phase 1 kernels that name this model but are not wired:');
      for (const u of unwired) out.push(`  - ${escapeHtml([u.section, u.shape].filter(Boolean).join(' '))}${u.used_by ? ` (${escapeHtml(u.used_by)})` : ''}`);
    }
    if (i.kernels.length) out.push(`- kernels: ${i.kernels.map(code).join(' → ')}`);
    if (i.cpu_attn !== null && i.cpu_attn !== undefined) out.push(`- attention: ${i.cpu_attn ? 'CPU `attention_reference`' : 'NPU flash attention'}`);
    const tiles = Object.entries(i.tiles ?? {});
    if (tiles.length) out.push(`- tiles: ${tiles.map(([k, v]) => `${code(k)} ${escapeHtml(String(v))}`).join(', ')}`);
    if (i.workarounds.length) {
      out.push('- workarounds (Phase 4/5 prerequisites):');
      for (const w of i.workarounds) out.push(`  - ${code(w.id)}: ${escapeHtml(w.detail)}. ${escapeHtml(w.prerequisite)}`);
    } else out.push('- workarounds: none needed');
    for (const d of r.defaults?.differs ?? []) out.push(`- differs from \`make diagnosis\`: ${escapeHtml(d)}`);
    out.push('');
  }
  const ref = r.reference;
  const env = r.environment;
  const rows: string[][] = [['', '']];
  if (ref) rows.push(['reference', cell(`${ref.kind} via ${ref.runner} (lite_mode=False, ${ref.dtype})${ref.transformers ? `, transformers ${ref.transformers}` : ''}${ref.torch ? `, torch ${ref.torch}` : ''}`)]);
  if (r.prompt) rows.push(['prompt', cell(`${r.prompt.style} (${r.prompt.source}): ${r.prompt.real_len} tokens${r.prompt.padded_len ? `, padded to ${r.prompt.padded_len}` : ''}`)]);
  if (env) {
    rows.push(['python', cell(`${env.python} (${env.python_executable}), numpy ${env.numpy}`)]);
    rows.push(['device', cell(env.device ?? 'not detected')]);
    if (env.xrt) rows.push(['XRT', cell(env.xrt)]);
    rows.push(['air tree commit', cell(env.git_commit ?? 'not a git checkout')]);
  }
  // The documents leave out what changes on every run (timings, cache hit), so an unchanged result
  // leaves phase2_block.md byte-identical and a docs PR has nothing to commit.
  if (flavor !== 'doc') {
    const rc = r.reference?.cache;
    if (rc) rows.push(['reference cache', cell(`${rc.hit ? 'hit' : 'miss, stored'} ${rc.key.slice(0, 12)}`)]);
    if (r.kernel_cache) rows.push(['kernel cache', cell(`${r.kernel_cache.hit ? 'hit' : 'compiled'}${r.kernel_cache.entries.length ? `: ${r.kernel_cache.entries.join(', ')}` : ''}`)]);
    const t = Object.entries(r.timings);
    if (t.length) rows.push(['timings', cell(t.map(([k, v]) => `${k} ${fmtSeconds(v)}`).join(', '))]);
    // Both engines give bit-identical numbers, so which one ran is not part of the result.
    rows.push(['engine', cell(r.metrics ? r.metrics.engine : 'n/a')]);
  }
  if (rows.length > 1) out.push('### Environment', '', markdownTable(rows), '');
  return out;
}

function layersSection(r: Report): string[] {
  if (!r.layers || r.layers.length === 0) return [];
  return [
    '### Every layer (informational, as `make diagnosis`; only layer 0 is gated)',
    '',
    markdownTable([
      ['layer', 'whole cosine', 'per-pos min', 'p5', 'median', 'max_abs', 'max_rel', 'SQNR', 'NaN/Inf'],
      ...r.layers.map((l) => [String(l.layer), fmtCos(l.wholeCosine), fmtCos(l.perPositionMin), fmtCos(l.p5), fmtCos(l.median), fmtSci(l.maxAbs), fmtSci(l.maxRel), fmtDb(l.sqnrDb), String(l.nonFinite)]),
    ]),
    '',
  ];
}

function hintLine(h: Hint): string {
  return `${escapeHtml(h.boundary)}: likely ${escapeHtml(h.cause)}; ${escapeHtml(h.where)}`;
}

function bisectSection(r: Report): string[] {
  const b = r.bisect;
  if (!b) return [];
  const out = ['### Bisect (seed Step 4: one kernel at a time on the CPU)', ''];
  if (!b.available) out.push(`Bisect unavailable: ${escapeHtml(b.reason)}`, '');
  else {
    out.push(markdownTable([
      ['step', 'kernel', 'CPU equivalent', 'whole cosine', 'per-pos min', 'NaN/Inf', 'block passes'],
      ...b.steps.map((s) => [cell(s.step), cell(s.kernel), cell(s.cpuEquivalent), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), String(s.nonFinite), s.fixes ? '✅ yes' : 'no']),
    ]), '');
    if (b.offender) {
      out.push(`**Offending boundary: ${code(b.offender.step)}** (kernel ${code(b.offender.kernel)}).${b.offender.hint ? ` ${hintLine(b.offender.hint)}.` : ''}`, '');
    } else out.push(escapeHtml(b.reason), '');
  }
  if (b.situation) out.push(`Failure shape: ${hintLine(b.situation)}.`, '');
  return out;
}

export function renderMarkdown(r: Report, opts: MarkdownOptions): string {
  const out: string[] = [`${opts.flavor === 'doc' ? '###' : '##'} ${verdictLine(r)}`, ''];
  if (r.outcome === 'error') {
    out.push(`> ${escapeHtml(r.error ?? 'unknown error')}`, '', 'The check could not run to a verdict (infrastructure or input problem). Fix the cause and re-run; no gate was judged.', '');
    if (opts.artifactUrl) out.push(`Run dir and logs: [artifact](${opts.artifactUrl})`, '');
    return out.join('\n');
  }
  const p = r.prompt;
  out.push(`Layer-0 \`ffn_out\` of block 0 on the NPU vs the ${r.reference?.kind === 'hf-bf16' ? 'HuggingFace bf16' : 'emulated bf16'} reference` +
    `${p ? `, ${escapeHtml(p.style)} prompt (${p.real_len} tokens)` : ''}, commit ${code(r.commit.slice(0, 12))}.`, '');
  out.push(gatesTable(r), '');
  if (r.warnings.length) {
    out.push('**Warnings**', '');
    for (const w of r.warnings) out.push(`- ⚠️ ${escapeHtml(w.message)}`);
    out.push('');
  }
  const body: string[] = [];
  body.push(...metricsSection(r));
  const chart = cosineChart(r, opts.chartPoints);
  if (chart) body.push(chart, '');
  body.push(...bisectSection(r));
  body.push(...layersSection(r));
  body.push(...integrationSection(r, opts.flavor));
  // In phase2_block.md the report sits under "## Latest result": one level deeper.
  out.push(...(opts.flavor === 'doc' ? body.map((l) => (l.startsWith('### ') ? `#${l}` : l)) : body));
  if (opts.artifactUrl) out.push(`Full run dir and report: [artifact](${opts.artifactUrl})`, '');
  return out.join('\n');
}
