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
import { compareSummary, lowestCosine, nonFiniteTotal } from '../metrics/index.ts';
import type { Metrics } from '../metrics/types.ts';
import type { Thresholds } from '../record/report.ts';
import type { BisectReport, BisectStep, LaunchOffender, LaunchRow, Rerun } from '../record/bisect.ts';
import type { TensorSource } from '../tensor/index.ts';
import { BISECT_CONTRACT } from '../contract.ts';
import { cleanBar } from '../seed/thresholds.ts';
import { g1Holds, g3Holds, passesGates } from '../gates/evaluate.ts';
import { hintFor, hintForStep, NAN_HINT, TAIL_HINT, type Hint } from '../seed/hints.ts';

/** The seed's failure-mode row a failed block matches: NaN anywhere, or G1 holding while one run of
 * bad positions reaches the last real row (a causal-mask edge case). G1 is the gates' own rule. */
export function situationOf(m: Metrics, th: Pick<Thresholds, 'whole'>): Hint | null {
  if (!g3Holds(nonFiniteTotal(m.nonFinite))) return NAN_HINT;
  const runs = m.perPosition.badRuns;
  if (runs.length === 1 && runs[0].end === m.realLen - 1 && g1Holds(m.wholeCosine, th)) return TAIL_HINT;
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
        const c = await compareSummary(npu, ref, { realLen });
        steps.push({
          step: s.step, kernel: s.kernel, cpuEquivalent: s.cpu_equivalent,
          ...(s.swapped ? { swapped: s.swapped } : {}),
          ...c,
          fixes: passesGates(c, th),
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
          const c = await compareSummary(npu, twin);
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

function named(la: LaunchRow, bu: LaunchRow['buffers'][number]): LaunchOffender {
  return {
    index: la.index, launch: la.launch, kind: la.kind, buffer: bu.buffer, boundary: bu.boundary, stage: bu.stage, step: bu.step,
    wholeCosine: bu.wholeCosine, perPositionMin: bu.perPositionMin, strength: bu.diverges ? 'diverges' : 'drifts',
    hint: hintForStep(bu.step, bu.boundary ?? bu.buffer, la.kind || la.launch),
  };
}

/** The first buffer (launch call order, then stage order) that satisfies `pick`. */
function firstBuffer(launches: LaunchRow[], pick: (b: LaunchRow['buffers'][number]) => boolean): LaunchOffender | null {
  for (const la of launches) {
    const bu = la.buffers.find(pick);
    if (bu) return named(la, bu);
  }
  return null;
}

/**
 * Where the launch-level table says a drift starts: the earliest buffer under the clean bar (a bug
 * shows there first, even when a later stage is the one that crosses the threshold: an ignored FFN
 * norm weight drifts at the FFN RMSNorm and crosses at SwiGLU). Null when every buffer is clean.
 */
function launchOffenderOf(launches: LaunchRow[]): LaunchOffender | null {
  return firstBuffer(launches, (b) => b.drifts || b.diverges);
}

/** The first buffer under the threshold, when it is a later one than where the drift starts; else null. */
function launchCrossingOf(launches: LaunchRow[], onset: LaunchOffender | null): LaunchOffender | null {
  const c = firstBuffer(launches, (b) => b.diverges);
  return c && onset && (c.index !== onset.index || c.buffer !== onset.buffer) ? c : null;
}

/** The tolerance on the unswapped re-run (contract.json bisect.rerun_tolerance_rel_l2). */
const RERUN_TOLERANCE: number = BISECT_CONTRACT.rerun_tolerance_rel_l2;

/**
 * The unswapped re-run against the judged ffn_out: bit for bit over every row, and the relative L2
 * of the difference over the real rows. The bisect is trusted only when it reproduces.
 */
function rerunOf(rerun: TensorSource, judged: TensorSource, realLen: number, python: string): Rerun {
  if (rerun.rows !== judged.rows || rerun.cols !== judged.cols) {
    return { exact: false, relL2: NaN, tolerance: RERUN_TOLERANCE, reproduced: false, python };
  }
  let exact = true;
  let diff2 = 0;
  let ref2 = 0;
  for (let start = 0; start < judged.rows; start += 256) {
    const n = Math.min(256, judged.rows - start);
    const a = rerun.readRows(start, n);
    const b = judged.readRows(start, n);
    const real = Math.max(0, Math.min(n, realLen - start)) * judged.cols;
    for (let i = 0; i < a.length; i++) {
      if (!Object.is(a[i], b[i])) exact = false;
      if (i < real) {
        const d = a[i] - b[i];
        diff2 += d * d;
        ref2 += b[i] * b[i];
      }
    }
  }
  const relL2 = exact ? 0 : ref2 > 0 ? Math.sqrt(diff2 / ref2) : diff2 === 0 ? 0 : Infinity;
  return { exact, relL2, tolerance: RERUN_TOLERANCE, reproduced: exact || relL2 <= RERUN_TOLERANCE, python };
}

/** Why a bisect whose re-run did not reproduce is void (one line). */
function voidWhy(r: Rerun): string {
  const by = Number.isFinite(r.relL2) ? `relative L2 ${r.relL2.toPrecision(3)}, tolerance ${r.tolerance}` : 'a different shape or non-finite values';
  const who = r.command && r.command !== r.python ? `${r.command}${r.python ? ` (${r.python})` : ''}` : r.python || 'its interpreter';
  return `the bisect is void: block 0 re-run unswapped under ${who} did not give back the judged ffn_out (${by}); it ran another block than the one judged (another interpreter or environment, a changed tree or checkpoint, or a nondeterministic NPU), so nothing it names can be trusted`;
}

/** The bisect as the check ran it: its re-run named by the command the user gave (`--python`, a wrapper
 * maybe), not only by the interpreter's sys.executable, in the void line too. */
export function ranBy(b: BisectReport, command: string): BisectReport {
  if (!b.rerun || !command) return b;
  const rerun = { ...b.rerun, command };
  if (!b.void) return { ...b, rerun };
  const why = voidWhy(rerun);
  return { ...b, rerun, void: why, reason: why };
}

/**
 * The bisect bisect.json describes, judged; null when the run dir holds none. `blockPasses`: the
 * block already passes G1-G3 (the bisect ran because the lens named a boundary), so no swap can be
 * "the one that brings it above threshold".
 */
export async function judgeBisect(runDir: string, paths: { ref: string; npu: string }, realLen: number, th: Thresholds, block: Metrics, blockPasses = false): Promise<BisectReport | null> {
  const b = readBisectJson(runDir);
  if (!b) return null;
  const situation = situationOf(block, th);
  const method = b.method ?? (b.available ? 'hook' : null);
  const base = { hook: b.hook, method, emulated: b.emulated };
  if (!b.available) return { available: false, reason: b.reason, ...base, steps: [], offender: null, launches: null, launchOffender: null, situation };
  const rerun = b.rerun ? judgeRerun(runDir, b.rerun, paths.npu, realLen) : null;
  const steps = await judgeSteps(runDir, b, paths.ref, realLen, th);
  const launches = method === 'twins' && b.launches ? await judgeLaunches(runDir, b.launches, th.perPosition) : null;
  if (rerun && !rerun.reproduced) {
    return { available: true, reason: voidWhy(rerun), ...base, steps, offender: null, launches, launchOffender: null, launchCrossing: null, rerun, void: voidWhy(rerun), situation };
  }
  const launchOffender = launches ? launchOffenderOf(launches) : null;
  const launchCrossing = launches ? launchCrossingOf(launches, launchOffender) : null;
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
    launchCrossing,
    rerun,
    void: null,
    situation,
  };
}

/** The re-run file bisect.json names: inside the run dir, a regular file; its shape is checked by rerunOf. */
function judgeRerun(runDir: string, r: { file: string; python: string }, npuPath: string, realLen: number): Rerun {
  runFile(runDir, r.file, 'rerun.file', `missing (${BISECT_FILE} lists it)`);
  const a = openTensor(join(runDir, r.file));
  try {
    const b = openTensor(npuPath);
    try {
      return rerunOf(a, b, realLen, r.python);
    } finally {
      b.close();
    }
  } finally {
    a.close();
  }
}
