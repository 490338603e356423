// The mutation check (issue 21): plants a fixed list of small bugs in a private copy of this
// checkout, one at a time, runs the tests meant to catch each, and prints caught or missed. Run it
// by hand (not in CI):
//   npx tsx bench/mutate.ts [--list] [--only NAME[,NAME]] [--keep]
// A mutation whose search text is gone or not unique is an error naming it (the list follows the
// code, never silently drifts); a test set that fails on the clean copy makes its mutations invalid
// rather than "caught". Exit 0 only when every mutation is caught.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** A test set: uvu files (a regex over test/) and Python unittest modules. */
interface Tests { uvu?: string; py?: string[] }
interface Mutation { name: string; what: string; file: string; find: string; replace: string; tests: Tests }

const T = {
  gates: { uvu: '(thresholds|gates)\\.test\\.ts$' },
  metrics: { uvu: '(metrics|engines)\\.test\\.ts$' },
  escape: { uvu: 'github/(escape|golden|hostile)\\.test\\.ts$' },
  isolate: { uvu: 'isolate\\.test\\.ts$' },
  lock: { uvu: 'lock\\.test\\.ts$' },
  writes: { uvu: 'writes-after-probe\\.test\\.ts$' },
  docs: { uvu: 'docs\\.test\\.ts$' },
  signatures: { uvu: 'agent-signatures\\.test\\.ts$' },
  exits: { uvu: '(cli|contract)\\.test\\.ts$' },
} satisfies Record<string, Tests>;

const MUTATIONS: Mutation[] = [
  { name: 'g1-strict', what: 'G1 whole cosine >= 0.99 becomes >', file: 'src/gates/evaluate.ts',
    find: 'm.wholeCosine >= th.whole', replace: 'm.wholeCosine > th.whole', tests: T.gates },
  { name: 'g2-strict', what: 'G2 per-position min >= T(head_dim) becomes >', file: 'src/gates/evaluate.ts',
    find: 'pp.min >= th.perPosition', replace: 'pp.min > th.perPosition', tests: T.gates },
  { name: 'threshold-slope', what: 'T(head_dim) falls 0.02 per doubling instead of 0.01', file: 'src/seed/thresholds.ts',
    find: '0.99 - 0.01 * Math.log2(headDim / 64)', replace: '0.99 - 0.02 * Math.log2(headDim / 64)', tests: T.gates },
  { name: 'threshold-floor', what: 'the threshold floor 0.97 becomes 0.96', file: 'src/seed/thresholds.ts',
    find: 'Math.min(0.99, Math.max(0.97, t))', replace: 'Math.min(0.99, Math.max(0.96, t))', tests: T.gates },
  { name: 'g3-ignores-inf', what: 'the NaN/Inf total drops the -Inf count', file: 'src/metrics/summary.ts',
    find: 'return nf.nan.count + nf.posInf.count + nf.negInf.count;', replace: 'return nf.nan.count + nf.posInf.count;', tests: T.gates },
  { name: 'g3-pass-with-nan', what: 'G3 passes whatever the count', file: 'src/gates/evaluate.ts',
    find: "'no NaN/Inf in NPU output', bad === 0,", replace: "'no NaN/Inf in NPU output', true,", tests: T.gates },
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
    find: 'const t = resolveTarget(w.path, w.follow ?? true);', replace: 'const t = resolveTarget(w.path, true);', tests: T.writes },
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

/** Runs a test set in `dir`; the first failing line when it fails. */
function run(dir: string, t: Tests): { ok: boolean; by: string } {
  const env = { ...process.env, NPU_BLOCK_GATE_MLIR_AIR: process.env.NPU_BLOCK_GATE_MLIR_AIR ?? join(dirname(REPO), 'shared/mlir-air') };
  if (t.uvu) {
    const r = spawnSync(process.execPath, [join(dir, 'node_modules/uvu/bin.js'), '-r', 'tsx', 'test', t.uvu], { cwd: dir, env, encoding: 'utf8', timeout: 600_000 });
    if (r.status !== 0) {
      const out = `${r.stdout}\n${r.stderr}`.replace(/\x1b\[[0-9;]*m/g, '');
      const fail = /FAIL\s+(.*)/.exec(out)?.[1]?.trim() ?? (r.error ? r.error.message : `exit ${r.status}`);
      return { ok: false, by: `${t.uvu}: ${fail.slice(0, 160)}` };
    }
  }
  for (const m of t.py ?? []) {
    const r = spawnSync(pythonFor(), ['-m', 'unittest', m], { cwd: dir, env, encoding: 'utf8', timeout: 600_000 });
    if (r.status !== 0) return { ok: false, by: `${m}: ${(/^(FAIL|ERROR): .*/m.exec(r.stderr)?.[0] ?? `exit ${r.status}`).slice(0, 160)}` };
  }
  return { ok: true, by: '' };
}

function main(): number {
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
  // A private copy of the checkout's committed state plus the working tree's files under test.
  const dir = mkdtempSync(join(tmpdir(), 'nbg-mutate-'));
  const started = Date.now();
  try {
    const r = spawnSync('git', ['worktree', 'add', '--detach', '--quiet', dir, 'HEAD'], { cwd: REPO, encoding: 'utf8' });
    if (r.status !== 0) { console.error(`mutate: git worktree add failed: ${r.stderr.trim()}`); return 3; }
    for (const sub of ['src', 'test', 'scripts']) cpSync(join(REPO, sub), join(dir, sub), { recursive: true, filter: (s) => !s.includes('__pycache__') });
    symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
    if (existsSync(join(REPO, 'native/build'))) cpSync(join(REPO, 'native/build'), join(dir, 'native/build'), { recursive: true });
    console.log(`mutate: ${chosen.length} mutation(s) in ${dir}`);

    const clean = new Map<Tests, { ok: boolean; by: string }>();
    for (const t of new Set(chosen.map((m) => m.tests))) {
      const c = run(dir, t);
      clean.set(t, c);
      if (!c.ok) console.log(`clean test set fails: ${c.by}`);
    }
    let caught = 0, missed = 0, invalid = 0;
    for (const m of chosen) {
      if (!clean.get(m.tests)!.ok) { invalid++; console.log(`INVALID ${m.name.padEnd(22)} (its tests fail on the clean copy)`); continue; }
      const path = join(dir, m.file);
      const original = readFileSync(path, 'utf8');
      writeFileSync(path, original.replace(m.find, () => m.replace));
      try {
        const r = run(dir, m.tests);
        if (r.ok) { missed++; console.log(`MISSED  ${m.name.padEnd(22)} ${m.what}`); }
        else { caught++; console.log(`caught  ${m.name.padEnd(22)} (by ${r.by})`); }
      } finally {
        writeFileSync(path, original);
      }
    }
    console.log(`${caught} caught, ${missed} missed, ${invalid} invalid (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    return missed || invalid ? 1 : 0;
  } finally {
    if (o.keep) console.log(`mutate: kept ${dir}`);
    else {
      spawnSync('git', ['worktree', 'remove', '--force', dir], { cwd: REPO });
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

process.exit(main());
