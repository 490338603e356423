// The native addon's scanning threads (native/src/npu_block_gate.cc, Pool): started once and kept,
// never one per compare; many compares in a row, in parallel and after failures give the same
// numbers bit for bit; and a process that is done comparing exits on its own.
import { spawnSync } from 'node:child_process';
import { truncateSync, writeFileSync } from 'node:fs';
import { test, skip } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { InputError } from '../src/errors.ts';
import { compare, createAccumulator, jsKernel, type Kernel, type Metrics } from '../src/metrics/index.ts';
import { nativeCandidates, tryLoadNative, type NativeKernel } from '../src/metrics/native.ts';
import { openTensor } from '../src/tensor/index.ts';
import { npyBytes, npyHeader } from './helpers/bytes.ts';
import { tempDir } from './helpers/tmp.ts';

const loaded = tryLoadNative(nativeCandidates());
const native: NativeKernel | null = loaded.kernel;
const poolThreads = () => (native!.addon as unknown as { poolThreads(): number }).poolThreads();
function noNative(): never { return skip('native', `native addon unavailable (${loaded.reason})`); }

/** Every number identical (Object.is: NaN only against NaN, 0 and -0 apart); engine ignored. */
function same(a: Metrics, b: Metrics, what: string): void {
  const walk = (x: unknown, y: unknown, path: string): void => {
    if (path === '.engine') return;
    if (typeof x === 'number' || typeof y === 'number') {
      if (!Object.is(x, y)) assert.unreachable(`${what}: ${path} ${String(x)} != ${String(y)}`);
      return;
    }
    if (x && y && typeof x === 'object' && typeof y === 'object') {
      const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
      for (const k of keys) walk((x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k], `${path}.${k}`);
      return;
    }
    if (x !== y) assert.unreachable(`${what}: ${path} ${String(x)} != ${String(y)}`);
  };
  walk(a, b, '');
}

/** A pair of .npy files (f32, or bf16 stored <u2), rows x cols, with a NaN and an Inf in the NPU tensor. */
function writePair(dir: ReturnType<typeof tempDir>, name: string, dtype: 'f32' | 'bf16', rows: number, cols: number, seed: number) {
  let s = seed >>> 0;
  const rnd = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296);
  const n = rows * cols;
  const ref = new Float32Array(n);
  const npu = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    ref[i] = (rnd() - 0.5) * 8;
    npu[i] = ref[i] * (1 + (rnd() - 0.5) * 0.05);
  }
  npu[Math.floor(n / 3)] = NaN;
  npu[n - 5] = Infinity;
  const bytes = (x: Float32Array) => {
    if (dtype === 'f32') return new Uint8Array(x.buffer);
    const u = new Uint32Array(x.buffer);
    const h = new Uint16Array(n);
    for (let i = 0; i < n; i++) h[i] = u[i] >>> 16;
    return new Uint8Array(h.buffer);
  };
  const descr = dtype === 'f32' ? '<f4' : '<u2';
  const npuFile = dir.path(`${name}-npu.npy`);
  const refFile = dir.path(`${name}-ref.npy`);
  writeFileSync(npuFile, npyBytes(npyHeader(descr, [rows, cols]), bytes(npu)));
  writeFileSync(refFile, npyBytes(npyHeader(descr, [rows, cols]), bytes(ref)));
  return { npuFile, refFile };
}

async function run(pair: { npuFile: string; refFile: string }, k: Kernel): Promise<Metrics> {
  const a = openTensor(pair.npuFile, { u2IsBf16: true });
  const b = openTensor(pair.refFile, { u2IsBf16: true });
  try {
    return await compare(a, b, { threshold: 0.99, worstK: 3 }, k);
  } finally {
    a.close();
    b.close();
  }
}

test('native pool: the scanning threads start once; 60 compares in a row, in every mode, give the same numbers', async () => {
  if (!native) noNative();
  const dir = tempDir();
  try {
    // 600 x 1024 elements: several chunks per thread, so chunks are claimed dynamically.
    const pairs = [writePair(dir, 'f32', 'f32', 600, 1024, 1), writePair(dir, 'bf16', 'bf16', 600, 1024, 2)];
    const want = await Promise.all(pairs.map((p) => run(p, jsKernel)));
    const modes: Kernel[] = [native, native.tuned({ threads: 1 }), native.tuned({ threads: 3 }), native.tuned({ files: false, rawBlockBytes: 1 << 16 })];
    // The first round may start threads (up to the largest thread count asked for); no later one does.
    for (const [i, p] of pairs.entries()) for (const k of modes) same(want[i], await run(p, k), `first round, pair ${i}`);
    const started = poolThreads();
    assert.ok(started >= 3 && started <= 64, `pool threads ${started}`);
    for (let round = 0; round < 60; round++) {
      const i = round % 2;
      same(want[i], await run(pairs[i], modes[round % modes.length]), `round ${round}, pair ${i}`);
    }
    assert.is(poolThreads(), started, 'a compare started a thread');
  } finally {
    dir.cleanup();
  }
});

test('native pool: compares in flight at once give the numbers they give one at a time', async () => {
  if (!native) noNative();
  const dir = tempDir();
  try {
    const pairs = [writePair(dir, 'a', 'f32', 400, 900, 3), writePair(dir, 'b', 'bf16', 500, 1000, 4), writePair(dir, 'c', 'f32', 64, 4100, 5)];
    const one: Metrics[] = [];
    for (const p of pairs) one.push(await run(p, native));
    const started = poolThreads();
    const together = await Promise.all([...pairs, ...pairs, ...pairs].map((p) => run(p, native.tuned({ threads: 2 }))));
    together.forEach((m, i) => same(one[i % pairs.length], m, `concurrent compare ${i}`));
    assert.is(poolThreads(), started, 'a concurrent compare started a thread');
  } finally {
    dir.cleanup();
  }
});

test('native pool: after a failed read and bad arguments the threads still scan, with the same numbers', async () => {
  if (!native) noNative();
  const dir = tempDir();
  try {
    const good = writePair(dir, 'good', 'f32', 300, 1024, 6);
    const first = await run(good, native);
    for (let i = 0; i < 5; i++) {
      const bad = writePair(dir, `bad${i}`, 'f32', 300, 1024, 7 + i);
      const a = openTensor(bad.npuFile, { u2IsBf16: true });
      const b = openTensor(bad.refFile, { u2IsBf16: true });
      try {
        truncateSync(i % 2 ? bad.npuFile : bad.refFile, 4096); // shrinks under the open descriptor
        await compare(a, b, { threshold: 0.99 }, native.tuned({ threads: 1 + (i % 3) }));
        assert.unreachable('a truncated file compared');
      } catch (e) {
        assert.ok(e instanceof InputError, String(e));
        assert.match((e as Error).message, /read failed: the file ended early/);
      } finally {
        a.close();
        b.close();
      }
      const acc = createAccumulator(4, 2, 3);
      assert.throws(
        () => native.addon.scan(false, acc.rowDot, acc.rowA2, acc.rowB2, acc.sums, acc.nonFinite, new Uint8Array(8), 0, new Uint8Array(32), 0, 4, 0, 3, 2, 0),
        /npu block is shorter/,
      );
      same(first, await run(good, native), `compare after failure ${i}`);
    }
  } finally {
    dir.cleanup();
  }
});

test('native pool: a process that has compared exits by itself (its parked threads hold nothing open)', () => {
  if (!native) noNative();
  const dir = tempDir();
  try {
    const pair = writePair(dir, 'exit', 'f32', 256, 2048, 8);
    // Plain Node, the addon alone: scanFiles and a synchronous scan, then the script just ends.
    const script = dir.path('exit.mjs');
    writeFileSync(
      script,
      `import { createRequire } from 'node:module';\nimport { openSync } from 'node:fs';\n` +
        `const addon = createRequire(import.meta.url)(${JSON.stringify(native.path)});\n` +
        `const rows = 256, cols = 2048, f64 = (n) => new Float64Array(n);\n` +
        `const acc = () => [f64(rows), f64(rows), f64(rows), f64(9), f64(9)];\n` +
        `for (let i = 0; i < 5; i++) await addon.scanFiles(...acc(), openSync(${JSON.stringify(pair.npuFile)}, 'r'), 128, 0, openSync(${JSON.stringify(pair.refFile)}, 'r'), 128, 0, cols, rows, rows, 2);\n` +
        `addon.scan(true, ...acc(), new Uint8Array(rows * cols * 4), 0, new Uint8Array(rows * cols * 4), 0, cols, 0, rows, rows, 2);\n` +
        `process.stdout.write('compared with ' + addon.poolThreads() + ' threads\\n');\n`,
    );
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 });
    assert.is(r.signal, null, `the process did not exit by itself (killed by ${r.signal} after the timeout)`);
    assert.is(r.status, 0, r.stderr);
    assert.match(r.stdout, /^compared with \d+ threads$/m, `stdout: ${r.stdout} stderr: ${r.stderr}`);
  } finally {
    dir.cleanup();
  }
});

test.run();
