/**
 * stablehlo.triangular_solve: solves op(a) x = b (left_side) or x op(a) = b for each batch,
 * by forward or back substitution (complex arithmetic throughout, imaginary parts zero
 * for real types). Systems up to 128 follow XLA's expander step for step (triangular-paths.ts);
 * larger ones use plain substitution. Narrow types (f32, f16, bf16, c64) round every step to
 * f32 as XLA's f32 code does: for an ill-conditioned system the exact answer can differ from
 * XLA's by far more than rounding, and XLA's answer is the one models were validated against. Only the triangle `lower` names is read;
 * unit_diagonal treats the diagonal as ones without reading it.
 */
import { type ElemType, type NDArray, elementCount, isComplexType } from "../../array.ts";
import { fromFloats, toFloat64 } from "./element-io.ts";
import { invalid } from "./errors.ts";
import { invertTriangular, multiplyByInverse, type Round, solveDirectly } from "./triangular-paths.ts";

export type TransposeKind = "NO_TRANSPOSE" | "TRANSPOSE" | "ADJOINT";

export interface TriangularSolveAttributes {
  readonly leftSide: boolean;
  readonly lower: boolean;
  readonly unitDiagonal: boolean;
  readonly transposeA: TransposeKind;
}

const OP = "triangular_solve";

interface Split {
  re: Float64Array;
  im: Float64Array;
}

function split(a: NDArray): Split {
  const count = elementCount(a.shape);
  if (!isComplexType(a.type)) return { re: Float64Array.from(toFloat64(a, OP)), im: new Float64Array(count) };
  const re = new Float64Array(count);
  const im = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    re[i] = a.data[2 * i] as number;
    im[i] = a.data[2 * i + 1] as number;
  }
  return { re, im };
}

function join(type: ElemType, shape: number[], x: Split): NDArray {
  if (!isComplexType(type)) return { type, shape, data: fromFloats(type, x.re, OP) };
  const data = type === "c64" ? new Float32Array(2 * x.re.length) : new Float64Array(2 * x.re.length);
  for (let i = 0; i < x.re.length; i++) {
    data[2 * i] = x.re[i] as number;
    data[2 * i + 1] = x.im[i] as number;
  }
  return { type, shape, data };
}

/** XLA's TriangularSolveExpander block size, and when it prefers direct solves instead. */
const BLOCK_SIZE = 128;
const DIRECT_MIN_BATCH = BLOCK_SIZE / 16;
const DIRECT_MAX_SIZE = BLOCK_SIZE / 4;

/** a masked to the triangle `lower` names, with ones on the diagonal when unit_diagonal. */
function maskedA(A: Split, batch: number, m: number, attrs: TriangularSolveAttributes): Split {
  const re = new Float64Array(m * m);
  const im = new Float64Array(m * m);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < m; j++) {
      if (i === j ? attrs.unitDiagonal : attrs.lower ? j > i : j < i) continue;
      re[i * m + j] = A.re[batch * m * m + i * m + j] as number;
      im[i * m + j] = A.im[batch * m * m + i * m + j] as number;
    }
    if (attrs.unitDiagonal) re[i * m + i] = 1;
  }
  return { re, im };
}

/** triangularSolve(a, b, attrs): x with b's shape. */
export function triangularSolve(a: NDArray, b: NDArray, attrs: TriangularSolveAttributes): NDArray {
  const rank = a.shape.length;
  if (rank < 2 || b.shape.length !== rank)
    throw invalid(OP, `a and b need the same rank >= 2 (got ${rank} and ${b.shape.length})`);
  const m = a.shape[rank - 1] as number;
  if (a.shape[rank - 2] !== m) throw invalid(OP, `a must be square in its last two axes, got [${a.shape}]`);
  if (a.shape.slice(0, -2).join() !== b.shape.slice(0, -2).join()) throw invalid(OP, "a and b batch dimensions differ");
  const rows = b.shape[rank - 2] as number;
  const cols = b.shape[rank - 1] as number;
  if ((attrs.leftSide ? rows : cols) !== m)
    throw invalid(OP, `b is [${b.shape}] but a is ${m}x${m} on the ${attrs.leftSide ? "left" : "right"}`);
  const A = split(a);
  const X = split(b);
  const batches = elementCount(a.shape.slice(0, -2));
  const transposed = attrs.transposeA !== "NO_TRANSPOSE";
  const conjugate = attrs.transposeA === "ADJOINT" ? -1 : 1;
  // op(a) is lower triangular when a's lower triangle is used untransposed, or its upper one transposed.
  const opLower = attrs.lower !== transposed;
  const round = b.type === "f64" || b.type === "c128" ? (v: number) => v : Math.fround;
  const tr = new Float64Array(m * m);
  const ti = new Float64Array(m * m);
  for (let batch = 0; batch < batches; batch++) {
    // op(a) for this batch, reading only the named triangle.
    tr.fill(0);
    ti.fill(0);
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < m; j++) {
        if (i === j ? attrs.unitDiagonal : attrs.lower ? j > i : j < i) continue;
        const src = batch * m * m + i * m + j;
        const dst = transposed ? j * m + i : i * m + j;
        tr[dst] = A.re[src] as number;
        ti[dst] = transposed ? conjugate * (A.im[src] as number) : (A.im[src] as number);
      }
      if (attrs.unitDiagonal) tr[i * m + i] = 1;
    }
    const base = batch * rows * cols;
    if (m === 1) {
      // XLA's degenerate case: one division (or nothing for a unit diagonal).
      if (!attrs.unitDiagonal)
        substitute(tr, ti, 1, rows * cols, X, base, true, leftSideStrides(1, rows * cols), round);
    } else if (batches > DIRECT_MIN_BATCH && m < DIRECT_MAX_SIZE) {
      solveDirectly(tr, ti, m, X, base, rows, cols, attrs.leftSide, opLower, attrs.unitDiagonal, round);
    } else if (m <= BLOCK_SIZE) {
      const masked = maskedA(A, batch, m, attrs);
      const inv = invertTriangular(masked, m, attrs.lower, round);
      const p = (r: number, c: number): [number, number] =>
        transposed
          ? [inv.re[c * m + r] as number, conjugate * (inv.im[c * m + r] as number)]
          : [inv.re[r * m + c] as number, inv.im[r * m + c] as number];
      multiplyByInverse(p, m, X, base, rows, cols, attrs.leftSide, round);
    } else if (attrs.leftSide) substitute(tr, ti, m, cols, X, base, opLower, leftSideStrides(m, cols), round);
    else substitute(tr, ti, m, rows, X, base, !opLower, rightSideStrides(m), round);
  }
  return join(b.type, [...b.shape], X);
}

/** Which axis of x and of op(a) the substitution walks: the only difference between the two sides. */
interface SubstitutionStrides {
  /** Step in x between consecutive unknowns of one system. */
  readonly unknown: number;
  /** Step in x between the n independent systems. */
  readonly other: number;
  /** Step in op(a) per target unknown, and per source unknown it depends on. */
  readonly target: number;
  readonly source: number;
}

/**
 * op(a) x = b with x m x n: unknown i of column c sits at row i, and op(a)'s row i links it to
 * the others; substitution runs down the rows for a lower op(a), up for an upper one.
 */
const leftSideStrides = (m: number, n: number): SubstitutionStrides => ({ unknown: n, other: 1, target: m, source: 1 });
/**
 * x op(a) = b with x n x m: unknown j of row r sits at column j, and op(a)'s column j links it
 * to the others; an upper op(a) makes column j depend on earlier columns, so it runs forward.
 */
const rightSideStrides = (m: number): SubstitutionStrides => ({ unknown: 1, other: m, target: 1, source: m });

/**
 * Forward (or backward) substitution for n systems of m unknowns at once: each unknown is its
 * right-hand side less the already solved unknowns times their coefficients, over the diagonal.
 */
function substitute(
  tr: Float64Array,
  ti: Float64Array,
  m: number,
  n: number,
  X: Split,
  base: number,
  forward: boolean,
  at: SubstitutionStrides,
  round: Round,
): void {
  for (let step = 0; step < m; step++) {
    const i = forward ? step : m - 1 - step;
    for (let c = 0; c < n; c++) {
      const row = base + c * at.other;
      let sr = X.re[row + i * at.unknown] as number;
      let si = X.im[row + i * at.unknown] as number;
      for (let j = 0; j < m; j++) {
        if (j === i || (forward ? j > i : j < i)) continue;
        const ar = tr[i * at.target + j * at.source] as number;
        const ai = ti[i * at.target + j * at.source] as number;
        const xr = X.re[row + j * at.unknown] as number;
        const xi = X.im[row + j * at.unknown] as number;
        sr = round(sr - round(round(ar * xr) - round(ai * xi)));
        si = round(si - round(round(ar * xi) + round(ai * xr)));
      }
      const diagonal = i * at.target + i * at.source;
      divideInto(X, row + i * at.unknown, sr, si, tr[diagonal] as number, ti[diagonal] as number, round);
    }
  }
}

function divideInto(X: Split, at: number, nr: number, ni: number, dr: number, di: number, round: Round): void {
  if (di === 0) {
    X.re[at] = round(nr / dr);
    X.im[at] = round(ni / dr);
    return;
  }
  const d = round(round(dr * dr) + round(di * di));
  X.re[at] = round(round(round(nr * dr) + round(ni * di)) / d);
  X.im[at] = round(round(round(ni * dr) - round(nr * di)) / d);
}
