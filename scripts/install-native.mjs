#!/usr/bin/env node
// The package's "install" script. npm runs it after `npm ci` / `npm install`, and npx runs it again:
// `npx npu-block-gate` in this checkout, not finding the command in node_modules/.bin (npm never links
// a project's own bin there), installs the checkout into npx's cache, which reruns this script in the
// checkout. It compiles the native addon at most once, and never for npx:
//   - npm_command=exec (npx, npm exec): never compiles; the addon `npm ci` built, else the committed
//     prebuilt (dist/native/), else the TypeScript engine is used (src/metrics/native.ts).
//   - an addon in native/build/Release newer than native/src and binding.gyp: kept as it is.
//   - otherwise `node-gyp rebuild --directory=native`; a failure leaves the TypeScript engine.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const addon = join(root, 'native', 'build', 'Release', 'npu_block_gate.node');
const say = (m) => console.log(`npu-block-gate: ${m}`);

/** Newest modification time under p (a file or a directory). */
function newest(p) {
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(p).map((n) => newest(join(p, n))));
}

function upToDate() {
  if (!existsSync(addon)) return false;
  return statSync(addon).mtimeMs >= Math.max(newest(join(root, 'native', 'src')), newest(join(root, 'native', 'binding.gyp')));
}

function build() {
  // npm's own node-gyp (npm_config_node_gyp) when npm runs this, else the one on PATH.
  const gyp = process.env.npm_config_node_gyp;
  const [cmd, args] = gyp ? [gyp.endsWith('.js') ? process.execPath : gyp, gyp.endsWith('.js') ? [gyp] : []] : ['node-gyp', []];
  const r = spawnSync(cmd, [...args, 'rebuild', '--directory=native'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) say('native addon not built; the TypeScript engine will be used');
}

if (process.env.npm_command === 'exec') {
  say(existsSync(addon) ? 'npx: using the native addon npm ci built' : 'npx: the native addon is not compiled here (the prebuilt, else the TypeScript engine, is used)');
} else {
  if (upToDate()) say(`native addon up to date (${relative(root, addon)}); not rebuilt`);
  else build();
}
