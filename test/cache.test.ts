import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, readdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { kernelCacheKey, KernelStore, defaultCacheRoot, type KeyInputs } from '../src/cache/kernel.ts';

function tree() {
  const air = mkdtempSync(join(tmpdir(), 'nbg-kc-'));
  const llms = join(air, 'programming_examples/llms');
  const model = join(llms, 'm');
  mkdirSync(join(model, 'build_peano/prefill_kernel_cache'), { recursive: true });
  mkdirSync(join(model, 'docs/development_progress'), { recursive: true });
  mkdirSync(join(llms, 'shared/infra'), { recursive: true });
  mkdirSync(join(air, 'programming_examples/kernel_registry/details'), { recursive: true });
  writeFileSync(join(model, 'm_prefill.py'), 'def compile_all_kernels(): pass\n');
  writeFileSync(join(llms, 'shared/infra/cache.py'), 'class KernelCache: pass\n');
  writeFileSync(join(air, 'programming_examples/kernel_registry/details/GEMM.json'), '{"tile": 32}');
  const inputs: KeyInputs = {
    airRoot: air, modelDir: model,
    config: { n_layers: 2, emb_dim: 8, n_heads: 2, n_kv_heads: 1, head_dim: 4, hidden_dim: 16, qkv_bias: false, qk_norm: false },
    seqLen: 64, cpuAttn: true, toolchain: { mlir_aie: '1.0' }, compileCommand: 'm_prefill.compile_all_kernels(seq_len=64)',
  };
  return { air, model, llms, inputs };
}

test('the key moves with sources, registry, config, seq_len, toolchain and command, not with docs or build output', () => {
  const t = tree();
  const base = kernelCacheKey(t.inputs).key;
  assert.is(kernelCacheKey(t.inputs).key, base);
  // Things that cannot change what compiles.
  writeFileSync(join(t.model, 'docs/development_progress/phase2_block.md'), 'notes');
  writeFileSync(join(t.model, 'TODO.md'), '- [x] 2');
  writeFileSync(join(t.model, 'build_peano/prefill_kernel_cache/x.elf'), 'bin');
  assert.is(kernelCacheKey(t.inputs).key, base);
  const changed = (f: () => void | KeyInputs) => {
    const r = f();
    return kernelCacheKey(r ?? t.inputs).key !== base;
  };
  assert.ok(changed(() => ({ ...t.inputs, seqLen: 128 })));
  assert.ok(changed(() => ({ ...t.inputs, cpuAttn: false })));
  assert.ok(changed(() => ({ ...t.inputs, toolchain: { mlir_aie: '1.1' } })));
  assert.ok(changed(() => ({ ...t.inputs, compileCommand: 'other' })));
  assert.ok(changed(() => ({ ...t.inputs, config: { ...t.inputs.config, hidden_dim: 32 } })));
  // A registry tile change (kernel_registry/details) and a builder change both move it.
  writeFileSync(join(t.air, 'programming_examples/kernel_registry/details/GEMM.json'), '{"tile": 64}');
  const afterRegistry = kernelCacheKey(t.inputs).key;
  assert.is.not(afterRegistry, base);
  writeFileSync(join(t.llms, 'shared/infra/cache.py'), 'class KernelCache: changed = 1\n');
  assert.is.not(kernelCacheKey(t.inputs).key, afterRegistry);
});

test('store then restore replaces the target whole; a miss leaves it alone', () => {
  const t = tree();
  const root = mkdtempSync(join(tmpdir(), 'nbg-store-'));
  const store = new KernelStore(root);
  const target = join(t.model, 'build_peano/prefill_kernel_cache');
  writeFileSync(join(target, 'manifest.json'), '{"entries": {"a": 1}}');
  writeFileSync(join(target, 'a.elf'), 'A');
  const key = 'ab'.repeat(16);
  assert.is(store.restore(key, target), null);
  assert.is(readFileSync(join(target, 'a.elf'), 'utf8'), 'A');
  const meta = store.store(key, target, { model: 'm', created_at: 'now', compile_seconds: 12.5 });
  assert.is(meta.bytes, 'A'.length + '{"entries": {"a": 1}}'.length);
  // The model dir is cleaned; a restore brings back exactly what was stored.
  writeFileSync(join(target, 'a.elf'), 'stale');
  writeFileSync(join(target, 'junk.o'), 'junk');
  const got = store.restore(key, target)!;
  assert.is(got.compile_seconds, 12.5);
  assert.equal(readdirSync(target).sort(), ['a.elf', 'manifest.json']);
  assert.is(readFileSync(join(target, 'a.elf'), 'utf8'), 'A');
  assert.not.ok(readdirSync(join(root, 'kernels')).some((n) => n.startsWith('.tmp')));
  // Storing the same key again keeps the first entry.
  writeFileSync(join(target, 'a.elf'), 'B');
  store.store(key, target, { model: 'm', created_at: 'later', compile_seconds: 1 });
  assert.is(store.meta(key)!.created_at, 'now');
});

test('gc drops the least recently used entries over the cap', () => {
  const t = tree();
  const root = mkdtempSync(join(tmpdir(), 'nbg-store-'));
  const src = join(t.model, 'build_peano/prefill_kernel_cache');
  writeFileSync(join(src, 'k.elf'), 'x'.repeat(100));
  const big = new KernelStore(root, 1e9);
  const keys = ['1', '2', '3'].map((c) => c.repeat(32));
  keys.forEach((k, i) => {
    big.store(k, src, { model: 'm', created_at: String(i), compile_seconds: null });
    const old = new Date(Date.now() - (10 - i) * 60_000);
    utimesSync(join(root, 'kernels', k, 'meta.json'), old, old);
  });
  big.restore(keys[0], join(t.model, 'restored')); // keys[0] becomes the most recent
  const dropped = new KernelStore(root, 250).gc();
  assert.equal(dropped, [keys[1]]);
  assert.ok(existsSync(join(root, 'kernels', keys[0])) && existsSync(join(root, 'kernels', keys[2])));
  assert.throws(() => big.meta('../etc'), /bad kernel cache key/);
});

test('the cache root honours NPU_BLOCK_GATE_CACHE_DIR, then XDG_CACHE_HOME', () => {
  assert.is(defaultCacheRoot({ NPU_BLOCK_GATE_CACHE_DIR: '/c' }), '/c');
  assert.is(defaultCacheRoot({ XDG_CACHE_HOME: '/x' }), '/x/npu-block-gate');
});

test.run();
