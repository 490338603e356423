import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { hintFor, NAN_HINT, TAIL_HINT } from '../src/seed/hints.ts';
import { judgeBisect, ranBy, situationOf } from '../src/bisect/judge.ts';
import { thresholdsFor } from '../src/judge/measure.ts';
import type { ProbeJson } from '../src/rundir/schema.ts';
import { readBisectJson } from '../src/rundir/bisect-spec.ts';
import { fakeMetrics } from './helpers/report.ts';
import { fixture, npyOf, refValues } from './helpers/rundir.ts';
import { copyFileSync, readFileSync, symlinkSync } from 'node:fs';
import { hintForStep } from '../src/seed/hints.ts';

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
  const th = { whole: 0.99, perPosition: 0.99, headDim: 64, overridden: false };
  assert.is(situationOf(fakeMetrics({ nan: 2 }), th), NAN_HINT);
  const m = fakeMetrics({ cosines: [0.999, 0.999, 0.5] });
  m.perPosition.badRuns = [{ start: 2, end: 2, length: 1 }];
  assert.is(situationOf(m, th), TAIL_HINT);
  assert.is(situationOf(fakeMetrics(), th), null);
});

test('the tail hint holds G1 by the gates\' own rule: a whole cosine at the seed\'s 0.99 passes, one ulp under does not', () => {
  const f64 = new Float64Array([0.99]);
  new BigInt64Array(f64.buffer)[0] -= 1n;
  const under = f64[0];
  // the judge's thresholds for this head_dim (and an override moves G2 only, never G1's 0.99)
  for (const th of [thresholdsFor({ model: { config: { head_dim: 64 } } } as unknown as ProbeJson, null), thresholdsFor({ model: { config: { head_dim: 128 } } } as unknown as ProbeJson, 0.9)]) {
    const tail = (whole: number) => {
      const m = fakeMetrics({ cosines: [0.999, 0.999, 0.5], whole });
      m.perPosition.badRuns = [{ start: 2, end: 2, length: 1 }];
      return situationOf(m, th);
    };
    assert.is(tail(0.99), TAIL_HINT);
    assert.is(tail(under), null);
  }
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

test('the seed step of a lens boundary or a launch buffer gets its hint', () => {
  assert.is(hintForStep('RMSNorm', 'normed')?.boundary, 'RMSNorm');
  assert.is(hintForStep('Q/K/V GEMM', 'q_b')?.boundary, 'Q/K/V GEMM');
  assert.is(hintForStep('Q/K norm', 'q_norm')?.boundary, 'Q/K norm');
  assert.is(hintForStep('RoPE', 'q_roped')?.boundary, 'RoPE');
  assert.is(hintForStep('FlashAttention', 'out')?.boundary, 'FlashAttention');
  assert.is(hintForStep('residual add', 'out')?.boundary, 'residual add / bias');
  assert.is(hintForStep('Down GEMM', 'down')?.boundary, 'Down GEMM');
  assert.is(hintForStep('SwiGLU', 'swiglu')?.boundary, 'O / FFN GEMM');
  assert.is(hintForStep(null, 'mystery', 'flash_attn')?.boundary, 'FlashAttention');
});

const TH = { whole: 0.99, perPosition: 0.99, headDim: 64, overridden: false };
/** The block's tensors a bisect is judged against. */
const P = (dir: string) => ({ ref: join(dir, 'block0.ref.npy'), npu: join(dir, 'block0.npu.npy') });
const T = (file: string) => ({ file, dtype: 'f32', shape: [5, 16] });

/** A run dir with a twins bisect.json: launch 1's buffer `q` off its twin (or `drift` only a little). */
function twinsRunDir(edit: (b: Record<string, any>, dir: string) => void = () => {}, drift = false) {
  const f = fixture();
  const dir = f.runDir;
  mkdirSync(join(dir, 'bisect'));
  const ref = refValues();
  const off = ref.map((row, i) => row.map((v, j) => (drift ? v + 0.04 * Math.sin(i + 3 * j) : (j % 2 ? -v : v))));
  for (const [name, rows] of [['same', ref], ['off', off]] as const) writeFileSync(join(dir, `bisect/${name}.npy`), npyOf(rows));
  copyFileSync(join(dir, 'block0.npu.npy'), join(dir, 'bisect/01-swap-front.npy'));
  const b: Record<string, any> = {
    schema: 'npu-block-gate/bisect', schema_version: 1, available: true, reason: 'twins', hook: null, method: 'twins', emulated: true,
    steps: [{ index: 1, step: 'front', kernel: 'front', cpu_equivalent: 'probe twin front', swapped: ['front'], file: 'bisect/01-swap-front.npy', seconds: 0.1 }],
    launches: [
      { index: 1, launch: 'front', occurrence: 0, kind: 'rms_gemms_rope', layout: 'seq-first', twin: 'probe twin', buffers: [
        { buffer: 'normed', arg: 2, boundary: 'attn_norm', stage: 'RMSNorm', step: 'RMSNorm', rows: [0, 5], npu: T('bisect/same.npy'), twin: T('bisect/same.npy') },
        { buffer: 'q', arg: 4, boundary: 'q', stage: 'Q GEMM', step: 'Q/K/V GEMM', rows: [0, 5], npu: T('bisect/off.npy'), twin: T('bisect/same.npy') },
      ] },
      { index: 2, launch: 'tail', occurrence: 0, kind: 'o_ffn', buffers: [
        { buffer: 'out', boundary: 'ffn_out', stage: 'residual add', step: 'residual add', npu: T('bisect/off.npy'), twin: T('bisect/same.npy') },
      ] },
    ],
  };
  edit(b, dir);
  writeFileSync(join(dir, 'bisect/bisect.json'), JSON.stringify(b));
  return dir;
}

test('a twins bisect: the first launch off its twin and its first buffer, the swap table as steps', async () => {
  const dir = twinsRunDir();
  const r = (await judgeBisect(dir, P(dir), 5, TH, fakeMetrics()))!;
  assert.is(r.method, 'twins');
  assert.is(r.emulated, true);
  assert.equal(r.launches!.map((l) => l.buffers.map((b) => b.diverges)), [[false, true], [true]]);
  assert.equal([r.launchOffender!.launch, r.launchOffender!.buffer, r.launchOffender!.strength, r.launchOffender!.hint?.boundary], ['front', 'q', 'diverges', 'Q/K/V GEMM']);
  assert.equal(r.steps.map((s) => [s.step, s.swapped, s.fixes]), [['front', ['front'], true]]);
  assert.is(r.offender!.step, 'front');
  // The block already passes (the lens asked for the bisect): no swap is "the fix".
  const passing = (await judgeBisect(dir, P(dir), 5, TH, fakeMetrics(), true))!;
  assert.is(passing.offender, null);
  assert.match(passing.reason, /passes the gates as it is/);
  // Nothing under the threshold: the first buffer under the clean bar is where it drifts.
  const d = twinsRunDir(() => {}, true);
  const drift = (await judgeBisect(d, P(d), 5, TH, fakeMetrics()))!;
  assert.equal([drift.launchOffender!.buffer, drift.launchOffender!.strength], ['q', 'drifts']);
});

test('the launch bisect names where the drift starts, then where it first crosses the threshold', async () => {
  // An ignored FFN-norm weight: the FFN RMSNorm drifts (under the clean bar, over the threshold),
  // SwiGLU after it is the first under the threshold. The drift is named where it starts.
  const dir = twinsRunDir((b, d) => {
    const ref = refValues();
    writeFileSync(join(d, 'bisect/drift.npy'), npyOf(ref.map((row, i) => row.map((v, j) => v + 0.04 * Math.sin(i + 3 * j)))));
    b.launches = [
      { index: 1, launch: 'front', occurrence: 0, kind: 'rms_gemms_rope', buffers: [
        { buffer: 'normed', boundary: 'attn_norm', stage: 'RMSNorm', step: 'RMSNorm', npu: T('bisect/same.npy'), twin: T('bisect/same.npy') },
      ] },
      { index: 3, launch: 'o_ffn', occurrence: 0, kind: 'o_ffn', buffers: [
        { buffer: 'res1', boundary: 'res1', stage: 'residual add', step: 'residual add', npu: T('bisect/same.npy'), twin: T('bisect/same.npy') },
        { buffer: 'normed2', boundary: 'ffn_norm', stage: 'RMSNorm (FFN)', step: 'RMSNorm', npu: T('bisect/drift.npy'), twin: T('bisect/same.npy') },
        { buffer: 'swiglu', boundary: 'swiglu', stage: 'SwiGLU', step: 'SwiGLU', npu: T('bisect/off.npy'), twin: T('bisect/same.npy') },
      ] },
    ];
  });
  const r = (await judgeBisect(dir, P(dir), 5, TH, fakeMetrics()))!;
  assert.equal([r.launchOffender!.launch, r.launchOffender!.buffer, r.launchOffender!.strength, r.launchOffender!.hint?.boundary], ['o_ffn', 'normed2', 'drifts', 'RMSNorm']);
  assert.equal([r.launchCrossing!.buffer, r.launchCrossing!.strength], ['swiglu', 'diverges']);
  // Where the drift starts is itself under the threshold: nothing later to name.
  const plain = (await judgeBisect(twinsRunDir(), P(twinsRunDir()), 5, TH, fakeMetrics()))!;
  assert.is(plain.launchCrossing, null);
});

/** block0.npu.npy with its float32 payload changed by `edit`, written as the bisect's re-run. */
function rerunDir(edit: (f: Float32Array) => void): string {
  return twinsRunDir((b, d) => {
    const npy = readFileSync(join(d, 'block0.npu.npy'));
    const head = 10 + npy.readUInt16LE(8);
    const f = new Float32Array(npy.buffer.slice(npy.byteOffset + head, npy.byteOffset + npy.length));
    edit(f);
    writeFileSync(join(d, 'bisect/00-rerun.npy'), Buffer.concat([npy.subarray(0, head), Buffer.from(f.buffer)]));
    b.rerun = { file: 'bisect/00-rerun.npy', python: '/opt/wrapped/python' };
  });
}

test('a bisect is trusted only when its unswapped re-run gives back the judged ffn_out', async () => {
  const same = rerunDir(() => {});
  const ok = (await judgeBisect(same, P(same), 5, TH, fakeMetrics()))!;
  assert.equal([ok.rerun!.exact, ok.rerun!.reproduced, ok.rerun!.relL2, ok.void], [true, true, 0, null]);
  assert.is(ok.launchOffender!.buffer, 'q');
  // another block ran: void, and nothing it found is named
  const other = rerunDir((f) => f.forEach((v, i) => { f[i] = i % 3 ? v : -v; }));
  const v = (await judgeBisect(other, P(other), 5, TH, fakeMetrics()))!;
  assert.is(v.rerun!.reproduced, false);
  assert.ok(v.rerun!.relL2 > 0.5, String(v.rerun!.relL2));
  assert.is(v.rerun!.python, '/opt/wrapped/python');
  assert.match(v.void!, /the bisect is void: block 0 re-run unswapped under \/opt\/wrapped\/python did not give back the judged ffn_out \(relative L2 /);
  assert.is(v.reason, v.void);
  // as the check ran it (issue 29.5): the VOID line names the command the user gave, a wrapper, too
  const byUser = ranBy(v, '/home/u/bin/npu-python');
  assert.match(byUser.void!, /re-run unswapped under \/home\/u\/bin\/npu-python \(\/opt\/wrapped\/python\) did not give back/);
  assert.is(byUser.reason, byUser.void);
  assert.is(ranBy(ok, '/home/u/bin/npu-python').void, null);
  assert.equal([v.offender, v.launchOffender, v.launchCrossing], [null, null, null]);
  assert.ok(v.launches!.length, 'the tables stay, as information');
  // a difference within the stated tolerance reproduces (not bit for bit)
  const near = rerunDir((f) => f.forEach((x, i) => { f[i] = x * (1 + 1e-4 * Math.sin(i)); }));
  const n = (await judgeBisect(near, P(near), 5, TH, fakeMetrics()))!;
  assert.equal([n.rerun!.exact, n.rerun!.reproduced], [false, true]);
  assert.ok(n.rerun!.relL2 > 0 && n.rerun!.relL2 <= n.rerun!.tolerance, String(n.rerun!.relL2));
  // a re-run of another shape is void too
  const wrong = twinsRunDir((b, d) => {
    writeFileSync(join(d, 'bisect/00-rerun.npy'), npyOf(refValues()));
    b.rerun = { file: 'bisect/00-rerun.npy', python: 'python3' };
  });
  const w = (await judgeBisect(wrong, P(wrong), 5, TH, fakeMetrics()))!;
  assert.match(w.void!, /a different shape or non-finite values/);
});

test('a bisect.json from before the twins (no method) still reads as a hook bisect', async () => {
  const dir = twinsRunDir((b) => { delete b.method; delete b.emulated; delete b.launches; b.hook = 'm.bisect_steps'; });
  const r = (await judgeBisect(dir, P(dir), 5, TH, fakeMetrics()))!;
  assert.equal([r.method, r.launches, r.emulated], ['hook', null, false]);
  assert.is(r.steps.length, 1);
});

test('every file bisect.json names stays inside the run dir, and its fields are typed', async () => {
  const bad: [string, (b: Record<string, any>, dir: string) => void, RegExp][] = [
    ['a launch file out of the run dir', (b) => { b.launches[0].buffers[0].twin.file = '../../../etc/passwd'; }, /launches\[0\]\.buffers\[0\]\.twin\.file must be a relative path inside the run dir/],
    ['an absolute launch file', (b) => { b.launches[0].buffers[1].npu.file = '/etc/passwd'; }, /launches\[0\]\.buffers\[1\]\.npu\.file must be a relative path/],
    ['a symlink out of the run dir', (b, dir) => { symlinkSync('/etc/hostname', join(dir, 'bisect/link.npy')); b.launches[1].buffers[0].npu.file = 'bisect/link.npy'; }, /link\.npy: is a symlink: .*never through a link/],
    ['a declared shape the file lacks', (b) => { b.launches[0].buffers[0].npu.shape = [5, 8]; }, /disagrees with probe\.json bisect\/bisect\.json launches\[0\]\.buffers\[0\]\.npu\.shape/],
    ['a method nobody writes', (b) => { b.method = 'magic'; }, /method must be "hook", "twins" or null|method must be one of/],
    ['buffers that are not a list', (b) => { b.launches[0].buffers = {}; }, /launches\[0\]\.buffers must be a list/],
    ['a missing launch file', (b) => { b.launches[1].buffers[0].twin.file = 'bisect/gone.npy'; }, /gone\.npy: missing/],
  ];
  for (const [what, edit, want] of bad) {
    const dir = twinsRunDir(edit);
    let err: unknown = null;
    try {
      await judgeBisect(dir, P(dir), 5, TH, fakeMetrics());
    } catch (e) {
      err = e;
    }
    assert.ok(err, `${what}: refused`);
    assert.match((err as Error).message, want, what);
  }
  // bisect.json itself: a link out of the run dir is not read.
  const dir = twinsRunDir();
  const outside = join(mkdtempSync(join(tmpdir(), 'nbg-bisect-out-')), 'bisect.json');
  copyFileSync(join(dir, 'bisect/bisect.json'), outside);
  rmSync(join(dir, 'bisect/bisect.json'));
  symlinkSync(outside, join(dir, 'bisect/bisect.json'));
  assert.throws(() => readBisectJson(dir), /bisect\.json: is a symlink: .*never through a link/);
});

test.run();
