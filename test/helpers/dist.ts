// The Action and CLI tests run the bundles (dist/index.js, dist/cli.js) as a runner or a user
// would: one node process, no TypeScript loader. When a source file is newer than the bundle, the
// current sources are bundled into a private file under the repository's tmp/ (ignored) with the
// options of scripts/build.mjs instead, so the tests never rewrite the committed dist/ (and never
// test a stale one). NBG_TEST_DIST=committed forces dist/ as it is.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO } from './airmini.ts';
// @ts-expect-error: a plain .mjs module of the build, without types
import { ownFilesOnly } from '../../scripts/own-files.mjs';

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

const built = new Map<string, Promise<string>>();

/** dist/<name>.js when it is as new as src/, else a bundle of src/<name>.ts made once per process. */
function ensureBundle(name: 'index' | 'cli'): Promise<string> {
  const committed = join(REPO, `dist/${name}.js`);
  if (process.env.NBG_TEST_DIST === 'committed') return Promise.resolve(committed);
  if (existsSync(committed) && statSync(committed).mtimeMs >= newest(join(REPO, 'src'))) return Promise.resolve(committed);
  let p = built.get(name);
  if (!p) {
    p = (async () => {
      // Inside the repository (its tmp/ is ignored) so the bundle finds scripts/probe the way
      // dist/ does: by walking up from its own directory. (node_modules may be a link to another
      // checkout's, whose scripts/probe is not this one.)
      const cache = join(REPO, 'tmp');
      mkdirSync(cache, { recursive: true });
      const dir = mkdtempSync(join(cache, `nbg-${name}-`));
      process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
      const out = join(dir, `${name}.js`);
      await build({
        entryPoints: [join(REPO, `src/${name}.ts`)],
        outfile: out,
        bundle: true,
        platform: 'node',
        target: 'node20',
        format: 'esm',
        logLevel: 'error',
        plugins: [ownFilesOnly()],
        banner: { js: "import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);" },
      });
      return out;
    })();
    built.set(name, p);
  }
  return p;
}

/** The Action's bundle (dist/index.js, or the current sources bundled). */
export function ensureDist(): Promise<string> {
  return ensureBundle('index');
}

/** The CLI's bundle (dist/cli.js, or the current sources bundled): run it as `node <path> ARGS`. */
export function ensureCli(): Promise<string> {
  return ensureBundle('cli');
}
