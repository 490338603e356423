// The one door out of the sandbox (src/probe/staging.ts, issue 25): what comes out of the probe's
// run dir, what the model dir's private copy holds, and what is removed afterwards.
import { test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Staging, sweepStaging } from '../src/probe/staging.ts';
import { REPO } from './helpers/airmini.ts';

const self = { mode: 'none' as const };
const sandboxed = { mode: 'namespace' as const };

function modelDir(): string {
  const m = join(mkdtempSync(join(tmpdir(), 'nbg-stage-tree-')), 'programming_examples/llms/m');
  mkdirSync(join(m, 'sub'), { recursive: true });
  writeFileSync(join(m, 'm_prefill.py'), 'def run_transformer_block(): pass\n');
  writeFileSync(join(m, 'sub/x.py'), 'X = 1\n');
  mkdirSync(join(m, '.git'));
  writeFileSync(join(m, '.git/config'), '[core]\n\tsshCommand = touch /tmp/pwned\n');
  return m;
}

test('take: only the contract\'s names come out, each a regular file; a link, a FIFO or a directory in a file\'s place is refused by name and never followed', () => {
  const s = Staging.create({ modelDir: null, iso: self });
  const secret = join(mkdtempSync(join(tmpdir(), 'nbg-stage-secret-')), 'id_ed25519');
  writeFileSync(secret, 'KEY\n');
  writeFileSync(join(s.out, 'probe.json'), '{"stage": "block"}\n');
  writeFileSync(join(s.out, 'probe.log'), 'log\n');
  symlinkSync(secret, join(s.out, 'block0.npu.npy'));
  spawnSync('mkfifo', [join(s.out, 'block0.ref.npy')]);
  mkdirSync(join(s.out, 'block0.input.npy'));
  writeFileSync(join(s.out, 'report.json'), '{"forged": true}'); // the judge's file: never the probe's to give
  writeFileSync(join(s.out, 'extra.sh'), 'rm -rf /');
  mkdirSync(join(s.out, 'boundaries'));
  writeFileSync(join(s.out, 'boundaries/10-q_roped.npu.npy'), 'npu');
  writeFileSync(join(s.out, 'boundaries/10-q_roped.fp32.npy'), 'fp32');
  writeFileSync(join(s.out, 'boundaries/evil.py'), 'x');
  symlinkSync(secret, join(s.out, 'boundaries/11-k_roped.ref.npy'));
  symlinkSync(join(secret, '..'), join(s.out, 'layers'));
  const run = mkdtempSync(join(tmpdir(), 'nbg-stage-run-'));
  const t = s.take(run);
  assert.equal(t.files.sort(), ['boundaries/10-q_roped.fp32.npy', 'boundaries/10-q_roped.npu.npy', 'probe.json', 'probe.log']);
  const why = Object.fromEntries(t.refused.map((r) => [r.name, r.why]));
  assert.match(why['block0.npu.npy'], /symlink/);
  assert.match(why['block0.ref.npy'], /not a regular file/);
  assert.match(why['block0.input.npy'], /not a regular file/);
  assert.match(why['boundaries/11-k_roped.ref.npy'], /symlink/);
  assert.match(why.layers, /not a directory/);
  assert.equal(readdirSync(run).sort(), ['boundaries', 'probe.json', 'probe.log']);
  assert.equal(readdirSync(join(run, 'boundaries')).sort(), ['10-q_roped.fp32.npy', '10-q_roped.npu.npy']);
  for (const f of t.files) assert.ok(lstatSync(join(run, f)).isFile(), f);
  assert.is(readFileSync(secret, 'utf8'), 'KEY\n');
  // Narrowed: the config stage's probe.json alone.
  writeFileSync(join(s.out, 'probe.json'), '{"stage": "config"}\n');
  assert.equal(s.take(run, { top: ['probe.json'], dirs: false }).files, ['probe.json']);
  assert.is(s.remove(), null);
  assert.not.ok(existsSync(s.root));
});

test('the model dir\'s private copy: files and dirs copied, links copied as links (never followed), .git left out, a subdir over the budget seen empty; the checkout is never written', () => {
  const m = modelDir();
  symlinkSync('/etc/shadow', join(m, 'shadow'));
  mkdirSync(join(m, 'build_peano'));
  writeFileSync(join(m, 'build_peano/huge.xclbin'), '');
  truncateSync(join(m, 'build_peano/huge.xclbin'), 600 * 1024 * 1024); // sparse: past the 512 MiB budget
  const s = Staging.create({ modelDir: m, iso: sandboxed });
  const copy = s.model!;
  assert.is(readFileSync(join(copy, 'sub/x.py'), 'utf8'), 'X = 1\n');
  assert.is(readlinkSync(join(copy, 'shadow')), '/etc/shadow');
  assert.not.ok(existsSync(join(copy, '.git')), '.git is never copied');
  assert.equal(s.leftOut, ['build_peano']);
  assert.equal(readdirSync(join(copy, 'build_peano')), []);
  assert.equal(s.binds(), { writable: [s.scratch, s.out], mounts: [{ src: copy, dest: m }] });
  assert.is(s.hostPath(join(m, 'build_peano/prefill_kernel_cache')), join(copy, 'build_peano/prefill_kernel_cache'));
  assert.is(s.hostPath('/elsewhere/x'), '/elsewhere/x');
  writeFileSync(join(copy, 'planted.txt'), 'x');
  mkdirSync(join(copy, '.git'));
  assert.is(s.remove(), null);
  assert.not.ok(existsSync(join(m, 'planted.txt')));
  assert.ok(existsSync(join(m, '.git/config')));
  // No sandbox (mode none): no copy, the model dir is the probe's own.
  const plain = Staging.create({ modelDir: m, iso: self });
  assert.is(plain.model, null);
  assert.equal(plain.binds().mounts, []);
  plain.remove();
});

const ROOT = process.getuid?.() === 0;

test.unless(ROOT ? null : { need: 'uid', why: 'the probe\'s own uid (nobody) needs root to hand the area over' })('as root for nobody: the area is nobody\'s; what nobody leaves (0755 dirs, a read-only file, a dir it made 0500) is removed all the same', () => {
  const owner = { uid: 65534, gid: 65534, user: 'nobody' };
  const s = Staging.create({ modelDir: modelDir(), iso: { mode: 'namespace', probeOwner: owner, share: { how: 'chown' }, asProbe: null } });
  for (const d of [s.out, s.scratch, s.model!]) assert.is(lstatSync(d).uid, 65534, d);
  assert.is(lstatSync(join(s.model!, 'sub/x.py')).uid, 65534);
  const r = spawnSync('setpriv', ['--reuid', '65534', '--regid', '65534', '--clear-groups', '--', '/bin/sh', '-c',
    'mkdir -p "$1/a/b" && echo x > "$1/a/b/f" && chmod 0444 "$1/a/b/f" && chmod 0500 "$1/a/b" && chmod 0755 "$1/a"', 'sh', s.out], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  assert.is(s.remove(), null);
  assert.not.ok(existsSync(s.root));
});

test('sweepStaging: the area of a run whose pid is gone is removed; a live run\'s, a dir without an owner file and a link with the prefix are left', async () => {
  const base = mkdtempSync(join(tmpdir(), 'nbg-stage-base-'));
  const live = Staging.create({ modelDir: null, iso: self, base });
  // A run that was killed: its pid is gone.
  const code = `import(${JSON.stringify(join(REPO, 'src/probe/staging.ts'))}).then((m) => { const s = m.Staging.create({ modelDir: null, iso: { mode: 'none' }, base: ${JSON.stringify(base)} }); require('node:fs').writeSync(1, s.root + '\\n'); process.kill(process.pid, 'SIGKILL'); });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', code], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  await new Promise((r) => child.on('close', r));
  const dead = out.trim();
  assert.ok(dead && existsSync(dead), `the killed run left ${dead}`);
  mkdirSync(join(base, 'npu-block-gate-probe-noowner'));
  const target = mkdtempSync(join(tmpdir(), 'nbg-stage-target-'));
  writeFileSync(join(target, 'owner.json'), JSON.stringify({ pid: 999999999, start: 'x' }));
  symlinkSync(target, join(base, 'npu-block-gate-probe-link'));
  chmodSync(base, 0o755);
  const removed = sweepStaging(null, base);
  assert.equal(removed, [dead]);
  assert.ok(existsSync(live.root));
  assert.ok(existsSync(join(base, 'npu-block-gate-probe-noowner')));
  assert.ok(existsSync(join(target, 'owner.json')), 'a link is never followed');
  live.remove();
});

test.run();
