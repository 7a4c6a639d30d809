/**
 * The f32 side of a bf16 / f16 dot_general: XLA's CPU backend widens such operands to f32, runs
 * an f32 GEMM and rounds the result once, and so does the engine. The widening and the f32
 * result live in storage kept per op and side instead of new arrays each call, and a weight
 * (storage whose version does not change between calls) is widened once, not on every call: at
 * batch 8 a transformer layer's 64x192 bf16 weight took as long to widen as its input.
 */
import { type NDArray, type TypedArray, elementCount } from "../../array.ts";
import { toFloat32Scratch } from "./element-io.ts";

/** The version of an operand's storage (plan/arena.ts Arena.version); the same number, the same contents. */
export type VersionOf = (data: NDArray["data"]) => number;

/** One side's last widening: the storage it came from, that storage's version, and the floats. */
export interface Widened {
  source: TypedArray | null;
  version: number;
  floats: Float32Array;
}

export function noWidening(): Widened {
  return { source: null, version: Number.NaN, floats: new Float32Array(0) };
}

/**
 * `a` (bf16 / f16) as f32 in `kept`'s storage, reused as is while `a`'s storage keeps its
 * version. Without `versionOf` nothing is reused (the floats are scratch for this call).
 */
export function widenKept(kept: Widened, a: NDArray, versionOf: VersionOf | undefined, op: string): Float32Array {
  const version = versionOf === undefined ? Number.NaN : versionOf(a.data);
  if (kept.source === a.data && kept.version === version) return kept.floats;
  const n = elementCount(a.shape);
  if (kept.floats.length !== n) kept.floats = new Float32Array(n);
  // A failed widening must not leave the old source's record over new contents.
  kept.source = null;
  toFloat32Scratch(a, kept.floats, op);
  kept.source = a.data;
  kept.version = version;
  return kept.floats;
}

/** Scratch for a narrow result's f32 products, kept per op: rounded into the result, then unused. */
export function narrowProducts(kept: Widened, count: number): Float32Array {
  if (kept.floats.length !== count) kept.floats = new Float32Array(count);
  return kept.floats;
}
