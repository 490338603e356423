// Builds Reports and Metrics for tests of the renderers, gates and documents.
import type { Metrics } from '../../src/metrics/types.ts';
import type { Report } from '../../src/report/types.ts';
import { metricGates, documentationGate, outcomeOf } from '../../src/gates/evaluate.ts';

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
    ...over,
  };
}
