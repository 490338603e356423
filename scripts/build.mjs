// Bundles the two entry points into dist/ with esbuild.
// The native addon is never bundled: src/metrics/native.ts loads it at run time
// with createRequire from dist/native/, so it stays a plain file next to the bundle.
import { build } from 'esbuild';
import { chmod, mkdir, copyFile, readdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  // Some CommonJS dependencies call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);" },
};

for (const f of ['index.js', 'cli.js']) await rm(join(dist, f), { force: true });
await mkdir(dist, { recursive: true });
await build({ ...common, entryPoints: [join(root, 'src/index.ts')], outfile: join(dist, 'index.js') });
await build({ ...common, entryPoints: [join(root, 'src/cli.ts')], outfile: join(dist, 'cli.js'),
  banner: { js: '#!/usr/bin/env node\n' + common.banner.js } });
// The package's bin: executable, so `npx npu-block-gate` runs it after a local build too.
await chmod(join(dist, 'cli.js'), 0o755);

// The prebuilt addon in dist/native/ is written by `npm run build:native`, not here:
// a plain build must be reproducible byte for byte on any machine (CI compares it).
