/**
 * stablehlo.convolution in full generality. Operands are brought to canonical layouts (input
 * [N, spatial..., C], kernel [spatial..., I, O], output [N, spatial..., O]; JAX's NHWC / HWIO
 * already are, so no copy), then each group's output is im2col x kernel-matrix. Float types
 * run the GEMM through BLAS (f16 / bf16 in f32, rounded once at the end, like XLA's CPU
 * backend); integers, i1 and complex multiply the same im2col matrices through dotGeneral's
 * exact paths.
 */
import {
  type ElemType,
  type NDArray,
  type TypedArray,
  alloc,
  isComplexType,
  isFloatType,
  slotsPerElement,
} from "../../array.ts";
import { gemm } from "../../blas/index.ts";
import { type ConvAttributes, type ConvGeometry, convGeometry } from "./conv-attributes.ts";
import { depthwise2d, isDepthwise2d } from "./depthwise.ts";
import { dotGeneral } from "./dot-general.ts";
import { fromFloats, isF8, storeFloats, toFloat32, toFloat32Scratch, toFloat64 } from "./element-io.ts";
import { unsupported } from "./errors.ts";
import { im2col, tapTables } from "./im2col.ts";
import { type Im2colWorkspace, im2colWorkspace } from "./im2col-wasm.ts";
import { isIdentity, permuteData, product, sameKind } from "./permute.ts";
import { reverseAxes } from "./reverse-axes.ts";

export type { ConvAttributes, ConvDimensionNumbers } from "./conv-attributes.ts";

const OP = "convolution";
/** im2col rows are produced in chunks of about this many elements to bound scratch memory. */
const CHUNK_ELEMENTS = 1 << 20;

/** Allocates a float result buffer (the engine passes its arena's pool); contents may be stale. */
export type FloatAlloc = (count: number, f64: boolean) => Float32Array | Float64Array;

const freshFloats: FloatAlloc = (count, f64) => (f64 ? new Float64Array(count) : new Float32Array(count));

/** Allocates result storage for `count` elements of `type` (the engine passes its arena's pool). */
export type DataAlloc = (type: ElemType, count: number) => TypedArray;

const freshData: DataAlloc = (type, count) => alloc(type, [count]).data;

/**
 * Scratch kept between calls (as the im2col rows are): a narrow float operand widened to f32,
 * and the f32 result a narrow float output is rounded from. Both are dropped before the call
 * returns, and kernels run one at a time on this thread.
 */
let widened = new Float32Array(0);
let narrowOut = new Float32Array(0);

function widenedScratch(a: NDArray): Float32Array {
  const n = product(a.shape);
  if (widened.length < n) widened = new Float32Array(n);
  return widened;
}

const scratchFloats: FloatAlloc = (count, f64) => {
  if (f64) return new Float64Array(count);
  if (narrowOut.length < count) narrowOut = new Float32Array(count);
  return narrowOut.subarray(0, count);
};

/**
 * One op's kernel as the f32 GEMM reads it (widened, laid out, reversed), kept while the weight's
 * storage keeps its version (`versionOf`: plan/arena.ts Arena.version): an f16 convnet widened
 * every layer's weights on every call.
 */
export interface KernelCache {
  source: TypedArray | null;
  version: number;
  kernel: Float32Array;
}

export function kernelCache(): KernelCache {
  return { source: null, version: Number.NaN, kernel: new Float32Array(0) };
}

/** convolution(lhs, rhs) with the given attributes; `resultType` defaults to the lhs type. */
export function convolution(
  lhs: NDArray,
  rhs: NDArray,
  attrs: ConvAttributes,
  resultType: ElemType = lhs.type,
  allocFloats: FloatAlloc = freshFloats,
  allocData: DataAlloc = freshData,
  kept?: KernelCache,
  versionOf?: (data: TypedArray) => number,
): NDArray {
  const g = convGeometry(lhs, rhs, attrs);
  if (product(g.resultShape) === 0) return alloc(resultType, g.resultShape);
  if (isF8(lhs.type) || isF8(rhs.type) || isF8(resultType)) throw unsupported(OP, "f8 element types are not supported");
  const d = attrs.dims;
  const lhsPerm = [d.inputBatch, ...d.inputSpatial, d.inputFeature];
  const rhsPerm = [...d.kernelSpatial, d.kernelInputFeature, d.kernelOutputFeature];
  const kernelShape = rhsPerm.map((a) => rhs.shape[a] as number);
  const reversedAxes = g.reversal.flatMap((r, i) => (r ? [i] : []));
  const canonical = (data: TypedArray, a: NDArray, perm: number[], slots: number) =>
    permuteData(data, a.shape, perm, slots);

  let outCanonical: TypedArray;
  const realFloat = isFloatType(resultType) && !isComplexType(lhs.type) && !isComplexType(rhs.type);
  if (realFloat) {
    const inF32 = resultType !== "f64" && lhs.type !== "f64" && rhs.type !== "f64";
    if (
      inF32 &&
      g.spatialRank === 2 &&
      product(kernelShape) > 0 &&
      usesIm2col(g) &&
      isIdentity(lhsPerm) &&
      isIdentity(outPermFor(g, d))
    ) {
      const version = kept && versionOf ? versionOf(rhs.data) : Number.NaN;
      let kernel: Float32Array;
      if (kept && kept.source === rhs.data && kept.version === version) kernel = kept.kernel;
      else {
        kernel = reverseAxes(canonical(toFloat32(rhs, OP), rhs, rhsPerm, 1), kernelShape, reversedAxes) as Float32Array;
        if (kept) {
          // A kernel that is the weight's own storage (f32, laid out as used) is not kept: the
          // cache would hold nothing the next call could not read as cheaply.
          kept.source = kernel === rhs.data ? null : rhs.data;
          kept.version = version;
          kept.kernel = kernel;
        }
      }
      const result = workspaceConvolution(g, lhs, kernel, resultType, allocFloats, allocData);
      if (result) return result;
    }
    const lhsFloats = inF32 ? toFloat32Scratch(lhs, widenedScratch(lhs), OP) : toFloat64(lhs, OP);
    const input = canonical(lhsFloats, lhs, lhsPerm, 1) as Float32Array | Float64Array;
    const kernelData = canonical(inF32 ? toFloat32(rhs, OP) : toFloat64(rhs, OP), rhs, rhsPerm, 1);
    const kernel = reverseAxes(kernelData, kernelShape, reversedAxes) as Float32Array | Float64Array;
    const narrow = inF32 && resultType !== "f32";
    outCanonical = floatConvolution(g, input, kernel, narrow ? scratchFloats : allocFloats);
    if (narrow && isIdentity(outPermFor(g, d))) {
      // Rounded straight into the result's storage: the f32 products were scratch.
      const data = allocData(resultType, outCanonical.length);
      storeFloats(resultType, outCanonical as Float32Array, data, OP);
      return { type: resultType, shape: g.resultShape, data };
    }
  } else {
    const slots = slotsPerElement(lhs.type);
    const input = canonical(lhs.data, lhs, lhsPerm, slots);
    const kernel = reverseAxes(
      canonical(rhs.data, rhs, rhsPerm, slotsPerElement(rhs.type)),
      kernelShape,
      reversedAxes,
      slotsPerElement(rhs.type),
    );
    outCanonical = exactConvolution(g, lhs.type, input, rhs.type, kernel, resultType);
  }
  const outPerm = outPermFor(g, d);
  const canonicalShape = [g.outBatch, ...g.outSpatial, g.outChannels];
  const slots = slotsPerElement(resultType);
  const laidOut = permuteData(outCanonical, canonicalShape, outPerm, realFloat ? 1 : slots);
  const data = realFloat ? fromFloats(resultType, laidOut as Float32Array | Float64Array, OP) : laidOut;
  return { type: resultType, shape: g.resultShape, data };
}

/** The permutation from the canonical [N, spatial..., O] result to the requested layout. */
function outPermFor(g: ConvGeometry, d: ConvAttributes["dims"]): number[] {
  const outPerm = new Array<number>(g.spatialRank + 2);
  outPerm[d.outputBatch] = 0;
  outPerm[d.outputFeature] = g.spatialRank + 1;
  d.outputSpatial.forEach((axis, i) => {
    outPerm[axis] = i + 1;
  });
  return outPerm;
}

/** The input batch and channel block group `group` reads for output batch `n`. */
function groupSource(g: ConvGeometry, group: number, n: number): { batchIndex: number; channelOffset: number } {
  return g.byBatch
    ? { batchIndex: group * g.outBatch + n, channelOffset: 0 }
    : { batchIndex: n, channelOffset: group * g.groupInChannels };
}

function isPointwise(g: ConvGeometry): boolean {
  for (let s = 0; s < g.spatialRank; s++) {
    if (g.kernelSpatial[s] !== 1 || g.strides[s] !== 1 || g.padLow[s] !== 0 || g.lhsDilation[s] !== 1) return false;
    if (g.outSpatial[s] !== g.inSpatial[s]) return false;
  }
  return true;
}

/**
 * im2col scratch, kept between calls: allocating (and first touching) a few MB per layer costs
 * about as much as filling it. Safe to share: kernels run one at a time on this thread and the
 * GEMM that reads it returns before the next fill.
 */
let colF32 = new Float32Array(0);
let colF64 = new Float64Array(0);

function colScratch(f64: boolean, length: number): Float32Array | Float64Array {
  if (f64) {
    if (colF64.length < length) colF64 = new Float64Array(length);
    return colF64;
  }
  if (colF32.length < length) colF32 = new Float32Array(length);
  return colF32;
}

/** im2col rows per chunk: about CHUNK_ELEMENTS elements, within one image's positions. */
function chunkRows(g: ConvGeometry, depth: number): number {
  const positions = product(g.outSpatial);
  return Math.max(1, Math.min(positions, Math.floor(CHUNK_ELEMENTS / Math.max(1, depth))));
}

/** Whether the convolution takes im2col + GEMM (not the pointwise or depthwise paths). */
function usesIm2col(g: ConvGeometry): boolean {
  return !isPointwise(g) && !isDepthwise2d(g);
}

/**
 * Every group's im2col rows times its kernel columns into `out` ([N, positions, O]), the GEMM
 * reading the rows in place. A chunk of rows runs across image boundaries (one group's rows of
 * consecutive images are consecutive rows of `out`), so a batch makes few large GEMMs instead
 * of one per image; a larger m only splits the rows among the library's kernels and threads,
 * each element still the same sum in the same order.
 */
function im2colProducts(
  g: ConvGeometry,
  ws: Im2colWorkspace,
  kernel: Float32Array | Float64Array,
  out: Float32Array | Float64Array,
): void {
  const positions = product(g.outSpatial);
  const depth = product(g.kernelSpatial) * g.groupInChannels;
  const total = g.outBatch * positions;
  const rowsPerChunk = batchChunkRows(g, depth);
  const O = g.outChannels;
  for (let group = 0; group < g.groups; group++) {
    for (let start = 0; start < total; start += rowsPerChunk) {
      const end = Math.min(total, start + rowsPerChunk);
      for (let r = start; r < end; ) {
        const n = Math.floor(r / positions);
        const position = r - n * positions;
        const stop = Math.min(end, (n + 1) * positions);
        const src = groupSource(g, group, n);
        ws.fill(src.batchIndex, src.channelOffset, g.groupInChannels, position, position + stop - r, r - start);
        r = stop;
      }
      groupGemm(g, group, end - start, ws.col, 0, depth, kernel, out, start * O + group * g.groupOutChannels);
    }
  }
}

/** `m` rows of input values (at aOffset, lda apart) times one group's kernel columns, into out at cOffset. */
function groupGemm(
  g: ConvGeometry,
  group: number,
  m: number,
  a: Float32Array | Float64Array,
  aOffset: number,
  lda: number,
  kernel: Float32Array | Float64Array,
  out: Float32Array | Float64Array,
  cOffset: number,
): void {
  gemm({
    m,
    n: g.groupOutChannels,
    k: product(g.kernelSpatial) * g.groupInChannels,
    a,
    aOffset,
    lda,
    transA: false,
    b: kernel,
    bOffset: group * g.groupOutChannels,
    ldb: g.outChannels,
    transB: false,
    c: out,
    cOffset,
    ldc: g.outChannels,
    accumulate: false,
  });
}

/** im2col rows per chunk across the batch: about CHUNK_ELEMENTS elements. */
function batchChunkRows(g: ConvGeometry, depth: number): number {
  const total = g.outBatch * product(g.outSpatial);
  return Math.max(1, Math.min(total, Math.floor(CHUNK_ELEMENTS / Math.max(1, depth))));
}

/**
 * An f32-computed 2-d convolution on canonical layouts whose input and result stay in the
 * workspace: a bf16 input widened there, a narrow result rounded from there into `allocData`'s
 * storage. Null where the workspace is unavailable (the general path then runs).
 */
function workspaceConvolution(
  g: ConvGeometry,
  lhs: NDArray,
  kernel: Float32Array,
  resultType: ElemType,
  allocFloats: FloatAlloc,
  allocData: DataAlloc,
): NDArray | null {
  const depth = product(g.kernelSpatial) * g.groupInChannels;
  const count = g.outBatch * product(g.outSpatial) * g.outChannels;
  const narrow = resultType !== "f32";
  const inputCount = product(lhs.shape);
  const tables = tapTables(g);
  const ws = im2colWorkspace(g, tables, false, inputCount, batchChunkRows(g, depth), depth, narrow ? count : 0);
  if (!ws) return null;
  const inputBits = lhs.data.length === inputCount ? lhs.data : lhs.data.subarray(0, inputCount);
  if (lhs.type === "bf16") ws.widenBf16(inputBits as Uint16Array);
  else if (lhs.type === "f16") ws.widenF16(inputBits as Uint16Array);
  else ws.input.set(toFloat32Scratch(lhs, widenedScratch(lhs), OP));
  // Every element is written by a GEMM with beta = 0, so stale contents do not matter.
  const out = narrow ? ws.output : (allocFloats(count, false) as Float32Array);
  im2colProducts(g, ws, kernel, out);
  if (!narrow) return { type: resultType, shape: g.resultShape, data: out };
  const data = allocData(resultType, count);
  if (resultType === "bf16") ws.narrowBf16(data as Uint16Array);
  else if (resultType === "f16") ws.narrowF16(data as Uint16Array);
  else storeFloats(resultType, out, data, OP);
  return { type: resultType, shape: g.resultShape, data };
}

function floatConvolution(
  g: ConvGeometry,
  input: Float32Array | Float64Array,
  kernel: Float32Array | Float64Array,
  allocFloats: FloatAlloc,
): Float32Array | Float64Array {
  const positions = product(g.outSpatial);
  const taps = product(g.kernelSpatial);
  const depth = taps * g.groupInChannels;
  const f64 = input instanceof Float64Array;
  // Every element is written by a GEMM with beta = 0 below, so stale contents do not matter.
  const out = allocFloats(g.outBatch * positions * g.outChannels, f64);
  const O = g.outChannels;
  const groupProduct = (
    group: number,
    m: number,
    a: Float32Array | Float64Array,
    aOffset: number,
    lda: number,
    cOffset: number,
  ): void => groupGemm(g, group, m, a, aOffset, lda, kernel, out, cOffset);
  if (isPointwise(g)) {
    // A 1x1 stride-1 convolution is a plain matrix product over the input as stored, and the
    // output batches of one group are contiguous rows of both input and output.
    for (let group = 0; group < g.groups; group++) {
      const src = groupSource(g, group, 0);
      groupProduct(
        group,
        g.outBatch * positions,
        input,
        src.batchIndex * positions * g.inChannels + src.channelOffset,
        g.inChannels,
        group * g.groupOutChannels,
      );
    }
    return out;
  }
  const tables = tapTables(g);
  if (isDepthwise2d(g)) {
    depthwise2d(g, tables, input, kernel, out);
    return out;
  }
  const ws = depth > 0 ? im2colWorkspace(g, tables, f64, input.length, batchChunkRows(g, depth), depth) : null;
  if (ws) {
    ws.input.set(input);
    im2colProducts(g, ws, kernel, out);
    return out;
  }
  const rowsPerChunk = chunkRows(g, depth);
  const col = colScratch(f64, rowsPerChunk * depth);
  for (let group = 0; group < g.groups; group++) {
    for (let n = 0; n < g.outBatch; n++) {
      const src = groupSource(g, group, n);
      for (let row = 0; row < positions; row += rowsPerChunk) {
        const rowEnd = Math.min(positions, row + rowsPerChunk);
        im2col(g, tables, { data: input, slots: 1, ...src, channelCount: g.groupInChannels }, row, rowEnd, col);
        groupProduct(
          group,
          rowEnd - row,
          col,
          0,
          Math.max(1, depth),
          (n * positions + row) * O + group * g.groupOutChannels,
        );
      }
    }
  }
  return out;
}

/** Integer, i1 and complex convolution: im2col, then dotGeneral's exact arithmetic per group. */
function exactConvolution(
  g: ConvGeometry,
  inputType: ElemType,
  input: TypedArray,
  kernelType: ElemType,
  kernel: TypedArray,
  resultType: ElemType,
): TypedArray {
  const positions = product(g.outSpatial);
  const taps = product(g.kernelSpatial);
  const depth = taps * g.groupInChannels;
  const inSlots = slotsPerElement(inputType);
  const kSlots = slotsPerElement(kernelType);
  const outSlots = slotsPerElement(resultType);
  const O = g.outChannels;
  const Og = g.groupOutChannels;
  const out = alloc(resultType, [g.outBatch * positions * O]).data;
  const tables = tapTables(g);
  for (let group = 0; group < g.groups; group++) {
    // This group's kernel columns as a dense [depth, Og] matrix.
    const groupKernel = sameKind(kernel, depth * Og * kSlots);
    for (let r = 0; r < depth; r++) {
      const from = (r * O + group * Og) * kSlots;
      groupKernel.set(kernel.subarray(from, from + Og * kSlots) as never, r * Og * kSlots);
    }
    const rhs: NDArray = { type: kernelType, shape: [depth, Og], data: groupKernel };
    for (let n = 0; n < g.outBatch; n++) {
      const col = sameKind(input, positions * depth * inSlots);
      im2col(
        g,
        tables,
        { data: input, slots: inSlots, ...groupSource(g, group, n), channelCount: g.groupInChannels },
        0,
        positions,
        col,
      );
      const lhs: NDArray = { type: inputType, shape: [positions, depth], data: col };
      const product2 = dotGeneral(
        lhs,
        rhs,
        { lhsBatch: [], rhsBatch: [], lhsContracting: [1], rhsContracting: [0] },
        resultType,
      );
      for (let p = 0; p < positions; p++) {
        const to = ((n * positions + p) * O + group * Og) * outSlots;
        out.set(product2.data.subarray(p * Og * outSlots, (p + 1) * Og * outSlots) as never, to);
      }
    }
  }
  return out;
}
