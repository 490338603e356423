#!/usr/bin/env node
// After `node-gyp rebuild --directory=native`: copy the addon to dist/native/ under its
// platform name, the prebuilt that src/metrics/native.ts loads when nothing was built locally.
// Only `npm run build:native` writes dist/native/; `npm run build` never touches it.
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const from = join(root, 'native', 'build', 'Release', 'npu_block_gate.node');
const to = join(root, 'dist', 'native', `npu_block_gate-${process.platform}-${process.arch}.node`);
if (!existsSync(from)) {
  console.error(`copy-native: ${from} is missing; run node-gyp rebuild --directory=native first`);
  process.exit(1);
}
mkdirSync(dirname(to), { recursive: true });
copyFileSync(from, to);
console.log(`copy-native: ${to}`);
