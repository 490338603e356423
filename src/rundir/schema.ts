// The run dir: the one contract between the NPU side (scripts/probe) and the report side.
// The names, versions and probe.json keys come from scripts/probe/contract.json, which the probe
// reads too.
import { CONTRACT, PROBE, PROBE_KEYS as CONTRACT_KEYS, RUN_FILES_CONTRACT } from '../contract.ts';
import type { NpuFacts } from '../npu/generation.ts';

export const PROBE_SCHEMA = PROBE.schema as 'npu-block-gate/probe';
export const PROBE_SCHEMA_VERSION = PROBE.version;

export const RUN_FILES = RUN_FILES_CONTRACT;

/** The dirs a run writes, and the names of the files it writes in each (scripts/probe: probe_schema's
 * layer_file and boundary_file, probe_bisect's STEP_FILE_RE and bisect.json). Anything else there is
 * someone else's. */
export const RUN_DIRS: [string, RegExp][] = [
  [CONTRACT.layers_dir, /^layer_\d{2,}\.(npu|ref)\.npy$/],
  [CONTRACT.boundaries.dir, /^\d{2,}-[A-Za-z0-9_.-]+\.(npu|ref|fp32|twin)\.npy$/],
  [CONTRACT.bisect.dir, new RegExp(`^(${CONTRACT.bisect.json.replace('.', '\\.')}|\\d{2,}-.+\\.npy|launch-\\d{2,}-.+\\.npy)$`)],
];

/** What the compile imports and reads, as the probe's plan found it (probe.json kernel_cache.inputs). */
export interface CompileInputs {
  /** Files relative to the air root: every imported module of the compile, the C++ kernel sources, registry data. */
  files: string[];
  /** Environment variables the compile code reads, with their values (null: unset). */
  env: Record<string, string | null>;
  /** Other model dirs the compile code comes from (smollm2_1_7b -> llama32_1b). */
  models?: string[];
}

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

interface Workaround {
  /** 'non_1024_aligned' | 'qkv_bias' */
  id: string;
  detail: string;
  /** The seed's Phase 4/5 prerequisite line. */
  prerequisite: string;
}

interface Step1 {
  path?: 'kernel-first' | 'inheritance';
  matches?: boolean;
  inheritance_allowed?: boolean;
  llama_sequence?: string[];
  model_sequence?: string[];
  breaks?: { rule: string; op?: string; detail: string }[];
  /** Why the path label is what it is (the seed's rule, with its evidence). */
  path_why?: string | null;
  block?: { function: string; file: string | null; line?: number | null; where: string; via: string | null; compile: string | null } | null;
}

interface Step2 {
  triggers?: { id: string; detail: string; seed_workaround?: string }[];
  tree_does?: { id: string; detail: string; evidence?: string }[];
  prerequisite?: string | null;
  [k: string]: unknown;
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
    /** `--positions`: how the prompt was extended to more real tokens (null otherwise). */
    positions?: Positions | null;
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
    /** How block 0 ran: run_single_block, a run_transformer_block* function, or the adapter's runner. */
    runner?: 'single' | 'block' | 'adapter';
    /** The plan's seed Step 1 answer (kernel sequence vs llama's, the block function and where it lives). */
    step1?: Step1 | null;
    /** The plan's Step 2 answer: the config triggers and what the model's code does about them. */
    step2?: Step2 | null;
    /** Phase 1 coverage: registry rows naming the model that the block does not launch. */
    coverage?: { unwired?: unknown[]; [k: string]: unknown } | null;
    /** Where the block function is defined (module, file, model dir): a fact of its own, not the path label. */
    defined_in?: { module: string; file: string | null; model: string | null; [k: string]: unknown } | null;
  };
  /** What `make diagnosis` runs for this model, and each way this run differs from it. */
  defaults?: { make_diagnosis: { prompt: string | null; model_choice: string | null; cpu_attn: boolean | null }; differs: string[] } | null;
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
    /** HF_HUB_OFFLINE was set for the run (the default; --online turns it off). */
    hub_offline?: boolean;
  };
  environment: {
    python: string;
    python_executable: string;
    numpy: string;
    platform: string;
    device: string | null;
    xrt: string | null;
    /** The NPU the run was on, as the probe found it (PCI ids, xrt-smi); null: none found, or an older probe. */
    npu?: NpuFacts | null;
    /** The toolchain ids (values are scalars: versions, flags). */
    toolchain: Record<string, string | number | boolean | null> | null;
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
    manifest_loaded?: boolean | null;
    /** What the compile imports and reads (the plan's import closure, C++ sources, env): the key's inputs. */
    inputs?: CompileInputs | null;
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
  /** The lens: each boundary inside block 0 on both sides (null in config, on the adapter path, or turned off). */
  boundaries?: Boundaries | null;
  /** --emulate: the tree's block on the probe's emulated runtime (null otherwise). */
  emulate?: Emulate | null;
  /** Step 2's padded-vs-original check, when Step 2's non-1024-alignment trigger fired (absent or null otherwise). */
  step2_sanity?: Step2Sanity | null;
}

/** One way of padding in the Step 2 sanity check, against the original model (float32 on the CPU). */
interface Step2SanityRow {
  /** reindexed: the seed's GQA-aware padding; tree_helper: the tree's own padding helper; naive_end: phantom Q heads at the end. */
  id: 'reindexed' | 'tree_helper' | 'naive_end';
  label: string;
  ffn_out_cosine?: number;
  logits_cosine?: number;
  /** Both cosines >= gate. */
  pass?: boolean;
  /** Why this row did not run (e.g. the tree's helper needs the NPU stack). */
  skipped?: string;
  [k: string]: unknown;
}

/** probe.json `step2_sanity` (npu_probe.reference.step2_sanity): `skipped` when it could not run, else the rows. */
export interface Step2Sanity {
  gate: number;
  skipped?: string;
  dtype?: string;
  tokens?: number;
  model_id?: string | null;
  original?: Record<string, number>;
  padded?: Record<string, number>;
  rows?: Step2SanityRow[];
  /** The reindexed padding (and the tree's helper, when it ran) pass the gate. */
  ok?: boolean;
  /** Why the reindexing matters (what naive end-padding does to the GQA groups). */
  why?: string;
  misrouted_heads?: number;
  [k: string]: unknown;
}

/** `--positions N` (probe.json prompt.positions): how the prompt became N real tokens. */
export interface Positions {
  requested: number;
  real_len: number;
  /** Tokens of the prompt itself. */
  prompt_tokens: number;
  /** prompt: exactly N; truncated: the prompt cut to N; continued: the set's other prompts sufficed; repeated: the set was cycled. */
  method: 'prompt' | 'truncated' | 'continued' | 'repeated';
  /** The prompt set the text was continued with (null for prompt / truncated). */
  set: string | null;
  prompts_used: number;
  cycles: number;
  text_chars: number;
}

/** One boundary both sides have with one shape (boundaries/NN-<name>.{npu,ref}.npy, [real_len, features]). */
interface BoundaryEntry {
  /** An identifier ([A-Za-z0-9_.-], 1-64 characters): scripts/probe/elf_boundaries.json's name. */
  name: string;
  /** Block order (NN in the file names). */
  order: number;
  /** The seed's kernel-sequence step (RMSNorm, Q/K/V GEMM, RoPE, ...), for the failure-mode hint. */
  step: string | null;
  /** The ELF and argument index the NPU side was read from (null: the block's returned dict). */
  launch: string | null;
  arg: number | null;
  source: 'launch' | 'returned';
  /** The ELF (or host function) that wrote it. */
  produced_by: string | null;
  npu: TensorEntry;
  ref: TensorEntry;
  /** HF layer 0 in FP32 (the error budget's ground truth); null or absent when not measured. */
  fp32?: TensorEntry | null;
  /** The hardware twins' pass at this boundary (the error budget's expected side, beside fp32); null or absent when none. */
  twin?: TensorEntry | null;
}

export interface BoundaryUnpaired {
  name: string;
  /** The side that has it ('both': both have it with different shapes). */
  side: 'npu' | 'ref' | 'both';
  reason: string;
}

/** probe.json `boundaries` (scripts/probe/README.md "Boundaries"). */
export interface Boundaries {
  source: 'launches' | 'returned' | 'launches+returned' | null;
  /** The ELF boundary table entry used (null: the model is not in the table). */
  table: string | null;
  emulated: boolean;
  /** The HF capture version (null: no HF model to hook, e.g. an emulated reference). */
  reference: string | null;
  layout: string;
  entries: BoundaryEntry[];
  unpaired: BoundaryUnpaired[];
  /** What the FP32 side is, when the run measured it (absent or null otherwise). */
  fp32?: { dtype: string; what: string; [k: string]: unknown } | null;
  /** How the hardware twins' pass computed (precision hw, the run's eps), when it ran (absent or null otherwise). */
  twin?: { precision: string; rms_eps: number; qk_eps: number; eps_from: string; what: string; [k: string]: unknown } | null;
  /** The tree's RMSNorm eps (file, line) against the checkpoint's rms_norm_eps; absent or null when unknown. */
  norm_eps?: NormEps | null;
}

/** probe.json boundaries.norm_eps (npu_probe.lens.eps). */
export interface NormEps {
  /** weighted_rms_norm.EPS, the tree's ELFs' eps, at `file`:`line` (relative to the air root). */
  tree: number;
  file: string;
  line: number;
  /** The checkpoint config.json's rms_norm_eps. */
  config: number;
  config_from: string;
  /** The eps the run's twins took (the emulated NPU's and the expected pass's): the tree's, or with --twin-eps config the config's. */
  twins: number;
  twins_from: string;
  [k: string]: unknown;
}

/** probe.json `emulate` (scripts/probe/README.md "Emulated NPU"): no NPU ran. */
interface Emulate {
  runtime: string;
  /** The bug injected into the emulated NPU (contract.json emulate.inject), or null. */
  inject: string | null;
  config_from: string | null;
  /** Config fields the checkpoint changed: {field: [old, new]}. */
  config_changes: Record<string, (string | number | boolean | null)[]>;
  artifacts: string[];
  registry: { shape: number[]; as: number[] | null; dtype: string; precision: string | null; method: string | null; [k: string]: unknown }[];
  /** Launches the emulated NPU ran. */
  launches: number;
  compile: string;
  /** How the emulated NPU's twins computed (absent in older run dirs: fp32 numerics then). */
  twins?: Twins | null;
}

/** How CPU twins compute: the precision (contract.json emulate.twin_precision) and the RMSNorm eps. */
interface Twins { precision: string; rms_eps: number; qk_eps: number; eps_from: 'tree' | 'config' | string; [k: string]: unknown }

/** Every key probe.json may hold: an object declares a nested object's keys, null a leaf
 * (contract.json probe.keys, the declaration the probe writes by). */
export const PROBE_KEYS: KeyDecl = CONTRACT_KEYS;

type KeyDecl = { readonly [k: string]: KeyDecl | null };

/** Dotted paths of keys in a probe.json object that PROBE_KEYS does not declare. */
export function undeclaredKeys(doc: Record<string, unknown>, decl: KeyDecl = PROBE_KEYS, prefix = ''): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(doc)) {
    if (!(k in decl)) out.push(prefix + k);
    else if (decl[k] && v && typeof v === 'object' && !Array.isArray(v)) out.push(...undeclaredKeys(v as Record<string, unknown>, decl[k]!, `${prefix}${k}.`));
  }
  return out;
}
