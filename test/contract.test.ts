// The TypeScript side's behaviour against scripts/probe/contract.json, and against the real probe
// where both sides meet (test/python/test_contract.py holds the probe to the same file): the
// exit codes this side reads, the run-dir files it opens, the probe.json keys its reader refuses
// and that both languages declare, the HF hub cache and offline state it finds.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { EXIT, InputError } from '../src/errors.ts';
import { RUN_FILES, PROBE_KEYS, undeclaredKeys } from '../src/rundir/schema.ts';
import { PROBE_SPEC, keyDrift } from '../src/rundir/probe-spec.ts';
import { keyTree } from '../src/rundir/spec.ts';
import { BISECT_FILE, BISECT_METHODS, BISECT_SCHEMA, BISECT_SCHEMA_VERSION } from '../src/rundir/bisect-spec.ts';
import { DEFAULT_NPU_LOCK, DEFAULT_WAIT_SECONDS } from '../src/agent/lock.ts';
import { CONTRACT, hfHubCache, hfOffline, hfOfflineEnv } from '../src/contract.ts';
import { findNumpyPython, runPython } from './helpers/python.ts';
import { readProbeJson } from '../src/rundir/read.ts';
import { INJECTIONS } from '../src/plan.ts';
import { copyAirMini } from './helpers/airmini.ts';

const contract = JSON.parse(readFileSync(new URL('../scripts/probe/contract.json', import.meta.url), 'utf8'));
const probeDir = new URL('../scripts/probe', import.meta.url).pathname;

// One real run (air-mini: block with --layers, then bisect), shared by the tests below.
const tree = copyAirMini();
const runDir = mkdtempSync(join(tmpdir(), 'nbg-contract-'));
const probe = (...args: string[]) => spawnSync(findNumpyPython()!, [probeDir, ...args], { encoding: 'utf8' });
const block = probe('block', '--model-dir', tree.model('tiny_qwen25'), '--out', runDir, '--ref-cache', 'none', '--npu-lock', 'none', '--layers');
const bisect = probe('bisect', '--run-dir', runDir, '--npu-lock', 'none');

test('the probe\'s exit codes are the ones this side reads', () => {
  assert.is(block.status, EXIT.pass, block.stderr);
  assert.is(bisect.status, EXIT.pass, bisect.stderr);
  const bad = probe('block', '--model-dir', join(tree.root, 'no-such-model'), '--out', join(runDir, 'x'));
  assert.is(bad.status, EXIT.input, bad.stderr);
  assert.is(new InputError('x').exitCode, bad.status);
  assert.equal({ ...EXIT }, { pass: contract.exit.ok, fail: contract.exit.fail, input: contract.exit.input, infra: contract.exit.infra });
});

test('the run dir holds the files this side opens, and readProbeJson reads them', () => {
  for (const f of [RUN_FILES.probe, RUN_FILES.npu, RUN_FILES.ref, RUN_FILES.input, RUN_FILES.probeLog, BISECT_FILE]) {
    assert.ok(existsSync(join(runDir, f)), f);
  }
  const p = readProbeJson(runDir);
  assert.is(p.stage, 'block');
  assert.is(p.layers!.entries.length, 1);
  const b = JSON.parse(readFileSync(join(runDir, BISECT_FILE), 'utf8'));
  assert.equal([b.schema, b.schema_version], [BISECT_SCHEMA, BISECT_SCHEMA_VERSION]);
  assert.ok(BISECT_METHODS.includes(b.method), b.method);
});

test('the probe writes only declared keys, in the declared order', () => {
  const doc = JSON.parse(readFileSync(join(runDir, RUN_FILES.probe), 'utf8'));
  assert.equal(undeclaredKeys(doc), []);
  assert.equal(Object.keys(doc), Object.keys(contract.probe.keys).filter((k) => k in doc));
});

/** Every declared nested object's path (top level first). */
function objectPaths(decl: Record<string, unknown>, prefix: string[] = []): string[][] {
  const out = [prefix];
  for (const [k, v] of Object.entries(decl)) if (v && typeof v === 'object') out.push(...objectPaths(v as Record<string, unknown>, [...prefix, k]));
  return out;
}

test('the reader refuses a key the contract does not declare, at every declared object the run holds', () => {
  const doc = JSON.parse(readFileSync(join(runDir, RUN_FILES.probe), 'utf8'));
  let tried = 0;
  const absent: string[] = [];
  for (const path of objectPaths(contract.probe.keys)) {
    const copy = structuredClone(doc);
    let obj = copy;
    for (const k of path) obj = obj?.[k];
    if (!obj || typeof obj !== 'object') {
      absent.push(path.join('.'));
      continue;
    }
    obj.not_in_the_contract = 1;
    const dir = mkdtempSync(join(tmpdir(), 'nbg-contract-key-'));
    writeFileSync(join(dir, RUN_FILES.probe), JSON.stringify(copy));
    const field = [...path, 'not_in_the_contract'].join('.');
    assert.throws(() => readProbeJson(dir), (e: unknown) => e instanceof InputError && (e as Error).message.includes(field), field);
    tried++;
  }
  assert.equal(absent, ['emulate'], 'only emulate is null in this run (no --emulate)');
  assert.is(tried, objectPaths(contract.probe.keys).length - 1);
});

test('this side types exactly the contract\'s probe.json keys (else probe-spec.ts refuses to load)', () => {
  assert.equal(keyDrift(keyTree(PROBE_SPEC), contract.probe.keys), []);
  assert.equal(PROBE_KEYS, contract.probe.keys);
  // And what keyDrift finds when the two sides do differ:
  assert.equal(keyDrift({ a: null, b: { c: null }, d: { e: null } }, { a: null, b: { x: null }, d: null, f: null }), [
    'contract: f', 'spec: b.c', 'contract: b.x', 'spec: d.* (an object there, a leaf on the other side)',
  ]);
});

test('the Python builder and this reader agree on a key added to one side only', () => {
  // probe_json() refuses a key the contract lacks; undeclaredKeys names the same one.
  const out = runPython(`import sys, json; sys.path.insert(0, ${JSON.stringify(probeDir)})
from npu_probe.core.contract import probe_json
try:
    probe_json(stage="block", model={"name": "m", "colour": "red"})
    print(json.dumps("accepted"))
except KeyError as exc:
    print(json.dumps(str(exc)))`);
  assert.match(JSON.parse(out), /undeclared keys \['model\.colour'\]/);
  assert.equal(undeclaredKeys({ stage: 'block', model: { name: 'm', colour: 'red' } }), ['model.colour']);
});

const HF_CASES: Record<string, string>[] = [
  {}, { HF_HOME: '/hf' }, { XDG_CACHE_HOME: '/xdg' }, { HF_HOME: '/hf', XDG_CACHE_HOME: '/xdg' },
  { HUGGINGFACE_HUB_CACHE: '/old' }, { HF_HUB_CACHE: '/hub', HUGGINGFACE_HUB_CACHE: '/old', HF_HOME: '/hf' },
  { HF_HUB_OFFLINE: '1' }, { TRANSFORMERS_OFFLINE: 'yes' }, { HF_HUB_OFFLINE: '0' }, { HF_HUB_OFFLINE: 'True' },
];

test('this side and the probe find the same HF hub cache and offline state', () => {
  const home = '/home/runner';
  const py = JSON.parse(runPython(`import sys, json; sys.path.insert(0, ${JSON.stringify(probeDir)})
from npu_probe.core import hfhub
cases = json.loads(sys.stdin.read())
print(json.dumps([[hfhub.hub_dir(dict(c, HOME=${JSON.stringify(home)})), hfhub.is_offline(c)] for c in cases]))`, [], JSON.stringify(HF_CASES)));
  assert.equal(HF_CASES.map((c) => [hfHubCache(c, home), hfOffline(c)]), py);
  assert.is(hfHubCache({}, home), join(home, '.cache', 'huggingface', 'hub'));
  assert.ok(hfOffline(hfOfflineEnv()));
});

test('the rest of the shared constants: lock, injections', () => {
  assert.is(DEFAULT_NPU_LOCK, contract.npu_lock.path);
  assert.is(DEFAULT_WAIT_SECONDS, contract.npu_lock.timeout_seconds);
  assert.equal([...INJECTIONS], contract.emulate.inject);
});

test('what the probe writes for the lens and --positions passes the typed schema (boundaries, prompt.positions)', () => {
  const out = mkdtempSync(join(tmpdir(), 'nbg-contract-'));
  const r = probe('block', '--model-dir', tree.model('tiny_llama'), '--out', out, '--ref-cache', 'none', '--npu-lock', 'none', '--positions', '40');
  assert.is(r.status, 0, r.stderr);
  const p = readProbeJson(out);
  assert.is(p.prompt.positions!.real_len, 40);
  assert.is(p.prompt.real_len, 40);
  assert.ok(p.boundaries, 'the lens record');
  // air-mini: the block returns every boundary and the emulated reference's record holds its HF side.
  assert.ok(p.boundaries!.entries.length >= 8, `${p.boundaries!.entries.length} pairs`);
  assert.equal(p.boundaries!.unpaired, []);
  assert.is(p.boundaries!.reference, CONTRACT.boundaries.record_capture);
  for (const e of p.boundaries!.entries) assert.equal(e.npu.shape, [40, e.npu.shape[1]]);
  assert.is(p.emulate, null);
});

test.run();
