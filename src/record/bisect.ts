// What a bisect found, as the record holds it (the judging is src/bisect/judge.ts; the run-dir file
// it reads is rundir/bisect-spec.ts).
import type { Comparison } from '../metrics/types.ts';
import type { Hint } from '../seed/hints.ts';

export interface BisectStep extends Comparison {
  step: string;
  kernel: string;
  cpuEquivalent: string;
  /** twins: the ELFs swapped to their twins so far (absent for a hook step). */
  swapped?: string[];
  /** The block passes G1-G3 with this step on the CPU. */
  fixes: boolean;
}

/** One buffer an ELF wrote, NPU against the launch's CPU twin (computed from the launch's own inputs). */
interface LaunchBuffer extends Comparison {
  buffer: string;
  /** The lens boundary it holds, or null. */
  boundary: string | null;
  /** The fused sub-launch (e.g. "RoPE Q"). */
  stage: string;
  /** The seed's kernel-sequence step, for the hint. */
  step: string | null;
  /** Positions [start, end) the file covers. */
  span: [number, number] | null;
  /** Under the threshold: this launch's output is not what its twin computes from the same inputs. */
  diverges: boolean;
  /** Under the clean bar (src/lens/judge.ts cleanBar). */
  drifts: boolean;
}

export interface LaunchRow {
  /** 1-based call order. */
  index: number;
  launch: string;
  kind: string;
  occurrence: number;
  buffers: LaunchBuffer[];
}

/** A buffer the launch-level table names: where a drift starts (the offender) or where it first
 * crosses the threshold. */
export interface LaunchOffender {
  index: number;
  launch: string;
  kind: string;
  buffer: string;
  boundary: string | null;
  stage: string;
  step: string | null;
  wholeCosine: number;
  perPositionMin: number;
  /** 'diverges': under the threshold; 'drifts': under the clean bar only. */
  strength: 'diverges' | 'drifts';
  hint: Hint | null;
}

/** The check that the bisect re-ran the block that was judged: block 0 re-run unswapped, its
 * ffn_out against block0.npu.npy. */
export interface Rerun {
  /** Bit for bit the same (every row, padded rows too). */
  exact: boolean;
  /** ||rerun - judged|| / ||judged|| over the real rows (0 when exact; NaN when a side is not finite). */
  relL2: number;
  /** The stated tolerance on relL2 (contract.json bisect.rerun_tolerance_rel_l2). */
  tolerance: number;
  /** exact, or relL2 within the tolerance: the bisect can be trusted. */
  reproduced: boolean;
  /** The interpreter the bisect ran under (its sys.executable). */
  python: string;
  /** The command the check ran it with (the --python the user gave, a wrapper maybe); absent when
   * judged from a run dir alone. */
  command?: string;
}

export interface BisectReport {
  available: boolean;
  reason: string;
  hook: string | null;
  /** hook (bisect_steps) or twins (the real tree's ELFs); null when unavailable or unknown. */
  method?: 'hook' | 'twins' | null;
  /** The run dir came from an emulated NPU (--emulate). */
  emulated?: boolean;
  steps: BisectStep[];
  /** The first step whose swap brings the block above threshold: the offending boundary. */
  offender: { step: string; kernel: string; hint: Hint | null } | null;
  /** twins: the launch-level table (null for a hook bisect). */
  launches?: LaunchRow[] | null;
  /** twins: the earliest buffer (launch order, stage order) whose drift starts: under the clean bar. */
  launchOffender?: LaunchOffender | null;
  /** twins: the first buffer under the threshold, when that is a later one than launchOffender. */
  launchCrossing?: LaunchOffender | null;
  /** The unswapped re-run against the judged ffn_out; null when the bisect wrote none (older runs). */
  rerun?: Rerun | null;
  /** Set when the bisect cannot be trusted (the re-run did not reproduce the judged ffn_out): why.
   * The tables stay, as information; no offender is named. */
  void?: string | null;
  /** A situational hint from the failure's shape (NaN, a bad tail run). */
  situation: Hint | null;
}
