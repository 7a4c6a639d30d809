/**
 * The two ways XLA's TriangularSolveExpander solves small systems, reproduced step for step so
 * answers agree with XLA's to rounding even for ill-conditioned matrices (where exact
 * substitution and XLA's inverse-then-multiply differ by far more than a few ULP):
 * - invert the (single) diagonal block, rescaled to a unit diagonal and inverted one row at a
 *   time, then multiply b by op(inverse);
 * - for many tiny systems, "solve directly": each row of x is (b row - dot of the solved
 *   rows) divided by the diagonal.
 * Matrices are split complex (re, im; im zero for real types). `round` rounds each
 * arithmetic step to the element type's compute precision (Math.fround for f32 and narrower).
 */

export type Round = (value: number) => number;

export interface SplitMatrix {
  readonly re: Float64Array;
  readonly im: Float64Array;
}

/** Rounded complex product. */
function mulRe(ar: number, ai: number, br: number, bi: number, round: Round): number {
  return ai === 0 && bi === 0 ? ar * br : round(round(ar * br) - round(ai * bi));
}
function mulIm(ar: number, ai: number, br: number, bi: number, round: Round): number {
  return ai === 0 && bi === 0 ? 0 : round(round(ar * bi) + round(ai * br));
}

/** Rounded complex quotient. */
function divide(nr: number, ni: number, dr: number, di: number, round: Round): [number, number] {
  if (di === 0) return [round(nr / dr), round(ni / dr)];
  const d = round(round(dr * dr) + round(di * di));
  return [round(round(round(nr * dr) + round(ni * di)) / d), round(round(round(ni * dr) - round(nr * di)) / d)];
}

/**
 * Inverse of a triangular m x m matrix `a` (already masked to its triangle): scale columns to a
 * unit diagonal, build the inverse row by row from the first (lower) or last (upper) row, then
 * divide row r by the diagonal's entry r.
 */
export function invertTriangular(a: SplitMatrix, m: number, lower: boolean, round: Round): SplitMatrix {
  const dr = new Float64Array(m);
  const di = new Float64Array(m);
  for (let i = 0; i < m; i++) {
    const zero = a.re[i * m + i] === 0 && a.im[i * m + i] === 0;
    dr[i] = zero ? 1 : (a.re[i * m + i] as number);
    di[i] = zero ? 0 : (a.im[i * m + i] as number);
  }
  const sr = new Float64Array(m * m);
  const si = new Float64Array(m * m);
  for (let r = 0; r < m; r++) {
    for (let c = 0; c < m; c++) {
      [sr[r * m + c], si[r * m + c]] = divide(
        a.re[r * m + c] as number,
        a.im[r * m + c] as number,
        dr[c] as number,
        di[c] as number,
        round,
      );
    }
  }
  // Output starts as -I with +1 at the first row handled; each step replaces row j by -(S[j,:] @ O).
  const or = new Float64Array(m * m);
  const oi = new Float64Array(m * m);
  for (let i = 0; i < m; i++) or[i * m + i] = -1;
  const start = lower ? 0 : m - 1;
  or[start * m + start] = 1;
  const rowRe = new Float64Array(m);
  const rowIm = new Float64Array(m);
  for (let i = 1; i < m; i++) {
    const j = lower ? i : m - 1 - i;
    for (let c = 0; c < m; c++) {
      let accRe = 0;
      let accIm = 0;
      for (let k = 0; k < m; k++) {
        const xr = sr[j * m + k] as number;
        const xi = si[j * m + k] as number;
        const yr = or[k * m + c] as number;
        const yi = oi[k * m + c] as number;
        accRe = round(accRe + mulRe(xr, xi, yr, yi, round));
        accIm = round(accIm + mulIm(xr, xi, yr, yi, round));
      }
      rowRe[c] = -accRe;
      rowIm[c] = -accIm;
    }
    or.set(rowRe, j * m);
    oi.set(rowIm, j * m);
  }
  for (let r = 0; r < m; r++) {
    for (let c = 0; c < m; c++) {
      [or[r * m + c], oi[r * m + c]] = divide(
        or[r * m + c] as number,
        oi[r * m + c] as number,
        dr[r] as number,
        di[r] as number,
        round,
      );
    }
  }
  return { re: or, im: oi };
}

/**
 * x = P @ b (left) or b @ P (right), where P is op(inverse) given as a function of (row, col);
 * b / x live at `base` in X with `rows x cols` layout. Accumulates in k order, rounding each step.
 */
export function multiplyByInverse(
  p: (r: number, c: number) => [number, number],
  m: number,
  X: SplitMatrix,
  base: number,
  rows: number,
  cols: number,
  leftSide: boolean,
  round: Round,
): void {
  const count = rows * cols;
  const outRe = new Float64Array(count);
  const outIm = new Float64Array(count);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      let accRe = 0;
      let accIm = 0;
      for (let k = 0; k < m; k++) {
        const [pr, pi] = leftSide ? p(r, k) : p(k, c);
        const at = base + (leftSide ? k * cols + c : r * cols + k);
        const br = X.re[at] as number;
        const bi = X.im[at] as number;
        accRe = round(accRe + (leftSide ? mulRe(pr, pi, br, bi, round) : mulRe(br, bi, pr, pi, round)));
        accIm = round(accIm + (leftSide ? mulIm(pr, pi, br, bi, round) : mulIm(br, bi, pr, pi, round)));
      }
      outRe[r * cols + c] = accRe;
      outIm[r * cols + c] = accIm;
    }
  }
  X.re.set(outRe, base);
  X.im.set(outIm, base);
}

/**
 * XLA's SolveDirectly on op(a) given as (tr, ti), lower or upper: rows (left) or columns
 * (right) of x in dependency order, each b - sum(op(a) * solved x), then / diagonal.
 */
export function solveDirectly(
  tr: Float64Array,
  ti: Float64Array,
  m: number,
  X: SplitMatrix,
  base: number,
  rows: number,
  cols: number,
  leftSide: boolean,
  opLower: boolean,
  unitDiagonal: boolean,
  round: Round,
): void {
  // Left: x rows depend on earlier rows when op(a) is lower. Right: x columns depend on later
  // columns when op(a) is lower.
  const forward = leftSide === opLower;
  const other = leftSide ? cols : rows;
  for (let step = 0; step < m; step++) {
    const j = forward ? step : m - 1 - step;
    for (let o = 0; o < other; o++) {
      let sumRe = 0;
      let sumIm = 0;
      for (let k = forward ? 0 : j + 1; forward ? k < j : k < m; k++) {
        const [ar, ai] = leftSide
          ? [tr[j * m + k] as number, ti[j * m + k] as number]
          : [tr[k * m + j] as number, ti[k * m + j] as number];
        const at = base + (leftSide ? k * cols + o : o * cols + k);
        const xr = X.re[at] as number;
        const xi = X.im[at] as number;
        sumRe = round(sumRe + (leftSide ? mulRe(ar, ai, xr, xi, round) : mulRe(xr, xi, ar, ai, round)));
        sumIm = round(sumIm + (leftSide ? mulIm(ar, ai, xr, xi, round) : mulIm(xr, xi, ar, ai, round)));
      }
      const at = base + (leftSide ? j * cols + o : o * cols + j);
      let vr = round((X.re[at] as number) - sumRe);
      let vi = round((X.im[at] as number) - sumIm);
      if (!unitDiagonal) [vr, vi] = divide(vr, vi, tr[j * m + j] as number, ti[j * m + j] as number, round);
      X.re[at] = vr;
      X.im[at] = vi;
    }
  }
}
