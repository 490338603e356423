// `affected` (issue 19): which model dirs a change touches, from the same inputs the kernel-cache
// key and the check read. On the real mlir-air tree (a private copy) and on made-up facts; the CLI
// on a git checkout of air-mini.
import { test } from '../helpers/skip.ts';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { affected, inTree, isDoc, matrixOf, type ModelFacts } from '../../src/fleet/affected.ts';
import { affectedMarkdown, legCount } from '../../src/fleet/affected-text.ts';
import { matrixLimitNote } from '../../src/fleet/legs.ts';
import { modelNames, planFacts } from '../../src/fleet/plans.ts';
import { main } from '../../src/cli.ts';
import { silentLog } from '../../src/log.ts';
import { copyParseableRealTree, missingRealTree } from '../helpers/mlirair.ts';
import { findNumpyPython, missingNumpy } from '../helpers/python.ts';
import { makeGitRemote, git } from '../helpers/git-remote.ts';

const LLMS = 'programming_examples/llms';
const python = findNumpyPython();
const maybe = test.unless(missingRealTree() ?? missingNumpy());

let real: { root: string; facts: ModelFacts[] } | null = null;
async function realFacts() {
  if (!real) {
    const t = copyParseableRealTree(python!);
    real = { root: t.root, facts: await planFacts(t.root, modelNames(t.root), { python, timeoutSec: 300, log: silentLog }) };
  }
  return real;
}

/** Model dirs whose own Python imports `module` (read from the sources, not from the plan). */
function directImporters(root: string, module: RegExp): string[] {
  const out: string[] = [];
  for (const m of readdirSync(join(root, LLMS))) {
    let files: string[];
    try { files = readdirSync(join(root, LLMS, m)).filter((f) => f.endsWith('.py')); } catch { continue; }
    if (files.some((f) => readFileSync(join(root, LLMS, m, f), 'utf8').split('\n').some((l) => /^\s*(from|import)\s/.test(l) && module.test(l)))) out.push(m);
  }
  return out.sort();
}

const names = (models: string[]) => models.map((m) => m.split('/').pop()!);

maybe('a change to llama32_1b_prefill.py: llama32_1b and every model that imports it, no qwen model', async () => {
  const { root, facts } = await realFacts();
  const runnable = facts.filter((f) => !f.refusal).map((f) => f.name);
  assert.ok(runnable.length >= 9, `the bf16 models plan: ${runnable.join(', ')}`);
  const a = affected(facts, [`${LLMS}/llama32_1b/llama32_1b_prefill.py`]);
  const inModels = names(a.models);
  for (const m of ['llama32_1b', 'llama32_3b', 'smollm2_1_7b']) assert.ok(inModels.includes(m), `${m} in: ${inModels.join(', ')}`);
  for (const m of directImporters(root, /llama32_1b_prefill/).filter((m) => runnable.includes(m))) assert.ok(inModels.includes(m), `${m} imports it`);
  assert.equal(inModels.filter((m) => m.startsWith('qwen')), []);
  assert.not.ok(a.everything);
  const row = (n: string) => a.rows.find((r) => r.name === n)!;
  assert.match(row('smollm2_1_7b').why, "runs llama32_1b's block");
  // A quantized model that runs llama's block is touched, but Phase 2 cannot run on it: out, saying why.
  assert.ok(row('llama32_1b_int4').touched && !row('llama32_1b_int4').in);
  assert.match(row('llama32_1b_int4').why, /Phase 2 cannot run on it/);
  assert.is(row('qwen25_0_5b').why, 'no changed file is among its inputs');
  // The matrix: model dirs as a workflow passes them to model-dir, times the runner labels.
  assert.equal(matrixOf(a.models, ['npu-phoenix', 'npu-strix']), { include: a.models.flatMap((model) => [{ model, runner: 'npu-phoenix' }, { model, runner: 'npu-strix' }]) });
  assert.ok(a.models.every((m) => m.startsWith(`${LLMS}/`)));
});

maybe('a change to shared/infra/cache.py: every model that imports it', async () => {
  const { root, facts } = await realFacts();
  const a = affected(facts, [`${LLMS}/shared/infra/cache.py`]);
  const inModels = names(a.models);
  const runnable = facts.filter((f) => !f.refusal).map((f) => f.name);
  for (const m of directImporters(root, /shared\.infra(\.cache\b| import .*\bcache\b)/).filter((m) => runnable.includes(m))) assert.ok(inModels.includes(m), `${m} imports it`);
  // Every model in reads it through its closure; every runnable model does (KernelCache runs every ELF).
  for (const m of inModels) assert.ok(facts.find((f) => f.name === m)!.inputs.has(`${LLMS}/shared/infra/cache.py`));
  assert.equal(inModels, runnable);
  assert.equal(a.changes, [{ file: `${LLMS}/shared/infra/cache.py`, kind: 'input', models: a.changes[0].models }]);
});

maybe("a change to a model's docs/ names nothing; a top-level file names everything and says so", async () => {
  const { facts } = await realFacts();
  const docs = affected(facts, [`${LLMS}/llama32_1b/docs/development_progress/phase2_block.md`, `${LLMS}/qwen3_4b/docs/notes.txt`, `${LLMS}/qwen3_4b/TODO.md`]);
  assert.equal(docs.models, []);
  assert.ok(docs.changes.every((c) => c.kind === 'docs'), JSON.stringify(docs.changes));
  assert.ok(docs.rows.every((r) => !r.in));
  const top = affected(facts, ['CMakeLists.txt']);
  assert.ok(top.everything);
  assert.equal(names(top.models), facts.filter((f) => !f.refusal).map((f) => f.name));
  assert.match(affectedMarkdown(top, []), /CMakeLists\.txt is outside every model's inputs and cannot be placed: every model/);
  // A kernel example no model compiles is placed, and affects nothing.
  assert.equal(affected(facts, ['programming_examples/relu/relu.py']).changes[0].kind, 'unread');
  // A file in a model dir that nothing imports: that model only.
  const own = affected(facts, [`${LLMS}/qwen3_4b/my_sweep.py`]);
  assert.equal(names(own.models), ['qwen3_4b']);
  assert.match(own.rows.find((r) => r.name === 'qwen3_4b')!.why, 'is in its model dir');
});

// ---- issue 28: what a change removes, and kernel sources by compile path ---------------------------

/** A git repository made from a private copy of the real tree, with a branch `change` off `main`. */
function realRepo(): { root: string; commit: (msg: string) => void } {
  const t = copyParseableRealTree(python!);
  git(t.root, ['init', '--quiet', '-b', 'main']);
  git(t.root, ['add', '-A']);
  git(t.root, ['commit', '--quiet', '-m', 'base']);
  git(t.root, ['checkout', '--quiet', '-b', 'change']);
  return { root: t.root, commit: (msg) => { git(t.root, ['add', '-A']); git(t.root, ['commit', '--quiet', '-m', msg]); } };
}

maybe('issue 28: git rm -r llms/llama32_1b names llama32_3b and smollm2_1_7b (both import it)', async () => {
  const r = realRepo();
  git(r.root, ['rm', '-r', '--quiet', `${LLMS}/llama32_1b`]);
  r.commit('delete llama32_1b');
  const j = await cli(['affected', '--tree', r.root, '--base', 'main', '--json', '--python', python!, '--timeout', '300']);
  assert.is(j.code, 0, j.err);
  const got = names(JSON.parse(j.out).models);
  for (const m of ['llama32_3b', 'smollm2_1_7b']) assert.ok(got.includes(m), `${m} in: ${got.join(', ')}`);
  assert.not.ok(got.includes('llama32_1b'), 'the deleted model is not a leg');
  // The head's plan names the import that no longer resolves.
  const row = JSON.parse(j.out).rows.find((x: { name: string }) => x.name === 'smollm2_1_7b');
  assert.match(row.why, /imports llama32_1b_\w+, which (is|are) neither a tree file nor an installed package/);
});

maybe('issue 28: renaming shared/infra/fa_headfirst.py without fixing imports names the bf16 models that import it', async () => {
  const r = realRepo();
  const infra = `${LLMS}/shared/infra`;
  const importers = directImporters(r.root, /shared\.infra\.fa_headfirst|shared\.infra import .*\bfa_headfirst\b/);
  git(r.root, ['mv', `${infra}/fa_headfirst.py`, `${infra}/fa_head_first.py`]);
  r.commit('rename fa_headfirst');
  const j = await cli(['affected', '--tree', r.root, '--base', 'main', '--json', '--python', python!, '--timeout', '300']);
  assert.is(j.code, 0, j.err);
  const got = names(JSON.parse(j.out).models);
  const bf16 = ['llama32_1b', 'llama32_3b', 'qwen25_0_5b', 'qwen25_1_5b', 'qwen25_3b', 'qwen3_0_6b', 'qwen3_1_7b', 'qwen3_4b', 'smollm2_1_7b'];
  const want = importers.filter((m) => bf16.includes(m));
  assert.is(want.length, 6, `the issue counts 6 bf16 importers: ${want.join(', ')}`);
  for (const m of want) assert.ok(got.includes(m), `${m} imports it: in ${got.join(', ')}`);
});

maybe('issue 28: a change to gelu_and_mul.cc (only gemma compiles it) names no bf16 model', async () => {
  const { facts } = await realFacts();
  const a = affected(facts, ['programming_examples/gelu_and_mul/gelu_and_mul.cc']);
  assert.equal(a.models, [], a.rows.filter((r) => r.in).map((r) => `${r.name}: ${r.why}`).join('\n'));
  assert.equal(a.changes[0].models, ['gemma3_4b_q4nx'], 'gemma compiles it (compile_gelu_and_mul)');
  // A kernel every model's compile path builds (compile_all_external_kernels -> compile_silu_and_mul) still counts.
  const silu = affected(facts, ['programming_examples/silu_and_mul/silu_and_mul.cc']);
  assert.ok(names(silu.models).includes('llama32_1b') && names(silu.models).includes('qwen3_4b'), names(silu.models).join(', '));
});

// ---- made-up facts ------------------------------------------------------------------------------

const fact = (name: string, files: string[], over: Partial<ModelFacts> = {}): ModelFacts => ({
  name, refusal: null, error: null, inputs: new Map(files.map((f) => [f, 'import' as const])), inherits: [], block: null, ...over,
});

test('a model whose plan failed is kept in on any change but documentation', () => {
  const facts = [fact('a', [`${LLMS}/a/a.py`]), fact('b', [], { error: 'probe crashed' })];
  const a = affected(facts, [`${LLMS}/a/a.py`]);
  assert.equal(names(a.models), ['a', 'b']);
  assert.match(a.rows[1].why, /its plan failed \(probe crashed\)/);
  assert.equal(affected(facts, [`${LLMS}/a/README.md`]).models, []);
});

test('an air root below the repository top level: paths are taken relative to it; outside it nothing can be placed', () => {
  const facts = [fact('a', [`${LLMS}/a/a.py`]), fact('q', [], { refusal: 'records no ffn_out' })];
  const a = affected(facts, [`mlir-air/${LLMS}/a/a.py`], 'mlir-air');
  assert.equal(a.models, [`mlir-air/${LLMS}/a`]);
  const out = affected(facts, ['tools/build.sh'], 'mlir-air');
  assert.ok(out.everything);
  assert.equal(out.models, [`mlir-air/${LLMS}/a`], 'every runnable model; never a refused one');
  assert.is(inTree('mlir-air/x/../y.py', 'mlir-air'), 'y.py');
  assert.is(inTree('../etc/passwd', ''), null);
  assert.ok(isDoc('docs/buildingRyzenLin.md') && isDoc('x/docs/a.py') && isDoc('LICENSE'));
  assert.not.ok(isDoc('CMakeLists.txt') || isDoc(`${LLMS}/verify/prompts/base.txt`));
});

test('issue 28: 261 legs (87 models x 3 runner labels) warn, naming GitHub\'s matrix limit of 256', () => {
  const facts = Array.from({ length: 87 }, (_, i) => fact(`m${String(i).padStart(2, '0')}`, [`${LLMS}/shared/x.py`]));
  const a = affected(facts, [`${LLMS}/shared/x.py`]);
  assert.is(a.models.length, 87);
  assert.is(legCount(a, ['npu-a', 'npu-b', 'npu-c']), 261);
  assert.match(affectedMarkdown(a, ['npu-a', 'npu-b', 'npu-c']), /> \[!WARNING\]\n> 261 legs: GitHub Actions runs at most 256 jobs from one matrix/);
  assert.match(matrixLimitNote(261)!, /at most 256 jobs/);
  assert.is(matrixLimitNote(256), null);
  assert.not.match(affectedMarkdown(a, ['npu-a', 'npu-b']), /256/, '174 legs: no warning');
});

// ---- the CLI on a git checkout --------------------------------------------------------------------

function sink() {
  let text = '';
  const w = new Writable({ write(c, _e, cb) { text += c; cb(); } });
  return { w, get text() { return text; } };
}
async function cli(args: string[]) {
  const out = sink();
  const err = sink();
  const code = await main(args, out.w as unknown as NodeJS.WritableStream, err.w as unknown as NodeJS.WritableStream);
  return { code, out: out.text, err: err.text };
}

test('the CLI: base...head by git diff, JSON for strategy.matrix, the table for people, bad input in one line', async () => {
  const r = makeGitRemote();
  git(r.work, ['checkout', '--quiet', '-b', 'feature']);
  writeFileSync(join(r.model('tiny_qwen3'), 'tiny_qwen3_prefill.py'), readFileSync(join(r.model('tiny_qwen3'), 'tiny_qwen3_prefill.py'), 'utf8') + '\n# a change\n');
  mkdirSync(join(r.model('tiny_llama'), 'docs'), { recursive: true });
  writeFileSync(join(r.model('tiny_llama'), 'docs', 'notes.md'), 'notes\n');
  git(r.work, ['add', '-A']);
  git(r.work, ['commit', '--quiet', '-m', 'change']);
  const j = await cli(['affected', '--tree', r.work, '--base', 'main', '--head', 'HEAD', '--runners', 'npu-a,npu-b', '--json']);
  assert.is(j.code, 0, j.err);
  const got = JSON.parse(j.out);
  assert.equal(got.models, [`${LLMS}/tiny_qwen3`]);
  assert.equal(got.matrix, { include: [{ model: `${LLMS}/tiny_qwen3`, runner: 'npu-a' }, { model: `${LLMS}/tiny_qwen3`, runner: 'npu-b' }] });
  assert.equal(got.changes.map((c: { kind: string }) => c.kind), ['docs', 'input']);
  const t = await cli(['affected', '--tree', r.model('tiny_llama'), '--changed', `${LLMS}/shared/infra/cache.py`]);
  assert.is(t.code, 0, t.err);
  assert.match(t.out, /^3 models to check for 1 changed file\./);
  assert.match(t.out, /in   tiny_llama +imports programming_examples\/llms\/shared\/infra\/cache\.py/);
  const bad = await cli(['affected', '--tree', r.work, '--changed-from', join(r.root, 'missing.txt')]);
  assert.is(bad.code, 2);
  assert.is(bad.err.trim().split('\n').length, 1, bad.err);
  assert.match(bad.err, /missing\.txt: cannot read the list of changed files: no such file/);
  const both = await cli(['affected', '--tree', r.work, '--base', 'main', '--changed', 'x']);
  assert.is(both.code, 2);
  const notTree = await cli(['affected', '--tree', r.root, '--changed', 'x']);
  assert.is(notTree.code, 2);
  assert.match(notTree.err, /not an mlir-air tree/);
});

test.run();
