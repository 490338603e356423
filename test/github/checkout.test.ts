// The Action warns when the checkout keeps the job's token (actions/checkout without
// persist-credentials: false), and carries a degraded isolation to the report job (split mode).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { persistedCredentials } from '../../src/github/checkout.ts';
import { writeMeta, verifyMeta } from '../../src/github/split.ts';
import type { GhContext } from '../../src/github/context.ts';
import type { TrustDecision } from '../../src/github/trust.ts';

function checkout(config: string, worktree = false): string {
  const root = mkdtempSync(join(tmpdir(), 'nbg-checkout-'));
  const ws = join(root, 'repo');
  mkdirSync(join(ws, 'programming_examples/llms/m'), { recursive: true });
  if (worktree) {
    mkdirSync(join(root, 'main/.git/worktrees/repo'), { recursive: true });
    writeFileSync(join(root, 'main/.git/config'), config);
    writeFileSync(join(root, 'main/.git/worktrees/repo/commondir'), '../..\n');
    writeFileSync(join(ws, '.git'), `gitdir: ${join(root, 'main/.git/worktrees/repo')}\n`);
  } else {
    mkdirSync(join(ws, '.git'));
    writeFileSync(join(ws, '.git/config'), config);
  }
  return ws;
}

test('persisted credentials: an extraheader, or an includeIf to a credentials file, in the checkout (or its worktree\'s common dir)', () => {
  const header = '[core]\n\tbare = false\n[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3M=\n';
  assert.match(persistedCredentials(join(checkout(header), 'programming_examples/llms/m')) ?? '', /\.git\/config$/);
  const include = '[core]\n\tbare = false\n[includeIf "gitdir:/home/runner/work/r/r/.git"]\n\tpath = /home/runner/work/_temp/git-credentials-1234.config\n';
  assert.ok(persistedCredentials(checkout(include)));
  assert.ok(persistedCredentials(checkout(header, true)), 'a worktree: the common dir\'s config');
  assert.is(persistedCredentials(checkout('[core]\n\tbare = false\n[remote "origin"]\n\turl = https://github.com/acme/x\n')), null);
});

test('github.json carries a degraded isolation to the report job, checked like the rest', () => {
  const run = mkdtempSync(join(tmpdir(), 'nbg-meta-'));
  const ctx = { owner: 'acme', repo: 'x', eventName: 'pull_request', sha: 'a'.repeat(40), pr: { number: 3 }, runId: 9, runAttempt: 1 } as unknown as GhContext;
  const trust = { judged: { headSha: 'b'.repeat(40) } } as unknown as TrustDecision;
  writeMeta(run, ctx, trust, 'm', { checkoutSha: null, error: null, isolation: { mode: 'uid', detail: 'uid p (sudo -n), without its sandbox', source: 'this run', degraded: 'the probe user runs without its sandbox' } });
  const meta = verifyMeta(run, { repository: 'acme/x', headSha: 'b'.repeat(40), modelKey: 'm' });
  assert.equal(meta.isolation, { mode: 'uid', detail: 'uid p (sudo -n), without its sandbox', degraded: 'the probe user runs without its sandbox' });
  writeFileSync(join(run, 'github.json'), JSON.stringify({ ...meta, isolation: { mode: 'uid', detail: 'x', degraded: 'y'.repeat(501) } }));
  assert.throws(() => verifyMeta(run, { repository: 'acme/x', headSha: 'b'.repeat(40), modelKey: 'm' }), /isolation must be/);
});

test.run();
