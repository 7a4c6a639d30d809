import { type NDArray, allocData, elementCount, storageBytes } from "../array.ts";
import type { TensorType } from "@xlaserve/stablehlo";
import { unsupported } from "./errors.ts";

/**
 * bitcast_convert: the same bytes read as another element type. Between widths the last result
 * axis splits or merges elements (little-endian, as XLA on CPU).
 */
export function bitcastConvert(x: NDArray, to: TensorType): NDArray {
  const fromBytes = storageBytes(x.type);
  if (x.type === "i1" && to.elem !== "i1") return packBits(x, to);
  if (to.elem === "i1" && x.type !== "i1") return unpackBits(x, to);
  if (/^(i|ui)[24]$/.test(x.type) || /^(i|ui)[24]$/.test(to.elem)) {
    throw unsupported("bitcast_convert", "bitcast of sub-byte integers");
  }
  const bytes = new Uint8Array(x.data.buffer, x.data.byteOffset, elementCount(x.shape) * fromBytes);
  const out = allocData(to.elem, elementCount(to.shape));
  const target = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  if (target.length !== bytes.length) {
    throw unsupported("bitcast_convert", `${bytes.length} bytes of ${x.type} cannot become ${to.elem}[${to.shape}]`);
  }
  target.set(bytes);
  return { type: to.elem, shape: [...to.shape], data: out };
}

/** i1 elements are single bits of the wider type, least significant first. */
function packBits(x: NDArray, to: TensorType): NDArray {
  const out = allocData(to.elem, elementCount(to.shape));
  const bytes = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  if (bytes.length * 8 !== x.data.length) {
    throw unsupported("bitcast_convert", `${x.data.length} bits cannot become ${to.elem}[${to.shape}]`);
  }
  for (let i = 0; i < x.data.length; i++) if (x.data[i]) bytes[i >> 3] = (bytes[i >> 3] as number) | (1 << (i & 7));
  return { type: to.elem, shape: [...to.shape], data: out };
}

function unpackBits(x: NDArray, to: TensorType): NDArray {
  const bytes = new Uint8Array(x.data.buffer, x.data.byteOffset, x.data.byteLength);
  const out = new Uint8Array(elementCount(to.shape));
  if (out.length !== bytes.length * 8) {
    throw unsupported("bitcast_convert", `${bytes.length * 8} bits cannot become i1[${to.shape}]`);
  }
  for (let i = 0; i < out.length; i++) out[i] = ((bytes[i >> 3] as number) >> (i & 7)) & 1;
  return { type: "i1", shape: [...to.shape], data: out };
}
