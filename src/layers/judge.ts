// The per-layer table (informational, as mlir-air's `make diagnosis`): every layer's ffn_out,
// NPU against reference, with the same engine and definitions as the gated layer 0.
import { openRunTensor } from '../rundir/read.ts';
import { compare } from '../metrics/index.ts';
import type { ProbeJson } from '../rundir/schema.ts';

export interface LayerRow {
  layer: number;
  rows: number;
  wholeCosine: number;
  perPositionMin: number;
  p5: number;
  median: number;
  maxAbs: number;
  maxRel: number;
  sqnrDb: number;
  normRatio: number;
  nonFinite: number;
}

export async function judgeLayers(runDir: string, layers: NonNullable<ProbeJson['layers']>, threshold: number): Promise<LayerRow[]> {
  const rows: LayerRow[] = [];
  for (const [i, e] of layers.entries.entries()) {
    // Regular files inside the run dir, of the dtype and shape probe.json declares.
    const npu = openRunTensor(runDir, e.npu, `layers.entries[${i}].npu`);
    try {
      const ref = openRunTensor(runDir, e.ref, `layers.entries[${i}].ref`);
      try {
        const m = await compare(npu, ref, { threshold });
        const nf = m.nonFinite;
        rows.push({
          layer: e.layer, rows: m.realLen, wholeCosine: m.wholeCosine, perPositionMin: m.perPosition.min,
          p5: m.perPosition.p5, median: m.perPosition.median, maxAbs: m.errors.maxAbs, maxRel: m.errors.maxRel,
          sqnrDb: m.errors.sqnrDb, normRatio: m.errors.normRatio, nonFinite: nf.nan.count + nf.posInf.count + nf.negInf.count,
        });
      } finally {
        ref.close();
      }
    } finally {
      npu.close();
    }
  }
  return rows.sort((a, b) => a.layer - b.layer);
}
