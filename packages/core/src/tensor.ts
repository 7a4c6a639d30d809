import { type DType, type HostTypedArray, allocTyped, dtypeSize } from "./dtypes.ts";

/**
 * A tensor in host memory: row-major (C order) elements of one dtype. Shapes here are always
 * row-major; the bundle loader converts the manifest's column-major letter shapes once.
 */
export interface HostTensor {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly data: HostTypedArray;
}

export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function byteLength(dtype: DType, shape: readonly number[]): number {
  return elementCount(shape) * dtypeSize(dtype);
}

export function zeros(dtype: DType, shape: readonly number[]): HostTensor {
  return { dtype, shape: [...shape], data: allocTyped(dtype, elementCount(shape)) };
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

/** The raw bytes of a tensor (a view, not a copy). */
export function tensorBytes(tensor: HostTensor): Uint8Array {
  return new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
}
