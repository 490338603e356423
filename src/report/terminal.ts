// Plain-text rendering for the terminal: the verdict, the gates, the numbers that matter.
import type { Report } from './types.ts';
import { fmtCos, fmtSci, fmtSqnr, fmtRatio, fmtRun } from './format.ts';
import { formatThreshold, SQNR_GOOD_DB } from '../gates/thresholds.ts';
import { logLine, plain } from './escape.ts';

/** A foreign value on one bounded line (controls replaced). */
function f(v: unknown, max = 120): string {
  return plain(v, max).replace(/\s*\n\s*/g, ' ');
}

function arr<T>(v: readonly T[] | null | undefined): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}

function pad(rows: string[][]): string[] {
  const w = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) => r.map((s, c) => (c === r.length - 1 ? s : s.padEnd(w[c]))).join('  ').trimEnd());
}

/**
 * The report as terminal text. Every foreign string is cut to one bounded line without control
 * characters, and no line can start a GitHub workflow command (the CLI also runs in CI logs).
 */
export function renderTerminal(r: Report): string {
  return logLine(terminalLines(r).join('\n'));
}

function terminalLines(r: Report): string[] {
  const out: string[] = [];
  if (r.outcome === 'error') {
    out.push(`ERROR  ${f(r.model.name)}: could not judge (not a FAIL verdict)`, `  ${f(r.error ?? '', 1000)}`);
    return out;
  }
  out.push(`${r.outcome === 'pass' ? 'PASS' : 'FAIL'}  ${f(r.model.name)}  (head_dim ${r.thresholds.headDim}, per-position threshold ${formatThreshold(r.thresholds.perPosition)}${r.thresholds.overridden ? ', overridden' : ''})`);
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
  for (const w of r.warnings) out.push(`  warning: ${f(w.message, 600)}`);
  const b = r.bisect;
  if (b) {
    if (!b.available) out.push(`  bisect: unavailable (${f(b.reason)})`);
    else {
      out.push('', '  bisect (one kernel at a time on the CPU):');
      const rows = [['step', 'kernel', 'whole', 'per-pos min', 'passes']];
      for (const s of b.steps.slice(0, 64)) rows.push([f(s.step, 64), f(s.kernel, 64), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), s.fixes ? 'yes' : 'no']);
      out.push(...pad(rows).map((l) => `    ${l}`));
      out.push(b.offender ? `  offending boundary: ${f(b.offender.step, 64)} (${f(b.offender.kernel, 64)})${b.offender.hint ? `: likely ${f(b.offender.hint.cause)}; ${f(b.offender.hint.where)}` : ''}` : `  ${f(b.reason)}`);
    }
    if (b.situation) out.push(`  failure shape: ${f(b.situation.cause)}; ${f(b.situation.where)}`);
  }
  if (r.layers?.length) {
    out.push('', '  every layer (informational):');
    const rows = [['layer', 'whole', 'per-pos min', 'max_abs', 'SQNR']];
    for (const l of r.layers) rows.push([String(l.layer), fmtCos(l.wholeCosine), fmtCos(l.perPositionMin), fmtSci(l.maxAbs), fmtSqnr(l.sqnrDb, SQNR_GOOD_DB)]);
    out.push(...pad(rows).map((l) => `    ${l}`));
  }
  if (r.integration) {
    const workarounds = arr(r.integration.workarounds);
    out.push('', `  integration: ${f(r.integration.path, 32)} via ${f(r.integration.entry)}${workarounds.length ? `; workarounds: ${workarounds.slice(0, 20).map((w) => f(w?.id, 64)).join(', ')}` : ''}`);
    const s1 = r.integration.step1;
    const breaks = arr(s1?.breaks);
    if (breaks.length) out.push(`  step 1: kernel-first forced by ${breaks.slice(0, 20).map((b) => `(${f(b?.rule, 8)}) ${f(b?.detail)}`).join('; ')}`);
    const unwired = arr(r.integration.coverage?.unwired);
    if (unwired.length) out.push(`  phase 1 coverage: ${unwired.length} verified kernel row(s) naming this model are not launched by the block`);
  }
  for (const d of arr(r.defaults?.differs).slice(0, 20)) out.push(`  differs from make diagnosis: ${f(d)}`);
  if (r.isolation) out.push(`  probe isolation: ${r.isolation.mode} (${f(r.isolation.detail)})`);
  if (r.docs) out.push(`  documented: ${r.docs.phase2}${r.docs.changed ? '' : ' (unchanged)'}`);
  return out;
}
