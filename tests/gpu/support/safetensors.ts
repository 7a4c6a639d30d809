import { readFileSync } from "node:fs";
import { type DType, type HostTensor, dtypeFromSafetensors, dtypeSize, viewTyped } from "@xlaserve/core";

/**
 * A small safetensors reader for the GPU tests (8-byte LE header length, JSON header, data),
 * kept here so the GPU tests do not depend on the bundle loader's progress.
 */
export interface Safetensors {
  readonly metadata: Record<string, string>;
  readonly names: string[];
  tensor(name: string): HostTensor;
}

export function readSafetensors(path: string): Safetensors {
  const file = readFileSync(path);
  const headerLength = Number(file.readBigUInt64LE(0));
  const header = JSON.parse(file.subarray(8, 8 + headerLength).toString("utf8")) as Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] }
  >;
  const metadata = (header.__metadata__ ?? {}) as unknown as Record<string, string>;
  const base = 8 + headerLength;
  return {
    metadata,
    names: Object.keys(header).filter((k) => k !== "__metadata__"),
    tensor(name: string): HostTensor {
      const entry = header[name];
      if (!entry) throw new Error(`${path} has no tensor ${name}`);
      const dtype = dtypeFromSafetensors(entry.dtype) as DType;
      const [start, end] = entry.data_offsets;
      // Copy into an ArrayBuffer of its own: aligned, and safe to hand to C.
      const storage = new ArrayBuffer(end - start);
      new Uint8Array(storage).set(file.subarray(base + start, base + end));
      return { dtype, shape: entry.shape, data: viewTyped(dtype, storage, 0, (end - start) / dtypeSize(dtype)) };
    },
  };
}
