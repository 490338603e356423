// Issue 26.7: `npx npu-block-gate` never compiles the native addon at run time in a clone where
// `npm ci` ran. npx does not find a project's own bin in node_modules/.bin, so it installs the
// checkout into its cache, which reruns the package's "install" script in the checkout: at
// 8e7874c that was `node-gyp rebuild` (seconds to a minute, on every first call per checkout).
import { test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ensureCli } from './helpers/dist.ts';
import { clone } from './helpers/clone.ts';

test('issue 26.7: the first npx npu-block-gate in a clone where npm ci ran compiles nothing, and runs the command', async () => {
  await ensureCli(); // dist/cli.js as the sources say (the copy takes dist/ as it is)
  const c = clone();
  try {
    const before = statSync(c.addon);
    // A fresh npm cache: this is npx's first call for this checkout.
    const cache = join(c.dir, '..', 'npm-cache');
    const r = spawnSync('npx', ['npu-block-gate', '--help'], {
      cwd: c.dir, encoding: 'utf8', timeout: 300_000,
      env: { ...process.env, npm_config_cache: cache, npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' },
    });
    assert.is(r.status, 0, `${r.stderr}\n${r.error ?? ''}`);
    assert.match(r.stdout, /^npu-block-gate \d+\.\d+\.\d+: Phase 2 single-block validation/);
    // node-gyp rebuild leaves its Makefile and config.gypi in native/build and writes the addon anew.
    assert.equal(readdirSync(join(c.dir, 'native/build')), ['Release']);
    const after = statSync(c.addon);
    assert.equal([after.ino, after.mtimeMs], [before.ino, before.mtimeMs], 'the addon npm ci built was rebuilt');
  } finally {
    c.cleanup();
  }
});

test('issue 26.7: npm ci (npm_command=ci) keeps an addon newer than its sources; npx (npm_command=exec) never compiles, even with no addon', () => {
  const c = clone();
  try {
    const run = (command: string) => spawnSync(process.execPath, ['scripts/install-native.mjs'], { cwd: c.dir, encoding: 'utf8', env: { ...process.env, npm_command: command, npm_config_node_gyp: '' }, timeout: 600_000 });
    const kept = run('ci');
    assert.is(kept.status, 0, kept.stderr);
    assert.match(kept.stdout, 'native addon up to date (native/build/Release/npu_block_gate.node); not rebuilt');
    assert.equal(readdirSync(join(c.dir, 'native/build')), ['Release']);
    // npx never compiles, even with no addon at all.
    rmSync(join(c.dir, 'native/build'), { recursive: true });
    const npx = run('exec');
    assert.is(npx.status, 0, npx.stderr);
    assert.not.ok(existsSync(join(c.dir, 'native/build')), 'npx compiled the addon');
  } finally {
    c.cleanup();
  }
});

test.run();
