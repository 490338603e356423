import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { hintFor, NAN_HINT, TAIL_HINT } from '../src/bisect/hints.ts';
import { readBisectJson, situationOf } from '../src/bisect/judge.ts';
import { fakeMetrics } from './helpers/report.ts';

test('each kind of boundary gets the seed failure-mode hint for it', () => {
  const b = (s: string, k = '') => hintFor(s, k)?.boundary;
  assert.is(b('q_proj'), 'Q/K/V GEMM');
  assert.is(b('v_proj'), 'Q/K/V GEMM');
  assert.is(b('attn_norm'), 'RMSNorm');
  assert.is(b('ffn_norm'), 'RMSNorm');
  assert.is(b('qk_norm'), 'Q/K norm');
  assert.is(b('qkv_bias'), 'residual add / bias');
  assert.is(b('attention'), 'FlashAttention');
  assert.is(b('rope'), 'RoPE');
  assert.is(b('down_proj'), 'Down GEMM');
  assert.is(b('residual2'), 'residual add / bias');
  assert.is(b('swiglu'), 'O / FFN GEMM');
  assert.is(b('mystery', 'flash_attn'), 'FlashAttention');
  assert.is(hintFor('mystery'), null);
});

test('the failure shape: NaN, or one bad run at the tail under a passing whole cosine', () => {
  assert.is(situationOf(fakeMetrics({ nan: 2 })), NAN_HINT);
  const m = fakeMetrics({ cosines: [0.999, 0.999, 0.5] });
  m.perPosition.badRuns = [{ start: 2, end: 2, length: 1 }];
  assert.is(situationOf(m), TAIL_HINT);
  assert.is(situationOf(fakeMetrics()), null);
});

test('bisect.json is validated as untrusted input', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-bisect-'));
  assert.is(readBisectJson(dir), null);
  mkdirSync(join(dir, 'bisect'));
  const write = (o: unknown) => writeFileSync(join(dir, 'bisect/bisect.json'), JSON.stringify(o));
  write({ schema: 'npu-block-gate/bisect', schema_version: 2, available: true, steps: [] });
  assert.throws(() => readBisectJson(dir), /bisect\.json: schema_version 2/);
  write({ schema: 'npu-block-gate/bisect', schema_version: 1, available: true, steps: [{ step: 'x', file: '../../etc/passwd' }] });
  assert.throws(() => readBisectJson(dir), /inside the run dir/);
  write({ schema: 'npu-block-gate/bisect', schema_version: 1, available: false, reason: 'no hook', hook: null, steps: [] });
  assert.is(readBisectJson(dir)!.reason, 'no hook');
});

test.run();
