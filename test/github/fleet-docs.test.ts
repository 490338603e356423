// The summary's docs PR on a real bare remote: one branch rebuilt on the base with a commit per
// model, a model recorded earlier carried over until merged (unless the base branch changed its
// documents since), the recorded documents restored before a run writes, and the change a fleet's
// affected step reads from the event.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gitFor } from '../../src/github/git.ts';
import { FLEET_DOCS_BRANCH, restoreFleetDocs, upsertFleetDocsPr } from '../../src/github/fleet-docs.ts';
import { eventChange } from '../../src/github/fleet-inputs.ts';
import type { GhContext } from '../../src/github/context.ts';
import { makeGitRemote, git } from '../helpers/git-remote.ts';

const L = 'programming_examples/llms';
const P2 = 'docs/development_progress/phase2_block.md';

function writeDoc(work: string, model: string, text: string): string[] {
  const files = [join(work, L, model, P2), join(work, L, model, 'TODO.md')];
  mkdirSync(dirname(files[0]), { recursive: true });
  writeFileSync(files[0], `# ${model}\n${text}\n`);
  writeFileSync(files[1], `# TODO ${model}\n${text}\n`);
  return files;
}

const quiet = () => {};

test('one commit per model on a branch rebuilt on the base; an earlier model carried over; the base wins where it changed a file', async () => {
  const r = makeGitRemote();
  const g = gitFor(r.work, null);
  const first = await upsertFleetDocsPr({
    git: g, api: null, remote: 'origin', base: 'main', title: 't', body: 'b', log: quiet,
    models: [
      { model: `${L}/tiny_llama`, files: writeDoc(r.work, 'tiny_llama', 'run 1'), commitMessage: 'docs(tiny_llama): run 1' },
      { model: `${L}/tiny_qwen3`, files: writeDoc(r.work, 'tiny_qwen3', 'run 1'), commitMessage: 'docs(tiny_qwen3): run 1' },
    ],
  });
  assert.is(first.pushed, true);
  assert.equal(first.commits.map((c) => c.model), [`${L}/tiny_llama`, `${L}/tiny_qwen3`]);
  assert.equal(r.log(FLEET_DOCS_BRANCH), ['docs(tiny_qwen3): run 1', 'docs(tiny_llama): run 1', ...r.log('main')]);
  // The docs are ignored by the model's .gitignore (as in mlir-air): added anyway, and said so.
  assert.ok(first.forced.includes(`${L}/tiny_llama/${P2}`), first.forced.join(', '));

  // Run 2 judges tiny_llama only: its recorded documents come back first, then it writes on top.
  rmSync(join(r.work, L, 'tiny_llama/docs'), { recursive: true });
  rmSync(join(r.work, L, 'tiny_qwen3/docs'), { recursive: true });
  const files = [join(r.work, L, 'tiny_llama', P2), join(r.work, L, 'tiny_llama', 'TODO.md')];
  const restored = await restoreFleetDocs(g, 'origin', 'main', files, quiet);
  assert.equal(restored, [`${L}/tiny_llama/${P2}`, `${L}/tiny_llama/TODO.md`]);
  assert.match(readFileSync(files[0], 'utf8'), 'run 1');
  writeFileSync(files[0], readFileSync(files[0], 'utf8') + 'run 2\n');
  const second = await upsertFleetDocsPr({ git: g, api: null, remote: 'origin', base: 'main', title: 't', body: 'b', log: quiet, models: [{ model: `${L}/tiny_llama`, files, commitMessage: 'docs(tiny_llama): run 2' }] });
  assert.equal(second.commits.map((c) => c.model), [`${L}/tiny_llama`, `${L}/tiny_qwen3`]);
  const log = r.log(FLEET_DOCS_BRANCH);
  assert.is(log[1], 'docs(tiny_llama): run 2');
  assert.match(log[0], /^docs\(tiny_qwen3\): keep the Phase 2 result recorded by an earlier run/);
  assert.match(r.show(FLEET_DOCS_BRANCH, `${L}/tiny_qwen3/${P2}`)!, 'run 1');
  assert.match(r.show(FLEET_DOCS_BRANCH, `${L}/tiny_llama/${P2}`)!, /run 1\nrun 2/);

  // Someone records tiny_qwen3 on main by hand: the fleet branch's older version is dropped (theirs wins).
  git(r.work, ['checkout', '--quiet', 'main']);
  writeDoc(r.work, 'tiny_qwen3', 'by hand on main');
  git(r.work, ['add', '-f', `${L}/tiny_qwen3`]);
  git(r.work, ['commit', '--quiet', '-m', 'record by hand']);
  git(r.work, ['push', '--quiet', 'origin', 'main']);
  const third = await upsertFleetDocsPr({ git: g, api: null, remote: 'origin', base: 'main', title: 't', body: 'b', log: quiet, models: [{ model: `${L}/tiny_llama`, files, commitMessage: 'docs(tiny_llama): run 3' }] });
  assert.equal(third.commits.map((c) => c.model), [`${L}/tiny_llama`]);
  assert.match(r.show(FLEET_DOCS_BRANCH, `${L}/tiny_qwen3/${P2}`)!, 'by hand on main');
  assert.equal(r.log(FLEET_DOCS_BRANCH).slice(1), r.log('main'));

  // Nothing new: the base already records every result.
  git(r.work, ['checkout', '--quiet', `origin/${FLEET_DOCS_BRANCH}`, '--', `${L}/tiny_llama`]);
  git(r.work, ['commit', '--quiet', '-m', 'merge the docs']);
  git(r.work, ['push', '--quiet', 'origin', 'main']);
  const none = await upsertFleetDocsPr({ git: g, api: null, remote: 'origin', base: 'main', title: 't', body: 'b', log: quiet, models: [{ model: `${L}/tiny_llama`, files: [join(r.work, L, 'tiny_llama', P2)], commitMessage: 'x' }] });
  assert.is(none.action, 'nothing');
  assert.equal(none.commits, []);
});

const ctx = (eventName: string, payload: unknown, sha = 'f'.repeat(40)) => ({ eventName, payload, sha } as unknown as GhContext);

test("affected's change from the event: a pull request's base and head, a push's before and after; none to compare says why", () => {
  const a = 'a'.repeat(40);
  const b = 'b'.repeat(40);
  assert.equal(eventChange(ctx('pull_request', { pull_request: { base: { sha: a }, head: { sha: b } } })), { base: a, head: b });
  assert.equal(eventChange(ctx('merge_group', { merge_group: { base_sha: a, head_sha: b } })), { base: a, head: b });
  assert.equal(eventChange(ctx('push', { before: a, after: b })), { base: a, head: b });
  assert.match((eventChange(ctx('push', { before: '0'.repeat(40), after: b })) as { none: string }).none, 'created the branch');
  assert.match((eventChange(ctx('schedule', {})) as { none: string }).none, 'every model is checked');
  // Whatever the payload says must look like a commit id: no option or range reaches git.
  assert.ok('none' in eventChange(ctx('push', { before: '--output=/tmp/x', after: b })));
});

test.run();
