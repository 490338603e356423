// docs/action.md and the example workflows stay in step with action.yml.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../helpers/airmini.ts';

const actionYml = readFileSync(join(REPO, 'action.yml'), 'utf8');
const section = (name: string) => {
  const start = actionYml.indexOf(`\n${name}:\n`);
  const rest = actionYml.slice(start + name.length + 3);
  const end = rest.search(/\n[a-z]+:/);
  return rest.slice(0, end < 0 ? undefined : end);
};
const keys = (block: string) => [...block.matchAll(/^  ([a-z0-9-]+):/gm)].map((m) => m[1]);
const inputs = keys(section('inputs'));
const outputs = keys(section('outputs'));
const doc = readFileSync(join(REPO, 'docs/action.md'), 'utf8');

test('action.yml runs dist/index.js on node24', () => {
  assert.match(actionYml, /runs:\n  using: node24\n  main: dist\/index.js/);
  assert.ok(inputs.length >= 15, inputs.join(','));
  assert.ok(outputs.length >= 15, outputs.join(','));
});

test('docs/action.md documents every input and output', () => {
  for (const i of inputs) assert.ok(doc.includes(`| \`${i}\` |`), `input ${i}`);
  for (const o of outputs) assert.ok(doc.includes(`\`${o}\``), `output ${o}`);
  assert.match(doc, 'v2.327.1');
});

test('the Action reads exactly the inputs action.yml declares', () => {
  // The fleet's modes read their own inputs (fleet-inputs.ts) and set their own outputs.
  const src = ['inputs.ts', 'fleet-inputs.ts'].map((f) => readFileSync(join(REPO, 'src/github', f), 'utf8')).join('\n');
  const read = new Set([...src.matchAll(/(?:get|oneOf|bool|text|rev)\('([a-z-]+)'/g)].map((m) => m[1]));
  assert.equal([...read].sort(), [...inputs].sort());
  const outSrc = ['outputs.ts', 'affected-job.ts', 'summary-job.ts'].map((f) => readFileSync(join(REPO, 'src/github', f), 'utf8')).join('\n');
  for (const o of outputs) assert.ok(outSrc.includes(`'${o}'`) || outSrc.includes(`${o}:`), `output ${o} is set`);
});

test('example workflows use only declared inputs', () => {
  const dir = join(REPO, 'examples/workflows');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yml'));
  assert.ok(files.length >= 3);
  for (const f of files) {
    const text = readFileSync(join(dir, f), 'utf8');
    const withBlock = [...text.matchAll(/uses: <your-org>\/npu-block-gate@<commit-sha>[^\n]*\n\s+with:\n((?:\s{10}.*\n?)+)/g)];
    assert.ok(withBlock.length >= 1, f);
    for (const m of withBlock)
      for (const k of [...m[1].matchAll(/^\s{10}([a-z-]+):/gm)].map((x) => x[1])) assert.ok(inputs.includes(k), `${f}: unknown input ${k}`);
  }
});

test('examples: actions pinned by commit, no token left for PR code, the probe job holds no permission', () => {
  const dir = join(REPO, 'examples/workflows');
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yml'))) {
    const text = readFileSync(join(dir, f), 'utf8');
    for (const m of text.matchAll(/^\s*-?\s*uses: ([^\s#]+)/gm)) {
      assert.ok(/@[0-9a-f]{40}$/.test(m[1]) || m[1] === '<your-org>/npu-block-gate@<commit-sha>', `${f}: ${m[1]} is not pinned to a commit`);
    }
    const checkouts = (text.match(/uses: actions\/checkout@/g) ?? []).length;
    assert.is((text.match(/persist-credentials: false/g) ?? []).length, checkouts, `${f}: persist-credentials: false on every checkout`);
    assert.match(text, /^concurrency:/m, `${f}: a concurrency group`);
    assert.match(text, /^permissions: \{\}/m, `${f}: no permissions by default`);
  }
  const probe = readFileSync(join(dir, 'phase2-probe.yml'), 'utf8');
  assert.match(probe, /\n  probe:\n(?:.*\n)*?    permissions: \{\}\n/, 'the probe job: permissions: {}');
  const report = readFileSync(join(dir, 'phase2-report.yml'), 'utf8');
  assert.match(report, "if: github.event.workflow_run.conclusion == 'success' || github.event.workflow_run.conclusion == 'failure'");
  for (const text of [doc, readFileSync(join(REPO, 'README.md'), 'utf8')]) assert.not.match(text, 'acme/npu-block-gate');
});

test.run();
