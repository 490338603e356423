// One answer per pull request (DESIGN.md "Fleet"): every matrix leg's verdict in one table, model
// x NPU generation. Failing, erroring, missing and changed legs stay open; legs that pass as before
// fold away. An error (a runner down, a probe crash) is shown as an error, never a failure; a leg
// that never reported is named as missing. Pure: the summary job hands the judged legs in.
import { markdownTable } from 'markdown-table';
import type { Report } from '../record/report.ts';
import { code, cell, literal, plain, str, text } from '../text/escape.ts';
import { fmtCos, fmtDb } from '../text/format.ts';
import { formatThreshold } from '../seed/thresholds.ts';
import { generationName, recordNpu, UNKNOWN } from '../npu/generation.ts';
import type { Leg } from './legs.ts';
import type { GenerationStatus, ModelStatus } from '../record/status.ts';
import { TREND_RUNS } from './status.ts';

/** A per-position min that moved this much against the base branch's record is a change worth a look. */
const CHANGE_EPS = 1e-3;

type LegState = 'judged' | 'error' | 'missing';

/** The base branch's last recorded result for a model on a generation (its phase2_block.md history). */
export interface BaseRecord {
  outcome: string;
  cosine: number | null;
  minCosine: number | null;
  commit: string;
  date: string;
}

export interface LegResult {
  /** Repository-relative model dir. */
  model: string;
  /** The runner label of the leg, when its matrix names one. */
  runner: string | null;
  /** The leg as the matrix ran it (null: found by its artifact only). */
  leg: Leg | null;
  state: LegState;
  /** The verdict (judged), or the error record (error); null when missing. */
  report: Report | null;
  /** One line: why it could not be judged (error), or why it is missing. */
  error: string | null;
  /** The leg's artifact (missing: the name it should have had). */
  artifactName: string | null;
  artifactUrl: string | null;
  base: BaseRecord | null;
  /** A leg without a record (error, missing): the generation other legs found on its runner label. */
  npuHint?: string | null;
}

const ICON = { pass: '✅', fail: '❌', error: '⚠️', missing: '❔' } as const;
/** An error's text in the table (the leg's artifact and log hold all of it): 100 error legs still fit a comment. */
const ERROR_CHARS = 160;
/** Tables without padding: a long cell would pad every row of its column. */
const table = (rows: string[][]) => markdownTable(rows, { alignDelimiters: false });

type Verdict = keyof typeof ICON;

export function verdictOf(l: LegResult): Verdict {
  if (l.state === 'missing') return 'missing';
  if (l.state === 'error' || !l.report || l.report.outcome === 'error') return 'error';
  return l.report.outcome === 'pass' ? 'pass' : 'fail';
}

/** The generation a leg ran on: its record's, else the one its runner label showed in other legs. */
function npuOf(l: LegResult): string {
  const g = l.report ? recordNpu(l.report) : UNKNOWN;
  return g !== UNKNOWN ? g : l.npuHint ?? UNKNOWN;
}

/** The leg's NPU column: the generation; else the runner label it was sent to. */
function npuLabel(l: LegResult): string {
  const g = npuOf(l);
  if (g !== UNKNOWN) return generationName(g);
  return l.runner ? `${l.runner} (runner)` : 'unknown';
}

/**
 * Each runner label's generation, from the legs that recorded one: a leg that errored or never
 * reported is shown under the generation its runner label ran elsewhere in this run. A label that
 * showed more than one generation (runners labelled alike but not alike) is named, and lends none.
 */
export function withRunnerGenerations(legs: LegResult[]): { legs: LegResult[]; mixed: Map<string, string[]> } {
  const seen = new Map<string, Set<string>>();
  for (const l of legs) {
    const g = l.report && l.state === 'judged' ? recordNpu(l.report) : UNKNOWN;
    if (l.runner && g !== UNKNOWN) seen.set(l.runner, (seen.get(l.runner) ?? new Set()).add(g));
  }
  const mixed = new Map([...seen].filter(([, gs]) => gs.size > 1).map(([r, gs]) => [r, [...gs].sort()]));
  return {
    mixed,
    legs: legs.map((l) => {
      const gs = l.runner ? seen.get(l.runner) : undefined;
      return l.state !== 'judged' && gs?.size === 1 ? { ...l, npuHint: [...gs][0] } : l;
    }),
  };
}

/** Against the base branch's record: changed verdict, a per-position min moved by CHANGE_EPS or more, or a max_abs regression. */
export function changed(l: LegResult): boolean {
  const r = l.report;
  if (l.state !== 'judged' || !r) return false;
  if (r.warnings.some((w) => w.id === 'max_abs_regression')) return true;
  if (!l.base) return false;
  if (l.base.outcome !== r.outcome.toUpperCase()) return true;
  const now = r.metrics?.perPosition.min;
  return typeof now === 'number' && l.base.minCosine !== null && Math.abs(now - l.base.minCosine) >= CHANGE_EPS;
}

/** Stays open in the table: anything but a pass that matches the base branch's record. */
export function isOpen(l: LegResult): boolean {
  return verdictOf(l) !== 'pass' || changed(l);
}

const n = (k: number, what: string) => `${k} ${what}${k === 1 ? '' : 's'}`;
/** The NPU column's markdown: the generation's name, or the runner label as code. */
function npuCell(l: LegResult): string {
  const g = npuOf(l);
  if (g !== UNKNOWN) return cell(generationName(g), 64);
  return l.runner ? `${code(l.runner, { inTable: true, max: 64 })} (runner)` : 'unknown';
}

const name = (model: string) => model.split('/').filter(Boolean).pop() ?? model;

function minCell(r: Report): string {
  const m = r.metrics;
  if (!m) return 'n/a';
  const t = r.thresholds.perPosition;
  const below = !(m.perPosition.min >= t);
  return `${below ? '**' : ''}${fmtCos(m.perPosition.min)}${below ? '**' : ''} (T ${formatThreshold(t)})`;
}

function baseCell(l: LegResult): string {
  const r = l.report;
  if (l.state !== 'judged' || !r) return '';
  if (!l.base) return 'new';
  const was = `was ${plain(l.base.outcome, 8)} at ${literal(l.base.commit.slice(0, 12), { inTable: true })}`;
  const now = r.metrics?.perPosition.min;
  const d = typeof now === 'number' && l.base.minCosine !== null ? now - l.base.minCosine : null;
  const delta = d === null ? '' : `, min ${d >= 0 ? '+' : ''}${d.toFixed(4)}`;
  const regress = r.warnings.some((w) => w.id === 'max_abs_regression') ? ', max_abs regression' : '';
  return `${changed(l) ? '**changed**: ' : ''}${was}${delta}${regress}`;
}

function lensCell(l: LegResult): string {
  if (l.state === 'missing') return `${l.artifactName ? `${code(l.artifactName, { inTable: true, max: 200 })}: ` : ''}${cell(l.error ?? 'no artifact from this leg', ERROR_CHARS)}`;
  if (verdictOf(l) === 'error') return cell(l.error ?? l.report?.error ?? 'could not judge', ERROR_CHARS);
  const f = l.report?.lens?.firstBelow;
  if (!f) return l.report?.lens ? 'none under T' : 'no lens';
  return `${code(f.name, { inTable: true, max: 64 })} ${fmtCos(f.perPositionMin)}`;
}

function legCell(l: LegResult): string {
  // The URL is built by the summary job from the server URL and the artifact's id, never from a run dir.
  if (l.artifactUrl && /^https?:\/\/[^\s()<>\]]+$/.test(l.artifactUrl)) return `[run dir](${l.artifactUrl})`;
  return l.state === 'missing' ? '' : 'no artifact';
}

const HEAD = ['model', 'NPU', 'verdict', 'whole cosine', 'per-pos min', 'SQNR', 'vs base branch', 'lens: first boundary under T', 'leg'];

function row(l: LegResult): string[] {
  const v = verdictOf(l);
  const r = l.report;
  const judged = v === 'pass' || v === 'fail';
  return [
    code(name(l.model), { inTable: true, max: 64 }),
    npuCell(l),
    `${ICON[v]} ${v.toUpperCase()}`,
    judged && r?.metrics ? fmtCos(r.metrics.wholeCosine) : '',
    judged && r ? minCell(r) : '',
    judged && r?.metrics ? fmtDb(r.metrics.errors.sqnrDb) : '',
    baseCell(l),
    lensCell(l),
    legCell(l),
  ];
}

const ORDER: Record<Verdict, number> = { fail: 0, error: 1, missing: 2, pass: 3 };

function sorted(legs: LegResult[]): LegResult[] {
  return [...legs].sort((a, b) => ORDER[verdictOf(a)] - ORDER[verdictOf(b)] || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0) || (npuLabel(a) < npuLabel(b) ? -1 : 1));
}

/** The overview: one row per model, one column per NPU, an icon per leg. */
function overview(legs: LegResult[]): string {
  const cols = [...new Set(legs.map(npuLabel))].sort();
  const models = [...new Set(legs.map((l) => l.model))].sort();
  const rows = [['model', ...cols.map((c) => npuCell(legs.find((l) => npuLabel(l) === c)!))]];
  for (const m of models) {
    rows.push([code(name(m), { inTable: true, max: 64 }), ...cols.map((c) => legs.filter((l) => l.model === m && npuLabel(l) === c).map((l) => `${ICON[verdictOf(l)]}${changed(l) ? '*' : ''}`).join(' '))]);
  }
  return table(rows);
}

export interface SummaryOptions {
  /** Which commit was judged (the pull request head), shown in the headline. */
  commit: string | null;
  runUrl: string | null;
  tool: { name: string; version: string };
  /** Lines under the headline (legs input missing, what was recorded), already safe markdown. */
  notes?: string[];
  /** Render the passing, unchanged legs' rows inside the fold (false: count them only, to save room). */
  passingRows?: boolean;
  /** Show at most this many rows of "Needs a look" (failures first), saying how many more there are. */
  openRows?: number;
}

export function counts(legs: LegResult[]): Record<Verdict, number> {
  const c = { pass: 0, fail: 0, error: 0, missing: 0 };
  for (const l of legs) c[verdictOf(l)]++;
  return c;
}

/** The markdown of the sticky comment and the job summary. */
export function summaryMarkdown(given: LegResult[], o: SummaryOptions): string {
  const { legs, mixed } = withRunnerGenerations(given);
  const c = counts(legs);
  const open = sorted(legs.filter(isOpen));
  const folded = sorted(legs.filter((l) => !isOpen(l)));
  const worst = c.fail ? `${ICON.fail} **Phase 2 FAIL**` : c.error || c.missing ? `${ICON.error} **Phase 2: could not judge every leg** (not a FAIL verdict)` : legs.length ? `${ICON.pass} **Phase 2 PASS**` : '➖ **No leg to judge**';
  const tally = (['pass', 'fail', 'error', 'missing'] as const).filter((k) => c[k]).map((k) => `${ICON[k]} ${c[k]} ${k}`).join(' · ');
  const out = [
    `## npu-block-gate: Phase 2 across the fleet`,
    '',
    `${worst}: ${n(legs.length, 'leg')} (${n(new Set(legs.map((l) => l.model)).size, 'model')} x ${n(new Set(legs.map(npuLabel)).size, 'NPU')})${tally ? `: ${tally}` : ''}${o.commit ? ` at ${literal(o.commit.slice(0, 12))}` : ''}.`,
    ...[...mixed].map(([r, gs]) => `\n> [!WARNING]\n> Runner label ${code(r, { max: 64 })} ran on ${gs.map((g) => text(generationName(g), 40)).join(' and ')}: label one runner per NPU generation, or the table cannot say which NPU a leg needs.`),
    ...(o.notes ?? []).flatMap((n) => ['', n]),
    '',
  ];
  if (legs.length) {
    out.push(overview(legs), '', '<sub>* changed against the base branch\'s last recorded result</sub>', '');
    if (open.length) {
      const shown = o.openRows !== undefined ? open.slice(0, Math.max(0, o.openRows)) : open;
      out.push(`### Needs a look (${open.length})`, '');
      if (shown.length) out.push(table([HEAD, ...shown.map(row)]), '');
      const left = open.slice(shown.length);
      if (left.length) {
        const lc = counts(left);
        out.push(`> [!WARNING]\n> ${n(left.length, 'more leg')} that need a look ${left.length === 1 ? 'is' : 'are'} not shown here (${(['fail', 'error', 'missing'] as const).filter((k) => lc[k]).map((k) => `${lc[k]} ${k}`).join(', ')}), to stay under GitHub's comment limit: every leg is in the job summary${o.runUrl ? ` of the [workflow run](${o.runUrl})` : ''}, and every failing one is an error annotation there.`, '');
      }
    }
    if (folded.length) {
      out.push(`<details><summary>${folded.length} leg${folded.length === 1 ? '' : 's'} passing as before</summary>`, '');
      if (o.passingRows !== false) out.push(table([HEAD, ...folded.map(row)]));
      else out.push('Their rows are in the job summary (left out here to stay under GitHub\'s comment limit).');
      out.push('', '</details>', '');
    }
  }
  out.push(`<sub>${text(o.tool.name, 40)} ${text(o.tool.version, 20)}${o.runUrl ? ` · [workflow run](${o.runUrl})` : ''} · an error (runner down, probe crash) is never a FAIL verdict; a missing leg never reported</sub>`, '');
  return out.join('\n');
}

/**
 * The fleet page's status: each model's documents (`recorded`, as `status --tree` reads them) with
 * this run's legs as the latest cell of their generation (a leg that errored or never reported
 * shows so, never as a FAIL). Models only a leg names are added.
 */
export function withLegs(recorded: readonly ModelStatus[], legs: readonly LegResult[]): ModelStatus[] {
  const byModel = new Map(recorded.map((m) => [m.model, { ...m, generations: [...m.generations] }]));
  for (const l of legs) {
    const m = byModel.get(l.model) ?? { name: l.model.split('/').pop() ?? l.model, model: l.model, phase2_done: null, phase2_checkbox: null, generations: [], blockers: [], problem: null };
    byModel.set(l.model, m);
    const npu = npuOf(l);
    const v = verdictOf(l);
    const r = l.report;
    const num = (x: number | undefined) => (typeof x === 'number' && Number.isFinite(x) ? x : null);
    const min = num(r?.metrics?.perPosition.min);
    const prev = m.generations.find((g) => g.npu === npu);
    const trend = [...(prev?.trend ?? []), min].slice(-TREND_RUNS);
    const first = trend.find((x) => x !== null) ?? null;
    const g: GenerationStatus = {
      npu, outcome: `${v.toUpperCase()}${r?.emulate && v !== 'missing' ? ' (emulated)' : ''}`, date: r ? str(r.created_at).slice(0, 10) : '', commit: r ? str(r.commit).slice(0, 12) : '',
      prompt: r?.prompt?.style ?? '', cosine: num(r?.metrics?.wholeCosine), min_cosine: min, threshold: r && l.state === 'judged' ? r.thresholds.perPosition : null,
      trend, change: trend.length > 1 && first !== null && min !== null ? min - first : null, runs: (prev?.runs ?? 0) + 1,
    };
    m.generations = [...m.generations.filter((x) => x.npu !== npu), g].sort((a, b) => (a.npu < b.npu ? -1 : a.npu > b.npu ? 1 : 0));
  }
  return [...byModel.values()].sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
}
