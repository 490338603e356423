import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { PROBE_SCHEMA, PROBE_SCHEMA_VERSION, RUN_FILES } from '../src/rundir/schema.ts';
import { readProbeJson } from '../src/rundir/read.ts';
import { InputError } from '../src/errors.ts';
import { runPython } from './helpers/python.ts';

test('the Python probe and TypeScript agree on the run-dir contract', () => {
  const py = JSON.parse(runPython(`import sys, json; sys.path.insert(0, ${JSON.stringify(new URL('../scripts/probe', import.meta.url).pathname)}); from npu_probe.core import contract as s; print(json.dumps([s.PROBE_SCHEMA, s.PROBE_SCHEMA_VERSION, s.RUN_FILES]))`));
  assert.equal(py, [PROBE_SCHEMA, PROBE_SCHEMA_VERSION, { ...RUN_FILES }]);
});

function minimal(): Record<string, unknown> {
  return {
    schema: PROBE_SCHEMA, schema_version: PROBE_SCHEMA_VERSION, stage: 'block', created_at: 'x', tool: { name: 't', version: '0' },
    model: { name: 'm', dir: 'programming_examples/llms/m', hf_id: null, config: { n_layers: 2, emb_dim: 8, n_heads: 2, n_kv_heads: 1, head_dim: 4, hidden_dim: 16, qkv_bias: false, qk_norm: false } },
    prompt: { style: 'instruct', text: 'hi', source: '--prompt', token_ids: [1, 2], real_len: 2, padded_len: 64, tokenizer: 'x' },
    integration: { path: 'adapter', entry: 'm.verify_adapter.build_runner', reason: '', kernels: [], tiles: {}, workarounds: [], cpu_attn: null },
    reference: { kind: 'emulated', runner: 'HfRunner', lite_mode: false, dtype: 'bfloat16', model_id: null, transformers: null, torch: null },
    environment: { python: '3', python_executable: '/p', numpy: '1', platform: 'linux', device: null, xrt: null, toolchain: null, git_commit: null, air_root: '/a' },
    timings: {}, kernel_cache: { dir: null, key: null, hit: null, seconds_saved: null, entries: [] },
    tensors: { npu: { file: 'block0.npu.npy', dtype: 'f32', shape: [64, 8] }, ref: { file: 'block0.ref.npy', dtype: 'f32', shape: [2, 8] }, input: null },
    bisect: null,
  };
}

function runDirWith(obj: unknown | string): string {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-rundir-'));
  writeFileSync(join(dir, 'probe.json'), typeof obj === 'string' ? obj : JSON.stringify(obj));
  return dir;
}

const rejects = (dir: string, re: RegExp) =>
  assert.throws(() => readProbeJson(dir), (e: unknown) => e instanceof InputError && e.exitCode === 2 && re.test((e as Error).message) && (e as Error).message.includes('probe.json') && !(e as Error).message.includes('\n'));

test('a valid probe.json reads back', () => {
  const p = readProbeJson(runDirWith(minimal()));
  assert.is(p.model.config.head_dim, 4);
});

test('another schema version, another schema, broken JSON, missing fields are refused in one line', () => {
  rejects(runDirWith({ ...minimal(), schema_version: 2 }), /schema_version 2 is not supported/);
  rejects(runDirWith({ ...minimal(), schema: 'other' }), /schema is "other"/);
  rejects(runDirWith('{"schema": '), /not valid JSON/);
  const m = minimal();
  (m.model as Record<string, unknown>).config = { n_layers: 2 };
  rejects(runDirWith(m), /model\.config\.emb_dim is missing \(an integer >= 1 is required\)/);
  rejects(runDirWith({ ...minimal(), stage: 'config' }), /stage "config"/);
});

test('tensor paths that leave the run dir are refused (the run dir is untrusted input)', () => {
  for (const file of ['../x.npy', '/etc/passwd', 'a/../../b.npy']) {
    const m = minimal();
    (m.tensors as Record<string, unknown>).npu = { file, dtype: 'f32', shape: [1, 1] };
    rejects(runDirWith(m), /relative path inside the run dir|escapes/);
  }
});

test('a missing run dir or probe.json is named', () => {
  assert.throws(() => readProbeJson('/nonexistent/run'), /\/nonexistent\/run: run dir does not exist/);
  const dir = mkdtempSync(join(tmpdir(), 'nbg-rundir-'));
  mkdirSync(join(dir, 'x'));
  assert.throws(() => readProbeJson(dir), /probe\.json: missing/);
});

test.run();
