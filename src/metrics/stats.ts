// Order statistics with numpy's semantics, so our summaries match np.percentile / np.median.
//
// NaN semantics (numpy's): min, percentile, median and mean of an array that holds a NaN are
// NaN. A NaN cosine means a NaN reached a real row; it must surface, not be sorted away.

/** Ascending sort of a copy; NaN-free input assumed (callers check first). */
function sorted(values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values).sort();
}

function hasNaN(values: ArrayLike<number>): boolean {
  for (let i = 0; i < values.length; i++) if (values[i] !== values[i]) return true;
  return false;
}

/** numpy's _lerp: a + (b-a)*t, but b - (b-a)*(1-t) for t >= 0.5 (keeps the result monotone and exact at ends). */
function lerp(a: number, b: number, t: number): number {
  const diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

/** np.percentile(values, q) with the default 'linear' method on ascending-sorted data. */
function percentileSorted(s: ArrayLike<number>, q: number): number {
  const n = s.length;
  if (n === 0) return NaN;
  // numpy: virtual index = (n - 1) * (q / 100), gamma = its fractional part.
  const idx = (n - 1) * (q / 100);
  const lo = Math.floor(idx);
  const hi = Math.min(lo + 1, n - 1);
  return lerp(s[lo], s[hi], idx - lo);
}

export function percentile(values: ArrayLike<number>, q: number): number {
  if (values.length === 0 || hasNaN(values)) return NaN;
  return percentileSorted(sorted(values), q);
}

/** np.median: the middle element, or the mean of the two middle ones. */
function medianSorted(s: ArrayLike<number>): number {
  const n = s.length;
  if (n === 0) return NaN;
  const m = n >> 1;
  return n % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

interface Summary {
  min: number;
  p5: number;
  median: number;
  mean: number;
}

export function summarize(values: ArrayLike<number>): Summary {
  if (values.length === 0 || hasNaN(values)) return { min: NaN, p5: NaN, median: NaN, mean: NaN };
  const s = sorted(values);
  let sum = 0;
  for (let i = 0; i < s.length; i++) sum += values[i];
  return { min: s[0], p5: percentileSorted(s, 5), median: medianSorted(s), mean: sum / s.length };
}
