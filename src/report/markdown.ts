// One markdown rendering of a Report for the job summary, the PR comment and phase2_block.md.
import { markdownTable } from 'markdown-table';
import type { Report, GateResult } from './types.ts';
import { cell, id, literal, plain, str, text } from './escape.ts';
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

/** A list from a run dir: anything that is not an array is no entries. */
function list<T>(v: readonly T[] | null | undefined): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}

/** A foreign value as one bounded line of plain text (escaped later by cell()). */
function plainOf(v: unknown, max = 120): string {
  return plain(v, max).replace(/\s*\n\s*/g, ' ');
}

export function verdictLine(r: Report): string {
  const name = text(r.model.name, 64);
  if (r.outcome === 'error') return `${ICON.error} **Phase 2 ERROR** (${name}): could not judge; this is not a FAIL verdict`;
  const failed = r.gates.filter((g) => g.status === 'fail').map((g) => g.id);
  return r.outcome === 'pass'
    ? `${ICON.pass} **Phase 2 PASS** (${name})`
    : `${ICON.fail} **Phase 2 FAIL** (${name}): ${failed.join(', ')} failed`;
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
    out.push(`- path: **${text(i.path, 32)}**, entry ${literal(i.entry)}`);
    if (i.reason) out.push(`- why: ${text(i.reason)}`);
    const s1 = i.step1;
    if (s1 && s1.matches !== undefined) {
      out.push(s1.matches
        ? '- Step 1: the per-layer kernel sequence matches llama\'s, so inheritance is allowed'
        : `- Step 1: the kernel sequence differs from llama's; kernel-first is forced by ${list(s1.breaks).slice(0, 20).map((b) => `(${text(b?.rule, 8)}) ${text(b?.detail)}`).join('; ')}`);
      if (s1.block) out.push(`- block 0 runs in ${literal(s1.block.function)} (${text(s1.block.where)}${s1.block.file ? `, ${literal(s1.block.file)}` : ''})`);
    }
    const unwired = list(i.coverage?.unwired) as ({ shape?: unknown; section?: unknown; used_by?: unknown } | null)[];
    if (unwired.length) {
      out.push('- Phase 1 kernels that name this model but are not wired:');
      for (const u of unwired.slice(0, 50)) out.push(`  - ${text([str(u?.section), str(u?.shape)].filter(Boolean).join(' '))}${u?.used_by ? ` (${text(u.used_by)})` : ''}`);
    }
    const kernels = list(i.kernels);
    if (kernels.length) out.push(`- kernels: ${kernels.slice(0, 64).map((k) => id(k)).join(' → ')}`);
    if (i.cpu_attn !== null && i.cpu_attn !== undefined) out.push(`- attention: ${i.cpu_attn ? 'CPU `attention_reference`' : 'NPU flash attention'}`);
    const tiles = Object.entries(i.tiles && typeof i.tiles === 'object' ? i.tiles : {});
    if (tiles.length) out.push(`- tiles: ${tiles.slice(0, 32).map(([k, v]) => `${id(k)} ${text(v, 64)}`).join(', ')}`);
    const workarounds = list(i.workarounds);
    if (workarounds.length) {
      out.push('- workarounds (Phase 4/5 prerequisites):');
      for (const w of workarounds.slice(0, 20)) out.push(`  - ${id(w?.id)}: ${text(w?.detail)}. ${text(w?.prerequisite)}`);
    } else out.push('- workarounds: none needed');
    for (const d of list(r.defaults?.differs).slice(0, 20)) out.push(`- differs from \`make diagnosis\`: ${text(d)}`);
    out.push('');
  }
  const ref = r.reference;
  const env = r.environment;
  const rows: string[][] = [['', '']];
  if (ref) rows.push(['reference', cell(`${ref.kind} via ${ref.runner} (lite_mode=False, ${ref.dtype})${ref.transformers ? `, transformers ${ref.transformers}` : ''}${ref.torch ? `, torch ${ref.torch}` : ''}`)]);
  if (r.prompt) rows.push(['prompt', cell(`${plainOf(r.prompt.style)} (${plainOf(r.prompt.source)}): ${r.prompt.real_len} tokens${r.prompt.padded_len ? `, padded to ${r.prompt.padded_len}` : ''}`)]);
  if (env) {
    rows.push(['python', cell(`${env.python} (${env.python_executable}), numpy ${env.numpy}`)]);
    rows.push(['device', cell(env.device ?? 'not detected')]);
    if (env.xrt) rows.push(['XRT', cell(env.xrt)]);
    rows.push(['air tree commit', cell(env.git_commit ?? 'not a git checkout')]);
  }
  if (r.isolation) rows.push(['probe isolation', cell(`${r.isolation.mode}: ${plainOf(r.isolation.detail)}`)]);
  // The documents leave out what changes on every run (timings, cache hit), so an unchanged result
  // leaves phase2_block.md byte-identical and a docs PR has nothing to commit.
  if (flavor !== 'doc') {
    const rc = r.reference?.cache;
    if (rc) rows.push(['reference cache', cell(`${rc.hit ? 'hit' : 'miss, stored'} ${rc.key.slice(0, 12)}`)]);
    if (r.kernel_cache) {
      const entries = list(r.kernel_cache.entries).slice(0, 16).map((e) => plainOf(e, 64));
      rows.push(['kernel cache', cell(`${r.kernel_cache.hit ? 'hit' : 'compiled'}${entries.length ? `: ${entries.join(', ')}` : ''}`)]);
    }
    const t = Object.entries(r.timings && typeof r.timings === 'object' ? r.timings : {}).filter(([, v]) => typeof v === 'number');
    if (t.length) rows.push(['timings', cell(t.slice(0, 16).map(([k, v]) => `${plainOf(k, 32)} ${fmtSeconds(v)}`).join(', '))]);
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
  return `${text(h.boundary)}: likely ${text(h.cause)}; ${text(h.where)}`;
}

function bisectSection(r: Report): string[] {
  const b = r.bisect;
  if (!b) return [];
  const out = ['### Bisect (seed Step 4: one kernel at a time on the CPU)', ''];
  if (!b.available) out.push(`Bisect unavailable: ${text(b.reason)}`, '');
  else {
    out.push(markdownTable([
      ['step', 'kernel', 'CPU equivalent', 'whole cosine', 'per-pos min', 'NaN/Inf', 'block passes'],
      ...b.steps.slice(0, 64).map((s) => [id(s.step, { inTable: true }), s.kernel ? id(s.kernel, { inTable: true }) : '', cell(s.cpuEquivalent, 80), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), String(s.nonFinite), s.fixes ? '✅ yes' : 'no']),
    ]), '');
    if (b.offender) {
      out.push(`**Offending boundary: ${id(b.offender.step)}** (kernel ${id(b.offender.kernel)}).${b.offender.hint ? ` ${hintLine(b.offender.hint)}.` : ''}`, '');
    } else out.push(text(b.reason), '');
  }
  if (b.situation) out.push(`Failure shape: ${hintLine(b.situation)}.`, '');
  return out;
}

export function renderMarkdown(r: Report, opts: MarkdownOptions): string {
  const out: string[] = [`${opts.flavor === 'doc' ? '###' : '##'} ${verdictLine(r)}`, ''];
  if (r.outcome === 'error') {
    out.push(`> ${text(r.error ?? 'unknown error', 1000)}`, '', 'The check could not run to a verdict (infrastructure or input problem). Fix the cause and re-run; no gate was judged.', '');
    if (opts.artifactUrl) out.push(`Run dir and logs: [artifact](${opts.artifactUrl})`, '');
    return out.join('\n');
  }
  const p = r.prompt;
  out.push(`Layer-0 \`ffn_out\` of block 0 on the NPU vs the ${r.reference?.kind === 'hf-bf16' ? 'HuggingFace bf16' : 'emulated bf16'} reference` +
    `${p ? `, ${text(p.style, 32)} prompt (${p.real_len} tokens)` : ''}, commit ${literal(str(r.commit).slice(0, 12))}.`, '');
  out.push(gatesTable(r), '');
  if (r.warnings.length) {
    out.push('**Warnings**', '');
    for (const w of r.warnings) out.push(`- ⚠️ ${text(w.message, 600)}`);
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
