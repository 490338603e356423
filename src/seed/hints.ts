// The seed's failure-mode table ("Failure modes"), keyed by the kind of kernel boundary a bisect
// names. One place, so the report, the PR comment and phase2_block.md say the same thing.

export interface Hint { boundary: string; cause: string; where: string }

const HINTS: { match: RegExp; hint: Hint }[] = [
  { match: /qk_?norm/, hint: { boundary: 'Q/K norm', cause: 'per-head RMSNorm stitched wrong (weighted_rms_norm with heads as rows, shared (head_dim,) weight)', where: 'check M=n_heads, N=head_dim and the weight broadcast' } },
  { match: /norm/, hint: { boundary: 'RMSNorm', cause: 'norm weight, eps or the row layout', where: 'compare with <model>_cpu_helpers.rms_norm on the same input' } },
  { match: /resid|add|bias/, hint: { boundary: 'residual add / bias', cause: 'bias forgotten on the padded path, or a GQA reindex bug', where: 'if padding + bias: re-run the CPU sanity test on the padded forward (seed Step 2)' } },
  { match: /(^|_)(q|k|v|qkv)(_proj|_gemm)?$|gemms?_rope|qkv/, hint: { boundary: 'Q/K/V GEMM', cause: 'weight loading or tensor layout (seq-first vs heads-first), a missing transpose', where: "compare the NPU output's shape with the reference's; check np.ascontiguousarray() after the weight load" } },
  { match: /attn|attention|flash|fa$/, hint: { boundary: 'FlashAttention', cause: 'causal masking missing or a wrong dk_chunks compile flag', where: 'see the debug-fa-runtime-failure skill' } },
  { match: /rope/, hint: { boundary: 'RoPE', cause: 'RoPE pairing (half-split vs interleaved), the [cos|sin] LUT layout, or its frequencies (rope_theta, rope_scaling: a drift that grows with position)', where: "compare the LUT from generate_rope_lut with HF's rotate_half convention" } },
  { match: /down/, hint: { boundary: 'Down GEMM', cause: 'BF16 truncation: the low-precision (direct-codegen) tier instead of high-precision', where: 'confirm fused-cast / drain (FP32 accumulate + one cast); see details/GEMM_bf16_in_bf16_out.md' } },
  { match: /gate|up|swiglu|silu|ffn|o_proj|^o$/, hint: { boundary: 'O / FFN GEMM', cause: 'weight layout or a dropped cast between fused launches', where: "compare the step's output shape and dtype with the reference's" } },
];

export const NAN_HINT: Hint = { boundary: 'output buffer', cause: 'an uninitialised BO or a reused stale buffer', where: 'see the debug-bo-corruption skill' };
/** A drift (under the clean bar, above the threshold) that begins at FlashAttention: the kernel's own bf16
 * softmax drifts on large attention logits (FlashAttention_bf16.md:59-61, 91-95: scores, running max,
 * probabilities and accumulator carried in bf16); a missing causal mask crosses the threshold instead. */
export const FA_DRIFT_HINT: Hint = { boundary: 'FlashAttention', cause: "the FlashAttention kernel's own bf16 softmax (scores, running max, probabilities and accumulator carried in bf16 between 64-key chunks) on large attention logits, not a bug while nothing crosses the threshold; a missing causal mask or a wrong dk_chunks flag would", where: 'compare with an --emulate run (its twins round the same way) or with --cpu-attn' };
export const TAIL_HINT: Hint = { boundary: 'last positions', cause: 'one bad run of positions (a causal-mask edge case or a stale tail)', where: 'print the per-position cosine and look for contiguous bad runs' };

/** The seed's kernel-sequence steps (scripts/probe/elf_boundaries.json `step`), each as a name hintFor knows. */
const STEP_NAMES: Record<string, string> = {
  'rmsnorm': 'attn_norm',
  'q/k/v gemm': 'qkv',
  'q/k norm': 'qk_norm',
  'rope': 'rope',
  'flashattention': 'attention',
  'o gemm': 'o_proj',
  'residual add': 'residual',
  'gate/up gemm': 'gate',
  'swiglu': 'swiglu',
  'down gemm': 'down',
};

/**
 * The hint for a boundary the lens or the launch-level bisect names: by the seed's step it belongs
 * to (RMSNorm, Q/K/V GEMM, RoPE, ...), else by its name, else by the ELF that wrote it.
 */
export function hintForStep(step: string | null | undefined, name = '', kernel = ''): Hint | null {
  const known = STEP_NAMES[String(step ?? '').toLowerCase()];
  return (known ? hintFor(known) : null) ?? hintFor(name, kernel);
}

export function hintFor(step: string, kernel = ''): Hint | null {
  const s = step.toLowerCase();
  for (const { match, hint } of HINTS) if (match.test(s)) return hint;
  const k = kernel.toLowerCase();
  for (const { match, hint } of HINTS) if (match.test(k)) return hint;
  return null;
}
