// Three end-to-end runs with a real probe, no more (issue 27.1): every other GitHub-effect test runs
// in-process through the port (test/helpers/action-here.ts) or runs the bundle where no probe can
// start (mode report, summary or affected, inputs refused, a Python that is not there). This reads
// every runAction call of test/github and counts the ones that can start a probe.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../helpers/airmini.ts';

/** The text of every `runAction({ ... })` call (balanced braces). */
function calls(source: string): string[] {
  const out: string[] = [];
  for (let i = source.indexOf('runAction({'); i >= 0; i = source.indexOf('runAction({', i + 1)) {
    let depth = 0;
    for (let j = i + 'runAction('.length; j < source.length; j++) {
      if (source[j] === '{') depth++;
      else if (source[j] === '}' && --depth === 0) { out.push(`${source.slice(i, j + 1)})`); break; }
    }
  }
  return out;
}

/** A call that can start the probe: mode full (the default) or probe, with a Python that may exist. */
function startsProbe(call: string): boolean {
  const mode = /\bmode: '([a-z]+)'/.exec(call)?.[1] ?? 'full';
  if (mode !== 'full' && mode !== 'probe') return false;
  return !/python: '\/nonexistent/.test(call);
}

test('the check reads modes and a missing Python', () => {
  assert.equal(calls("a; runAction({ inputs: { mode: 'report', x: { y: 1 } } }); b; runAction({ inputs: {} });"), ["runAction({ inputs: { mode: 'report', x: { y: 1 } } })", 'runAction({ inputs: {} })']);
  assert.ok(startsProbe("runAction({ inputs: { 'model-dir': MODEL } })"));
  assert.ok(startsProbe("runAction({ inputs: { mode: 'probe' } })"));
  assert.not.ok(startsProbe("runAction({ inputs: { mode: 'summary' } })"));
  assert.not.ok(startsProbe("runAction({ inputs: { mode: 'fulll' } })"));
  assert.not.ok(startsProbe("runAction({ inputs: { python: '/nonexistent/python3' } })"));
});

test('three end-to-end runs start a probe: the trusted push and the fork pull request (action-check), the split probe job', () => {
  const dir = join(REPO, 'test/github');
  const found: Record<string, number> = {};
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.test.ts') && n !== 'e2e-runs.test.ts')) {
    const n = calls(readFileSync(join(dir, f), 'utf8')).filter(startsProbe).length;
    if (n) found[f] = n;
  }
  // action-check: the push() helper (run twice: caches stored, then hit) and the fork pull request.
  assert.equal(found, { 'action-check.test.ts': 2, 'split.test.ts': 1 });
});

test.run();
