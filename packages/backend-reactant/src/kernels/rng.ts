import type { NDArray } from "../array.ts";
import type { TensorType } from "../ir.ts";
import { unsupported } from "./errors.ts";

/**
 * rng_bit_generator. The bits are implementation-defined by the spec; matching XLA needs its
 * exact Threefry / Philox counter layout, which this engine does not implement yet, so the op
 * is reported UNSUPPORTED rather than producing bits that differ from XLA's.
 */
export function rngBitGenerator(algorithm: string, _state: NDArray, _output: TensorType): NDArray[] {
  throw unsupported("rng_bit_generator", `rng_bit_generator (${algorithm}) is not implemented`);
}
