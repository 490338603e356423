// mode summary's parts (issue 19): the matrix's legs, which artifact is which leg, and the one
// table model x NPU generation, within GitHub's comment limit at 100 legs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expandMatrix } from '../../src/fleet/legs.ts';
import { changed, isOpen, summaryMarkdown, type LegResult } from '../../src/fleet/summary.ts';
import { matchLegs, summaryCommentBody } from '../../src/github/summary-legs.ts';
import { artifactName } from '../../src/github/artifact.ts';
import { legOf } from '../../src/github/inputs.ts';
import { GITHUB_BODY_LIMIT } from '../../src/github/comment.ts';
import { errorReport } from '../../src/check/index.ts';
import type { NpuFacts } from '../../src/npu/generation.ts';
import type { Report } from '../../src/record/report.ts';
import { fakeMetrics, fakeReport } from '../helpers/report.ts';
import { judgedLens } from '../helpers/lens.ts';
import type { LensReport } from '../../src/record/lens.ts';

const L = 'programming_examples/llms';
const TOOL = { name: 'npu-block-gate', version: '0.0.0' };

test('a matrix expands as GitHub Actions does: vectors, exclude, include', () => {
  assert.equal(expandMatrix({ model: ['a', 'b'], runner: ['p', 's'] }), [
    { model: 'a', runner: 'p' }, { model: 'a', runner: 's' }, { model: 'b', runner: 'p' }, { model: 'b', runner: 's' },
  ]);
  assert.equal(expandMatrix({ model: ['a', 'b'], runner: ['p', 's'], exclude: [{ model: 'b', runner: 's' }] }).length, 3);
  // include: added to every combination it does not overwrite; one that fits none is a leg of its own.
  assert.equal(expandMatrix({ model: ['a', 'b'], include: [{ model: 'a', python: '3.12' }, { model: 'c' }] }), [
    { model: 'a', python: '3.12' }, { model: 'b' }, { model: 'c' },
  ]);
  assert.equal(expandMatrix({ include: [{ model: 'a', runner: 'p' }] }), [{ model: 'a', runner: 'p' }], "affected's matrix output");
  assert.equal(expandMatrix({ include: [] }), []);
  assert.equal(expandMatrix([{ model: 'a' }]), [{ model: 'a' }]);
  assert.throws(() => expandMatrix({ model: 'a' }), /legs\.model is not a list/);
  assert.throws(() => expandMatrix({ model: [{ x: 1 }] }), /not a string, number or boolean/);
});

test('each leg is the artifact named for its model and its matrix values, the newest attempt up to this run; a leg without one is missing', () => {
  const legs = expandMatrix({ include: [{ model: `${L}/a`, runner: 'p' }, { model: `${L}/a`, runner: 's' }, { model: `${L}/b`, runner: 'p' }] });
  const name = (leg: object, attempt: number) => artifactName('phase2-run', (leg as { model: string }).model, legOf(JSON.stringify(leg)), attempt);
  // Keys in another order (toJSON(matrix) is pretty-printed, its keys in the runner's order): the same leg.
  assert.is(legOf('{\n  "runner": "p",\n  "model": "programming_examples/llms/a"\n}'), legOf(JSON.stringify(legs[0])));
  const found = [
    { id: 1, name: name(legs[0], 1), size: 10 },
    { id: 2, name: name(legs[1], 1), size: 10 },
    { id: 3, name: name(legs[1], 2), size: 10 },
    { id: 4, name: name(legs[1], 3), size: 10 },
    { id: 5, name: 'something-else', size: 10 },
  ];
  const m = matchLegs(found, legs, 'phase2-run', 2);
  assert.equal(m.map((x) => [x.model, x.runner, x.artifact?.id ?? null]), [[`${L}/a`, 'p', 1], [`${L}/a`, 's', 3], [`${L}/b`, 'p', null]]);
  assert.match(m[2].expected!, /^phase2-run-programming_examples__llms__b-leg-[0-9a-f]{8}-attempt2$/);
  // Without the legs: every artifact of the prefix is a leg (nothing can be named missing).
  const loose = matchLegs(found, null, 'phase2-run', null);
  assert.equal(loose.map((x) => [x.slug, x.artifact?.id]).sort((a, b) => Number(a[1]) - Number(b[1])), [['programming_examples__llms__a', 1], ['programming_examples__llms__a', 4]]);
  assert.throws(() => matchLegs(found, [{ runner: 'p' }], 'phase2-run', 1), /leg 1 .* names no model/);
});

const npu = (generation: string): NpuFacts => ({ generation, name: null, pci: null, bdf: null, driver: null, firmware: null, xrt: null, source: 'pci' });
const url = (i: number) => `https://github.com/acme/mlir-air/actions/runs/12345678901/artifacts/${2345678901 + i}`;
let LENS: LensReport;
test.before(async () => { LENS = await judgedLens({ cos: { q_roped: [0.999, 0.95] } }); });
function judged(model: string, gen: string, over: { min?: number; base?: LegResult['base']; lens?: boolean } = {}): LegResult {
  const m = fakeMetrics({ cosines: [0.9999, over.min ?? 0.9995, 0.9998] });
  let r: Report = fakeReport(m, { model: { ...fakeReport().model, name: model } });
  r = { ...r, environment: { ...r.environment!, npu: npu(gen) }, lens: over.lens ? LENS : null };
  return { model: `${L}/${model}`, runner: `npu-${gen}`, leg: { model: `${L}/${model}`, runner: `npu-${gen}` }, state: 'judged', report: r, error: null, artifactName: 'x', artifactUrl: url(0), base: over.base ?? null };
}
function errored(model: string, runner: string, message: string): LegResult {
  const plan = { mode: 'report' as const, modelDir: `${L}/${model}`, promptStyle: null, prompt: null, python: null, runDir: '/tmp/x', threshold: null, writeDocs: false, timeoutSec: null, commit: null };
  return { model: `${L}/${model}`, runner, leg: null, state: 'error', report: errorReport(plan, message, 3), error: message, artifactName: 'y', artifactUrl: url(1), base: null };
}
const missing = (model: string, runner: string): LegResult => ({ model: `${L}/${model}`, runner, leg: null, state: 'missing', report: null, error: 'no artifact in run 7: the leg never reported', artifactName: null, artifactUrl: null, base: null });

test('one table: failing, erroring, missing and changed legs open; legs passing as before fold away; an error is never a FAIL', () => {
  const base = (outcome: string, minCosine: number) => ({ outcome, cosine: 0.9991, minCosine, commit: 'b'.repeat(40), date: '2026-11-01' });
  const legs = [
    judged('llama32_1b', 'phoenix', { base: base('PASS', 0.9995) }),
    judged('llama32_1b', 'strix', { min: 0.95, lens: true, base: base('PASS', 0.9995) }),
    judged('qwen3_0_6b', 'phoenix', { base: base('PASS', 0.9980) }),
    errored('qwen3_0_6b', 'npu-strix', 'the probe job could not run the check: DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed (err=-5)'),
    missing('smollm2_1_7b', 'npu-krackan'),
  ];
  assert.not.ok(isOpen(legs[0]), 'passing as on the base branch');
  assert.ok(changed(legs[2]) && isOpen(legs[2]), 'per-position min moved 0.0015 against the base');
  const md = summaryMarkdown(legs, { commit: 'c'.repeat(40), runUrl: 'https://github.example/acme/mlir-air/actions/runs/7', tool: TOOL });
  assert.match(md, '❌ **Phase 2 FAIL**: 5 legs (3 models x 3 NPUs): ✅ 2 pass · ❌ 1 fail · ⚠️ 1 error · ❔ 1 missing at `cccccccccccc`.');
  const [before, folded] = md.split('<details><summary>1 leg passing as before</summary>');
  assert.match(before, '### Needs a look (4)');
  assert.match(before, /\| `llama32_1b` \| Strix \| ❌ FAIL \| 0\.999100 \| \*\*0\.950000\*\* \(T 0\.99\) \| 45\.0 dB \| \*\*changed\*\*: was PASS at `bbbbbbbbbbbb`, min -0\.0495 \| `q_roped` 0\.950000 \| \[run dir\]\(https:/);
  // The error leg has no record: it is shown under the generation its runner label ran elsewhere.
  assert.match(before, /\| `qwen3_0_6b` \| Strix \| ⚠️ ERROR \| \| \| \| \| the probe job could not run the check: DRM\\_IOCTL/);
  assert.match(before, /\| `smollm2_1_7b` \| `npu-krackan` \(runner\) \| ❔ MISSING \|.*no artifact in run 7: the leg never reported \|/);
  assert.match(before, /\| `qwen3_0_6b` \| Phoenix \| ✅ PASS \|.*\*\*changed\*\*: was PASS/);
  assert.not.match(before, /Strix \| ❌ FAIL[^\n]*DRM/);
  assert.match(folded, /\| `llama32_1b` \| Phoenix \| ✅ PASS \|/);
  // The overview: a row per model, a column per NPU.
  assert.match(md, /\| model \| Phoenix \| Strix \| `npu-krackan` \(runner\) \|\n\| - \| - \| - \| - \|\n\| `llama32_1b` \| ✅ \| ❌\* \| \|\n\| `qwen3_0_6b` \| ✅\* \| ⚠️ \| \|\n\| `smollm2_1_7b` \| \| \| ❔ \|\n/);
  assert.match(md, '5 legs (3 models x 3 NPUs)');
  assert.not.match(md, '[!WARNING]');
  // Two runners under one label that are not the same generation: named, and no leg is placed by it.
  const mixed = [judged('llama32_1b', 'phoenix'), { ...judged('qwen3_0_6b', 'strix'), runner: 'npu-phoenix' }, errored('smollm2_1_7b', 'npu-phoenix', 'boom')];
  const mm = summaryMarkdown(mixed, { commit: null, runUrl: null, tool: TOOL });
  assert.match(mm, 'Runner label `npu-phoenix` ran on Phoenix and Strix');
  assert.match(mm, /\| `smollm2_1_7b` \| `npu-phoenix` \(runner\) \| ⚠️ ERROR/);
});

test('foreign text from a run dir cannot break the table or mention anyone', () => {
  const leg = errored('llama32_1b', 'npu-strix', 'boom | <img src=x onerror=alert(1)> @maintainers [x](javascript:alert(1))\n| injected | row |');
  const md = summaryMarkdown([leg], { commit: null, runUrl: null, tool: TOOL });
  assert.not.match(md, /<img|@maintainers|\]\(javascript|\n\| injected/);
  const hostile = { ...errored('llama32_1b', 'npu-strix', 'boom'), artifactUrl: 'javascript:alert(1)' };
  assert.not.match(summaryMarkdown([hostile], { commit: null, runUrl: null, tool: TOOL }), 'javascript:alert');
});

/** 100 legs: 25 models x 4 NPU generations, in a realistic mix. */
function hundred(kind: (i: number) => 'pass' | 'fail' | 'error' | 'missing'): LegResult[] {
  const gens = ['phoenix', 'hawk-point', 'strix', 'krackan'];
  const legs: LegResult[] = [];
  for (let i = 0; i < 100; i++) {
    const model = `model_dir_number_${String(Math.floor(i / 4)).padStart(2, '0')}`;
    const gen = gens[i % 4];
    const k = kind(i);
    let l: LegResult;
    if (k === 'error') l = errored(model, `npu-${gen}`, `the probe job could not run the check: ${'a long infrastructure error message '.repeat(20)}`);
    else if (k === 'missing') l = missing(model, `npu-${gen}`);
    else l = judged(model, gen, { min: k === 'fail' ? 0.95 : 0.9995, lens: k === 'fail', base: { outcome: 'PASS', cosine: 0.9991, minCosine: 0.9995, commit: 'b'.repeat(40), date: '2026-11-01' } });
    legs.push({ ...l, artifactUrl: l.state === 'missing' ? null : url(i) });
  }
  return legs;
}

test('100 legs stay under GitHub\'s comment limit, each leg with a link to its artifact', () => {
  const opts = { commit: 'c'.repeat(40), runUrl: 'https://github.com/acme/mlir-air/actions/runs/12345678901', tool: TOOL };
  for (const [what, kind] of [
    ['mixed', (i: number) => (i % 10 === 3 ? 'fail' : i % 17 === 5 ? 'error' : i % 23 === 7 ? 'missing' : 'pass')],
    ['all failing', () => 'fail'],
    ['all errors', () => 'error'],
  ] as [string, (i: number) => 'pass' | 'fail' | 'error' | 'missing'][]) {
    const legs = hundred(kind);
    const body = summaryCommentBody(legs, opts, 'fleet-summary/npu');
    assert.ok(body.length < GITHUB_BODY_LIMIT, `${what}: ${body.length} characters`);
    assert.not.match(body, 'This comment was cut', what);
    for (let i = 0; i < 100; i++) if (legs[i].artifactUrl) assert.ok(body.includes(`(${legs[i].artifactUrl})`), `${what}: leg ${i} links its artifact`);
    assert.is((body.match(/\n\| `model_dir_number_\d\d` \|/g) ?? []).length, 25 + 100, `${what}: every model in the overview, every leg in a table`);
  }
});

test('issue 28: past 100 legs the comment shows the failing rows that fit and says how many more there are, never dropping them silently', () => {
  const opts = { commit: 'c'.repeat(40), runUrl: 'https://github.com/acme/mlir-air/actions/runs/12345678901', tool: TOOL };
  const legs = [0, 1, 2].flatMap((k) => hundred(() => 'fail').map((l) => ({ ...l, model: l.model.replace('model_dir_number_', `model_dir_${k}_number_`) })));
  const body = summaryCommentBody(legs, opts, 'fleet-summary/npu');
  assert.ok(body.length < GITHUB_BODY_LIMIT, `${body.length} characters`);
  const shown = (body.match(/\| ❌ FAIL \|/g) ?? []).length;
  const more = /> (\d+) more legs that need a look are not shown here \((\d+) fail\), to stay under GitHub's comment limit: every leg is in the job summary/.exec(body);
  assert.ok(more, 'says how many failing legs are not shown');
  assert.is(shown + Number(more![1]), 300, `${shown} shown + ${more![1]} counted = every failing leg`);
  assert.is(Number(more![2]), Number(more![1]));
  assert.ok(shown > 0);
});

test.run();
