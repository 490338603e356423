// The reference cache across the trust boundary: the probe (which imports the model tree's code)
// only reads it and records its key; this side stores an entry after a trusted verdict; the next
// probe run hits it. Nothing the probe wrote decides where an entry goes.
import { test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { storeReference } from '../src/cache/reference.ts';
import type { ProbeJson } from '../src/rundir/schema.ts';
import { copyAirMini, REPO } from './helpers/airmini.ts';
import { findNumpyPython } from './helpers/python.ts';
import { missingTwins, twinsTree } from './helpers/twins.ts';

const tree = copyAirMini();
const root = mkdtempSync(join(tmpdir(), 'nbg-refcache-'));
let n = 0;

function block(extra: string[] = [], model = 'tiny_qwen3'): { dir: string; p: ProbeJson } {
  const dir = join(tmpdir(), `nbg-refrun-${process.pid}-${n++}`);
  const r = spawnSync(findNumpyPython()!, [join(REPO, 'scripts/probe'), 'block', '--model-dir', tree.model(model), '--out', dir,
    '--ref-cache', root, '--npu-lock', 'none', ...extra], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  return { dir, p: JSON.parse(readFileSync(join(dir, 'probe.json'), 'utf8')) };
}

test('a miss is stored by the trusted side and hit by the next probe run', () => {
  const cold = block();
  const rec = cold.p.reference.cache!;
  assert.is(rec.hit, false);
  assert.not.ok(existsSync(root) && readdirSync(root).length, 'the probe wrote nothing');
  const out = storeReference(root, cold.dir, cold.p);
  assert.ok(out.stored, JSON.stringify(out));
  // air-mini's reference gives the lens's HF side too (its layer-0 record): the entry holds it.
  const names = cold.p.boundaries!.entries.map((e) => e.name);
  assert.ok(names.length >= 8, `${names}`);
  assert.equal(readdirSync(join(root, rec.key)).sort(), ['layer_00.npy', 'meta.json', ...names.map((n) => `boundary_${n}.npy`)].sort());
  const warm = block();
  assert.is(warm.p.reference.cache!.hit, true);
  assert.ok(readFileSync(join(warm.dir, 'block0.ref.npy')).equals(readFileSync(join(cold.dir, 'block0.ref.npy'))));
  // A hit is never stored again.
  assert.equal(storeReference(root, warm.dir, warm.p), { stored: false, why: 'hit: already stored' });
});

test('--layers: every reference layer is stored and hit', () => {
  const cold = block(['--layers'], 'tiny_llama'); // 3 layers: layers 0 and 1 have a block output
  const out = storeReference(root, cold.dir, cold.p);
  assert.equal({ ...out, boundaries: undefined }, { stored: true, dir: join(root, cold.p.reference.cache!.key), layers: [0, 1], boundaries: undefined });
  assert.equal([...(out as { boundaries?: string[] }).boundaries ?? []].sort(), cold.p.boundaries!.entries.map((e) => e.name).sort());
  const warm = block(['--layers'], 'tiny_llama');
  assert.is(warm.p.reference.cache!.hit, true);
  for (const e of warm.p.layers!.entries) assert.ok(readFileSync(join(warm.dir, e.ref.file)).equals(readFileSync(join(cold.dir, e.ref.file))));
});

test('a broken entry the probe refused is replaced; a record naming no real key is refused', () => {
  const first = block(['--prompt', 'replace me please']);
  assert.ok(storeReference(root, first.dir, first.p).stored);
  const entry = join(root, first.p.reference.cache!.key);
  writeFileSync(join(entry, 'layer_00.npy'), 'not an npy');
  const again = block(['--prompt', 'replace me please']);
  assert.is(again.p.reference.cache!.hit, false);
  assert.ok(storeReference(root, again.dir, again.p).stored);
  assert.is(readFileSync(join(entry, 'layer_00.npy')).subarray(1, 6).toString('latin1'), 'NUMPY');
  const forged = structuredClone(again.p);
  forged.reference.cache = { ...forged.reference.cache!, key: '../../etc' };
  assert.equal(storeReference(root, again.dir, forged), { stored: false, why: 'the recorded key is not a cache key' });
});

// The lens on a real HF reference: the key covers the HF side of every boundary, so a hit must
// bring them back (probe_refcache.load_boundaries), and the trusted side stores them.
test.unless(missingTwins())('with the lens on an HF reference: the boundaries are stored by the trusted side and a second probe run hits them', () => {
  const t = twinsTree(['llama']);
  const bRoot = mkdtempSync(join(tmpdir(), 'nbg-refcache-b-'));
  const run = () => {
    const dir = join(tmpdir(), `nbg-refrun-b-${process.pid}-${n++}`);
    const r = spawnSync(t.python, [join(REPO, 'scripts/probe'), 'block', '--model-dir', t.model('llama32_1b'), '--out', dir, '--ref-cache', bRoot,
      '--npu-lock', 'none', '--emulate', '--hf-model', t.hfId('llama32_1b'), '--prompt-style', 'instruct', '--seq-len', '64'],
    { encoding: 'utf8', env: { ...process.env, ...t.env } });
    assert.is(r.status, 0, r.stderr.slice(-3000));
    return { dir, p: JSON.parse(readFileSync(join(dir, 'probe.json'), 'utf8')) as ProbeJson };
  };
  const cold = run();
  const rec = cold.p.reference.cache! as ProbeJson['reference']['cache'] & { inputs: { boundaries?: string } };
  assert.is(rec.hit, false);
  assert.is(rec.inputs.boundaries, 'hf-layer0-hooks/1', 'the key covers the boundaries');
  const names = cold.p.boundaries!.entries.map((e) => e.name);
  assert.ok(names.length >= 16 && names.includes('q_roped'), names.join(','));
  const out = storeReference(bRoot, cold.dir, cold.p);
  assert.ok(out.stored, JSON.stringify(out));
  // ... with the error budget's FP32 side of each boundary beside it (fp32.<name>)
  assert.ok(cold.p.boundaries!.entries.every((e) => e.fp32), 'the cold run measured FP32 at every boundary');
  const stored = [...names, ...names.map((x) => `fp32.${x}`)];
  assert.equal(out.stored && [...out.boundaries!].sort(), [...stored].sort());
  const entry = join(bRoot, rec.key);
  assert.equal([...JSON.parse(readFileSync(join(entry, 'meta.json'), 'utf8')).stored_boundaries].sort(), [...stored].sort());
  assert.equal(readdirSync(entry).sort(), ['layer_00.npy', 'meta.json', ...stored.map((x) => `boundary_${x}.npy`)].sort());
  const warm = run();
  assert.is(warm.p.reference.cache!.hit, true, 'the second probe run hits');
  assert.equal(warm.p.boundaries!.unpaired, [], 'every boundary has its HF side from the cache');
  for (const e of warm.p.boundaries!.entries) {
    const c = cold.p.boundaries!.entries.find((x) => x.name === e.name)!;
    assert.ok(readFileSync(join(warm.dir, e.ref.file)).equals(readFileSync(join(cold.dir, c.ref.file))), e.name);
    assert.ok(e.fp32 && readFileSync(join(warm.dir, e.fp32.file)).equals(readFileSync(join(cold.dir, c.fp32!.file))), `${e.name} (FP32 side, from the cache)`);
  }
  assert.equal(storeReference(bRoot, warm.dir, warm.p), { stored: false, why: 'hit: already stored' });
  // An entry stored without its boundaries (an older npu-block-gate) is a miss for the lens, and is replaced.
  const meta = JSON.parse(readFileSync(join(entry, 'meta.json'), 'utf8'));
  delete meta.stored_boundaries;
  writeFileSync(join(entry, 'meta.json'), JSON.stringify(meta));
  const again = run();
  assert.is(again.p.reference.cache!.hit, false);
  assert.ok(storeReference(bRoot, again.dir, again.p).stored);
});

test.run();
