// What a bisect found (DESIGN.md "Bisect"): one row per kernel swapped to its CPU equivalent.
import type { Hint } from './hints.ts';
import { BISECT_CONTRACT } from '../contract.ts';

export const BISECT_SCHEMA = BISECT_CONTRACT.schema as 'npu-block-gate/bisect';
export const BISECT_SCHEMA_VERSION = BISECT_CONTRACT.version;
export const BISECT_DIR = BISECT_CONTRACT.dir;
export const BISECT_FILE = `${BISECT_CONTRACT.dir}/${BISECT_CONTRACT.json}`;

/** bisect/bisect.json as `probe bisect` writes it (tensors only; the numbers are ours). */
export interface BisectJson {
  schema: typeof BISECT_SCHEMA;
  schema_version: number;
  available: boolean;
  reason: string;
  hook: string | null;
  steps: { index: number; step: string; kernel: string; cpu_equivalent: string; file: string; seconds?: number }[];
}

export interface BisectStep {
  step: string;
  kernel: string;
  cpuEquivalent: string;
  wholeCosine: number;
  perPositionMin: number;
  nonFinite: number;
  /** The block passes G1-G3 with this one kernel on the CPU. */
  fixes: boolean;
}

export interface BisectReport {
  available: boolean;
  reason: string;
  hook: string | null;
  steps: BisectStep[];
  /** The first step whose swap brings the block above threshold: the offending boundary. */
  offender: { step: string; kernel: string; hint: Hint | null } | null;
  /** A situational hint from the failure's shape (NaN, a bad tail run). */
  situation: Hint | null;
}
