// The run dir: the one contract between the NPU side (scripts/probe) and the report side.
// scripts/probe/probe_schema.py holds the same constants; test/rundir.test.ts checks they agree.

export const PROBE_SCHEMA = 'npu-block-gate/probe';
export const PROBE_SCHEMA_VERSION = 1;

export const RUN_FILES = {
  probe: 'probe.json',
  npu: 'block0.npu.npy',
  ref: 'block0.ref.npy',
  input: 'block0.input.npy',
  report: 'report.json',
  markdown: 'report.md',
  probeLog: 'probe.log',
} as const;

export interface ModelConfig {
  n_layers: number;
  emb_dim: number;
  n_heads: number;
  n_kv_heads: number;
  head_dim: number;
  hidden_dim: number;
  vocab_size?: number;
  rope_base?: number;
  qkv_bias: boolean;
  qk_norm: boolean;
}

export interface Workaround {
  /** 'non_1024_aligned' | 'qkv_bias' */
  id: string;
  detail: string;
  /** The seed's Phase 4/5 prerequisite line. */
  prerequisite: string;
}

export interface TensorEntry {
  file: string;
  dtype: 'f32' | 'f16' | 'bf16';
  shape: number[];
}

export interface ProbeJson {
  schema: typeof PROBE_SCHEMA;
  schema_version: number;
  /** 'config' after `probe config`, 'block' after `probe block`. */
  stage: 'config' | 'block';
  created_at: string;
  tool: { name: string; version: string };
  model: {
    name: string;
    /** Relative to air_root. */
    dir: string;
    hf_id: string | null;
    config: ModelConfig;
  };
  prompt: {
    style: string;
    text: string;
    /** e.g. "verify/prompts/instruct.txt:3", or "--prompt". */
    source: string;
    token_ids: number[];
    real_len: number;
    padded_len: number | null;
    tokenizer: string;
  };
  integration: {
    path: 'kernel-first' | 'inheritance' | 'adapter';
    /** e.g. "tiny_llama.tiny_llama_prefill.run_transformer_block". */
    entry: string;
    reason: string;
    kernels: string[];
    tiles: Record<string, string>;
    workarounds: Workaround[];
    cpu_attn: boolean | null;
  };
  reference: {
    kind: 'hf-bf16' | 'emulated';
    runner: string;
    lite_mode: false;
    dtype: string;
    model_id: string | null;
    transformers: string | null;
    torch: string | null;
    /** The probe's reference cache: null when off or not cacheable (unknown snapshot revision). */
    cache?: { key: string; hit: boolean; dir: string } | null;
  };
  environment: {
    python: string;
    python_executable: string;
    numpy: string;
    platform: string;
    device: string | null;
    xrt: string | null;
    toolchain: Record<string, string> | null;
    git_commit: string | null;
    air_root: string;
  };
  timings: Record<string, number>;
  kernel_cache: {
    dir: string | null;
    key: string | null;
    hit: boolean | null;
    seconds_saved: number | null;
    entries: string[];
    /** Filled by `probe config` and `probe block` (kernel cache key inputs and what compiled). */
    seq_len?: number | null;
    cpu_attn?: boolean | null;
    toolchain?: unknown;
    compile_command?: string | null;
    compiled?: string[];
    reused?: string[];
    compile_seconds?: number | null;
  };
  tensors: {
    npu: TensorEntry | null;
    ref: TensorEntry | null;
    input: TensorEntry | null;
  };
  /** `probe block --layers`: every layer's ffn_out on both sides, for the informational per-layer table. */
  layers?: null | {
    source: string;
    entries: { layer: number; npu: TensorEntry; ref: TensorEntry }[];
  };
  bisect: null | {
    available: boolean;
    reason: string;
    steps: { step: string; cosine: number }[];
  };
}
