// Plain-text rendering for the terminal: the verdict, the gates, the numbers that matter.
import type { Report } from './types.ts';
import { fmtCos, fmtSci, fmtSqnr, fmtRatio, fmtRun } from './format.ts';
import { formatThreshold, SQNR_GOOD_DB } from '../gates/thresholds.ts';

function pad(rows: string[][]): string[] {
  const w = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) => r.map((s, c) => (c === r.length - 1 ? s : s.padEnd(w[c]))).join('  ').trimEnd());
}

export function renderTerminal(r: Report): string {
  const out: string[] = [];
  if (r.outcome === 'error') {
    out.push(`ERROR  ${r.model.name}: could not judge (not a FAIL verdict)`, `  ${r.error ?? ''}`);
    return out.join('\n');
  }
  out.push(`${r.outcome === 'pass' ? 'PASS' : 'FAIL'}  ${r.model.name}  (head_dim ${r.thresholds.headDim}, per-position threshold ${formatThreshold(r.thresholds.perPosition)}${r.thresholds.overridden ? ', overridden' : ''})`);
  out.push('');
  const rows = [['gate', 'check', 'measured', 'bar', 'result']];
  for (const g of r.gates) {
    const v = typeof g.value === 'number' ? (g.id === 'G3' ? String(g.value) : fmtCos(g.value)) : (g.value ?? '');
    rows.push([g.id, g.name, v, g.bar, g.status.toUpperCase()]);
  }
  out.push(...pad(rows).map((l) => `  ${l}`));
  for (const g of r.gates) if (g.status === 'fail') out.push(`  ${g.id}: ${g.detail}`);
  const m = r.metrics;
  if (m) {
    const e = m.errors;
    const pp = m.perPosition;
    out.push('');
    out.push(`  per-position cosine  min ${fmtCos(pp.min)}  p5 ${fmtCos(pp.p5)}  median ${fmtCos(pp.median)}  mean ${fmtCos(pp.mean)}  (${m.realLen} real rows of ${m.npuRows})`);
    out.push(`  errors  max_abs ${fmtSci(e.maxAbs)}  mean_abs ${fmtSci(e.meanAbs)}  max_rel ${fmtSci(e.maxRel)}  mean_rel ${fmtSci(e.meanRel)}  mean_rel_L1 ${fmtSci(e.meanRelL1)}  SQNR ${fmtSqnr(e.sqnrDb, SQNR_GOOD_DB)}  norm ratio ${fmtRatio(e.normRatio)}`);
    if (pp.badRuns.length) out.push(`  rows under threshold: ${pp.badRuns.map((b) => fmtRun(b.start, b.end)).join(', ')}${pp.badRuns.some((b) => b.end === m.realLen - 1) ? ' (tail of the prompt)' : ''}`);
    if (pp.worst.length) out.push(`  worst rows: ${pp.worst.map((w) => `${w.row}=${fmtCos(w.cosine)}`).join(' ')}`);
  }
  for (const w of r.warnings) out.push(`  warning: ${w.message}`);
  const b = r.bisect;
  if (b) {
    if (!b.available) out.push(`  bisect: unavailable (${b.reason})`);
    else {
      out.push('', '  bisect (one kernel at a time on the CPU):');
      const rows = [['step', 'kernel', 'whole', 'per-pos min', 'passes']];
      for (const s of b.steps) rows.push([s.step, s.kernel, fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), s.fixes ? 'yes' : 'no']);
      out.push(...pad(rows).map((l) => `    ${l}`));
      out.push(b.offender ? `  offending boundary: ${b.offender.step} (${b.offender.kernel})${b.offender.hint ? `: likely ${b.offender.hint.cause}; ${b.offender.hint.where}` : ''}` : `  ${b.reason}`);
    }
    if (b.situation) out.push(`  failure shape: ${b.situation.cause}; ${b.situation.where}`);
  }
  if (r.layers?.length) {
    out.push('', '  every layer (informational):');
    const rows = [['layer', 'whole', 'per-pos min', 'max_abs', 'SQNR']];
    for (const l of r.layers) rows.push([String(l.layer), fmtCos(l.wholeCosine), fmtCos(l.perPositionMin), fmtSci(l.maxAbs), fmtSqnr(l.sqnrDb, SQNR_GOOD_DB)]);
    out.push(...pad(rows).map((l) => `    ${l}`));
  }
  if (r.integration) {
    out.push('', `  integration: ${r.integration.path} via ${r.integration.entry}${r.integration.workarounds.length ? `; workarounds: ${r.integration.workarounds.map((w) => w.id).join(', ')}` : ''}`);
    const s1 = r.integration.step1;
    if (s1?.breaks?.length) out.push(`  step 1: kernel-first forced by ${s1.breaks.map((b) => `(${b.rule}) ${b.detail}`).join('; ')}`);
    const unwired = r.integration.coverage?.unwired ?? [];
    if (unwired.length) out.push(`  phase 1 coverage: ${unwired.length} verified kernel row(s) naming this model are not launched by the block`);
  }
  for (const d of r.defaults?.differs ?? []) out.push(`  differs from make diagnosis: ${d}`);
  if (r.docs) out.push(`  documented: ${r.docs.phase2}${r.docs.changed ? '' : ' (unchanged)'}`);
  return out.join('\n');
}
