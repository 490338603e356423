// Skips that say why (issue 21). uvu has no skip a test can take at run time, and a test that
// printed a message and returned used to count as passed. Here a test that cannot run its
// precondition calls skip(need, why): the test ends, and one record (file, test, need, why) goes
// to $NPU_BLOCK_GATE_TEST_SKIPS, which scripts/test.mjs counts as skipped (not passed), prints one
// line for, and under CI=true fails when .ci/run provides the need. Without that variable (uvu run
// by hand) the line goes to stderr. Import `test` (or wrap a suite with `skippable`) from here in
// any file that skips; a skip() inside a plain uvu test fails that test instead of passing it.
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test as uvuTest } from 'uvu';
import type { Test } from 'uvu';
import { REPO } from './airmini.ts';

/**
 * What a test may lack (Python tests name theirs the same way: test/python/support.py `needs`).
 * .ci/run provides every one of them; `npm run test:fast` leaves out 'real-tree' and 'torch'.
 */
export type Need = 'real-tree' | 'torch' | 'ml_dtypes' | 'numpy' | 'python-without-transformers' | 'bwrap' | 'tmpfs' | 'uid' | 'native' | 'mkfifo' | 'stable-dir' | 'sudo' | 'chromium';

/** A precondition that does not hold here: what is missing and why. */
export interface Missing { need: Need; why: string }

export class Skipped extends Error {
  constructor(readonly need: Need, readonly why: string) {
    super(`skipped (needs ${need}): ${why} [a skip outside a test from test/helpers/skip.ts fails]`);
  }
}

/** Ends the running test as skipped. */
export function skip(need: Need, why: string): never;
export function skip(missing: Missing): never;
export function skip(a: Need | Missing, why?: string): never {
  const m = typeof a === 'string' ? { need: a, why: why! } : a;
  throw new Skipped(m.need, m.why);
}

/** One skip, where the runner counts it (or on stderr when uvu runs without the runner). */
export function recordSkip(file: string, name: string, m: Missing): void {
  const log = process.env.NPU_BLOCK_GATE_TEST_SKIPS;
  const rec = { lang: 'ts', file, test: name, need: m.need, why: m.why };
  if (log) appendFileSync(log, JSON.stringify(rec) + '\n');
  else console.error(`skip: ${file} > ${name}: needs ${m.need}: ${m.why}`);
}

/** The test file that called (the first frame under test/ that is not a helper). */
function callerFile(): string {
  for (const line of (new Error().stack ?? '').split('\n').slice(1)) {
    const m = /\(?((?:file:\/\/)?\/[^():]+\.test\.ts)(?::\d+)+\)?\s*$/.exec(line.trim());
    if (m) return relative(REPO, m[1].startsWith('file:') ? fileURLToPath(m[1]) : m[1]);
  }
  return '(unknown file)';
}

type Handler = Parameters<Test>[1];
export type SkippableTest = Test & {
  /** Registers a test that skips, saying why, when `missing` is set; else a plain test. */
  unless(missing: Missing | null): (name: string, fn: Handler) => void;
};

/** A uvu test (or suite) whose tests may call skip(), and `.unless(missing)` for a whole-test precondition. */
export function skippable(t: Test): SkippableTest {
  const wrap = (name: string, fn: Handler, file: string): Handler => async (ctx) => {
    const t0 = performance.now();
    try {
      await fn(ctx);
    } catch (e) {
      if (!(e instanceof Skipped)) throw e;
      recordSkip(file, name, e);
    } finally {
      // For keeping the fast tier fast: each test's seconds, on stderr.
      if (process.env.NPU_BLOCK_GATE_TEST_TIMES) console.error(`time: ${((performance.now() - t0) / 1000).toFixed(2)} s ${file} > ${name}`);
    }
  };
  const register = (name: string, fn: Handler) => t(name, wrap(name, fn, callerFile()));
  const unless = (missing: Missing | null) => (name: string, fn: Handler) => {
    const file = callerFile();
    t(name, wrap(name, missing ? () => skip(missing) : fn, file));
  };
  return Object.assign(register, t, { unless }) as SkippableTest;
}

export const test = skippable(uvuTest);
