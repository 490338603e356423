// The per-layer table (informational, as mlir-air's `make diagnosis`): every layer's ffn_out,
// NPU against reference, with the same engine and definitions as the gated layer 0.
import { openRunTensor } from '../rundir/read.ts';
import { compareSummary } from '../metrics/index.ts';
import type { ProbeJson } from '../rundir/schema.ts';
import type { LayerRow } from '../record/layers.ts';

/** Each layer finalized only as far as its row shows (no bad runs, so no threshold). */
export async function judgeLayers(runDir: string, layers: NonNullable<ProbeJson['layers']>): Promise<LayerRow[]> {
  const rows: LayerRow[] = [];
  for (const [i, e] of layers.entries.entries()) {
    // Regular files inside the run dir, of the dtype and shape probe.json declares.
    const npu = openRunTensor(runDir, e.npu, `layers.entries[${i}].npu`);
    try {
      const ref = openRunTensor(runDir, e.ref, `layers.entries[${i}].ref`);
      try {
        rows.push({ layer: e.layer, ...(await compareSummary(npu, ref)) });
      } finally {
        ref.close();
      }
    } finally {
      npu.close();
    }
  }
  return rows.sort((a, b) => a.layer - b.layer);
}
