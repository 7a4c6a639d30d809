/** Shared helpers for the heavy-kernel tests: seeded randomness, indexing and comparisons. */
import { expect } from "bun:test";
import type { ElemType, NDArray, ReducerKind, RegionInfo, Scalar, ScalarFn } from "../../src/array.ts";
import { alloc, strides } from "../../src/array.ts";
import { scalarReader, scalarWriter } from "../../src/kernels/heavy/element-io.ts";

/** A small deterministic PRNG (mulberry32) so failures reproduce. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randInt(next: () => number, lo: number, hi: number): number {
  return lo + Math.floor(next() * (hi - lo + 1));
}

export function shuffle<T>(next: () => number, xs: T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

export function count(shape: readonly number[]): number {
  return shape.reduce((p, d) => p * d, 1);
}

export function randomF32(next: () => number, shape: number[]): NDArray {
  const data = new Float32Array(count(shape));
  for (let i = 0; i < data.length; i++) data[i] = Math.round((next() * 2 - 1) * 8) / 4;
  return { type: "f32", shape, data };
}

export function randomF64(next: () => number, shape: number[]): NDArray {
  const data = new Float64Array(count(shape));
  for (let i = 0; i < data.length; i++) data[i] = next() * 2 - 1;
  return { type: "f64", shape, data };
}

/** Zeros of both signs, NaN, infinities, a subnormal and values whose products overflow f32. */
export const SPECIAL_FLOATS = [
  0,
  -0,
  1,
  -1,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  1e-45,
  3e38,
  -3e38,
];

/**
 * `count` values in [-2, 2), each replaced by one of SPECIAL_FLOATS with probability `special`
 * (0: never, and no draw spent on the choice).
 */
export function randomFloats(
  next: () => number,
  count: number,
  f32: boolean,
  special: number,
): Float32Array | Float64Array {
  const out = f32 ? new Float32Array(count) : new Float64Array(count);
  for (let i = 0; i < count; i++)
    out[i] =
      special > 0 && next() < special
        ? (SPECIAL_FLOATS[Math.floor(next() * SPECIAL_FLOATS.length)] as number)
        : next() * 4 - 2;
  return out;
}

export function array(type: ElemType, shape: number[], values: ArrayLike<number> | ArrayLike<bigint>): NDArray {
  const make = (): NDArray["data"] => {
    switch (type) {
      case "f32":
        return Float32Array.from(values as ArrayLike<number>);
      case "f64":
        return Float64Array.from(values as ArrayLike<number>);
      case "i32":
        return Int32Array.from(values as ArrayLike<number>);
      case "ui32":
        return Uint32Array.from(values as ArrayLike<number>);
      case "i8":
        return Int8Array.from(values as ArrayLike<number>);
      case "ui8":
      case "i1":
        return Uint8Array.from(values as ArrayLike<number>);
      case "i16":
        return Int16Array.from(values as ArrayLike<number>);
      case "i64":
        return BigInt64Array.from(values as ArrayLike<bigint>);
      case "ui64":
        return BigUint64Array.from(values as ArrayLike<bigint>);
      case "c64":
        return Float32Array.from(values as ArrayLike<number>);
      case "c128":
        return Float64Array.from(values as ArrayLike<number>);
      default:
        return Uint16Array.from(values as ArrayLike<number>);
    }
  };
  return { type, shape, data: make() };
}

/** Linear offset of a multi-index in a row-major shape. */
export function offsetOf(shape: readonly number[], index: readonly number[]): number {
  const st = strides(shape);
  let o = 0;
  for (let i = 0; i < index.length; i++) o += (index[i] as number) * (st[i] as number);
  return o;
}

/** Calls fn for every multi-index of shape in row-major order. */
export function forEachIndex(shape: readonly number[], fn: (index: number[], linear: number) => void): void {
  const total = count(shape);
  const index = new Array<number>(shape.length).fill(0);
  for (let linear = 0; linear < total; linear++) {
    fn(index, linear);
    for (let a = shape.length - 1; a >= 0; a--) {
      index[a] = (index[a] as number) + 1;
      if ((index[a] as number) < (shape[a] as number)) break;
      index[a] = 0;
    }
  }
}

export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance = 1e-4): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i] as number;
    const e = expected[i] as number;
    if (!(Math.abs(a - e) <= tolerance * Math.max(1, Math.abs(e)))) {
      throw new Error(`element ${i}: got ${a}, expected ${e}`);
    }
  }
}

/**
 * A RegionInfo for tests from a scalar function: `batched` applies it element by element
 * (single-element arguments broadcast), storing results as `resultTypes` (default: the types
 * of the first arguments, as reducer regions return).
 */
export function region(fn: ScalarFn, reducer: ReducerKind = null, resultTypes?: ElemType[]): RegionInfo {
  const batched = (args: NDArray[]): NDArray[] => {
    const shape = (args.find((a) => count(a.shape) > 1) ?? (args[0] as NDArray)).shape;
    const total = count(shape);
    const readers = args.map((a) => {
      const read = scalarReader(a);
      return count(a.shape) === 1 ? () => read(0) : read;
    });
    const types = resultTypes ?? args.slice(0, fn(readers.map((r) => r(0))).length).map((a) => a.type);
    const outs = types.map((type) => alloc(type, shape));
    const writers = outs.map(scalarWriter);
    for (let i = 0; i < total; i++) {
      const values = fn(readers.map((r) => r(i)));
      for (let k = 0; k < values.length; k++) writers[k]?.(i, values[k] as Scalar);
    }
    return outs;
  };
  return { fn, batched, reducer };
}
