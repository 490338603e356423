// The Action tests run the bundled Action (dist/index.js) as a runner would. When a source file
// is newer than dist/index.js, the current sources are bundled into a private file under node_modules/.cache with the
// options of scripts/build.mjs instead, so the tests never rewrite the committed dist/ (and never
// test a stale one). NBG_TEST_DIST=committed forces dist/index.js as it is.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO } from './airmini.ts';

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

let built: string | null = null;

export async function ensureDist(): Promise<string> {
  const index = join(REPO, 'dist/index.js');
  if (process.env.NBG_TEST_DIST === 'committed') return index;
  if (existsSync(index) && statSync(index).mtimeMs >= newest(join(REPO, 'src'))) return index;
  if (built) return built;
  // Inside the repository (node_modules is ignored) so the bundle finds scripts/probe the way
  // dist/index.js does: by walking up from its own directory.
  const cache = join(REPO, 'node_modules/.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'nbg-dist-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, 'index.js');
  await build({
    entryPoints: [join(REPO, 'src/index.ts')],
    outfile: out,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    logLevel: 'error',
    banner: { js: "import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);" },
  });
  built = out;
  return out;
}
