// A lens judged for real: boundary tensors written as .npy files (the layout probe --boundaries
// records: one NPU file and one HF file per boundary, real rows only), then src/lens/judge.ts's
// compareBoundaries and lensOf over them, as `report` does. Nothing here decides below, drifts,
// scaleOff, firstBelow, onset, hiding or scale: the judge does, from the numbers in the files.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { compareBoundaries, lensOf } from '../../src/lens/judge.ts';
import type { LensReport } from '../../src/record/lens.ts';
import type { Boundaries } from '../../src/rundir/schema.ts';
import { npyOf } from './rundir.ts';

/** llama32_1b's 16 boundaries (scripts/probe/elf_boundaries.json): name, order, seed step, launch. */
export const LLAMA_BOUNDARIES: [string, number, string, string][] = [
  ['block_input', 0, 'input', 'rms_gemms_rope'], ['attn_norm', 1, 'RMSNorm', 'rms_gemms_rope'], ['q', 5, 'Q/K/V GEMM', 'rms_gemms_rope'],
  ['k', 6, 'Q/K/V GEMM', 'rms_gemms_rope'], ['v', 7, 'Q/K/V GEMM', 'rms_gemms_rope'], ['q_roped', 10, 'RoPE', 'rms_gemms_rope'],
  ['k_roped', 11, 'RoPE', 'rms_gemms_rope'], ['attn_out', 12, 'FlashAttention', 'o_ffn'], ['o_proj', 13, 'O GEMM', 'o_ffn'],
  ['res1', 14, 'residual add', 'o_ffn'], ['ffn_norm', 15, 'RMSNorm', 'o_ffn'], ['gate', 16, 'Gate/Up GEMM', 'o_ffn'],
  ['up', 17, 'Gate/Up GEMM', 'o_ffn'], ['swiglu', 18, 'SwiGLU', 'o_ffn'], ['down', 19, 'Down GEMM', 'o_ffn'], ['ffn_out', 20, 'residual add', 'o_ffn'],
];

export interface LensTensors {
  /** Real rows per boundary (6). */
  rows?: number;
  /** A boundary's [whole cosine, per-position min]: the last row at the minimum, the others set so
   * that the whole cosine comes out as given (default [0.99999, 0.99998]). */
  cos?: Record<string, [number, number]>;
  /** A boundary's per-row cosine (replaces `cos`'s rows; the whole cosine is then their mean). */
  perRow?: (name: string, i: number) => number;
  /** A boundary's norm ratio |npu|/|ref| (default 1). */
  ratio?: Record<string, number>;
  threshold?: number;
  emulated?: boolean;
  /** ffn_out passes G1-G3 (the lens then looks for a boundary the gate may hide). Default false. */
  ffnOutPasses?: boolean;
  /** The boundaries, in the order the probe lists them (default llama32_1b's, in block order). */
  boundaries?: [string, number, string, string][];
}

/** Each row of `n` a 2-vector: the HF side at angle t_i, the NPU side turned by acos(c_i) and scaled. */
function sides(cosines: number[], ratio: number): { npu: number[][]; ref: number[][] } {
  const npu: number[][] = [];
  const ref: number[][] = [];
  cosines.forEach((c, i) => {
    const t = 0.37 * i + 0.1;
    const phi = Math.acos(Math.max(-1, Math.min(1, c)));
    const norm = 1 + 0.25 * (i % 3);
    ref.push([norm * Math.cos(t), norm * Math.sin(t)]);
    npu.push([ratio * norm * Math.cos(t + phi), ratio * norm * Math.sin(t + phi)]);
  });
  return { npu, ref };
}

/** Per-row cosines whose norm-weighted mean (the whole cosine of sides()) is `whole`, the last row at `min`. */
function rowsFor(n: number, whole: number, min: number): number[] {
  const w = Array.from({ length: n }, (_, i) => (1 + 0.25 * (i % 3)) ** 2);
  const total = w.reduce((a, b) => a + b, 0);
  const rest = (whole * total - min * w[n - 1]) / (total - w[n - 1]);
  return Array.from({ length: n }, (_, i) => (i === n - 1 ? min : Math.min(1, rest)));
}

/** Writes the boundary tensors and returns the run dir and its boundaries record. */
export function writeLensTensors(o: LensTensors = {}): { dir: string; boundaries: Boundaries } {
  const n = o.rows ?? 6;
  const dir = mkdtempSync(join(tmpdir(), 'nbg-lens-tensors-'));
  mkdirSync(join(dir, 'boundaries'));
  const entries: Boundaries['entries'] = [];
  for (const [name, order, step, launch] of o.boundaries ?? LLAMA_BOUNDARIES) {
    const cosines = o.perRow
      ? Array.from({ length: n }, (_, i) => o.perRow!(name, i))
      : rowsFor(n, ...(o.cos?.[name] ?? [0.99999, 0.99998]));
    const { npu, ref } = sides(cosines, o.ratio?.[name] ?? 1);
    const file = (side: string) => ({ file: `boundaries/${String(order).padStart(2, '0')}-${name}.${side}.npy`, dtype: 'f32' as const, shape: [n, 2] });
    writeFileSync(join(dir, file('npu').file), npyOf(npu));
    writeFileSync(join(dir, file('ref').file), npyOf(ref));
    entries.push({ name, order, step, launch, arg: 3, source: 'launch', produced_by: name === 'attn_out' ? 'flash_attn' : launch, npu: file('npu'), ref: file('ref') });
  }
  const boundaries: Boundaries = {
    source: 'launches', table: 'scripts/probe/elf_boundaries.json#llama32_1b', emulated: o.emulated ?? true, reference: 'hf-layer0-hooks/1',
    layout: 'seq-first', entries, unpaired: [],
  };
  return { dir, boundaries };
}

/** The lens the judge makes of these tensors. */
export async function judgedLens(o: LensTensors = {}): Promise<LensReport> {
  const { dir, boundaries } = writeLensTensors(o);
  const threshold = o.threshold ?? 0.99;
  return lensOf(boundaries, await compareBoundaries(dir, boundaries, threshold), threshold, o.ffnOutPasses ?? false);
}

/** The judge's per-boundary rows of these tensors (compareBoundaries), before lensOf: for a test
 * that sets one more fact on them (an error budget) and judges the lens itself. */
export async function comparedRows(o: LensTensors = {}): Promise<Awaited<ReturnType<typeof compareBoundaries>>> {
  const { dir, boundaries } = writeLensTensors(o);
  return compareBoundaries(dir, boundaries, o.threshold ?? 0.99);
}
