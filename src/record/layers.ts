// The per-layer table's part of the record (informational, as mlir-air's `make diagnosis`).
import type { Comparison } from '../metrics/types.ts';

export interface LayerRow extends Comparison {
  layer: number;
}
