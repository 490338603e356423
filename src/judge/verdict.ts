// The deciding half of the judge: the record from what was measured and what the caller knows.
// Pure: no process, file, document, clock or environment; the commit, the time, the baseline, the
// isolation and what the documents step did are passed in. The record is built here, whole, and
// never changed afterwards (a later fact, such as a refused docs PR, means a new verdict).
import { EXIT, type ExitCode } from '../errors.ts';
import { COMMAND, TOOL } from '../tool.ts';
import { documentationGate, outcomeOf, warningsFor, type Baseline, type Documented } from '../gates/evaluate.ts';
import { situationOf } from '../bisect/judge.ts';
import { lensBudgetWarnings, lensEpsWarning, lensScaleWarnings, lensWarning } from '../lens/judge.ts';
import { WHOLE_COSINE_MIN } from '../seed/thresholds.ts';
import { REPORT_SCHEMA, REPORT_SCHEMA_VERSION, type DocsResult, type IsolationRow, type Report, type Warning } from '../record/report.ts';
import type { BisectReport } from '../record/bisect.ts';
import type { ProbeJson } from '../rundir/schema.ts';
import { wantsBisect, type Measured } from './measure.ts';

export interface VerdictContext {
  now: Date;
  /** The history row's key: a hex commit id or "uncommitted". */
  commit: string;
  isolation: IsolationRow | null;
  /** The probe was meant to run isolated but ran with none (a fallback): a warning, not only a log line. */
  unisolatedFallback?: string | null;
  /** The max_abs recorded for this model and shape (phase2_block.md's history), for the regression warning. */
  baseline: Baseline | null;
  /** What the documents step did (G4). */
  documented: Documented;
  docs: DocsResult | null;
  /** The bisect step ran and failed: why (the bisect section says so; never the run's outcome). */
  bisectFailed?: string | null;
  /** Why there is no bisect when a gate failed and the run dir holds none. */
  bisectUnavailable: string;
  /** The run dir's report files could not be written (a read-only run dir): which, and why. */
  unwritten?: string | null;
}

function bisectOf(m: Measured, ctx: VerdictContext): BisectReport | null {
  const why = wantsBisect(m);
  if (!why) return null;
  const situation = why === 'gate' ? situationOf(m.metrics, m.thresholds) : null;
  const unavailable = (reason: string): BisectReport => ({ available: false, reason, hook: null, steps: [], offender: null, situation });
  if (ctx.bisectFailed) return unavailable(`probe bisect failed: ${ctx.bisectFailed}`);
  if (m.bisect) return m.bisect;
  return why === 'gate' ? unavailable(ctx.bisectUnavailable) : null;
}

export function verdict(m: Measured, ctx: VerdictContext): Report {
  const p = m.probe;
  const gates = [...m.gates, documentationGate(ctx.documented)];
  const outcome = outcomeOf(gates);
  const warnings: Warning[] = warningsFor(m.metrics, ctx.baseline);
  const lw = m.lens ? lensWarning(m.lens) : null;
  if (lw) warnings.push(lw);
  const ew = m.lens ? lensEpsWarning(m.lens) : null;
  if (ew) warnings.push(ew);
  if (m.lens) warnings.push(...lensScaleWarnings(m.lens), ...lensBudgetWarnings(m.lens));
  const sw = step2SanityWarning(p.step2_sanity);
  if (sw) warnings.push(sw);
  if (ctx.documented.refused !== undefined) warnings.push({ id: 'docs', message: `G4: the documents were not recorded: ${ctx.documented.refused}` });
  const failed = ctx.documented.failed;
  if (failed) {
    warnings.push({ id: 'docs', message: `G4: the documents were not written: ${failed.message}. The verdict stands; fix that and re-judge this run dir with \`${COMMAND} report --run-dir ${m.runDir}\` (add --no-docs to judge it without documents)` });
  }
  if (ctx.unwritten) warnings.push({ id: 'run_dir', message: ctx.unwritten });
  if (ctx.unisolatedFallback) warnings.push({ id: 'isolation', message: `the probe ran without isolation: ${ctx.unisolatedFallback}` });
  if (ctx.isolation?.degraded) warnings.push({ id: 'isolation', message: `the probe ran with degraded isolation: ${ctx.isolation.degraded}` });
  return {
    schema: REPORT_SCHEMA,
    schema_version: REPORT_SCHEMA_VERSION,
    tool: { ...TOOL },
    created_at: ctx.now.toISOString(),
    outcome,
    exit_code: outcome === 'pass' ? failed?.exitCode ?? EXIT.pass : EXIT.fail,
    emulated: !!p.emulate,
    error: null,
    model: { name: p.model.name, dir: p.model.dir, hf_id: p.model.hf_id, config: p.model.config },
    commit: ctx.commit,
    prompt: {
      style: p.prompt.style, text: p.prompt.text, source: p.prompt.source, real_len: p.prompt.real_len, padded_len: p.prompt.padded_len,
      ...(p.prompt.positions ? { positions: p.prompt.positions } : {}),
    },
    emulate: p.emulate ? { runtime: p.emulate.runtime, inject: p.emulate.inject } : null,
    thresholds: m.thresholds,
    gates,
    metrics: m.metrics,
    warnings,
    integration: p.integration,
    isolation: ctx.isolation,
    defaults: p.defaults ?? null,
    reference: p.reference,
    environment: p.environment,
    kernel_cache: p.kernel_cache ?? null,
    bisect: bisectOf(m, ctx),
    layers: m.layers,
    lens: m.lens,
    step2_sanity: p.step2_sanity ?? null,
    timings: p.timings ?? {},
    docs: ctx.docs,
    run_dir: m.runDir,
  };
}

/** A warning when Step 2's padded model does not reproduce the original (informational, like the lens). */
export function step2SanityWarning(s: ProbeJson['step2_sanity']): Warning | null {
  if (!s || s.skipped || s.ok !== false) return null;
  const bad = (s.rows ?? []).filter((r) => r.id !== 'naive_end' && r.pass === false).map((r) => r.label);
  return {
    id: 'step2_sanity',
    message: `Step 2 sanity: ${bad.join(' and ') || 'the padded model'} does not reproduce the original model (cosine below ${s.gate}); fix the padding before trusting a padded block on the NPU`,
  };
}

interface ErrorContext {
  now: Date;
  message: string;
  exitCode: ExitCode;
  model: { name: string; dir: string };
  commit: string;
  threshold: number | null;
  runDir: string;
  isolation: IsolationRow | null;
}

/** The record of a run that could not be judged: outcome error, never a FAIL verdict. */
export function errorVerdict(e: ErrorContext): Report {
  return {
    schema: REPORT_SCHEMA,
    schema_version: REPORT_SCHEMA_VERSION,
    tool: { ...TOOL },
    created_at: e.now.toISOString(),
    outcome: 'error',
    exit_code: e.exitCode,
    emulated: false,
    error: e.message,
    model: { name: e.model.name, dir: e.model.dir, hf_id: null, config: null },
    commit: e.commit,
    prompt: null,
    thresholds: { whole: WHOLE_COSINE_MIN, perPosition: e.threshold ?? NaN, headDim: NaN, overridden: e.threshold !== null },
    gates: [],
    metrics: null,
    warnings: [],
    integration: null,
    isolation: e.isolation,
    reference: null,
    environment: null,
    kernel_cache: null,
    bisect: null,
    layers: null,
    timings: {},
    docs: null,
    run_dir: e.runDir,
  };
}
