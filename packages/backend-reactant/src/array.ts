/**
 * The engine's in-memory array: what every kernel takes and returns.
 *
 * Kernel authors read this first. `NDArray` and the storage of each element type are the
 * program model's (@xlaserve/stablehlo, elements.ts), re-exported here. Conventions:
 * - `NDArray` is dense and row-major (last axis fastest); `shape` is never aliased between
 *   arrays, so kernels may keep it. A rank-0 array has shape [] and one element.
 * - Storage per element type (the `data` field):
 *     i1                      Uint8Array, 0 or 1
 *     i2, i4, i8              Int8Array (sub-byte ints widened, value kept sign-extended)
 *     ui2, ui4, ui8           Uint8Array (value kept in range)
 *     i16 / ui16              Int16Array / Uint16Array
 *     i32 / ui32              Int32Array / Uint32Array
 *     i64 / ui64              BigInt64Array / BigUint64Array (the only BigInt storage)
 *     f16, bf16               Uint16Array of the raw IEEE / bfloat16 bits
 *     f8* types               Uint8Array of the raw bits
 *     f32 / f64               Float32Array / Float64Array
 *     c64 / c128              Float32Array / Float64Array interleaved (re, im), length 2*count
 * - Kernels never mutate their inputs (the plan may share constants and weights between calls)
 *   unless the plan hands them an output buffer explicitly.
 */
import type { ElemType, NDArray, TypedArray } from "@xlaserve/stablehlo/elements.ts";

export * from "@xlaserve/stablehlo/elements.ts";

/**
 * One element as a region (reducer / comparator / map body) sees it: a JS number for every
 * float type (f16/bf16/f8 already decoded from their bits) and for integers up to 32 bits,
 * bigint for i64/ui64, [re, im] for complex, and 0/1 for i1.
 */
export type Scalar = number | bigint | [number, number];

/**
 * A compiled region (the body of reduce, sort's comparator, scatter's update...). Takes one
 * Scalar per block argument and returns one per returned value. Results already carry the
 * rounding of the region's element types (an f16 add inside returns the f16-rounded number).
 * Calling it per element is slow: kernels should first check `RegionInfo.reducer`.
 */
export type ScalarFn = (args: Scalar[]) => Scalar[];

/**
 * A region the engine recognised as a plain binary reducer `return op(arg0, arg1)` over one
 * operand, so a kernel can use a specialised loop instead of calling `ScalarFn` per element.
 * "max" / "min" follow StableHLO semantics (NaN propagates). null: no fast path.
 */
export type ReducerKind = "add" | "mul" | "max" | "min" | "and" | "or" | "xor" | null;

/**
 * The same region evaluated over whole arrays at once: element i of every result is the region
 * applied to element i of every argument. Arguments have one common shape, except that an
 * argument with a single element is broadcast. Much faster than `ScalarFn` per element when a
 * kernel can line up many independent applications (reduce_window over all output positions,
 * one step of a reduction over all rows...).
 */
export type BatchedFn = (args: NDArray[]) => NDArray[];

/** What a kernel receives for a region argument. */
export interface RegionInfo {
  readonly fn: ScalarFn;
  readonly batched: BatchedFn;
  readonly reducer: ReducerKind;
}

/**
 * Storage for a kernel's output (a plan's pool, or allocData). Its contents may be arbitrary:
 * a kernel taking it writes every element.
 */
export type DataAlloc = (type: ElemType, count: number) => TypedArray;
