// The per-layer table (informational, as mlir-air's `make diagnosis`): every layer's ffn_out,
// NPU against reference, with the same engine and definitions as the gated layer 0.
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { InputError } from '../errors.ts';
import { openTensor } from '../tensor/index.ts';
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
  for (const e of layers.entries) {
    const paths = [join(runDir, e.npu.file), join(runDir, e.ref.file)];
    for (const p of paths) if (!existsSync(p)) throw new InputError(`layer ${e.layer} tensor is missing (probe.json lists it)`, p);
    const npu = openTensor(paths[0], { u2IsBf16: e.npu.dtype === 'bf16' });
    try {
      const ref = openTensor(paths[1], { u2IsBf16: e.ref.dtype === 'bf16' });
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
