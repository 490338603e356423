// The trust rule is an allow-list (DESIGN.md "Trust"): push, schedule and workflow_dispatch on the
// repository itself, and in mode report a judged run that was one of those from the same repository.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { readContext } from '../../src/github/context.ts';
import { decideTrust, triggeringRun, runFromApi, type RunFacts } from '../../src/github/trust.ts';

const ws = mkdtempSync(join(tmpdir(), 'nbg-trust-'));
const repository = { full_name: 'acme/mlir-air', default_branch: 'main' };
const HEAD = 'a'.repeat(40);
const MERGE = 'e'.repeat(40);

function ctx(eventName: string, payload: Record<string, unknown> = {}, sha = 'f'.repeat(40), ref = 'refs/heads/main') {
  const p = join(ws, `${eventName}-${Math.random()}.json`);
  writeFileSync(p, JSON.stringify({ repository, ...payload }));
  return readContext({ GITHUB_EVENT_NAME: eventName, GITHUB_EVENT_PATH: p, GITHUB_REPOSITORY: 'acme/mlir-air', GITHUB_SHA: sha, GITHUB_REF: ref }, 't');
}
const pr = (head: string | null) => ({ pull_request: { number: 3, head: { sha: HEAD, repo: head ? { full_name: head } : null }, base: { ref: 'main', repo: repository } } });
const run = (event: string, head: string | null = 'acme/mlir-air', extra: Record<string, unknown> = {}) =>
  ({ workflow_run: { id: 77, head_sha: HEAD, head_branch: 'main', event, run_attempt: 2, conclusion: 'success', head_repository: head ? { full_name: head } : null, pull_requests: [], ...extra } });

test('mode full: only push, schedule and workflow_dispatch are trusted; everything else runs isolated', () => {
  for (const e of ['push', 'schedule', 'workflow_dispatch']) {
    const t = decideTrust(ctx(e), 'full', 'auto', null);
    assert.ok(t.trusted, e);
    assert.not.ok(t.untrustedCode, e);
    assert.ok(t.recordDocs, e);
  }
  for (const e of ['pull_request', 'pull_request_target', 'merge_group', 'issue_comment', 'workflow_run', 'repository_dispatch', 'check_suite', 'release', 'pull_request_review', '']) {
    const t = decideTrust(ctx(e, e.startsWith('pull_request') ? pr('acme/mlir-air') : {}), 'full', 'auto', null);
    assert.not.ok(t.trusted, e);
    assert.ok(t.untrustedCode, e);
    assert.not.ok(t.recordDocs, e);
    assert.match(t.reason, 'untrusted');
  }
});

test('mode full: an allow-listed event whose payload names another repository is untrusted and runs isolated', () => {
  for (const e of ['push', 'workflow_dispatch']) {
    const t = decideTrust(ctx(e, { repository: { full_name: 'mallory/mlir-air', default_branch: 'main' } }), 'full', 'auto', null);
    assert.not.ok(t.trusted, e);
    assert.ok(t.untrustedCode, e);
    assert.not.ok(t.recordDocs, e);
    assert.match(t.reason, 'from mallory/mlir-air');
  }
});

test('mode full on a pull request: the head commit is recorded and the merge commit named; docs: pr records same-repo PRs only', () => {
  const same = decideTrust(ctx('pull_request', pr('acme/mlir-air'), MERGE), 'full', 'pr', null);
  assert.is(same.judged.headSha, HEAD, 'the PR head, not GITHUB_SHA');
  assert.is(same.mergeSha, MERGE);
  assert.not.ok(same.trusted);
  assert.ok(same.untrustedCode, 'docs: pr records, but the code still runs isolated');
  assert.ok(same.recordDocs);
  const fork = decideTrust(ctx('pull_request', pr('mallory/mlir-air'), MERGE), 'full', 'pr', null);
  assert.not.ok(fork.recordDocs, 'never from a fork');
  const deleted = decideTrust(ctx('pull_request', pr(null)), 'full', 'pr', null);
  assert.not.ok(deleted.recordDocs, 'a deleted fork is a fork');
  assert.not.ok(decideTrust(ctx('pull_request_target', pr('acme/mlir-air')), 'full', 'pr', null).recordDocs, 'pull_request_target is not a pull_request');
});

test('mode report: trusted only for a workflow_run of push, schedule or dispatch from this repository', () => {
  for (const e of ['push', 'schedule', 'workflow_dispatch']) {
    const c = ctx('workflow_run', run(e));
    const t = decideTrust(c, 'report', 'auto', triggeringRun(c));
    assert.ok(t.trusted, e);
    assert.not.ok(t.untrustedCode, 'mode report runs no project code');
    assert.is(t.judged.headSha, HEAD);
    assert.is(t.judged.runAttempt, 2);
  }
  for (const e of ['pull_request', 'pull_request_target', 'issue_comment', 'merge_group', 'repository_dispatch', 'check_suite', 'workflow_run']) {
    const c = ctx('workflow_run', run(e));
    assert.not.ok(decideTrust(c, 'report', 'auto', triggeringRun(c)).trusted, e);
  }
  const fromFork = ctx('workflow_run', run('push', 'mallory/mlir-air'));
  assert.not.ok(decideTrust(fromFork, 'report', 'auto', triggeringRun(fromFork)).trusted, 'a push in a fork is the fork\'s');
  const unknown = ctx('workflow_run', run('push', null));
  assert.not.ok(decideTrust(unknown, 'report', 'auto', triggeringRun(unknown)).trusted);
  const samePr = ctx('workflow_run', run('pull_request'));
  assert.ok(decideTrust(samePr, 'report', 'pr', triggeringRun(samePr)).recordDocs, 'docs: pr, same-repository pull request');
  const forkPr = ctx('workflow_run', run('pull_request', 'mallory/mlir-air'));
  assert.not.ok(decideTrust(forkPr, 'report', 'pr', triggeringRun(forkPr)).recordDocs);
});

test('mode report with run-id: the looked-up run decides, whatever this job\'s own event', () => {
  const forkRun: RunFacts = runFromApi({ id: 9, event: 'pull_request', head_sha: HEAD, head_repository: { full_name: 'mallory/mlir-air' }, run_attempt: 1, pull_requests: [] });
  const t = decideTrust(ctx('workflow_dispatch'), 'report', 'auto', forkRun);
  assert.not.ok(t.trusted, "a dispatch does not lend its trust to a fork's run");
  assert.is(t.judged.headSha, HEAD, "the fork's head is what is recorded, never main's GITHUB_SHA");
  const pushRun = runFromApi({ id: 10, event: 'push', head_sha: HEAD, head_branch: 'main', head_repository: { full_name: 'acme/mlir-air' } });
  assert.ok(decideTrust(ctx('workflow_dispatch'), 'report', 'auto', pushRun).trusted);
  assert.not.ok(decideTrust(ctx('pull_request', pr('acme/mlir-air')), 'report', 'auto', pushRun).trusted, 'a pull request job never judges as trusted');
  assert.not.ok(decideTrust(ctx('workflow_dispatch'), 'report', 'auto', null).trusted, 'nothing to judge');
});

test('documents by branch: a trusted run on the default branch or a listed one records them; elsewhere it is judged, reported, and opens no docs PR', () => {
  for (const e of ['push', 'workflow_dispatch']) {
    const other = decideTrust(ctx(e, {}, 'f'.repeat(40), 'refs/heads/feature-x'), 'full', 'auto', null);
    assert.ok(other.trusted, `${e}: still trusted (its code runs as the repository's)`);
    assert.not.ok(other.recordDocs, `${e} on feature-x`);
    assert.match(other.reason, /documents are proposed only from main \(docs-branches lists more\): branch feature-x is judged and reported, no docs PR/);
    assert.ok(decideTrust(ctx(e, {}, 'f'.repeat(40), 'refs/heads/release/1.2'), 'full', 'auto', null, ['release/1.2']).recordDocs, `${e}: a listed branch`);
  }
  const tag = decideTrust(ctx('push', {}, 'f'.repeat(40), 'refs/tags/v1.0'), 'full', 'auto', null);
  assert.ok(tag.trusted);
  assert.not.ok(tag.recordDocs, 'a tag is no branch');
  // Mode report: the branch of the judged run.
  const c = ctx('workflow_run', run('push', 'acme/mlir-air', { head_branch: 'feature-x' }));
  const r = decideTrust(c, 'report', 'auto', triggeringRun(c));
  assert.ok(r.trusted);
  assert.not.ok(r.recordDocs);
  assert.ok(decideTrust(c, 'report', 'auto', triggeringRun(c), ['feature-x']).recordDocs);
  const looked = runFromApi({ id: 10, event: 'push', head_sha: HEAD, head_branch: 'dev', head_repository: { full_name: 'acme/mlir-air' } });
  assert.is(looked.branch, 'dev');
  assert.not.ok(decideTrust(ctx('workflow_dispatch'), 'report', 'auto', looked).recordDocs);
});

test.run();
