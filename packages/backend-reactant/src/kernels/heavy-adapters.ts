import type { DataAlloc, NDArray, TypedArray } from "../array.ts";
import type { Attr, AttrObject, Op } from "@xlaserve/stablehlo";
import { isTensorType } from "@xlaserve/stablehlo";
import { type Arena, dataTaker, lastTypeTaker, takeData } from "../plan/arena.ts";
import type { InPlaceKernel } from "../plan/ownership.ts";
import { type Kernel, type KernelTools, type PrefixSortKernel, runBlock } from "../plan/program.ts";
import { convolution, kernelCache } from "./heavy/convolution.ts";
import { dotGeneralFor } from "./heavy/dot-general.ts";
import { type FftType, fft } from "./heavy/fft.ts";
import { gather } from "./heavy/gather.ts";
import { reduceWindow } from "./heavy/reduce-window.ts";
import { scatter } from "./heavy/scatter.ts";
import { scatterUpdateKind } from "./heavy/scatter-rows.ts";
import { selectAndScatter } from "./heavy/select-and-scatter.ts";
import { comparatorKey } from "./heavy/comparator-key.ts";
import { sort } from "./heavy/sort.ts";
import { type TransposeKind, triangularSolve } from "./heavy/triangular-solve.ts";
import { reducerKind, regionInfoFor } from "./region.ts";

/**
 * Glue between the plan and the heavy kernels (kernels/heavy/, the kernels teammate's area):
 * converts the spec-named attributes (ir.ts) into each kernel's attribute object once, at
 * compile time.
 */

const nums = (v: Attr | undefined): number[] | undefined =>
  Array.isArray(v) ? v.map((x) => (typeof x === "boolean" ? (x ? 1 : 0) : Number(x))) : undefined;
const bools = (v: Attr | undefined): boolean[] | undefined =>
  Array.isArray(v) ? v.map((x) => x === true || x === 1) : undefined;
const pairs = (v: Attr | undefined): [number, number][] | undefined =>
  Array.isArray(v) ? v.map((p) => [Number((p as Attr[])[0]), Number((p as Attr[])[1])] as [number, number]) : undefined;
const obj = (v: Attr | undefined): AttrObject => (v ?? {}) as AttrObject;

function resultElem(op: Op, i = 0) {
  const t = op.resultTypes[i];
  return isTensorType(t) ? t.elem : undefined;
}

const takeF32 = dataTaker("f32");
const takeF64 = dataTaker("f64");

/** f32 / f64 GEMM outputs from the plan's pool. */
function floatOutputs(arena: Arena) {
  return (count: number, f64: boolean) => (f64 ? takeF64 : takeF32)(arena, count) as Float32Array | Float64Array;
}

export function dotGeneralKernel(op: Op): Kernel {
  const d = obj(op.attrs.dot_dimension_numbers);
  const dims = {
    lhsBatch: nums(d.lhs_batching_dimensions) ?? [],
    rhsBatch: nums(d.rhs_batching_dimensions) ?? [],
    lhsContracting: nums(d.lhs_contracting_dimensions) ?? [],
    rhsContracting: nums(d.rhs_contracting_dimensions) ?? [],
  };
  const resultType = resultElem(op);
  const dot = dotGeneralFor(dims);
  return ([lhs, rhs], frame) => {
    const l = lhs as NDArray;
    const arena = frame.ctx.arena;
    return [
      dot(
        l,
        rhs as NDArray,
        resultType ?? l.type,
        floatOutputs(arena),
        (data) => arena.version(data),
        (type, count) => takeData(arena, type, count),
      ),
    ];
  };
}

export function convolutionKernel(op: Op): Kernel {
  const d = obj(op.attrs.dimension_numbers);
  const attrs = {
    dims: {
      inputBatch: Number(d.input_batch_dimension),
      inputFeature: Number(d.input_feature_dimension),
      inputSpatial: nums(d.input_spatial_dimensions) ?? [],
      kernelInputFeature: Number(d.kernel_input_feature_dimension),
      kernelOutputFeature: Number(d.kernel_output_feature_dimension),
      kernelSpatial: nums(d.kernel_spatial_dimensions) ?? [],
      outputBatch: Number(d.output_batch_dimension),
      outputFeature: Number(d.output_feature_dimension),
      outputSpatial: nums(d.output_spatial_dimensions) ?? [],
    },
    windowStrides: nums(op.attrs.window_strides),
    padding: pairs(op.attrs.padding),
    lhsDilation: nums(op.attrs.lhs_dilation),
    rhsDilation: nums(op.attrs.rhs_dilation),
    windowReversal: bools(op.attrs.window_reversal),
    featureGroupCount: Number(op.attrs.feature_group_count ?? 1),
    batchGroupCount: Number(op.attrs.batch_group_count ?? 1),
  };
  const resultType = resultElem(op);
  const kept = kernelCache();
  return ([lhs, rhs], frame) => [
    convolution(
      lhs as NDArray,
      rhs as NDArray,
      attrs,
      resultType ?? (lhs as NDArray).type,
      floatOutputs(frame.ctx.arena),
      (type, count) => takeData(frame.ctx.arena, type, count),
      kept,
      (data) => frame.ctx.arena.version(data),
    ),
  ];
}

function windowAttrs(op: Op) {
  return {
    windowDimensions: nums(op.attrs.window_dimensions) ?? [],
    windowStrides: nums(op.attrs.window_strides),
    baseDilations: nums(op.attrs.base_dilations),
    windowDilations: nums(op.attrs.window_dilations),
    padding: pairs(op.attrs.padding),
  };
}

export function reduceWindowKernel(op: Op, tools: KernelTools): Kernel {
  const attrs = windowAttrs(op);
  const [block] = tools.regions;
  const region = op.regions[0];
  if (!block || !region) throw new Error("reduce_window needs a body region");
  const body = regionInfoFor(block, region);
  return (args, frame) => {
    const n = args.length / 2;
    return reduceWindow(args.slice(0, n) as NDArray[], args.slice(n) as NDArray[], attrs, body(frame));
  };
}

export function selectAndScatterKernel(op: Op, tools: KernelTools): Kernel {
  const attrs = windowAttrs(op);
  const [selectBlock, scatterBlock] = tools.regions;
  const [selectRegion, scatterRegion] = op.regions;
  if (!selectBlock || !scatterBlock || !selectRegion || !scatterRegion)
    throw new Error("select_and_scatter needs two regions");
  const select = regionInfoFor(selectBlock, selectRegion);
  const combine = regionInfoFor(scatterBlock, scatterRegion);
  return ([operand, source, init], frame) => [
    selectAndScatter(operand as NDArray, source as NDArray, init as NDArray, attrs, select(frame), combine(frame)),
  ];
}

export function gatherKernel(op: Op): Kernel {
  const d = obj(op.attrs.dimension_numbers);
  const dims = {
    offsetDims: nums(d.offset_dims) ?? [],
    collapsedSliceDims: nums(d.collapsed_slice_dims) ?? [],
    operandBatchingDims: nums(d.operand_batching_dims) ?? [],
    startIndicesBatchingDims: nums(d.start_indices_batching_dims) ?? [],
    startIndexMap: nums(d.start_index_map) ?? [],
    indexVectorDim: Number(d.index_vector_dim ?? 0),
  };
  const sliceSizes = nums(op.attrs.slice_sizes) ?? [];
  const taker = lastTypeTaker();
  return ([operand, indices], frame) => {
    const arena = frame.ctx.arena;
    const take: DataAlloc = (type, count) => taker(type)(arena, count);
    return [gather(operand as NDArray, indices as NDArray, dims, sliceSizes, take)];
  };
}

export function scatterKernel(op: Op, tools: KernelTools): Kernel {
  const d = obj(op.attrs.scatter_dimension_numbers);
  const dims = {
    updateWindowDims: nums(d.update_window_dims) ?? [],
    insertedWindowDims: nums(d.inserted_window_dims) ?? [],
    inputBatchingDims: nums(d.input_batching_dims) ?? [],
    scatterIndicesBatchingDims: nums(d.scatter_indices_batching_dims) ?? [],
    scatterDimsToOperandDims: nums(d.scatter_dims_to_operand_dims) ?? [],
    indexVectorDim: Number(d.index_vector_dim ?? 0),
  };
  const [block] = tools.regions;
  const region = op.regions[0];
  if (!block || !region) throw new Error("scatter needs an update region");
  const update = regionInfoFor(block, region);
  const options = {
    indicesAreSorted: op.attrs.indices_are_sorted === true,
    uniqueIndices: op.attrs.unique_indices === true,
    updateKind: scatterUpdateKind(region, reducerKind(region)),
  };
  const reusing = { ...options, reuseInput: true };
  const takers: ((type: NDArray["type"]) => (arena: Arena, count: number) => TypedArray)[] = [];
  const kernel: InPlaceKernel = (args, frame) => {
    const n = (args.length - 1) / 2;
    const input = args[0] as NDArray;
    const arena = frame.ctx.arena;
    const reuse = n === 1 && kernel.operandDies === true && arena.soleOwner(input.data);
    let result = 0;
    const take: DataAlloc = (type, count) => {
      let taker = takers[result];
      if (taker === undefined) {
        taker = lastTypeTaker();
        takers[result] = taker;
      }
      result++;
      return taker(type)(arena, count);
    };
    return scatter(
      args.slice(0, n) as NDArray[],
      args[n] as NDArray,
      args.slice(n + 1) as NDArray[],
      dims,
      update(frame),
      { ...(reuse ? reusing : options), take },
    );
  };
  return kernel;
}

export function sortKernel(op: Op, tools: KernelTools): Kernel {
  const [block, keyBlock] = tools.regions;
  const region = op.regions[0];
  if (!block || !region) throw new Error("sort needs a comparator region");
  const dimension = Number(op.attrs.dimension ?? -1);
  const isStable = op.attrs.is_stable === true;
  const comparator = regionInfoFor(block, region);
  const key = comparatorKey(region);
  const fastKey = key ? { operand: key.operand, descending: key.descending, totalOrder: key.totalOrder } : null;
  const takers = [lastTypeTaker(), lastTypeTaker()];
  const kernel: PrefixSortKernel = (args, frame) => {
    const rank = (args[0] as NDArray).shape.length;
    const axis = dimension < 0 ? dimension + rank : dimension;
    if (!key || !fastKey) return sort(args as NDArray[], axis, comparator(frame), { isStable });
    let keys = args[key.operand] as NDArray;
    if (key.keyOps.length > 0) {
      if (!keyBlock) throw new Error("sort: the plan has no key region for its comparator");
      // The key function once over each whole operand (the plan's extra region, extraRegions).
      keys = runBlock(
        keyBlock,
        frame,
        (args as NDArray[]).flatMap((a) => [a, a]),
      )[0] as NDArray;
    }
    // A plain float < with NaNs is no strict weak order: the answer then depends on the sorting
    // algorithm, so such a sort stays on the region path it always took.
    if (!fastKey.totalOrder && hasNaN(keys)) return sort(args as NDArray[], axis, comparator(frame), { isStable });
    const prefix = kernel.sortedPrefix;
    const arena = frame.ctx.arena;
    // Results from the pool: the fast-key paths write every position that is read.
    let output = 0;
    const alloc = (type: NDArray["type"], count: number) => {
      const take = (takers[output++] ?? lastTypeTaker())(type);
      return take(arena, count);
    };
    return sort(args as NDArray[], axis, comparator(frame), {
      isStable,
      fastKey,
      keys,
      alloc,
      ...(prefix !== undefined ? { prefix } : {}),
    });
  };
  return kernel;
}

function hasNaN(a: NDArray): boolean {
  if (a.type !== "f32" && a.type !== "f64") return false;
  const d = a.data as Float32Array | Float64Array;
  for (let i = 0; i < d.length; i++) if (Number.isNaN(d[i])) return true;
  return false;
}

export function fftKernel(op: Op): Kernel {
  const type = String(op.attrs.fft_type) as FftType;
  const length = nums(op.attrs.fft_length) ?? [];
  return ([x]) => [fft(x as NDArray, type, length)];
}

export function triangularSolveKernel(op: Op): Kernel {
  const attrs = {
    leftSide: op.attrs.left_side === true,
    lower: op.attrs.lower === true,
    unitDiagonal: op.attrs.unit_diagonal === true,
    transposeA: String(op.attrs.transpose_a ?? "NO_TRANSPOSE") as TransposeKind,
  };
  return ([a, b]) => [triangularSolve(a as NDArray, b as NDArray, attrs)];
}
