// The measuring half of the judge: everything the verdict needs that is read from the run dir
// (probe.json validated whole, the gated block, the layers, the lens, a bisect the run dir holds),
// compared with one engine. It reads the run dir and nothing else: no process, document, clock or
// environment. A run dir may come from an untrusted job: every file is checked as rundir/read.ts says.
import { InputError, InfraError } from '../errors.ts';
import type { Log } from '../log.ts';
import { readProbeJson, openRunTensor, tensorPath, runDirReal } from '../rundir/read.ts';
import type { ProbeJson } from '../rundir/schema.ts';
import { compare } from '../metrics/index.ts';
import type { Metrics } from '../metrics/types.ts';
import { perPositionThreshold, WHOLE_COSINE_MIN } from '../seed/thresholds.ts';
import { metricGates } from '../gates/evaluate.ts';
import { referenceFault, referenceVsFp32 } from '../gates/reference.ts';
import type { TensorSource } from '../tensor/types.ts';
import { judgeLayers } from '../layers/judge.ts';
import { compareBoundaries, laterOnset, lensOf } from '../lens/judge.ts';
import { judgeBisect } from '../bisect/judge.ts';
import type { GateResult, Thresholds } from '../record/report.ts';
import type { LayerRow } from '../record/layers.ts';
import type { LensReport } from '../record/lens.ts';
import type { BisectReport } from '../record/bisect.ts';

/** What the run dir holds, measured. Built by measure() and withBisect(), never changed after. */
export interface Measured {
  runDir: string;
  probe: ProbeJson;
  thresholds: Thresholds;
  metrics: Metrics;
  /** G1-G3 (G4 is the documents' gate, decided by the verdict from what the documents step did). */
  gates: GateResult[];
  layers: LayerRow[] | null;
  lens: LensReport | null;
  /** A bisect the run dir holds, judged; null when it holds none or none applies (see wantsBisect). */
  bisect: BisectReport | null;
}

export function thresholdsFor(p: ProbeJson, override: number | null): Thresholds {
  const hd = p.model.config.head_dim;
  return { whole: WHOLE_COSINE_MIN, perPosition: override ?? perPositionThreshold(hd), headDim: hd, overridden: override !== null };
}

/** The gated block fails one of G1-G3. */
function blockFails(m: Pick<Measured, 'gates'>): boolean {
  return m.gates.some((g) => g.status === 'fail');
}

/**
 * Why a bisect applies, or null: a failed gate; or, while ffn_out passes, a lens boundary under the
 * threshold (a bug the gate may be hiding: the launch-level table then names the launch), or a second
 * onset: a later boundary whose scale or error budget jumps on its own, which the first onset cannot
 * explain (laterOnset). A single scale or budget warning does not ask for one (README "Lens").
 */
export function wantsBisect(m: Pick<Measured, 'gates' | 'lens'>): 'gate' | 'lens' | null {
  if (blockFails(m)) return 'gate';
  return m.lens && (m.lens.firstBelow || laterOnset(m.lens)) ? 'lens' : null;
}

/** The reference against the FP32 ground truth of layer 0's output, when the run measured it (the lens's
 * ffn_out boundary with an fp32 side, of the reference's shape): what is wrong, or null. */
async function againstFp32(runDir: string, p: ProbeJson, ref: TensorSource): Promise<string | null> {
  const i = p.boundaries?.entries.findIndex((e) => e.name === 'ffn_out' && e.fp32) ?? -1;
  const e = i >= 0 ? p.boundaries!.entries[i] : null;
  if (!e?.fp32 || e.fp32.shape.join('x') !== [ref.rows, ref.cols].join('x')) return null;
  const truth = openRunTensor(runDir, e.fp32, `boundaries.entries[${i}].fp32`);
  try {
    return referenceVsFp32(ref, truth, p.prompt.real_len);
  } finally {
    truth.close();
  }
}

async function measureBlock(runDir: string, p: ProbeJson, th: Thresholds, log: Log): Promise<Metrics> {
  const realLen = p.prompt.real_len;
  const npu = openRunTensor(runDir, p.tensors.npu!, 'tensors.npu');
  try {
    const ref = openRunTensor(runDir, p.tensors.ref!, 'tensors.ref');
    try {
      if (ref.rows !== realLen) throw new InputError(`reference has ${ref.rows} rows but probe.json says real_len ${realLen}`, ref.path);
      // A broken reference is the HF side's failure: an error naming it, never a gate verdict on the NPU.
      const fault = referenceFault(ref, realLen) ?? await againstFp32(runDir, p, ref);
      if (fault) throw new InfraError(`the reference is broken: ${fault}; not a verdict on the NPU`, ref.path);
      log.step(`judge: comparing ${npu.rows}x${npu.cols} ${p.emulate ? 'emulated-NPU (twins)' : 'NPU'} rows against ${ref.rows} reference rows`);
      return await compare(npu, ref, { realLen, threshold: th.perPosition });
    } finally {
      ref.close();
    }
  } finally {
    npu.close();
  }
}

/** The bisect the run dir holds, judged when one applies (null otherwise, or when it holds none). */
async function bisectOf(m: Omit<Measured, 'bisect'>): Promise<BisectReport | null> {
  const why = wantsBisect(m);
  if (!why) return null;
  const p = m.probe;
  const paths = { ref: tensorPath(m.runDir, p.tensors.ref!), npu: tensorPath(m.runDir, p.tensors.npu!) };
  return judgeBisect(m.runDir, paths, p.prompt.real_len, m.thresholds, m.metrics, why === 'lens');
}

/** Measures a run dir: probe.json, the block, the layers, the lens, and a bisect it already holds. */
export async function measure(runDir: string, threshold: number | null, log: Log): Promise<Measured> {
  runDirReal(runDir);
  const p = readProbeJson(runDir);
  const thresholds = thresholdsFor(p, threshold);
  const metrics = await measureBlock(runDir, p, thresholds, log);
  log.step(`judge: engine ${metrics.engine}, whole cosine ${metrics.wholeCosine.toFixed(6)}, per-position min ${metrics.perPosition.min.toFixed(6)}`);
  const gates = metricGates(metrics, thresholds);
  const layers = p.layers ? await judgeLayers(runDir, p.layers) : null;
  if (layers) log.step(`judge: ${layers.length} layers (informational), lowest per-position min ${Math.min(...layers.map((l) => l.perPositionMin)).toFixed(6)}`);
  const lensRows = p.boundaries ? await compareBoundaries(runDir, p.boundaries, thresholds.perPosition) : null;
  const lens = p.boundaries && lensRows ? lensOf(p.boundaries, lensRows, thresholds.perPosition, !blockFails({ gates })) : null;
  if (lens?.rows.length) {
    const lowest = Math.min(...lens.rows.map((r) => Math.min(r.wholeCosine, r.perPositionMin)));
    log.step(`judge: lens: ${lens.rows.length} boundaries, lowest ${lowest.toFixed(6)}${lens.firstBelow ? `; first under the threshold: ${lens.firstBelow.name}` : ''}`);
  }
  const base = { runDir, probe: p, thresholds, metrics, gates, layers, lens };
  return { ...base, bisect: await bisectOf(base) };
}

/** The same measurements with the bisect read again (after the bisect step wrote bisect/). */
export async function withBisect(m: Measured, log: Log): Promise<Measured> {
  const bisect = await bisectOf(m);
  if (bisect?.offender) log.step(`bisect: offending boundary ${bisect.offender.step} (${bisect.offender.kernel})`);
  if (bisect?.void) log.warn(bisect.void);
  if (bisect?.launchOffender) log.step(`bisect: the drift starts at ${bisect.launchOffender.launch} (${bisect.launchOffender.buffer})${bisect.launchCrossing ? `, crosses the threshold at ${bisect.launchCrossing.launch} (${bisect.launchCrossing.buffer})` : ''}`);
  return { ...m, bisect };
}
