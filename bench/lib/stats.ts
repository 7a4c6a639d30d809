/** Small statistics for benchmark samples (milliseconds, bytes: any numbers). */

export function sorted(xs: readonly number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = sorted(xs);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** Linear-interpolated percentile, p in [0, 100]. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = sorted(xs);
  const rank = (Math.min(100, Math.max(0, p)) / 100) * (s.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return (s[lo] as number) + ((s[hi] as number) - (s[lo] as number)) * (rank - lo);
}

export function mean(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

export interface Summary {
  readonly n: number;
  readonly median: number;
  readonly p10: number;
  readonly p90: number;
  readonly min: number;
  readonly max: number;
  readonly mean: number;
}

export function summarize(xs: readonly number[]): Summary {
  return {
    n: xs.length,
    median: round(median(xs)),
    p10: round(percentile(xs, 10)),
    p90: round(percentile(xs, 90)),
    min: round(xs.length ? Math.min(...xs) : Number.NaN),
    max: round(xs.length ? Math.max(...xs) : Number.NaN),
    mean: round(mean(xs)),
  };
}

/** Rounds to `digits` decimals (keeps JSON readable); NaN and infinities become null in JSON anyway. */
export function round(x: number, digits = 4): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** numerator / denominator, or null when either is missing or the denominator is 0. */
export function ratio(numerator: number | null | undefined, denominator: number | null | undefined): number | null {
  if (numerator == null || denominator == null || !Number.isFinite(numerator) || !Number.isFinite(denominator))
    return null;
  if (denominator === 0) return null;
  return round(numerator / denominator);
}
