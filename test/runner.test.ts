// The test loop itself (scripts/test.mjs and its workers): a skipped test is counted as skipped,
// never as passed, in both languages; under CI a skip of what .ci/run provides is a failure;
// test:fast leaves out what needs torch or the real tree; a file that does not load is a failure.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './helpers/airmini.ts';
import { findNumpyPython } from './helpers/python.ts';
import { tempDir } from './helpers/tmp.ts';
// @ts-expect-error: a plain .mjs module of the runner, no types
import { tally, uvuCounts, PROVIDED } from '../scripts/test/tally.mjs';

interface SkipRecord { lang: string; file: string; test: string; need: string; why: string }
const rec = (lang: string, need: string, name = 't'): SkipRecord => ({ lang, file: `f.${lang}`, test: name, need, why: 'because' });

test('tally: skips leave passed, print one line each, and under CI fail when .ci/run provides the need', () => {
  const records = [rec('ts', 'tmpfs', 'a'), rec('py', 'real-tree', 'b')];
  // uvu counted the TypeScript skip as passed (10 = 9 + 1); the Python count never holds skips.
  let t = tally({ passed: 10 + 5, failed: 0, records });
  assert.is(t.closing, '14 passed, 0 failed, 2 skipped');
  assert.equal(t.lines, ['skip: f.ts > a: needs tmpfs: because', 'skip: f.py > b: needs real-tree: because']);
  t = tally({ passed: 15, failed: 0, records, ci: true });
  assert.is(t.closing, '14 passed, 2 failed, 0 skipped');
  assert.match(t.lines[0], /^FAIL \(CI provides it\) skip: f\.ts > a/);
  // A need CI cannot provide stays a skip under CI; a skip that names no need fails there.
  assert.not.ok(PROVIDED.has('unknown'));
  assert.is(tally({ passed: 1, failed: 0, records: [rec('py', 'python-without-numpy')], ci: true }).closing, '1 passed, 0 failed, 1 skipped');
  t = tally({ passed: 1, failed: 0, records: [rec('py', 'unknown')], ci: true });
  assert.is(t.closing, '1 passed, 1 failed, 0 skipped');
  assert.match(t.lines[0], /^FAIL \(CI: the skip names no need\) skip: f\.py > t: needs unknown/);
  assert.is(tally({ passed: 1, failed: 0, records: [rec('py', 'unknown')] }).closing, '1 passed, 0 failed, 1 skipped', 'outside CI it is a skip');
});

test('tally: test:fast leaves out what needs torch or the real tree, in one line; other skips still count', () => {
  const t = tally({ passed: 20, failed: 1, records: [rec('ts', 'torch'), rec('py', 'real-tree'), rec('py', 'bwrap')], fast: true });
  assert.is(t.closing, '19 passed, 1 failed, 1 skipped');
  assert.equal(t.lines, ['skip: f.py > t: needs bwrap: because', 'test:fast left out 2 tests that need torch or the real mlir-air tree (npm test runs them)']);
});

test('tally: uvu\'s test.skip is a skip without a reason, a failure under CI; a crashed job is a failure', () => {
  assert.is(tally({ passed: 3, failed: 0, nativeSkips: 2, records: [] }).closing, '3 passed, 0 failed, 2 skipped');
  assert.is(tally({ passed: 3, failed: 0, nativeSkips: 2, records: [], ci: true }).closing, '3 passed, 2 failed, 0 skipped');
  assert.is(tally({ passed: 3, failed: 0, records: [], broken: 1 }).closing, '3 passed, 1 failed, 0 skipped');
});

test('uvuCounts reads uvu\'s coloured totals and the load errors', () => {
  const out = '\n  Total:     8\x1b[32m\n  Passed:    7\x1b[39m\n  Skipped:   \x1b[33m1\x1b[39m\n  Duration:  3.00ms\n\n  Load errors: 1\n';
  assert.equal(uvuCounts(out), { total: 8, passed: 7, nativeSkips: 1, loadErrors: 1 });
  assert.is(uvuCounts('a crash, no totals'), null);
});

test('the uvu worker: skip() and test.unless() are recorded as skips (not passes), a failure fails, a file that does not load is counted', () => {
  const tmp = tempDir('nbg-runner-');
  try {
    const skips = tmp.path('skips.jsonl');
    writeFileSync(skips, '');
    const file = tmp.path('sample.test.ts');
    writeFileSync(file, `
import { test, skip } from ${JSON.stringify(join(REPO, 'test/helpers/skip.ts'))};
test('passes', () => {});
test('skips inside', () => { skip('tmpfs', 'no tmpfs here'); });
test.unless({ need: 'bwrap', why: 'no bubblewrap' })('skips outright', () => { throw new Error('never runs'); });
test.unless(null)('runs when nothing is missing', () => {});
test('fails', () => { throw new Error('1 is not 2'); });
test.run();
`);
    const broken = tmp.path('broken.test.ts');
    writeFileSync(broken, 'throw new Error("cannot load");\n');
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(REPO, 'scripts/test/uvu.mjs'), file, broken],
      { cwd: REPO, encoding: 'utf8', env: { ...process.env, NPU_BLOCK_GATE_TEST_SKIPS: skips } });
    assert.is(r.status, 1);
    assert.equal(uvuCounts(r.stdout), { total: 5, passed: 4, nativeSkips: 0, loadErrors: 1 });
    assert.match(r.stderr, 'broken.test.ts failed to load');
    const records = readFileSync(skips, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(records.map((x) => [x.test, x.need, x.why]), [['skips inside', 'tmpfs', 'no tmpfs here'], ['skips outright', 'bwrap', 'no bubblewrap']]);
    // 4 "passed" by uvu, 2 of them skips: 2 passed, 2 failed (one test, one file), 2 skipped.
    assert.is(tally({ passed: 4, failed: 1 + 1, records }).closing, '2 passed, 2 failed, 2 skipped');
  } finally {
    tmp.cleanup();
  }
});

test('the Python worker: skips are counted apart and recorded with their need; a test is failed once however many subtests fail', () => {
  const py = findNumpyPython();
  assert.ok(py, 'a Python with numpy');
  const tmp = tempDir('nbg-runner-py-');
  try {
    mkdirSync(tmp.path('pkg'));
    writeFileSync(tmp.path('pkg/__init__.py'), '');
    writeFileSync(tmp.path('pkg/test_sample.py'), `
import unittest
from test.python.support import needs

class T(unittest.TestCase):
    def test_passes(self):
        pass

    def test_skips(self):
        self.skipTest(needs("torch", "no torch here"))

    def test_skips_for_ml_dtypes(self):
        self.skipTest(needs("ml_dtypes", "no ml_dtypes here"))

    @unittest.skip("an old-style reason")
    def test_skips_without_need(self):
        pass

    def test_fails_twice(self):
        for i in range(2):
            with self.subTest(i=i):
                self.fail("no")

@unittest.skipIf(True, needs("real-tree", "no tree"))
class Whole(unittest.TestCase):
    def test_a(self):
        pass

    def test_b(self):
        pass
`);
    const skips = tmp.path('skips.jsonl');
    const summary = tmp.path('summary.json');
    const r = spawnSync(py!, [join(REPO, 'scripts/test/pyunit.py'), summary, 'pkg.test_sample'],
      { cwd: REPO, encoding: 'utf8', env: { ...process.env, PYTHONPATH: `${tmp.dir}:${REPO}`, NPU_BLOCK_GATE_TEST_SKIPS: skips, PYTHONDONTWRITEBYTECODE: '1' } });
    assert.is(r.status, 1, r.stderr);
    assert.equal(JSON.parse(readFileSync(summary, 'utf8')), { passed: 1, failed: 1, skipped: 5 });
    const records = readFileSync(skips, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(records.map((x) => [x.test.split('.').pop(), x.need, x.why]).sort(), [
      ['test_a', 'real-tree', 'no tree'], ['test_b', 'real-tree', 'no tree'],
      ['test_skips', 'torch', 'no torch here'], ['test_skips_for_ml_dtypes', 'ml_dtypes', 'no ml_dtypes here'], ['test_skips_without_need', 'unknown', 'an old-style reason'],
    ]);
  } finally {
    tmp.cleanup();
  }
});

test.run();
