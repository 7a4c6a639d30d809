/**
 * The inherent attributes of each VHLO op (VhloOps.td). From bytecode format 5 an op's
 * inherent attributes are written as properties: one attribute reference per name, in the
 * names' byte order, with no names in the file, so this table is what gives them names.
 * Ops missing here have no attributes.
 */

/** Convolution's dimension numbers, which VHLO spells out one attribute each. */
export const CONV_DIMS = [
  "input_batch_dimension",
  "input_feature_dimension",
  "input_spatial_dimensions",
  "kernel_input_feature_dimension",
  "kernel_output_feature_dimension",
  "kernel_spatial_dimensions",
  "output_batch_dimension",
  "output_feature_dimension",
  "output_spatial_dimensions",
];
export const DOT_DIMS = [
  "lhs_batching_dimensions",
  "rhs_batching_dimensions",
  "lhs_contracting_dimensions",
  "rhs_contracting_dimensions",
];
export const DOT_ALGORITHM = [
  "lhs_precision_type",
  "rhs_precision_type",
  "accumulation_type",
  "lhs_component_count",
  "rhs_component_count",
  "num_primitive_operations",
  "allow_imprecise_accumulation",
];
export const SCATTER_DIMS = [
  "update_window_dims",
  "inserted_window_dims",
  "input_batching_dims",
  "scatter_indices_batching_dims",
  "scatter_dims_to_operand_dims",
  "index_vector_dim",
];
const CONV = [
  "window_strides",
  "padding",
  "lhs_dilation",
  "rhs_dilation",
  "window_reversal",
  ...CONV_DIMS,
  "feature_group_count",
  "batch_group_count",
  "precision_config",
];
const ALL_GATHER = ["all_gather_dim", "replica_groups", "channel_id", "use_global_device_ids"];
const ALL_REDUCE = ["replica_groups", "channel_id", "use_global_device_ids"];
const ALL_TO_ALL = ["split_dimension", "concat_dimension", "split_count", "replica_groups", "channel_id"];
const GATHER_V1 = ["offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim"];
export const GATHER_V2 = [
  "offset_dims",
  "collapsed_slice_dims",
  "operand_batching_dims",
  "start_indices_batching_dims",
  "start_index_map",
  "index_vector_dim",
];
const SEND_RECV = ["channel_id", "channel_type", "is_host_transfer"];
const ACCURACY = ["result_accuracy"];
const CUSTOM_CALL = [
  "call_target_name",
  "has_side_effect",
  "backend_config",
  "api_version",
  "called_computations",
  "operand_layouts",
  "result_layouts",
  "output_operand_aliases",
];

const TABLE: Record<string, readonly string[]> = {
  all_gather_v1: ALL_GATHER,
  all_gather_v2: ALL_GATHER,
  all_reduce_v1: ALL_REDUCE,
  all_reduce_v2: ALL_REDUCE,
  all_to_all_v1: ALL_TO_ALL,
  all_to_all_v2: ALL_TO_ALL,
  batch_norm_grad_v1: ["epsilon", "feature_index"],
  batch_norm_inference_v1: ["epsilon", "feature_index"],
  batch_norm_training_v1: ["epsilon", "feature_index"],
  broadcast_in_dim_v1: ["broadcast_dimensions"],
  broadcast_v1: ["broadcast_sizes"],
  call_v1: ["callee"],
  cbrt_v2: ACCURACY,
  cholesky_v1: ["lower"],
  collective_broadcast_v1: ["replica_groups", "channel_id"],
  collective_broadcast_v2: ["replica_groups", "channel_id", "has_dynamic_root"],
  collective_reduce_v1: ["replica_groups", "channel_id", "use_global_device_ids", "has_dynamic_root"],
  collective_permute_v1: ["source_target_pairs", "channel_id"],
  compare_v1: ["comparison_direction", "compare_type"],
  composite_v1: ["name", "composite_attributes", "decomposition", "version"],
  composite_v2: ["name", "composite_attributes", "decomposition", "version"],
  concatenate_v1: ["dimension"],
  constant_v1: ["value"],
  convolution_v1: CONV,
  cosine_v2: ACCURACY,
  "cross-replica-sum_v1": ["replica_groups"],
  custom_call_v1: CUSTOM_CALL,
  custom_call_v2: [...CUSTOM_CALL, "result_tilings"],
  dot_general_v1: [...DOT_DIMS, "precision_config"],
  dot_general_v2: [...DOT_DIMS, "precision_config", ...DOT_ALGORITHM],
  dot_v1: ["precision_config"],
  dynamic_broadcast_in_dim_v1: ["broadcast_dimensions", "known_expanding_dimensions", "known_nonexpanding_dimensions"],
  dynamic_conv_v1: CONV,
  dynamic_conv_v2: CONV.filter((n) => n !== "padding"),
  dynamic_gather_v1: [...GATHER_V1, "indices_are_sorted"],
  dynamic_gather_v2: [...GATHER_V2, "indices_are_sorted"],
  dynamic_iota_v1: ["iota_dimension"],
  dynamic_slice_v1: ["slice_sizes"],
  einsum_v1: ["einsum_config"],
  exponential_v2: ACCURACY,
  exponential_minus_one_v2: ACCURACY,
  fft_v1: ["fft_type", "fft_length"],
  func_v1: ["sym_name", "function_type", "sym_visibility", "arg_attrs", "res_attrs"],
  gather_v1: [...GATHER_V1, "slice_sizes", "indices_are_sorted"],
  gather_v2: [...GATHER_V2, "slice_sizes", "indices_are_sorted"],
  get_dimension_size_v1: ["dimension"],
  get_tuple_element_v1: ["index"],
  infeed_v1: ["infeed_config", "layout"],
  iota_v1: ["iota_dimension"],
  log_plus_one_v2: ACCURACY,
  log_v2: ACCURACY,
  logistic_v2: ACCURACY,
  map_v1: ["dimensions"],
  outfeed_v1: ["outfeed_config"],
  pad_v1: ["edge_padding_low", "edge_padding_high", "interior_padding"],
  recv_v1: SEND_RECV,
  recv_v2: [...SEND_RECV, "source_target_pairs"],
  reduce_v1: ["dimensions"],
  reduce_precision_v1: ["exponent_bits", "mantissa_bits"],
  reduce_scatter_v1: ["scatter_dimension", ...ALL_REDUCE],
  reduce_window_v1: ["window_dimensions", "window_strides", "base_dilations", "window_dilations", "padding"],
  reverse_v1: ["dimensions"],
  rng_bit_generator_v1: ["rng_algorithm"],
  rng_v1: ["rng_distribution"],
  rsqrt_v2: ACCURACY,
  scatter_v1: [
    "update_window_dims",
    "inserted_window_dims",
    "scatter_dims_to_operand_dims",
    "index_vector_dim",
    "indices_are_sorted",
    "unique_indices",
  ],
  scatter_v2: [...SCATTER_DIMS, "indices_are_sorted", "unique_indices"],
  select_and_scatter_v1: ["window_dimensions", "window_strides", "padding"],
  send_v1: SEND_RECV,
  send_v2: [...SEND_RECV, "source_target_pairs"],
  set_dimension_size_v1: ["dimension"],
  sine_v2: ACCURACY,
  slice_v1: ["start_indices", "limit_indices", "strides"],
  sort_v1: ["dimension", "is_stable"],
  sqrt_v2: ACCURACY,
  tan_v2: ACCURACY,
  tanh_v2: ACCURACY,
  torch_index_select_v1: ["dim", "batch_dims"],
  transpose_v1: ["permutation"],
  triangular_solve_v1: ["left_side", "lower", "unit_diagonal", "transpose_a"],
  unary_einsum_v1: ["einsum_config"],
};

const SORTED = new Map<string, readonly string[]>();

/** The op's inherent attribute names in property order (byte order of the names). */
export function propertyNames(shortName: string): readonly string[] | undefined {
  let names = SORTED.get(shortName);
  if (!names) {
    const declared = TABLE[shortName];
    if (!declared) return undefined;
    names = [...declared].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    SORTED.set(shortName, names);
  }
  return names;
}
