#!/usr/bin/env node
// The README's test commands.
//   npm test            every uvu suite (through tsx) and every Python unittest module
//   npm run test:fast   the same, leaving out what needs torch or the real mlir-air tree
// Suites run as parallel jobs (uvu files in batches, Python modules one a job): each job's output
// is printed whole when it ends. Every skip prints one line (the test, what it needs, why); the
// last line is "N passed, N failed, N skipped" over both languages, and the exit status is
// non-zero on any failure. Under CI=true a skip of a test whose need .ci/run provides is a failure.
// Options: --fast, ts | py (one language), --jobs N (default: cores + 1, and more while the cores sit
// idle; a given N is fixed), a filter (substring of a file name). NPU_BLOCK_GATE_TEST_ADAPT=0: no more.
import { spawn, spawnSync } from 'node:child_process';
import { dirname, join, relative } from 'node:path';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { tally, uvuCounts } from './test/tally.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const fast = args.includes('--fast');
const only = args.find((a) => a === 'ts' || a === 'py');
const jobsAt = args.indexOf('--jobs');
// One more job than cores: the suites are CPU-bound, and the extra job runs while another waits
// on a process, a lock or the fake GitHub.
const cores = availableParallelism();
const defaultWidth = cores + 1;
const width = Number(jobsAt >= 0 ? args[jobsAt + 1] : process.env.NPU_BLOCK_GATE_TEST_JOBS ?? defaultWidth) || defaultWidth;
const filter = args.find((a, i) => !a.startsWith('-') && a !== only && (jobsAt < 0 || i !== jobsAt + 1));
const ci = process.env.CI === 'true' || process.env.CI === '1';

/**
 * Scheduling hints: seconds a job took in a full `npm test` under CI=true on the shared 2-core
 * machine (the ` (N s)` after each job's name; a uvu batch's "Seconds:" line gives each of its
 * files). The longest start first; a file at 8 s or more runs as a job of its own, the rest in
 * batches; a file not listed counts as light (Python modules run one a job). A split module's
 * tests are keyed module.test_method. A wrong hint costs time, never a result. (fidelity, docs-lock,
 * real-tree and fleet/affected: 3.4x their CPU-seconds alone, the ratio of the hints to it.)
 */
const HINTS = {
  'fidelity.test.ts': 280, 'github/action.test.ts': 10, 'lens.test.ts': 145, 'faults.test.ts': 90, 'docs-lock.test.ts': 90, 'readme-real-tree.test.ts': 41, 'github/fleet.test.ts': 20,
  'cli.test.ts': 68, 'cache-reference.test.ts': 60, 'probe-isolation.test.ts': 59, 'step2-sanity.test.ts': 45,
  'github/octokit.test.ts': 35, 'github/hostile.test.ts': 20, 'github/action-check.test.ts': 35, 'real-tree.test.ts': 31,
  'github/split.test.ts': 12, 'fuzz.test.ts': 30, 'github/effects.test.ts': 60, 'fleet/affected.test.ts': 70, 'engines.test.ts': 9.3, 'signals.test.ts': 7.6,
  'contract.test.ts': 7.3, 'github/fleet-docs.test.ts': 6.7, 'reference-fault.test.ts': 5.7, 'agent-hooks.test.ts': 4.2,
  'agent-metrics.test.ts': 3.7, 'probe-env.test.ts': 3.2, 'agent-scenarios.test.ts': 2.1,
  'own-files.test.ts': 6,
  // issue 26's, timed alone under nice on the loaded 2-core machine
  'errors-truth.test.ts': 61, 'run-lock.test.ts': 37, 'probe-hold.test.ts': 26, 'npx.test.ts': 8,
  'html-real.test.ts': 150, 'html.test.ts': 25,
  // test_real_twins' six jobs (SPLIT groups them), with its fork server: twice their seconds alone
  // (`node scripts/test.mjs test_real_twins`, 3 at a time, load 3-4), what the old hints were to that
  'test_real_twins.test_each_injected_bug_is_named_by_the_lens_and_the_bisect_llama32_1b': 57,
  'test_real_twins.test_clean_blocks_pass_the_gates_and_every_boundary': 23, 'test_real_twins.test_the_lens_changes_nothing_in_the_block': 3,
  'test_real_twins.test_fp32_twins_keep_the_older_numerics_and_config_eps_changes_the_norm': 7,
  'test_real_twins.test_the_other_bf16_models_run_too': 19, 'test_real_twins.test_the_error_budget_of_a_clean_run_is_near_one': 23,
  'test_real_twins.test_each_injected_bug_is_named_by_the_lens_and_the_bisect_qwen25_0_5b': 42,
  'test_real_twins.test_each_injected_bug_is_named_by_the_lens_and_the_bisect_qwen3_0_6b': 26,
  'test_real_twins.test_2048_positions_qwen3_0_6b': 19, 'test_real_twins.test_2048_positions_smollm2_1_7b': 18,
  'test_real_twins.test_2048_positions_qwen25_0_5b': 20, 'test_real_twins.test_2048_positions_llama32_1b': 28,
  'test_real_twins.test_option_errors_are_one_line_exit_2': 10, 'test_real_twins.test_a_bisect_of_another_block_does_not_reproduce_the_judged_output': 8,
  'test_real_twins.test_every_bug_has_its_test': 1, 'test_real_twins.test_2048_positions_on_every_architecture': 1,
  test_real_twins: 305, test_step2_sanity: 43, test_probe_bisect: 24, test_probe_cache: 24, test_probe_refcache: 23, test_probe: 21,
  test_real_reference: 18, test_air_mini: 9.4, test_real_aliasing: 8.2, test_probe_positions: 7.6, test_probe_plan: 7.2,
  test_probe_layers: 5.7, test_contract: 4.8,
};
/**
 * Under --fast the suites that need the real tree or torch skip those parts, and the rest run beside
 * other lighter jobs: seconds each job took in `npm run test:fast` on the quiet 2-core machine (the
 * ` (N s, from T s)` after its name; a batch's "Seconds:" line). These replace HINTS there.
 */
const FAST_HINTS = {
  'faults.test.ts': 34, 'probe-hold.test.ts': 23, 'fuzz.test.ts': 20.5, 'cli.test.ts': 20, 'run-lock.test.ts': 19, 'docs-lock.test.ts': 18,
  'probe-isolation.test.ts': 17, 'html.test.ts': 10.4, 'github/action-check.test.ts': 8.6, 'github/split.test.ts': 8, 'github/effects.test.ts': 6.6,
  'github/fleet.test.ts': 5.5, 'github/octokit.test.ts': 5.4, 'engines.test.ts': 4.5, 'signals.test.ts': 4.4, 'errors-truth.test.ts': 4.2,
  'cache-reference.test.ts': 3.7, 'reference-fault.test.ts': 3.4, 'private-etc.test.ts': 3.3, 'github/hostile.test.ts': 3.2, 'agent-wake.test.ts': 3.2,
  'npx.test.ts': 3.1, 'agent-bundle.test.ts': 2.8, 'github/git.test.ts': 2.3, 'own-files.test.ts': 2.2, 'github/action.test.ts': 1.6,
  'fleet/affected.test.ts': 1.6, 'lens.test.ts': 1.1, 'html-real.test.ts': 0.8, 'fidelity.test.ts': 0.7, 'step2-sanity.test.ts': 0.5,
  'readme-real-tree.test.ts': 0.5, 'real-tree.test.ts': 0.4,
  test_probe: 9.6, test_probe_bisect: 8.1, test_probe_cache: 6.5, test_probe_refcache: 6, test_step2_sanity: 3, test_probe_positions: 2.5,
  test_forkserver: 2.3, test_air_mini: 2.1, test_probe_layers: 1.6, test_contract: 1.1, test_probe_structure: 0.8, test_probe_plan: 0.8,
  test_probe_knobs: 0.7, test_twins: 0.5, test_probe_npu: 0.4, test_probe_exit: 0.3, test_lens_rows: 0.3, test_probe_plan_sources: 0.2,
  test_lens_expected: 0.2, test_real_twins: 0.1, test_real_reference: 0.1, test_real_aliasing: 0.1, test_probe_lock: 0.1, test_probe_capture: 0.1,
};
const hintOf = (key) => (fast ? FAST_HINTS[key] : undefined) ?? HINTS[key];
/**
 * Python modules run as one job per test (each long, and independent of the others); not under
 * --fast. Tests listed together share a job, in this order: the later ones reuse the runs the
 * first one keeps in its class (test_real_twins' cls_runs), where a job of their own redoes them,
 * and test_real_twins' fork server (torch and transformers imported once per job, about 3.5 CPU-s).
 */
const SPLIT = {
  test_real_twins: [['test_clean_blocks_pass_the_gates_and_every_boundary', 'test_the_lens_changes_nothing_in_the_block',
    'test_fp32_twins_keep_the_older_numerics_and_config_eps_changes_the_norm'],
  ['test_2048_positions_llama32_1b', 'test_2048_positions_smollm2_1_7b', 'test_2048_positions_qwen25_0_5b',
    'test_2048_positions_qwen3_0_6b', 'test_2048_positions_on_every_architecture'],
  ['test_each_injected_bug_is_named_by_the_lens_and_the_bisect_qwen25_0_5b',
    'test_each_injected_bug_is_named_by_the_lens_and_the_bisect_qwen3_0_6b',
    'test_a_bisect_of_another_block_does_not_reproduce_the_judged_output', 'test_every_bug_has_its_test'],
  ['test_the_error_budget_of_a_clean_run_is_near_one', 'test_option_errors_are_one_line_exit_2']],
};

/** The Python the suites use (as test/helpers/python.ts picks it), as the interpreter's own path. */
function numpyPython() {
  for (const p of [process.env.NPU_BLOCK_GATE_PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean)) {
    const r = spawnSync(p, ['-c', 'import numpy, sys; print(sys.executable)'], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  }
  return null;
}

function listTs(dir = join(root, 'test')) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory() && e.name !== 'fixtures' && e.name !== 'python' && e.name !== 'helpers') out.push(...listTs(p));
    else if (e.isFile() && e.name.endsWith('.test.ts')) out.push(relative(join(root, 'test'), p));
  }
  return out.sort();
}

function listPy() {
  return readdirSync(join(root, 'test/python')).filter((f) => /^test_\w+\.py$/.test(f)).map((f) => f.slice(0, -3)).sort();
}

/** The ids (module.Class.test_method) of a module's tests, as unittest loads them; [] if it cannot. */
function testIds(py, mod) {
  const code = `import sys, unittest
sys.path.insert(0, ".")
def ids(s):
    for t in s:
        yield from (ids(t) if isinstance(t, unittest.TestSuite) else [t.id()])
print("\\n".join(ids(unittest.TestLoader().loadTestsFromName("test.python.${mod}"))))`;
  const r = spawnSync(py, ['-c', code], { cwd: root, encoding: 'utf8', env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
  return r.status === 0 ? r.stdout.split('\n').filter((l) => l.startsWith(`test.python.${mod}.`)) : [];
}

// ---- the jobs

const tmp = mkdtempSync(join(tmpdir(), 'npu-block-gate-test-'));
const skipsFile = join(tmp, 'skips.jsonl');
writeFileSync(skipsFile, '');
const env = {
  ...process.env,
  // Caches written by the suites (kernel store, reference cache) go to a private dir, never ~/.cache.
  NPU_BLOCK_GATE_CACHE_DIR: join(tmp, 'cache'),
  NPU_BLOCK_GATE_TEST_SKIPS: skipsFile,
};
// One BLAS/OpenMP thread per process (kept when set): the jobs already fill the cores, and a
// second thread per process mostly spins waiting for one (a torch probe run: ~20% of its CPU).
for (const k of ['OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS']) env[k] ??= '1';
if (fast) env.NPU_BLOCK_GATE_TEST_FAST = '1';
else delete env.NPU_BLOCK_GATE_TEST_FAST;

const jobs = [];
if (only !== 'py') {
  const files = listTs().filter((f) => !filter || f.includes(filter));
  const heavy = files.filter((f) => (hintOf(f) ?? 1) >= 8);
  const light = files.filter((f) => !heavy.includes(f));
  for (const f of heavy) jobs.push({ lang: 'ts', names: [f], weight: hintOf(f) });
  // Light files in a few batches (one tsx start each, about 30 s of hints a batch), spread over the workers.
  const lightSeconds = light.reduce((s, f) => s + (hintOf(f) ?? 1.5), 0);
  const batches = Math.min(light.length, width, Math.max(1, Math.ceil(lightSeconds / 30)));
  for (let b = 0; b < batches; b++) {
    const names = light.filter((_, i) => i % batches === b);
    jobs.push({ lang: 'ts', names, weight: names.reduce((s, f) => s + (hintOf(f) ?? 1.5), 0) });
  }
}
const py = numpyPython();
// Every suite and every CLI run in them uses it, by path: a version manager's python3 shim costs
// half a second of CPU on each of the hundreds of starts.
if (py) env.NPU_BLOCK_GATE_PYTHON = py;
let broken = 0;
if (only !== 'ts') {
  if (!py) {
    broken++;
    console.error('test: no Python that imports numpy (install python3-numpy or set NPU_BLOCK_GATE_PYTHON)');
  } else {
    for (const mod of listPy().filter((m) => !filter || m.includes(filter))) {
      const names = SPLIT[mod] && !fast ? testIds(py, mod) : [];
      const method = (id) => id.split('.').pop();
      const hint = (id) => hintOf(`${mod}.${method(id)}`) ?? (hintOf(mod) ?? 5) / names.length;
      const groups = names.length ? SPLIT[mod].map((g) => g.map((m) => names.find((n) => method(n) === m)).filter(Boolean)) : [];
      for (const n of names.filter((x) => !groups.flat().includes(x))) groups.push([n]);
      for (const g of groups.filter((x) => x.length)) jobs.push({ lang: 'py', names: g, weight: g.reduce((w, n) => w + hint(n), 0) });
      if (!names.length) jobs.push({ lang: 'py', names: [`test.python.${mod}`], weight: hintOf(mod) ?? 5 });
    }
  }
}
jobs.sort((a, b) => b.weight - a.weight);

const children = new Set();
const runStart = Date.now();
/** Runs one process; resolves with its exit code and everything it wrote. */
function start(job, cmd, argv, extra = {}) {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { cwd: root, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    children.add(child);
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('error', (e) => { out += String(e); });
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve({ job, code: code ?? (signal ? 1 : 0), out, seconds: (Date.now() - t0) / 1000, at: (t0 - runStart) / 1000 });
    });
  });
}

// The real-tree fixtures (a tree copy made parseable here, the tiny HF checkpoints), built once
// while the first jobs run; the tests that use them wait for them (test/python/fakes/shared_fixtures.py).
let fixtures = null;
if (!fast && py) {
  const dir = join(tmp, 'fixtures');
  mkdirSync(dir);
  const given = process.env.NPU_BLOCK_GATE_MLIR_AIR || join(dirname(root), 'shared/mlir-air');
  const tree = existsSync(join(given, 'programming_examples/llms/verify')) ? given : '-';
  env.NPU_BLOCK_GATE_TEST_FIXTURES = dir;
  fixtures = start({ lang: 'fixtures', names: ['shared real-tree fixtures'] },
    py, [join(root, 'test/python/fakes/shared_fixtures.py'), dir, tree], { PYTHONDONTWRITEBYTECODE: '1' });
}

function runJob(job, i) {
  // A young generation of 64 MB: the suites allocate a lot for a short while (documents of 20 MB,
  // tensors, bundles), and V8's default 16 MB spends ~15% of such a job in scavenges.
  if (job.lang === 'ts') return start(job, process.execPath, ['--max-semi-space-size=64', '--import', 'tsx', join(root, 'scripts/test/uvu.mjs'), ...job.names]);
  const summary = join(tmp, `py-${i}.json`);
  job.summary = summary;
  return start(job, py, [join(root, 'scripts/test/pyunit.py'), summary, ...job.names], { PYTHONDONTWRITEBYTECODE: '1' });
}

let passed = 0;
let failed = 0;
let skippedNative = 0;

function count(r) {
  const { job, out } = r;
  if (job.lang === 'ts') {
    const c = uvuCounts(out);
    if (!c) return false;
    passed += c.passed; // less the skips test/helpers/skip.ts recorded (tally)
    failed += c.total - c.passed + c.loadErrors;
    skippedNative += c.nativeSkips;
    return r.code === 0 || c.total - c.passed + c.loadErrors > 0;
  }
  if (!existsSync(job.summary)) return false;
  const s = JSON.parse(readFileSync(job.summary, 'utf8'));
  passed += s.passed; // the Python skips are not in it
  failed += s.failed;
  return r.code === 0 || s.failed > 0;
}

function show(r) {
  const what = r.job.names.length > 3 ? `${r.job.names.slice(0, 3).join(', ')} and ${r.job.names.length - 3} more` : r.job.names.join(', ');
  process.stdout.write(`\n── ${r.job.lang}: ${what} (${r.seconds.toFixed(1)} s, from ${r.at.toFixed(0)} s)\n${r.out.replace(/\n*$/, '\n')}`);
}

function stopAll(signal) {
  for (const c of children) try { process.kill(-c.pid, signal); } catch { /* gone */ }
}
for (const s of ['SIGINT', 'SIGTERM']) {
  process.on(s, () => {
    stopAll('SIGTERM');
    rmSync(tmp, { recursive: true, force: true });
    console.log(`test: interrupted (${s}) with jobs still running\n${passed} passed, ${failed + 1} failed, 0 skipped`);
    process.exit(130);
  });
}

/** The CPU time (all cores, in ticks) spent busy and in all, from /proc/stat; null off Linux. */
function cpuTicks() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const idle = f[3] + (f[4] || 0);
    const all = f.reduce((a, b) => a + b, 0);
    return { idle, all };
  } catch {
    return null;
  }
}

const t0 = Date.now();
let next = 0;
let most = 0;
let running = 0;
async function worker(once = false) {
  running++;
  most = Math.max(most, running);
  while (next < jobs.length) {
    const i = next++;
    const r = await runJob(jobs[i], i);
    show(r);
    if (!count(r)) {
      broken++;
      console.error(`test: ${r.job.names.join(', ')} ended with status ${r.code} and no totals (a crash while loading?)`);
    }
    if (once) break;
  }
  running--;
}
// `width` workers, and (like make -l) one more job whenever a core sat more than half idle over the
// last second while jobs wait: many suites spend their time waiting on a probe, a lock, a timeout or
// the fake GitHub, and a fixed width leaves the cores idle then. At most twice the width at once.
const workers = Array.from({ length: Math.min(width, jobs.length) }, worker);
const extraLimit = process.env.NPU_BLOCK_GATE_TEST_ADAPT === '0' || jobsAt >= 0 ? 0 : width;
let last = cpuTicks();
const adapt = extraLimit && last ? setInterval(() => {
  const now = cpuTicks();
  if (!now) return;
  const idleCores = ((now.idle - last.idle) / Math.max(1, now.all - last.all)) * cores;
  last = now;
  if (idleCores > 0.5 && next < jobs.length && running < width + extraLimit) workers.push(worker(true));
}, 1000) : null;
while (true) {
  const n = workers.length;
  await Promise.all(workers);
  if (workers.length === n) break;
}
if (adapt) clearInterval(adapt);
if (fixtures) {
  const r = await fixtures;
  if (r.code !== 0) {
    show(r);
    broken++;
  }
}

// ---- skips, the CI rule, the closing line

const records = readFileSync(skipsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const t = tally({ passed, failed, nativeSkips: skippedNative, records, fast, ci, broken });
if (t.lines.length) process.stdout.write(`\n${t.lines.join('\n')}\n`);
console.log(`test: ${jobs.length} jobs, ${width} at a time${most > width ? ` (up to ${most} while cores were idle)` : ''}, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
rmSync(tmp, { recursive: true, force: true });
console.log(t.closing);
process.exit(t.failed > 0 || broken ? 1 : 0);
