// No hidden skip (issue 27.5): a test that prints "skipped" and returns is counted as passed while
// it ran nothing (faults.test.ts did it three times; on a host whose mount fails, 5 tmpfs tests
// "passed"). Every test file here, TypeScript and Python, is read for a print whose message looks
// like a skip followed by a return; a test skips through test/helpers/skip.ts (skip(need, why),
// test.unless) or Python's self.skipTest(needs(...)), which the runner counts and CI judges.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO } from './helpers/airmini.ts';

/** A call that prints (console.*, process.std*.write, Python's print / sys.std*.write, log.info...). */
const PRINT = /\b(console\.(log|error|warn|info|debug)|process\.(stdout|stderr)\.write|print|sys\.(stdout|stderr)\.write|log(ger)?\.(info|warn(ing)?|debug))\s*\(/;
/** A message that says the test is not running (all or part of it). */
const SKIPPY = /\bskip(ped|ping|s)?\b|\bnot run\b|\bcannot run\b/i;
/** A return, in either language (with or without a value, a semicolon, a brace before it). */
const RETURN = /(^|[\s;{)])return\b/;

/**
 * The lines (1-based) where a print of a skip-like message is followed by a return: on the same
 * line after it, or on one of the next two non-blank lines. Comments are not code.
 */
function hiddenSkips(source: string): number[] {
  const lines = source.split('\n').map((l) => l.replace(/^\s*(\/\/|#).*$/, ''));
  const found: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    const at = lines[i].search(PRINT);
    if (at < 0) continue;
    const call = lines[i].slice(at);
    // the message may continue on the next line (a long template string)
    const message = call + ' ' + (lines[i + 1] ?? '');
    if (!SKIPPY.test(message)) continue;
    const rest = [call.replace(PRINT, ''), ...lines.slice(i + 1).filter((l) => l.trim()).slice(0, 2)];
    if (rest.some((l) => RETURN.test(l))) found.push(i + 1);
  }
  return found;
}

function files(dir: string, ext: RegExp): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory() && e.name !== 'node_modules' && e.name !== '__pycache__' && e.name !== 'golden') out.push(...files(p, ext));
    else if (e.isFile() && ext.test(e.name)) out.push(p);
  }
  return out;
}

test('the check finds a print-and-return skip in both languages, and passes a skip that is counted', () => {
  // the three forms faults.test.ts had
  assert.equal(hiddenSkips("  if (typeof t === 'string') { console.log(`  (skipped: ${t})`); return; }"), [1]);
  assert.equal(hiddenSkips("  if (!realTreeRoot()) { console.log('  (the real-tree half skipped: no mlir-air tree)'); return; }"), [1]);
  assert.equal(hiddenSkips("x();\nif (!ok) {\n  console.error('skipping: no bwrap');\n  return;\n}\n"), [3]);
  assert.equal(hiddenSkips("if (!ok) {\n  process.stdout.write(`(tmpfs tests skipped:\n    ${why})\\n`);\n\n  return 0;\n}"), [2]);
  // Python
  assert.equal(hiddenSkips('    if not have_tree:\n        print("skipped: no tree")\n        return\n'), [2]);
  assert.equal(hiddenSkips('    if not ok: print("cannot run here", file=sys.stderr); return\n'), [1]);
  // counted skips, and prints that are not skips, and a skip message far from any return
  assert.equal(hiddenSkips("  if (typeof t === 'string') skip('tmpfs', t);"), []);
  assert.equal(hiddenSkips("  if (!py) skip(missingNumpy()!);\n  return run();"), []);
  assert.equal(hiddenSkips('        self.skipTest(needs("torch", "no torch"))\n        return\n'), []);
  assert.equal(hiddenSkips("console.log('3 passed');\nreturn;"), []);
  assert.equal(hiddenSkips("console.log('skip: a record');\nconst a = 1;\nconst b = 2;\nconst c = 3;\nreturn a;"), []);
  assert.equal(hiddenSkips("// console.log('skipped'); return;"), []);
});

test('no test file, TypeScript or Python, skips by printing and returning', () => {
  const all = [...files(join(REPO, 'test'), /\.ts$/), ...files(join(REPO, 'test/python'), /\.py$/)];
  assert.ok(all.length > 100, `${all.length} files`);
  const bad: string[] = [];
  for (const f of all) {
    if (f === join(REPO, 'test/skip-lint.test.ts')) continue; // its own examples
    for (const line of hiddenSkips(readFileSync(f, 'utf8'))) bad.push(`${relative(REPO, f)}:${line}`);
  }
  assert.equal(bad, [], `a skip by print-and-return (use skip(need, why) from test/helpers/skip.ts, or self.skipTest(needs(...))):\n${bad.join('\n')}`);
});

test.run();
