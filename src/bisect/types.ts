// What a bisect found (DESIGN.md "Lens and bisect"). Two methods, one bisect.json:
//  - hook: the model's own bisect_steps (air-mini): one row per step swapped to its CPU equivalent;
//  - twins: the real tree's fused ELFs, from one captured NPU run: the launch-level table (each
//    launch's buffers, NPU against its CPU twin computed from the launch's own inputs) and the
//    swap-forward table (ffn_out after ELFs 1..i answered by their twins), in the step format.
import type { Hint } from './hints.ts';
import { BISECT_CONTRACT } from '../contract.ts';
import { any, bool, int, list, nullable, num, obj, oneOf, optional, str, withDefault, type Infer } from '../rundir/spec.ts';
import { TENSOR_SPEC } from '../rundir/probe-spec.ts';

export const BISECT_SCHEMA = BISECT_CONTRACT.schema as 'npu-block-gate/bisect';
export const BISECT_SCHEMA_VERSION = BISECT_CONTRACT.version;
export const BISECT_DIR = BISECT_CONTRACT.dir;
export const BISECT_FILE = `${BISECT_CONTRACT.dir}/${BISECT_CONTRACT.json}`;
export const BISECT_METHODS = BISECT_CONTRACT.methods as ['hook', 'twins'];

// Names and texts here come from the model tree's code (a hook's step names): any string, bounded;
// the renderers escape them (a name that is not an identifier is shown escaped and marked).
const text = (max = 4096) => str({ max });
/** A run-dir file name: relative, no `..` (runFile/openRunTensor check it against the disk). */
const relFile = str({
  max: 1024, what: 'a relative path inside the run dir',
  pattern: /^(?![\\/])(?![A-Za-z]:)(?!.*(^|[\\/])\.\.([\\/]|$))[^\u0000]+$/,
});

const STEP = obj({
  index: optional(int(0)),
  step: text(200),
  kernel: withDefault(text(200), () => ''),
  cpu_equivalent: withDefault(text(), () => ''),
  file: relFile,
  seconds: optional(num(0)),
  /** twins: the ELFs answered by their twins at this step. */
  swapped: optional(list(text(200), 256)),
}, { declare: false, rest: any() });

const BUFFER = obj({
  buffer: text(200),
  arg: optional(nullable(int(0))),
  boundary: withDefault(nullable(text(200)), () => null),
  stage: withDefault(text(200), () => ''),
  step: withDefault(nullable(text(200)), () => null),
  rows: optional(list(int(0), 2)),
  npu: TENSOR_SPEC,
  twin: TENSOR_SPEC,
}, { declare: false, rest: any() });

const LAUNCH = obj({
  index: int(0),
  launch: text(200),
  occurrence: withDefault(int(0), () => 0),
  kind: withDefault(text(200), () => ''),
  layout: optional(text(200)),
  twin: withDefault(text(), () => ''),
  buffers: list(BUFFER, 256),
}, { declare: false, rest: any() });

/** bisect/bisect.json as `probe bisect` writes it (tensors only; the numbers are ours). */
export const BISECT_SPEC = obj({
  schema: text(100),
  schema_version: int(0),
  available: bool(),
  reason: withDefault(text(), () => ''),
  hook: withDefault(nullable(text()), () => null),
  /** Absent in bisect.json files written before the twins: a hook bisect then. */
  method: withDefault(nullable(oneOf(...BISECT_METHODS)), () => null),
  emulated: withDefault(bool(), () => false),
  steps: list(STEP, 1024),
  launches: withDefault(nullable(list(LAUNCH, 1024)), () => null),
}, { declare: false, rest: any() });

export type BisectJson = Infer<typeof BISECT_SPEC>;
export type BisectJsonLaunch = Infer<typeof LAUNCH>;

export interface BisectStep {
  step: string;
  kernel: string;
  cpuEquivalent: string;
  /** twins: the ELFs swapped to their twins so far (absent for a hook step). */
  swapped?: string[];
  wholeCosine: number;
  perPositionMin: number;
  nonFinite: number;
  /** The block passes G1-G3 with this step on the CPU. */
  fixes: boolean;
}

/** One buffer an ELF wrote, NPU against the launch's CPU twin (computed from the launch's own inputs). */
export interface LaunchBuffer {
  buffer: string;
  /** The lens boundary it holds, or null. */
  boundary: string | null;
  /** The fused sub-launch (e.g. "RoPE Q"). */
  stage: string;
  /** The seed's kernel-sequence step, for the hint. */
  step: string | null;
  /** Positions [start, end) the file covers. */
  rows: [number, number] | null;
  wholeCosine: number;
  perPositionMin: number;
  maxAbs: number;
  normRatio: number;
  nonFinite: number;
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

/** The first launch whose outputs leave its twin's, and inside a fused ELF the first such buffer. */
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
  /** 'diverges': under the threshold; 'drifts': nothing is under it, this is the first under the clean bar. */
  strength: 'diverges' | 'drifts';
  hint: Hint | null;
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
  /** twins: the launch the launch-level table names. */
  launchOffender?: LaunchOffender | null;
  /** A situational hint from the failure's shape (NaN, a bad tail run). */
  situation: Hint | null;
}
