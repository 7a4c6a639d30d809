/**
 * The heavy CPU kernels: each takes NDArrays plus a plain attribute object and returns a new
 * NDArray (inputs are never mutated). Region arguments are `RegionInfo` from array.ts.
 */

/** dotGeneral(lhs, rhs, dims, resultType = lhs.type): NDArray */
export { dotGeneral, type DotDimensionNumbers } from "./dot-general.ts";
/** convolution(lhs, rhs, attrs, resultType = lhs.type): NDArray */
export { convolution, type ConvAttributes, type ConvDimensionNumbers } from "./convolution.ts";
