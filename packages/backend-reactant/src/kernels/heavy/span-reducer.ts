/**
 * Run-length versions of the fast reducers: out[o..o+n) = op(out[o..o+n), in[i..i+n)). Each
 * float type and op gets its own small function so the JIT sees one array class per loop
 * (one shared loop over TypedArray would be megamorphic and several times slower); other
 * types fall back to the per-element RawCombine. max / min are branch-free (elem/branchless.ts):
 * pooling windows over ReLU outputs make Math.max's branch mispredict about half the time.
 */
import type { ElemType, ReducerKind, TypedArray } from "../../array.ts";
import { maxFloat, minFloat } from "../../elem/branchless.ts";
import { rawCombiner } from "./fast-reducer.ts";

export type SpanCombine = (
  out: TypedArray,
  outOffset: number,
  input: TypedArray,
  inOffset: number,
  length: number,
) => void;

function addF32(out: Float32Array, o: number, input: Float32Array, i: number, n: number): void {
  for (let c = 0; c < n; c++) out[o + c] = (out[o + c] as number) + (input[i + c] as number);
}
function maxF32(out: Float32Array, o: number, input: Float32Array, i: number, n: number): void {
  for (let c = 0; c < n; c++) out[o + c] = maxFloat(out[o + c] as number, input[i + c] as number);
}
function minF32(out: Float32Array, o: number, input: Float32Array, i: number, n: number): void {
  for (let c = 0; c < n; c++) out[o + c] = minFloat(out[o + c] as number, input[i + c] as number);
}
function mulF32(out: Float32Array, o: number, input: Float32Array, i: number, n: number): void {
  for (let c = 0; c < n; c++) out[o + c] = (out[o + c] as number) * (input[i + c] as number);
}
function addF64(out: Float64Array, o: number, input: Float64Array, i: number, n: number): void {
  for (let c = 0; c < n; c++) out[o + c] = (out[o + c] as number) + (input[i + c] as number);
}
function maxF64(out: Float64Array, o: number, input: Float64Array, i: number, n: number): void {
  for (let c = 0; c < n; c++) out[o + c] = maxFloat(out[o + c] as number, input[i + c] as number);
}
function minF64(out: Float64Array, o: number, input: Float64Array, i: number, n: number): void {
  for (let c = 0; c < n; c++) out[o + c] = minFloat(out[o + c] as number, input[i + c] as number);
}
function mulF64(out: Float64Array, o: number, input: Float64Array, i: number, n: number): void {
  for (let c = 0; c < n; c++) out[o + c] = (out[o + c] as number) * (input[i + c] as number);
}

const F32: Partial<Record<NonNullable<ReducerKind>, SpanCombine>> = {
  add: addF32 as SpanCombine,
  max: maxF32 as SpanCombine,
  min: minF32 as SpanCombine,
  mul: mulF32 as SpanCombine,
};
const F64: Partial<Record<NonNullable<ReducerKind>, SpanCombine>> = {
  add: addF64 as SpanCombine,
  max: maxF64 as SpanCombine,
  min: minF64 as SpanCombine,
  mul: mulF64 as SpanCombine,
};

/** The span step for `kind` on `type`, or null when the region must be called per element. */
export function spanCombiner(kind: ReducerKind, type: ElemType): SpanCombine | null {
  if (kind === null) return null;
  const specialised = type === "f32" ? F32[kind] : type === "f64" ? F64[kind] : undefined;
  if (specialised) return specialised;
  const step = rawCombiner(kind, type);
  if (!step) return null;
  return (out, o, input, i, n) => {
    for (let c = 0; c < n; c++) step(out, o + c, input, i + c);
  };
}
