// `agent hooks install` from a code-split bundle (scripts/build.mjs: entries in dist/, chunks in
// dist/chunks/ loaded at start or on demand): the hooks' copy holds the entry and every chunk it
// can load, nothing else, and runs once the original is gone.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bundleFiles } from '../src/agent/hooks.ts';
import { agent, fakeRunner } from './fixtures/agent/fake.ts';

/** A bundle shaped like esbuild's splitting output: a static chain of chunks and one loaded on demand. */
function splitBundle(at: string): string {
  const dist = join(at, 'dist');
  mkdirSync(join(dist, 'chunks'), { recursive: true });
  writeFileSync(join(dist, 'hook.js'),
    'import { a } from "./chunks/chunk-AAAA1111.js";\n' +
    'import "./chunks/chunk-EEEE5555.js";\n' +
    'if (process.argv[2] === "agent") {\n' +
    '  const { b } = await import("./chunks/drain-BBBB2222.js");\n' +
    '  console.log("ours:", a, b, process.argv.slice(2).join(" "));\n' +
    '}\n');
  writeFileSync(join(dist, 'chunks', 'chunk-AAAA1111.js'), 'import { c } from "./chunk-CCCC3333.js";\nexport const a = "A" + c;\n');
  writeFileSync(join(dist, 'chunks', 'chunk-CCCC3333.js'), 'export const c = "C";\n');
  writeFileSync(join(dist, 'chunks', 'chunk-EEEE5555.js'), '// a side-effect import\n');
  // Loaded on demand, and it quotes an import of a file that does not exist (text, as bundled code may hold).
  writeFileSync(join(dist, 'chunks', 'drain-BBBB2222.js'), 'const text = \'import("./not-a-chunk.js")\';\nexport const b = "B" + text.length;\n');
  // Another entry's chunk: not the hooks' business.
  writeFileSync(join(dist, 'chunks', 'artifact-DDDD4444.js'), 'export const d = 1;\n');
  writeFileSync(join(dist, 'cli.js'), 'import "./chunks/artifact-DDDD4444.js";\n');
  return join(dist, 'hook.js');
}

test('bundleFiles: the entry, its static chunks and the ones it loads on demand, nothing else', () => {
  const f = fakeRunner();
  try {
    const entry = splitBundle(join(f.base, 'pkg'));
    assert.equal(bundleFiles(entry), ['hook.js', 'chunks/chunk-AAAA1111.js', 'chunks/chunk-EEEE5555.js', 'chunks/drain-BBBB2222.js', 'chunks/chunk-CCCC3333.js']);
  } finally {
    rmSync(f.base, { recursive: true, force: true });
  }
});

test('hooks install from a split bundle: the copy has every chunk the entry loads and runs without the original', async () => {
  const f = fakeRunner();
  try {
    const script = splitBundle(join(f.base, 'pkg'));
    const self = { node: process.execPath, execArgv: [], script, kind: 'bundle' as const };
    const dir = join(f.base, 'hooks');
    const r = await agent(['hooks', 'install', '--dir', dir], { ...f.deps, self });
    assert.is(r.code, 0, r.err);
    assert.match(r.out, /^installed a copy of the CLI .*\/hooks\/cli\/[0-9a-f]{12}\/hook\.js and the 4 chunk\(s\) it loads \(from /m);
    const [hash] = readdirSync(join(dir, 'cli'));
    assert.equal(readdirSync(join(dir, 'cli', hash, 'chunks')).sort(), ['chunk-AAAA1111.js', 'chunk-CCCC3333.js', 'chunk-EEEE5555.js', 'drain-BBBB2222.js']);
    rmSync(join(f.base, 'pkg'), { recursive: true });
    const s = spawnSync('bash', ['--noprofile', '--norc', '-e', '-o', 'pipefail', join(dir, 'job-started.sh')], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    assert.is(s.status, 0, s.stderr);
    assert.match(s.stdout, /^ours: AC B26 agent hook job-started --fork-policy probe-only$/m);
    // The same bundle again changes nothing; a changed chunk makes a new copy (the old one goes).
    const again = splitBundle(join(f.base, 'pkg'));
    assert.match((await agent(['hooks', 'install', '--dir', dir], { ...f.deps, self })).out, /^unchanged copy of the CLI/m);
    writeFileSync(join(f.base, 'pkg', 'dist', 'chunks', 'chunk-CCCC3333.js'), 'export const c = "D";\n');
    assert.match((await agent(['hooks', 'install', '--dir', dir], { ...f.deps, self: { ...self, script: again } })).out, /^installed a copy/m);
    const copies = readdirSync(join(dir, 'cli'));
    assert.is(copies.length, 1);
    assert.ok(copies[0] !== hash && existsSync(join(dir, 'cli', copies[0], 'chunks', 'chunk-CCCC3333.js')));
  } finally {
    rmSync(f.base, { recursive: true, force: true });
  }
});

test.run();
