import { ptr } from "bun:ffi";
import {
  type DType,
  type DeviceBuffer,
  type HostTensor,
  XlaserveError,
  byteLength,
  dtypeSize,
  viewTyped,
} from "@xlaserve/core";
import { CStruct, keepAlive, readInt64s } from "../abi/cstruct.ts";
import {
  PJRT_Buffer_Dimensions_Args,
  PJRT_Buffer_ElementType_Args,
  PJRT_Buffer_ToHostBuffer_Args,
  PJRT_Client_BufferFromHostBuffer_Args,
} from "../abi/structs.ts";
import type { PjrtClient } from "./client.ts";
import { dtypeFromPjrt, pjrtType } from "./dtype-map.ts";
import { awaitEvent } from "./events.ts";

/**
 * PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes: the plugin may read the host bytes
 * until done_with_host_buffer fires, so upload() keeps them referenced until then and resolves
 * only after; the caller may reuse its tensor as soon as the promise resolves. (Zero-copy would
 * tie host memory to the buffer's whole life.)
 */
export const HOST_SEMANTICS_UNTIL_TRANSFER_COMPLETES = 1;

/**
 * PJRT_HostBufferSemantics_kImmutableOnlyDuringCall: the plugin copies the bytes into a staging
 * buffer of its own before the call returns, so done_with_host_buffer is done at once.
 */
export const HOST_SEMANTICS_ONLY_DURING_CALL = 0;

/**
 * Inputs up to this size are copied during the call: a request's tensor (an MLP's 256 bytes, an
 * image batch's few MiB) then costs no wait for done_with_host_buffer, one event-loop wait less
 * on the request path, for a staging copy of at most this much. Larger ones (weights) are read
 * where they lie until the transfer completes.
 */
export const STAGED_UPLOAD_MAX_BYTES = 4 * 1024 * 1024;

/** The semantics an upload of `bytes` uses. */
export function uploadSemantics(bytes: number): number {
  return bytes <= STAGED_UPLOAD_MAX_BYTES ? HOST_SEMANTICS_ONLY_DURING_CALL : HOST_SEMANTICS_UNTIL_TRANSFER_COMPLETES;
}

/** A device buffer owned by the caller; dispose() (or `using`) frees it, GC is the safety net. */
export class PjrtBuffer implements DeviceBuffer {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly byteLength: number;
  readonly device: number;
  readonly handle: number;
  private readonly client: PjrtClient;
  private readonly token: number;
  private disposed = false;

  constructor(client: PjrtClient, handle: number, dtype: DType, shape: readonly number[], device: number) {
    this.client = client;
    this.handle = handle;
    this.dtype = dtype;
    this.shape = shape;
    this.byteLength = byteLength(dtype, shape);
    this.device = device;
    this.token = client.owned.adopt(this, "buffer", handle);
  }

  /** Wraps a buffer the plugin produced (an execute output), reading its type and dims. */
  static adopt(client: PjrtClient, handle: number, device: number): PjrtBuffer {
    const type = new CStruct(PJRT_Buffer_ElementType_Args, { buffer: handle });
    client.api.call("PJRT_Buffer_ElementType", type);
    const dims = new CStruct(PJRT_Buffer_Dimensions_Args, { buffer: handle });
    client.api.call("PJRT_Buffer_Dimensions", dims);
    const shape = readInt64s(dims.get("dims"), dims.get("num_dims"));
    return new PjrtBuffer(client, handle, dtypeFromPjrt(type.get("type")), shape, device);
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** The handle for a PJRT call; throws DISPOSED after dispose(). */
  use(): number {
    if (this.disposed || !this.client.alive) {
      throw new XlaserveError("DISPOSED", "the device buffer was already disposed", { shape: this.shape });
    }
    return this.handle;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.client.owned.release(this.token, this);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** Copies a host tensor to a device (PJRT_Client_BufferFromHostBuffer). */
export async function uploadTensor(client: PjrtClient, tensor: HostTensor, device = 0): Promise<PjrtBuffer> {
  const target = client.device(device);
  const expected = byteLength(tensor.dtype, tensor.shape);
  if (tensor.data.byteLength !== expected) {
    throw new XlaserveError(
      "INVALID_ARGUMENT",
      `tensor data holds ${tensor.data.byteLength} bytes; ${tensor.dtype} [${tensor.shape.join(", ")}] needs ${expected}`,
    );
  }
  // A view over the data's ArrayBuffer: touching `.buffer` first pins the storage (see CStruct).
  const host = new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, Math.max(1, tensor.data.byteLength));
  const dims = new BigInt64Array(new ArrayBuffer(Math.max(1, tensor.shape.length) * 8));
  tensor.shape.forEach((d, i) => {
    dims[i] = BigInt(d);
  });
  const args = new CStruct(PJRT_Client_BufferFromHostBuffer_Args, {
    client: client.handle,
    data: ptr(host),
    type: pjrtType(tensor.dtype),
    dims: ptr(dims),
    num_dims: tensor.shape.length,
    host_buffer_semantics: uploadSemantics(tensor.data.byteLength),
    device: target.handle,
  });
  client.api.call("PJRT_Client_BufferFromHostBuffer", args);
  const buffer = new PjrtBuffer(client, args.get("buffer"), tensor.dtype, [...tensor.shape], device);
  try {
    await awaitEvent(client.api, args.get("done_with_host_buffer"), "upload", "PJRT_ERROR", client.eventWait);
  } catch (error) {
    buffer.dispose();
    throw error;
  }
  // The host bytes stay reachable until done_with_host_buffer fired: the plugin read them until then.
  keepAlive(host, dims, args);
  return buffer;
}

/** Copies a device buffer into a new host tensor (PJRT_Buffer_ToHostBuffer). */
export async function downloadBuffer(client: PjrtClient, buffer: PjrtBuffer): Promise<HostTensor> {
  const size = buffer.byteLength;
  const storage = new ArrayBuffer(Math.max(1, size));
  const dst = new Uint8Array(storage);
  const args = new CStruct(PJRT_Buffer_ToHostBuffer_Args, {
    src: buffer.use(),
    dst: ptr(dst),
    dst_size: size,
  });
  client.api.call("PJRT_Buffer_ToHostBuffer", args);
  await awaitEvent(client.api, args.get("event"), "download", "PJRT_ERROR", client.eventWait);
  keepAlive(dst, args);
  const length = size / dtypeSize(buffer.dtype);
  return { dtype: buffer.dtype, shape: [...buffer.shape], data: viewTyped(buffer.dtype, storage, 0, length) };
}
