// End to end: the CLI on a private copy of examples/air-mini, through the real probe and numpy.
import { test } from 'uvu';
import { test as skippable } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { readFileSync, existsSync, mkdtempSync, cpSync, writeFileSync, readdirSync, statSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { main } from '../src/cli.ts';
import { fromJson } from '../src/report/json.ts';
import type { Report } from '../src/record/report.ts';
import { copyAirMini } from './helpers/airmini.ts';
import { missingNumpy, runPython } from './helpers/python.ts';
import { npyBytes, npyHeader, f32Bytes } from './helpers/bytes.ts';

const tree = copyAirMini();
const runs = mkdtempSync(join(tmpdir(), 'nbg-runs-'));
// The kernel cache of these runs lives in a private root, never the user's ~/.cache.
process.env.NPU_BLOCK_GATE_CACHE_DIR = mkdtempSync(join(tmpdir(), 'nbg-kcache-'));
let n = 0;

function sink() {
  let text = '';
  const w = new Writable({ write(c, _e, cb) { text += c; cb(); } });
  return { w, get text() { return text; } };
}

async function cli(args: string[]) {
  const out = sink();
  const err = sink();
  // AIR_MINI_INJECT is --emulate --inject's alias on air-mini: none from outside leaks into a run here.
  const prev = process.env.AIR_MINI_INJECT;
  delete process.env.AIR_MINI_INJECT;
  try {
    const code = await main(args, out.w as unknown as NodeJS.WritableStream, err.w as unknown as NodeJS.WritableStream);
    return { code, out: out.text, err: err.text };
  } finally {
    if (prev === undefined) delete process.env.AIR_MINI_INJECT; else process.env.AIR_MINI_INJECT = prev;
  }
}

/** check on a model of the air-mini copy; `inject` plants a bug in its emulated NPU (--emulate --inject, the real tree's names). */
async function check(model: string, inject?: string, extra: string[] = []) {
  const runDir = join(runs, `${model}-${inject ?? 'clean'}-${n++}`);
  const r = await cli(['check', '--model-dir', tree.model(model), '--out', runDir, '--json', ...(inject ? ['--emulate', '--inject', inject] : []), ...extra]);
  const report = r.code <= 1 ? fromJson<Report>(r.out) : null;
  return { ...r, report, runDir };
}

const gate = (r: Report, id: string) => r.gates.find((g) => g.id === id)!;

for (const [model, threshold] of [['tiny_llama', 0.99], ['tiny_qwen3', 0.98], ['tiny_qwen25', 0.99]] as const) {
  test(`clean ${model}: pass, whole cosine >= 0.999, G2 threshold ${threshold}`, async () => {
    const r = await check(model);
    assert.is(r.code, 0, r.err);
    const rep = r.report!;
    assert.is(rep.outcome, 'pass');
    assert.ok(rep.metrics!.wholeCosine >= 0.999, `whole ${rep.metrics!.wholeCosine}`);
    assert.is(Number(rep.thresholds.perPosition.toFixed(6)), threshold);
    assert.match(gate(rep, 'G2').bar, new RegExp(`>= ${threshold}`));
    assert.equal(rep.gates.map((g) => g.status), ['pass', 'pass', 'pass', 'pass']);
    assert.is(rep.emulated, false, '--json says at its top level whether an NPU ran');
    assert.match(r.err, 'running block 0 on the NPU via');
    assert.ok(existsSync(join(r.runDir, 'report.json')) && existsSync(join(r.runDir, 'report.md')));
    assert.match(r.err, /python: .* \(Python 3/);
    assert.match(r.err, /\[\s*\d+\.\d+s\] probe: /);
  });
}

// The bisect must name the step air-mini's inject.py puts each bug in.
const failing: [string, string, string[], string][] = [
  ['transposed_q_weight', 'tiny_llama', ['G1', 'G2'], 'q_proj'],
  ['missing_causal_mask', 'tiny_llama', ['G1', 'G2'], 'attention'],
  ['interleaved_rope', 'tiny_llama', ['G1', 'G2'], 'rope'],
  ['dropped_bias', 'tiny_qwen25', ['G1', 'G2'], 'qkv_bias'],
  ['transposed_q_weight', 'tiny_qwen3', ['G1', 'G2'], 'q_proj'],
];
for (const [inject, model, anyOf, offender] of failing) {
  test(`${inject} on ${model} fails ${anyOf.join(' or ')} with exit 1; bisect names ${offender}`, async () => {
    const r = await check(model, inject, ['--no-docs']);
    assert.is(r.code, 1, r.err);
    const failed = r.report!.gates.filter((g) => g.status === 'fail').map((g) => g.id);
    assert.ok(failed.some((g) => anyOf.includes(g)), `failed: ${failed}`);
    assert.not.ok(failed.includes('G3'));
    const b = r.report!.bisect!;
    assert.ok(b.available, b.reason);
    assert.is(b.offender?.step, offender);
    assert.equal(b.steps.filter((s) => s.fixes).map((s) => s.step), [offender]);
  });
}

test('kernel cache: the first check compiles and stores, the next restores and compiles nothing', async () => {
  const t = copyAirMini();
  const root = mkdtempSync(join(tmpdir(), 'nbg-kcache-'));
  const run = async (name: string) => {
    const dir = join(runs, `kc-${name}-${n++}`);
    const r = await cli(['check', '--model-dir', t.model('tiny_qwen3'), '--out', dir, '--no-docs', '--cache-dir', root, '--json']);
    assert.is(r.code, 0, r.err);
    return { r, dir, rep: fromJson<Report>(r.out) };
  };
  const cold = await run('cold');
  assert.match(cold.r.err, /kernel cache: miss [0-9a-f]{12}/);
  assert.match(cold.r.err, /kernel cache: stored/);
  assert.is(cold.rep.kernel_cache!.hit, false);
  assert.ok((cold.rep.kernel_cache!.compiled ?? []).length > 0);
  rmSync(join(t.model('tiny_qwen3'), 'build_peano'), { recursive: true, force: true });
  const warm = await run('warm');
  assert.match(warm.r.err, /kernel cache: hit/);
  // The reference follows the same cache root: stored on the cold run, loaded on the warm one.
  assert.is(cold.rep.reference!.cache!.hit, false);
  assert.is(warm.rep.reference!.cache!.hit, true);
  assert.ok(warm.rep.reference!.cache!.dir.startsWith(join(root, 'reference')));
  assert.ok(readFileSync(join(warm.dir, 'block0.ref.npy')).equals(readFileSync(join(cold.dir, 'block0.ref.npy'))));
  assert.is(warm.rep.kernel_cache!.hit, true);
  assert.is(warm.rep.kernel_cache!.key, cold.rep.kernel_cache!.key);
  assert.equal(warm.rep.kernel_cache!.compiled, []);
  assert.ok(readFileSync(join(warm.dir, 'block0.npu.npy')).equals(readFileSync(join(cold.dir, 'block0.npu.npy'))));
  // A builder change in shared/ is a new key: compile again.
  const infra = join(t.llms, 'shared/infra/cache.py');
  writeFileSync(infra, readFileSync(infra, 'utf8') + '\n# touched\n');
  const changed = await run('changed');
  assert.match(changed.r.err, /kernel cache: miss/);
  assert.is.not(changed.rep.kernel_cache!.key, cold.rep.kernel_cache!.key);
});

test('--layers adds the informational per-layer table; layer 0 of it agrees with the gated block', async () => {
  const r = await check('tiny_llama', undefined, ['--no-docs', '--layers']);
  assert.is(r.code, 0, r.err);
  const layers = r.report!.layers!;
  assert.equal(layers.map((l) => l.layer), [0, 1]); // 3 layers: the last is the post-norm hidden, as in mlir-air
  for (const l of layers) assert.ok(l.wholeCosine >= 0.999 && l.nonFinite === 0, JSON.stringify(l));
  assert.is(layers[0].wholeCosine, r.report!.metrics!.wholeCosine);
  assert.match(readFileSync(join(r.runDir, 'report.md'), 'utf8'), /### Every layer/);
  const plain = await check('tiny_llama', undefined, ['--no-docs']);
  assert.is(plain.report!.layers, null);
});

test('bisect can be turned off, and report mode on a run dir without a bisect says why', async () => {
  const r = await check('tiny_llama', 'missing_causal_mask', ['--no-docs', '--no-bisect']);
  assert.is(r.code, 1);
  assert.is(r.report!.bisect!.available, false);
  assert.match(r.report!.bisect!.reason, /--no-bisect/);
  const again = await cli(['report', '--run-dir', r.runDir, '--no-docs', '--json']);
  assert.is(again.code, 1);
  assert.match(fromJson<Report>(again.out).bisect!.reason, /NPU host/);
});

test('stale_tail fails G2 and names the contiguous bad run at the tail', async () => {
  const r = await check('tiny_llama', 'stale_tail', ['--no-docs']);
  assert.is(r.code, 1);
  const rep = r.report!;
  assert.is(gate(rep, 'G2').status, 'fail');
  const L = rep.metrics!.realLen;
  assert.equal(rep.metrics!.perPosition.badRuns, [{ start: L - 3, end: L - 1, length: 3 }]);
  assert.match(gate(rep, 'G2').detail, new RegExp(`${L - 3}-${L - 1}`));
  const md = readFileSync(join(r.runDir, 'report.md'), 'utf8');
  assert.match(md, new RegExp(`rows ${L - 3}-${L - 1} \\(3 rows, at the tail of the prompt\\)`));
  assert.is(rep.bisect!.offender?.step, 'residual2');
  assert.match(md, /Offending boundary: `residual2`/);
});

test('nan_row fails G3, and the NaN row is in the whole cosine (G1) and the per-position minimum (G2)', async () => {
  const r = await check('tiny_llama', 'nan_row', ['--no-docs']);
  assert.is(r.code, 1);
  const rep = r.report!;
  const m = rep.metrics!;
  const row = Math.floor(m.realLen / 2); // air-mini's nan_row: NaN at (real_len // 2, 0)
  assert.equal(m.nonFinite.nan.first, { row, col: 0 });
  assert.ok(Number.isNaN(m.perPosition.cosines[row]), `row ${row}: ${m.perPosition.cosines[row]}`);
  assert.ok(m.perPosition.cosines.every((c, i) => i === row || c >= 0.99), 'every other row is clean');
  assert.ok(Number.isNaN(m.perPosition.min), `the minimum holds the NaN row: ${m.perPosition.min}`);
  assert.is(m.perPosition.worst[0].row, row);
  assert.ok(Number.isNaN(m.wholeCosine));
  assert.equal(rep.gates.map((g) => g.status), ['fail', 'fail', 'fail', 'skip']);
  assert.match(gate(rep, 'G2').detail, 'per-position cosine is NaN for at least one real row');
  assert.match(gate(rep, 'G3').detail, `1 NaN (first at row ${row}, col 0)`);
});

test('nan_padded fails G3 only', async () => {
  const r = await check('tiny_llama', 'nan_padded', ['--no-docs']);
  assert.is(r.code, 1);
  assert.equal(r.report!.gates.map((g) => g.status), ['pass', 'pass', 'fail', 'skip']);
  assert.match(gate(r.report!, 'G3').detail, /padded row/);
});

test('scale_drift passes G1-G3 and warns with the norm ratio 1.05', async () => {
  const r = await check('tiny_llama', 'scale_drift', ['--no-docs']);
  assert.is(r.code, 0);
  const rep = r.report!;
  assert.ok(Math.abs(rep.metrics!.errors.normRatio - 1.05) < 1e-3);
  assert.ok(rep.warnings.some((w) => w.id === 'norm_ratio' && /1\.05/.test(w.message)));
});

test('check twice keeps one history row per commit + prompt; hand text survives byte for byte', async () => {
  const model = tree.model('tiny_llama');
  const phase2 = join(model, 'docs/development_progress/phase2_block.md');
  const todo = join(model, 'TODO.md');
  rmSync(join(model, 'docs'), { recursive: true, force: true });
  const r1 = await check('tiny_llama', undefined, ['--commit', 'c0ffee1234567']);
  assert.is(r1.code, 0, r1.err);
  // A person edits both files, inside and around the sections.
  const p2 = readFileSync(phase2, 'utf8')
    .replace('## History\n', '## History\n\nRuns before May used CPU attention.\n')
    .replace('<!-- npu-block-gate:history:begin -->\n', '<!-- npu-block-gate:history:begin -->\nHand note in the history block.\n') + 'Closing remark.\n';
  writeFileSync(phase2, p2);
  const td = readFileSync(todo, 'utf8').replace('## Active blockers\n', '## Active blockers\n- B7: decode GEMV K=11008 (mine)\n') + '\nTrailing hand text.\n';
  writeFileSync(todo, td);
  const r2 = await check('tiny_llama', undefined, ['--commit', 'c0ffee1234567']);
  assert.is(r2.code, 0);
  const after = readFileSync(phase2, 'utf8');
  for (const s of ['Runs before May used CPU attention.\n', 'Hand note in the history block.\n', 'Closing remark.\n']) assert.ok(after.includes(s), s);
  const ourRows = after.split('\n').filter((l) => l.includes('| c0ffee123456 |'));
  assert.is(ourRows.length, 1);
  const todoAfter = readFileSync(todo, 'utf8');
  assert.ok(todoAfter.includes('- B7: decode GEMV K=11008 (mine)\n') && todoAfter.endsWith('\nTrailing hand text.\n'));
  assert.match(todoAfter, /- \[x\] 2: Single-Block Validation/);
  // An identical re-run changes nothing at all (no churn in a docs PR).
  const r3 = await check('tiny_llama', undefined, ['--commit', 'c0ffee1234567']);
  assert.is(r3.report!.docs!.changed, false);
  assert.is(readFileSync(phase2, 'utf8'), after);
  // Everything but the checkbox is byte-identical.
  assert.is(todoAfter.replace('- [x] 2: Single-Block Validation', '- [ ] 2: Single-Block Validation'), td.replace('- [x] 2: Single-Block Validation', '- [ ] 2: Single-Block Validation'));
});

// Bad inputs: one line naming the file and the problem, exit 2, nothing half-written.
async function badRunDir(mutate: (dir: string) => void) {
  const good = join(runs, 'good-for-bad');
  if (!existsSync(join(good, 'probe.json'))) {
    const r = await cli(['check', '--model-dir', tree.model('tiny_llama'), '--out', good, '--no-docs']);
    assert.is(r.code, 0, r.err);
  }
  const dir = join(runs, `bad-${n++}`);
  cpSync(good, dir, { recursive: true });
  for (const f of ['report.json', 'report.md', 'report.html']) rmSync(join(dir, f), { force: true });
  mutate(dir);
  const before = readdirSync(dir).sort();
  const r = await cli(['report', '--run-dir', dir, '--no-docs']);
  return { ...r, dir, before, after: readdirSync(dir).sort() };
}

function oneLineError(r: { code: number; err: string; out: string }, file: RegExp, problem: RegExp) {
  assert.is(r.code, 2, r.err);
  const lines = r.err.trim().split('\n').filter((l) => l.startsWith('npu-block-gate:'));
  assert.is(lines.length, 1, r.err);
  assert.match(lines[0], file);
  assert.match(lines[0], problem);
  assert.not.match(r.err, /\n\s+at /);
}

test('bad input: missing model dir', async () => {
  const r = await cli(['check', '--model-dir', join(tree.llms, 'no_such_model'), '--out', join(runs, 'x-missing')]);
  oneLineError(r, /no_such_model/, /does not exist/);
  assert.not.ok(existsSync(join(runs, 'x-missing', 'probe.json')));
});

test('--json still prints a report on an error: outcome error, exit code, the one-line message', async () => {
  const r = await cli(['check', '--model-dir', join(tree.llms, 'gone'), '--json']);
  assert.is(r.code, 2);
  const rep = fromJson<Report>(r.out);
  assert.is(rep.outcome, 'error');
  assert.is(rep.emulated, false);
  assert.is(rep.exit_code, 2);
  assert.match(rep.error!, /gone: model dir does not exist/);
  assert.equal(rep.gates, []);
});

test('bad input: a tree with no verify/', async () => {
  const t = copyAirMini();
  rmSync(join(t.llms, 'verify'), { recursive: true });
  const r = await cli(['check', '--model-dir', t.model('tiny_llama'), '--out', join(runs, 'x-noverify')]);
  oneLineError(r, /verify/, /.+/);
  assert.not.ok(existsSync(join(runs, 'x-noverify', 'probe.json')));
});

test('bad input: truncated .npy', async () => {
  const r = await badRunDir((d) => { const f = join(d, 'block0.npu.npy'); writeFileSync(f, readFileSync(f).subarray(0, 100)); });
  oneLineError(r, /block0\.npu\.npy/, /trunc|short|header|size|bytes/i);
  assert.equal(r.after, r.before);
});

test('bad input: .npy header shape disagrees with its size', async () => {
  const r = await badRunDir((d) => {
    const f = join(d, 'block0.npu.npy');
    const b = readFileSync(f);
    writeFileSync(f, Buffer.concat([b, Buffer.alloc(4 * 7)]));
  });
  oneLineError(r, /block0\.npu\.npy/, /size|bytes|payload|shape/i);
  assert.equal(r.after, r.before);
});

test('bad input: mismatched shapes between NPU and reference', async () => {
  const r = await badRunDir((d) => {
    const p = JSON.parse(readFileSync(join(d, 'probe.json'), 'utf8'));
    const [rows, cols] = p.tensors.ref.shape;
    writeFileSync(join(d, 'block0.ref.npy'), npyBytes(npyHeader('<f4', [rows, cols + 1]), f32Bytes(new Array(rows * (cols + 1)).fill(0.5))));
    p.tensors.ref.shape = [rows, cols + 1];
    writeFileSync(join(d, 'probe.json'), JSON.stringify(p));
  });
  // The declared shapes already disagree: refused from probe.json, before a tensor is opened.
  oneLineError(r, /probe\.json: tensors\.npu\.shape|block0\.(npu|ref)\.npy/, /column/);
});

test('bad input: a reference with more rows than the NPU tensor', async () => {
  const r = await badRunDir((d) => {
    const p = JSON.parse(readFileSync(join(d, 'probe.json'), 'utf8'));
    const rows = p.prompt.real_len - 1;
    const cols = p.tensors.npu.shape[1];
    writeFileSync(join(d, 'block0.npu.npy'), npyBytes(npyHeader('<f4', [rows, cols]), f32Bytes(new Array(rows * cols).fill(0.25))));
    p.tensors.npu.shape = [rows, cols];
    writeFileSync(join(d, 'probe.json'), JSON.stringify(p));
  });
  oneLineError(r, /probe\.json: tensors\.npu\.shape|block0\.ref\.npy/, /more than|fewer than/);
});

test('bad input: unknown dtype', async () => {
  const r = await badRunDir((d) => {
    const f = join(d, 'block0.npu.npy');
    const b = readFileSync(f);
    const s = b.toString('latin1').replace("'descr': '<f4'", "'descr': '<c8'");
    writeFileSync(f, Buffer.from(s, 'latin1'));
  });
  oneLineError(r, /block0\.npu\.npy/, /dtype|<c8/);
});

test('bad input: probe.json of another schema version', async () => {
  const r = await badRunDir((d) => {
    const p = JSON.parse(readFileSync(join(d, 'probe.json'), 'utf8'));
    p.schema_version = 99;
    writeFileSync(join(d, 'probe.json'), JSON.stringify(p));
  });
  oneLineError(r, /probe\.json/, /schema_version 99/);
  assert.equal(r.after, r.before);
});

test('--prompt and --prompt-style choose the prompt; --python picks the interpreter and says so', async () => {
  // The interpreter the CLI itself would pick, named by its absolute path (machines differ on which Python has numpy).
  const py = runPython('import sys; print(sys.executable)').trim();
  const r = await check('tiny_llama', undefined, ['--no-docs', '--prompt', 'Why is the sky blue ?', '--python', py]);
  assert.is(r.code, 0, r.err);
  assert.is(r.report!.prompt!.source, '--prompt');
  assert.is(r.report!.prompt!.text, 'Why is the sky blue ?');
  assert.is(r.report!.metrics!.realLen, r.report!.prompt!.real_len);
  assert.ok(r.err.includes(`python: ${py} `) && /from --python/.test(r.err), r.err);
  const base = await check('tiny_llama', undefined, ['--no-docs', '--prompt-style', 'base']);
  assert.is(base.code, 0, base.err);
  assert.is(base.report!.prompt!.style, 'base');
  assert.match(base.report!.prompt!.source, /verify\/prompts\/base\.txt:\d+/);
  oneLineError(await cli(['check', '--model-dir', tree.model('tiny_llama'), '--python', '/no/such/python']), /--python \/no\/such\/python/, /not found/);
  oneLineError(await cli(['check', '--model-dir', tree.model('tiny_llama'), '--prompt-style', 'chat']), /--prompt-style/, /base, instruct/);
});

test('usage errors exit 2 with one line', async () => {
  oneLineError(await cli(['check', '--bogus']), /--bogus/, /Unknown option|unknown/i);
  oneLineError(await cli(['check']), /--model-dir/, /needs/);
  oneLineError(await cli(['frobnicate']), /frobnicate/, /unknown command/);
  oneLineError(await cli(['check', '--model-dir', tree.model('tiny_llama'), '--threshold', '2']), /--threshold/, /\(0, 1\]/);
  const h = await cli(['--help']);
  assert.is(h.code, 0);
  assert.match(h.out, /npu-block-gate check/);
});

test('report re-judges a run dir without Python and agrees with check', async () => {
  const r = await check('tiny_qwen25', undefined, ['--no-docs']);
  const again = await cli(['report', '--run-dir', r.runDir, '--no-docs', '--json']);
  assert.is(again.code, 0);
  const rep = fromJson<Report>(again.out);
  assert.is(rep.metrics!.wholeCosine, r.report!.metrics!.wholeCosine);
  assert.ok(rep.integration!.workarounds.some((w) => w.id === 'qkv_bias'));
  assert.ok(statSync(join(r.runDir, 'report.json')).size > 0);
});

// Issue 29.6: plan from an HF config.json alone, no model dir.
skippable.unless(missingNumpy())('plan --hf-config: Steps 1 and 2 from a config.json; with --model-dir too is exit 2', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-hfcfg-'));
  const cfg = join(dir, 'config.json');
  writeFileSync(cfg, JSON.stringify({ model_type: 'qwen3', hidden_size: 1024, intermediate_size: 3072, num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128 }));
  const r = await cli(['plan', '--hf-config', cfg]);
  assert.is(r.code, 0, r.err);
  assert.match(r.out, 'Step 1: kernel-first: the kernel sequence differs from llama\'s (Q/K Norm)');
  assert.match(r.out, 'Step 2 triggers: none');
  const both = await cli(['plan', '--hf-config', cfg, '--model-dir', dir]);
  assert.is(both.code, 2);
  assert.match(both.err, 'plan takes --model-dir DIR or --hf-config PATH|ID, not both');
});

test.run();
