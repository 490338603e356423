// Bundles the entry points into dist/ with esbuild, in one build with code splitting:
//   dist/index.js  the Action (action.yml runs it)
//   dist/cli.js    the CLI (package.json bin); `agent ...` is a dynamic import, so report, check
//                  and plan never load the agent, octokit or undici
//   dist/hook.js   the runner's job hooks (`agent hooks install` copies it with the chunks it
//                  imports): the agent alone, without the judging pipeline, and each agent
//                  command a chunk of its own (job-started loads the health path only)
//   dist/chunks/   code the entries share or load on demand, named by content hash
// The native addon is never bundled: src/metrics/native.ts loads it at run time with
// createRequire from dist/native/, so it stays a plain file next to the bundle.
import { build } from 'esbuild';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// `node scripts/build.mjs [DIR]`: DIR instead of dist/ (tests build the real split bundle there).
const dist = process.argv[2] ? resolve(process.argv[2]) : join(root, 'dist');
const ENTRIES = { index: 'src/index.ts', cli: 'src/cli.ts', hook: 'src/hook.ts' };

for (const f of Object.keys(ENTRIES)) await rm(join(dist, `${f}.js`), { force: true });
await rm(join(dist, 'chunks'), { recursive: true, force: true });
await mkdir(dist, { recursive: true });
await build({
  entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, src]) => [name, join(root, src)])),
  outdir: dist,
  entryNames: '[name]',
  chunkNames: 'chunks/[name]-[hash]',
  splitting: true,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  // Some CommonJS dependencies call require(); give every ESM output file one.
  banner: { js: "import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);" },
});
// The CLI is the package's bin: it starts with a shebang (the other outputs must not).
const cli = join(dist, 'cli.js');
await writeFile(cli, '#!/usr/bin/env node\n' + (await readFile(cli, 'utf8')));
// The package's bin: executable, so `npx npu-block-gate` runs it after a local build too.
await chmod(cli, 0o755);

// The prebuilt addon in dist/native/ is written by `npm run build:native`, not here:
// a plain build must be reproducible byte for byte on any machine (CI compares it).
