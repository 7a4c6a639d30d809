import type { AbstractBackend, DeviceBuffer } from "./backend.ts";
import type { HostTensor } from "./tensor.ts";

/**
 * Uploads every tensor with all transfers in flight at once, in argument order. A device backend
 * starts each copy when upload() is called and only the completion is awaited, so issuing them
 * together overlaps the copies with each other and with whatever the caller does next (on PJRT a
 * ResNet-50's 320 weights otherwise wait one event each). If any upload fails, the ones that
 * succeeded are freed and the first error is thrown: the caller never holds half a weight set.
 */
export async function uploadAll(
  backend: AbstractBackend,
  tensors: readonly HostTensor[],
  device?: number,
): Promise<DeviceBuffer[]> {
  const settled = await Promise.allSettled(tensors.map((t) => backend.upload(t, device)));
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failure) {
    for (const s of settled) if (s.status === "fulfilled") s.value.dispose();
    throw failure.reason;
  }
  return settled.map((s) => (s as PromiseFulfilledResult<DeviceBuffer>).value);
}
