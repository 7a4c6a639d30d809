import { readFileSync } from "node:fs";
import type { NDArray } from "../../src/array.ts";

/** A minimal safetensors reader for the tests: header JSON, then raw little-endian tensors. */
export interface SafetensorsContents {
  readonly metadata: Record<string, string>;
  readonly tensors: Map<string, NDArray>;
}

const TYPES: Record<string, NDArray["type"]> = {
  F32: "f32",
  F64: "f64",
  F16: "f16",
  BF16: "bf16",
  I32: "i32",
  I64: "i64",
  I8: "i8",
  U8: "ui8",
  BOOL: "i1",
};

export function readSafetensors(path: string): SafetensorsContents {
  const bytes = new Uint8Array(readFileSync(path));
  const headerLength = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  const start = 8 + headerLength;
  const tensors = new Map<string, NDArray>();
  for (const [name, info] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const { dtype, shape, data_offsets } = info as { dtype: string; shape: number[]; data_offsets: [number, number] };
    const type = TYPES[dtype];
    if (!type) throw new Error(`unsupported safetensors dtype ${dtype}`);
    const raw = bytes.slice(start + data_offsets[0], start + data_offsets[1]);
    const data = viewAs(type, raw.buffer);
    tensors.set(name, { type, shape, data });
  }
  return { metadata: (header.__metadata__ ?? {}) as Record<string, string>, tensors };
}

function viewAs(type: NDArray["type"], buffer: ArrayBuffer): NDArray["data"] {
  switch (type) {
    case "f32":
      return new Float32Array(buffer);
    case "f64":
      return new Float64Array(buffer);
    case "f16":
    case "bf16":
      return new Uint16Array(buffer);
    case "i32":
      return new Int32Array(buffer);
    case "i64":
      return new BigInt64Array(buffer);
    case "i8":
      return new Int8Array(buffer);
    default:
      return new Uint8Array(buffer);
  }
}
