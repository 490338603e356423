// One markdown rendering of a Report for the job summary, the PR comment and phase2_block.md.
import { markdownTable } from 'markdown-table';
import type { Report, GateResult } from '../record/report.ts';
import { cell, id, isId, literal, plain, str, text } from '../text/escape.ts';
import { fmtBudget, fmtCos, fmtSci, fmtDb, fmtSqnr, fmtRatio, fmtRun, fmtSeconds } from '../text/format.ts';
import { formatThreshold, SQNR_GOOD_DB } from '../seed/thresholds.ts';
import { RUN_FILES_CONTRACT } from '../contract.ts';

const RUN_FILES_HTML = RUN_FILES_CONTRACT.html;
import type { Hint } from '../seed/hints.ts';
import type { LensNamed, LensReport, LensRow, Profile } from '../record/lens.ts';
import type { BisectReport } from '../record/bisect.ts';
import { generationName, recordNpu } from '../npu/generation.ts';
import { textHeatmap } from './heatmap.ts';

type Flavor = 'summary' | 'comment' | 'doc';

interface MarkdownOptions {
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

/** The device row: the NPU generation and versions the probe found; an emulated run says so instead. */
export function deviceText(r: Report): string {
  const env = r.environment;
  if (r.emulate) return 'none: emulated run (no NPU ran)';
  const n = env?.npu;
  if (!n) return plainOf(env?.device ?? 'not detected');
  const what = [n.name, n.pci].filter(Boolean).map((x) => plainOf(x, 80)).join(', ');
  const versions = [n.driver && `amdxdna ${plainOf(n.driver, 60)}`, n.firmware && `firmware ${plainOf(n.firmware, 60)}`, n.xrt && `XRT ${plainOf(n.xrt, 60)}`].filter(Boolean).join(', ');
  return `${generationName(recordNpu(r))}${what ? ` (${what})` : ''}${versions ? `; ${versions}` : ''}`;
}

function verdictLine(r: Report): string {
  const name = text(r.model.name, 64);
  if (r.outcome === 'error') return `${ICON.error} **Phase 2 ERROR** (${name}): could not judge; this is not a FAIL verdict`;
  const failed = r.gates.filter((g) => g.status === 'fail').map((g) => g.id);
  const emulated = r.emulate ? ' · **EMULATED** (no NPU ran)' : '';
  return r.outcome === 'pass'
    ? `${ICON.pass} **Phase 2 PASS** (${name})${emulated}`
    : `${ICON.fail} **Phase 2 FAIL** (${name}): ${failed.join(', ')} failed${emulated}`;
}

/** The mark every rendering of an emulated run carries, under the verdict. */
function emulatedNote(r: Report): string[] {
  const e = r.emulate;
  if (!e) return [];
  return [
    '> [!WARNING]',
    `> **EMULATED**: no NPU ran. The tree's own block ran on an emulated NPU (${text(e.runtime, 120)}), so this checks the integration code (argument order, layouts, padding, buffer reuse), not the NPU.${e.inject ? ` Injected bug: ${id(e.inject)}.` : ''}`,
    '',
  ];
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
function cosineChart(r: Report, maxPoints = 120): string {
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
  // Bucketed: the axis still spans every position (0 to N-1), so a drift reads against position.
  const xMax = bucket > 1 ? cos.length - 1 : pts.length - 1;
  return [
    '```mermaid',
    'xychart-beta',
    '  title "Per-position cosine, layer 0 ffn_out"',
    `  x-axis "${xLabel}" 0 --> ${xMax}`,
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
    ...budgetLine(r),
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

/** ffn_out's error budget against FP32 (from the lens), under the error metrics. */
function budgetLine(r: Report): string[] {
  const fb = r.lens?.rows.find((x) => x.name === 'ffn_out')?.budget;
  if (!fb || !r.lens?.budget) return [];
  const ex = r.lens.budget.expected;
  if (fb.vsExpected !== undefined && ex) {
    return [`Error budget against FP32 (${r.lens.budget.measure}): NPU ${fmtSci(fb.npu)}, HF bf16 ${fmtSci(fb.bf16)}, ratio ${fmtBudget(fb.ratio)}; expected ratio ${fmtBudget(fb.expectedRatio!)} (the hardware twins, precision ${text(ex.precision, 20)}: ${fmtSci(fb.expected!)}); NPU over expected **${fmtBudget(fb.vsExpected)}** (bar ${ex.bar}x${fb.over ? ': over it, the NPU adds error of its own, beyond what its number format costs' : ''}).`, ''];
  }
  return [`Error budget against FP32 (${r.lens.budget.measure}): NPU ${fmtSci(fb.npu)}, HF bf16 ${fmtSci(fb.bf16)}, ratio **${fmtBudget(fb.ratio)}** (bar ${r.lens.budget.bar}x${fb.over ? ': over it, the NPU adds error of its own' : ''}).`, ''];
}

function integrationSection(r: Report, flavor: Flavor): string[] {
  const out: string[] = [];
  const i = r.integration;
  if (i) {
    out.push('### Integration', '');
    out.push(`- path: **${text(i.path, 32)}**, entry ${literal(i.entry)}${i.defined_in?.file ? `, defined in ${literal(i.defined_in.file)}` : ''}`);
    if (i.step1?.path_why) out.push(`- the seed's rule: ${text(i.step1.path_why)}`);
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
  if (r.prompt) rows.push(['prompt', cell(`${plainOf(r.prompt.style)} (${plainOf(r.prompt.source)}): ${r.prompt.real_len} tokens${r.prompt.padded_len ? `, padded to ${r.prompt.padded_len}` : ''}${positionsNote(r)}`)]);
  if (env) {
    rows.push(['python', cell(`${env.python} (${env.python_executable}), numpy ${env.numpy}`)]);
    rows.push(['device', cell(deviceText(r))]);
    if (env.xrt) rows.push(['XRT', cell(env.xrt)]);
    rows.push(['air tree commit', cell(env.git_commit ?? 'not a git checkout')]);
  }
  rows.push(['probe isolation', cell(isolationText(r))]);
  // The documents leave out what changes on every run (timings, cache hit), so an unchanged result
  // leaves phase2_block.md byte-identical and a docs PR has nothing to commit.
  if (flavor !== 'doc') {
    const rc = r.reference?.cache;
    if (rc) rows.push(['reference cache', cell(`${rc.hit ? 'hit' : 'miss, stored'} ${rc.key.slice(0, 12)}`)]);
    if (r.kernel_cache) {
      const entries = list(r.kernel_cache.entries).slice(0, 16).map((e) => plainOf(e, 64));
      rows.push(['kernel cache', cell(`${r.emulate ? 'emulated, nothing compiled' : r.kernel_cache.hit ? 'hit' : 'compiled'}${entries.length ? `: ${entries.join(', ')}` : ''}`)]);
    }
    const t = Object.entries(r.timings && typeof r.timings === 'object' ? r.timings : {}).filter(([, v]) => typeof v === 'number');
    if (t.length) rows.push(['timings', cell(t.slice(0, 16).map(([k, v]) => `${plainOf(k, 32)} ${fmtSeconds(v)}`).join(', '))]);
    // Both engines give bit-identical numbers, so which one ran is not part of the result.
    rows.push(['engine', cell(r.metrics ? r.metrics.engine : 'n/a')]);
  }
  if (rows.length > 1) out.push('### Environment', '', markdownTable(rows), '');
  return out;
}

/** How the probe ran, isolated from the process that judged it (plain text; escaped by the caller). */
export function isolationText(r: Report): string {
  const i = r.isolation;
  if (!i) return 'not known (this judge did not run the probe, and no record it trusts says how it ran)';
  return `${plainOf(i.mode, 16)}: ${plainOf(i.detail, 300)}${i.source === 'probe job' ? ' (as the probe job reported)' : ''}`;
}

/** `--positions N`: how the prompt became N tokens, as plain text (escaped by the caller). */
function positionsNote(r: Report): string {
  const pos = r.prompt?.positions;
  if (!pos) return '';
  const how = { prompt: 'the prompt itself', truncated: 'the prompt truncated', continued: 'the prompt continued with the prompt set', repeated: `the prompt continued with the prompt set, repeated (${pos.cycles} cycles)` }[pos.method] ?? plainOf(pos.method, 40);
  return `; --positions ${pos.requested}: ${how}${pos.set ? ` (${plainOf(pos.set, 120)}, ${pos.prompts_used} prompts)` : ''}, from ${pos.prompt_tokens} prompt tokens`;
}

/** Seven decimals: the gate is 0.999998, so fmtCos's precision would hide a miss. */
function cos7(v: number | undefined): string {
  return typeof v === 'number' && Number.isFinite(v) ? v.toFixed(7) : '-';
}

/** Step 2's padded-vs-original check (seed Step 2: "CPU-only sanity test the padded vs orig forward FIRST"). */
function step2SanitySection(r: Report): string[] {
  const s = r.step2_sanity;
  if (!s) return [];
  const out = ['### Step 2 sanity: padded vs original on the CPU (informational)', ''];
  if (s.skipped) return [...out, `Not run: ${text(s.skipped, 600)}.`, ''];
  const o = s.original ?? {};
  const p = s.padded ?? {};
  out.push(`Both forwards in ${text(s.dtype ?? 'float32', 16)} on the prompt's ${s.tokens ?? '?'} tokens; gate: both cosines >= ${s.gate}. ` +
    `Padded sizes: emb_dim ${o.emb_dim} → ${p.emb_dim}, hidden_dim ${o.hidden_dim} → ${p.hidden_dim}, n_heads ${o.n_heads} → ${p.n_heads} ` +
    `(${o.n_kv_heads} KV groups of ${o.group_size} → ${p.group_size}).`, '');
  out.push(markdownTable([
    ['padding', 'layer-0 ffn_out cosine', 'logits cosine', 'result'],
    ...list(s.rows).map((x) => x.skipped
      ? [cell(plainOf(x.label, 120)), '-', '-', cell(`not run: ${plainOf(x.skipped, 300)}`)]
      : [cell(plainOf(x.label, 120)), cos7(x.ffn_out_cosine), cos7(x.logits_cosine), x.pass ? `${ICON.pass} pass` : `${ICON.fail} fail`]),
  ]), '');
  if (s.why) out.push(`Why the reindexing matters: ${text(s.why, 600)}.`, '');
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

/** The lowest y the chart needs: under the threshold and every point, on a 0.001 grid, >= -1. */
function yFloor(values: number[], t: number): number {
  const finite = values.filter(Number.isFinite);
  const floorRaw = Math.min(t, ...(finite.length ? finite : [t])) - 0.005;
  return Math.max(-1, Math.floor(floorRaw * 1000) / 1000);
}

/** A chart label for a boundary: its name when it is an identifier (nothing else reaches the chart). */
const label = (name: string, order: number) => `"${isId(name) ? name : `#${order}`}"`;

/** Mermaid xychart of each boundary's cosine in block order, with the threshold. */
function lensChart(all: LensReport): string {
  // A boundary that could not be judged has no point on the chart (its row says why).
  const lens = { ...all, rows: all.rows.filter((r) => !r.error) };
  if (lens.rows.length < 2) return '';
  const t = lens.threshold;
  const y = yFloor(lens.rows.flatMap((r) => [r.wholeCosine, r.perPositionMin]), t);
  const pts = (f: (x: LensReport['rows'][number]) => number) => lens.rows.map((r) => (Number.isFinite(f(r)) ? f(r) : y).toFixed(4)).join(', ');
  return [
    '```mermaid',
    'xychart-beta',
    '  title "Cosine along block 0: whole, per-position min, threshold"',
    `  x-axis [${lens.rows.map((r) => label(r.name, r.order)).join(', ')}]`,
    `  y-axis "cosine" ${y} --> 1`,
    `  line [${pts((r) => r.wholeCosine)}]`,
    `  line [${pts((r) => r.perPositionMin)}]`,
    `  line [${lens.rows.map(() => t.toFixed(4)).join(', ')}]`,
    '```',
  ].join('\n');
}

/** Mermaid xychart of one boundary's per-position cosine against position, every position covered. */
function profileChart(name: string, order: number, profile: Profile, rows: number, t: number): string {
  if (profile.points.length === 0) return '';
  const y = yFloor(profile.points, t);
  const shown = profile.points.map((p) => (Number.isFinite(p) ? p : y).toFixed(4));
  return [
    '```mermaid',
    'xychart-beta',
    `  title "Per-position cosine against position, boundary ${label(name, order).slice(1, -1)}"`,
    `  x-axis "position${profile.bucket > 1 ? ` (min per ${profile.bucket} rows)` : ''}" 0 --> ${Math.max(1, rows - 1)}`,
    `  y-axis "cosine" ${y} --> 1`,
    `  line [${shown.join(', ')}]`,
    `  line [${shown.map(() => t.toFixed(4)).join(', ')}]`,
    '```',
  ].join('\n');
}

/** The boundary whose per-position profile a --positions run charts: the one named, else the lowest. */
function profiled(lens: LensReport): LensReport['rows'][number] | null {
  const judged = lens.rows.filter((r) => !r.error);
  if (!judged.length) return null;
  const named = lens.firstBelow ? judged.find((r) => r.order === lens.firstBelow!.order) : undefined;
  return named ?? [...judged].sort((a, b) => (Number.isNaN(a.perPositionMin) ? -1 : Number.isNaN(b.perPositionMin) ? 1 : a.perPositionMin - b.perPositionMin))[0];
}

/** "(RoPE, written by rms_gemms_rope)", or '' when neither is known. */
function whereOf(n: LensNamed): string {
  const parts = [n.step ? text(n.step, 40) : '', n.producedBy ? `written by ${literal(n.producedBy, { max: 80 })}` : ''].filter(Boolean);
  return parts.length ? ` (${parts.join(', ')})` : '';
}

function namedLine(n: LensNamed, t: number): string {
  return `**First boundary under the threshold ${formatThreshold(t)}: ${id(n.name)}**${whereOf(n)}: cosine ${fmtCos(n.wholeCosine)}, per-position min ${fmtCos(n.perPositionMin)}.${n.hint ? ` ${hintLine(n.hint)}.` : ''}`;
}

function lensSection(r: Report, opts: MarkdownOptions): string[] {
  const lens = r.lens;
  if (!lens) return [];
  const out = ['### The lens: every boundary inside block 0 (informational)', ''];
  const unpaired = list(lens.unpaired);
  if (!lens.rows.length) {
    const reasons = [...new Set(unpaired.map((u) => plainOf(u.reason, 200)))];
    out.push(`No boundary pairs to judge${unpaired.length ? `: ${unpaired.length} boundar${unpaired.length === 1 ? 'y has' : 'ies have'} one side only (${reasons.slice(0, 4).map((x) => text(x)).join('; ')})` : ''}.`, '');
    return out;
  }
  const rowsN = lens.rows[0].rows;
  const n = lens.firstBelow;
  const onset = lens.onset && (!n || lens.onset.order < n.order) ? lens.onset.order : null;
  out.push(`Each boundary on the ${lens.emulated ? 'emulated NPU' : 'NPU'} against the ${lens.reference ? 'HF layer-0 hooks' : 'reference'}, in block order, over the ${rowsN} real rows, with the gate's engine. The seed's gates stay the gates; a boundary under the threshold ${formatThreshold(lens.threshold)} is named.`, '');
  const budget = !!lens.budget;
  const ex = lens.budget?.expected ?? null;
  const cols = budget ? (ex ? ['vs FP32', 'expected', 'NPU/exp'] : ['vs FP32']) : [];
  const cells = (b: LensRow['budget']) => (!budget ? [] : !b ? cols.map(() => '') : ex
    ? [fmtBudget(b.ratio), b.expectedRatio !== undefined ? fmtBudget(b.expectedRatio) : '', b.vsExpected !== undefined ? fmtBudget(b.vsExpected) : '']
    : [fmtBudget(b.ratio)]);
  out.push(markdownTable([
    ['#', 'boundary', 'step', 'read from', 'cosine', 'per-pos min', 'norm ratio', ...cols, 'max_abs', ''],
    ...lens.rows.map((x) => [
      String(x.order).padStart(2, '0'), id(x.name, { inTable: true }), cell(x.step ?? '', 40), x.launch ? id(x.launch, { inTable: true }) : 'returned',
      ...(x.error ? ['-', '-', '-', ...cols.map(() => '-'), '-', `error: ${cell(x.error, 300)}`] : [
        fmtCos(x.wholeCosine), fmtCos(x.perPositionMin), fmtRatio(x.normRatio), ...cells(x.budget), fmtSci(x.maxAbs),
        [x.below ? `${ICON.fail} under` : x.order === onset ? 'onset' : '', lens.scale?.order === x.order ? '⚠️ scale' : '', x.budget?.over ? '⚠️ error' : ''].filter(Boolean).join(' '),
      ]),
    ]),
  ]), '');
  if (lens.budget && ex) out.push(`vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), each a ${lens.budget.measure}, against HF layer 0 run in FP32 from the same weights and tokens. expected: the same ratio for the hardware twins (precision ${text(ex.precision, 20)}: bf16's roundings plus BFP16 where the tree compiles it), run again over the same launches from the FP32 block input: what the number format costs. NPU/exp: error(NPU) / error(hardware twins), about 1 for a right integration; above ${ex.bar}x the NPU adds error of its own (informational).`, '');
  else if (lens.budget) out.push(`vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), each a ${lens.budget.measure}, against HF layer 0 run in FP32 from the same weights and tokens: about 1 is as good as bf16 allows; above ${lens.budget.bar}x the NPU adds error of its own (informational).`, '');
  // Under the table, in the comment and the job summary: which boundary drifts at which positions.
  const heat = opts.flavor === 'doc' ? '' : textHeatmap(lens);
  if (heat) {
    out.push(heat, '');
    out.push(`Every cell with its numbers, on a scale anchored at the threshold: ${opts.artifactUrl ? `\`${RUN_FILES_HTML}\` in the [run dir artifact](${opts.artifactUrl})` : `\`${RUN_FILES_HTML}\` in the run dir`}.`, '');
  }
  if (lens.firstBelow) {
    out.push(namedLine(lens.firstBelow, lens.threshold), '');
    const o = lens.onset;
    if (o && o.order < lens.firstBelow.order) {
      out.push(`The divergence begins earlier, at ${id(o.name)}${whereOf(o)}: cosine ${fmtCos(o.wholeCosine)}, per-position min ${fmtCos(o.perPositionMin)}, under the clean bar ${formatThreshold(lens.cleanBar)}.${o.hint ? ` ${hintLine(o.hint)}.` : ''}`, '');
    }
  } else if (lens.onset) {
    const o = lens.onset;
    out.push(`Every boundary is at or above the threshold ${formatThreshold(lens.threshold)}, **but a drift begins at ${id(o.name)}**${whereOf(o)}: cosine ${fmtCos(o.wholeCosine)}, per-position min ${fmtCos(o.perPositionMin)}, under the clean bar ${formatThreshold(lens.cleanBar)}.${o.hint ? ` ${hintLine(o.hint)}.` : ''}`, '');
  } else out.push(`Every boundary is at or above the threshold ${formatThreshold(lens.threshold)}.`, '');
  const sc = lens.scale;
  if (sc) out.push(`**Scale: ${id(sc.name)}**${whereOf(sc)} has norm ratio ${sc.accounted ? `|npu|/|twins| ${fmtRatio(sc.normRatio)} (the tree's RMSNorm eps accounted for; |npu|/|ref| ${fmtRatio(sc.accounted.normRatio)})` : fmtRatio(sc.normRatio)}, off 1 by more than ${sc.bar * 100}% (the first boundary to lose its scale; cosine cannot see it): likely ${text(sc.cause, 300)}.${sc.hint ? ` The seed: ${hintLine(sc.hint)}.` : ''}`, '');
  if (unpaired.length) {
    out.push('Not judged (one side only):', '');
    for (const u of unpaired.slice(0, 32)) out.push(`- ${id(u.name)} (${u.side === 'both' ? 'both sides, different shapes' : `${u.side} side only`}): ${text(u.reason, 200)}`);
    out.push('');
  }
  const chart = lensChart(lens);
  if (chart) out.push(chart, '');
  const pr = r.prompt?.positions ? profiled(lens) : null;
  if (pr) out.push(`Per-position cosine of ${id(pr.name)} against position, all ${pr.rows} positions${pr.profile.bucket > 1 ? ` (the lowest of each ${pr.profile.bucket})` : ''}:`, '', profileChart(pr.name, pr.order, pr.profile, pr.rows, lens.threshold), '');
  return out;
}

/** Whether the bisect re-ran the block that was judged (or is void). */
function rerunSection(b: BisectReport): string[] {
  const r = b.rerun;
  if (b.void) return ['> [!WARNING]', `> **Bisect void**: ${text(b.void, 600)}`, ''];
  if (!r) return [];
  return [`Re-run: block 0 unswapped under ${literal(r.python, { max: 200 })} gave back the judged \`ffn_out\` ${r.exact ? 'bit for bit' : `within tolerance (relative L2 ${fmtSci(r.relL2)} <= ${r.tolerance})`}, so the bisect ran the block that was judged.`, ''];
}

function launchSection(b: BisectReport): string[] {
  const launches = list(b.launches);
  if (!launches.length) return [];
  const out = [
    'Launch level: each launch\'s buffers on the NPU against its CPU twin, computed from that launch\'s own captured inputs (numpy, FP32 accumulate, bf16 at the ELF\'s buffers).',
    '',
    markdownTable([
      ['launch', 'ELF', 'buffer', 'boundary', 'stage', 'cosine', 'per-pos min', 'max_abs', ''],
      ...launches.slice(0, 64).flatMap((la) => list(la.buffers).slice(0, 64).map((bu) => [
        String(la.index), id(la.launch, { inTable: true }), id(bu.buffer, { inTable: true }), bu.boundary ? id(bu.boundary, { inTable: true }) : '',
        cell(bu.stage, 60), fmtCos(bu.wholeCosine), fmtCos(bu.perPositionMin), fmtSci(bu.maxAbs),
        bu.diverges ? `${ICON.fail} off its twin` : b.launchOffender && b.launchOffender.index === la.index && b.launchOffender.buffer === bu.buffer ? 'drift starts' : '',
      ])),
    ]),
    '',
  ];
  const o = b.launchOffender;
  const at = (x: NonNullable<BisectReport['launchOffender']>) => `${id(x.launch)}** (launch ${x.index}), buffer ${id(x.buffer)}${x.boundary && x.boundary !== x.buffer ? ` (boundary ${id(x.boundary)})` : ''}${x.stage ? `, stage ${text(x.stage, 60)}` : ''}: cosine ${fmtCos(x.wholeCosine)}, per-position min ${fmtCos(x.perPositionMin)}.`;
  const c = b.launchCrossing;
  if (b.void) return out;
  if (o && c) {
    out.push(`**The drift starts at ${at(o)}${o.hint ? ` ${hintLine(o.hint)}.` : ''} It first crosses the threshold at **${at(c)}`, '');
  } else if (o) {
    out.push(`**${o.strength === 'diverges' ? 'First launch off its twin' : 'No launch is under the threshold; the first that drifts'}: ${at(o)}${o.hint ? ` ${hintLine(o.hint)}.` : ''}`, '');
  } else out.push('Every launch matches its twin: the launches are right given their inputs (look at what feeds the block, or between the launches on the host).', '');
  return out;
}

function bisectSection(r: Report): string[] {
  const b = r.bisect;
  if (!b) return [];
  if (b.available && b.method === 'twins') return twinsSection(b);
  const out = ['### Bisect (seed Step 4: one kernel at a time on the CPU)', '', ...rerunSection(b)];
  if (!b.available) out.push(`Bisect unavailable: ${text(b.reason)}`, '');
  else {
    out.push(markdownTable([
      ['step', 'kernel', 'CPU equivalent', 'whole cosine', 'per-pos min', 'NaN/Inf', 'block passes'],
      ...b.steps.slice(0, 64).map((s) => [id(s.step, { inTable: true }), s.kernel ? id(s.kernel, { inTable: true }) : '', cell(s.cpuEquivalent, 80), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), String(s.nonFinite), s.fixes ? '✅ yes' : 'no']),
    ]), '');
    if (b.offender) {
      out.push(`**Offending boundary: ${id(b.offender.step)}** (kernel ${id(b.offender.kernel)}).${b.offender.hint ? ` ${hintLine(b.offender.hint)}.` : ''}`, '');
    } else if (!b.void) out.push(text(b.reason), '');
  }
  if (b.situation) out.push(`Failure shape: ${hintLine(b.situation)}.`, '');
  return out;
}

/** The real tree's bisect: the launch-level table, then the swap-forward table (seed Step 4 at ELF granularity). */
function twinsSection(b: BisectReport): string[] {
  const out = [`### Bisect (seed Step 4 on the real tree: the CPU twins of its ELFs${b.emulated ? ', on the emulated NPU' : ''})`, ''];
  out.push(...rerunSection(b));
  out.push(...launchSection(b));
  out.push('Swap forward: `ffn_out` when ELFs 1 to i, in launch order, are answered by their twins instead of the NPU.', '');
  out.push(markdownTable([
    ['step', 'ELF swapped', 'swapped so far', 'whole cosine', 'per-pos min', 'NaN/Inf', 'block passes'],
    ...b.steps.slice(0, 64).map((s, i) => [String(i + 1), id(s.step, { inTable: true }), list(s.swapped).slice(0, 16).map((x) => id(x, { inTable: true })).join(', '), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), String(s.nonFinite), s.fixes ? '✅ yes' : 'no']),
  ]), '');
  if (b.offender) out.push(`**Offending ELF (swap forward): ${id(b.offender.step)}**: swapping it to its twin brings the block above threshold.`, '');
  else if (!b.void) out.push(text(b.reason), '');
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
  const tokens = p?.positions ? `, ${text(p.style, 32)} prompt extended to ${p.real_len} positions (--positions)` : p ? `, ${text(p.style, 32)} prompt (${p.real_len} tokens)` : '';
  out.push(`Layer-0 \`ffn_out\` of block 0 on the ${r.emulate ? 'emulated NPU' : 'NPU'} vs the ${r.reference?.kind === 'hf-bf16' ? 'HuggingFace bf16' : 'emulated bf16'} reference` +
    `${tokens}, commit ${literal(str(r.commit).slice(0, 12))}.`, '');
  out.push(...emulatedNote(r));
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
  body.push(...lensSection(r, opts));
  body.push(...bisectSection(r));
  body.push(...step2SanitySection(r));
  body.push(...layersSection(r));
  body.push(...integrationSection(r, opts.flavor));
  // In phase2_block.md the report sits under "## Latest result": one level deeper.
  out.push(...(opts.flavor === 'doc' ? body.map((l) => (l.startsWith('### ') ? `#${l}` : l)) : body));
  if (opts.artifactUrl) out.push(`Full run dir and report: [artifact](${opts.artifactUrl})`, '');
  return out.join('\n');
}
