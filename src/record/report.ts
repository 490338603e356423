// report.json: what the judge decided and why. Rendered to the terminal, markdown (job summary,
// PR comment, phase2_block.md) and JSON from this one record.
import type { Metrics } from '../metrics/types.ts';
import type { ProbeJson } from '../rundir/schema.ts';
import type { BisectReport } from './bisect.ts';
import type { LayerRow } from './layers.ts';
import type { LensReport } from './lens.ts';

export const REPORT_SCHEMA = 'npu-block-gate/report';
export const REPORT_SCHEMA_VERSION = 1;

export type Outcome = 'pass' | 'fail' | 'error';
export type GateId = 'G1' | 'G2' | 'G3' | 'G4';

type GateStatus = 'pass' | 'fail' | 'skip';

export interface GateResult {
  id: GateId;
  name: string;
  /** 'skip' only for G4 when this run was told not to write documents; it never fails the check. */
  status: GateStatus;
  /** status !== 'fail'. */
  passed: boolean;
  /** The measured value (a cosine, a NaN count, or a path for G4). */
  value: number | string | null;
  /** Human form of the bar, e.g. ">= 0.99". */
  bar: string;
  detail: string;
}

export interface Warning {
  id: 'norm_ratio' | 'sqnr' | 'max_abs_regression' | 'zero_rows' | 'engine' | 'docs' | string;
  message: string;
}

export interface Thresholds {
  whole: number;
  perPosition: number;
  headDim: number;
  /** True when --threshold overrode T(head_dim). */
  overridden: boolean;
}

/** How the probe ran, isolated from the process that judges it. */
export interface IsolationRow {
  mode: 'uid' | 'namespace' | 'none';
  /** e.g. "bubblewrap: user+pid+mount+net namespaces, ..." or "uid npu-probe (setpriv) + bubblewrap". */
  detail: string;
  /** Who says so: this process, which ran the probe, or the split setup's probe job (github.json). */
  source: 'this run' | 'probe job';
  /** The run had less isolation than its mode promises (uid mode without its sandbox): why, and the fix. */
  degraded?: string | null;
}

/** What the documents step wrote. notes: what the TODO.md update could not do where the template
 * says (no Phase status section, ...). */
export interface DocsResult {
  phase2: string;
  todo: string;
  changed: boolean;
  /** The documents this run wrote (a subset of phase2, todo). */
  written?: string[];
  /** Why TODO.md was left as it is (an emulated run), when it was. */
  todo_left?: string;
  notes?: string[];
}

export interface Report {
  schema: typeof REPORT_SCHEMA;
  schema_version: number;
  tool: { name: string; version: string };
  created_at: string;
  outcome: Outcome;
  exit_code: number;
  /** One line, only when outcome is 'error'. */
  error: string | null;
  model: { name: string; dir: string; hf_id: string | null; config: ProbeJson['model']['config'] | null };
  commit: string;
  prompt: {
    style: string; text: string; source: string; real_len: number; padded_len: number | null;
    /** `check --positions N`: how the prompt became N real tokens (absent or null otherwise). */
    positions?: ProbeJson['prompt']['positions'];
  } | null;
  /** True when no NPU ran (`check --emulate`): at the top level so a script reading `--json` cannot
   * take an emulated PASS for an NPU result. */
  emulated: boolean;
  /** No NPU ran: the tree's block ran on the probe's emulated runtime (`check --emulate`). Every
   * rendering marks such a report EMULATED. Absent or null for a run on the NPU. */
  emulate?: { runtime: string; inject: string | null } | null;
  thresholds: Thresholds;
  gates: GateResult[];
  /** Non-finite numbers are written as the strings "NaN", "Infinity", "-Infinity". */
  metrics: Metrics | null;
  warnings: Warning[];
  integration: ProbeJson['integration'] | null;
  /** How the probe was kept from the Action's process, tokens and caches (set by the side that ran
   * it; null when this judge did not run the probe and nobody it trusts said how it ran). */
  isolation: IsolationRow | null;
  /** What `make diagnosis` runs for this model and each way this run differs (absent in older run dirs). */
  defaults?: ProbeJson['defaults'] | null;
  reference: ProbeJson['reference'] | null;
  environment: ProbeJson['environment'] | null;
  kernel_cache: ProbeJson['kernel_cache'] | null;
  bisect: BisectReport | null;
  /** Every layer's ffn_out (informational, never gated); null when the run dir has no layers/. */
  layers: LayerRow[] | null;
  /** Every boundary inside block 0 (informational); absent or null when the run dir has no boundaries. */
  lens?: LensReport | null;
  /** Step 2's padded-vs-original check (informational, never gated); absent or null when Step 2's
   * non-1024-alignment trigger did not fire. */
  step2_sanity?: ProbeJson['step2_sanity'] | null;
  timings: Record<string, number>;
  /** notes: what the TODO.md update could not do where the template says (no Phase status section, ...). */
  docs: DocsResult | null;
  /** Absolute path of the run dir this report judged. */
  run_dir: string;
}
