import type { RawAttr } from "../bytecode/values.ts";
import type { Attr } from "../ir.ts";
import { boolList, intList } from "./attributes.ts";
import { CONV_DIMS, DOT_ALGORITHM, DOT_DIMS, GATHER_V2 as GATHER_DIMS, SCATTER_DIMS } from "./op-attributes.ts";

/**
 * The attribute side of VHLO -> StableHLO (VhloLegalizeToStablehlo): VHLO writes every
 * attribute, defaults included, and spells some differently. Here defaults are removed,
 * dimension numbers are reassembled into their StableHLO structs, i64 tensors become dense
 * arrays (`number[]`), channel ids become channel handles, and symbols become references.
 */

type Raw = Map<string, RawAttr>;
type Generic = (a: RawAttr) => Attr;

const isBool = (a: RawAttr | undefined, v: boolean) => a?.k === "bool" && a.value === v;
const isInt = (a: RawAttr | undefined, v: number) => a?.k === "int" && a.value === BigInt(v);
const isString = (a: RawAttr | undefined, v: string) => a?.k === "string" && a.value === v;
const isEmptyArray = (a: RawAttr | undefined) => a?.k === "array" && a.items.length === 0;
const isEmptyDict = (a: RawAttr | undefined) => a?.k === "dict" && a.entries.length === 0;
const isEmptyTensor = (a: RawAttr | undefined) => a?.k === "dense" && a.data.length === 0;
const isEnum = (a: RawAttr | undefined, v: number) => a?.k === "enum" && a.value === v;
const isSplatInts = (a: RawAttr | undefined, v: number) => {
  const list = intList(a);
  return list?.every((x) => x === v);
};
const isSplatFalse = (a: RawAttr | undefined) => {
  const list = boolList(a);
  return list?.every((x) => !x);
};
const allDefaultPrecision = (a: RawAttr | undefined) => a?.k === "array" && a.items.every((p) => isEnum(p, 0));

/** Attributes equal to their StableHLO default, which the StableHLO form leaves out. */
const DEFAULTS: Record<string, Record<string, (a: RawAttr | undefined) => boolean>> = {};
const collectiveDefaults = { channel_id: (a: RawAttr | undefined) => isInt(a, 0) };
const withGlobalIds = { ...collectiveDefaults, use_global_device_ids: (a: RawAttr | undefined) => isBool(a, false) };
for (const op of ["all_gather", "all_reduce", "reduce_scatter"]) DEFAULTS[op] = withGlobalIds;
for (const op of ["all_to_all", "collective_permute"]) DEFAULTS[op] = collectiveDefaults;
const dynamicRoot = { has_dynamic_root: (a: RawAttr | undefined) => isBool(a, false) };
DEFAULTS.collective_broadcast = { ...collectiveDefaults, ...dynamicRoot };
DEFAULTS.collective_reduce = { ...withGlobalIds, ...dynamicRoot };
const convDefaults = {
  window_strides: (a: RawAttr | undefined) => isSplatInts(a, 1),
  padding: (a: RawAttr | undefined) => isSplatInts(a, 0),
  lhs_dilation: (a: RawAttr | undefined) => isSplatInts(a, 1),
  rhs_dilation: (a: RawAttr | undefined) => isSplatInts(a, 1),
  window_reversal: isSplatFalse,
  precision_config: allDefaultPrecision,
};
Object.assign(DEFAULTS, {
  func: {
    sym_visibility: (a: RawAttr | undefined) => isString(a, ""),
    arg_attrs: isEmptyArray,
    res_attrs: isEmptyArray,
  },
  cholesky: { lower: (a: RawAttr | undefined) => isBool(a, false) },
  compare: { compare_type: (a: RawAttr | undefined) => isEnum(a, 0) },
  composite: { version: (a: RawAttr | undefined) => isInt(a, 0), composite_attributes: isEmptyDict },
  convolution: convDefaults,
  dynamic_conv: convDefaults,
  custom_call: {
    has_side_effect: (a: RawAttr | undefined) => isBool(a, false),
    backend_config: (a: RawAttr | undefined) => isString(a, "") || isEmptyDict(a),
    api_version: (a: RawAttr | undefined) => isEnum(a, 1),
    called_computations: isEmptyArray,
    operand_layouts: isEmptyArray,
    result_layouts: isEmptyArray,
    output_operand_aliases: isEmptyArray,
    result_tilings: isEmptyArray,
  },
  dot_general: { precision_config: allDefaultPrecision },
  dot: { precision_config: allDefaultPrecision },
  dynamic_broadcast_in_dim: { known_expanding_dimensions: isEmptyTensor, known_nonexpanding_dimensions: isEmptyTensor },
  gather: { indices_are_sorted: (a: RawAttr | undefined) => isBool(a, false) },
  dynamic_gather: { indices_are_sorted: (a: RawAttr | undefined) => isBool(a, false) },
  infeed: { infeed_config: (a: RawAttr | undefined) => isString(a, ""), layout: isEmptyArray },
  outfeed: { outfeed_config: (a: RawAttr | undefined) => isString(a, "") },
  recv: { is_host_transfer: (a: RawAttr | undefined) => isBool(a, false), source_target_pairs: isEmptyTensor },
  send: { is_host_transfer: (a: RawAttr | undefined) => isBool(a, false), source_target_pairs: isEmptyTensor },
  reduce_window: {
    window_strides: (a: RawAttr | undefined) => isSplatInts(a, 1),
    base_dilations: (a: RawAttr | undefined) => isSplatInts(a, 1),
    window_dilations: (a: RawAttr | undefined) => isSplatInts(a, 1),
    padding: (a: RawAttr | undefined) => isSplatInts(a, 0),
  },
  scatter: {
    indices_are_sorted: (a: RawAttr | undefined) => isBool(a, false),
    unique_indices: (a: RawAttr | undefined) => isBool(a, false),
  },
  select_and_scatter: {
    window_strides: (a: RawAttr | undefined) => isSplatInts(a, 1),
    padding: (a: RawAttr | undefined) => isSplatInts(a, 0),
  },
  sort: {
    dimension: (a: RawAttr | undefined) => isInt(a, -1),
    is_stable: (a: RawAttr | undefined) => isBool(a, false),
  },
});

/** Attributes StableHLO holds as dense i64 arrays (VHLO as i64 tensors). */
const I64_ARRAYS: Record<string, readonly string[]> = {
  fft: ["fft_length"],
  broadcast: ["broadcast_sizes"],
  dynamic_slice: ["slice_sizes"],
  reverse: ["dimensions"],
  transpose: ["permutation"],
  pad: ["edge_padding_low", "edge_padding_high", "interior_padding"],
  slice: ["start_indices", "limit_indices", "strides"],
  broadcast_in_dim: ["broadcast_dimensions"],
  dynamic_broadcast_in_dim: ["broadcast_dimensions", "known_expanding_dimensions", "known_nonexpanding_dimensions"],
  select_and_scatter: ["window_dimensions", "window_strides"],
  reduce_window: ["window_dimensions", "window_strides", "base_dilations", "window_dilations"],
  map: ["dimensions"],
  reduce: ["dimensions"],
  gather: ["slice_sizes"],
  convolution: ["lhs_dilation", "rhs_dilation", "window_strides"],
  dynamic_conv: ["lhs_dilation", "rhs_dilation", "window_strides"],
};

export function convertOpAttributes(short: string, raw: Raw, generic: Generic): Record<string, Attr> {
  const base = short.replace(/_v\d+$/, "");
  const a = new Map(raw);
  const out: Record<string, Attr> = {};
  for (const [name, isDefault] of Object.entries(DEFAULTS[base] ?? {}))
    if (a.has(name) && isDefault(a.get(name))) a.delete(name);
  if (a.has("result_accuracy") && isDefaultAccuracy(a.get("result_accuracy"))) a.delete("result_accuracy");
  const ints = (name: string): number[] => intList(a.get(name)) ?? [];
  const int = (name: string): number => {
    const v = a.get(name);
    return v?.k === "int" ? Number(v.value) : 0;
  };
  const take = (names: readonly string[]) => {
    for (const n of names) a.delete(n);
  };

  if (base === "convolution" || base === "dynamic_conv") {
    const dims: Record<string, Attr> = {};
    for (const n of CONV_DIMS) dims[n] = n.endsWith("_dimensions") ? ints(n) : int(n);
    out.dimension_numbers = dims;
    take(CONV_DIMS);
    // dynamic_conv_v1 carried padding twice; v2 keeps the operand only.
    if (short === "dynamic_conv_v1") a.delete("padding");
  }
  if (base === "dot_general") {
    const dims: Record<string, Attr> = {};
    for (const n of DOT_DIMS) dims[n] = ints(n);
    out.dot_dimension_numbers = dims;
    take(DOT_DIMS);
    const lhsType = a.get("lhs_precision_type");
    if (lhsType && !(lhsType.k === "type" && lhsType.type.k === "none")) {
      const algorithm: Record<string, Attr> = {};
      for (const n of DOT_ALGORITHM) if (a.has(n)) algorithm[n] = generic(a.get(n) as RawAttr);
      out.algorithm = algorithm;
    }
    take(DOT_ALGORITHM);
  }
  if (base === "gather" || base === "dynamic_gather") {
    out.dimension_numbers = structOf(GATHER_DIMS, a, ints, int);
    take(GATHER_DIMS);
  }
  if (base === "scatter") {
    out.scatter_dimension_numbers = structOf(SCATTER_DIMS, a, ints, int);
    take(SCATTER_DIMS);
  }
  if (base === "send" || base === "recv") {
    out.channel_handle = { handle: int("channel_id"), type: int("channel_type") };
    take(["channel_id", "channel_type"]);
  }
  for (const [name, value] of a) {
    if (value === undefined) continue;
    if (name === "channel_id" && DEFAULTS[base]?.channel_id !== undefined) {
      out.channel_handle = { handle: int(name), type: 0 };
    } else if (name === "use_global_device_ids") {
      if (isBool(value, true)) out.use_global_device_ids = true;
    } else if (name === "called_computations" && value.k === "array") {
      out.called_computations = value.items.map((s) => ({ symbol: s.k === "string" ? s.value : "" }));
    } else if ((name === "decomposition" || name === "callee") && value.k === "string") {
      out[name] = name === "callee" ? value.value : { symbol: value.value };
    } else if (I64_ARRAYS[base]?.includes(name) && value.k === "dense") {
      out[name] = intList(value) ?? generic(value);
    } else if (name === "window_reversal" && value.k === "dense") {
      out[name] = boolList(value) ?? generic(value);
    } else if (
      name === "padding" &&
      value.k === "dense" &&
      ["convolution", "reduce_window", "select_and_scatter"].includes(base)
    ) {
      const flat = intList(value) ?? [];
      const pairs: number[][] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i] as number, flat[i + 1] as number]);
      out[name] = pairs;
    } else {
      out[name] = generic(value);
    }
  }
  return out;
}

/** Gather / scatter dimension numbers as the text form prints them: empty lists left out. */
function structOf(names: readonly string[], a: Raw, ints: (n: string) => number[], int: (n: string) => number) {
  const out: Record<string, Attr> = {};
  for (const n of names) {
    if (!a.has(n)) continue;
    if (n === "index_vector_dim") out[n] = int(n);
    else {
      const v = ints(n);
      if (v.length > 0) out[n] = v;
    }
  }
  return out;
}

function isDefaultAccuracy(a: RawAttr | undefined): boolean {
  if (a?.k !== "struct" || a.name !== "result_accuracy") return false;
  const f = a.fields;
  const mode = f.mode as RawAttr | undefined;
  return f.atol === 0 && f.rtol === 0 && f.ulps === 0 && isEnum(mode, 0);
}
