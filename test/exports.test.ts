// One of each (issue 27.7): no export of src/ is named nowhere. An export nothing imports is dead
// code that still looks like an interface (7 of them were found: deviceNodes, isModelDir,
// PLAN_CONTRACT, readIfExists, collectLog, GENERATIONS, BISECT_DIR).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO } from './helpers/airmini.ts';

const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true })
  .flatMap((e) => (e.isDirectory() ? (['node_modules', '__pycache__', 'golden'].includes(e.name) ? [] : walk(join(d, e.name))) : [join(d, e.name)]));

/** `export function|const|class|interface|type NAME` declarations of a source text. */
function exported(source: string): string[] {
  return [...source.matchAll(/^export (?:async )?(?:function\*? |const |let |class |interface |type |enum )(\w+)/gm)].map((m) => m[1]);
}

/** The exports of `files` (path -> text) under src/ named in no other file, but in their own (an export for nothing). */
function ownFileOnly(files: Record<string, string>, skip: RegExp[] = []): string[] {
  const out: string[] = [];
  for (const [f, text] of Object.entries(files)) {
    if (!f.startsWith('src/') || skip.some((r) => r.test(f))) continue;
    for (const n of exported(text)) {
      const re = new RegExp(`\\b${n}\\b`);
      if (!Object.entries(files).some(([g, t]) => g !== f && re.test(t))) out.push(`${f}: ${n}`);
    }
  }
  return out;
}

/** The exports of `files` (path -> text) under src/ named in no other file and nowhere in their own but the declaration. */
function unused(files: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [f, text] of Object.entries(files)) {
    if (!f.startsWith('src/')) continue;
    for (const n of exported(text)) {
      const re = new RegExp(`\\b${n}\\b`);
      const elsewhere = Object.entries(files).some(([g, t]) => g !== f && re.test(t));
      const own = (text.match(new RegExp(`\\b${n}\\b`, 'g')) ?? []).length;
      if (!elsewhere && own <= 1) out.push(`${f}: ${n}`);
    }
  }
  return out;
}

test('the check finds an export nothing names, and passes one used elsewhere or in its own file', () => {
  assert.equal(unused({
    'src/a.ts': 'export function dead() {}\nexport const used = 1;\nexport function own() {}\nconst x = own();\n',
    'src/b.ts': "import { used } from './a.ts';\n",
  }), ['src/a.ts: dead']);
  assert.equal(exported('export async function f() {}\nexport interface I {}\nexport type T = 1;\n  export const notTop = 1;\n'), ['f', 'I', 'T']);
});

const sources = () => Object.fromEntries(['src', 'test', 'bench', 'scripts'].flatMap((d) => walk(join(REPO, d)))
  .filter((f) => /\.(ts|mjs|js)$/.test(f)).map((f) => [relative(REPO, f), readFileSync(f, 'utf8')]));

test('no export of src/ is named nowhere (src, test, bench, scripts)', () => {
  const files = sources();
  assert.ok(Object.keys(files).length > 200);
  assert.equal(unused(files), []);
});

test('an export of src/ is named outside its own file (an export used only at home is not exported)', () => {
  assert.equal(ownFileOnly({ 'src/a.ts': 'export const home = 1;\nconst x = home;\nexport const used = 2;\n', 'test/t.ts': 'used' }), ['src/a.ts: home']);
  assert.equal(ownFileOnly(sources()), []);
});

test.run();
