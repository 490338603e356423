import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { truncateBody, marker, markerKey, digestOf, resultDigest, upsertComment, GITHUB_BODY_LIMIT, COMMENT_BUDGET } from '../../src/github/comment.ts';
import { makeOctokit } from '../../src/github/octokit.ts';
import { GitHubApi } from '../../src/github/api.ts';
import { FakeGitHub } from '../helpers/github-server.ts';
import { fakeReport } from '../helpers/report.ts';

test('a body under the budget is left alone', () => {
  assert.is(truncateBody('short', 100, null), 'short');
});

test('a body over the limit is cut at a line, closes what it opened, and links the artifact', () => {
  const rows = Array.from({ length: 4000 }, (_, i) => `| ${i} | ${'x'.repeat(20)} |`).join('\n');
  const body = `## Report\n\n<details><summary>rows</summary>\n\n\`\`\`text\n${rows}\n${rows}\n\`\`\`\n\n</details>\n`;
  assert.ok(body.length > GITHUB_BODY_LIMIT);
  const cut = truncateBody(body, COMMENT_BUDGET, 'https://github.example/acme/mlir-air/actions/runs/1/artifacts/9');
  assert.ok(cut.length <= COMMENT_BUDGET, String(cut.length));
  assert.match(cut, 'This comment was cut');
  assert.match(cut, '(https://github.example/acme/mlir-air/actions/runs/1/artifacts/9)');
  const fences = cut.split('\n').filter((l) => l.startsWith('```')).length;
  assert.is(fences % 2, 0, 'code fence closed');
  assert.is((cut.match(/<details/g) ?? []).length, (cut.match(/<\/details>/g) ?? []).length, 'details closed');
});

test('marker: per model, digest readable, look-alike keys do not match', () => {
  const m = marker('llms/tiny_llama', 'ab'.repeat(16));
  assert.is(digestOf(m), 'ab'.repeat(16));
  assert.ok(m.startsWith(markerKey('llms/tiny_llama') + ' '));
  assert.not.ok(m.startsWith(markerKey('llms/tiny') + ' '));
  assert.not.match(marker('a-->b'), 'a-->b', 'a model key cannot close the comment');
});

test('resultDigest ignores the clock, timings and the run dir, but not the numbers', () => {
  const a = fakeReport();
  const b = { ...fakeReport(), created_at: '2030-01-01T00:00:00Z', timings: { probe: 99 }, run_dir: '/elsewhere' };
  assert.is(resultDigest(a), resultDigest(b));
  const c = fakeReport();
  c.metrics!.wholeCosine = 0.5;
  assert.is.not(resultDigest(a), resultDigest(c));
  // A reference-cache hit on the second run is the same result.
  const hit = fakeReport();
  hit.reference = { ...hit.reference!, cache: { key: 'k', hit: true, dir: '/c/k' } };
  const miss = fakeReport();
  miss.reference = { ...miss.reference!, cache: { key: 'k', hit: false, dir: '/c/k' } };
  assert.is(resultDigest(hit), resultDigest(miss));
  const layered = fakeReport();
  layered.layers = [{ layer: 1, rows: 4, cols: 8, wholeCosine: 0.5, perPositionMin: 0.1, p5: 0.1, median: 0.5, maxAbs: 1, maxRel: 1, sqnrDb: 3, normRatio: 1, nonFinite: 0 }];
  assert.is.not(resultDigest(a), resultDigest(layered));
});

test('an over-limit comment is cut and accepted; one too long is refused before sending', async () => {
  const gh = await new FakeGitHub({ checkResponses: true }).start();
  try {
    const octokit = new GitHubApi(makeOctokit({ token: 'ghs_writer', baseUrl: gh.url, log: { debug() {}, info() {}, warning() {} }, env: {} }), 'acme', 'mlir-air');
    const head = marker('m', 'c'.repeat(32)) + '\n';
    const huge = 'line of the report\n'.repeat(10_000);
    const body = head + truncateBody(huge, COMMENT_BUDGET - head.length, 'https://a.example/artifact');
    const r = await upsertComment(octokit, 3, 'm', body, 'github-actions[bot]');
    assert.is(r.action, 'created');
    assert.ok(gh.commentsOn(3)[0].body.length < GITHUB_BODY_LIMIT);
    assert.match(gh.commentsOn(3)[0].body, 'This comment was cut');
    await upsertComment(octokit, 3, 'm', head + huge, 'github-actions[bot]').then(
      () => assert.unreachable(),
      (e) => assert.match(String(e), 'limit is 65536'),
    );
    assert.equal(gh.problems, []);
  } finally {
    await gh.stop();
  }
});

test('an existing duplicate pair is folded: the oldest is updated, nothing new is created', async () => {
  const gh = await new FakeGitHub().start();
  try {
    const octokit = new GitHubApi(makeOctokit({ token: 'ghs_writer', baseUrl: gh.url, log: { debug() {}, info() {}, warning() {} }, env: {} }), 'acme', 'mlir-air');
    const old = gh.addComment(4, `${marker('m', 'd'.repeat(32))}\nold`, 'github-actions[bot]', 'Bot');
    gh.addComment(4, `${marker('m', 'e'.repeat(32))}\nrace`, 'github-actions[bot]', 'Bot');
    const r = await upsertComment(octokit, 4, 'm', `${marker('m', 'f'.repeat(32))}\nnew`, 'github-actions[bot]');
    assert.is(r.action, 'updated');
    assert.is(r.id, old.id);
    assert.equal(gh.problems, []);
  } finally {
    await gh.stop();
  }
});

test.run();
