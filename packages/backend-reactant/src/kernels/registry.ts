import { XlaserveError } from "@xlaserve/core";
import { type DataAlloc, type NDArray, elementCount, slotsPerElement } from "../array.ts";
import type { Attr, Op } from "@xlaserve/stablehlo";
import { isTensorType } from "@xlaserve/stablehlo";
import type { Frame, Kernel, KernelTools } from "../plan/program.ts";
import { lastTypeTaker } from "../plan/arena.ts";
import { TOKEN } from "../plan/values.ts";
import { controlKernel } from "./control.ts";
import { ExternalResults } from "./external-results.ts";
import {
  BINARY_OPS,
  UNARY_OPS,
  binaryKernel,
  clampKernel,
  compareKernel,
  complexKernel,
  convertKernel,
  nextAfterKernel,
  realImagKernel,
  reducePrecisionKernel,
  selectKernel,
  unaryKernel,
} from "./elementwise-ops.ts";
import { unsupported } from "./errors.ts";
import {
  convolutionKernel,
  dotGeneralKernel,
  fftKernel,
  gatherKernel,
  reduceWindowKernel,
  scatterKernel,
  selectAndScatterKernel,
  sortKernel,
  triangularSolveKernel,
} from "./heavy-adapters.ts";
import { bitcastConvert } from "./bitcast.ts";
import { checkKernel } from "./check-ops.ts";
import { dynamicSliceKernel, dynamicUpdateSliceKernel } from "./dynamic-slices.ts";
import * as layout from "./layout.ts";
import { reduceFor } from "./reduce.ts";
import { argReduceKind } from "./reduce-argmax.ts";
import { regionInfoFor } from "./region.ts";
import { rngBitGenerator } from "./rng.ts";
import { mulhi } from "./mulhi.ts";
import { scan } from "./scan.ts";
import { topK } from "./top-k.ts";

/**
 * Turns one op into its kernel at compile time: attributes are read and checked here, once,
 * so the kernel closure does only the work.
 */

/** Ops that exist only for multi-device or host-communication programs (README: out of scope). */
const OUT_OF_SCOPE = new Set([
  "all_gather",
  "all_reduce",
  "all_to_all",
  "collective_broadcast",
  "collective_permute",
  "reduce_scatter",
  "infeed",
  "outfeed",
  "send",
  "recv",
  "uniform_quantize",
  "uniform_dequantize",
  "dynamic_broadcast_in_dim",
  "dynamic_conv",
  "dynamic_gather",
  "dynamic_iota",
  "dynamic_pad",
  "dynamic_reshape",
  "real_dynamic_slice",
]);

const ints = (v: Attr | undefined, what: string, op: Op): number[] => {
  if (!Array.isArray(v))
    throw new XlaserveError("MODULE_INVALID", `${op.name} needs the ${what} attribute`, { op: op.name });
  return v.map(Number);
};

function resultShape(op: Op, i = 0): number[] {
  const t = op.resultTypes[i];
  if (!isTensorType(t))
    throw new XlaserveError("MODULE_INVALID", `${op.name} needs a tensor result type`, { op: op.name });
  return t.shape;
}

export function buildKernel(op: Op, tools: KernelTools): Kernel {
  const [dialect, name = ""] = splitName(op.name);
  if (dialect === "stablehlo" || dialect === "chlo") {
    if (BINARY_OPS.has(name)) return binaryKernel(name);
    if (UNARY_OPS.has(name)) return unaryKernel(name);
  }
  if (dialect === "check") return checkKernel(op);
  if (dialect === "func" || dialect === "stablehlo") {
    const control = controlKernel(op, tools);
    if (control) return control;
  }
  const a = op.attrs;
  switch (op.name) {
    case "stablehlo.constant": {
      const value = a.value as NDArray;
      return () => [value];
    }
    case "stablehlo.compare":
      return compareKernel(op);
    case "stablehlo.select":
      return selectKernel();
    case "stablehlo.clamp":
      return clampKernel();
    case "stablehlo.convert": {
      const t = op.resultTypes[0];
      if (!isTensorType(t)) throw unsupported("convert", "convert needs a tensor result type");
      return convertKernel(t.elem);
    }
    case "stablehlo.bitcast_convert": {
      const t = op.resultTypes[0];
      if (!isTensorType(t)) throw unsupported("bitcast_convert", "needs a tensor result type");
      return ([x]) => [bitcastConvert(x as NDArray, t)];
    }
    case "stablehlo.reduce_precision":
      return reducePrecisionKernel(op);
    case "stablehlo.real":
    case "stablehlo.imag":
      return realImagKernel(op.name === "stablehlo.real" ? "real" : "imag");
    case "stablehlo.complex":
      return complexKernel();
    case "chlo.next_after":
      return nextAfterKernel();
    case "stablehlo.broadcast_in_dim": {
      const dims = ints(a.broadcast_dimensions, "broadcast_dimensions", op);
      const shape = resultShape(op);
      const alloc = pooledOutputs();
      // The source steps depend only on the operand's shape, the same on every run.
      let seen: number[] | null = null;
      let step: number[] = [];
      let onlyUnitAxes = false;
      let scalarFill = false;
      const count = elementCount(shape);
      return (args, frame) => {
        const x = args[0] as NDArray;
        if (seen === null || !layout.sameDims(seen, x.shape)) {
          step = layout.broadcastSteps(x, dims, shape);
          seen = [...x.shape];
          onlyUnitAxes = layout.insertsUnitAxes(x.shape, dims, shape);
          scalarFill = elementCount(x.shape) === 1 && slotsPerElement(x.type) === 1;
        }
        // Only size-1 axes added (JAX's [B, C] -> [B, 1, C] before an update): a reshape, which
        // shares the storage.
        if (onlyUnitAxes) return [{ type: x.type, shape: [...shape], data: x.data }];
        // One value everywhere (zeros into a loop's carried buffer): a fill, not an element walk.
        if (scalarFill) {
          const out = alloc(frame)(x.type, count);
          (out as Float64Array).fill(x.data[0] as number);
          return [{ type: x.type, shape: [...shape], data: out }];
        }
        return [layout.stridedCopy(x, 0, step, shape, alloc(frame))];
      };
    }
    case "stablehlo.reshape": {
      const shape = resultShape(op);
      return ([x]) => [layout.reshape(x as NDArray, shape)];
    }
    case "stablehlo.transpose": {
      const perm = ints(a.permutation, "permutation", op);
      const alloc = pooledOutputs();
      const kept = new ExternalResults();
      return ([x], frame) => {
        const v = x as NDArray;
        // A weight read transposed (x @ W.T) is transposed once, not on every run.
        return [
          kept.get(
            v,
            frame.ctx.arena.version(v.data),
            () => layout.transpose(v, perm),
            () => layout.transpose(v, perm, alloc(frame)),
          ),
        ];
      };
    }
    case "stablehlo.slice": {
      const start = ints(a.start_indices, "start_indices", op);
      const limit = ints(a.limit_indices, "limit_indices", op);
      const step = Array.isArray(a.strides) ? a.strides.map(Number) : start.map(() => 1);
      const alloc = pooledOutputs();
      return ([x], frame) => [layout.slice(x as NDArray, start, limit, step, alloc(frame))];
    }
    case "stablehlo.dynamic_slice":
      return dynamicSliceKernel(ints(a.slice_sizes, "slice_sizes", op));
    case "stablehlo.dynamic_update_slice":
      return dynamicUpdateSliceKernel();
    case "stablehlo.concatenate": {
      const dim = Number(a.dimension);
      const alloc = pooledOutputs();
      return (args, frame) => [layout.concatenate(args as NDArray[], dim, alloc(frame))];
    }
    case "stablehlo.pad": {
      const low = ints(a.edge_padding_low, "edge_padding_low", op);
      const high = ints(a.edge_padding_high, "edge_padding_high", op);
      const interior = Array.isArray(a.interior_padding) ? a.interior_padding.map(Number) : low.map(() => 0);
      return ([x, v]) => [layout.pad(x as NDArray, v as NDArray, low, high, interior)];
    }
    case "stablehlo.reverse": {
      const dims = ints(a.dimensions, "dimensions", op);
      const alloc = pooledOutputs();
      return ([x], frame) => [layout.reverse(x as NDArray, dims, alloc(frame))];
    }
    case "stablehlo.iota": {
      const t = op.resultTypes[0];
      if (!isTensorType(t)) throw unsupported("iota", "needs a tensor result type");
      const dim = Number(a.iota_dimension ?? 0);
      const alloc = pooledOutputs();
      return (_args, frame) => [layout.iota(t.elem, t.shape, dim, alloc(frame))];
    }
    case "stablehlo.get_dimension_size": {
      const dim = Number(a.dimension);
      return ([x]) => [{ type: "i32", shape: [], data: new Int32Array([(x as NDArray).shape[dim] as number]) }];
    }
    case "stablehlo.reduce": {
      const dims = ints(a.dimensions, "dimensions", op);
      const [block] = tools.regions;
      const region = op.regions[0];
      if (!block || !region) throw new XlaserveError("MODULE_INVALID", "stablehlo.reduce needs a body region");
      const body = regionInfoFor(block, region);
      const run = reduceFor(dims, argReduceKind(region));
      const alloc = pooledOutputs();
      return (args, frame) => {
        const n = args.length / 2;
        return run(args.slice(0, n) as NDArray[], args.slice(n) as NDArray[], body(frame), alloc(frame));
      };
    }
    case "stablehlo.rng_bit_generator": {
      const algorithm = String(a.rng_algorithm ?? "DEFAULT");
      const t = op.resultTypes[1];
      if (!isTensorType(t)) throw unsupported("rng_bit_generator", "needs a tensor output type");
      return ([state]) => rngBitGenerator(algorithm, state as NDArray, t);
    }
    case "chlo.scan": {
      const [block] = tools.regions;
      if (!block) throw new XlaserveError("MODULE_INVALID", "chlo.scan needs a body region");
      const inputCount = Number(a.input_count ?? 1);
      const dim = Number(a.dimension ?? 0);
      const reverse = a.is_reverse === true;
      return (args, frame) => scan(args as NDArray[], inputCount, dim, reverse, block, frame);
    }
    case "chlo.mulhi":
      return ([x, y]) => [mulhi(x as NDArray, y as NDArray)];
    case "chlo.top_k": {
      const k = Number(a.k);
      return ([x]) => topK(x as NDArray, k);
    }
    case "stablehlo.after_all":
    case "stablehlo.create_token":
      return () => [TOKEN];
    case "stablehlo.dot_general":
      return dotGeneralKernel(op);
    case "stablehlo.convolution":
      return convolutionKernel(op);
    case "stablehlo.reduce_window":
      return reduceWindowKernel(op, tools);
    case "stablehlo.select_and_scatter":
      return selectAndScatterKernel(op, tools);
    case "stablehlo.gather":
      return gatherKernel(op);
    case "stablehlo.scatter":
      return scatterKernel(op, tools);
    case "stablehlo.sort":
      return sortKernel(op, tools);
    case "stablehlo.fft":
      return fftKernel(op);
    case "stablehlo.triangular_solve":
      return triangularSolveKernel(op);
  }
  if (OUT_OF_SCOPE.has(name)) throw unsupported(name, `${op.name} is out of scope for the CPU engine (see README)`);
  throw unsupported(op.name, `${op.name} is not supported`);
}

/**
 * Output storage from the running plan's pool, for kernels whose output type is their input's:
 * the type is only known per call, but it is the same every run.
 */
function pooledOutputs(): (frame: Frame) => DataAlloc {
  const take = lastTypeTaker();
  return (frame) => {
    const arena = frame.ctx.arena;
    return (type, count) => take(type)(arena, count);
  };
}

const splitNames = new Map<string, [string, string | undefined]>();

/** An op name's dialect and short name, split once per name. */
function splitName(name: string): [string, string | undefined] {
  let split = splitNames.get(name);
  if (!split) {
    const dot = name.indexOf(".");
    split = dot < 0 ? [name, undefined] : [name.slice(0, dot), name.slice(dot + 1)];
    splitNames.set(name, split);
  }
  return split;
}
