import { type DType, XlaserveError } from "@xlaserve/core";
import type { ElemType } from "../array.ts";

/** core's DType names <-> the engine's element types (same storage, different spelling). */
const TO_ELEM: Partial<Record<DType, ElemType>> = {
  bool: "i1",
  i8: "i8",
  i16: "i16",
  i32: "i32",
  i64: "i64",
  u8: "ui8",
  u16: "ui16",
  u32: "ui32",
  u64: "ui64",
  f16: "f16",
  bf16: "bf16",
  f32: "f32",
  f64: "f64",
};

const TO_DTYPE = new Map<ElemType, DType>(Object.entries(TO_ELEM).map(([d, e]) => [e as ElemType, d as DType]));

export function elemTypeOf(dtype: DType): ElemType {
  const t = TO_ELEM[dtype];
  if (!t) throw new XlaserveError("UNSUPPORTED", `the CPU engine does not support ${dtype} tensors`, { dtype });
  return t;
}

export function dtypeOf(type: ElemType): DType {
  const d = TO_DTYPE.get(type);
  if (!d) throw new XlaserveError("UNSUPPORTED", `a ${type} result has no host dtype`, { type });
  return d;
}
