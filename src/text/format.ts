// Number formatting shared by every renderer, so the terminal, markdown and docs agree.

export function fmtCos(x: number | null | undefined): string {
  if (x === null || x === undefined) return 'n/a';
  if (Number.isNaN(x)) return 'NaN';
  return x.toFixed(6);
}

export function fmtSci(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined) return 'n/a';
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Inf' : '-Inf';
  if (x === 0) return '0';
  const a = Math.abs(x);
  return a >= 1e-3 && a < 1e4 ? Number(x.toPrecision(digits + 1)).toString() : x.toExponential(digits);
}

export function fmtDb(x: number | null | undefined): string {
  if (x === null || x === undefined) return 'n/a';
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'inf dB' : '-inf dB';
  return `${x.toFixed(1)} dB`;
}

export function fmtRatio(x: number | null | undefined): string {
  if (x === null || x === undefined) return 'n/a';
  if (Number.isNaN(x)) return 'NaN';
  return x.toFixed(4);
}

export function fmtSeconds(s: number): string {
  return s < 10 ? `${s.toFixed(2)}s` : `${s.toFixed(1)}s`;
}

/** Rows 7..9 -> "7-9"; a single row -> "7". */
export function fmtRun(start: number, end: number): string {
  return start === end ? `${start}` : `${start}-${end}`;
}

/** SQNR with a note when it is under the informational "very good" bar (never a gate). */
export function fmtSqnr(x: number | null | undefined, goodDb: number): string {
  const s = fmtDb(x);
  return typeof x === 'number' && Number.isFinite(x) && x < goodDb ? `${s} (< ${goodDb} dB)` : s;
}

/** An error-budget ratio as "1.07x" ("n/a": both sides exact; "inf": only the bf16 side is). */
export function fmtBudget(ratio: number): string {
  if (Number.isNaN(ratio)) return 'n/a';
  if (!Number.isFinite(ratio)) return 'inf';
  return `${ratio < 10 ? ratio.toFixed(2) : ratio.toFixed(0)}x`;
}
