// One contract file, read by both sides: scripts/probe/contract.json. These tests hold the
// TypeScript side to it, compare the probe.json key declarations of both languages, and run the
// real probe to check that what it writes is all declared.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { EXIT } from '../src/errors.ts';
import { PROBE_SCHEMA, PROBE_SCHEMA_VERSION, RUN_FILES, PROBE_KEYS, undeclaredKeys } from '../src/rundir/schema.ts';
import { BISECT_FILE, BISECT_METHODS, BISECT_SCHEMA, BISECT_SCHEMA_VERSION } from '../src/bisect/types.ts';
import { DEFAULT_NPU_LOCK, DEFAULT_WAIT_SECONDS } from '../src/agent/lock.ts';
import { findNumpyPython, runPython } from './helpers/python.ts';
import { readProbeJson } from '../src/rundir/read.ts';
import { INJECTIONS } from '../src/plan.ts';
import { copyAirMini } from './helpers/airmini.ts';

const contract = JSON.parse(readFileSync(new URL('../scripts/probe/contract.json', import.meta.url), 'utf8'));
const probeDir = new URL('../scripts/probe', import.meta.url).pathname;

test('TypeScript constants are the contract file\'s', () => {
  assert.equal({ ...EXIT }, { pass: contract.exit.ok, fail: contract.exit.fail, input: contract.exit.input, infra: contract.exit.infra });
  assert.is(PROBE_SCHEMA, contract.probe.schema);
  assert.is(PROBE_SCHEMA_VERSION, contract.probe.version);
  assert.equal({ ...RUN_FILES }, contract.run_files);
  assert.is(BISECT_SCHEMA, contract.bisect.schema);
  assert.is(BISECT_SCHEMA_VERSION, contract.bisect.version);
  assert.is(BISECT_FILE, `${contract.bisect.dir}/${contract.bisect.json}`);
  assert.is(DEFAULT_NPU_LOCK, contract.npu_lock.path);
  assert.is(DEFAULT_WAIT_SECONDS, contract.npu_lock.timeout_seconds);
  assert.equal([...INJECTIONS], contract.emulate.inject);
  assert.equal([...BISECT_METHODS], contract.bisect.methods);
});

test('both sides declare the same probe.json keys', () => {
  const py = runPython(`import sys, json; sys.path.insert(0, ${JSON.stringify(probeDir)}); from npu_probe.core import contract; print(json.dumps(contract.PROBE_KEYS))`);
  assert.equal(JSON.parse(py), PROBE_KEYS);
});

test('undeclaredKeys names an unknown key at any depth', () => {
  assert.equal(undeclaredKeys({ schema: 1, model: { name: 'm', colour: 'red' }, extra: 1 }), ['model.colour', 'extra']);
  assert.equal(undeclaredKeys({ timings: { anything: 1 }, model: { config: { free: 1 } } }), []);
});

test('a real probe run writes only declared keys (air-mini, config and block stages)', () => {
  const py = findNumpyPython();
  assert.ok(py, 'a Python with numpy');
  const tree = copyAirMini();
  for (const stage of ['config', 'block']) {
    const out = mkdtempSync(join(tmpdir(), 'nbg-contract-'));
    const r = spawnSync(py!, [probeDir, stage, '--model-dir', tree.model('tiny_qwen25'), '--out', out, ...(stage === 'block' ? ['--ref-cache', 'none', '--npu-lock', 'none', '--layers'] : [])], { encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    const doc = JSON.parse(readFileSync(join(out, RUN_FILES.probe), 'utf8'));
    assert.equal(undeclaredKeys(doc), [], `${stage}: undeclared keys`);
    assert.is(doc.stage, stage);
  }
});

test('what the probe writes for the lens and --positions passes the typed schema (boundaries, prompt.positions)', () => {
  const tree = copyAirMini();
  const out = mkdtempSync(join(tmpdir(), 'nbg-contract-'));
  const r = spawnSync(findNumpyPython()!, [probeDir, 'block', '--model-dir', tree.model('tiny_llama'), '--out', out, '--ref-cache', 'none', '--npu-lock', 'none', '--positions', '40'], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  const p = readProbeJson(out);
  assert.is(p.prompt.positions!.real_len, 40);
  assert.is(p.prompt.real_len, 40);
  assert.ok(p.boundaries, 'the lens record');
  assert.equal(p.boundaries!.entries, [], 'air-mini: an emulated reference has no HF side to pair');
  assert.ok(p.boundaries!.unpaired.length > 0);
  assert.is(p.emulate, null);
});

test.run();
