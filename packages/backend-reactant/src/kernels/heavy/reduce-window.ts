/**
 * stablehlo.reduce_window with base / window dilations and (possibly negative) padding, for
 * any number of operands. Padding and base-dilation holes are skipped rather than reduced as
 * copies of the init value (XLA's behaviour; identical whenever init is the reducer's
 * identity). Single-operand add / mul / max / min / logical reducers take a fast loop that,
 * for channels-last pooling, runs over the untouched innermost axis contiguously.
 */
import {
  type NDArray,
  type RegionInfo,
  type Scalar,
  alloc,
  elementCount,
  slotsPerElement,
  strides,
} from "../../array.ts";
import { type ScalarReader, scalarReader, scalarWriter } from "./element-io.ts";
import { invalid } from "./errors.ts";
import { bitExact } from "./permute.ts";
import { poolNhwc } from "./pool-nhwc.ts";
import { batchedRegionReduce } from "./reduce-window-batched.ts";
import { type SpanCombine, spanCombiner } from "./span-reducer.ts";
import {
  type WindowAttributes,
  type WindowGeometry,
  forEachTap,
  nextIndex,
  windowGeometry,
} from "./window-geometry.ts";

export type ReduceWindowAttributes = WindowAttributes;

const OP = "reduce_window";
/** Below this many outputs a batched region call per tap costs more than scalar calls. */
const BATCHED_MIN_OUTPUTS = 8;

/** reduceWindow(inputs, initValues, attrs, body): one result per input. */
export function reduceWindow(
  inputs: readonly NDArray[],
  initValues: readonly NDArray[],
  attrs: ReduceWindowAttributes,
  body: RegionInfo,
): NDArray[] {
  if (inputs.length === 0 || inputs.length !== initValues.length)
    throw invalid(OP, `needs one init value per input (got ${inputs.length} inputs, ${initValues.length} init values)`);
  const first = inputs[0] as NDArray;
  for (const input of inputs)
    if (input.shape.join() !== first.shape.join()) throw invalid(OP, "all inputs must have the same shape");
  for (const init of initValues) if (elementCount(init.shape) !== 1) throw invalid(OP, "init values must be scalars");
  const g = windowGeometry(OP, first.shape, attrs);
  const results = initValues.map((init) => filledWith(init, g.outShape));
  if (elementCount(g.outShape) === 0) return results;
  const kind = body.reducer;
  const pooled =
    inputs.length === 1 &&
    (kind === "max" || kind === "min") &&
    poolNhwc(
      g,
      first.data,
      (results[0] as NDArray).data,
      kind,
      first.type === "f16" || first.type === "bf16" ? first.type : undefined,
    );
  const fast = inputs.length === 1 && !pooled ? spanCombiner(body.reducer, first.type) : null;
  if (pooled) return results;
  if (fast) fastReduce(g, first, results[0] as NDArray, fast);
  else if (elementCount(g.outShape) >= BATCHED_MIN_OUTPUTS) batchedRegionReduce(g, inputs, results, body);
  else regionReduce(g, inputs, results, body);
  return results;
}

/** An array of `shape` with every element equal to the scalar `value`. */
export function filledWith(value: NDArray, shape: readonly number[]): NDArray {
  const out = alloc(value.type, shape);
  const source = bitExact(value.data, slotsPerElement(value.type));
  const slots = source.slots;
  const data = bitExact(out.data, 1).view as unknown as { [i: number]: unknown };
  const count = elementCount(shape);
  for (let i = 0; i < count; i++) for (let q = 0; q < slots; q++) data[i * slots + q] = source.view[q];
  return out;
}

function fastReduce(g: WindowGeometry, input: NDArray, out: NDArray, combine: SpanCombine): void {
  const rank = g.outShape.length;
  const last = rank - 1;
  // An innermost axis the window leaves alone (size 1, stride 1, no padding or dilation) is
  // looped contiguously: NHWC pooling then streams over channels.
  const passThrough =
    rank > 0 &&
    g.window[last] === 1 &&
    g.outShape[last] === g.inShape[last] &&
    (g.tables[last] as Int32Array).every((x, i) => x === i);
  const inner = passThrough ? (g.outShape[last] as number) : 1;
  const outerRank = passThrough ? last : rank;
  const outer: WindowGeometry = {
    ...g,
    outShape: g.outShape.slice(0, outerRank),
    window: g.window.slice(0, outerRank),
    tables: g.tables.slice(0, outerRank),
  };
  const inStrides = strides(g.inShape).slice(0, outerRank);
  const index = new Array<number>(outerRank).fill(0);
  const tap = new Array<number>(outerRank).fill(0);
  const outData = out.data;
  const inData = input.data;
  let base = 0;
  do {
    const target = base;
    forEachTap(outer, index, inStrides, tap, (offset) => combine(outData, target, inData, offset, inner));
    base += inner;
  } while (nextIndex(index, outer.outShape));
}

function regionReduce(g: WindowGeometry, inputs: readonly NDArray[], results: NDArray[], body: RegionInfo): void {
  const n = inputs.length;
  const readers: ScalarReader[] = inputs.map(scalarReader);
  const resultReaders = results.map(scalarReader);
  const writers = results.map(scalarWriter);
  const inStrides = strides(g.inShape);
  const index = new Array<number>(g.outShape.length).fill(0);
  const tap = new Array<number>(g.outShape.length).fill(0);
  let linear = 0;
  do {
    let acc: Scalar[] = resultReaders.map((read) => read(linear));
    forEachTap(g, index, inStrides, tap, (offset) => {
      const args = new Array<Scalar>(2 * n);
      for (let k = 0; k < n; k++) {
        args[k] = acc[k] as Scalar;
        args[n + k] = (readers[k] as ScalarReader)(offset);
      }
      acc = body.fn(args);
    });
    for (let k = 0; k < n; k++) writers[k]?.(linear, acc[k] as Scalar);
    linear++;
  } while (nextIndex(index, g.outShape));
}
