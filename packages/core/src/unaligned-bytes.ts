/**
 * A tensor whose elements arrived at an offset their dtype cannot be viewed at (a binary input
 * after a JSON header of any length: 151 bytes for a ResNet-50 request). Its `data` is an aligned
 * copy made when first read, so anything that needs typed elements gets them as before; whoever
 * can take the bytes as they lie (a coalesced execution copying rows into one batch buffer, a
 * hand-over to another thread) reads `unalignedBytesOf` and never makes that copy. On the HTTP
 * thread the copy was a fresh 602 KB buffer, its page faults and a pass over every byte per
 * request.
 */
import { type DType, type HostTypedArray, bytesAsTyped } from "./dtypes.ts";
import type { HostTensor } from "./tensor.ts";

const UNALIGNED = Symbol("unalignedBytes");

/** A tensor over `bytes` (its elements' bytes, at any offset); `onCopy` is told of the aligned copy when one is made. */
export function tensorOverBytes(
  dtype: DType,
  shape: readonly number[],
  bytes: Uint8Array,
  onCopy?: (copy: HostTypedArray) => void,
): HostTensor {
  let data: HostTypedArray | null = null;
  return {
    dtype,
    shape,
    [UNALIGNED]: bytes,
    get data(): HostTypedArray {
      if (!data) {
        data = bytesAsTyped(dtype, bytes);
        onCopy?.(data);
      }
      return data;
    },
  } as HostTensor;
}

/** The bytes a tensor from tensorOverBytes lies over (null for any other tensor). */
export function unalignedBytesOf(t: HostTensor): Uint8Array | null {
  const bytes = (t as { [UNALIGNED]?: Uint8Array })[UNALIGNED];
  return bytes === undefined ? null : bytes;
}

/** A tensor's bytes without making an aligned copy of them (a view either way). */
export function bytesOfTensor(t: HostTensor): Uint8Array {
  const raw = unalignedBytesOf(t);
  if (raw) return raw;
  return new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}
