// Step outputs: one headline set (the worst model) plus every model's numbers as JSON.
import type { Report, GateId, IsolationRow } from '../record/report.ts';

export interface ModelResult {
  modelDir: string;
  /** Repository-relative model dir, the key of its comment marker. */
  key: string;
  outcome: 'pass' | 'fail' | 'error' | 'probed';
  exitCode: number;
  report: Report | null;
  reportPath: string | null;
  runDir: string | null;
  artifactName: string | null;
  artifactUrl: string | null;
  commentUrl: string | null;
  docsPrUrl: string | null;
  docsPrNumber: number | null;
  error: string | null;
  /** How the probe ran (null: not known here, e.g. the probe never started). */
  isolation: IsolationRow | null;
}

const RANK = { fail: 3, error: 2, probed: 1, pass: 0 } as const;

/** The model whose numbers headline the step outputs: the first failing, else erroring, else the first. */
export function headline(results: ModelResult[]): ModelResult | null {
  let best: ModelResult | null = null;
  for (const r of results) if (!best || RANK[r.outcome] > RANK[best.outcome]) best = r;
  return best;
}

function num(x: number | undefined | null): string {
  if (x === undefined || x === null) return '';
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
  return String(x);
}

export function outputsFor(results: ModelResult[]): Record<string, string> {
  const h = headline(results);
  const rep = h?.report ?? null;
  const m = rep?.metrics ?? null;
  const gate = (id: GateId) => rep?.gates.find((g) => g.id === id)?.status ?? '';
  return {
    outcome: h?.outcome ?? 'error',
    g1: gate('G1'),
    g2: gate('G2'),
    g3: gate('G3'),
    g4: gate('G4'),
    cosine: num(m?.wholeCosine),
    'min-cosine': num(m?.perPosition.min),
    threshold: rep && rep.outcome !== 'error' ? num(rep.thresholds.perPosition) : '',
    'max-abs': num(m?.errors.maxAbs),
    'max-rel': num(m?.errors.maxRel),
    sqnr: num(m?.errors.sqnrDb),
    'report-path': h?.reportPath ?? '',
    'run-dir': h?.runDir ?? '',
    'artifact-name': h?.artifactName ?? '',
    'artifact-url': h?.artifactUrl ?? '',
    'comment-url': h?.commentUrl ?? '',
    'docs-pr-url': h?.docsPrUrl ?? '',
    'docs-pr-number': h?.docsPrNumber ? String(h.docsPrNumber) : '',
    isolation: h?.isolation?.mode ?? '',
    results: JSON.stringify(
      results.map((r) => ({
        model_dir: r.key,
        outcome: r.outcome,
        gates: Object.fromEntries((r.report?.gates ?? []).map((g) => [g.id, g.status])),
        cosine: r.report?.metrics?.wholeCosine ?? null,
        min_cosine: r.report?.metrics?.perPosition.min ?? null,
        threshold: r.report && r.report.outcome !== 'error' ? r.report.thresholds.perPosition : null,
        report_path: r.reportPath,
        artifact_url: r.artifactUrl,
        comment_url: r.commentUrl,
        docs_pr_url: r.docsPrUrl,
        isolation: r.isolation ? { mode: r.isolation.mode, detail: r.isolation.detail } : null,
        error: r.error,
      })),
      (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v),
    ),
  };
}
