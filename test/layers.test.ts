// The per-layer table on a hand-made run dir: informational rows, never a gate.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { check } from '../src/check/index.ts';
import { silentLog } from '../src/log.ts';
import { renderMarkdown } from '../src/report/markdown.ts';
import { renderTerminal } from '../src/report/terminal.ts';
import { npyBytes, npyHeader, f32Bytes } from './helpers/bytes.ts';
import type { Plan } from '../src/plan.ts';

const ROWS = 4;
const COLS = 8;
const base = Array.from({ length: ROWS * COLS }, (_, i) => Math.sin(i + 1));

function npy(values: number[], rows = ROWS) {
  return npyBytes(npyHeader('<f4', [rows, COLS]), f32Bytes(values));
}

function runDir(layerFiles: Record<string, number[]>, entries: unknown) {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-layers-'));
  mkdirSync(join(dir, 'layers'));
  writeFileSync(join(dir, 'block0.npu.npy'), npy(base));
  writeFileSync(join(dir, 'block0.ref.npy'), npy(base));
  for (const [f, v] of Object.entries(layerFiles)) writeFileSync(join(dir, f), npy(v));
  const t = (file: string) => ({ file, dtype: 'f32', shape: [ROWS, COLS] });
  writeFileSync(join(dir, 'probe.json'), JSON.stringify({
    schema: 'npu-block-gate/probe', schema_version: 1, stage: 'block', created_at: 'x', tool: { name: 't', version: '0' },
    model: { name: 'm', dir: 'programming_examples/llms/m', hf_id: null, config: { n_layers: 3, emb_dim: COLS, n_heads: 2, n_kv_heads: 1, head_dim: COLS / 2, hidden_dim: 16, qkv_bias: false, qk_norm: false } },
    prompt: { style: 'instruct', text: 'hi', source: '--prompt', token_ids: [1, 2, 3, 4], real_len: ROWS, padded_len: ROWS, tokenizer: 'x' },
    integration: { path: 'adapter', entry: 'm.verify_adapter.build_runner', reason: '', kernels: [], tiles: {}, workarounds: [], cpu_attn: null },
    reference: { kind: 'emulated', runner: 'HfRunner', lite_mode: false, dtype: 'bfloat16', model_id: null, transformers: null, torch: null },
    environment: { python: '3', python_executable: '/p', numpy: '1', platform: 'linux', device: null, xrt: null, toolchain: null, git_commit: null, air_root: '/nonexistent' },
    timings: {}, kernel_cache: { dir: null, key: null, hit: null, seconds_saved: null, entries: [] },
    tensors: { npu: t('block0.npu.npy'), ref: t('block0.ref.npy'), input: null },
    layers: entries === undefined ? { source: 'm.verify_adapter.build_runner.prefill', entries: [{ layer: 1, npu: t('layers/layer_01.npu.npy'), ref: t('layers/layer_01.ref.npy') }, { layer: 0, npu: t('layers/layer_00.npu.npy'), ref: t('layers/layer_00.ref.npy') }] } : entries,
    bisect: null,
  }));
  return dir;
}

const plan = (dir: string): Plan => ({ mode: 'report', modelDir: null, promptStyle: 'instruct', prompt: null, python: null, runDir: dir, threshold: null, writeDocs: false, timeoutSec: null, commit: 'c1' });

test('every layer is judged with the same definitions, sorted by layer, and never gates', async () => {
  const flipped = base.map((v, i) => (Math.floor(i / COLS) === 2 ? -v : v)); // row 2 reversed in layer 1
  const dir = runDir({ 'layers/layer_00.npu.npy': base, 'layers/layer_00.ref.npy': base, 'layers/layer_01.npu.npy': flipped, 'layers/layer_01.ref.npy': base }, undefined);
  const r = await check(plan(dir), { log: silentLog });
  assert.is(r.report.outcome, 'pass'); // layer 1 is bad, but only layer 0 is gated
  const layers = r.report.layers!;
  assert.equal(layers.map((l) => l.layer), [0, 1]);
  assert.ok(Math.abs(layers[0].wholeCosine - 1) < 1e-12 && Math.abs(layers[0].perPositionMin - 1) < 1e-12);
  assert.ok(Math.abs(layers[1].perPositionMin + 1) < 1e-12, String(layers[1].perPositionMin));
  const md = renderMarkdown(r.report, { flavor: 'summary' });
  assert.match(md, /### Every layer \(informational/);
  assert.match(md, /\| 1 +\| [0-9.]+ +\| -1\.000000/);
  assert.match(renderTerminal(r.report), /every layer \(informational\)/);
});

test('a run dir without layers has none; a layer path leaving the run dir is refused', async () => {
  const none = await check(plan(runDir({}, null)), { log: silentLog });
  assert.is(none.report.layers, null);
  const t = { file: '../../etc/passwd', dtype: 'f32', shape: [ROWS, COLS] };
  const bad = runDir({}, { source: 's', entries: [{ layer: 0, npu: t, ref: t }] });
  try {
    await check(plan(bad), { log: silentLog });
    assert.unreachable('accepted a path outside the run dir');
  } catch (e) {
    assert.match((e as Error).message, /probe\.json: layers\.entries\[0\]\.npu\.file must be a relative path inside the run dir/);
  }
});

test.run();
