// The tensor-file fuzzer, short and seeded (the long run is `npm run fuzz`, see bench/fuzz.ts):
// mutated .npy, .npz and .safetensors files through the readers, the reference check and each
// engine. Every case must be judged or refused as bad input in one line naming the file; a thrown
// error of any other kind, a worker that dies, or a case that never finishes fails the test.
// No timing or memory assertions here (figures: npm run fuzz).
import { test, skip } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { fuzz, makeCase, type FuzzSummary } from './helpers/fuzz.ts';
import { selectEngine } from '../src/metrics/index.ts';

const CASES = Number(process.env.NPU_BLOCK_GATE_FUZZ_CASES ?? 450);
const SEED = Number(process.env.NPU_BLOCK_GATE_FUZZ_SEED ?? 20261201);

function nativeAvailable(): boolean {
  try {
    selectEngine({ NPU_BLOCK_GATE_ENGINE: 'native' });
    return true;
  } catch {
    return false;
  }
}

function clean(s: FuzzSummary): void {
  const what = [...s.crashes.map((c) => `crash at case ${c.index} (${c.format}; ${c.mutations.join(', ')}): ${c.message}`), ...s.hangs.map((h) => `hang at case ${h.index}`)];
  assert.equal(what, [], `seed ${s.seed}, ${s.engine}`);
  assert.is(s.ok + s.input, s.cases);
  assert.ok(s.ok > 0 && s.input > 0, `${s.ok} judged, ${s.input} refused: both paths exercised`);
}

test('cases are a pure function of (seed, index), and cover every format', () => {
  const a = makeCase(SEED, 17);
  const b = makeCase(SEED, 17);
  assert.ok(a.bytes.equals(b.bytes));
  assert.equal(new Set([0, 1, 2].map((i) => makeCase(SEED, i).format)), new Set(['npy', 'npz', 'safetensors']));
});

test(`fuzz, TypeScript engine: ${CASES} mutated files (seed ${SEED}), no crash, no hang`, async () => {
  clean(await fuzz({ seed: SEED, cases: CASES, engine: 'js' }));
});

test(`fuzz, native engine: ${CASES} mutated files (seed ${SEED}), no crash, no hang`, async () => {
  if (!nativeAvailable()) skip('native', 'the native addon is not built here; npm run build:native');
  clean(await fuzz({ seed: SEED, cases: CASES, engine: 'native' }));
});

test('the watchdog sees a hang and a worker killed by a signal, and carries on past them', async () => {
  // Case 2 never ends (by construction: it awaits a promise nothing resolves); every other case is
  // judged without any work (instant by construction), and a worker's start is not timed. So the
  // bar can be generous and the outcome cannot depend on how loaded the machine is: only the case
  // that never ends can reach it.
  const hang = await fuzz({ seed: SEED, cases: 6, engine: 'js', hangSeconds: 8, env: { NPU_BLOCK_GATE_FUZZ_SELFTEST: 'hang:2;instant' } });
  assert.equal(hang.hangs.map((h) => h.index), [2]);
  assert.equal(hang.crashes, []);
  assert.is(hang.ok + hang.input, 5);
  const abort = await fuzz({ seed: SEED, cases: 6, engine: 'js', hangSeconds: 600, env: { NPU_BLOCK_GATE_FUZZ_SELFTEST: 'abort:4;instant' } });
  assert.equal(abort.crashes.map((c) => [c.index, /worker died \(signal\)/.test(c.message)]), [[4, true]]);
  assert.equal(abort.hangs, []);
  assert.is(abort.ok + abort.input, 5);
});

test('the watchdog without a hang: a worker slower to start than the bar, then instant cases, is never a hang', async () => {
  // The worker sleeps 6 s before its first case (a slow tsx start), the bar is 4 s: the start is not timed.
  const s = await fuzz({ seed: SEED, cases: 4, engine: 'js', hangSeconds: 4, env: { NPU_BLOCK_GATE_FUZZ_SELFTEST: 'none;instant;slowstart:6' } });
  assert.equal([s.hangs, s.crashes, s.ok], [[], [], 4]);
});

test.run();
