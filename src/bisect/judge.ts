// Judges the tensors `probe bisect` wrote, with the same engine and thresholds as the block itself:
//  - every step (hook: one kernel on the CPU; twins: ELFs 1..i answered by their twins): its ffn_out
//    against the block's reference;
//  - twins: every launch's buffers, NPU against the launch's CPU twin.
// bisect.json comes from the NPU host (possibly an untrusted job): it is validated whole, and every
// file it names must be a regular file inside the run dir.
import { join } from 'node:path';
import { openTensor } from '../tensor/index.ts';
import { openRunTensor, runFile } from '../rundir/read.ts';
import { BISECT_FILE, readBisectJson, type BisectJson, type BisectJsonLaunch } from '../rundir/bisect-spec.ts';
import { compare, comparisonOf, lowestCosine, nonFiniteTotal } from '../metrics/index.ts';
import type { Metrics } from '../metrics/types.ts';
import type { Thresholds } from '../record/report.ts';
import type { BisectReport, BisectStep, LaunchOffender, LaunchRow } from '../record/bisect.ts';
import { cleanBar } from '../seed/thresholds.ts';
import { hintFor, hintForStep, NAN_HINT, TAIL_HINT, type Hint } from '../seed/hints.ts';

export function situationOf(m: Metrics): Hint | null {
  if (nonFiniteTotal(m.nonFinite) > 0) return NAN_HINT;
  const runs = m.perPosition.badRuns;
  if (runs.length === 1 && runs[0].end === m.realLen - 1 && m.wholeCosine >= 0.99) return TAIL_HINT;
  return null;
}


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
        const c = comparisonOf(await compare(npu, ref, { realLen, threshold: th.perPosition }));
        steps.push({
          step: s.step, kernel: s.kernel, cpuEquivalent: s.cpu_equivalent,
          ...(s.swapped ? { swapped: s.swapped } : {}),
          ...c,
          fixes: c.wholeCosine >= th.whole && c.perPositionMin >= th.perPosition && c.nonFinite === 0,
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
          const c = comparisonOf(await compare(npu, twin, { threshold, worstK: 0 }));
          buffers.push({
            buffer: bu.buffer, boundary: bu.boundary, stage: bu.stage, step: bu.step,
            span: bu.rows && bu.rows.length === 2 ? [bu.rows[0], bu.rows[1]] : null,
            ...c,
            diverges: !(lowestCosine(c) >= threshold), drifts: !(lowestCosine(c) >= clean),
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
