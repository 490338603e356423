// A clone of this checkout as `npm ci` leaves one, for the npx tests and bench/npx.ts: its files as
// git sees them (uncommitted ones too), node_modules of links to this checkout's packages (nothing is
// written into this checkout's own), and the addon npm ci built in native/build/Release.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from './airmini.ts';

/** The clone (dir: the checkout; its parent holds nothing else of ours), the addon in it, and its removal. */
export function clone(): { dir: string; addon: string; cleanup: () => void } {
  const base = mkdtempSync(join(tmpdir(), 'nbg-npx-'));
  const dir = join(base, 'npu-block-gate');
  mkdirSync(dir);
  const files = spawnSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: REPO, encoding: 'utf8' }).stdout.split('\0').filter((f) => f && f !== 'node_modules' && !f.startsWith('tmp/'));
  for (const f of files) {
    if (!existsSync(join(REPO, f)) || statSync(join(REPO, f)).isDirectory()) continue;
    mkdirSync(join(dir, f, '..'), { recursive: true });
    copyFileSync(join(REPO, f), join(dir, f));
  }
  // node_modules: each package a link (nothing is written into this checkout's own).
  const nm = join(dir, 'node_modules');
  mkdirSync(join(nm, '.bin'), { recursive: true });
  for (const n of readdirSync(join(REPO, 'node_modules'))) if (n !== '.bin') symlinkSync(join(REPO, 'node_modules', n), join(nm, n));
  for (const n of readdirSync(join(REPO, 'node_modules/.bin'))) symlinkSync(join(REPO, 'node_modules/.bin', n), join(nm, '.bin', n));
  // What `npm ci` left: the addon it built (this checkout's, else the prebuilt standing in for it).
  const addon = join(dir, 'native/build/Release/npu_block_gate.node');
  mkdirSync(join(addon, '..'), { recursive: true });
  const built = join(REPO, 'native/build/Release/npu_block_gate.node');
  copyFileSync(existsSync(built) ? built : join(REPO, 'dist/native/npu_block_gate-linux-x64.node'), addon);
  return { dir, addon, cleanup: () => rmSync(base, { recursive: true, force: true }) };
}
