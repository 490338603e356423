// The git wrapper: named steps, and our token (not the checkout's) on every push.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Git, urlBase } from '../../src/github/git.ts';
import { docsBranch } from '../../src/github/docs-pr.ts';
import { git } from '../helpers/git-remote.ts';

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
    const g = new Git(dir);
    g.useToken('OUR_TOKEN');
    await g.pushWithLease('origin', 'HEAD', 'x', null).then(() => assert.unreachable(), () => undefined);
    assert.ok(seen.length >= 1, 'git reached the server');
    for (const h of seen) assert.is(h, basic('OUR_TOKEN'));
    // Without our token the checkout's header would have gone: the test would notice.
    seen.length = 0;
    await new Git(dir).pushWithLease('origin', 'HEAD', 'x', null).catch(() => undefined);
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
  const g = new Git(dir);
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

test('docs branch: from the repository-relative path, so same-named models in two dirs never share one', () => {
  assert.is(docsBranch('programming_examples/llms/tiny_llama'), 'npu-block-gate/phase2/programming_examples/llms/tiny_llama');
  assert.is.not(docsBranch('a/llms/m'), docsBranch('b/llms/m'));
  for (const k of ['x/.hidden/m.lock', 'a b/c..d/', '../..//x.', '-x/y']) {
    const b = docsBranch(k);
    assert.ok(!/(^|\/)\.|\.\.|\.lock(\/|$)|\/$|\.$|[ ~^:?*[\\]|\/-/.test(b.slice('npu-block-gate/phase2/'.length)), `${k} -> ${b}`);
    git(mkdtempSync(join(tmpdir(), 'nbg-ref-')), ['check-ref-format', '--branch', b]);
  }
});

test.run();
