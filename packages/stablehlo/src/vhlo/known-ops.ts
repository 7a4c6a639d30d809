import { propertyNames } from "./op-attributes.ts";

/** VHLO ops without attributes (the rest are the keys of op-attributes.ts). */
const WITHOUT_ATTRIBUTES = new Set(
  (
    "abs_v1 add_v1 after_all_v1 and_v1 async_start_v1 async_done_v1 atan2_v1 bitcast_convert_v1 case_v1 cbrt_v1 ceil_v1 clamp_v1 " +
    "count_leading_zeros_v1 complex_v1 convert_v1 cosine_v1 create_token_v1 divide_v1 dynamic_pad_v1 " +
    "dynamic_reshape_v1 dynamic_update_slice_v1 exponential_v1 exponential_minus_one_v1 floor_v1 if_v1 " +
    "imag_v1 is_finite_v1 log_plus_one_v1 log_v1 logistic_v1 maximum_v1 minimum_v1 multiply_v1 negate_v1 " +
    "not_v1 optimization_barrier_v1 or_v1 partition_id_v1 popcnt_v1 power_v1 real_dynamic_slice_v1 real_v1 " +
    "remainder_v1 replica_id_v1 reshape_v1 return_v1 round_nearest_even_v1 round_nearest_afz_v1 rsqrt_v1 " +
    "select_v1 shift_left_v1 shift_right_arithmetic_v1 shift_right_logical_v1 sign_v1 sine_v1 sqrt_v1 " +
    "subtract_v1 tan_v1 tanh_v1 tuple_v1 uniform_dequantize_v1 uniform_quantize_v1 while_v1 xor_v1"
  ).split(" "),
);

export function isKnownVhloOp(shortName: string): boolean {
  return WITHOUT_ATTRIBUTES.has(shortName) || propertyNames(shortName) !== undefined;
}
