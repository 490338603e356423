// The counting of scripts/test.mjs, pure (test/runner.test.ts tests it): what a uvu job printed,
// and the closing numbers from the jobs' counts and the skip records.

/** What .ci/run provides, so that under CI a test skipping for want of it fails (see test/helpers/skip.ts). */
export const PROVIDED = new Set(['real-tree', 'torch', 'ml_dtypes', 'numpy', 'python-without-transformers', 'bwrap', 'tmpfs', 'uid', 'native', 'mkfifo', 'stable-dir', 'sudo', 'chromium']);
/** Needs a test may name that .ci/run does not provide (a host where no Python lacks numpy, say):
 * under CI they stay skips. Any other need (pyunit.py's "unknown": a reason without "needs <need>: ")
 * fails under CI. */
export const KNOWN_UNPROVIDED = new Set(['python-without-numpy']);
/** What `npm run test:fast` leaves out. */
export const SLOW = new Set(['real-tree', 'torch']);

/** uvu's totals (scripts/test/uvu.mjs adds "Load errors"), or null when it printed none. */
export function uvuCounts(out) {
  // eslint-disable-next-line no-control-regex
  const text = out.replace(/\x1b\[\d+m/g, ''); // uvu colours its numbers
  const num = (label) => {
    const m = new RegExp(`^\\s*${label}:\\s+(\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  };
  const total = num('Total');
  const passed = num('Passed');
  if (total === null || passed === null) return null;
  return { total, passed, nativeSkips: num('Skipped') ?? 0, loadErrors: num('Load errors') ?? 0 };
}

/**
 * The closing line's numbers and the lines printed before it. `passed`/`failed` are the jobs'
 * sums (uvu counts a test that skipped through test/helpers/skip.ts as passed; the Python counts
 * leave skips out), `records` the skip records, `nativeSkips` uvu's own test.skip count.
 */
export function tally({ passed, failed, nativeSkips = 0, records, fast = false, ci = false, broken = 0 }) {
  const lines = [];
  passed -= records.filter((s) => s.lang === 'ts').length;
  const leftOut = fast ? records.filter((s) => SLOW.has(s.need)) : [];
  let skipped = 0;
  for (const s of records) {
    if (leftOut.includes(s)) continue;
    const provided = ci && PROVIDED.has(s.need);
    // A skip that names no need (a Python reason without "needs <need>: ", pyunit.py's "unknown")
    // cannot be judged against what CI provides: under CI it fails, so no skip can hide there.
    const unnamed = ci && !PROVIDED.has(s.need) && !KNOWN_UNPROVIDED.has(s.need);
    const why = provided ? 'FAIL (CI provides it) ' : unnamed ? 'FAIL (CI: the skip names no need) ' : '';
    lines.push(`${why}skip: ${s.file} > ${s.test}: needs ${s.need}: ${s.why}`);
    if (provided || unnamed) failed++;
    else skipped++;
  }
  if (nativeSkips) {
    lines.push(`${ci ? 'FAIL (CI) ' : ''}skip: ${nativeSkips} uvu test(s) marked test.skip, which says no reason (use test/helpers/skip.ts)`);
    if (ci) failed += nativeSkips;
    else skipped += nativeSkips;
  }
  if (leftOut.length) lines.push(`test:fast left out ${leftOut.length} tests that need torch or the real mlir-air tree (npm test runs them)`);
  if (broken && failed === 0) failed = broken; // a crashed suite counts as a failure
  return { passed, failed, skipped, lines, closing: `${passed} passed, ${failed} failed, ${skipped} skipped` };
}
