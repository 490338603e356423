// The git wrapper: named steps, and our token (not the checkout's) on every push.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { gitFor, urlBase } from '../../src/github/git.ts';
import { docsBranch, restoreRecordedDocs, upsertDocsPr } from '../../src/github/docs-pr.ts';
import { findCheckout, modelCheckout } from '../../src/git/pinned.ts';
import { git, makeGitRemote } from '../helpers/git-remote.ts';
import { plantHostileGit, plantHostileConfig } from '../helpers/hostile-git.ts';

const basic = (token: string) => `basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;

test('a push sends github-token, not the URL-scoped extraheader actions/checkout persisted', async () => {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(String(req.headers.authorization ?? ''));
    res.writeHead(403);
    res.end('no');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  try {
    const dir = mkdtempSync(join(tmpdir(), 'nbg-xh-'));
    git(dir, ['init', '--quiet', '--initial-branch=main']);
    git(dir, ['commit', '--quiet', '--allow-empty', '-m', 'x']);
    git(dir, ['remote', 'add', 'origin', `${url}acme/mlir-air`]);
    // What actions/checkout writes with persist-credentials (the default).
    git(dir, ['config', `http.${url}.extraheader`, `AUTHORIZATION: ${basic('CHECKOUT_TOKEN')}`]);
    const g = gitFor(dir, null);
    g.useToken('OUR_TOKEN');
    await g.pushWithLease('origin', 'HEAD', 'x', null).then(() => assert.unreachable(), () => undefined);
    assert.ok(seen.length >= 1, 'git reached the server');
    for (const h of seen) assert.is(h, basic('OUR_TOKEN'));
    // Without our token the checkout's header would have gone: the test would notice.
    seen.length = 0;
    await gitFor(dir, null).pushWithLease('origin', 'HEAD', 'x', null).catch(() => undefined);
    assert.is(seen[0], basic('CHECKOUT_TOKEN'));
  } finally {
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
  }
});

test('urlBase: scheme and host of http(s) remotes, without credentials', () => {
  assert.is(urlBase('https://x-access-token:abc@github.com/acme/mlir-air.git'), 'https://github.com/');
  assert.is(urlBase('http://127.0.0.1:8080/a/b'), 'http://127.0.0.1:8080/');
  assert.is(urlBase('/srv/remote.git'), null);
  assert.is(urlBase('git@github.com:acme/x.git'), null);
});

test('named steps: head, blobAt, treeWith, commitTree, recentCommitHasLine', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-git-'));
  git(dir, ['init', '--quiet', '--initial-branch=main']);
  git(dir, ['commit', '--quiet', '--allow-empty', '-m', 'base\n\nNpu-Block-Gate-Result: abc.def']);
  const g = gitFor(dir, null);
  const head = await g.head();
  assert.match(head ?? '', /^[0-9a-f]{40}$/);
  assert.is(await g.blobAt(head!, 'nope.md'), null);
  assert.ok(await g.recentCommitHasLine(head!, 'Npu-Block-Gate-Result: abc.def'));
  assert.not.ok(await g.recentCommitHasLine(head!, 'Npu-Block-Gate-Result: abcXdef'), 'a dot is a dot, not any character');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(join(dir, 'f.md'), 'hello\n');
  const tree = await g.treeWith(head!, [{ rel: 'docs/f.md', abs: join(dir, 'f.md') }], join(dir, '.git', 'tmp-index'));
  const commit = await g.commitTree(tree, head!, 'docs', { name: 'bot', email: 'bot@example.invalid' });
  assert.ok(await g.blobAt(commit, 'docs/f.md'));
  assert.is(await g.readBlob((await g.blobAt(commit, 'docs/f.md'))!), 'hello\n');
  assert.is(git(dir, ['diff', '--cached', '--name-only']), '', "the user's index is untouched");
});

test('docs branches never collide (issue 25): x y vs x_y, a/b vs a__b, a changed component vs the plain one; plain paths keep their branch', () => {
  // The branches existing docs PRs are on.
  assert.is(docsBranch('programming_examples/llms/llama32_1b'), 'npu-block-gate/phase2/programming_examples/llms/llama32_1b');
  assert.is(docsBranch('programming_examples/llms/qwen25_0_5b'), 'npu-block-gate/phase2/programming_examples/llms/qwen25_0_5b');
  assert.is.not(docsBranch('x y'), docsBranch('x_y'));
  assert.is.not(docsBranch('a/b'), docsBranch('a__b'));
  const keys = ['x y', 'x_y', 'x  y', 'x?y', 'x~y', 'a/b', 'a__b', '.x', '_x', '-x', 'x.lock', 'x_lock', 'x.', 'x_', 'x..y', 'x_y_', 'ä', 'a b/c', 'a_b/c'];
  const branches = keys.map(docsBranch);
  assert.is(new Set(branches).size, keys.length, branches.join(' '));
  for (const b of branches) git(mkdtempSync(join(tmpdir(), 'nbg-ref-')), ['check-ref-format', '--branch', b]);
  assert.is(docsBranch('a//b/'), docsBranch('a/b'), 'the same directory written another way');
});

test('docs branch: from the repository-relative path, so same-named models in two dirs never share one', () => {
  assert.is(docsBranch('programming_examples/llms/tiny_llama'), 'npu-block-gate/phase2/programming_examples/llms/tiny_llama');
  assert.is.not(docsBranch('a/llms/m'), docsBranch('b/llms/m'));
  for (const k of ['x/.hidden/m.lock', 'a b/c..d/', '../..//x.', '-x/y']) {
    const b = docsBranch(k);
    assert.ok(!/(^|\/)\.|\.\.|\.lock(\/|$)|\/$|\.$|[ ~^:?*[\\]|\/-/.test(b.slice('npu-block-gate/phase2/'.length)), `${k} -> ${b}`);
    git(mkdtempSync(join(tmpdir(), 'nbg-ref-')), ['check-ref-format', '--branch', b]);
  }
});

const quiet = () => {};
const BRANCH = 'npu-block-gate/phase2/programming_examples/llms/tiny_llama';

function writeDocs(model: string, text: string): string[] {
  const files = [join(model, 'docs/development_progress/phase2_block.md'), join(model, 'TODO.md')];
  mkdirSync(join(model, 'docs/development_progress'), { recursive: true });
  for (const f of files) writeFileSync(f, `${text}\n`);
  return files;
}

test('a .git planted in the model dir (sshCommand, hooks, fsmonitor, credential helper): nothing it names runs, and the docs PR is made from the workspace repository', async () => {
  const r = makeGitRemote();
  const model = r.model('tiny_llama');
  const marks = join(r.root, 'marks');
  plantHostileGit(model, marks);
  // The planted repository is what git's own discovery from the model dir finds.
  assert.is(git(model, ['rev-parse', '--show-toplevel']), model);
  const g = gitFor(r.work, model);
  g.useToken('OUR_TOKEN');
  assert.is(g.root, r.work);
  assert.equal(await restoreRecordedDocs(g, 'origin', 'main', BRANCH, writeDocs(model, 'x'), quiet), []);
  const files = writeDocs(model, 'PASS run 1');
  const res = await upsertDocsPr({ git: g, api: null, remote: 'origin', base: 'main', branch: BRANCH, files, title: 't', body: 'b', commitMessage: 'docs: run 1', digest: 'abc', log: quiet });
  assert.is(res.committed, true);
  assert.ok(r.branches().includes(BRANCH), r.branches().join(','));
  assert.is(r.show(BRANCH, 'programming_examples/llms/tiny_llama/docs/development_progress/phase2_block.md'), 'PASS run 1\n');
  assert.is(git(r.bare, ['rev-parse', `${BRANCH}^`]), r.baseSha, 'one commit on the real main');
  // And back: the recorded version is restored into the model dir from the real repository.
  writeDocs(model, 'edited');
  assert.equal(await restoreRecordedDocs(g, 'origin', 'main', BRANCH, files, quiet), ['programming_examples/llms/tiny_llama/docs/development_progress/phase2_block.md', 'programming_examples/llms/tiny_llama/TODO.md']);
  assert.is(readFileSync(files[0], 'utf8'), 'PASS run 1\n');
  assert.equal(readdirSync(marks), [], 'programs the planted config named ran');
  // The plant is live: git's own discovery from the model dir runs it.
  try { execFileSync('git', ['fetch', 'origin'], { cwd: model, stdio: 'ignore', env: { PATH: process.env.PATH ?? '', HOME: r.root, GIT_CONFIG_NOSYSTEM: '1' } }); } catch { /* the planted ssh fails */ }
  assert.ok(readdirSync(marks).includes('sshCommand'), readdirSync(marks).join(','));
});

/** A `git` first on PATH that records each call (argv and environment, NUL-separated) and runs the real one. */
function recordingGit(dir: string): { path: string; calls: () => { args: string[]; env: Record<string, string> }[] } {
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  const bin = join(dir, 'bin');
  const log = join(dir, 'calls');
  mkdirSync(bin, { recursive: true });
  mkdirSync(log, { recursive: true });
  writeFileSync(join(bin, 'git'), `#!/bin/sh\nf=$(mktemp ${log}/call.XXXXXXXX)\nprintf '%s\\0' "$@" > "$f.args"\nenv -0 > "$f.env"\nexec ${real} "$@"\n`);
  chmodSync(join(bin, 'git'), 0o755);
  return {
    path: bin,
    calls: () => readdirSync(log).filter((f) => f.endsWith('.args')).sort().map((f) => {
      const base = join(log, f.slice(0, -'.args'.length));
      const args = readFileSync(`${base}.args`, 'utf8').split('\0').slice(0, -1);
      const env = Object.fromEntries(readFileSync(`${base}.env`, 'utf8').split('\0').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      return { args, env };
    }),
  };
}

test('every git call names the workspace checkout and pins the config-driven programs; only fetches and pushes carry the token', async () => {
  const r = makeGitRemote();
  const model = r.model('tiny_llama');
  const marks = join(r.root, 'marks');
  plantHostileGit(model, marks);
  // The real repository's own config and attributes too (a pull request cannot write them; pinned all the same).
  plantHostileConfig(r.work, marks);
  const rec = recordingGit(join(r.root, 'rec'));
  const path = process.env.PATH;
  process.env.PATH = `${rec.path}:${path}`;
  process.env.GIT_DIR = join(model, '.git');
  try {
    const g = gitFor(r.work, model);
    g.useToken('OUR_TOKEN');
    const files = writeDocs(model, 'PASS');
    await restoreRecordedDocs(g, 'origin', 'main', BRANCH, files, quiet);
    const res = await upsertDocsPr({ git: g, api: null, remote: 'origin', base: 'main', branch: BRANCH, files, title: 't', body: 'b', commitMessage: 'docs: run', digest: 'abc', log: quiet });
    assert.is(res.committed, true);
  } finally {
    process.env.PATH = path;
    delete process.env.GIT_DIR;
  }
  assert.ok(r.branches().includes(BRANCH));
  assert.equal(readdirSync(marks), [], 'programs a config named ran');
  // Ours: the calls of this process (git's own subprocesses run from its exec path, not PATH).
  const ours = rec.calls().filter((c) => c.args[0] === '--no-pager');
  assert.ok(ours.length >= 10, `${ours.length} calls of ours`);
  const header = `AUTHORIZATION: basic ${Buffer.from('x-access-token:OUR_TOKEN').toString('base64')}`;
  for (const c of ours) {
    const cmd = c.args.find((a, i) => i > 0 && !a.startsWith('-') && c.args[i - 1] !== '-c')!;
    const what = `${cmd}: ${c.args.join(' ')}`;
    assert.ok(c.args.includes(`--git-dir=${join(r.work, '.git')}`), what);
    assert.ok(c.args.includes(`--work-tree=${r.work}`), what);
    assert.is(c.env.GIT_CONFIG_NOSYSTEM, '1', what);
    assert.is(c.env.GIT_DIR, undefined, `${what}: an inherited GIT_DIR is dropped`);
    for (const pin of ['core.hooksPath=/dev/null', 'core.fsmonitor=false', 'core.sshCommand=ssh', 'credential.helper=', 'safe.directory=', `safe.directory=${r.work}`, 'protocol.ext.allow=never', 'commit.gpgSign=false']) {
      assert.ok(c.args.some((a, i) => a === pin && c.args[i - 1] === '-c'), `${what}: -c ${pin}`);
    }
    const carries = Object.values(c.env).includes(header);
    assert.is(carries, cmd === 'fetch' || cmd === 'push', `${what}: token ${carries ? 'given' : 'withheld'}`);
  }
  assert.ok(ours.some((c) => c.args.includes('push')) && ours.some((c) => c.args.includes('fetch')));
});

test('the checkout of a model dir is found above it: a .git in the model dir never counts; a .git file (worktree) does; the workspace itself may be the model dir', () => {
  const root = mkdtempSync(join(tmpdir(), 'nbg-find-'));
  const ws = join(root, 'ws');
  const model = join(ws, 'programming_examples/llms/m');
  mkdirSync(join(model, '.git'), { recursive: true });
  assert.is(modelCheckout(ws, model), null, 'only the model dir has a .git: no checkout');
  mkdirSync(join(ws, '.git'));
  assert.equal(modelCheckout(ws, model), { workTree: ws, gitDir: join(ws, '.git') });
  assert.equal(modelCheckout(ws, ws), { workTree: ws, gitDir: join(ws, '.git') });
  // actions/checkout with path: a checkout inside the workspace holds the model.
  const nested = join(ws, 'mlir-air');
  mkdirSync(join(nested, 'programming_examples/llms/m'), { recursive: true });
  mkdirSync(join(root, 'wt-gitdir'));
  writeFileSync(join(nested, '.git'), `gitdir: ${join(root, 'wt-gitdir')}\n`);
  assert.equal(modelCheckout(ws, join(nested, 'programming_examples/llms/m')), { workTree: nested, gitDir: join(root, 'wt-gitdir') });
  assert.equal(findCheckout(join(nested, 'programming_examples')), { workTree: nested, gitDir: join(root, 'wt-gitdir') });
  assert.throws(() => gitFor(join(root, 'nowhere'), null), /is not in a git checkout/);
});

test.run();
