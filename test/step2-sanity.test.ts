// Step 2's padded-vs-original sanity check (issue 17.8): probe.json step2_sanity is loaded, kept in
// report.json and shown in the terminal, report.md, the comment and phase2_block.md; a reindexed
// padding that misses the gate is a warning, never a gate. End to end (needs the real tree and
// torch): `npu-block-gate plan --sanity` and `check --emulate` on the real tree's qwen25_0_5b code
// with a tiny non-aligned qwen2 checkpoint.
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { renderTerminal } from '../src/report/terminal.ts';
import { renderMarkdown } from '../src/report/markdown.ts';
import { step2SanityWarning } from '../src/judge/verdict.ts';
import { fromJson } from '../src/report/json.ts';
import type { Report } from '../src/record/report.ts';
import type { Step2Sanity } from '../src/rundir/schema.ts';
import { fakeMetrics, fakeReport } from './helpers/report.ts';
import { cli, fixture, report } from './helpers/rundir.ts';
import { missingTwins, twinsTree, withEnv, type TwinsTree } from './helpers/twins.ts';
import { test } from './helpers/skip.ts';

function sanity(over: { reindexed?: number; ok?: boolean } = {}): Step2Sanity {
  const re = over.reindexed ?? 0.99999997;
  return {
    gate: 0.999998, dtype: 'float32', tokens: 9, model_id: 'org/tiny',
    original: { emb_dim: 896, hidden_dim: 4864, n_heads: 14, n_kv_heads: 2, head_dim: 64, group_size: 7 },
    padded: { emb_dim: 1024, hidden_dim: 5120, n_heads: 16, n_kv_heads: 2, head_dim: 64, group_size: 8, phantom_heads_per_group: 1 },
    rows: [
      { id: 'reindexed', label: 'GQA-aware reindexed (phantom Q heads inside each KV group)', ffn_out_cosine: re, logits_cosine: re, pass: re >= 0.999998 },
      { id: 'tree_helper', label: "tree's own padding helper (m_prefill._pad)", skipped: 'm_prefill._pad does not run on its own here (NameError: air)' },
      { id: 'naive_end', label: 'naive end-padding (phantom Q heads at the end)', ffn_out_cosine: 0.9873, logits_cosine: 0.9511, pass: false },
    ],
    ok: over.ok ?? re >= 0.999998,
    misrouted_heads: 1,
    why: 'naive end-padding maps Q head i to KV head i // 8 instead of i // 7: 1 of 14 real Q heads read another group\'s K/V',
  };
}

test('the Step 2 sanity rows show in the terminal, report.md, the comment and phase2_block.md', () => {
  const r: Report = { ...fakeReport(fakeMetrics()), step2_sanity: sanity() };
  const term = renderTerminal(r);
  assert.match(term, 'step 2 sanity (padded vs original on the CPU, float32, gate >= 0.999998; emb 896->1024, hidden 4864->5120, heads 14->16, group 7->8)');
  assert.match(term, /GQA-aware reindexed \(phantom Q heads inside each KV group\) +1\.0000000 +1\.0000000 +PASS/);
  assert.match(term, /naive end-padding \(phantom Q heads at the end\) +0\.9873000 +0\.9511000 +FAIL/);
  assert.match(term, "not run: tree's own padding helper (m_prefill._pad): m_prefill._pad does not run on its own here (NameError: air)");
  assert.match(term, 'why the reindexing matters: naive end-padding maps Q head i to KV head i // 8 instead of i // 7');
  for (const flavor of ['summary', 'comment', 'doc'] as const) {
    const md = renderMarkdown(r, { flavor });
    assert.match(md, `${flavor === 'doc' ? '####' : '###'} Step 2 sanity: padded vs original on the CPU (informational)`);
    // Table cells escape markdown punctuation (GQA\-aware).
    assert.match(md, /\| GQA\\-aware reindexed .* +\| 1\.0000000 +\| 1\.0000000 +\| ✅ pass/);
    assert.match(md, /\| naive end\\-padding .* +\| 0\.9873000 +\| 0\.9511000 +\| ❌ fail/);
    assert.match(md, 'emb_dim 896 → 1024, hidden_dim 4864 → 5120, n_heads 14 → 16 (2 KV groups of 7 → 8)');
  }
  // No record: no section anywhere.
  const none = fakeReport(fakeMetrics());
  assert.not.match(renderTerminal(none), 'step 2 sanity');
  assert.not.match(renderMarkdown(none, { flavor: 'summary' }), 'Step 2 sanity');
  // A check that could not run says why.
  const skipped: Report = { ...none, step2_sanity: { gate: 0.999998, skipped: 'needs torch and transformers' } };
  assert.match(renderTerminal(skipped), 'step 2 sanity (padded vs original on the CPU): not run: needs torch and transformers');
  assert.match(renderMarkdown(skipped, { flavor: 'doc' }), 'Not run: needs torch and transformers.');
});

test('a reindexed padding under the gate is a warning, not a gate', () => {
  assert.is(step2SanityWarning(sanity()), null);
  assert.is(step2SanityWarning({ gate: 0.999998, skipped: 'x' }), null);
  const w = step2SanityWarning(sanity({ reindexed: 0.99991 }))!;
  assert.is(w.id, 'step2_sanity');
  assert.match(w.message, 'Step 2 sanity: GQA-aware reindexed (phantom Q heads inside each KV group) does not reproduce the original model (cosine below 0.999998)');
});

test('report: probe.json step2_sanity reaches report.json, report.md and phase2_block.md; the verdict is unchanged', async () => {
  const f = fixture({ probe: (p) => { p.step2_sanity = sanity({ reindexed: 0.9991 }); } });
  const r = await report(f, ['--json']);
  assert.is(r.code, 0, r.err);
  const rep = fromJson<Report>(r.out);
  assert.is(rep.outcome, 'pass');
  assert.is(rep.step2_sanity!.rows![0].ffn_out_cosine, 0.9991);
  assert.ok(rep.warnings.some((w) => w.id === 'step2_sanity'));
  assert.match(readFileSync(join(f.runDir, 'report.md'), 'utf8'), '### Step 2 sanity: padded vs original on the CPU');
  assert.match(readFileSync(f.phase2, 'utf8'), '#### Step 2 sanity: padded vs original on the CPU');
  // A malformed record is bad input naming the field.
  const bad = fixture({ probe: (p) => { p.step2_sanity = { gate: 0.999998, rows: [{ id: 'other', label: 'x' }] }; } });
  const b = await report(bad);
  assert.is(b.code, 2, b.err);
  assert.match(b.err, 'step2_sanity');
});

const maybe = test.unless(missingTwins());
let tree: TwinsTree | null = null;

maybe('plan --sanity on the real tree\'s qwen25_0_5b: reindexed and the tree\'s helper pass, naive end-padding does not', async () => {
  tree ??= twinsTree(['qwen2']);
  const t = tree;
  const r = await withEnv(t.env, () => cli(['plan', '--model-dir', t.model('qwen25_0_5b'), '--model', t.hfId('qwen25_0_5b'), '--python', t.python, '--sanity']));
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /GQA-aware reindexed .*: ffn_out cosine 1\.0000000, logits cosine 1\.0000000 {2}PASS/);
  assert.match(r.out, /tree's own padding helper \(qwen25_0_5b_prefill\._padded_qkv_dims, qwen25_0_5b_prefill\._padded_n_for_down\): .* {2}PASS/);
  assert.match(r.out, /naive end-padding \(phantom Q heads at the end\): ffn_out cosine 0\.\d+, logits cosine -?0\.\d+ {2}FAIL/);
  assert.match(r.out, 'step2 sanity: PASS');
  // Without --sanity the plan stays static.
  const plain = await withEnv(t.env, () => cli(['plan', '--model-dir', t.model('qwen25_0_5b'), '--model', t.hfId('qwen25_0_5b'), '--python', t.python]));
  assert.not.match(plain.out, 'step2 sanity');
});

maybe('check --emulate on qwen25_0_5b runs the Step 2 sanity (Step 2 triggers) and records it', async () => {
  tree ??= twinsTree(['qwen2']);
  const t = tree;
  const out = join(mkdtempSync(join(tmpdir(), 'nbg-step2-')), 'run');
  const r = await withEnv({ ...t.env, NPU_BLOCK_GATE_NPU_LOCK: 'none' }, () => cli([
    'check', '--model-dir', t.model('qwen25_0_5b'), '--out', out, '--emulate', '--model', t.hfId('qwen25_0_5b'), '--prompt-style', 'instruct',
    '--python', t.python, '--no-cache', '--no-boundaries', '--json',
  ]));
  assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.err.slice(-3000)}`);
  const rep = fromJson<Report>(r.out);
  const s = rep.step2_sanity!;
  assert.ok(s && !s.skipped, JSON.stringify(s));
  const rows = Object.fromEntries(s.rows!.map((x) => [x.id, x]));
  assert.ok(rows.reindexed.ffn_out_cosine! >= 0.999998 && rows.reindexed.logits_cosine! >= 0.999998, JSON.stringify(rows.reindexed));
  assert.ok(rows.tree_helper.pass, JSON.stringify(rows.tree_helper));
  assert.ok(rows.naive_end.logits_cosine! < 0.999, JSON.stringify(rows.naive_end));
  assert.match(readFileSync(join(out, 'report.md'), 'utf8'), '### Step 2 sanity: padded vs original on the CPU');
  assert.match(readFileSync(join(t.model('qwen25_0_5b'), 'docs/development_progress/phase2_block.md'), 'utf8'), '#### Step 2 sanity');
});

test.run();
