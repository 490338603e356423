// Gate bars (DESIGN.md "Gates"): the one place these numbers live.

export const WHOLE_COSINE_MIN = 0.99;
/** PyTorch Numeric Suite's "very good alignment" bar; informational. */
export const SQNR_GOOD_DB = 40;
/** Cosine is blind to scale: warn when |npu|/|ref| leaves this band. */
export const NORM_RATIO_WARN = 0.01;
/** The error budget (issue 17.9): error(NPU vs FP32) / error(HF bf16 vs FP32), both as ERROR_MEASURE.
 * About 1: the NPU is as good as bf16 allows; above this bar it adds error of its own (a warning;
 * informational, like the norm ratio). */
export const ERROR_BUDGET_WARN = 3;
export const ERROR_MEASURE = 'relative L2 error ||x - fp32|| / ||fp32|| over the real rows';
/** The error budget against the hardware twins (issue 29.2): error(NPU vs FP32) / error(hw twins vs
 * FP32), the twins (bf16's roundings plus BFP16 where the tree compiles it) run over the same launches
 * from the FP32 block input. About 1 for a right integration whatever the number format: every clean
 * emulated run of the bf16 models at precision hw gives 1.00 at every boundary (the emulated NPU is
 * those twins). The bar leaves room for the one kernel whose twin is known to be more precise than
 * NPU2: FlashAttention, whose registry error (3.9e-2, 4.4e-2 mean_rel_L1) is 2.5-2.8x its twin's
 * (1.55e-2, test_twins.BlockFloatTests); above the bar, the NPU adds error of its own. */
export const EXPECTED_BUDGET_WARN = 3;

/** A lens boundary whose norm ratio |npu|/|ref| is off 1 by more than this gets a scale warning
 * (issue 17: Qwen's RMSNorm ELFs use eps 1e-5 where the config says 1e-6: 0.989 at attn_norm). */
export const LENS_SCALE_WARN = 0.005;
/** Regression warning when max_abs exceeds this multiple of the recorded baseline. */
export const MAX_ABS_REGRESSION = 1.5;

/**
 * Per-position minimum cosine for a head dimension: the seed's table (64 -> 0.99, 128 -> 0.98,
 * 256 -> 0.97) extended monotonically, because BF16 accumulation noise grows with sqrt(head_dim * K).
 */
export function perPositionThreshold(headDim: number): number {
  if (!Number.isFinite(headDim) || headDim <= 0) throw new RangeError(`head_dim must be a positive number, got ${headDim}`);
  const t = 0.99 - 0.01 * Math.log2(headDim / 64);
  return Math.min(0.99, Math.max(0.97, t));
}

/** Thresholds print with four decimals: 0.9842 for hd 96. */
export function formatThreshold(t: number): string {
  return Number(t.toFixed(4)).toString();
}

/**
 * "Well below" the threshold: a boundary whose distance from a cosine of 1 is more than twice the
 * threshold's (0.98 at head_dim 64, 0.96 at 128, 0.94 at 256). Closer to the threshold is bf16
 * noise territory on a real NPU; this far below, a boundary is broken even when ffn_out passes.
 */
export function wellBelow(threshold: number): number {
  return 1 - 2 * (1 - threshold);
}

/**
 * The clean bar: a tenth of the threshold's distance from 1 (0.999 at head_dim 64, 0.998 at 128,
 * 0.997 at 256). A boundary under it but above the threshold drifts: not a verdict, but when
 * something downstream falls under the threshold, the first boundary that drifts is where the
 * divergence begins (an ignored RMSNorm weight shows at attn_norm long before anything fails).
 */
export function cleanBar(threshold: number): number {
  return 1 - (1 - threshold) / 10;
}
