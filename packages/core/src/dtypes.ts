import type { TypedArray } from "@xlaserve/stablehlo/elements.ts";

/**
 * Element types shared by every package: the manifest tokens of ReactantServer bundles, the
 * KServe v2 datatype names, the safetensors names, the StableHLO element types, byte sizes and
 * the typed array that holds each on the host.
 */

export const DTYPES = [
  "bool",
  "i8",
  "i16",
  "i32",
  "i64",
  "u8",
  "u16",
  "u32",
  "u64",
  "f16",
  "bf16",
  "f32",
  "f64",
  "f8_e5m2",
  "f8_e4m3",
] as const;

export type DType = (typeof DTYPES)[number];

/** The typed arrays host tensors live in: the program model's storage, so tensors and constants share it. */
export type HostTypedArray = TypedArray;

interface DTypeInfo {
  /** Bytes per element. */
  readonly size: number;
  /** KServe v2 / Open Inference Protocol name; null where the protocol has none. */
  readonly kserve: string | null;
  /** Name in a safetensors header. */
  readonly safetensors: string;
  /** StableHLO / MLIR element type. */
  readonly mlir: string;
  /**
   * Whether clients may send or receive it. f8 types exist only inside executables
   * (ReactantServer's rule), so a manifest may not expose them as client tensors.
   */
  readonly clientVisible: boolean;
}

const INFO: Record<DType, DTypeInfo> = {
  bool: { size: 1, kserve: "BOOL", safetensors: "BOOL", mlir: "i1", clientVisible: true },
  i8: { size: 1, kserve: "INT8", safetensors: "I8", mlir: "i8", clientVisible: true },
  i16: { size: 2, kserve: "INT16", safetensors: "I16", mlir: "i16", clientVisible: true },
  i32: { size: 4, kserve: "INT32", safetensors: "I32", mlir: "i32", clientVisible: true },
  i64: { size: 8, kserve: "INT64", safetensors: "I64", mlir: "i64", clientVisible: true },
  u8: { size: 1, kserve: "UINT8", safetensors: "U8", mlir: "ui8", clientVisible: true },
  u16: { size: 2, kserve: "UINT16", safetensors: "U16", mlir: "ui16", clientVisible: true },
  u32: { size: 4, kserve: "UINT32", safetensors: "U32", mlir: "ui32", clientVisible: true },
  u64: { size: 8, kserve: "UINT64", safetensors: "U64", mlir: "ui64", clientVisible: true },
  f16: { size: 2, kserve: "FP16", safetensors: "F16", mlir: "f16", clientVisible: true },
  bf16: { size: 2, kserve: "BF16", safetensors: "BF16", mlir: "bf16", clientVisible: true },
  f32: { size: 4, kserve: "FP32", safetensors: "F32", mlir: "f32", clientVisible: true },
  f64: { size: 8, kserve: "FP64", safetensors: "F64", mlir: "f64", clientVisible: true },
  f8_e5m2: { size: 1, kserve: null, safetensors: "F8_E5M2", mlir: "f8E5M2", clientVisible: false },
  f8_e4m3: { size: 1, kserve: null, safetensors: "F8_E4M3", mlir: "f8E4M3FN", clientVisible: false },
};

export function isDType(token: string): token is DType {
  return Object.hasOwn(INFO, token);
}

export function dtypeSize(dtype: DType): number {
  return INFO[dtype].size;
}

export function dtypeInfo(dtype: DType): DTypeInfo {
  return INFO[dtype];
}

const BY_KSERVE = new Map<string, DType>();
const BY_SAFETENSORS = new Map<string, DType>();
const BY_MLIR = new Map<string, DType>();
for (const dtype of DTYPES) {
  const info = INFO[dtype];
  if (info.kserve) BY_KSERVE.set(info.kserve, dtype);
  BY_SAFETENSORS.set(info.safetensors, dtype);
  BY_MLIR.set(info.mlir, dtype);
}
// XLA also prints the FN-less spelling for e4m3 in some dialect versions.
BY_MLIR.set("f8E4M3", "f8_e4m3");

export function dtypeFromKserve(name: string): DType | undefined {
  return BY_KSERVE.get(name);
}

export function dtypeFromSafetensors(name: string): DType | undefined {
  return BY_SAFETENSORS.get(name);
}

export function dtypeFromMlir(name: string): DType | undefined {
  return BY_MLIR.get(name);
}

export function kserveName(dtype: DType): string {
  const name = INFO[dtype].kserve;
  if (!name) throw new TypeError(`dtype ${dtype} has no KServe v2 datatype`);
  return name;
}

/**
 * The typed array that stores a dtype's elements natively. 16-bit floats are kept as their raw
 * bits (Uint16Array) and f8 as raw bytes; `toFloat32` / `fromFloat32` convert them.
 */
export function allocTyped(dtype: DType, length: number): HostTypedArray {
  return viewTyped(dtype, new ArrayBuffer(length * dtypeSize(dtype)), 0, length);
}

export function viewTyped(dtype: DType, buffer: ArrayBufferLike, byteOffset: number, length: number): HostTypedArray {
  switch (dtype) {
    case "bool":
    case "u8":
    case "f8_e5m2":
    case "f8_e4m3":
      return new Uint8Array(buffer, byteOffset, length);
    case "i8":
      return new Int8Array(buffer, byteOffset, length);
    case "i16":
      return new Int16Array(buffer, byteOffset, length);
    case "u16":
    case "f16":
    case "bf16":
      return new Uint16Array(buffer, byteOffset, length);
    case "i32":
      return new Int32Array(buffer, byteOffset, length);
    case "u32":
      return new Uint32Array(buffer, byteOffset, length);
    case "i64":
      return new BigInt64Array(buffer, byteOffset, length);
    case "u64":
      return new BigUint64Array(buffer, byteOffset, length);
    case "f32":
      return new Float32Array(buffer, byteOffset, length);
    case "f64":
      return new Float64Array(buffer, byteOffset, length);
  }
}

/** Views raw little-endian bytes as a dtype's typed array, copying only when misaligned. */
export function bytesAsTyped(dtype: DType, bytes: Uint8Array): HostTypedArray {
  const size = dtypeSize(dtype);
  if (bytes.byteLength % size !== 0) {
    throw new RangeError(`${bytes.byteLength} bytes is not a whole number of ${dtype} elements`);
  }
  const length = bytes.byteLength / size;
  if (bytes.byteOffset % size === 0) return viewTyped(dtype, bytes.buffer, bytes.byteOffset, length);
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return viewTyped(dtype, copy.buffer, 0, length);
}

export function typedAsBytes(array: HostTypedArray): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

export function isFloat(dtype: DType): boolean {
  return dtype === "f16" || dtype === "bf16" || dtype === "f32" || dtype === "f64" || dtype.startsWith("f8");
}

export function isSignedInt(dtype: DType): boolean {
  return dtype === "i8" || dtype === "i16" || dtype === "i32" || dtype === "i64";
}

export function isUnsignedInt(dtype: DType): boolean {
  return dtype === "u8" || dtype === "u16" || dtype === "u32" || dtype === "u64";
}
