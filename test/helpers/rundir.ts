// A synthetic run dir and model dir, without Python: a full probe.json (every field the probe
// writes), small f32 tensors that pass the gates, and a TODO.md / phase2_block.md pair, all in a
// fresh temp dir. The fault suite mutates them and runs `report` on them.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync, existsSync, lstatSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { main } from '../../src/cli.ts';
import { npyBytes, npyHeader, f32Bytes } from './bytes.ts';
import { PROBE_SCHEMA, PROBE_SCHEMA_VERSION } from '../../src/rundir/schema.ts';

export const REAL_LEN = 5;
export const PADDED = 8;
export const COLS = 16;

/** A deterministic value stream (no Math.random: failures must reproduce). */
export function lcg(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export function refValues(rows = REAL_LEN, cols = COLS, seed = 7): number[][] {
  const r = lcg(seed);
  return Array.from({ length: rows }, () => Array.from({ length: cols }, () => r() * 2 - 1));
}

export function npyOf(rows: number[][], descr = '<f4'): Buffer {
  return npyBytes(npyHeader(descr, [rows.length, rows[0].length]), f32Bytes(rows.flat()));
}

/** Everything a probe writes in probe.json, as the air-mini probe wrote it for a small model. */
export function fullProbeJson(): Record<string, any> {
  return {
    schema: PROBE_SCHEMA, schema_version: PROBE_SCHEMA_VERSION, stage: 'block', created_at: '2026-12-01T10:16:54Z',
    tool: { name: 'npu-block-gate', version: '0.1.0' },
    model: { name: 'tiny_m', dir: 'programming_examples/llms/tiny_m', hf_id: 'air-mini/tiny-m', config: { n_layers: 2, emb_dim: COLS, n_heads: 2, n_kv_heads: 1, head_dim: 8, hidden_dim: 32, vocab_size: 64, rope_base: 10000.0, qkv_bias: true, qk_norm: false } },
    prompt: { style: 'instruct', text: 'The capital of France is', source: 'verify/prompts/instruct.txt:2', token_ids: [1, 9, 8, 7, 6], real_len: REAL_LEN, padded_len: PADDED, tokenizer: 'tiny_m.verify_adapter.tokenize' },
    defaults: { make_diagnosis: { prompt: 'The capital of France is', model_choice: 'instruct', cpu_attn: true }, differs: [] },
    integration: {
      path: 'kernel-first', entry: 'tiny_m.tiny_m_prefill.run_transformer_block', runner: 'block', reason: 'no run_single_block',
      kernels: ['rms_gemms_rope', 'o_ffn'], tiles: {},
      workarounds: [{ id: 'qkv_bias', detail: 'qkv_bias=True: Q/K/V biases must be applied', prerequisite: 'Phase 4/5 prerequisite: perf optimization must preserve the padded/bias wrappers' }],
      cpu_attn: true,
      step1: { llama_sequence: ['RMSNorm', 'Q/K/V GEMM'], model_sequence: ['RMSNorm', 'Q/K/V GEMM', 'QKV bias add'], matches: false, inheritance_allowed: false, breaks: [{ rule: 'a', detail: 'QKV bias add: a new op type' }], block: { function: 'tiny_m_prefill.run_transformer_block', file: 'programming_examples/llms/tiny_m/tiny_m_prefill.py', line: 59, where: 'own-prefill', via: null, compile: 'tiny_m_prefill.compile_all_kernels' }, path: 'kernel-first' },
      step2: { emb_dim_aligned: false, hidden_dim_aligned: false, qkv_bias: true, triggers: [{ id: 'qkv_bias', detail: 'qkv_bias=True', seed_workaround: 'host-side post-RoPE bias add' }], tree_does: [{ id: 'qkv_bias_on_device', detail: 'adds the bias on device', evidence: 'tiny_m_prefill.py:71' }], prerequisite: 'Phase 4/5 prerequisite: perf optimization must preserve the padded/bias wrappers' },
      coverage: { registry: null, seq_len: PADDED, model_names: [], registry_rows: [], wired: [], unwired: [{ section: 'GEMM', shape: '8x16', used_by: 'decode', reason: 'not launched' }], outside_block: [], unregistered: [] },
    },
    reference: { kind: 'emulated', runner: 'verify.runners.hf_runner.HfRunner', lite_mode: false, dtype: 'bf16', model_id: 'air-mini/tiny-m', transformers: null, torch: null, cache: { key: '0123456789abcdef0123456789abcdef', hit: false, dir: '/tmp/refcache/0123456789abcdef0123456789abcdef' }, hub_offline: true },
    environment: { python: '3.11.7', python_executable: '/usr/bin/python3', numpy: '2.4.6', platform: 'Linux', device: null, xrt: null, toolchain: { emulator: 'air-mini-emu/1', numpy: '2.4' }, git_commit: 'abcdef0123456789abcdef0123456789abcdef01', air_root: '/nonexistent/air' },
    timings: { config: 0.03, plan: 0.1, npu: 0.02, ref: 0.29, total: 1.46 },
    kernel_cache: { dir: 'programming_examples/llms/tiny_m/build_peano/prefill_kernel_cache', key: null, hit: false, seconds_saved: null, entries: ['o_ffn', 'rms_gemms_rope'], seq_len: PADDED, cpu_attn: true, toolchain: { emulator: 'air-mini-emu/1' }, compile_command: 'tiny_m_prefill.compile_all_kernels(cache, config, seq_len=8)', compiled: ['rms_gemms_rope', 'o_ffn'], reused: [], compile_seconds: 0.004, manifest_loaded: true, inputs: { files: ['programming_examples/llms/tiny_m/tiny_m_prefill.py'], env: {}, models: [] } },
    tensors: { npu: { file: 'block0.npu.npy', dtype: 'f32', shape: [PADDED, COLS] }, ref: { file: 'block0.ref.npy', dtype: 'f32', shape: [REAL_LEN, COLS] }, input: null },
    bisect: null,
    layers: null,
  };
}

export const TODO_MD = `# Deployment: tiny_m

## Phase status
- [x] 0: Build CPU Reference
- [x] 1: Kernel Validation
- [ ] 2: Single-Block Validation
- [ ] 3: Full-Model Validation
- [ ] 4: Prefill Optimization
- [ ] 5: Decode Optimization

## Active blockers
(none yet)

## Resolved config (pulled from HF)
n_layers: 2
`;

export interface Fixture {
  root: string;
  runDir: string;
  modelDir: string;
  todo: string;
  phase2: string;
  probe: Record<string, any>;
  /** Rewrites probe.json from `probe`. */
  save(): void;
  /** Every file under the model dir (and the run dir's report files) with its bytes and mode, for byte-identity checks. */
  snapshot(): Map<string, string>;
}

/**
 * A passing run dir + model dir. `npu`/`ref` replace the tensors' rows; `probe` edits probe.json.
 */
export function fixture(opts: { npu?: number[][]; ref?: number[][]; probe?: (p: Record<string, any>) => void; todo?: string | null; phase2?: string | null } = {}): Fixture {
  const root = mkdtempSync(join(tmpdir(), 'nbg-fault-'));
  const runDir = join(root, 'run');
  const modelDir = join(root, 'tiny_m');
  mkdirSync(runDir);
  mkdirSync(join(modelDir, 'docs/development_progress'), { recursive: true });
  const ref = opts.ref ?? refValues();
  const noise = lcg(11);
  const npu = opts.npu ?? [...ref.map((row) => row.map((v) => v + (noise() - 0.5) * 1e-4)), ...refValues(PADDED - REAL_LEN, COLS, 3)];
  writeFileSync(join(runDir, 'block0.npu.npy'), npyOf(npu));
  writeFileSync(join(runDir, 'block0.ref.npy'), npyOf(ref));
  const probe = fullProbeJson();
  probe.tensors.npu.shape = [npu.length, npu[0].length];
  probe.tensors.ref.shape = [ref.length, ref[0].length];
  opts.probe?.(probe);
  const todo = join(modelDir, 'TODO.md');
  const phase2 = join(modelDir, 'docs/development_progress/phase2_block.md');
  if (opts.todo !== null) writeFileSync(todo, opts.todo ?? TODO_MD);
  if (opts.phase2 !== undefined && opts.phase2 !== null) writeFileSync(phase2, opts.phase2);
  const f: Fixture = {
    root, runDir, modelDir, todo, phase2, probe,
    save: () => writeFileSync(join(runDir, 'probe.json'), JSON.stringify(f.probe, null, 2)),
    snapshot: () => snapshot(modelDir, runDir),
  };
  f.save();
  return f;
}

function snapshot(modelDir: string, runDir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      const l = lstatSync(p);
      if (l.isDirectory()) walk(p);
      else out.set(relative(modelDir, p), `${(l.mode & 0o7777).toString(8)}:${l.isFile() ? readFileSync(p).toString('base64') : 'link'}`);
    }
  };
  if (existsSync(modelDir)) walk(modelDir);
  for (const n of ['report.json', 'report.md']) {
    const p = join(runDir, n);
    if (existsSync(p)) out.set(`run/${n}`, statSync(p).isFile() ? readFileSync(p).toString('base64') : 'dir');
  }
  return out;
}

function sink() {
  let text = '';
  const w = new Writable({ write(c, _e, cb) { text += c; cb(); } });
  return { w, get text() { return text; } };
}

/** The CLI in this process: exit code, stdout, stderr. */
export async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = sink();
  const err = sink();
  const code = await main(args, out.w as unknown as NodeJS.WritableStream, err.w as unknown as NodeJS.WritableStream);
  return { code, out: out.text, err: err.text };
}

/** `report` on the fixture, writing documents into its model dir. */
export function report(f: Fixture, extra: string[] = []) {
  return cli(['report', '--run-dir', f.runDir, '--model-dir', f.modelDir, ...extra]);
}

/** The one error line of a failed run (and no stack trace anywhere). */
export function errorLine(r: { err: string }): string {
  const lines = r.err.trim().split('\n').filter((l) => l.startsWith('npu-block-gate:'));
  if (lines.length !== 1 || /\n\s+at /.test(r.err)) throw new Error(`expected one error line, got:\n${r.err}`);
  return lines[0];
}
