import { type HostTensor, allocTyped } from "@xlaserve/core";

/**
 * The private host copy of a model's weights (private: the bundle's file mapping may change under
 * a reload), made a few MiB at a time with the event loop let through in between. The registry
 * makes it on the HTTP thread while other models serve; made at once, ResNet-50's 100 MB took
 * 65-85 ms, every request on the thread waiting behind it.
 */
export async function copyTensorsYielding(tensors: readonly HostTensor[], sliceBytes = 8 << 20): Promise<HostTensor[]> {
  const out: HostTensor[] = [];
  let sinceYield = 0;
  for (const t of tensors) {
    const data = allocTyped(t.dtype, t.data.length);
    const src = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    const dst = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    for (let start = 0; start < src.byteLength; start += sliceBytes) {
      const end = Math.min(src.byteLength, start + sliceBytes);
      dst.set(src.subarray(start, end), start);
      sinceYield += end - start;
      if (sinceYield >= sliceBytes) {
        sinceYield = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    out.push({ dtype: t.dtype, shape: [...t.shape], data });
  }
  return out;
}
