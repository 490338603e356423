// The recorded results the goldens render and the Action's effects act on (test/github/golden.test.ts,
// test/github/effects.test.ts): pass, fail (with a bisect), hostile strings, the lens with a twins
// bisect (a hidden RoPE bug, a transposed Q weight, hostile), and --positions. The lens in each is
// judged for real from boundary tensors (helpers/lens.ts).
import type { Report } from '../../src/record/report.ts';
import { lensWarning } from '../../src/lens/judge.ts';
import { fakeComparison, fakeMetrics, fakeReport, fakeTwinsBisect } from './report.ts';
import { judgedLens } from './lens.ts';

export function passing(): Report {
  return fakeReport(fakeMetrics(), { isolation: { mode: 'namespace', detail: 'bubblewrap: user+pid+mount+net namespaces, private /proc, read-only root', source: 'this run' } });
}

export function failing(): Report {
  const m = fakeMetrics({ cosines: [0.999, 0.998, 0.91, 0.85], whole: 0.97 });
  m.perPosition.badRuns = [{ start: 2, end: 3, length: 2 }];
  const r = fakeReport(m);
  r.warnings = [{ id: 'sqnr', message: 'SQNR 21.3 dB is under the 40 dB "very good" bar (informational)' }];
  r.integration!.workarounds = [{ id: 'non_1024_aligned', detail: 'emb_dim 896 is not a multiple of 1024', prerequisite: 'Phase 4/5 prerequisite: pad the GEMM N dimension' }];
  r.bisect = {
    available: true, reason: 'swapping o_proj to the CPU brings the block above threshold', hook: 'bisect_steps',
    steps: [
      { step: 'q_proj', kernel: 'rms_gemms_rope', cpuEquivalent: 'numpy GEMM', ...fakeComparison(0.97, 0.85), fixes: false },
      { step: 'o_proj', kernel: 'o_ffn', cpuEquivalent: 'numpy GEMM', ...fakeComparison(0.9999, 0.9995), fixes: true },
    ],
    offender: { step: 'o_proj', kernel: 'o_ffn', hint: { boundary: 'o_proj', cause: 'a stale tail tile', where: 'the O GEMM launch' } as any },
    situation: null,
  };
  return r;
}

export function hostile(): Report {
  const H = '<img src=x> **b** [l](https://evil.example) @mallory #1 <!-- | ` \r::error::x';
  const r = failing();
  r.model.name = H;
  r.prompt = { ...r.prompt!, style: H, source: H };
  r.integration = { ...r.integration!, entry: H, reason: H, kernels: [H, 'ok_kernel'], workarounds: [{ id: H, detail: H, prerequisite: H }] };
  r.bisect!.steps[0].step = H;
  r.bisect!.offender = { step: H, kernel: H, hint: null };
  r.warnings.push({ id: H, message: H });
  r.error = null;
  return r;
}

export async function hostileTwins(): Promise<Report> {
  const H = '<img src=x> **b** [l](https://evil.example) @mallory #1 <!-- | ` \r::error::x';
  const r = await failingTwins();
  r.emulate = { runtime: H, inject: H };
  r.lens!.rows[5].name = H;
  r.lens!.rows[5].step = H;
  r.lens!.rows[5].launch = H;
  r.lens!.firstBelow = { ...r.lens!.firstBelow!, name: H, step: H, producedBy: H };
  r.lens!.unpaired = [{ name: H, side: 'npu', reason: H }];
  const b = r.bisect!;
  b.launches![0].launch = H;
  b.launches![0].buffers[1].buffer = H;
  b.launches![0].buffers[1].stage = H;
  b.launchOffender = { ...b.launchOffender!, launch: H, buffer: H, boundary: H, stage: H };
  b.steps[0].step = H;
  b.steps[0].swapped = [H];
  b.offender = { step: H, kernel: H, hint: null };
  return r;
}

/** An emulated run whose RoPE bug passes the gates (near-uniform attention): the lens names and warns, the launch bisect locates. */
export async function hiddenRope(): Promise<Report> {
  const r = fakeReport(fakeMetrics({ cosines: [1, 0.99986, 0.9995, 0.99961, 0.9994, 0.99883], whole: 0.999672 }));
  r.emulate = { runtime: 'npu-block-gate emulated air runtime (CPU twins)', inject: 'interleaved_rope' };
  r.lens = await judgedLens({ cos: { q_roped: [0.893943, 0.780106], k_roped: [0.882169, 0.768656] }, ffnOutPasses: true });
  r.warnings = [lensWarning(r.lens)!];
  r.bisect = fakeTwinsBisect({ blockPasses: true });
  return r;
}

/** An emulated run failing G1/G2 at a transposed Q weight: the swap forward names the ELF too. */
export async function failingTwins(): Promise<Report> {
  const m = fakeMetrics({ cosines: [0.999, 0.95, 0.91, 0.85], whole: 0.96 });
  m.perPosition.badRuns = [{ start: 1, end: 3, length: 3 }];
  const r = fakeReport(m);
  r.emulate = { runtime: 'npu-block-gate emulated air runtime (CPU twins)', inject: 'transposed_q_weight' };
  r.lens = await judgedLens({ rows: 4, cos: { q: [0.0138, -0.0858], q_roped: [0.0141, -0.08], attn_out: [0.95, 0.85], ffn_out: [0.96, 0.85] } });
  r.bisect = fakeTwinsBisect({ bad: 'q' });
  return r;
}

/** --positions 2048 on a real NPU run: q_roped drifts with position (the RoPE frequencies), ffn_out passes. */
export async function positions(): Promise<Report> {
  const n = 2048;
  const r = fakeReport(fakeMetrics({ cosines: Array.from({ length: n }, (_, i) => 0.9999 - 0.0004 * (i / n)), whole: 0.9998, realLen: n, npuRows: n }));
  r.prompt = { ...r.prompt!, real_len: n, padded_len: n, positions: { requested: n, real_len: n, prompt_tokens: 9, method: 'repeated', set: 'verify/prompts/instruct.txt', prompts_used: 56, cycles: 6, text_chars: 5084 } };
  const drift = (name: string, i: number) => (name === 'q_roped' || name === 'k_roped' ? 1 - 0.12 * (i / n) ** 2 : 0.99995);
  r.lens = await judgedLens({ rows: n, emulated: false, perRow: drift, ffnOutPasses: true });
  r.warnings = [lensWarning(r.lens)!];
  return r;
}
