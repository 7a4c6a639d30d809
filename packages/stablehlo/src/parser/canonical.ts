import type { NDArray } from "../elements.ts";
import type { Attr, AttrObject, Op, Region, ValueType } from "../ir.ts";
import { isTensorType } from "../ir.ts";

/**
 * Maps the pretty form's spellings onto the spec's attribute names (ir.ts), so kernels and the
 * serialized plan see one vocabulary whichever syntax the module used. Internal keys written by
 * the parser start with "_" and are removed here.
 */
export function canonicalize(op: Op): Op {
  const a: Record<string, Attr> = { ...op.attrs };
  const take = (key: string): Attr | undefined => {
    const v = a[key];
    delete a[key];
    return v;
  };
  const rename = (from: string, to: string) => {
    const v = take(from);
    if (v !== undefined && a[to] === undefined) a[to] = v;
  };
  const enums = (take("_enums") as string[] | undefined) ?? [];
  const brackets = take("_brackets") as number[][] | undefined;
  const symbol = take("_symbol") as string | undefined;
  const name = take("_name") as string | undefined;
  take("_applies");
  let regions = op.regions;
  switch (op.name) {
    case "stablehlo.broadcast_in_dim":
      rename("dims", "broadcast_dimensions");
      break;
    case "stablehlo.transpose":
      rename("dims", "permutation");
      break;
    case "chlo.scan":
      rename("_inits_at", "input_count");
      break;
    case "stablehlo.get_dimension_size":
      rename("dim", "dimension");
      break;
    case "stablehlo.reverse":
      rename("dims", "dimensions");
      break;
    case "stablehlo.iota":
      rename("dim", "iota_dimension");
      break;
    case "stablehlo.concatenate":
      rename("dim", "dimension");
      break;
    case "stablehlo.dynamic_slice":
      rename("sizes", "slice_sizes");
      break;
    case "stablehlo.pad":
      rename("low", "edge_padding_low");
      rename("high", "edge_padding_high");
      rename("interior", "interior_padding");
      break;
    case "stablehlo.slice":
      if (brackets) {
        a.start_indices = brackets.map((r) => r[0] as number);
        a.limit_indices = brackets.map((r) => r[1] as number);
        a.strides = brackets.map((r) => r[2] ?? 1);
      }
      break;
    case "stablehlo.get_tuple_element":
      if (brackets) a.index = brackets[0]?.[0] as number;
      break;
    case "stablehlo.compare":
      if (enums[0]) a.comparison_direction = enums[0];
      if (enums[1]) a.compare_type = enums[1];
      break;
    case "stablehlo.dot_general": {
      const batching = take("batching_dims") as number[][] | undefined;
      const contracting = take("contracting_dims") as number[][] | undefined;
      if (batching || contracting) {
        a.dot_dimension_numbers = {
          lhs_batching_dimensions: batching?.[0] ?? [],
          rhs_batching_dimensions: batching?.[1] ?? [],
          lhs_contracting_dimensions: contracting?.[0] ?? [],
          rhs_contracting_dimensions: contracting?.[1] ?? [],
        };
      }
      rename("precision", "precision_config");
      fillDotDefaults(a);
      break;
    }
    case "stablehlo.convolution":
      canonicalConv(a);
      break;
    case "stablehlo.reduce_window":
    case "stablehlo.select_and_scatter":
      if (a.padding !== undefined) a.padding = pairs(a.padding);
      break;
    case "stablehlo.reduce_precision": {
      const format = take("format");
      const m = typeof format === "string" ? /^e(\d+)m(\d+)$/.exec(format) : null;
      if (m) {
        a.exponent_bits = Number(m[1]);
        a.mantissa_bits = Number(m[2]);
      }
      break;
    }
    case "stablehlo.rng_bit_generator":
      rename("algorithm", "rng_algorithm");
      break;
    case "stablehlo.fft":
      rename("type", "fft_type");
      rename("length", "fft_length");
      break;
    case "stablehlo.custom_call":
      if (symbol !== undefined) a.call_target_name = symbol;
      break;
    case "func.call":
      if (symbol !== undefined) a.callee = symbol;
      break;
    case "stablehlo.composite":
      if (name !== undefined) a.name = name;
      break;
    case "stablehlo.while":
      regions = regions.map((r) => ({
        args: r.args.map((arg, i) => ({ name: arg.name, type: op.resultTypes[i] ?? arg.type })),
        ops: r.ops,
      }));
      break;
    default:
      if (enums.length > 0) a.enums = enums;
      if (symbol !== undefined) a.symbol = symbol;
  }
  return { ...op, attrs: a, regions };
}

function fillDotDefaults(a: Record<string, Attr>): void {
  const d = (a.dot_dimension_numbers ?? {}) as AttrObject;
  a.dot_dimension_numbers = {
    lhs_batching_dimensions: d.lhs_batching_dimensions ?? [],
    rhs_batching_dimensions: d.rhs_batching_dimensions ?? [],
    lhs_contracting_dimensions: d.lhs_contracting_dimensions ?? [],
    rhs_contracting_dimensions: d.rhs_contracting_dimensions ?? [],
  };
}

/** Padding as [[low, high], ...] whether written as a list or a dense<...> attribute. */
function pairs(v: Attr): number[][] {
  if (Array.isArray(v)) return v.map((p) => (p as number[]).map(Number));
  const nd = v as NDArray;
  const out: number[][] = [];
  for (let i = 0; i < (nd.shape[0] ?? 0); i++) out.push([Number(nd.data[2 * i]), Number(nd.data[2 * i + 1])]);
  return out;
}

function canonicalConv(a: Record<string, Attr>): void {
  const dims = a.dim_numbers ?? a.dimension_numbers;
  delete a.dim_numbers;
  if (dims !== undefined) a.dimension_numbers = dims;
  const window = a.window as AttrObject | undefined;
  delete a.window;
  if (window) {
    if (window.stride !== undefined) a.window_strides = window.stride;
    if (window.pad !== undefined) a.padding = window.pad;
    if (window.lhs_dilate !== undefined) a.lhs_dilation = window.lhs_dilate;
    if (window.rhs_dilate !== undefined) a.rhs_dilation = window.rhs_dilate;
    if (window.reverse !== undefined) a.window_reversal = window.reverse;
  }
  if (a.padding !== undefined) a.padding = pairs(a.padding);
  if (Array.isArray(a.window_reversal)) a.window_reversal = a.window_reversal.map((x) => x === true || x === 1);
  a.feature_group_count ??= 1;
  a.batch_group_count ??= 1;
}

/** The region `applies stablehlo.add` stands for: `^bb0(%lhs, %rhs): return add(%lhs, %rhs)`. */
export function reducerRegion(opName: string, operandTypes: ValueType[] | null, resultTypes: ValueType[]): Region {
  const init = operandTypes?.[operandTypes.length - 1] ?? resultTypes[0];
  const elem = isTensorType(init) ? init.elem : "f32";
  const scalar: ValueType = { kind: "tensor", elem, shape: [] };
  return {
    args: [
      { name: "%lhs", type: scalar },
      { name: "%rhs", type: scalar },
    ],
    ops: [
      {
        name: opName,
        results: ["%out"],
        operands: ["%lhs", "%rhs"],
        attrs: {},
        regions: [],
        resultTypes: [scalar],
        operandTypes: null,
        offset: 0,
      },
      {
        name: "stablehlo.return",
        results: [],
        operands: ["%out"],
        attrs: {},
        regions: [],
        resultTypes: [],
        operandTypes: null,
        offset: 0,
      },
    ],
  };
}
