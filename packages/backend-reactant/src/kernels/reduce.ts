import {
  type DataAlloc,
  type NDArray,
  type ReducerKind,
  type RegionInfo,
  allocData,
  elementCount,
  isBigIntType,
  isComplexType,
  isIntegerType,
  sameShape,
} from "../array.ts";
import { BF16_TO_NUMBER, F16_TO_NUMBER } from "@xlaserve/stablehlo/float16.ts";
import {
  fastEncodeBf16 as encodeBf16,
  fastEncodeF16 as encodeF16,
  fastRoundBf16,
  fastRoundF16,
} from "../elem/half-bits.ts";
import { transpose } from "./layout.ts";
import { middleSplit, reduceFloatMiddle } from "./reduce-middle.ts";
import { reduceFloatRows } from "./reduce-rows.ts";
import { reduceHalfRows } from "./reduce-half.ts";
import { typedRowsFor } from "./reduce-typed.ts";
import { type ArgReduce, argReduceRows } from "./reduce-argmax.ts";

/**
 * stablehlo.reduce for one op of a plan. Elements are combined in index order (as XLA's CPU
 * loops do), each step rounded to the element type. One operand with a recognised reducer runs
 * a specialised loop; any other region is evaluated batched: one region call per reduced
 * position over all outputs at once, or pairwise halving when there are many reduced
 * positions. The kept axes, output shape and row layout depend only on the operand's shape, so
 * they are worked out when a shape is first seen and reused while it stays (a compiled program
 * sees the same shape every run).
 */
export function reduceFor(
  dims: number[],
  arg: ArgReduce | null = null,
): (inputs: NDArray[], inits: NDArray[], region: RegionInfo, alloc: DataAlloc) => NDArray[] {
  let last: ReduceLayout | null = null;
  return (inputs, inits, region, alloc) => {
    const shape = (inputs[0] as NDArray).shape;
    let layout = last;
    if (layout === null || !sameShape(layout.shape, shape)) {
      layout = layoutFor(shape, dims);
      last = layout;
    }
    if (arg !== null) {
      const pair = argReduce(arg, inputs, inits, layout, alloc);
      if (pair !== null) return pair;
    }
    return reduceWith(inputs, inits, dims, region, layout, alloc);
  };
}

interface ReduceLayout {
  readonly shape: readonly number[];
  readonly kept: readonly number[];
  readonly outShape: readonly number[];
  /** [...kept, ...dims]: puts each output's reduced elements in one row; null when the identity. */
  readonly rowsPerm: number[] | null;
  /** [A, R, B] where the reduced axes are consecutive and followed by kept ones (reduce-middle.ts). */
  readonly middle: [number, number, number] | null;
}

function layoutFor(shape: readonly number[], dims: number[]): ReduceLayout {
  const kept = shape.map((_, d) => d).filter((d) => !dims.includes(d));
  const rowsPerm = [...kept, ...dims];
  return {
    shape: [...shape],
    kept,
    outShape: kept.map((d) => shape[d] as number),
    rowsPerm: rowsPerm.every((p, i) => p === i) ? null : rowsPerm,
    middle: middleSplit(shape, dims),
  };
}

/** An arg-max / arg-min reduce (reduce-argmax.ts) on f32 values and i32 indices; null for other operands. */
function argReduce(
  kind: ArgReduce,
  inputs: NDArray[],
  inits: NDArray[],
  layout: ReduceLayout,
  alloc: DataAlloc,
): NDArray[] | null {
  const [values, indices] = inputs;
  const [init, initIndex] = inits;
  if (!values || !indices || !init || !initIndex || inputs.length !== 2) return null;
  if (!(values.data instanceof Float32Array && indices.data instanceof Int32Array)) return null;
  if (values.type !== "f32" || indices.type !== "i32" || !sameShape(values.shape, indices.shape)) return null;
  const outShape = [...layout.outShape];
  const K = elementCount(outShape);
  const R = K === 0 ? 0 : elementCount(values.shape) / K;
  const v = layout.rowsPerm === null ? values : transpose(values, layout.rowsPerm); // [K, R]
  const i = layout.rowsPerm === null ? indices : transpose(indices, layout.rowsPerm);
  const outValues = alloc("f32", K) as Float32Array;
  const outIndices = alloc("i32", K) as Int32Array;
  const start = init.data[0] as number;
  argReduceRows(
    kind,
    v.data as Float32Array,
    i.data as Int32Array,
    K,
    R,
    start,
    initIndex.data[0] as number,
    outValues,
    outIndices,
  );
  return [
    { type: "f32", shape: outShape, data: outValues },
    { type: "i32", shape: [...outShape], data: outIndices },
  ];
}

function reduceWith(
  inputs: NDArray[],
  inits: NDArray[],
  dims: number[],
  region: RegionInfo,
  layout: ReduceLayout,
  alloc: DataAlloc,
): NDArray[] {
  const first = inputs[0] as NDArray;
  const kept = layout.kept;
  const outShape = [...layout.outShape];
  const single = inputs.length === 1 && region.reducer !== null && !isComplexType(first.type);
  if (single) {
    if (layout.middle !== null) {
      const out = alloc(first.type, elementCount(outShape));
      const init = inits[0] as NDArray;
      if (reduceFloatMiddle(region.reducer, first.data, out, layout.middle, init.data[0] as number))
        return [{ type: first.type, shape: outShape, data: out }];
    }
    const rows = layout.rowsPerm === null ? first : transpose(first, layout.rowsPerm); // [K, R]
    return [fastReduce(rows, inits[0] as NDArray, outShape, region.reducer, alloc)];
  }
  const K = elementCount(outShape);
  const R = elementCount(first.shape) / Math.max(K, 1);
  const perm = [...dims, ...kept];
  const rowsOf = inputs.map((x) => transpose(x, perm)); // [R, K]
  const row = (x: NDArray, r: number, count: number): NDArray => {
    const slots = isComplexType(x.type) ? 2 : 1;
    return {
      type: x.type,
      shape: [count * K],
      data: x.data.subarray(r * K * slots, (r + count) * K * slots) as NDArray["data"],
    };
  };
  let acc: NDArray[];
  if (K === 0) acc = inputs.map((x) => ({ type: x.type, shape: [0], data: allocData(x.type, 0) }));
  else if (R <= 64) {
    acc = inits;
    for (let r = 0; r < R; r++) acc = region.batched([...acc, ...rowsOf.map((x) => row(x, r, 1))]);
    if (R === 0) acc = inits.map((init) => broadcastScalar(init, K));
  } else {
    let level = rowsOf;
    let n = R;
    while (n > 1) {
      const half = Math.floor(n / 2);
      const combined = region.batched([...level.map((x) => row(x, 0, half)), ...level.map((x) => row(x, half, half))]);
      if (n % 2 === 1) {
        level = combined.map((c, i) => concatRows(c, row(level[i] as NDArray, 2 * half, 1)));
        n = half + 1;
      } else {
        level = combined;
        n = half;
      }
    }
    acc = region.batched([...inits, ...level.map((x) => row(x, 0, 1))]);
  }
  return acc.map((a) => ({ type: a.type, shape: [...outShape], data: materialize(a, K) }));
}

function concatRows(a: NDArray, b: NDArray): NDArray {
  const data = allocData(a.type, (a.data.length + b.data.length) / (isComplexType(a.type) ? 2 : 1));
  (data as Float64Array).set(a.data as Float64Array, 0);
  (data as Float64Array).set(b.data as Float64Array, a.data.length);
  return { type: a.type, shape: [(a.shape[0] as number) + (b.shape[0] as number)], data };
}

function broadcastScalar(x: NDArray, n: number): NDArray {
  const slots = isComplexType(x.type) ? 2 : 1;
  const data = allocData(x.type, n) as Float64Array;
  for (let i = 0; i < n * slots; i++) data[i] = x.data[i % slots] as number;
  return { type: x.type, shape: [n], data };
}

/** A region result may be a broadcast scalar (its inputs were the single-element inits). */
function materialize(a: NDArray, k: number): NDArray["data"] {
  const slots = isComplexType(a.type) ? 2 : 1;
  if (a.data.length === k * slots) return a.data;
  return broadcastScalar(a, k).data;
}

function fastReduce(rows: NDArray, init: NDArray, outShape: number[], kind: ReducerKind, alloc: DataAlloc): NDArray {
  const K = elementCount(outShape);
  const R = K === 0 ? 0 : elementCount(rows.shape) / K;
  const type = rows.type;
  const out = alloc(type, K);
  const src = rows.data;
  if (isBigIntType(type)) {
    const s = src as BigInt64Array;
    const o = out as BigInt64Array;
    const start = (init.data as BigInt64Array)[0] as bigint;
    for (let k = 0; k < K; k++) {
      let acc = start;
      for (let r = 0, p = k * R; r < R; r++, p++) acc = combineBig(kind, acc, s[p] as bigint);
      o[k] = acc;
    }
    return { type, shape: outShape, data: out };
  }
  const decode = type === "f16" ? F16_TO_NUMBER : type === "bf16" ? BF16_TO_NUMBER : null;
  const encode = type === "f16" ? encodeF16 : type === "bf16" ? encodeBf16 : null;
  const s = src as Float64Array;
  const o = out as Float64Array;
  const start = decode ? (decode[init.data[0] as number] as number) : (init.data[0] as number);
  if (decode && encode) {
    if (reduceHalfRows(kind, type as "bf16" | "f16", src as Uint16Array, out as Uint16Array, K, R, start))
      return { type, shape: outShape, data: out };
    // Each step rounded to the type as a number (the value decode(encode(x)) gives, without
    // the bits' store and load); the sum, the commonest reducer, without the dispatch.
    const round = type === "f16" ? fastRoundF16 : fastRoundBf16;
    for (let k = 0; k < K; k++) {
      let acc = start;
      const end = k * R + R;
      if (kind === "add") for (let p = k * R; p < end; p++) acc = round(acc + (decode[s[p] as number] as number));
      else for (let p = k * R; p < end; p++) acc = round(combine(kind, acc, decode[s[p] as number] as number));
      o[k] = encode(acc);
    }
    return { type, shape: outShape, data: out };
  }
  if ((type === "f32" || type === "f64") && reduceFloatRows(kind, src, out, K, R, start)) {
    return { type, shape: outShape, data: out };
  }
  const mode: Mode = type === "i1" ? "bool" : isIntegerType(type) ? "int" : "float";
  const typed = typedRowsFor(src, kind, mode);
  if (typed !== null) {
    typed(src, out, K, R, start);
    return { type, shape: outShape, data: out };
  }
  // The accumulator is stored back into the typed array after each step, which rounds (f32)
  // or wraps (integers) exactly as the element type does.
  const acc1 = allocData(type, 1) as Float64Array;
  for (let k = 0; k < K; k++) {
    acc1[0] = start;
    const end = k * R + R;
    switch (kind) {
      case "add":
        for (let p = k * R; p < end; p++) acc1[0] = (acc1[0] as number) + (s[p] as number);
        break;
      case "max":
        for (let p = k * R; p < end; p++) acc1[0] = combine("max", acc1[0] as number, s[p] as number, mode);
        break;
      default:
        for (let p = k * R; p < end; p++) acc1[0] = combine(kind, acc1[0] as number, s[p] as number, mode);
    }
    o[k] = acc1[0] as number;
  }
  return { type, shape: outShape, data: out };
}

type Mode = "float" | "int" | "bool";

function combine(kind: ReducerKind, a: number, b: number, mode: Mode = "float"): number {
  switch (kind) {
    case "add":
      return mode === "bool" ? a | b : a + b;
    case "mul":
      return mode === "bool" ? a & b : mode === "int" ? Math.imul(a, b) : a * b;
    case "max":
      return Number.isNaN(a) || Number.isNaN(b)
        ? Number.NaN
        : a > b
          ? a
          : b === a && b === 0
            ? Object.is(a, -0)
              ? b
              : a
            : b;
    case "min":
      return Number.isNaN(a) || Number.isNaN(b)
        ? Number.NaN
        : a < b
          ? a
          : b === a && b === 0
            ? Object.is(a, -0)
              ? a
              : b
            : b;
    case "and":
      return a & b;
    case "or":
      return a | b;
    case "xor":
      return a ^ b;
    default:
      return Number.NaN;
  }
}

function combineBig(kind: ReducerKind, a: bigint, b: bigint): bigint {
  switch (kind) {
    case "add":
      return a + b;
    case "mul":
      return a * b;
    case "max":
      return a > b ? a : b;
    case "min":
      return a < b ? a : b;
    case "and":
      return a & b;
    case "or":
      return a | b;
    default:
      return a ^ b;
  }
}
