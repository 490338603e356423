// `status --tree`'s record: per model dir and NPU generation, what its documents say (built by
// src/fleet/status.ts; drawn by its markdown and by the fleet page, src/report/fleet-html.ts).

export interface GenerationStatus {
  npu: string;
  outcome: string;
  date: string;
  commit: string;
  prompt: string;
  cosine: number | null;
  min_cosine: number | null;
  threshold: number | null;
  /** Per-position min of this generation's runs on the same prompt, oldest first (at most TREND_RUNS). */
  trend: (number | null)[];
  /** The last run's per-position min minus the first's in the trend (null with fewer than two). */
  change: number | null;
  runs: number;
}

export interface ModelStatus {
  name: string;
  /** Repository-relative model dir. */
  model: string;
  /** Phase 2 done: the latest verdict on every recorded generation passed (with none recorded, TODO.md's checkbox; null: neither says). */
  phase2_done: boolean | null;
  /** TODO.md's Phase 2 checkbox as written: true ticked, false open, null no such line (or no TODO.md). */
  phase2_checkbox: boolean | null;
  generations: GenerationStatus[];
  blockers: string[];
  /** A document that could not be read, one line. */
  problem: string | null;
}
