import { type HostTensor, XlaserveError, allocTyped, bytesOfTensor, dtypeSize, elementCount } from "@xlaserve/core";

/** The smallest compiled size that holds `batch`, or undefined when none does. */
export function chooseBatchSize(compiled: readonly number[], batch: number): number | undefined {
  let best: number | undefined;
  for (const size of compiled) if (size >= batch && (best === undefined || size < best)) best = size;
  return best;
}

/** Pads a row-major tensor with zeros along `axis` up to `size` (no copy when already that size). */
export function padAxis(tensor: HostTensor, axis: number, size: number): HostTensor {
  const current = tensor.shape[axis];
  if (current === undefined) throw new XlaserveError("INTERNAL", `axis ${axis} out of range for ${tensor.shape}`);
  if (current === size) return tensor;
  return concatAxis([tensor], axis, size);
}

/** Keeps the first `size` entries along `axis` (no copy when already that size). */
export function sliceAxis(tensor: HostTensor, axis: number, size: number): HostTensor {
  const current = tensor.shape[axis];
  if (current === undefined || current === size) return tensor;
  if (current < size) throw new XlaserveError("INTERNAL", `cannot slice axis ${axis} from ${current} up to ${size}`);
  return sliceRange(tensor, axis, 0, size);
}

/**
 * Concatenates row-major tensors (same dtype, same shape but `axis`) along `axis`, zero-padded
 * up to `size` rows there (default: their total): one allocation and one copy of each part, so a
 * coalesced execution's inputs are joined and padded in a single pass (for image inputs of
 * hundreds of KB a row, each extra pass was a fresh zeroed buffer and a copy per row).
 */
export function concatAxis(parts: readonly HostTensor[], axis: number, size?: number): HostTensor {
  const first = parts[0];
  if (!first) throw new XlaserveError("INTERNAL", "nothing to concatenate");
  const esize = dtypeSize(first.dtype);
  const outer = elementCount(first.shape.slice(0, axis));
  const inner = elementCount(first.shape.slice(axis + 1)) * esize;
  const rowsIn = parts.reduce((a, p) => a + (p.shape[axis] ?? 0), 0);
  const total = size ?? rowsIn;
  if (total < rowsIn) throw new XlaserveError("INTERNAL", `cannot fit ${rowsIn} rows of axis ${axis} in ${total}`);
  const shape = [...first.shape];
  shape[axis] = total;
  const out = allocTyped(first.dtype, elementCount(shape));
  const dst = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  const dstBlock = total * inner;
  let offset = 0;
  for (const p of parts) {
    const rows = p.shape[axis] ?? 0;
    const src = bytesOfTensor(p);
    const block = rows * inner;
    if (outer === 1) dst.set(src.subarray(0, block), offset * inner);
    else
      for (let o = 0; o < outer; o++) dst.set(src.subarray(o * block, (o + 1) * block), o * dstBlock + offset * inner);
    offset += rows;
  }
  return { dtype: first.dtype, shape, data: out };
}

/** Rows [start, start + length) of `axis` as a new tensor. */
export function sliceRange(tensor: HostTensor, axis: number, start: number, length: number): HostTensor {
  const current = tensor.shape[axis];
  if (current === undefined || start + length > current) {
    throw new XlaserveError("INTERNAL", `cannot take rows ${start}..${start + length} of axis ${axis} (${current})`);
  }
  if (start === 0 && length === current) return tensor;
  const shape = [...tensor.shape];
  shape[axis] = length;
  const esize = dtypeSize(tensor.dtype);
  const outer = elementCount(tensor.shape.slice(0, axis));
  const inner = elementCount(tensor.shape.slice(axis + 1)) * esize;
  const src = bytesOfTensor(tensor);
  const out = allocTyped(tensor.dtype, elementCount(shape));
  const dst = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  const srcBlock = current * inner;
  const dstBlock = length * inner;
  for (let o = 0; o < outer; o++) {
    dst.set(src.subarray(o * srcBlock + start * inner, o * srcBlock + (start + length) * inner), o * dstBlock);
  }
  return { dtype: tensor.dtype, shape, data: out };
}
