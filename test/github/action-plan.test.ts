// The Action's plan per model: what the trust decision lets the probe do (isolation, cache writes,
// documents) and which commit it records.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { parseInputs } from '../../src/github/inputs.ts';
import { readContext, WriteGate } from '../../src/github/context.ts';
import { decideTrust } from '../../src/github/trust.ts';
import { planFor, keyOf, type Session } from '../../src/github/action-plan.ts';
import type { GitHubApi } from '../../src/github/api.ts';
import { check } from '../../src/check/index.ts';
import { silentLog } from '../../src/log.ts';
import { fixture } from '../helpers/rundir.ts';

const ws = mkdtempSync(join(tmpdir(), 'nbg-session-'));
mkdirSync(join(ws, 'llms/m'), { recursive: true });
const HEAD = 'a'.repeat(40);

function session(eventName: string, payload: Record<string, unknown>, inputs: Record<string, string> = {}): Session {
  const p = join(ws, `${Math.random()}.json`);
  writeFileSync(p, JSON.stringify({ repository: { full_name: 'acme/mlir-air', default_branch: 'main' }, ...payload }));
  const env = { GITHUB_EVENT_NAME: eventName, GITHUB_EVENT_PATH: p, GITHUB_REPOSITORY: 'acme/mlir-air', GITHUB_SHA: 'f'.repeat(40), GITHUB_REF: 'refs/heads/main', GITHUB_WORKSPACE: ws, GITHUB_RUN_ID: '9' };
  const i = parseInputs((n) => ({ 'model-dir': 'llms/m', 'github-token': 't', ...inputs })[n] ?? '', env);
  const ctx = readContext(env, 't');
  return { inputs: i, ctx, trust: decideTrust(ctx, i.mode, i.docs, null), writes: new WriteGate(ctx.readOnlyReason, () => {}), api: {} as GitHubApi, store: null, workspace: ws };
}
const pr = { pull_request: { number: 3, head: { sha: HEAD, repo: { full_name: 'acme/mlir-air' } }, base: { ref: 'main', repo: { full_name: 'acme/mlir-air' } } } };

test('a pull request: isolated as untrusted, no cache writes, no documents, the PR head recorded', () => {
  const s = session('pull_request', pr, { isolation: 'uid', 'probe-user': 'npu-probe' });
  const plan = planFor(s, join(ws, 'llms/m'), keyOf(s, join(ws, 'llms/m')));
  assert.equal(plan.isolation, { mode: 'uid', untrusted: true, allowUnisolated: false, user: 'npu-probe' });
  assert.is(plan.cacheWrite, false);
  assert.is(plan.writeDocs, false);
  assert.is(plan.commit, HEAD);
});

test('positions reaches the plan; the Action has no emulate or inject (tests only)', () => {
  const s = session('push', {}, { positions: '2048' });
  const plan = planFor(s, join(ws, 'llms/m'), 'llms/m');
  assert.is(plan.positions, 2048);
  assert.is(plan.emulate, undefined);
  assert.is(plan.inject, undefined);
  assert.is(planFor(session('push', {}), join(ws, 'llms/m'), 'llms/m').positions, null);
});

test('a push: trusted, caches written, documents recorded; allow-unisolated passed through as asked', () => {
  const s = session('push', {}, { 'allow-unisolated': 'true' });
  const plan = planFor(s, join(ws, 'llms/m'), 'llms/m');
  assert.equal(plan.isolation, { mode: 'auto', untrusted: false, allowUnisolated: true, user: null });
  assert.is(plan.cacheWrite, true);
  assert.is(plan.writeDocs, true);
  assert.is(plan.commit, 'f'.repeat(40));
});

test('docs: pr records a same-repository PR, but its code stays untrusted and its caches unwritten', () => {
  const s = session('pull_request', pr, { docs: 'pr' });
  const plan = planFor(s, join(ws, 'llms/m'), 'llms/m');
  assert.is(plan.writeDocs, true);
  assert.is(plan.isolation?.untrusted, true);
  assert.is(plan.cacheWrite, false);
});

test('mode report never writes caches and records into the checkout only when the model dir is there', () => {
  const s = session('workflow_run', { workflow_run: { id: 1, head_sha: HEAD, event: 'push', head_repository: { full_name: 'acme/mlir-air' } } }, { mode: 'report' });
  s.trust = decideTrust(s.ctx, 'report', 'auto', { event: 'push', headRepo: 'acme/mlir-air', headSha: HEAD, runId: 1, runAttempt: 1, conclusion: 'success', pullRequests: [], source: 'workflow_run event', branch: 'main' });
  assert.is(planFor(s, join(ws, 'llms/m'), 'llms/m').cacheWrite, false);
  assert.is(planFor(s, join(ws, 'llms/m'), 'llms/m').writeDocs, true);
  assert.is(planFor(s, join(ws, 'llms/gone'), 'llms/gone').writeDocs, false);
  assert.is(planFor(s, join(ws, 'llms/m'), 'llms/m').commit, HEAD);
});

test('the probe-env input reaches the plan; documents in the Action never go through a link', () => {
  const s = session('push', { ref: 'refs/heads/main' }, { 'probe-env': 'TEMPORAL_CAUSAL_SKIP' });
  const plan = planFor(s, join(ws, 'llms/m'), keyOf(s, join(ws, 'llms/m')));
  assert.equal(plan.probeEnvNames, ['TEMPORAL_CAUSAL_SKIP']);
  assert.is(plan.confineDocs, true);
});

test('issue 26.3: the break-lock input reaches the plan (--break-lock); off by default', () => {
  assert.is(planFor(session('push', {}, { 'break-lock': 'true' }), join(ws, 'llms/m'), 'llms/m').breakLock, true);
  assert.is(planFor(session('push', {}), join(ws, 'llms/m'), 'llms/m').breakLock, undefined);
});

test('issue 26.6: a trusted push without a github-token: G4 says the token is missing, not "turned off, or a pull request"', async () => {
  const f = fixture();
  const p = join(ws, `${Math.random()}.json`);
  writeFileSync(p, JSON.stringify({ repository: { full_name: 'acme/mlir-air', default_branch: 'main' } }));
  const env = { GITHUB_EVENT_NAME: 'push', GITHUB_EVENT_PATH: p, GITHUB_REPOSITORY: 'acme/mlir-air', GITHUB_SHA: 'f'.repeat(40), GITHUB_REF: 'refs/heads/main', GITHUB_WORKSPACE: ws, GITHUB_RUN_ID: '9' };
  const i = parseInputs((n) => ({ 'model-dir': 'llms/m' })[n] ?? '', env);
  const ctx = readContext(env, '');
  const s: Session = { inputs: i, ctx, trust: decideTrust(ctx, i.mode, i.docs, null), writes: new WriteGate(ctx.readOnlyReason, () => {}), api: null, store: null, workspace: ws };
  assert.is(s.trust.trusted, true, 'a push on the default branch is trusted: only the token is missing');
  const plan = planFor(s, f.modelDir, 'tiny_m');
  assert.is(plan.writeDocs, false);
  const r = await check({ ...plan, mode: 'report', runDir: f.runDir, isolation: undefined }, { log: silentLog });
  const g4 = r.report.gates.find((g) => g.id === 'G4')!;
  assert.is(g4.status, 'skip');
  assert.match(g4.detail, /no github-token was given/);
  assert.not.match(g4.detail, /turned off|pull request\)/);
});

test.run();
