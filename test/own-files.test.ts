// Issue 25, deliverable 6: the bundles load only their own files. A bare require("x") left in a
// bundle is resolved by Node from any node_modules above the action's copy (a module planted there
// ran in the Action's process, with its token). The real build (scripts/build.mjs, the current
// sources, into a private dir) is scanned for one, and run under a node_modules of planted modules.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO } from './helpers/airmini.ts';
// @ts-expect-error: a plain .mjs module of the build, without types
import { ownFilesOnly, strayImports } from '../scripts/own-files.mjs';

const root = mkdtempSync(join(tmpdir(), 'nbg-own-files-'));
process.on('exit', () => rmSync(root, { recursive: true, force: true }));

/** The real build of the current sources, at <root>/pkg/dist (built once). */
let built: string | null = null;
function dist(): string {
  if (built) return built;
  const out = join(root, 'pkg', 'dist');
  const b = spawnSync(process.execPath, [join(REPO, 'scripts', 'build.mjs'), out], { encoding: 'utf8' });
  assert.is(b.status, 0, b.stderr);
  return (built = out);
}

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? jsFiles(join(dir, e.name)) : e.name.endsWith('.js') ? [join(dir, e.name)] : []));
}

const builtin = (s: string) => s.startsWith('node:') || builtinModules.includes(s) || builtinModules.includes(s.split('/')[0]);

/**
 * Every module specifier the code of a bundle loads by name: require("x") (also esbuild's
 * __require and a renamed require2), import ... from "x", export ... from "x", import "x",
 * import("x").
 */
function specifiers(text: string): string[] {
  const found: string[] = [];
  const patterns = [
    /(?:^|[^\w$.])(?:__)?require\d*\(\s*(["'`])([^"'`\n]+)\1\s*\)/g,
    /^(?:import|export)\b[^;"'`]*?\bfrom\s*(["'])([^"'\n]+)\1/gm,
    /^import\s*(["'])([^"'\n]+)\1/gm,
    /(?:^|[^\w$.])import\(\s*(["'`])([^"'`\n]+)\1\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) found.push(m[2]);
  return found;
}

const bare = (s: string) => !/^(\.\.?(\/|$)|\/)/.test(s) && !builtin(s);

test('the scanner finds the bare requires the old bundle had (and no builtin or own chunk)', () => {
  const sample = [
    'import { createRequire as __nbgCreateRequire } from "node:module";',
    'import { a } from "./chunks/chunk-AAAA.js";',
    'import {\n  b,\n  c\n} from "fs";',
    'var x = __require("util");',
    'try { const supportsColor = __require("supports-color"); } catch {}',
    'const y = require2("left-pad");',
    'const { C } = await import("./chunks/artifact-X.js");',
    'export { z } from "@scope/pkg";',
    '// Same interface as require(\'path\').resolve.',
  ].join('\n');
  assert.equal(specifiers(sample).filter(bare).sort(), ['@scope/pkg', 'left-pad', 'supports-color']);
});

test('the built bundles (index, cli, hook, chunks) load no package by a bare name: only builtins and their own files', () => {
  const d = dist();
  const files = jsFiles(d);
  assert.ok(files.some((f) => f.endsWith('/index.js')) && files.some((f) => f.endsWith('/cli.js')) && files.some((f) => f.endsWith('/hook.js')));
  assert.ok(files.some((f) => f.includes('/chunks/artifact-')), 'the artifact chunk (where debug lives) was built');
  const stray: string[] = [];
  let count = 0;
  for (const f of files) {
    const specs = specifiers(readFileSync(f, 'utf8'));
    count += specs.length;
    for (const s of specs.filter(bare)) stray.push(`${f.slice(d.length + 1)}: ${s}`);
  }
  assert.ok(count > 50, `the scanner saw the bundles' imports (${count})`);
  assert.equal(stray, []);
});

test('a module planted in a node_modules above a copy of the bundle is never loaded', () => {
  const d = dist();
  // Every package the bundle holds (esbuild names each bundled file in a comment) and the optional
  // ones it tries, planted where Node's lookup from <root>/pkg/dist reaches: <root>/node_modules.
  const names = new Set<string>(['supports-color']);
  for (const f of jsFiles(d)) for (const m of readFileSync(f, 'utf8').matchAll(/^\/\/ (?:[^\n]*\/)?node_modules\/((?:@[^/\n]+\/)?[^/\n]+)\//gm)) names.add(m[1]);
  assert.ok(names.size > 20, [...names].join(' '));
  const marks = join(root, 'marks');
  mkdirSync(marks);
  for (const name of names) {
    const dir = join(root, 'node_modules', name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '0.0.0', main: 'index.js', exports: { '.': { import: './index.mjs', default: './index.js' } } }));
    const mark = `require('node:fs').writeFileSync(${JSON.stringify(join(marks, name.replace('/', '+')))}, 'loaded');\n`;
    writeFileSync(join(dir, 'index.js'), `${mark}module.exports = {};\n`);
    writeFileSync(join(dir, 'index.mjs'), `import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n${mark}export default {};\n`);
  }
  // Every chunk loaded (each module's top level runs, debug's try-require included), then the CLI.
  const chunks = readdirSync(join(d, 'chunks')).map((c) => join(d, 'chunks', c));
  const load = spawnSync(process.execPath, ['--input-type=module', '-e', `for (const f of ${JSON.stringify(chunks)}) await import(f);`], { cwd: root, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  assert.is(load.status, 0, load.stderr);
  const cli = spawnSync(process.execPath, [join(d, 'cli.js'), '--help'], { cwd: root, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  assert.is(cli.status, 0, cli.stderr);
  assert.equal(readdirSync(marks), [], 'planted modules that ran');
  // The plant works: the same lookup from the bundle's dir does reach it.
  const probe = spawnSync(process.execPath, ['-e', 'require("supports-color")'], { cwd: d, encoding: 'utf8' });
  assert.is(probe.status, 0, probe.stderr);
  assert.ok(existsSync(join(marks, 'supports-color')));
});

test('the build refuses a bare import it cannot bundle, even one in a try block, and flags one left external', async () => {
  const src = join(root, 'src');
  mkdirSync(src, { recursive: true });
  const entry = join(src, 'entry.js');
  writeFileSync(entry, 'let c = null;\ntry { c = require("nbg-no-such-package"); } catch {}\nconsole.log(c);\n');
  const opts = { entryPoints: [entry], bundle: true, platform: 'node' as const, format: 'esm' as const, write: false, logLevel: 'silent' as const, metafile: true };
  // esbuild alone leaves it in place, silently: what the guard is for.
  const plain = await build(opts);
  assert.match(plain.outputFiles![0].text, /require\("nbg-no-such-package"\)/);
  const err = await build({ ...opts, plugins: [ownFilesOnly()] }).then(() => null, (e: Error) => e);
  assert.ok(err, 'the guarded build fails');
  assert.match(String(err!.message), /"nbg-no-such-package" cannot be bundled/);
  // A stubbed optional package is bundled as an empty module.
  writeFileSync(entry, 'let c = null;\ntry { c = require("supports-color"); } catch {}\nconsole.log(c);\n');
  const stubbed = await build({ ...opts, plugins: [ownFilesOnly()] });
  assert.not.match(stubbed.outputFiles![0].text, /require\("supports-color"\)/);
  // A package marked external is reported by strayImports; builtins are not.
  writeFileSync(entry, 'import x from "left-out";\nimport { join } from "node:path";\nimport fs from "fs";\nconsole.log(x, join, fs);\n');
  const ext = await build({ ...opts, external: ['left-out'], outfile: join(root, 'out.js') });
  assert.equal(strayImports(ext.metafile).map((s: string) => s.split(': ').pop()), ['left-out']);
});

test.run();
