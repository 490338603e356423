// npx tsx bench/sizes.ts [--dist DIR]
//
// What each entry of the build loads: dist/index.js (the Action), dist/cli.js (the CLI) and
// dist/hook.js (the runner's job hooks), with the chunks it imports at start (what every run of it
// parses) and with those it may load on demand too (the agent for `cli.js agent ...`, octokit
// and undici for a drain by label), as the hooks' copy finds them (src/agent/hooks.ts bundleFiles).
import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleFiles } from '../src/agent/hooks.ts';
import { isMain, option } from './lib.ts';

export function bundleSizes(dist: string): string[] {
  const kb = (files: string[]) => `${(files.reduce((n, f) => n + statSync(join(dist, f)).size, 0) / 1024).toFixed(0)} KiB`;
  return ['index.js', 'cli.js', 'hook.js'].map((entry) => {
    const start = bundleFiles(join(dist, entry), false);
    const all = bundleFiles(join(dist, entry));
    return `  ${entry.padEnd(9)} ${kb([entry]).padStart(9)} itself; ${kb(start).padStart(9)} loaded at start (${start.length} files); ${kb(all).padStart(9)} with what it loads on demand (${all.length} files)`;
  });
}

if (isMain(import.meta.url)) {
  const dist = resolve(option(process.argv.slice(2), 'dist', fileURLToPath(new URL('../dist', import.meta.url))));
  console.log(`bench/sizes: ${dist}`);
  for (const l of bundleSizes(dist)) console.log(l);
}
