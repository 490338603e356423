// Every path where the Action's own process writes or deletes after the probe ran (issue 15,
// deliverable 2), against what a pull request's code leaves behind: symlinks in the run dir and in
// the model dir pointing at a victim (~/.bashrc, ~/.ssh), directories where files go, a probe.json
// that names a restore target of its choosing. Each write lands in the run dir or the model's build
// dir, or is refused; the victim never changes.
import { test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { fixture, fullProbeJson } from './helpers/rundir.ts';
import { writeMeta, META_FILE } from '../src/github/split.ts';
import { check } from '../src/check/index.ts';
import { kernelTarget, restoreKernels, recordKernels, storeKernels, placeDirect, type KernelState } from '../src/check/kernels.ts';
import { closeGitDirs, sandboxedPlacer } from '../src/check/probe.ts';
import { Staging } from '../src/probe/staging.ts';
import { KernelStore } from '../src/cache/kernel.ts';
import { storeReference } from '../src/cache/reference.ts';
import { confineBelow } from '../src/fs/confine.ts';
import { chooseIsolation, lockFiles } from '../src/probe/isolate.ts';
import { removeStaleReports } from '../src/check/rundir.ts';
import { InputError } from '../src/errors.ts';
import type { GhContext } from '../src/github/context.ts';
import type { TrustDecision } from '../src/github/trust.ts';
import type { Plan } from '../src/plan.ts';

const quiet = { step: () => undefined, warn: () => undefined };
const logged: string[] = [];
const log = { step: (m: string) => { logged.push(m); }, warn: (m: string) => { logged.push(`WARN ${m}`); } };

/** A file the attacker wants changed (a shell profile) and a dir it wants filled (~/.ssh). */
function victim() {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-victim-'));
  const file = join(dir, '.bashrc');
  writeFileSync(file, 'export PS1=ok\n');
  chmodSync(file, 0o600);
  const ssh = join(dir, '.ssh');
  mkdirSync(ssh);
  writeFileSync(join(ssh, 'id_ed25519'), 'KEY\n');
  return { dir, file, ssh, intact: () => readFileSync(file, 'utf8') === 'export PS1=ok\n' && (statSync(file).mode & 0o777) === 0o600 && readdirSync(ssh).join() === 'id_ed25519' && readFileSync(join(ssh, 'id_ed25519'), 'utf8') === 'KEY\n' };
}

const ctx = { owner: 'acme', repo: 'mlir-air', eventName: 'pull_request', sha: 'a'.repeat(40), pr: { number: 3 }, runId: 9, runAttempt: 1 } as unknown as GhContext;
const trust = { judged: { headSha: 'b'.repeat(40) } } as unknown as TrustDecision;

test('github.json (mode probe): a link, or a directory, the probe left at its name is replaced, never written through', () => {
  const v = victim();
  const run = mkdtempSync(join(tmpdir(), 'nbg-run-'));
  symlinkSync(v.file, join(run, META_FILE));
  // The message is the probe's to choose: $(...) would run if a shell sourced the file it landed in.
  writeMeta(run, ctx, trust, 'm', { checkoutSha: null, error: { message: 'boom $(touch /tmp/pwned)', exitCode: 3 }, isolation: null });
  assert.ok(v.intact(), 'the link target is unchanged');
  assert.ok(lstatSync(join(run, META_FILE)).isFile());
  assert.match(readFileSync(join(run, META_FILE), 'utf8'), /"schema": "npu-block-gate\/github"/);
  rmSync(join(run, META_FILE));
  mkdirSync(join(run, META_FILE, 'sub'), { recursive: true });
  symlinkSync(v.ssh, join(run, META_FILE, 'sub', 'ssh'));
  writeMeta(run, ctx, trust, 'm', { checkoutSha: null, error: null, isolation: null });
  assert.ok(lstatSync(join(run, META_FILE)).isFile());
  assert.ok(v.intact(), 'removing the directory never followed the link inside it');
});

test('report.json and report.md (every judge): links the probe left are removed and replaced; their targets never change', async () => {
  const v = victim();
  const f = fixture();
  symlinkSync(v.file, join(f.runDir, 'report.json'));
  symlinkSync(join(v.ssh, 'id_ed25519'), join(f.runDir, 'report.md'));
  const plan: Plan = { mode: 'report', modelDir: null, promptStyle: null, prompt: null, python: null, runDir: f.runDir, threshold: null, writeDocs: false, timeoutSec: null, commit: null };
  const r = await check(plan, { log: quiet });
  assert.is(r.report.outcome, 'pass');
  assert.ok(v.intact());
  for (const n of ['report.json', 'report.md']) assert.ok(lstatSync(join(f.runDir, n)).isFile(), n);
  // removeStaleReports on its own: rm of a link removes the link.
  rmSync(join(f.runDir, 'report.md'));
  symlinkSync(v.file, join(f.runDir, 'report.md'));
  removeStaleReports(f.runDir);
  assert.not.ok(existsSync(join(f.runDir, 'report.md')));
  assert.ok(v.intact());
});

test('probe.json (the kernel cache\'s account, after the probe): a link is refused unfollowed, nothing written through it', () => {
  const v = victim();
  const f = fixture();
  const state = { store: new KernelStore(v.dir), key: 'ab'.repeat(16), target: join(f.modelDir, 'x'), source: join(f.modelDir, 'x'), restored: null };
  // A link out of the run dir is refused on reading, before anything is written.
  const elsewhere = join(v.dir, 'probe.json');
  writeFileSync(elsewhere, JSON.stringify(fullProbeJson(), null, 2));
  rmSync(join(f.runDir, 'probe.json'));
  symlinkSync(elsewhere, join(f.runDir, 'probe.json'));
  const before = readFileSync(elsewhere, 'utf8');
  assert.throws(() => recordKernels(f.runDir, state), /probe\.json: is a symlink: .*never through a link/);
  assert.is(readFileSync(elsewhere, 'utf8'), before);
  // A link to another file in the run dir: refused the same way (issue 25: a link is never followed); nothing written.
  rmSync(join(f.runDir, 'probe.json'));
  writeFileSync(join(f.runDir, 'other.json'), before);
  symlinkSync(join(f.runDir, 'other.json'), join(f.runDir, 'probe.json'));
  assert.throws(() => recordKernels(f.runDir, state), /probe\.json: is a symlink: .*never through a link/);
  assert.is(readFileSync(join(f.runDir, 'other.json'), 'utf8'), before);
  assert.ok(lstatSync(join(f.runDir, 'probe.json')).isSymbolicLink());
});

/** An mlir-air-like tree with a model dir and a run dir whose config-stage probe.json says `dir`. */
function treeWith(dir: string) {
  const root = mkdtempSync(join(tmpdir(), 'nbg-tree-'));
  const model = join(root, 'programming_examples/llms/tiny_m');
  mkdirSync(model, { recursive: true });
  writeFileSync(join(model, 'tiny_m_prefill.py'), '# kernels\n');
  const run = join(root, 'run');
  mkdirSync(run);
  const p = fullProbeJson();
  p.stage = 'config';
  p.emulate = null;
  p.kernel_cache.dir = dir;
  writeFileSync(join(run, 'probe.json'), JSON.stringify(p, null, 2));
  return { root, model: { dir: model, name: 'tiny_m', airRoot: root }, run };
}

test('kernel cache restore: a target probe.json names outside the model dir, or through a link, is refused; nothing is deleted', () => {
  const v = victim();
  for (const dir of [v.ssh, '../../../../../../' + v.ssh, 'programming_examples/llms/tiny_m/../../../../' + v.ssh.slice(1)]) {
    const t = treeWith(dir);
    logged.length = 0;
    assert.is(restoreKernels(t.model, t.run, mkdtempSync(join(tmpdir(), 'nbg-kc-')), log), null, dir);
    assert.ok(logged.some((l) => /^WARN kernel cache: not used \(kernel_cache.dir .* is not (a relative path below the tree|inside the model dir)\)/.test(l)), logged.join('\n'));
    assert.ok(v.intact());
  }
  // A link on the way (the build dir), or at the target itself.
  for (const at of ['build_peano', 'build_peano/prefill_kernel_cache']) {
    const t = treeWith('programming_examples/llms/tiny_m/build_peano/prefill_kernel_cache');
    if (at === 'build_peano') symlinkSync(v.dir, join(t.model.dir, 'build_peano'));
    else { mkdirSync(join(t.model.dir, 'build_peano')); symlinkSync(v.ssh, join(t.model.dir, at)); }
    const where = kernelTarget(t.model, 'programming_examples/llms/tiny_m/build_peano/prefill_kernel_cache');
    assert.ok('refused' in where && /is a symlink; the kernel cache is never restored through one/.test(where.refused), at);
    assert.is(restoreKernels(t.model, t.run, mkdtempSync(join(tmpdir(), 'nbg-kc-')), quiet), null);
    assert.ok(v.intact());
  }
});

const bwrapIso = (() => {
  try {
    const iso = chooseIsolation({ mode: 'namespace', untrusted: true, allowUnisolated: false });
    return iso.mode === 'namespace' ? iso : null;
  } catch { return null; }
})();

test.unless(bwrapIso ? null : { need: 'bwrap', why: 'namespace isolation (bubblewrap) is not available here' })('kernel cache restore: a hit is placed from inside the probe\'s sandbox, into the model dir\'s private copy; a link swapped in after the check leads nowhere', () => {
  const v = victim();
  const t = treeWith('programming_examples/llms/tiny_m/build_peano/prefill_kernel_cache');
  const cache = mkdtempSync(join(tmpdir(), 'nbg-kc-'));
  const staging = Staging.create({ modelDir: t.model.dir, iso: bwrapIso! });
  const copy = staging.model!;
  const place = sandboxedPlacer(bwrapIso!, staging);
  // Miss, then a stored entry: the next restore is a hit, placed by the sandboxed copy into the private copy.
  const miss = restoreKernels(t.model, t.run, cache, quiet, place, (p) => staging.hostPath(p))!;
  assert.is(miss.restored, null);
  assert.is(miss.source, join(copy, 'build_peano/prefill_kernel_cache'));
  mkdirSync(miss.source, { recursive: true });
  writeFileSync(join(miss.source, 'a.elf'), 'ELF');
  miss.store.store(miss.key, miss.source, { model: 'tiny_m', created_at: 'now', compile_seconds: 3 });
  rmSync(join(copy, 'build_peano'), { recursive: true });
  const hit = restoreKernels(t.model, t.run, cache, quiet, place, (p) => staging.hostPath(p))!;
  assert.ok(hit.restored);
  assert.is(readFileSync(join(hit.source, 'a.elf'), 'utf8'), 'ELF');
  assert.not.ok(existsSync(join(t.model.dir, 'build_peano')), 'the checkout\'s model dir is never written');
  // The race: after the check, the build dir in the copy becomes a link to ~/.ssh. In the sandbox the
  // victim is read-only; the copy fails and nothing lands there.
  rmSync(join(copy, 'build_peano'), { recursive: true });
  symlinkSync(v.dir, join(copy, 'build_peano'));
  const staged = mkdtempSync(join(tmpdir(), 'nbg-staged-'));
  writeFileSync(join(staged, 'a.elf'), 'ELF');
  assert.throws(() => place(staged, hit.target), /the copy into .* failed/);
  assert.ok(v.intact(), 'nothing was written through the swapped link');
  assert.is(staging.remove(), null);
  assert.not.ok(existsSync(staging.root));
});

test('kernel cache store (trusted, after the verdict): a link in the build dir is never followed into the cache', () => {
  const v = victim();
  const t = treeWith('programming_examples/llms/tiny_m/build_peano/prefill_kernel_cache');
  const target = join(t.model.dir, 'build_peano/prefill_kernel_cache');
  mkdirSync(target, { recursive: true });
  writeFileSync(join(target, 'a.elf'), 'ELF');
  symlinkSync(join(v.ssh, 'id_ed25519'), join(target, 'b.elf'));
  const store = new KernelStore(mkdtempSync(join(tmpdir(), 'nbg-kc-')));
  const state: KernelState = { store, key: 'cd'.repeat(16), target, source: target, restored: null };
  logged.length = 0;
  storeKernels(state, fullProbeJson() as any, new Date(), log);
  assert.is(store.meta(state.key), null, 'nothing stored');
  assert.ok(logged.some((l) => /^WARN kernel cache: not stored \(.*b\.elf .* is not a regular file or directory/.test(l)), logged.join('\n'));
});

test('reference cache store (trusted, after the verdict): a tensor that is a link is not stored', () => {
  const v = victim();
  const f = fixture();
  rmSync(join(f.runDir, 'block0.ref.npy'));
  symlinkSync(join(v.ssh, 'id_ed25519'), join(f.runDir, 'block0.ref.npy'));
  const root = mkdtempSync(join(tmpdir(), 'nbg-ref-'));
  const r = storeReference(root, f.runDir, f.probe as any);
  assert.is(r.stored, false);
  assert.equal(readdirSync(root), []);
});

test('documents in the Action: a link where phase2_block.md or its directory goes is refused before anything is read or written', async () => {
  for (const at of ['phase2', 'dir']) {
    const v = victim();
    const f = fixture();
    if (at === 'phase2') symlinkSync(v.file, f.phase2);
    else { rmSync(join(f.modelDir, 'docs'), { recursive: true }); symlinkSync(v.dir, join(f.modelDir, 'docs')); }
    // A file named as an interrupted write's leftover, where the link leads: the sweep must not follow the link.
    const bait = join(at === 'phase2' ? v.dir : join(v.dir, 'development_progress'), `.phase2_block.md.nbg-${process.pid}-0123abcd.tmp`);
    mkdirSync(dirname(bait), { recursive: true });
    writeFileSync(bait, 'the user\'s\n');
    const plan: Plan = { mode: 'report', modelDir: f.modelDir, promptStyle: null, prompt: null, python: null, runDir: f.runDir, threshold: null, writeDocs: true, timeoutSec: null, commit: null, confineDocs: true };
    // The documents are refused (the verdict stands, G4 says why, the run exits 2); nothing is read or written through the link.
    const r = await check(plan, { log: quiet });
    assert.instance(r.docsError, InputError, at);
    assert.match(r.docsError!.message, /is a symlink; a document is never written through one/);
    assert.is(r.exitCode, 2);
    assert.is.not(r.report.gates.find((g) => g.id === 'G4')!.status, 'pass');
    assert.ok(r.report.warnings.some((w) => w.id === 'docs' && /G4: the documents were not written/.test(w.message)), at);
    assert.ok(existsSync(bait), `${at}: the sweep followed the link`);
    rmSync(bait);
    if (at === 'dir') rmSync(join(v.dir, 'development_progress'), { recursive: true });
    assert.ok(v.intact(), at);
    assert.not.ok(existsSync(join(v.dir, 'development_progress')));
  }
  // The CLI on the user's own tree keeps writing through a link (documented behaviour).
  const v = victim();
  const f = fixture();
  symlinkSync(v.file, f.phase2);
  await check({ mode: 'report', modelDir: f.modelDir, promptStyle: null, prompt: null, python: null, runDir: f.runDir, threshold: null, writeDocs: true, timeoutSec: null, commit: null }, { log: quiet });
  assert.match(readFileSync(v.file, 'utf8'), /Phase 2/);
});

test('confineBelow: inside, without a link on the way; a path not there yet is fine', () => {
  const v = victim();
  const root = mkdtempSync(join(tmpdir(), 'nbg-conf-'));
  mkdirSync(join(root, 'a/b'), { recursive: true });
  confineBelow(root, join(root, 'a/b/c.md'), 'a document');
  confineBelow(root, join(root, 'x/y/z.md'), 'a document');
  symlinkSync(v.dir, join(root, 'a/link'));
  assert.throws(() => confineBelow(root, join(root, 'a/link/c.md'), 'a document'), /a\/link is a symlink/);
  assert.throws(() => confineBelow(root, join(root, '../elsewhere.md'), 'a document'), /is not inside/);
  writeFileSync(join(root, 'a/file'), '');
  assert.throws(() => confineBelow(root, join(root, 'a/file/c.md'), 'a document'), /a\/file is not a directory/);
});

test('NPU lock files: a link planted where one goes is never followed (no create, no chmod through it)', () => {
  const v = victim();
  const lock = join(mkdtempSync(join(tmpdir(), 'nbg-lock-')), 'npu.lock');
  symlinkSync(v.file, lock);
  assert.equal(lockFiles({ NPU_BLOCK_GATE_NPU_LOCK: lock }).filter((p) => p === lock || p === v.file), []);
  assert.ok(v.intact());
  const dangling = join(mkdtempSync(join(tmpdir(), 'nbg-lock-')), 'npu.lock');
  symlinkSync(join(v.dir, 'created-through-link'), dangling);
  lockFiles({ NPU_BLOCK_GATE_NPU_LOCK: dangling });
  assert.not.ok(existsSync(join(v.dir, 'created-through-link')));
  const fresh = join(mkdtempSync(join(tmpdir(), 'nbg-lock-')), 'npu.lock');
  assert.ok(lockFiles({ NPU_BLOCK_GATE_NPU_LOCK: fresh }).includes(fresh));
  assert.is(statSync(fresh).mode & 0o777, 0o666);
});

test('uid mode closes the checkout\'s git dir (a worktree\'s git and common dir too) to group and others', () => {
  const root = mkdtempSync(join(tmpdir(), 'nbg-git-'));
  mkdirSync(join(root, 'repo/.git'), { recursive: true });
  chmodSync(join(root, 'repo/.git'), 0o2755);
  mkdirSync(join(root, 'repo/programming_examples/llms/m'), { recursive: true });
  closeGitDirs(join(root, 'repo/programming_examples/llms/m'));
  assert.is(statSync(join(root, 'repo/.git')).mode & 0o7777, 0o2700);
  mkdirSync(join(root, 'main/.git/worktrees/wt'), { recursive: true });
  writeFileSync(join(root, 'main/.git/worktrees/wt/commondir'), '../..\n');
  mkdirSync(join(root, 'wt/m'), { recursive: true });
  writeFileSync(join(root, 'wt/.git'), `gitdir: ${join(root, 'main/.git/worktrees/wt')}\n`);
  closeGitDirs(join(root, 'wt/m'));
  assert.is(statSync(join(root, 'main/.git')).mode & 0o077, 0);
  assert.is(statSync(join(root, 'main/.git/worktrees/wt')).mode & 0o077, 0);
});

test.run();
