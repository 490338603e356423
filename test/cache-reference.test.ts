// The reference cache across the trust boundary: the probe (which imports the model tree's code)
// only reads it and records its key; this side stores an entry after a trusted verdict; the next
// probe run hits it. Nothing the probe wrote decides where an entry goes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { storeReference } from '../src/cache/reference.ts';
import type { ProbeJson } from '../src/rundir/schema.ts';
import { copyAirMini, REPO } from './helpers/airmini.ts';
import { findNumpyPython } from './helpers/python.ts';

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
  assert.equal(readdirSync(join(root, rec.key)).sort(), ['layer_00.npy', 'meta.json']);
  const warm = block();
  assert.is(warm.p.reference.cache!.hit, true);
  assert.ok(readFileSync(join(warm.dir, 'block0.ref.npy')).equals(readFileSync(join(cold.dir, 'block0.ref.npy'))));
  // A hit is never stored again.
  assert.equal(storeReference(root, warm.dir, warm.p), { stored: false, why: 'hit: already stored' });
});

test('--layers: every reference layer is stored and hit', () => {
  const cold = block(['--layers'], 'tiny_llama'); // 3 layers: layers 0 and 1 have a block output
  const out = storeReference(root, cold.dir, cold.p);
  assert.equal(out, { stored: true, dir: join(root, cold.p.reference.cache!.key), layers: [0, 1] });
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

test.run();
