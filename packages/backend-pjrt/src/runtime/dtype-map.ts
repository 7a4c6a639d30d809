import { type DType, XlaserveError } from "@xlaserve/core";

/** PJRT_Buffer_Type values for the dtypes xlaserve carries. */
const TO_PJRT: Record<DType, number> = {
  bool: 1, // PRED
  i8: 2,
  i16: 3,
  i32: 4,
  i64: 5,
  u8: 6,
  u16: 7,
  u32: 8,
  u64: 9,
  f16: 10,
  f32: 11,
  f64: 12,
  bf16: 13,
  f8_e5m2: 16,
  f8_e4m3: 17, // F8E4M3FN: what MLIR's f8E4M3FN and JAX's float8_e4m3fn mean.
};

const FROM_PJRT = new Map<number, DType>(Object.entries(TO_PJRT).map(([d, n]) => [n, d as DType]));

export function pjrtType(dtype: DType): number {
  return TO_PJRT[dtype];
}

export function dtypeFromPjrt(type: number): DType {
  const dtype = FROM_PJRT.get(type);
  if (!dtype)
    throw new XlaserveError("UNSUPPORTED", `PJRT buffer type ${type} has no xlaserve dtype`, { pjrtType: type });
  return dtype;
}
