// Builds Reports and Metrics for tests of the renderers, gates and documents.
import type { Metrics } from '../../src/metrics/types.ts';
import type { Report } from '../../src/record/report.ts';
import { metricGates, documentationGate, outcomeOf } from '../../src/gates/evaluate.ts';
import type { BisectReport } from '../../src/record/bisect.ts';
import type { Comparison } from '../../src/metrics/types.ts';

/** A table row's numbers: the cosines given, the rest plausible. */
export function fakeComparison(whole: number, min: number, over: Partial<Comparison> = {}): Comparison {
  return { rows: 6, cols: 256, wholeCosine: whole, perPositionMin: min, p5: min, median: whole, maxAbs: whole > 0.999 ? 0.0039 : 1.25, maxRel: 0.5, sqnrDb: 45, normRatio: 1, nonFinite: 0, ...over };
}
import { hintForStep } from '../../src/seed/hints.ts';

export function fakeMetrics(over: Partial<{ whole: number; cosines: number[]; normRatio: number; nan: number; nanRow: number; realLen: number; npuRows: number; maxAbs: number }> = {}): Metrics {
  const cosines = over.cosines ?? [0.999, 0.998, 0.9995, 0.997];
  const realLen = over.realLen ?? cosines.length;
  const sorted = [...cosines].sort((a, b) => a - b);
  const nan = over.nan ?? 0;
  return {
    engine: 'js',
    realLen,
    npuRows: over.npuRows ?? realLen + 2,
    cols: 8,
    wholeCosine: over.whole ?? 0.9991,
    perPosition: {
      cosines,
      min: sorted.some(Number.isNaN) ? NaN : sorted[0],
      p5: sorted[0],
      median: sorted[Math.floor(sorted.length / 2)],
      mean: cosines.reduce((a, b) => a + b, 0) / cosines.length,
      worst: cosines.map((c, row) => ({ row, cosine: c })).sort((a, b) => a.cosine - b.cosine).slice(0, 3),
      zeroRows: [],
      badRuns: [],
    },
    errors: { maxAbs: over.maxAbs ?? 0.01, meanAbs: 0.002, maxRel: 0.5, meanRel: 0.01, meanRelL1: 0.009, sqnrDb: 45, normRatio: over.normRatio ?? 1.0, rowNormRatios: cosines.map(() => 1) },
    nonFinite: {
      nan: { count: nan, first: nan ? { row: over.nanRow ?? 0, col: 3 } : null },
      posInf: { count: 0, first: null },
      negInf: { count: 0, first: null },
      rowsScanned: over.npuRows ?? realLen + 2,
    },
  };
}

export function fakeReport(m: Metrics = fakeMetrics(), over: Partial<Report> = {}): Report {
  const thresholds = { whole: 0.99, perPosition: 0.99, headDim: 64, overridden: false };
  const gates = [...metricGates(m, thresholds), documentationGate({ attempted: true, ok: true, path: 'docs/development_progress/phase2_block.md', detail: 'written' })];
  return {
    schema: 'npu-block-gate/report',
    schema_version: 1,
    tool: { name: 'npu-block-gate', version: '0.0.0' },
    created_at: '2026-11-29T10:00:00.000Z',
    outcome: outcomeOf(gates),
    exit_code: outcomeOf(gates) === 'pass' ? 0 : 1,
    error: null,
    model: { name: 'tiny_llama', dir: 'programming_examples/llms/tiny_llama', hf_id: 'air-mini/tiny-llama', config: { n_layers: 3, emb_dim: 256, n_heads: 4, n_kv_heads: 2, head_dim: 64, hidden_dim: 512, vocab_size: 512, rope_base: 10000, qkv_bias: false, qk_norm: false } },
    commit: 'abcdef1234567890',
    prompt: { style: 'instruct', text: 'The capital of France is', source: 'verify/prompts/instruct.txt:2', real_len: m.realLen, padded_len: 64 },
    thresholds,
    gates,
    metrics: m,
    warnings: [],
    integration: { path: 'kernel-first', entry: 'tiny_llama.tiny_llama_prefill.run_transformer_block', reason: 'no run_single_block', kernels: ['rms_gemms_rope', 'o_ffn'], tiles: {}, workarounds: [], cpu_attn: true },
    reference: { kind: 'emulated', runner: 'verify.runners.hf_runner.HfRunner', lite_mode: false, dtype: 'bfloat16', model_id: null, transformers: null, torch: null },
    environment: { python: '3.11.2', python_executable: '/usr/bin/python3', numpy: '1.24.2', platform: 'linux', device: null, xrt: null, toolchain: null, git_commit: 'abcdef1234567890', air_root: '/tmp/x' },
    kernel_cache: null,
    bisect: null,
    layers: null,
    timings: {},
    docs: null,
    run_dir: '/tmp/run',
    isolation: null,
    ...over,
    emulated: over.emulated ?? !!over.emulate,
  };
}

// The twins bisect, as the judge builds it for an emulated real-tree run (the lens: helpers/lens.ts, judged for real).

/** A twins bisect of llama32_1b whose front ELF's `bad` buffer is off its twin. */
export function fakeTwinsBisect(opts: { bad?: string; fixes?: boolean; blockPasses?: boolean } = {}): BisectReport {
  const bad = opts.bad ?? 'q_roped';
  const buf = (buffer: string, boundary: string | null, stage: string, step: string) => {
    const off = buffer === bad;
    return { buffer, boundary, stage, step, span: [0, 6] as [number, number], ...fakeComparison(off ? 0.893942 : 1, off ? 0.78017 : 1, { maxAbs: off ? 1.313 : 0 }), diverges: off, drifts: off };
  };
  const launches = [
    { index: 1, launch: 'rms_gemms_rope', kind: 'rms_gemms_rope', occurrence: 0, buffers: [buf('normed', 'attn_norm', 'RMSNorm', 'RMSNorm'), buf('q', 'q', 'Q GEMM', 'Q/K/V GEMM'), buf('q_roped', 'q_roped', 'RoPE Q', 'RoPE')] },
    { index: 2, launch: 'flash_attn', kind: 'flash_attn', occurrence: 0, buffers: [buf('out', null, 'FlashAttention', 'FlashAttention')] },
    { index: 3, launch: 'o_ffn', kind: 'o_ffn', occurrence: 0, buffers: [buf('proj', 'o_proj', 'O GEMM', 'O GEMM'), buf('out', 'ffn_out', 'residual add (FFN)', 'residual add')] },
  ];
  const l1 = launches[0].buffers.find((b) => b.buffer === bad) ?? launches[0].buffers[2];
  const step = (i: number, step: string, whole: number, min: number, fixes: boolean) => ({
    step, kernel: step, cpuEquivalent: `probe twin ${step} (numpy: fp32 accumulate, bf16 at the ELF's buffers)`,
    swapped: ['rms_gemms_rope', 'flash_attn', 'o_ffn'].slice(0, i), ...fakeComparison(whole, min), fixes,
  });
  const fixes = opts.fixes ?? true;
  return {
    available: true,
    reason: opts.blockPasses ? 'the block passes the gates as it is (the bisect ran because the lens named a boundary); the launch-level table is what locates it'
      : fixes ? 'swapping rms_gemms_rope to its twin brings the block above threshold' : 'no single ELF to its twin swap brings the block above threshold',
    hook: null, method: 'twins', emulated: true,
    steps: [step(1, 'rms_gemms_rope', 0.999994, 0.999987, fixes || !!opts.blockPasses), step(2, 'flash_attn', 0.999994, 0.999987, fixes || !!opts.blockPasses), step(3, 'o_ffn', 0.999994, 0.999987, fixes || !!opts.blockPasses)],
    offender: fixes && !opts.blockPasses ? { step: 'rms_gemms_rope', kernel: 'rms_gemms_rope', hint: hintForStep(null, 'rms_gemms_rope') } : null,
    launches,
    launchOffender: { index: 1, launch: 'rms_gemms_rope', kind: 'rms_gemms_rope', buffer: l1.buffer, boundary: l1.boundary, stage: l1.stage, step: l1.step, wholeCosine: l1.wholeCosine, perPositionMin: l1.perPositionMin, strength: 'diverges', hint: hintForStep(l1.step, l1.buffer) },
    situation: null,
  };
}
