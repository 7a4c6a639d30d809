/**
 * The heavy CPU kernels: each takes NDArrays plus a plain attribute object and returns new
 * NDArrays (inputs are never mutated). Region arguments are `RegionInfo` from array.ts: the
 * kernels use `reducer` for a fast loop when it is set and call `fn` otherwise.
 */

/** dotGeneral(lhs, rhs, dims, resultType = lhs.type): NDArray. Result axes [batch, lhs free, rhs free]. */
export { dotGeneral, type DotDimensionNumbers } from "./dot-general.ts";
/** convolution(lhs, rhs, attrs, resultType = lhs.type): NDArray. */
export { convolution, type ConvAttributes, type ConvDimensionNumbers } from "./convolution.ts";
/** gather(operand, startIndices, dims, sliceSizes): NDArray. Start indices are clamped into range. */
export { gather, type GatherDimensionNumbers } from "./gather.ts";
/** scatter(inputs, indices, updates, dims, region, options?): NDArray[]. Out-of-range windows are skipped. */
export { scatter, type ScatterDimensionNumbers, type ScatterOptions } from "./scatter.ts";
/** reduceWindow(inputs, initValues, attrs, body): NDArray[]. */
export { reduceWindow, type ReduceWindowAttributes } from "./reduce-window.ts";
/** selectAndScatter(operand, source, initValue, attrs, select, scatter): NDArray. */
export { selectAndScatter, type SelectAndScatterAttributes } from "./select-and-scatter.ts";
/** sort(inputs, dimension, comparator, options?): NDArray[] (always stable). */
export { sort, type SortFastKey, type SortOptions } from "./sort.ts";
/** fft(operand, fftType, fftLength): NDArray. */
export { fft, type FftType } from "./fft.ts";
/** triangularSolve(a, b, attrs): NDArray. */
export { triangularSolve, type TransposeKind, type TriangularSolveAttributes } from "./triangular-solve.ts";
/** Raw-storage accumulate steps for recognised reducers (reusable by other kernels). */
export { rawCombiner, type RawCombine } from "./fast-reducer.ts";
export type { WindowAttributes } from "./window-geometry.ts";
