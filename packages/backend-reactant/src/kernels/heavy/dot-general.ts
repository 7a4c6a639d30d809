/**
 * stablehlo.dot_general: operands are permuted (only when their layout is not already usable,
 * GEMM's transpose flags absorb the common x @ W^T case) into [batch, M, K] x [batch, K, N],
 * then each batch is one GEMM. Result axes are [batch..., lhs free..., rhs free...].
 */
import {
  type DataAlloc,
  type ElemType,
  type NDArray,
  type TypedArray,
  allocData,
  isComplexType,
  isFloatType,
  isIntegerType,
  sameShape,
} from "../../array.ts";
import { type GemmRunner, planGemm } from "../../blas/index.ts";
import { SMALL_GEMM_LIMIT } from "../../blas/small-gemm.ts";
import { toFloat32, toFloat64, fromFloats, isF8, storeFloats } from "./element-io.ts";
import { checkAxes, invalid, unsupported } from "./errors.ts";
import { permuteData, sameKind } from "./permute.ts";
import { type InPlace, type Oriented, type Orientation, inPlaceView, orientData, orientation } from "./gemm-layout.ts";
import { complexDot } from "./dot-complex.ts";
import { exactFloatGemm, integerDot } from "./dot-integer.ts";
import { type VersionOf, type Widened, narrowProducts, noWidening, widenKept } from "./dot-widen.ts";

export interface DotDimensionNumbers {
  readonly lhsBatch: readonly number[];
  readonly rhsBatch: readonly number[];
  readonly lhsContracting: readonly number[];
  readonly rhsContracting: readonly number[];
}

const OP = "dot_general";

export interface DotPlan {
  readonly batch: number;
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly resultShape: number[];
  readonly lhsFree: number[];
  readonly rhsFree: number[];
}

function freeAxes(rank: number, used: readonly number[]): number[] {
  const free: number[] = [];
  for (let d = 0; d < rank; d++) if (!used.includes(d)) free.push(d);
  return free;
}

function planDot(lhs: NDArray, rhs: NDArray, dims: DotDimensionNumbers): DotPlan {
  const { lhsBatch, rhsBatch, lhsContracting, rhsContracting } = dims;
  if (lhsBatch.length !== rhsBatch.length)
    throw invalid(OP, "lhs and rhs batch dimension lists differ in length", { dims });
  if (lhsContracting.length !== rhsContracting.length)
    throw invalid(OP, "lhs and rhs contracting dimension lists differ in length", { dims });
  checkAxes(OP, "lhs batch+contracting dimensions", [...lhsBatch, ...lhsContracting], lhs.shape.length);
  checkAxes(OP, "rhs batch+contracting dimensions", [...rhsBatch, ...rhsContracting], rhs.shape.length);
  const sizeOf = (a: NDArray, axis: number) => a.shape[axis] as number;
  lhsBatch.forEach((l, i) => {
    if (sizeOf(lhs, l) !== sizeOf(rhs, rhsBatch[i] as number))
      throw invalid(
        OP,
        `batch dimension ${i} has size ${sizeOf(lhs, l)} in lhs but ${sizeOf(rhs, rhsBatch[i] as number)} in rhs`,
      );
  });
  lhsContracting.forEach((l, i) => {
    if (sizeOf(lhs, l) !== sizeOf(rhs, rhsContracting[i] as number))
      throw invalid(
        OP,
        `contracting dimension ${i} has size ${sizeOf(lhs, l)} in lhs but ${sizeOf(rhs, rhsContracting[i] as number)} in rhs`,
      );
  });
  const lhsFree = freeAxes(lhs.shape.length, [...lhsBatch, ...lhsContracting]);
  const rhsFree = freeAxes(rhs.shape.length, [...rhsBatch, ...rhsContracting]);
  const sizes = (a: NDArray, axes: readonly number[]) => axes.map((d) => sizeOf(a, d));
  const prod = (xs: number[]) => xs.reduce((p, x) => p * x, 1);
  return {
    batch: prod(sizes(lhs, lhsBatch)),
    m: prod(sizes(lhs, lhsFree)),
    n: prod(sizes(rhs, rhsFree)),
    k: prod(sizes(lhs, lhsContracting)),
    resultShape: [...sizes(lhs, lhsBatch), ...sizes(lhs, lhsFree), ...sizes(rhs, rhsFree)],
    lhsFree,
    rhsFree,
  };
}

/** Everything the operands' shapes and the dimension numbers decide, computed once per shape pair. */
interface DotLayout {
  readonly lhsShape: readonly number[];
  readonly rhsShape: readonly number[];
  readonly plan: DotPlan;
  readonly lhs: Orientation;
  readonly rhs: Orientation;
  /**
   * A side that would be permuted but can be read in place for float GEMMs (attention's
   * per-head products read [batch, seq, heads, dim] as stored), or null.
   */
  readonly lhsView: InPlace | null;
  readonly rhsView: InPlace | null;
  /** The per-batch GEMM in f32 and f64, planned on first use. */
  gemmF32: GemmRunner | null;
  gemmF64: GemmRunner | null;
  /**
   * The last integer operand of each side converted to floats and oriented, with its storage and
   * the version it had: one per side, so an activation that changes every call keeps no more
   * than the one conversion a call makes anyway.
   */
  converted: [Converted | null, Converted | null];
  /** This layout without its in-place views (permutedLayout), made on first use. */
  permuted?: DotLayout;
  /**
   * Per side, the storage a float operand is permuted into, reused call after call: the copy
   * lives only while this op's GEMMs read it.
   */
  scratch: [TypedArray | null, TypedArray | null];
  /** Per side, a bf16 / f16 operand's f32 widening; then a narrow result's f32 products. */
  widened: [Widened, Widened, Widened];
}

function layoutFor(lhs: NDArray, rhs: NDArray, dims: DotDimensionNumbers): DotLayout {
  const plan = planDot(lhs, rhs, dims);
  const lhsOrientation = orientation(dims.lhsBatch, plan.lhsFree, dims.lhsContracting);
  const rhsOrientation = orientation(dims.rhsBatch, dims.rhsContracting, plan.rhsFree);
  const small = plan.m * plan.n * plan.k <= SMALL_GEMM_LIMIT;
  return {
    lhsShape: [...lhs.shape],
    rhsShape: [...rhs.shape],
    plan,
    lhs: lhsOrientation,
    rhs: rhsOrientation,
    lhsView:
      lhsOrientation.permute === null
        ? null
        : inPlaceView(lhs.shape, dims.lhsBatch, plan.lhsFree, dims.lhsContracting, small),
    rhsView:
      rhsOrientation.permute === null
        ? null
        : inPlaceView(rhs.shape, dims.rhsBatch, dims.rhsContracting, plan.rhsFree, small),
    gemmF32: null,
    gemmF64: null,
    converted: [null, null],
    scratch: [null, null],
    widened: [noWidening(), noWidening(), noWidening()],
  };
}

/** A float operand permuted for GEMM into the layout's scratch for its side. */
function permuteFloat(layout: DotLayout, a: NDArray, data: Float32Array | Float64Array, isLhs: boolean): TypedArray {
  const perm = (isLhs ? layout.lhs : layout.rhs).permute;
  if (perm === null) return data;
  const side = isLhs ? 0 : 1;
  let into = layout.scratch[side];
  if (!into || into.constructor !== data.constructor || into.length !== data.length) {
    into = sameKind(data, data.length);
    layout.scratch[side] = into;
  }
  return permuteData(data, a.shape, perm, 1, into as typeof data);
}

interface Converted {
  readonly data: NDArray["data"];
  readonly version: number;
  readonly f32: boolean;
  readonly oriented: Oriented;
}

export type { VersionOf } from "./dot-widen.ts";

/**
 * An integer operand as floats, oriented for GEMM, kept while its storage keeps its version: a
 * quantized layer's weights are widened once, not on every call (at batch 1 that widening was
 * most of the layer's time).
 */
function floatOperand(
  layout: DotLayout,
  a: NDArray,
  isLhs: boolean,
  f32: boolean,
  orient: OrientFn,
  versionOf: VersionOf | undefined,
): Oriented {
  const side = isLhs ? 0 : 1;
  const version = versionOf?.(a.data);
  const hit = layout.converted[side];
  if (version !== undefined && hit && hit.data === a.data && hit.version === version && hit.f32 === f32)
    return hit.oriented;
  const oriented = orient(a, f32 ? toFloat32(a, OP) : toFloat64(a, OP), 1, isLhs);
  layout.converted[side] = version === undefined ? null : { data: a.data, version, f32, oriented };
  return oriented;
}

function gemmOf(layout: DotLayout, f32: boolean): GemmRunner {
  const planned = f32 ? layout.gemmF32 : layout.gemmF64;
  if (planned) return planned;
  const { m, n, k } = layout.plan;
  const transA = (layout.lhsView ?? layout.lhs).transposed;
  const transB = (layout.rhsView ?? layout.rhs).transposed;
  const lda = layout.lhsView?.ld ?? (transA ? m : k);
  const ldb = layout.rhsView?.ld ?? (transB ? k : n);
  const runner = planGemm({ m, n, k, lda, ldb, ldc: n, transA, transB }, f32);
  if (f32) layout.gemmF32 = runner;
  else layout.gemmF64 = runner;
  return runner;
}

/** Storage for a float GEMM result; contents may be arbitrary (every element is written). */
export type GemmOutputAlloc = (count: number, f64: boolean) => Float32Array | Float64Array;

const freshOutput: GemmOutputAlloc = (count, f64) =>
  f64 ? new Float64Array(new ArrayBuffer(count * 8)) : new Float32Array(new ArrayBuffer(count * 4));

/**
 * dot_general(lhs, rhs) with the given dimension numbers. `resultType` is the op's result
 * element type (preferred_element_type); it defaults to the lhs type. `alloc` gives the float
 * result storage (the plan's pooled buffers).
 */
export function dotGeneral(
  lhs: NDArray,
  rhs: NDArray,
  dims: DotDimensionNumbers,
  resultType: ElemType = lhs.type,
  alloc: GemmOutputAlloc = freshOutput,
): NDArray {
  return runDot(lhs, rhs, layoutFor(lhs, rhs, dims), resultType, alloc);
}

/**
 * dotGeneral for one op of a plan: the shape checks, axis bookkeeping and layout decisions are
 * made when a shape pair is first seen and reused while the operands keep those shapes (a
 * compiled program sees the same shapes on every run).
 */
export function dotGeneralFor(
  dims: DotDimensionNumbers,
): (
  lhs: NDArray,
  rhs: NDArray,
  resultType: ElemType,
  alloc: GemmOutputAlloc,
  versionOf?: VersionOf,
  allocOut?: DataAlloc,
) => NDArray {
  let last: DotLayout | null = null;
  return (lhs, rhs, resultType, alloc, versionOf, allocOut) => {
    let layout = last;
    if (layout === null || !sameShape(layout.lhsShape, lhs.shape) || !sameShape(layout.rhsShape, rhs.shape)) {
      layout = layoutFor(lhs, rhs, dims);
      last = layout;
    }
    return runDot(lhs, rhs, layout, resultType, alloc, versionOf, allocOut);
  };
}

function runDot(
  lhs: NDArray,
  rhs: NDArray,
  layout: DotLayout,
  resultType: ElemType,
  alloc: GemmOutputAlloc,
  versionOf?: VersionOf,
  allocOut: DataAlloc = allocData,
): NDArray {
  const plan = layout.plan;
  if (usedAsStored(lhs, rhs, layout, resultType)) {
    // The common case, tested first: the general path below would convert nothing and permute
    // nothing here, but its checks and wrapper objects cost as much as a small layer's bias add.
    const f32 = resultType === "f32";
    // A single GEMM may keep its copy of B while B's storage keeps its version (a loop's weights).
    const bVersion = plan.batch === 1 ? versionOf?.(rhs.data) : undefined;
    const c = floatGemm(
      lhs.data as Float32Array | Float64Array,
      rhs.data as Float32Array | Float64Array,
      layout,
      f32,
      alloc,
      bVersion,
    );
    return { type: resultType, shape: [...plan.resultShape], data: c };
  }
  const orient: OrientFn = (a, data, slots, isLhs) => orientData(data, a.shape, isLhs ? layout.lhs : layout.rhs, slots);
  if (isF8(resultType) || isF8(lhs.type) || isF8(rhs.type)) throw unsupported(OP, "f8 element types are not supported");
  if (isComplexType(resultType)) {
    return { type: resultType, shape: [...plan.resultShape], data: complexDot(lhs, rhs, plan, orient, resultType) };
  }
  if (isFloatType(resultType)) {
    if (isComplexType(lhs.type) || isComplexType(rhs.type))
      throw unsupported(OP, "complex operands need a complex result type");
    const inF32 = resultType !== "f64" && lhs.type !== "f64" && rhs.type !== "f64";
    const la = inF32 ? widenedOperand(layout, lhs, 0, versionOf) : toFloat64(lhs, OP);
    const rb = inF32 ? widenedOperand(layout, rhs, 1, versionOf) : toFloat64(rhs, OP);
    // A side with an in-place view is read as converted, unpermuted (floatGemm's offsets).
    const ad = (layout.lhsView ? la : permuteFloat(layout, lhs, la, true)) as Float32Array | Float64Array;
    const bd = (layout.rhsView ? rb : permuteFloat(layout, rhs, rb, false)) as Float32Array | Float64Array;
    if (inF32 && isHalf(resultType)) {
      // The f32 products are scratch: rounded once into the result's own storage.
      const count = plan.batch * plan.m * plan.n;
      const c = floatGemm(ad, bd, layout, true, () => narrowProducts(layout.widened[2], count));
      const out = allocOut(resultType, count);
      storeFloats(resultType, c as Float32Array, out, OP);
      return { type: resultType, shape: [...plan.resultShape], data: out };
    }
    const c = floatGemm(ad, bd, layout, inF32, alloc);
    return { type: resultType, shape: [...plan.resultShape], data: fromFloats(resultType, c, OP) };
  }
  if (isIntegerType(resultType) || resultType === "i1") {
    if (isFloatType(lhs.type) || isFloatType(rhs.type) || isComplexType(lhs.type) || isComplexType(rhs.type))
      throw unsupported(OP, `floating-point operands with integer result ${resultType}`);
    const exact = exactFloatGemm(lhs.type, rhs.type, resultType, plan.k);
    if (exact !== null) {
      // Narrow integers through the float GEMM: every product and partial sum is an integer the
      // float type holds exactly, in any summation order, so the result equals the integer loop.
      const f32 = exact === "f32";
      const a = floatOperand(layout, lhs, true, f32, orient, versionOf);
      const b = floatOperand(layout, rhs, false, f32, orient, versionOf);
      const c = floatGemm(
        a.data as Float32Array | Float64Array,
        b.data as Float32Array | Float64Array,
        permutedLayout(layout),
        f32,
        freshOutput,
      );
      const out = allocData(resultType, c.length);
      if (out instanceof BigInt64Array || out instanceof BigUint64Array)
        for (let i = 0; i < c.length; i++) out[i] = BigInt(c[i] as number);
      else (out as Int32Array).set(c as Float64Array);
      return { type: resultType, shape: [...plan.resultShape], data: out };
    }
    return {
      type: resultType,
      shape: [...plan.resultShape],
      data: integerDot(lhs, rhs, plan, orient, resultType, OP),
    };
  }
  throw unsupported(OP, `result element type ${resultType}`);
}

const isHalf = (type: ElemType): boolean => type === "bf16" || type === "f16";

/** A float operand as f32 for the GEMM: bf16 / f16 widened into the layout's kept storage. */
function widenedOperand(layout: DotLayout, a: NDArray, side: 0 | 1, versionOf: VersionOf | undefined): Float32Array {
  return isHalf(a.type) ? widenKept(layout.widened[side], a, versionOf, OP) : toFloat32(a, OP);
}

/**
 * The layout with its in-place views set aside, for operands already permuted (the integer
 * path's cached conversions): kept on the layout so its GEMM is planned once too.
 */
function permutedLayout(layout: DotLayout): DotLayout {
  if (layout.lhsView === null && layout.rhsView === null) return layout;
  let permuted = layout.permuted;
  if (!permuted) {
    permuted = { ...layout, lhsView: null, rhsView: null, gemmF32: null, gemmF64: null };
    layout.permuted = permuted;
  }
  return permuted;
}

/** f32 (f64) operands of an f32 (f64) result, both usable by GEMM as stored or in place. */
function usedAsStored(lhs: NDArray, rhs: NDArray, layout: DotLayout, resultType: ElemType): boolean {
  if (
    (layout.lhs.permute !== null && layout.lhsView === null) ||
    (layout.rhs.permute !== null && layout.rhsView === null)
  )
    return false;
  if (resultType === "f32")
    return (
      lhs.type === "f32" && rhs.type === "f32" && lhs.data instanceof Float32Array && rhs.data instanceof Float32Array
    );
  if (resultType === "f64")
    return (
      lhs.type === "f64" && rhs.type === "f64" && lhs.data instanceof Float64Array && rhs.data instanceof Float64Array
    );
  return false;
}

/** Every batch's GEMM on oriented float operands, into storage from `alloc`; `bVersion` as GemmRunner takes it. */
function floatGemm(
  a: Float32Array | Float64Array,
  b: Float32Array | Float64Array,
  layout: DotLayout,
  f32: boolean,
  alloc: GemmOutputAlloc,
  bVersion?: number,
): Float32Array | Float64Array {
  const { batch, m, n, k } = layout.plan;
  const c = alloc(batch * m * n, !f32);
  const run = gemmOf(layout, f32);
  const aAt = layout.lhsView?.offsets;
  const bAt = layout.rhsView?.offsets;
  for (let bi = 0; bi < batch; bi++)
    run(a, aAt ? (aAt[bi] as number) : bi * m * k, b, bAt ? (bAt[bi] as number) : bi * k * n, c, bi * m * n, bVersion);
  return c;
}

export type OrientFn = (a: NDArray, data: NDArray["data"], slots: number, isLhs: boolean) => Oriented;
