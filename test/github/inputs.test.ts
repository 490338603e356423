import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { parseInputs, envInputs, legOf } from '../../src/github/inputs.ts';
import { readContext, WriteGate } from '../../src/github/context.ts';
import { InputError } from '../../src/errors.ts';
import { parseFleetInputs } from '../../src/github/fleet-inputs.ts';
import { writeFileSync } from 'node:fs';

const ws = mkdtempSync(join(tmpdir(), 'nbg-inputs-'));
mkdirSync(join(ws, 'llms/a'), { recursive: true });
mkdirSync(join(ws, 'llms/b'), { recursive: true });
const env = { GITHUB_WORKSPACE: ws };
const from = (o: Record<string, string>) => (name: string) => o[name] ?? '';

test('defaults: one model dir, full mode, comment on, docs auto', () => {
  const i = parseInputs(from({ 'model-dir': 'llms/a', 'github-token': 't' }), env);
  assert.equal(i.modelDirs, [join(ws, 'llms/a')]);
  assert.is(i.mode, 'full');
  assert.is(i.promptStyle, null); // the prompt make diagnosis uses
  assert.is(i.comment, true);
  assert.is(i.layers, false);
  assert.is(i.docs, 'auto');
  assert.is(i.threshold, null);
  assert.is(i.retentionDays, null);
  assert.is(i.artifactName, 'npu-block-gate');
  assert.is(i.timeoutSec, null);
  assert.is(i.positions, null);
});

test('positions: a whole number of tokens, range-checked like the CLI\'s --positions', () => {
  assert.is(parseInputs(from({ 'model-dir': 'llms/a', positions: '2048' }), env).positions, 2048);
  for (const bad of ['0', '-1', '1e3', '0x800', '12.5', 'many', '1048577']) {
    assert.throws(() => parseInputs(from({ 'model-dir': 'llms/a', positions: bad }), env), (e: Error) => e instanceof InputError && e.message.includes(`input 'positions': expected a whole number of tokens from 1 to 1048576`) && e.message.includes(JSON.stringify(bad)), bad);
  }
});

test('several model dirs by line or comma, duplicates dropped, values typed', () => {
  const i = parseInputs(
    from({ 'model-dir': 'llms/a\nllms/b, llms/a\n', threshold: '0.985', 'retention-days': '7', timeout: '30m', comment: 'false', docs: 'NONE', 'prompt-style': 'base', cache: 'no', layers: 'true' }),
    env,
  );
  assert.equal(i.modelDirs, [join(ws, 'llms/a'), join(ws, 'llms/b')]);
  assert.is(i.threshold, 0.985);
  assert.is(i.retentionDays, 7);
  assert.is(i.timeoutSec, 1800);
  assert.is(i.comment, false);
  assert.is(i.docs, 'none');
  assert.is(i.promptStyle, 'base');
  assert.is(i.cache, false);
  assert.is(i.layers, true);
});

test('every bad input is named in one error', () => {
  try {
    parseInputs(
      from({ 'model-dir': 'llms/missing', mode: 'fast', threshold: '0', 'retention-days': '365', timeout: 'soon', comment: 'maybe', 'artifact-name': 'a/b', 'run-id': '12' }),
      env,
    );
    assert.unreachable();
  } catch (e) {
    assert.instance(e, InputError);
    const m = (e as Error).message;
    for (const bit of [
      `input 'mode': expected one of full, probe, report, affected, summary; got "fast"`,
      `input 'model-dir': no such directory; got "llms/missing"`,
      `input 'threshold': expected a cosine in (0, 1]; got "0"`,
      `input 'retention-days'`,
      `input 'timeout'`,
      `input 'comment': expected true or false; got "maybe"`,
      `input 'artifact-name'`,
      `input 'run-id': only used with mode 'report'`,
    ])
      assert.ok(m.includes(bit), `${bit}\n in: ${m}`);
    assert.not.match(m, '\n');
  }
});

test('model-dir is required; in report mode it need not exist on this runner', () => {
  assert.throws(() => parseInputs(from({}), env), /input 'model-dir': required/);
  const i = parseInputs(from({ 'model-dir': 'llms/not-here', mode: 'report', 'run-id': '99' }), env);
  assert.is(i.runId, 99);
});

test('isolation inputs: auto by default, unisolated only when asked; probe-user and comment-author validated', () => {
  const d = parseInputs(from({ 'model-dir': 'llms/a' }), env);
  assert.is(d.isolation, 'auto');
  assert.is(d.allowUnisolated, false);
  assert.is(d.probeUser, null);
  assert.is(d.commentAuthor, null);
  assert.is(d.matrixLeg, null);
  const i = parseInputs(from({ 'model-dir': 'llms/a', isolation: 'namespace', 'allow-unisolated': 'true', 'probe-user': 'npu-probe', 'comment-author': 'npu-gate[bot]' }), env);
  assert.is(i.isolation, 'namespace');
  assert.is(i.allowUnisolated, true);
  assert.is(i.probeUser, 'npu-probe');
  assert.is(i.commentAuthor, 'npu-gate[bot]');
  assert.throws(
    () => parseInputs(from({ 'model-dir': 'llms/a', isolation: 'chroot', 'probe-user': 'root; rm -rf /', 'comment-author': '<img>' }), env),
    (e: Error) => /input 'isolation'/.test(e.message) && /input 'probe-user'/.test(e.message) && /input 'comment-author'/.test(e.message),
  );
});

test('matrix leg: none outside a matrix, a stable hash of the matrix (key order does not matter) inside one', () => {
  assert.is(legOf(''), null);
  assert.is(legOf('null'), null);
  assert.is(legOf('{}'), null);
  const a = legOf('{\n  "model": "tiny",\n  "prompt": "base"\n}');
  assert.match(a ?? '', /^leg-[0-9a-f]{8}$/);
  assert.is(legOf('{"prompt":"base","model":"tiny"}'), a);
  assert.is.not(legOf('{"prompt":"instruct","model":"tiny"}'), a);
  assert.is(parseInputs(from({ 'model-dir': 'llms/a', matrix: '{"prompt":"base","model":"tiny"}' }), env).matrixLeg, a);
});

test('envInputs reads INPUT_ variables the way @actions/core does', () => {
  const get = envInputs({ 'INPUT_MODEL-DIR': ' llms/a ', INPUT_PROMPT: 'hi' });
  assert.is(get('model-dir'), 'llms/a');
  assert.is(get('prompt'), 'hi');
  assert.is(get('python'), '');
});

function ctxFor(eventName: string, payload: unknown, token = 't', extra: Record<string, string> = {}) {
  const p = join(ws, `${eventName}-${Math.random()}.json`);
  writeFileSync(p, JSON.stringify(payload));
  return readContext({ GITHUB_EVENT_NAME: eventName, GITHUB_EVENT_PATH: p, GITHUB_REPOSITORY: 'acme/mlir-air', ...extra }, token);
}

test('context: fork PRs and missing tokens are read-only', () => {
  const pr = (head: string | null) => ({ pull_request: { number: 3, head: { sha: 'a'.repeat(40), repo: head ? { full_name: head } : null }, base: { ref: 'main', repo: { full_name: 'acme/mlir-air' } } } });
  assert.is(ctxFor('pull_request', pr('acme/mlir-air')).readOnlyReason, null);
  assert.match(ctxFor('pull_request', pr('mallory/mlir-air')).readOnlyReason ?? '', 'fork');
  assert.match(ctxFor('pull_request', pr(null)).readOnlyReason ?? '', 'fork', 'a deleted fork is still a fork');
  assert.match(ctxFor('push', {}, '').readOnlyReason ?? '', 'no github-token');
  assert.match(ctxFor('pull_request', pr('acme/mlir-air'), 't', { GITHUB_ACTOR: 'dependabot[bot]' }).readOnlyReason ?? '', 'Dependabot');
  // Trust itself is decided in trust.ts (test/github/trust.test.ts).
});

test('WriteGate says it once', () => {
  const said: string[] = [];
  const g = new WriteGate(null, (m) => said.push(m));
  assert.ok(g.allowed);
  g.tell();
  assert.is(said.length, 0);
  g.deny('read-only');
  g.deny('again');
  g.tell();
  assert.not.ok(g.allowed);
  assert.is(said.length, 1);
  assert.match(said[0], 'read-only');
});

test("the fleet's modes take no model dir; their own inputs are validated together", () => {
  for (const mode of ['affected', 'summary']) assert.is(parseInputs(from({ mode }), env).modelDirs.length, 0);
  assert.is(parseInputs(from({ mode: 'summary', 'run-id': '42' }), env).runId, 42);
  const f = parseFleetInputs(from({ runners: 'npu-phoenix, npu-strix\nnpu-strix', legs: '{"model": ["a"], "runner": ["p", "s"]}', tree: 'sub' }), ws);
  assert.equal(f.runners, ['npu-phoenix', 'npu-strix']);
  assert.equal(f.legs, [{ model: 'a', runner: 'p' }, { model: 'a', runner: 's' }]);
  assert.is(f.tree, join(ws, 'sub'));
  assert.is(parseFleetInputs(from({}), ws).legs, null);
  assert.equal(parseFleetInputs(from({ 'changed-files': 'a.py\n# note\n\nb/c.md' }), ws).changedFiles, ['a.py', 'b/c.md']);
  assert.throws(
    () => parseFleetInputs(from({ legs: '{not json', runners: 'ok,bad label', base: '--upload-pack=x', 'changed-files': 'a.py', head: 'main' }), ws),
    (e: Error) => e instanceof InputError && [/input 'legs': not JSON/, /input 'runners': runner label "bad label"/, /input 'base': not a commit or branch name/].every((re) => re.test(e.message)) && !e.message.includes('\n'),
  );
  assert.throws(() => parseFleetInputs(from({ base: 'main', 'changed-files': 'a.py' }), ws), /exclude each other/);
});

test.run();
