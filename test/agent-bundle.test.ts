// `agent hooks install` from a code-split bundle (scripts/build.mjs: entries in dist/, chunks in
// dist/chunks/ loaded at start or on demand): the hooks' copy holds the entry and every chunk it
// can load, nothing else, and runs once the original is gone; the same with the real build, whose
// agent commands are chunks of their own.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bundleFiles } from '../src/agent/hooks.ts';
import { agent, fakeRunner, stubProgs } from './fixtures/agent/fake.ts';
import { REPO } from './helpers/airmini.ts';
import { FakeGitHub } from './helpers/github-server.ts';
import { dotRunner } from './fixtures/agent/runner.ts';

/** A bundle shaped like esbuild's splitting output: a static chain of chunks and one loaded on demand. */
function splitBundle(at: string): string {
  const dist = join(at, 'dist');
  mkdirSync(join(dist, 'chunks'), { recursive: true });
  writeFileSync(join(dist, 'hook.js'),
    'import { a } from "./chunks/chunk-AAAA1111.js";\n' +
    'import "./chunks/chunk-EEEE5555.js";\n' +
    'if (process.argv[2] === "agent") {\n' +
    '  const { b } = await import("./chunks/drain-BBBB2222.js");\n' +
    '  console.log("ours:", a, b, process.argv.slice(2).join(" "));\n' +
    '}\n');
  writeFileSync(join(dist, 'chunks', 'chunk-AAAA1111.js'), 'import { c } from "./chunk-CCCC3333.js";\nexport const a = "A" + c;\n');
  writeFileSync(join(dist, 'chunks', 'chunk-CCCC3333.js'), 'export const c = "C";\n');
  writeFileSync(join(dist, 'chunks', 'chunk-EEEE5555.js'), '// a side-effect import\n');
  // Loaded on demand, and it quotes an import of a file that does not exist (text, as bundled code may hold).
  writeFileSync(join(dist, 'chunks', 'drain-BBBB2222.js'), 'const text = \'import("./not-a-chunk.js")\';\nexport const b = "B" + text.length;\n');
  // Another entry's chunk: not the hooks' business.
  writeFileSync(join(dist, 'chunks', 'artifact-DDDD4444.js'), 'export const d = 1;\n');
  writeFileSync(join(dist, 'cli.js'), 'import "./chunks/artifact-DDDD4444.js";\n');
  return join(dist, 'hook.js');
}

test('bundleFiles: the entry, its static chunks and the ones it loads on demand, nothing else', () => {
  const f = fakeRunner();
  try {
    const entry = splitBundle(join(f.base, 'pkg'));
    assert.equal(bundleFiles(entry), ['hook.js', 'chunks/chunk-AAAA1111.js', 'chunks/chunk-EEEE5555.js', 'chunks/drain-BBBB2222.js', 'chunks/chunk-CCCC3333.js']);
  } finally {
    rmSync(f.base, { recursive: true, force: true });
  }
});

test('hooks install from a split bundle: the copy has every chunk the entry loads and runs without the original', async () => {
  const f = fakeRunner();
  try {
    const script = splitBundle(join(f.base, 'pkg'));
    const self = { node: process.execPath, execArgv: [], script, kind: 'bundle' as const };
    const dir = join(f.base, 'hooks');
    const r = await agent(['hooks', 'install', '--dir', dir], { ...f.deps, self });
    assert.is(r.code, 0, r.err);
    assert.match(r.out, /^installed a copy of the CLI .*\/hooks\/cli\/[0-9a-f]{12}\/hook\.js and the 4 chunk\(s\) it loads \(from /m);
    const [hash] = readdirSync(join(dir, 'cli'));
    assert.equal(readdirSync(join(dir, 'cli', hash, 'chunks')).sort(), ['chunk-AAAA1111.js', 'chunk-CCCC3333.js', 'chunk-EEEE5555.js', 'drain-BBBB2222.js']);
    rmSync(join(f.base, 'pkg'), { recursive: true });
    const s = spawnSync('bash', ['--noprofile', '--norc', '-e', '-o', 'pipefail', join(dir, 'job-started.sh')], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    assert.is(s.status, 0, s.stderr);
    assert.match(s.stdout, /^ours: AC B26 agent hook job-started --fork-policy probe-only$/m);
    // The same bundle again changes nothing; a changed chunk makes a new copy (the old one goes).
    const again = splitBundle(join(f.base, 'pkg'));
    assert.match((await agent(['hooks', 'install', '--dir', dir], { ...f.deps, self })).out, /^unchanged copy of the CLI/m);
    writeFileSync(join(f.base, 'pkg', 'dist', 'chunks', 'chunk-CCCC3333.js'), 'export const c = "D";\n');
    assert.match((await agent(['hooks', 'install', '--dir', dir], { ...f.deps, self: { ...self, script: again } })).out, /^installed a copy/m);
    const copies = readdirSync(join(dir, 'cli'));
    assert.is(copies.length, 1);
    assert.ok(copies[0] !== hash && existsSync(join(dir, 'cli', copies[0], 'chunks', 'chunk-CCCC3333.js')));
  } finally {
    rmSync(f.base, { recursive: true, force: true });
  }
});

/** A process run without blocking (the GitHub fake answers from this one): its exit status and output. */
function runAsync(argv: string[], o: { env: NodeJS.ProcessEnv; cwd: string; input?: string }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const c = spawn(process.execPath, argv, { env: o.env, cwd: o.cwd });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => { stdout += d; });
    c.stderr.on('data', (d) => { stderr += d; });
    c.on('close', (status) => done({ status, stdout, stderr }));
    c.stdin.end(o.input ?? '');
  });
}

test('hooks install from the real build: one hook.js (and the GitHub client chunk); the copy runs both hooks and every agent command once the build is gone', async () => {
  const f = fakeRunner();
  const gh = await new FakeGitHub({ owner: 'acme', repo: 'mlir-air', tokens: { ghp_admin: { login: 'fleet-admin', type: 'User' } }, runners: [{ id: 42, name: 'npu-runner-1', labels: ['amdryzenai5pro340'] }] }).start();
  try {
    const dist = join(f.base, 'pkg', 'dist');
    const b = spawnSync(process.execPath, [join(REPO, 'scripts', 'build.mjs'), dist], { encoding: 'utf8' });
    assert.is(b.status, 0, b.stderr);
    // The hooks load one file at start; the GitHub client (a drain by label) is the only chunk, on demand.
    const files = bundleFiles(join(dist, 'hook.js'));
    assert.equal(bundleFiles(join(dist, 'hook.js'), false), ['hook.js']);
    assert.match(files[1], /^chunks\/octokit-[A-Z0-9]+\.js$/);
    const { env } = stubProgs(f);
    const hooks = join(f.base, 'hooks');
    const run = (argv: string[], extra: NodeJS.ProcessEnv = {}) => runAsync(argv, { env: { ...env, ...extra }, cwd: f.cwd });
    const inst = await run([join(dist, 'cli.js'), 'agent', 'hooks', 'install', '--dir', hooks]);
    assert.is(inst.status, 0, inst.stderr);
    rmSync(join(f.base, 'pkg'), { recursive: true });
    const [copy] = readdirSync(join(hooks, 'cli'));
    const copyDir = join(hooks, 'cli', copy);
    assert.equal(readdirSync(join(copyDir, 'chunks')).sort(), files.slice(1).map((c) => c.slice('chunks/'.length)).sort());
    // Each hook as its shim runs it, plus the fake root.
    const shim = (name: string) => {
      const m = /^exec (\S+) (\S+) (agent hook .*)$/m.exec(readFileSync(join(hooks, `${name}.sh`), 'utf8'))!;
      return run([m[2], ...m[3].split(' '), '--root', f.root]);
    };
    const started = await shim('job-started');
    assert.is(started.status, 0, started.stderr);
    assert.match(started.stdout, /^13 ok, 0 warn, 0 fail, 0 unknown$/m);
    assert.match(started.stdout, /^npu-block-gate: job-started hook: NPU usable; fork policy probe-only: ok$/m);
    const completed = await shim('job-completed');
    assert.is(completed.status, 0, completed.stderr);
    assert.match(completed.stdout, /^npu-block-gate: diagnostics appended to /m);
    assert.match(completed.stdout, /^npu-block-gate: job recorded in /m);
    assert.ok(existsSync(join(f.state, 'last-job.json')));
    // The other commands from the copy, a drain by label (the GitHub client chunk) included.
    const hook = join(copyDir, 'hook.js');
    const rd = join(f.base, 'actions-runner');
    mkdirSync(rd);
    writeFileSync(join(rd, '.runner'), dotRunner({ id: 42, name: 'npu-runner-1', gitHubUrl: 'https://github.com/acme/mlir-air' }));
    const token = join(f.base, 'token');
    writeFileSync(token, 'ghp_admin\n', { mode: 0o600 });
    for (const [argv, code, out] of [
      [['doctor', '--root', f.root], 0, /^12 ok, 0 warn, 0 fail, 0 unknown$/m],
      [['status', '--root', f.root], 0, /NPU/],
      [['setup', '--help'], 0, /^npu-block-gate agent setup: prepare this runner/],
      [['cache', 'stats', '--cache-dir', f.cache], 0, /./],
      [['lock', 'status', '--root', f.root], 0, /NPU lock off/],
      [['fleet', '-'], 2, /^$/],
      [['drain', '--root', f.root, '--runner-dir', rd, '--token-file', token, '--api-url', gh.url], 0, /^removed label amdryzenai5pro340 from runner npu-runner-1 \(id 42\); read back: gone$/m],
      [['hooks', 'install', '--dir', join(f.base, 'again')], 0, new RegExp(`^installed a copy of the CLI .* and the ${files.length - 1} chunk\\(s\\) it loads`, 'm')],
    ] as [string[], number, RegExp][]) {
      const r = await run([hook, 'agent', ...argv], { NPU_BLOCK_GATE_NPU_LOCK: 'none' });
      assert.is(r.status, code, `agent ${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, out, `agent ${argv.join(' ')}`);
      assert.not.match(r.stderr, /ERR_MODULE_NOT_FOUND|Cannot find/, `agent ${argv.join(' ')}`);
    }
    assert.equal(gh.runners[0].labels, []);
  } finally {
    await gh.stop();
    rmSync(f.base, { recursive: true, force: true });
  }
});

test.run();
