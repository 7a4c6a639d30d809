import type { NDArray, TypedArray } from "./array.ts";

/** The one NaN each type's outputs carry: the quiet NaN with sign 0 and an empty payload. */
const F16_NAN = 0x7e00;
const BF16_NAN = 0x7fc0;

/**
 * The array, or a copy whose every NaN is the canonical one, so outputs are the same bytes on
 * every run.
 *
 * Why: JavaScriptCore boxes a double in its interpreter tiers and turns any NaN into its pure
 * NaN there, while its optimizing tiers keep the NaN's sign and payload. The same program can
 * therefore write other NaN bits on its first runs than once it is hot. A JS NaN literal is the
 * pure NaN in every tier, so writing it gives 0x7fc00000 (f32) and 0x7ff8000000000000 (f64).
 * f16 and bf16 are stored as bits and get the same quiet NaN. f8 types are left alone: their
 * encoders write one NaN pattern per type.
 *
 * A copy and never a write in place: a result may be an argument, a weight or a constant that
 * later runs read again. The copy is only made when a NaN is there, which is rare.
 */
export function withCanonicalNaNs(array: NDArray): NDArray {
  const data = array.data;
  switch (array.type) {
    case "f32":
    case "f64":
    case "c64":
    case "c128":
      return floatsHaveNaN(data as Float32Array | Float64Array)
        ? { ...array, shape: [...array.shape], data: floatsCanonical(data as Float32Array | Float64Array) }
        : array;
    case "f16":
    case "bf16": {
      const [exponentOnly, nan] = array.type === "f16" ? [0x7c00, F16_NAN] : [0x7f80, BF16_NAN];
      return halvesNeedChange(data as Uint16Array, exponentOnly, nan)
        ? { ...array, shape: [...array.shape], data: halvesCanonical(data as Uint16Array, exponentOnly, nan) }
        : array;
    }
    default:
      return array;
  }
}

function floatsHaveNaN(data: Float32Array | Float64Array): boolean {
  // biome-ignore lint/suspicious/noSelfCompare: x !== x is the NaN test
  for (let i = 0; i < data.length; i++) if (data[i] !== data[i]) return true;
  return false;
}

function floatsCanonical(data: Float32Array | Float64Array): TypedArray {
  const copy = data.slice();
  // biome-ignore lint/suspicious/noSelfCompare: x !== x is the NaN test
  for (let i = 0; i < copy.length; i++) if (copy[i] !== copy[i]) copy[i] = Number.NaN;
  return copy;
}

/** A NaN other than `nan`: exponent all ones, mantissa not zero (the sign bit masked off). */
function halvesNeedChange(bits: Uint16Array, exponentOnly: number, nan: number): boolean {
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i] as number;
    if ((b & 0x7fff) > exponentOnly && b !== nan) return true;
  }
  return false;
}

function halvesCanonical(bits: Uint16Array, exponentOnly: number, nan: number): Uint16Array {
  const copy = bits.slice();
  for (let i = 0; i < copy.length; i++) if (((copy[i] as number) & 0x7fff) > exponentOnly) copy[i] = nan;
  return copy;
}
