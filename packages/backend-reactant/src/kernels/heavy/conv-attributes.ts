/**
 * Convolution attributes as the engine parses them from `dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->...`
 * and `window = {...}`, plus the checks and derived sizes every convolution path shares.
 */
import type { NDArray } from "../../array.ts";
import { checkAxes, checkLength, invalid } from "./errors.ts";

export interface ConvDimensionNumbers {
  readonly inputBatch: number;
  readonly inputFeature: number;
  readonly inputSpatial: readonly number[];
  readonly kernelInputFeature: number;
  readonly kernelOutputFeature: number;
  readonly kernelSpatial: readonly number[];
  readonly outputBatch: number;
  readonly outputFeature: number;
  readonly outputSpatial: readonly number[];
}

/** Omitted fields take the StableHLO defaults (strides 1, no padding, no dilation, no reversal, one group). */
export interface ConvAttributes {
  readonly dims: ConvDimensionNumbers;
  readonly windowStrides?: readonly number[];
  /** [low, high] per spatial axis; may be negative. */
  readonly padding?: readonly (readonly [number, number])[];
  readonly lhsDilation?: readonly number[];
  readonly rhsDilation?: readonly number[];
  readonly windowReversal?: readonly boolean[];
  readonly featureGroupCount?: number;
  readonly batchGroupCount?: number;
}

/** Everything resolved: canonical sizes, per-axis window parameters, group layout. */
export interface ConvGeometry {
  readonly spatialRank: number;
  readonly batch: number;
  readonly inChannels: number;
  readonly inSpatial: number[];
  readonly kernelSpatial: number[];
  readonly outChannels: number;
  readonly outBatch: number;
  readonly outSpatial: number[];
  readonly strides: number[];
  readonly padLow: number[];
  readonly lhsDilation: number[];
  readonly rhsDilation: number[];
  readonly reversal: boolean[];
  /** feature_group_count or batch_group_count, whichever is above 1 (both 1: one group). */
  readonly groups: number;
  readonly byBatch: boolean;
  /** Input channels each group reads (the kernel's input-feature size). */
  readonly groupInChannels: number;
  readonly groupOutChannels: number;
  readonly resultShape: number[];
}

const OP = "convolution";

function positive(what: string, values: readonly number[]): void {
  for (const v of values)
    if (!Number.isInteger(v) || v < 1) throw invalid(OP, `${what} must be positive integers, got [${values}]`);
}

export function convGeometry(lhs: NDArray, rhs: NDArray, attrs: ConvAttributes): ConvGeometry {
  const d = attrs.dims;
  const spatialRank = d.inputSpatial.length;
  const rank = spatialRank + 2;
  if (lhs.shape.length !== rank) throw invalid(OP, `lhs has rank ${lhs.shape.length}, dimension numbers need ${rank}`);
  if (rhs.shape.length !== rank) throw invalid(OP, `rhs has rank ${rhs.shape.length}, dimension numbers need ${rank}`);
  checkLength(OP, "kernel spatial dimensions", d.kernelSpatial, spatialRank);
  checkLength(OP, "output spatial dimensions", d.outputSpatial, spatialRank);
  checkAxes(OP, "input dimensions", [d.inputBatch, d.inputFeature, ...d.inputSpatial], rank);
  checkAxes(OP, "kernel dimensions", [d.kernelInputFeature, d.kernelOutputFeature, ...d.kernelSpatial], rank);
  checkAxes(OP, "output dimensions", [d.outputBatch, d.outputFeature, ...d.outputSpatial], rank);
  const ones = new Array<number>(spatialRank).fill(1);
  const strides = [...(attrs.windowStrides ?? ones)];
  const lhsDilation = [...(attrs.lhsDilation ?? ones)];
  const rhsDilation = [...(attrs.rhsDilation ?? ones)];
  const padding = attrs.padding ?? ones.map(() => [0, 0] as const);
  const reversal = [...(attrs.windowReversal ?? ones.map(() => false))];
  checkLength(OP, "window_strides", strides, spatialRank);
  checkLength(OP, "lhs_dilation", lhsDilation, spatialRank);
  checkLength(OP, "rhs_dilation", rhsDilation, spatialRank);
  checkLength(OP, "padding", padding, spatialRank);
  checkLength(OP, "window_reversal", reversal, spatialRank);
  positive("window_strides", strides);
  positive("lhs_dilation", lhsDilation);
  positive("rhs_dilation", rhsDilation);
  const featureGroups = attrs.featureGroupCount ?? 1;
  const batchGroups = attrs.batchGroupCount ?? 1;
  positive("feature_group_count", [featureGroups]);
  positive("batch_group_count", [batchGroups]);
  if (featureGroups > 1 && batchGroups > 1)
    throw invalid(OP, "feature_group_count and batch_group_count cannot both exceed 1");

  const dim = (a: NDArray, axis: number) => a.shape[axis] as number;
  const batch = dim(lhs, d.inputBatch);
  const inChannels = dim(lhs, d.inputFeature);
  const kernelIn = dim(rhs, d.kernelInputFeature);
  const outChannels = dim(rhs, d.kernelOutputFeature);
  if (inChannels % featureGroups !== 0)
    throw invalid(OP, `input features ${inChannels} not divisible by feature_group_count ${featureGroups}`);
  if (kernelIn * featureGroups !== inChannels)
    throw invalid(
      OP,
      `kernel input features ${kernelIn} x feature_group_count ${featureGroups} != input features ${inChannels}`,
    );
  const groups = Math.max(featureGroups, batchGroups);
  if (outChannels % groups !== 0)
    throw invalid(OP, `kernel output features ${outChannels} not divisible by group count ${groups}`);
  if (batch % batchGroups !== 0)
    throw invalid(OP, `input batch ${batch} not divisible by batch_group_count ${batchGroups}`);

  const inSpatial = d.inputSpatial.map((a) => dim(lhs, a));
  const kernelSpatial = d.kernelSpatial.map((a) => dim(rhs, a));
  const padLow = padding.map((p) => p[0]);
  const outSpatial = inSpatial.map((size, i) => {
    const dilatedIn = size === 0 ? 0 : (size - 1) * (lhsDilation[i] as number) + 1;
    const padded =
      dilatedIn + (padding[i] as readonly [number, number])[0] + (padding[i] as readonly [number, number])[1];
    const window = ((kernelSpatial[i] as number) - 1) * (rhsDilation[i] as number) + 1;
    if ((kernelSpatial[i] as number) === 0 || padded < window) return 0;
    return Math.floor((padded - window) / (strides[i] as number)) + 1;
  });
  const outBatch = batch / batchGroups;
  const resultShape = new Array<number>(rank);
  resultShape[d.outputBatch] = outBatch;
  resultShape[d.outputFeature] = outChannels;
  d.outputSpatial.forEach((axis, i) => {
    resultShape[axis] = outSpatial[i] as number;
  });
  return {
    spatialRank,
    batch,
    inChannels,
    inSpatial,
    kernelSpatial,
    outChannels,
    outBatch,
    outSpatial,
    strides,
    padLow,
    lhsDilation,
    rhsDilation,
    reversal,
    groups,
    byBatch: batchGroups > 1,
    groupInChannels: kernelIn,
    groupOutChannels: outChannels / groups,
    resultShape,
  };
}
