// Bundles the entry points into dist/ with esbuild:
//   dist/index.js  the Action (action.yml runs it)
//   dist/cli.js    the CLI (package.json bin); `agent ...` is a dynamic import, so report, check
//                  and plan never load the agent, octokit or undici
//   dist/chunks/   code index.js and cli.js share or load on demand, named by content hash (one
//                  build with code splitting)
//   dist/hook.js   the runner's job hooks (`agent hooks install` copies it with the chunk it may
//                  load): the agent alone, in one file of its own (a second build, without
//                  splitting). Every job pays its start-up, and Node loads one ES module file much
//                  faster than the dozen chunks a split build makes of the same code; each agent
//                  command in it is initialized only when it runs. The one thing it leaves out is
//                  the GitHub client (octokit, undici: a drain by label), which it imports on
//                  demand from the first build's chunks.
import { build } from 'esbuild';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ownFilesOnly, strayImports } from './own-files.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// `node scripts/build.mjs [DIR]`: DIR instead of dist/ (tests build the real split bundle there).
const dist = process.argv[2] ? resolve(process.argv[2]) : join(root, 'dist');
const ENTRIES = { index: 'src/index.ts', cli: 'src/cli.ts' };
const HOOK = 'src/hook.ts';
const GITHUB_CLIENT = 'src/github/octokit.ts';

for (const f of [...Object.keys(ENTRIES), 'hook']) await rm(join(dist, `${f}.js`), { force: true });
await rm(join(dist, 'chunks'), { recursive: true, force: true });
await mkdir(dist, { recursive: true });
const common = {
  absWorkingDir: root,
  outdir: dist,
  entryNames: '[name]',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  // Every bare import bundled, a builtin, or an empty stub: nothing resolved from outside dist/.
  plugins: [ownFilesOnly()],
  // Some CommonJS dependencies call require(); give every ESM output file one.
  banner: { js: "import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);" },
};
const split = await build({
  ...common,
  entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, src]) => [name, join(root, src)])),
  chunkNames: 'chunks/[name]-[hash]',
  splitting: true,
});
// The chunk of the first build that `agent drain`'s import() of the GitHub client loads.
const client = Object.entries(split.metafile.outputs).find(([, o]) => o.entryPoint === GITHUB_CLIENT)?.[0];
if (!client) throw new Error(`build: no chunk for ${GITHUB_CLIENT} (is it still imported on demand?)`);
const clientImport = './' + relative(dist, resolve(root, client)).split(sep).join('/');
const hook = await build({
  ...common,
  entryPoints: { hook: join(root, HOOK) },
  splitting: false,
  plugins: [...common.plugins, {
    name: 'github-client-chunk',
    setup(b) {
      b.onResolve({ filter: /[/\\]github[/\\]octokit\.ts$/ }, (a) => (a.kind === 'dynamic-import' ? { path: clientImport, external: true } : undefined));
    },
  }],
});
// hook.js loads no npm package at start: a new import() of one would be inlined here, unnoticed.
const npm = Object.keys(hook.metafile.inputs).filter((f) => f.includes('node_modules'));
if (npm.length) throw new Error(`build: dist/hook.js would hold ${npm.length} npm file(s) (${npm.slice(0, 3).join(', ')}): import them through ${GITHUB_CLIENT} or another chunk of the first build`);
// No output may load a package from outside dist/ (a module planted in a node_modules above it).
const stray = [...strayImports(split.metafile), ...strayImports(hook.metafile)];
if (stray.length) throw new Error(`build: the bundle would load ${stray.length} package(s) from outside dist/ (${stray.slice(0, 3).join(', ')}): bundle them (scripts/own-files.mjs)`);
// The CLI is the package's bin: it starts with a shebang (the other outputs must not).
const cli = join(dist, 'cli.js');
await writeFile(cli, '#!/usr/bin/env node\n' + (await readFile(cli, 'utf8')));
// The package's bin: executable, so `npx npu-block-gate` runs it after a local build too.
await chmod(cli, 0o755);

// The prebuilt addon in dist/native/ is written by `npm run build:native`, not here:
// a plain build must be reproducible byte for byte on any machine (CI compares it).
