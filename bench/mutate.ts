// The mutation check (issue 21): plants a fixed list of small bugs in a private copy of this
// checkout, one at a time, runs the tests meant to catch each, and prints caught or missed. Run it
// by hand (not in CI):
//   npx tsx bench/mutate.ts [--list] [--only NAME[,NAME]] [--keep]
// A mutation whose search text is gone or not unique is an error naming it (the list follows the
// code, never silently drifts); a test set that fails on the clean copy makes its mutations invalid
// rather than "caught". Exit 0 only when every mutation is caught.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** A test set: uvu files (a regex over paths relative to test/, anchored so docs.test.ts is not
 * also github/action-docs.test.ts) and Python unittest names (modules, or classes in them). */
interface Tests { uvu?: string; py?: string[] }
interface Mutation { name: string; what: string; file: string; find: string; replace: string; tests: Tests }

const T = {
  gates: { uvu: '^(thresholds|gates)\\.test\\.ts$' },
  metrics: { uvu: '^(metrics|engines)\\.test\\.ts$' },
  escape: { uvu: '^github/(escape|golden|hostile)\\.test\\.ts$' },
  isolate: { uvu: '^isolate\\.test\\.ts$' },
  lock: { uvu: '^lock\\.test\\.ts$' },
  writes: { uvu: '^writes-after-probe\\.test\\.ts$' },
  // A run-dir file replaces a link, never writes through it: the run removes report.json first, so
  // only the writer's own test (atomic.test.ts) can plant the link where it writes.
  runDirWrites: { uvu: '^(writes-after-probe|atomic)\\.test\\.ts$' },
  docs: { uvu: '^docs\\.test\\.ts$' },
  signatures: { uvu: '^agent-signatures\\.test\\.ts$' },
  exits: { uvu: '^(cli|contract)\\.test\\.ts$' },
  errors: { uvu: '^exit-codes\\.test\\.ts$' },
  atomic: { uvu: '^atomic\\.test\\.ts$' },
  probeLock: { py: ['test.python.test_probe_lock'] },
  probeCli: { py: ['test.python.test_probe.FakeTreeCliTests'] },
  trust: { uvu: '^github/trust\\.test\\.ts$' },
  interpreter: { uvu: '^probe-interpreter\\.test\\.ts$' },
  sanityHelper: { py: ['test.python.test_step2_sanity.ArithmeticTests'] },
  pythonTest: { uvu: '^python-find\\.test\\.ts$' },
  // issue 27: the bars at the seed's numbers, the real lens, the probe's triggers, the skip rules, the watchdog
  bars: { uvu: '^(thresholds|bisect)\\.test\\.ts$' },
  lens: { uvu: '^(lens-recorded|lens-scale|thresholds|github/golden)\\.test\\.ts$' },
  triggers: { uvu: '^agent-triggers\\.test\\.ts$' },
  skips: { uvu: '^(runner|skip-lint)\\.test\\.ts$' },
  watchdog: { uvu: '^fuzz\\.test\\.ts$' },
  agent: { uvu: '^agent(-[a-z]+)?\\.test\\.ts$' },
} satisfies Record<string, Tests>;

const MUTATIONS: Mutation[] = [
  { name: 'g1-strict', what: 'G1 whole cosine >= 0.99 becomes >', file: 'src/gates/evaluate.ts',
    find: 'return wholeCosine >= th.whole;', replace: 'return wholeCosine > th.whole;', tests: T.gates },
  { name: 'g2-strict', what: 'G2 per-position min >= T(head_dim) becomes >', file: 'src/gates/evaluate.ts',
    find: 'return perPositionMin >= th.perPosition;', replace: 'return perPositionMin > th.perPosition;', tests: T.gates },
  { name: 'threshold-slope', what: 'T(head_dim) falls 0.02 per doubling instead of 0.01', file: 'src/seed/thresholds.ts',
    find: '0.99 - 0.01 * Math.log2(headDim / 64)', replace: '0.99 - 0.02 * Math.log2(headDim / 64)', tests: T.gates },
  { name: 'threshold-floor', what: 'the threshold floor 0.97 becomes 0.96', file: 'src/seed/thresholds.ts',
    find: 'Math.min(0.99, Math.max(0.97, t))', replace: 'Math.min(0.99, Math.max(0.96, t))', tests: T.gates },
  { name: 'g3-ignores-inf', what: 'the NaN/Inf total drops the -Inf count', file: 'src/metrics/summary.ts',
    find: 'return nf.nan.count + nf.posInf.count + nf.negInf.count;', replace: 'return nf.nan.count + nf.posInf.count;', tests: T.gates },
  { name: 'g3-pass-with-nan', what: 'G3 passes whatever the count', file: 'src/gates/evaluate.ts',
    find: "'no NaN/Inf in NPU output', g3Holds(bad),", replace: "'no NaN/Inf in NPU output', true,", tests: T.gates },
  { name: 'padded-rows-judged', what: 'the JS engine counts padded rows as real tokens', file: 'src/metrics/kernel-js.ts',
    find: 'const real = Math.max(0, Math.min(count, realLen - start));', replace: 'const real = count;', tests: T.metrics },
  { name: 'html-escape-lt', what: 'markdown escaping lets < through', file: 'src/text/escape.ts',
    find: `'<': '&lt;',`, replace: `'<': '<',`, tests: T.escape },
  { name: 'controls-kept', what: 'terminal escapes and bidi overrides are kept', file: 'src/text/escape.ts',
    find: ".replace(/\\r\\n?/g, '\\n').replace(CONTROLS, '\\uFFFD')", replace: ".replace(/\\r\\n?/g, '\\n')", tests: T.escape },
  { name: 'untrusted-unisolated', what: 'an untrusted run may fall back to no isolation', file: 'src/probe/isolate.ts',
    find: "  if (want === 'none' || want === 'auto') {\n    if (req.untrusted && !req.allowUnisolated) {",
    replace: "  if (want === 'none' || want === 'auto') {\n    if (false) {", tests: T.isolate },
  { name: 'untrusted-degraded', what: 'an untrusted run may use the probe user without its sandbox', file: 'src/probe/isolate.ts',
    find: '  if (degraded) {\n    if (req.untrusted && !req.allowUnisolated) {', replace: '  if (degraded) {\n    if (false) {', tests: T.isolate },
  { name: 'no-user-namespace', what: 'the sandbox runs without --unshare-user', file: 'src/probe/sandbox.ts',
    find: "    a.push('--unshare-user');", replace: '', tests: T.isolate },
  { name: 'capabilities-kept', what: 'the sandbox keeps its capabilities', file: 'src/probe/sandbox.ts',
    find: "if (s.capDrop) a.push('--cap-drop', 'ALL');", replace: "if (s.capDrop) a.push();", tests: T.isolate },
  { name: 'lock-not-exclusive', what: 'the documents lock file is opened without O_EXCL', file: 'src/fs/lock.ts',
    find: "fd = openSync(path, 'wx', 0o644);", replace: "fd = openSync(path, 'w', 0o644);", tests: T.lock },
  { name: 'lock-release-any', what: "a release removes another run's lock", file: 'src/fs/lock.ts',
    find: 'if (readOwner(path)?.owner?.nonce === me.nonce) unlinkSync(path);', replace: 'unlinkSync(path);', tests: T.lock },
  { name: 'atomic-follows-links', what: 'a run-dir write follows a symlink the probe left', file: 'src/fs/atomic.ts',
    find: 'const t = resolveTarget(w.path, w.follow ?? true);', replace: 'const t = resolveTarget(w.path, true);', tests: T.runDirWrites },
  { name: 'docs-user-text-lost', what: "phase2_block.md loses the user's text after the latest block", file: 'src/docs/phase2.ts',
    find: 'lines.splice(latest!.begin + 1, latest!.end - latest!.begin - 1, ...body', replace: 'lines.splice(latest!.begin + 1, lines.length, ...body', tests: T.docs },
  { name: 'sig-reset-skipped', what: 'the reset-skipped wedge signature never matches', file: 'src/agent/signatures.ts',
    find: 're: /NPU reset skipped: last reset/', replace: 're: /NPU reset skipped: never/', tests: T.signatures },
  { name: 'sig-mgmt-timeout', what: 'the management-mailbox timeout signature never matches', file: 'src/agent/signatures.ts',
    find: 're: /Wait for completion timeout/', replace: 're: /Wait for completion timed out/', tests: T.signatures },
  { name: 'sig-iommu-fatal', what: 'an IO_PAGE_FAULT is judged fatal instead of a warning', file: 'src/agent/signatures.ts',
    find: "{ id: 'iommu-fault', severity: 'warn',", replace: "{ id: 'iommu-fault', severity: 'fail',", tests: T.signatures },
  { name: 'exit-codes-swapped', what: 'bad input exits 3 and infrastructure 2', file: 'src/errors.ts',
    find: 'input: EXIT_CODES.input as 2, infra: EXIT_CODES.infra as 3', replace: 'input: EXIT_CODES.infra as 2, infra: EXIT_CODES.input as 3', tests: T.exits },
  { name: 'js-nan-scan-skipped', what: "the JS engine's NaN/Inf scan skips the real rows", file: 'src/metrics/kernel-js.ts',
    find: 'if (!(a2 - a2 === 0)) noteRow(nonFinite, npu, o, cols, row);', replace: '', tests: T.metrics },
  { name: 'js-nan-in-padding-ignored', what: "the JS engine's NaN/Inf scan skips the padded rows", file: 'src/metrics/kernel-js.ts',
    find: '      } else {\n        noteRow(nonFinite, npu, o, cols, row);\n      }', replace: '      }', tests: T.metrics },
  { name: 'mentions-kept', what: 'an @mention in foreign text notifies someone', file: 'src/text/escape.ts',
    find: "return /[A-Za-z0-9_-]/.test(next) ? `@${ZWSP}` : '@';", replace: "return '@';", tests: T.escape },
  { name: 'log-command-kept', what: 'a foreign log line may start a ::workflow-command::', file: 'src/text/escape.ts',
    find: "if (rest.startsWith('::') || rest.startsWith('##['))", replace: "if (false)", tests: T.escape },
  { name: 'sandbox-network', what: 'the sandbox keeps the network', file: 'src/probe/sandbox.ts',
    find: "if (!s.network) a.push('--unshare-net');", replace: '', tests: T.isolate },
  { name: 'tree-python-asked', what: "a Python in the pull request's tree is run outside the sandbox to ask its dirs", file: 'src/probe/run.ts',
    find: '  if (roots.some((r) => within(target, r))) return null;', replace: '', tests: T.interpreter },
  { name: 'tree-helper-unchecked', what: "the tree's padding helper runs without the plain-arithmetic check (plan --sanity is unsandboxed)", file: 'scripts/probe/npu_probe/reference/step2_sanity.py',
    find: '        if impure:\n', replace: '        if False:\n', tests: T.sanityHelper },
  { name: 'python-test-in-cwd', what: "the doctor's Python test runs python -c from the working directory (a workspace's planted numpy.py runs)", file: 'src/probe/python.ts',
    find: "const TEST_CWD = '/';", replace: 'const TEST_CWD = undefined;', tests: T.pythonTest },
  { name: 'lock-live-owner-stale', what: "a live owner's documents lock is broken as stale", file: 'src/fs/lock.ts',
    find: 'if (owner.start !== null && start !== null && start !== owner.start) return', replace: 'if (start !== undefined) return', tests: T.lock },
  { name: 'atomic-in-place', what: 'a document is rewritten in place instead of renamed over', file: 'src/fs/atomic.ts',
    find: '      renameSync(p.tmp, p.real);\n      p.placed = true;', replace: '      copyFileSync(p.tmp, p.real);\n      unlinkSync(p.tmp);\n      p.placed = true;', tests: T.atomic },
  { name: 'atomic-no-rollback', what: 'files already placed stay when a later one fails', file: 'src/fs/atomic.ts',
    find: 'if (p.backup) renameSync(p.backup, p.real);\n        else unlinkSync(p.real);', replace: '', tests: T.atomic },
  { name: 'todo-line-rest-lost', what: "ticking Phase 2 in TODO.md drops the rest of the user's line", file: 'src/docs/todo.ts',
    find: '`${a}${mark}${c}`', replace: '`${a}${mark}] 2: Single-Block Validation`', tests: T.docs },
  { name: 'todo-blocker-takes-next', what: "removing our blocker from TODO.md also removes the user's next line", file: 'src/docs/todo.ts',
    find: 'removeLines(lines, bi, 1);', replace: 'removeLines(lines, bi, 2);', tests: T.docs },
  { name: 'sig-no-progress', what: "the OOT driver's \"Device isn't making progress\" is no longer a TDR", file: 'src/agent/signatures.ts',
    find: "re: /TDR timeout detected|Device isn't making progress/", replace: 're: /TDR timeout detected/', tests: T.signatures },
  { name: 'sig-firmware-warn', what: 'missing firmware is a warning, not a failure', file: 'src/agent/signatures.ts',
    find: "id: 'firmware-missing', severity: 'fail',", replace: "id: 'firmware-missing', severity: 'warn',", tests: T.signatures },
  { name: 'exit-disk-full-input', what: 'a full disk is blamed on the input (exit 2, not 3)', file: 'src/errors.ts',
    find: "new Set(['ENOSPC', ", replace: 'new Set([', tests: T.errors },
  { name: 'probe-lock-shared', what: "the probe's NPU lock is taken shared, not exclusive", file: 'scripts/probe/npu_probe/run/lock.py',
    find: 'fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)', replace: 'fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)', tests: T.probeLock },
  { name: 'probe-usage-exit-3', what: "the probe's usage errors exit 3 (infrastructure), not 2 (bad input)", file: 'scripts/probe/npu_probe/args.py',
    find: 'raise SystemExit(EXIT_BAD_INPUT)', replace: 'raise SystemExit(3)', tests: T.probeCli },
  { name: 'trust-pr-target', what: 'pull_request_target runs count as trusted (the probe runs their code unisolated)', file: 'src/github/trust.ts',
    find: "TRUSTED_EVENTS = ['push', 'schedule', 'workflow_dispatch']", replace: "TRUSTED_EVENTS = ['push', 'schedule', 'workflow_dispatch', 'pull_request_target']", tests: T.trust },
  { name: 'trust-foreign-head', what: 'code from another repository is trusted when the event is', file: 'src/github/trust.ts',
    find: 'const trusted = allowListed(ctx.eventName) && sameRepo;', replace: 'const trusted = allowListed(ctx.eventName);', tests: T.trust },
  // ---- issue 27: bar constants (each caught at the seed's number, one ulp each side)
  { name: 'g1-at-0.985', what: 'WHOLE_COSINE_MIN is 0.985, not the seed\'s 0.99', file: 'src/seed/thresholds.ts',
    find: 'export const WHOLE_COSINE_MIN = 0.99;', replace: 'export const WHOLE_COSINE_MIN = 0.985;', tests: T.bars },
  { name: 'threshold-ceiling', what: 'T(head_dim <= 64) is 0.995, not 0.99', file: 'src/seed/thresholds.ts',
    find: 'Math.min(0.99, Math.max(0.97, t))', replace: 'Math.min(0.995, Math.max(0.97, t))', tests: T.bars },
  { name: 'threshold-128-step', what: 'the 128 step moves: T falls from head_dim 96, so T(128) is 0.9859', file: 'src/seed/thresholds.ts',
    find: '0.99 - 0.01 * Math.log2(headDim / 64)', replace: '0.99 - 0.01 * Math.log2(headDim / 96)', tests: T.bars },
  { name: 'threshold-floor-0.975', what: 'T(head_dim >= 256) is 0.975, not 0.97', file: 'src/seed/thresholds.ts',
    find: 'Math.min(0.99, Math.max(0.97, t))', replace: 'Math.min(0.99, Math.max(0.975, t))', tests: T.bars },
  { name: 'norm-ratio-bar', what: 'the norm-ratio warning bar is 1.1%, not 1%', file: 'src/seed/thresholds.ts',
    find: 'export const NORM_RATIO_WARN = 0.01;', replace: 'export const NORM_RATIO_WARN = 0.011;', tests: T.bars },
  { name: 'regression-bar', what: 'the max_abs regression warning is at 1.6x, not the seed\'s 1.5x', file: 'src/seed/thresholds.ts',
    find: 'export const MAX_ABS_REGRESSION = 1.5;', replace: 'export const MAX_ABS_REGRESSION = 1.6;', tests: T.bars },
  { name: 'regression-at-bar', what: 'max_abs exactly 1.5x the baseline warns', file: 'src/gates/evaluate.ts',
    find: 'm.errors.maxAbs > MAX_ABS_REGRESSION * baseline.maxAbs', replace: 'm.errors.maxAbs >= MAX_ABS_REGRESSION * baseline.maxAbs', tests: T.bars },
  { name: 'budget-bar', what: 'the error budget warns over 3.5x, not 3x', file: 'src/seed/thresholds.ts',
    find: 'export const ERROR_BUDGET_WARN = 3;', replace: 'export const ERROR_BUDGET_WARN = 3.5;', tests: T.bars },
  { name: 'budget-at-bar', what: 'an error budget of exactly 3x warns', file: 'src/lens/judge.ts',
    find: 'over: ratio > bar', replace: 'over: ratio >= bar', tests: T.bars },
  { name: 'well-below-moved', what: '"well below" is 2.5x the threshold\'s distance from 1, not 2x', file: 'src/seed/thresholds.ts',
    find: 'return 1 - 2 * (1 - threshold);', replace: 'return 1 - 2.5 * (1 - threshold);', tests: T.bars },
  { name: 'clean-bar-moved', what: 'the clean bar is an eighth of the threshold\'s distance from 1, not a tenth', file: 'src/seed/thresholds.ts',
    find: 'return 1 - (1 - threshold) / 10;', replace: 'return 1 - (1 - threshold) / 8;', tests: T.bars },
  { name: 'scale-bar', what: 'the lens\'s scale warning is at 0.6%, not 0.5%', file: 'src/seed/thresholds.ts',
    find: 'export const LENS_SCALE_WARN = 0.005;', replace: 'export const LENS_SCALE_WARN = 0.006;', tests: T.bars },
  { name: 'bisect-fixes-no-g2', what: "a bisect step 'fixes' the block without G2", file: 'src/gates/evaluate.ts',
    find: 'return g1Holds(c.wholeCosine, th) && g2Holds(c.perPositionMin, th) && g3Holds(c.nonFinite);', replace: 'return g1Holds(c.wholeCosine, th) && g3Holds(c.nonFinite);', tests: T.bars },
  // ---- the lens's direction and order (the real judge in the fast tier)
  { name: 'scale-one-sided', what: 'the scale warning ignores ratios below 1', file: 'src/lens/judge.ts',
    find: 'Math.abs(normRatio - 1) > LENS_SCALE_WARN', replace: 'normRatio - 1 > LENS_SCALE_WARN', tests: T.lens },
  { name: 'lens-reversed', what: 'the lens is judged in reverse block order', file: 'src/lens/judge.ts',
    find: '.sort(([, x], [, y]) => x.order - y.order)', replace: '.sort(([, x], [, y]) => y.order - x.order)', tests: T.lens },
  { name: 'lens-first-below-last', what: 'the lens names the last boundary under the threshold, not the first', file: 'src/lens/judge.ts',
    find: 'const first = rows.find((r) => r.below);', replace: 'const first = [...rows].reverse().find((r) => r.below);', tests: T.lens },
  { name: 'lens-below-strict', what: 'a boundary exactly at the threshold is under it', file: 'src/lens/judge.ts',
    find: 'below: !(low >= threshold),', replace: 'below: !(low > threshold),', tests: T.lens },
  { name: 'lens-onset-from-below', what: 'the onset is the first boundary under the threshold, not the first under the clean bar', file: 'src/lens/judge.ts',
    find: 'const onset = rows.find((r) => r.drifts);', replace: 'const onset = rows.find((r) => r.below);', tests: T.lens },
  // ---- the functional probe's triggers
  { name: 'probe-blind-log', what: 'a kernel log that cannot vouch does not send the functional probe', file: 'src/agent/functional.ts',
    find: "  if (o.kernel.status === 'unknown' && !(o.recentPassVouches && fresh)) return 'the kernel log cannot vouch for the NPU';\n", replace: '', tests: T.triggers },
  { name: 'probe-no-pass', what: 'no pass this boot does not send the functional probe', file: 'src/agent/functional.ts',
    find: "  if (!o.lastPass) return 'no functional probe has passed this boot';\n", replace: "  if (!o.lastPass) return null;\n", tests: T.triggers },
  { name: 'probe-interval-strict', what: 'a pass exactly the interval old is probed again', file: 'src/agent/functional.ts',
    find: 'const fresh = age >= 0 && age <= o.intervalS;', replace: 'const fresh = age >= 0 && age < o.intervalS;', tests: T.triggers },
  { name: 'probe-clock-back', what: 'a pass recorded in the future counts as fresh', file: 'src/agent/functional.ts',
    find: 'const fresh = age >= 0 && age <= o.intervalS;', replace: 'const fresh = age <= o.intervalS;', tests: T.triggers },
  { name: 'klog-blind-vouches', what: 'an unreadable kernel log vouches for the NPU', file: 'src/agent/klog.ts',
    find: "if ('error' in log) return { check: dev.unknown('kernel-log', `${log.error}: no wedge can be seen, so none is ruled out`, JOURNAL_FIX)",
    replace: "if ('error' in log) return { check: dev.ok('kernel-log', `${log.error}: no wedge can be seen, so none is ruled out`)", tests: T.triggers },
  { name: 'klog-truncated-vouches', what: 'a log truncated at the bound vouches for the part not read', file: 'src/agent/klog.ts',
    find: 'if (log.truncated && !scan.reset && !covered) {', replace: 'if (false) {', tests: T.triggers },
  { name: 'klog-no-load-vouches', what: 'a log with no driver-load line this boot vouches for the NPU', file: 'src/agent/klog.ts',
    find: 'if (o.node && !scan.loaded && log.stop === null) {', replace: 'if (false) {', tests: T.triggers },
  { name: 'failure-stands-at-interval', what: 'a failed result exactly the interval old still stands', file: 'src/agent/functional.ts',
    find: 'return age >= 0 && age < o.intervalS;', replace: 'return age >= 0 && age <= o.intervalS;', tests: T.triggers },
  // ---- the agent's other verdicts (every test of the agent)
  { name: 'functional-fail-warns', what: 'a failed functional probe is a warning, not a device failure', file: 'src/agent/functional.ts',
    find: "else if (rec.status === 'fail') out.push(dev.fail('functional', detail, rec.fix ?? UNEXPLAINED_FIX));", replace: "else if (rec.status === 'fail') out.push(host.warn('functional', detail, rec.fix ?? UNEXPLAINED_FIX));", tests: T.agent },
  { name: 'functional-host-fails', what: 'a host problem that kept the NPU from being tested fails the job', file: 'src/agent/functional.ts',
    find: "else out.push(host.warn('functional', detail, rec.fix ?? 'see the detail'));", replace: "else out.push(dev.fail('functional', detail, rec.fix ?? 'see the detail'));", tests: T.agent },
  { name: 'memlock-not-raised', what: 'a probe stopped by memlock alone is not run again with the limit a job can raise to', file: 'src/agent/functional.ts',
    find: "const raised = c.limits && f.kind === 'memlock' &&", replace: "const raised = false && c.limits && f.kind === 'memlock' &&", tests: T.agent },
  { name: 'pass-of-another-boot', what: "a passing probe of another boot counts as this boot's", file: 'src/agent/functional.ts',
    find: "  if (!rec || !rec.boot_id || rec.boot_id !== boot) return null;", replace: '  if (!rec) return null;', tests: T.agent },
  { name: 'failure-survives-reset', what: 'a failed result stands after a driver reload or an NPU reset', file: 'src/agent/functional.ts',
    find: "rec.boot_id !== o.boot || o.resetSince) return false;", replace: 'rec.boot_id !== o.boot) return false;', tests: T.agent },
  { name: 'auto-never-probes', what: 'functional auto never runs the probe', file: 'src/agent/doctor.ts',
    find: "if (when === 'always' || (when === 'auto' && reason)) {", replace: "if (when === 'always') {", tests: T.agent },
  { name: 'pass-before-read-covers', what: 'a pass before the log was read vouches for the part beyond the bound', file: 'src/agent/klog.ts',
    find: 'const covered = !!f && new Date(f.at).getTime() >= new Date(log.readAt).getTime();', replace: 'const covered = !!f;', tests: T.agent },
  // ---- skips and the watchdog
  { name: 'ci-unnamed-skip-passes', what: 'under CI a skip that names no need is a skip, not a failure', file: 'scripts/test/tally.mjs',
    find: 'const unnamed = ci && !PROVIDED.has(s.need) && !KNOWN_UNPROVIDED.has(s.need);', replace: 'const unnamed = false;', tests: T.skips },
  { name: 'watchdog-times-start', what: "the fuzz watchdog times a worker's start as a case", file: 'test/helpers/fuzz.ts',
    find: 'const startMs = Math.max(hangMs, (opts.startSeconds ?? 300) * 1000);', replace: 'const startMs = hangMs;', tests: T.watchdog },
  { name: 'trust-report-from-pr-job', what: "a report job a pull request started trusts the run it names", file: 'src/github/trust.ts',
    find: 'const ownEventOk = !PR_EVENTS.includes(ctx.eventName);', replace: 'const ownEventOk = true;', tests: T.trust },
];

function args(): { list: boolean; only: Set<string> | null; keep: boolean } {
  const a = process.argv.slice(2);
  const o = { list: false, only: null as Set<string> | null, keep: false };
  for (let i = 0; i < a.length; i++) {
    if (a[i] === '--list') o.list = true;
    else if (a[i] === '--keep') o.keep = true;
    else if (a[i] === '--only') o.only = new Set((a[++i] ?? '').split(',').filter(Boolean));
    else if (a[i] === '--help' || a[i] === '-h') {
      console.log('usage: npx tsx bench/mutate.ts [--list] [--only NAME[,NAME]] [--keep]\nPlants each mutation in a private copy, runs the tests meant to catch it, prints caught/MISSED. Exit 0 only when all are caught.');
      process.exit(0);
    } else {
      console.error(`mutate: unknown option ${a[i]} (see --help)`);
      process.exit(2);
    }
  }
  return o;
}

function pythonFor(): string {
  for (const p of [process.env.NPU_BLOCK_GATE_PYTHON, 'python3']) {
    if (p && spawnSync(p, ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0) return p;
  }
  return 'python3';
}

/** Thrown when the run is stopped from outside (Ctrl-C, SIGTERM): it ends there, the copy removed. */
class Interrupted extends Error {}

const TIMEOUT_MS = 600_000;

/** The test process running now (a signal to this script stops it), and whether one came. */
let current: ChildProcess | null = null;
let stoppedBy: string | null = null;

interface Ran { status: number | null; out: string; err: string; timedOut: boolean }

/** One test process, asynchronously (so a signal reaches this script while it runs; tsx kills a
 * child that cannot answer its signal relay). A child stopped by a signal from outside is never a catch. */
function exec(cmd: string, argv: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  if (stoppedBy) return Promise.reject(new Interrupted(`stopped by ${stoppedBy}`));
  return new Promise((done, fail) => {
    const child = spawn(cmd, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    current = child;
    let out = '', err = '', timedOut = false;
    child.stdout!.setEncoding('utf8').on('data', (d: string) => { out += d; });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => { err += d; });
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, TIMEOUT_MS);
    child.on('error', (e) => { clearTimeout(timer); current = null; fail(e); });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      current = null;
      if (stoppedBy || (signal && !timedOut)) fail(new Interrupted(`stopped by ${stoppedBy ?? signal}`));
      else done({ status, out, err, timedOut });
    });
  });
}

/** Runs a test set in `dir`; the first failing line when it fails. */
async function run(dir: string, t: Tests): Promise<{ ok: boolean; by: string }> {
  // No .pyc: a mutant and its restore can share a size and an mtime second, and Python would
  // then run the mutant's cached bytecode against the restored source.
  const env = { ...process.env, PYTHONDONTWRITEBYTECODE: '1', NPU_BLOCK_GATE_MLIR_AIR: process.env.NPU_BLOCK_GATE_MLIR_AIR ?? join(dirname(REPO), 'shared/mlir-air') };
  if (t.uvu) {
    // As scripts/test.mjs runs them (tsx as an ES module loader: `uvu -r tsx` requires, and the
    // ESM-only packages such as @actions/core cannot be required).
    const files = (readdirSync(join(dir, 'test'), { recursive: true }) as string[]).map((f) => f.split(sep).join('/')).filter((f) => new RegExp(t.uvu!).test(f)).sort();
    const r = await exec(process.execPath, ['--import', 'tsx', join(dir, 'scripts/test/uvu.mjs'), ...files], dir, env);
    if (r.status !== 0) {
      const out = `${r.out}\n${r.err}`.replace(/\x1b\[[0-9;]*m/g, '');
      const fail = r.timedOut ? `timed out after ${TIMEOUT_MS / 1000} s` : /FAIL\s+(.*)/.exec(out)?.[1]?.trim() ?? `exit ${r.status}`;
      return { ok: false, by: `${t.uvu}: ${fail.slice(0, 160)}` };
    }
  }
  for (const m of t.py ?? []) {
    const r = await exec(pythonFor(), ['-m', 'unittest', m], dir, env);
    if (r.status !== 0) {
      const fail = r.timedOut ? `timed out after ${TIMEOUT_MS / 1000} s` : /^(FAIL|ERROR): .*/m.exec(r.err)?.[0] ?? `exit ${r.status}`;
      return { ok: false, by: `${m}: ${fail.slice(0, 160)}` };
    }
  }
  return { ok: true, by: '' };
}

async function main(): Promise<number> {
  const o = args();
  const chosen = MUTATIONS.filter((m) => !o.only || o.only.has(m.name));
  if (o.only) for (const n of o.only) if (!MUTATIONS.some((m) => m.name === n)) { console.error(`mutate: no mutation named ${n} (see --list)`); return 2; }
  if (o.list) {
    for (const m of MUTATIONS) console.log(`${m.name.padEnd(22)} ${m.file}: ${m.what}`);
    return 0;
  }
  // Every search text is there exactly once, before anything runs.
  for (const m of chosen) {
    const text = readFileSync(join(REPO, m.file), 'utf8');
    const n = text.split(m.find).length - 1;
    if (n !== 1) { console.error(`mutate: ${m.name}: ${m.file} holds its search text ${n} times (the code moved: update the list)`); return 2; }
  }
  // Every test set names files that exist (a renamed test file would otherwise run nothing and
  // turn every mutation of its set into a false "missed").
  const testFiles = (readdirSync(join(REPO, 'test'), { recursive: true }) as string[]).map((f) => f.split(sep).join('/'));
  for (const m of chosen) {
    const { uvu, py = [] } = m.tests;
    if (uvu && !testFiles.some((f) => new RegExp(uvu).test(f))) { console.error(`mutate: ${m.name}: no file under test/ matches ${uvu}`); return 2; }
    for (const id of py) {
      // A module, or a class or test in one (test.python.test_probe.FakeTreeCliTests).
      const parts = id.split('.');
      if (!parts.some((_, k) => existsSync(join(REPO, `${parts.slice(0, k + 1).join('/')}.py`)))) { console.error(`mutate: ${m.name}: no test module for ${id}`); return 2; }
    }
  }
  // A private copy of the checkout's committed state plus the working tree's files under test.
  const dir = mkdtempSync(join(tmpdir(), 'nbg-mutate-'));
  const started = Date.now();
  const removeCopy = () => {
    spawnSync('git', ['worktree', 'remove', '--force', dir], { cwd: REPO });
    rmSync(dir, { recursive: true, force: true });
  };
  // A signal stops the test run in progress; the loop then ends and the private copy is removed.
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      stoppedBy ??= sig;
      current?.kill('SIGKILL');
    });
  }
  try {
    const r = spawnSync('git', ['worktree', 'add', '--detach', '--quiet', dir, 'HEAD'], { cwd: REPO, encoding: 'utf8' });
    if (r.status !== 0) { console.error(`mutate: git worktree add failed: ${r.stderr.trim()}`); return 3; }
    for (const sub of ['src', 'test', 'scripts']) cpSync(join(REPO, sub), join(dir, sub), { recursive: true, filter: (s) => !s.includes('__pycache__') });
    symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
    if (existsSync(join(REPO, 'native/build'))) cpSync(join(REPO, 'native/build'), join(dir, 'native/build'), { recursive: true });
    console.log(`mutate: ${chosen.length} mutation(s) in ${dir}`);

    const clean = new Map<Tests, { ok: boolean; by: string }>();
    for (const t of new Set(chosen.map((m) => m.tests))) {
      const c = await run(dir, t);
      clean.set(t, c);
      if (!c.ok) console.log(`clean test set fails: ${c.by}`);
    }
    let caught = 0, missed = 0, invalid = 0;
    for (const m of chosen) {
      if (!clean.get(m.tests)!.ok) { invalid++; console.log(`INVALID ${m.name.padEnd(22)} (its tests fail on the clean copy: ${clean.get(m.tests)!.by})`); continue; }
      const path = join(dir, m.file);
      const original = readFileSync(path, 'utf8');
      writeFileSync(path, original.replace(m.find, () => m.replace));
      try {
        const r = await run(dir, m.tests);
        if (r.ok) { missed++; console.log(`MISSED  ${m.name.padEnd(22)} ${m.what}`); }
        else { caught++; console.log(`caught  ${m.name.padEnd(22)} (by ${r.by})`); }
      } finally {
        writeFileSync(path, original);
      }
    }
    console.log(`${caught} caught, ${missed} missed, ${invalid} invalid (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    return missed || invalid ? 1 : 0;
  } catch (e) {
    if (!(e instanceof Interrupted)) throw e;
    console.error(`mutate: ${e.message}; the private copy is removed`);
    return 130;
  } finally {
    if (o.keep) console.log(`mutate: kept ${dir}`);
    else removeCopy();
  }
}

process.exitCode = await main();
