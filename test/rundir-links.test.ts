// Issue 25 (lower finding): the judge resolved a symlink a pull request left in its run dir, and
// its error then named the target or said it was missing ("resolves to /root/.bashrc" against "a
// symlink to a missing file"): an oracle telling the pull request which hidden paths exist. A link
// is now refused unfollowed, with one message whatever it points at.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fixture, report } from './helpers/rundir.ts';
import { runFile } from '../src/rundir/read.ts';

/** Targets a pull request might probe: a hidden file that exists, one that does not, a dir, a device. */
function targets(): [string, string][] {
  const home = mkdtempSync(join(tmpdir(), 'nbg-home-'));
  chmodSync(home, 0o700);
  writeFileSync(join(home, '.bashrc'), 'secret\n');
  mkdirSync(join(home, '.ssh'));
  return [
    ['an existing hidden file', join(home, '.bashrc')],
    ['a missing file', join(home, '.no-such-file')],
    ['a directory', join(home, '.ssh')],
    ['/dev/zero', '/dev/zero'],
    ['a file inside the run dir', 'block0.npu.npy'],
  ];
}

/** The error with the run dir's own path taken out: what differs between targets, if anything. */
const bare = (err: string, runDir: string) => err.split(runDir).join('<run>');

test('report: a symlinked tensor gives the same message whatever its target, and names no target', async () => {
  const seen = new Map<string, string>();
  for (const [what, target] of targets()) {
    const f = fixture();
    rmSync(join(f.runDir, 'block0.ref.npy'));
    symlinkSync(target, join(f.runDir, 'block0.ref.npy'));
    const r = await report(f);
    assert.is(r.code, 2, `${what}: ${r.err}`);
    assert.not.ok(r.err.includes(target), `${what}: names its target: ${r.err}`);
    assert.not.match(r.err, /bashrc|no-such-file|\.ssh|zero|resolves|missing/, what);
    seen.set(what, bare(r.err, f.runDir));
  }
  const texts = [...new Set(seen.values())];
  assert.is(texts.length, 1, [...seen].map(([w, t]) => `${w}: ${t}`).join('\n'));
  assert.is(texts[0], "npu-block-gate: error: <run>/block0.ref.npy: is a symlink: a run dir's files are read only as regular files inside it, never through a link (not followed)\n");
});

test('runFile: a link anywhere on the way (a file or a directory) is refused unfollowed, naming the link', () => {
  for (const [what, target] of targets()) {
    const dir = mkdtempSync(join(tmpdir(), 'nbg-links-'));
    writeFileSync(join(dir, 'block0.npu.npy'), 'x');
    symlinkSync(target, join(dir, 'f.npy'));
    assert.throws(() => runFile(dir, 'f.npy', 'tensors.npu.file'), (e: Error) => e.message === `${dir}/f.npy: is a symlink: a run dir's files are read only as regular files inside it, never through a link (not followed)`, what);
    // A directory on the way that is a link: refused at the link, whatever is (or is not) behind it.
    symlinkSync(target, join(dir, 'sub'));
    assert.throws(() => runFile(dir, 'sub/x.npy', 'tensors.npu.file'), (e: Error) => e.message === `${dir}/sub: is a symlink: a run dir's files are read only as regular files inside it, never through a link (not followed)`, what);
  }
  // A plain file in a plain subdirectory is read.
  const dir = mkdtempSync(join(tmpdir(), 'nbg-links-'));
  mkdirSync(join(dir, 'sub'));
  writeFileSync(join(dir, 'sub/x.npy'), 'x');
  assert.ok(existsSync(runFile(dir, 'sub/x.npy', 'f')));
  renameSync(join(dir, 'sub/x.npy'), join(dir, 'sub/y.npy'));
  assert.throws(() => runFile(dir, 'sub/x.npy', 'f'), /sub\/x\.npy: missing \(probe\.json f lists it\)/);
});

test.run();
