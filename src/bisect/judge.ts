// Judges the tensors `probe bisect` wrote: one compare() per swapped kernel against the same
// reference, with the same engine and thresholds as the block itself.
import { existsSync, readFileSync } from 'node:fs';
import { join, isAbsolute } from 'node:path';
import { InputError } from '../errors.ts';
import { openTensor } from '../tensor/index.ts';
import { runFile } from '../rundir/read.ts';
import { compare } from '../metrics/index.ts';
import type { Metrics } from '../metrics/types.ts';
import type { Thresholds } from '../report/types.ts';
import { BISECT_FILE, BISECT_SCHEMA, BISECT_SCHEMA_VERSION, type BisectJson, type BisectReport, type BisectStep } from './types.ts';
import { hintFor, NAN_HINT, TAIL_HINT, type Hint } from './hints.ts';

export function readBisectJson(runDir: string): BisectJson | null {
  const file = join(runDir, BISECT_FILE);
  if (!existsSync(file)) return null;
  let o: BisectJson;
  try {
    o = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`not valid JSON (${(e as Error).message.split('\n')[0]})`, file);
  }
  if (o?.schema !== BISECT_SCHEMA) throw new InputError(`schema is ${JSON.stringify(o?.schema)}, expected ${JSON.stringify(BISECT_SCHEMA)}`, file);
  if (o.schema_version !== BISECT_SCHEMA_VERSION) throw new InputError(`schema_version ${JSON.stringify(o.schema_version)} is not supported (this npu-block-gate reads version ${BISECT_SCHEMA_VERSION})`, file);
  if (typeof o.available !== 'boolean' || !Array.isArray(o.steps)) throw new InputError('needs "available" (true/false) and "steps" (a list)', file);
  for (const [i, s] of o.steps.entries()) {
    if (typeof s?.step !== 'string' || typeof s.file !== 'string') throw new InputError(`steps[${i}] needs "step" and "file"`, file);
    if (isAbsolute(s.file) || s.file.split(/[\\/]/).includes('..')) throw new InputError(`steps[${i}].file must stay inside the run dir`, file);
  }
  return o;
}

export function situationOf(m: Metrics): Hint | null {
  const nf = m.nonFinite;
  if (nf.nan.count + nf.posInf.count + nf.negInf.count > 0) return NAN_HINT;
  const runs = m.perPosition.badRuns;
  if (runs.length === 1 && runs[0].end === m.realLen - 1 && m.wholeCosine >= 0.99) return TAIL_HINT;
  return null;
}

export async function judgeBisect(runDir: string, refPath: string, realLen: number, th: Thresholds, block: Metrics): Promise<BisectReport | null> {
  const b = readBisectJson(runDir);
  if (!b) return null;
  const situation = situationOf(block);
  if (!b.available) return { available: false, reason: b.reason, hook: b.hook ?? null, steps: [], offender: null, situation };
  const steps: BisectStep[] = [];
  for (const s of b.steps) {
    // A regular file inside the run dir (symlinks resolved), never a FIFO or a file elsewhere.
    runFile(runDir, s.file, `steps[${steps.length}].file`, `missing (${BISECT_FILE} lists it)`);
    const npu = openTensor(join(runDir, s.file));
    const ref = openTensor(refPath);
    try {
      const m = await compare(npu, ref, { realLen, threshold: th.perPosition });
      const nonFinite = m.nonFinite.nan.count + m.nonFinite.posInf.count + m.nonFinite.negInf.count;
      steps.push({
        step: s.step, kernel: s.kernel ?? '', cpuEquivalent: s.cpu_equivalent ?? '',
        wholeCosine: m.wholeCosine, perPositionMin: m.perPosition.min, nonFinite,
        fixes: m.wholeCosine >= th.whole && m.perPosition.min >= th.perPosition && nonFinite === 0,
      });
    } finally {
      npu.close();
      ref.close();
    }
  }
  const first = steps.find((s) => s.fixes);
  return {
    available: true,
    reason: first ? `swapping ${first.step} to the CPU brings the block above threshold` : 'no single CPU swap brings the block above threshold (more than one boundary is wrong, or the bug is outside the exposed steps)',
    hook: b.hook ?? null,
    steps,
    offender: first ? { step: first.step, kernel: first.kernel, hint: hintFor(first.step, first.kernel) } : null,
    situation,
  };
}
