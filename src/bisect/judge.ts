// Judges the tensors `probe bisect` wrote, with the same engine and thresholds as the block itself:
//  - every step (hook: one kernel on the CPU; twins: ELFs 1..i answered by their twins): its ffn_out
//    against the block's reference;
//  - twins: every launch's buffers, NPU against the launch's CPU twin.
// bisect.json comes from the NPU host (possibly an untrusted job): it is validated whole, and every
// file it names must be a regular file inside the run dir.
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { InputError, fsError } from '../errors.ts';
import { openTensor } from '../tensor/index.ts';
import { openRunTensor, readRegularFile, runFile } from '../rundir/read.ts';
import { SpecError } from '../rundir/spec.ts';
import { compare } from '../metrics/index.ts';
import type { Metrics } from '../metrics/types.ts';
import type { Thresholds } from '../report/types.ts';
import { cleanBar } from '../lens/judge.ts';
import {
  BISECT_FILE, BISECT_SCHEMA, BISECT_SCHEMA_VERSION, BISECT_SPEC,
  type BisectJson, type BisectJsonLaunch, type BisectReport, type BisectStep, type LaunchOffender, type LaunchRow,
} from './types.ts';
import { hintFor, hintForStep, NAN_HINT, TAIL_HINT, type Hint } from './hints.ts';

/** bisect.json is a few KB (one entry per step and buffer); anything larger is not one. */
const BISECT_JSON_MAX_BYTES = 16 << 20;

export function readBisectJson(runDir: string): BisectJson | null {
  const file = join(runDir, BISECT_FILE);
  try {
    lstatSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw fsError(e, file, 'cannot read');
  }
  // A regular file inside the run dir (a link out of it, a FIFO or a directory is refused).
  const bytes = readRegularFile(runFile(runDir, BISECT_FILE, 'bisect.json'), BISECT_JSON_MAX_BYTES);
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    throw new InputError(`not valid JSON (${(e as Error).message.split('\n')[0]})`, file);
  }
  if (o?.schema !== BISECT_SCHEMA) throw new InputError(`schema is ${JSON.stringify(o?.schema)}, expected ${JSON.stringify(BISECT_SCHEMA)}`, file);
  if (o.schema_version !== BISECT_SCHEMA_VERSION) throw new InputError(`schema_version ${JSON.stringify(o.schema_version)} is not supported (this npu-block-gate reads version ${BISECT_SCHEMA_VERSION})`, file);
  try {
    return BISECT_SPEC.check(o, '');
  } catch (e) {
    if (e instanceof SpecError) throw new InputError(e.message, file);
    throw e;
  }
}

export function situationOf(m: Metrics): Hint | null {
  const nf = m.nonFinite;
  if (nf.nan.count + nf.posInf.count + nf.negInf.count > 0) return NAN_HINT;
  const runs = m.perPosition.badRuns;
  if (runs.length === 1 && runs[0].end === m.realLen - 1 && m.wholeCosine >= 0.99) return TAIL_HINT;
  return null;
}

const nonFiniteOf = (m: Metrics) => m.nonFinite.nan.count + m.nonFinite.posInf.count + m.nonFinite.negInf.count;
const lowest = (m: Metrics) => Math.min(m.wholeCosine, m.perPosition.min);

/** The swap steps: each step's ffn_out against the block's reference. */
async function judgeSteps(runDir: string, b: BisectJson, refPath: string, realLen: number, th: Thresholds): Promise<BisectStep[]> {
  const steps: BisectStep[] = [];
  for (const [i, s] of b.steps.entries()) {
    // A regular file inside the run dir (symlinks resolved), never a FIFO or a file elsewhere.
    runFile(runDir, s.file, `steps[${i}].file`, `missing (${BISECT_FILE} lists it)`);
    const npu = openTensor(join(runDir, s.file));
    try {
      const ref = openTensor(refPath);
      try {
        const m = await compare(npu, ref, { realLen, threshold: th.perPosition });
        const nonFinite = nonFiniteOf(m);
        steps.push({
          step: s.step, kernel: s.kernel, cpuEquivalent: s.cpu_equivalent,
          ...(s.swapped ? { swapped: s.swapped } : {}),
          wholeCosine: m.wholeCosine, perPositionMin: m.perPosition.min, nonFinite,
          fixes: m.wholeCosine >= th.whole && m.perPosition.min >= th.perPosition && nonFinite === 0,
        });
      } finally {
        ref.close();
      }
    } finally {
      npu.close();
    }
  }
  return steps;
}

/** The launch-level table: every buffer NPU against twin, judged like a boundary (same threshold). */
async function judgeLaunches(runDir: string, launches: BisectJsonLaunch[], threshold: number): Promise<LaunchRow[]> {
  const clean = cleanBar(threshold);
  const rows: LaunchRow[] = [];
  for (const [li, la] of launches.entries()) {
    const buffers: LaunchRow['buffers'] = [];
    for (const [bi, bu] of la.buffers.entries()) {
      const at = `launches[${li}].buffers[${bi}]`;
      // openRunTensor: inside the run dir, a regular file, of the dtype and shape bisect.json declares.
      const npu = openRunTensor(runDir, bu.npu, `${BISECT_FILE} ${at}.npu`);
      try {
        const twin = openRunTensor(runDir, bu.twin, `${BISECT_FILE} ${at}.twin`);
        try {
          const m = await compare(npu, twin, { threshold, worstK: 0 });
          buffers.push({
            buffer: bu.buffer, boundary: bu.boundary, stage: bu.stage, step: bu.step,
            rows: bu.rows && bu.rows.length === 2 ? [bu.rows[0], bu.rows[1]] : null,
            wholeCosine: m.wholeCosine, perPositionMin: m.perPosition.min, maxAbs: m.errors.maxAbs, normRatio: m.errors.normRatio,
            nonFinite: nonFiniteOf(m), diverges: !(lowest(m) >= threshold), drifts: !(lowest(m) >= clean),
          });
        } finally {
          twin.close();
        }
      } finally {
        npu.close();
      }
    }
    rows.push({ index: la.index, launch: la.launch, kind: la.kind, occurrence: la.occurrence, buffers });
  }
  return rows.sort((a, b) => a.index - b.index);
}

/** The first launch (call order) with a buffer under the threshold; else the first under the clean bar. */
export function launchOffenderOf(launches: LaunchRow[]): LaunchOffender | null {
  for (const strength of ['diverges', 'drifts'] as const) {
    for (const la of launches) {
      const bu = la.buffers.find((x) => x[strength]);
      if (bu) {
        return {
          index: la.index, launch: la.launch, kind: la.kind, buffer: bu.buffer, boundary: bu.boundary, stage: bu.stage, step: bu.step,
          wholeCosine: bu.wholeCosine, perPositionMin: bu.perPositionMin, strength,
          hint: hintForStep(bu.step, bu.boundary ?? bu.buffer, la.kind || la.launch),
        };
      }
    }
  }
  return null;
}

/**
 * The bisect bisect.json describes, judged; null when the run dir holds none. `blockPasses`: the
 * block already passes G1-G3 (the bisect ran because the lens named a boundary), so no swap can be
 * "the one that brings it above threshold".
 */
export async function judgeBisect(runDir: string, refPath: string, realLen: number, th: Thresholds, block: Metrics, blockPasses = false): Promise<BisectReport | null> {
  const b = readBisectJson(runDir);
  if (!b) return null;
  const situation = situationOf(block);
  const method = b.method ?? (b.available ? 'hook' : null);
  const base = { hook: b.hook, method, emulated: b.emulated };
  if (!b.available) return { available: false, reason: b.reason, ...base, steps: [], offender: null, launches: null, launchOffender: null, situation };
  const steps = await judgeSteps(runDir, b, refPath, realLen, th);
  const launches = method === 'twins' && b.launches ? await judgeLaunches(runDir, b.launches, th.perPosition) : null;
  const launchOffender = launches ? launchOffenderOf(launches) : null;
  const first = blockPasses ? undefined : steps.find((s) => s.fixes);
  const what = method === 'twins' ? 'ELF to its twin' : 'step to the CPU';
  const reason = blockPasses
    ? `the block passes the gates as it is (the bisect ran because the lens named a boundary); the ${method === 'twins' ? 'launch-level table' : 'step table'} is what locates it`
    : first
      ? `swapping ${first.step}${method === 'twins' && first.swapped && first.swapped.length > 1 ? ` (with ${first.swapped.slice(0, -1).join(', ')} before it)` : ''} to ${method === 'twins' ? 'its twin' : 'the CPU'} brings the block above threshold`
      : `no single ${what} swap brings the block above threshold (more than one boundary is wrong, or the bug is outside the exposed steps)`;
  return {
    available: true,
    reason,
    ...base,
    steps,
    offender: first ? { step: first.step, kernel: first.kernel, hint: hintFor(first.step, first.kernel) } : null,
    launches,
    launchOffender,
    situation,
  };
}
