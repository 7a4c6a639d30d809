import {
  type DataAlloc,
  type NDArray,
  type TypedArray,
  allocData,
  elementCount,
  slotsPerElement,
  strides,
} from "../array.ts";
import { fastEncodeBf16 as encodeBf16, fastEncodeF16 as encodeF16 } from "../elem/half-bits.ts";
import { executeFailed } from "./errors.ts";
import { copyLoopFor, mergeAxes, rowCopyFor } from "./strided-copy.ts";
import { wordView } from "./word-view.ts";

/**
 * The data-movement ops. They all reduce to one strided copy: output element (i0, i1, ...)
 * reads input slot `offset + sum(ik * step[k])`, where steps can be 0 (broadcast), negative
 * (reverse) or scaled (slice strides). The elements move as words (word-view.ts), their axes
 * merged where they are consecutive (mergeAxes), by a loop per storage class (strided-copy.ts).
 * `alloc`, where given, supplies the output storage (a plan's pool).
 */
export function stridedCopy(
  src: NDArray,
  offset: number,
  step: readonly number[],
  outShape: readonly number[],
  alloc: DataAlloc = allocData,
): NDArray {
  const n = elementCount(outShape);
  const out = alloc(src.type, n);
  if (n > 0) {
    const from = wordView(src.data);
    const words = (slotsPerElement(src.type) * src.data.BYTES_PER_ELEMENT) / from.BYTES_PER_ELEMENT;
    const merged =
      words === 1 ? mergeAxes(step, outShape) : mergeAxes([...step.map((s) => s * words), 1], [...outShape, words]);
    copyLoopFor(from, 1)(from, wordView(out), offset * words, merged.step, merged.shape);
  }
  return { type: src.type, shape: [...outShape], data: out };
}

export { mergeAxes };

export function broadcastInDim(x: NDArray, dims: number[], outShape: number[], alloc?: DataAlloc): NDArray {
  return stridedCopy(x, 0, broadcastSteps(x, dims, outShape), outShape, alloc);
}

/** The source step along each output axis of broadcast_in_dim (0 on broadcast axes); checks the shapes fit. */
export function broadcastSteps(x: NDArray, dims: number[], outShape: number[]): number[] {
  const inStrides = strides(x.shape);
  const step = outShape.map(() => 0);
  dims.forEach((d, i) => {
    const size = x.shape[i] as number;
    if (size !== 1 && size !== outShape[d]) {
      throw executeFailed("broadcast_in_dim", `operand dimension ${i} (${size}) does not fit result dimension ${d}`);
    }
    step[d] = size === 1 ? 0 : (inStrides[i] as number);
  });
  return step;
}

/**
 * Whether broadcast_in_dim only adds axes of size 1: the operand's axes keep their order and
 * sizes, so the result is the operand's elements in the same order.
 */
export function insertsUnitAxes(
  inShape: readonly number[],
  dims: readonly number[],
  outShape: readonly number[],
): boolean {
  for (let i = 0; i < dims.length; i++) {
    if (i > 0 && (dims[i] as number) <= (dims[i - 1] as number)) return false;
    if (outShape[dims[i] as number] !== inShape[i]) return false;
  }
  for (let d = 0; d < outShape.length; d++) if (!dims.includes(d) && outShape[d] !== 1) return false;
  return true;
}

export function sameDims(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let d = 0; d < a.length; d++) if (a[d] !== b[d]) return false;
  return true;
}

/** Row-major reshape shares the storage: arrays are immutable once produced. */
export function reshape(x: NDArray, outShape: number[]): NDArray {
  if (elementCount(outShape) !== elementCount(x.shape)) {
    throw executeFailed("reshape", `cannot reshape [${x.shape}] to [${outShape}]`);
  }
  return { type: x.type, shape: [...outShape], data: x.data };
}

export function transpose(x: NDArray, perm: number[], alloc?: DataAlloc): NDArray {
  // The identity permutation (reduce over trailing axes asks for it) shares the storage.
  if (perm.every((p, i) => p === i)) return { type: x.type, shape: [...x.shape], data: x.data };
  const st = strides(x.shape);
  return stridedCopy(
    x,
    0,
    perm.map((p) => st[p] as number),
    perm.map((p) => x.shape[p] as number),
    alloc,
  );
}

export function slice(x: NDArray, start: number[], limit: number[], step: number[], alloc?: DataAlloc): NDArray {
  const st = strides(x.shape);
  // Integer division, so the shape holds int32s (a division's quotient is a double in JavaScriptCore).
  const outShape = start.map((s, d) => {
    const span = (limit[d] as number) - s;
    const k = step[d] as number;
    return span <= 0 ? 0 : ((span + k - 1) / k) | 0;
  });
  let offset = 0;
  start.forEach((s, d) => {
    offset += s * (st[d] as number);
  });
  return stridedCopy(
    x,
    offset,
    step.map((k, d) => k * (st[d] as number)),
    outShape,
    alloc,
  );
}

export function reverse(x: NDArray, dims: number[], alloc?: DataAlloc): NDArray {
  const st = strides(x.shape);
  let offset = 0;
  const step = st.slice();
  for (const d of dims) {
    offset += ((x.shape[d] as number) - 1) * (st[d] as number);
    step[d] = -(st[d] as number);
  }
  return elementCount(x.shape) === 0 ? x : stridedCopy(x, offset, step, x.shape, alloc);
}

/** Start indices clamped so the slice stays inside the operand (spec of dynamic_slice). */
export function clampStarts(x: NDArray, starts: number[], sizes: number[]): number[] {
  const out = new Array<number>(starts.length);
  for (let d = 0; d < starts.length; d++)
    out[d] = Math.min(Math.max(starts[d] as number, 0), (x.shape[d] as number) - (sizes[d] as number));
  return out;
}

export function dynamicSlice(x: NDArray, starts: number[], sizes: number[], alloc?: DataAlloc): NDArray {
  checkSliceSizes(x, sizes);
  const begin = clampStarts(x, starts, sizes);
  return slice(
    x,
    begin,
    begin.map((b, d) => b + (sizes[d] as number)),
    sizes.map(() => 1),
    alloc,
  );
}

export function checkSliceSizes(x: NDArray, sizes: number[]): void {
  if (sizes.length !== x.shape.length || sizes.some((s, d) => s < 0 || s > (x.shape[d] as number))) {
    throw executeFailed("dynamic_slice", `slice sizes [${sizes}] do not fit operand [${x.shape}]`);
  }
}

/** Every element of the result is written, so `alloc` may hand back stale storage. */
export function concatenate(inputs: NDArray[], dim: number, alloc: DataAlloc = allocData): NDArray {
  const first = inputs[0] as NDArray;
  const slots = slotsPerElement(first.type);
  const outShape = [...first.shape];
  outShape[dim] = inputs.reduce((s, x) => s + (x.shape[dim] as number), 0);
  const out = alloc(first.type, elementCount(outShape));
  const outer = first.shape.slice(0, dim).reduce((a, b) => a * b, 1);
  const rowOut = elementCount(outShape.slice(dim)) * slots;
  let col = 0;
  for (const x of inputs) {
    const row = elementCount(x.shape.slice(dim)) * slots;
    // Short rows (channels of NHWC maps) by a loop: a subarray per row costs more than its copy.
    if (row < 64 && outer > 1) rowCopyFor(x.data)(x.data, out, outer, row, rowOut, col);
    else
      for (let r = 0; r < outer; r++) {
        (out as Float64Array).set((x.data as Float64Array).subarray(r * row, (r + 1) * row), r * rowOut + col);
      }
    col += row;
  }
  return { type: first.type, shape: outShape, data: out };
}

/** pad with negative edges (cropping) and interior padding. */
export function pad(x: NDArray, value: NDArray, low: number[], high: number[], interior: number[]): NDArray {
  const rank = x.shape.length;
  const slots = slotsPerElement(x.type);
  // First pad with the non-negative parts, then crop the negative edges with a slice.
  const lo = low.map((l) => Math.max(l, 0));
  const hi = high.map((h) => Math.max(h, 0));
  const grown = x.shape.map((s, d) =>
    s === 0
      ? (lo[d] as number) + (hi[d] as number)
      : (lo[d] as number) + (hi[d] as number) + s + (s - 1) * (interior[d] as number),
  );
  const n = elementCount(grown);
  const out = allocData(x.type, n) as Float64Array;
  const v = value.data as Float64Array;
  if (slots === 1) out.fill(v[0] as number);
  else
    for (let i = 0; i < n; i++) {
      out[2 * i] = v[0] as number;
      out[2 * i + 1] = v[1] as number;
    }
  const ost = strides(grown);
  const count = elementCount(x.shape);
  const idx = new Array<number>(rank).fill(0);
  const src = x.data as Float64Array;
  for (let i = 0; i < count; i++) {
    let off = 0;
    for (let d = 0; d < rank; d++) {
      off += ((lo[d] as number) + (idx[d] as number) * ((interior[d] as number) + 1)) * (ost[d] as number);
    }
    for (let k = 0; k < slots; k++) out[off * slots + k] = src[i * slots + k] as number;
    for (let d = rank - 1; d >= 0; d--) {
      idx[d] = (idx[d] as number) + 1;
      if ((idx[d] as number) < (x.shape[d] as number)) break;
      idx[d] = 0;
    }
  }
  const padded: NDArray = { type: x.type, shape: grown, data: out };
  if (low.every((l) => l >= 0) && high.every((h) => h >= 0)) return padded;
  const start = low.map((l) => Math.max(-l, 0));
  const limit = grown.map((g, d) => g - Math.max(-(high[d] as number), 0));
  if (limit.some((l, d) => l < (start[d] as number))) {
    throw executeFailed("pad", "negative padding removes more than the operand");
  }
  return slice(
    padded,
    start,
    limit,
    start.map(() => 1),
  );
}

/** `alloc`, where given, supplies the output storage for one-slot types (every element written). */
export function iota(type: NDArray["type"], shape: number[], dim: number, alloc?: DataAlloc): NDArray {
  const n = elementCount(shape);
  const slots = slotsPerElement(type);
  if (slots === 1 && n > 0) {
    const out = (alloc ?? allocData)(type, n);
    const size = shape[dim] as number;
    let inner = 1;
    for (let d = dim + 1; d < shape.length; d++) inner *= shape[d] as number;
    const outer = n / (size * inner);
    if (
      inner === 1 &&
      !(out instanceof BigInt64Array || out instanceof BigUint64Array) &&
      type !== "f16" &&
      type !== "bf16"
    ) {
      // Counting along the last axis (top_k's positions): one line, then copies of it.
      const line = out as Int32Array;
      for (let v = 0; v < size; v++) line[v] = v;
      for (let at = size; at < n; at += size) line.copyWithin(at, 0, size);
      return { type, shape: [...shape], data: out };
    }
    // Each value encoded once, then written in runs: (outer, value, inner).
    const values: (number | bigint)[] = [];
    for (let v = 0; v < size; v++) {
      writeIota(out, 0, v, type);
      values.push(out[0] as number | bigint);
    }
    const o = out as unknown as { [i: number]: number | bigint };
    let w = 0;
    for (let a = 0; a < outer; a++)
      for (let v = 0; v < size; v++) {
        const x = values[v] as number | bigint;
        for (let k = 0; k < inner; k++) o[w++] = x;
      }
    return { type, shape: [...shape], data: out };
  }
  const out = allocData(type, n);
  const st = strides(shape);
  const stride = st[dim] as number;
  const size = shape[dim] as number;
  for (let i = 0; i < n; i++) {
    const v = Math.floor(i / stride) % size;
    writeIota(out, i * slots, v, type);
  }
  return { type, shape: [...shape], data: out };
}

function writeIota(out: TypedArray, at: number, v: number, type: NDArray["type"]): void {
  if (out instanceof BigInt64Array || out instanceof BigUint64Array) out[at] = BigInt(v);
  else if (type === "f16" || type === "bf16") out[at] = encodeForIota(type, v);
  else out[at] = v;
}

function encodeForIota(type: NDArray["type"], v: number): number {
  return type === "f16" ? encodeF16(v) : encodeBf16(v);
}
