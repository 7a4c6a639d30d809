import {
  type DType,
  type HostTypedArray,
  allocTyped,
  kserveName,
  numberToBf16Bits,
  numberToF16Bits,
} from "@xlaserve/core";
import { badRequest } from "../http-error.ts";

/**
 * Decodes a JSON tensor's `data` (flat, or nested row-major lists) straight into the dtype's
 * typed array, checking every element as it is written: one pass, no intermediate flat array.
 */
export function decodeJsonData(
  label: string,
  dtype: DType,
  shape: readonly number[],
  count: number,
  data: unknown,
  maxElements: number,
): HostTypedArray {
  if (!Array.isArray(data)) {
    throw badRequest(`${label}: data must be a list of elements, got ${describe(data)}`);
  }
  const flat = data.length === 0 || !Array.isArray(data[0]);
  if (flat && data.length !== count) {
    throw badRequest(`${label}: data has ${data.length} elements but shape [${shape.join(", ")}] needs ${count}`);
  }
  // Each JSON element takes at least two characters, so a shape asking for more elements than
  // the text could hold is wrong; checked before allocating so a huge shape cannot exhaust memory.
  if (count > maxElements) {
    throw badRequest(
      `${label}: shape [${shape.join(", ")}] needs ${count} elements, more than the request's data holds`,
    );
  }
  if (flat && (dtype === "f32" || dtype === "f64")) return flatFloats(label, dtype, data, count);
  const out = allocTyped(dtype, count);
  const writer = writerFor(label, dtype, out);
  if (flat) writer(data, 0);
  else new NestedWalk(label, shape, writer).visit(data, 0);
  return out;
}

/** Writes a leaf list of scalars at `offset`, checking each element. */
type LeafWriter = (leaf: readonly unknown[], offset: number) => void;

/**
 * Walks nested lists, which must be the tensor's natural multi-dimensional form (the protocol's
 * two layouts are that and the flat one): as deep as the shape has axes, each list as long as its
 * axis, scalars only at the last. Anything else has no row-major meaning, and the walk never goes
 * deeper than the shape, so no nesting depth can exhaust the stack.
 */
class NestedWalk {
  private cursor = 0;
  constructor(
    private readonly label: string,
    private readonly shape: readonly number[],
    private readonly writer: LeafWriter,
  ) {}

  visit(list: readonly unknown[], depth: number): void {
    const shape = this.shape;
    const last = depth === shape.length - 1;
    if (shape.length === 0 || (last && Array.isArray(list[0]))) {
      throw badRequest(`${this.label}: data is nested deeper than ${this.shown()} has axes; ${HOW}`);
    }
    if (list.length !== shape[depth]) {
      throw badRequest(
        `${this.label}: nested data has ${list.length} elements at depth ${depth} but axis ${depth} of ${this.shown()} is ${shape[depth]}; ${HOW}`,
      );
    }
    if (last) {
      this.writer(list, this.cursor);
      this.cursor += list.length;
      return;
    }
    for (const item of list) {
      if (!Array.isArray(item)) {
        throw badRequest(
          `${this.label}: nested data has a scalar at depth ${depth + 1}, above the last axis of ${this.shown()}; ${HOW}`,
        );
      }
      this.visit(item, depth + 1);
    }
  }

  private shown(): string {
    return `shape [${this.shape.join(", ")}]`;
  }
}

const HOW = "nest it exactly as the shape or send it flat";

const INT_RANGES: Partial<Record<DType, readonly [number, number]>> = {
  i8: [-128, 127],
  i16: [-32768, 32767],
  i32: [-2147483648, 2147483647],
  u8: [0, 255],
  u16: [0, 65535],
  u32: [0, 4294967295],
};

function writerFor(label: string, dtype: DType, out: HostTypedArray): LeafWriter {
  const name = kserveName(dtype);
  const fail = failFor(label);
  switch (dtype) {
    case "f32":
    case "f64": {
      const target = out as Float32Array | Float64Array;
      return (leaf, offset) => {
        for (let i = 0; i < leaf.length; i++) {
          const v = leaf[i];
          const k = offset + i;
          if (typeof v !== "number") target[k] = nonFinite(v, k, name, fail);
          else {
            target[k] = v;
            // Read back: the stored value is the one rounded to the type.
            if (!Number.isFinite(target[k] as number)) outOfRange(v, k, dtype, fail);
          }
        }
      };
    }
    case "f16":
    case "bf16": {
      const target = out as Uint16Array;
      const toBits = dtype === "f16" ? numberToF16Bits : numberToBf16Bits;
      const exponent = dtype === "f16" ? 0x7c00 : 0x7f80;
      return (leaf, offset) => {
        for (let i = 0; i < leaf.length; i++) {
          const v = leaf[i];
          const k = offset + i;
          if (typeof v !== "number") target[k] = toBits(nonFinite(v, k, name, fail));
          else {
            const bits = toBits(v);
            if ((bits & exponent) === exponent) outOfRange(v, k, dtype, fail);
            target[k] = bits;
          }
        }
      };
    }
    case "bool": {
      const target = out as Uint8Array;
      return (leaf, offset) => {
        for (let i = 0; i < leaf.length; i++) {
          const v = leaf[i];
          if (v === true || v === 1) target[offset + i] = 1;
          else if (v === false || v === 0) target[offset + i] = 0;
          else fail(v, offset + i, "is not a BOOL: use true/false (or 1/0)");
        }
      };
    }
    case "i64":
    case "u64": {
      const target = out as BigInt64Array | BigUint64Array;
      const min = dtype === "i64" ? Number.MIN_SAFE_INTEGER : 0;
      return (leaf, offset) => {
        for (let i = 0; i < leaf.length; i++) {
          const v = leaf[i];
          checkInteger(v, offset + i, name, fail);
          if ((v as number) < min) fail(v, offset + i, `is out of range for ${name}`);
          if (!Number.isSafeInteger(v)) {
            fail(
              v,
              offset + i,
              `is beyond +-2^53, which JSON numbers cannot carry exactly; send ${name} as binary data`,
            );
          }
          target[offset + i] = BigInt(v as number);
        }
      };
    }
    default: {
      const range = INT_RANGES[dtype];
      if (!range) throw badRequest(`${label}: datatype ${name} cannot be sent as JSON`);
      const [min, max] = range;
      const target = out as Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array;
      return (leaf, offset) => {
        for (let i = 0; i < leaf.length; i++) {
          const v = leaf[i];
          checkInteger(v, offset + i, name, fail);
          if ((v as number) < min || (v as number) > max) {
            fail(v, offset + i, `is out of range for ${name} [${min}, ${max}]`);
          }
          target[offset + i] = v as number;
        }
      };
    }
  }
}

/**
 * The common request (flat FP32 / FP64 data) without the generic writer's closures: the same
 * checks and messages as writerFor's float case, about half its time per request.
 */
function flatFloats(label: string, dtype: "f32" | "f64", data: readonly unknown[], count: number): HostTypedArray {
  const out = dtype === "f32" ? new Float32Array(count) : new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const v = data[i];
    if (typeof v !== "number") out[i] = nonFinite(v, i, kserveName(dtype), failFor(label));
    else {
      out[i] = v;
      if (!Number.isFinite(out[i] as number)) outOfRange(v, i, dtype, failFor(label));
    }
  }
  return out;
}

function failFor(label: string): Fail {
  return (v, index, why) => {
    throw badRequest(`${label}: element ${index} (${describe(v)}) ${why}`);
  };
}

type Fail = (v: unknown, index: number, why: string) => never;

const LARGEST_FINITE: Partial<Record<DType, number>> = {
  f16: 65504,
  bf16: 3.3895313892515355e38,
  f32: 3.4028234663852886e38,
  f64: Number.MAX_VALUE,
};

/**
 * A JSON number the float type cannot hold (it would round to infinity) is refused, not turned
 * into infinity: a client asks for infinity with the Infinity literal, and a number past the range
 * is more often a unit or scaling mistake than a wish for inf. Numbers that round to zero or to a
 * subnormal are ordinary float rounding and are taken.
 */
function outOfRange(v: number, index: number, dtype: DType, fail: Fail): never {
  return fail(
    v,
    index,
    `is out of range for ${kserveName(dtype)} (largest finite value ${LARGEST_FINITE[dtype]}); send Infinity to mean infinity`,
  );
}

/** Floats also take the non-finite literals (quoted by parseJsonLenient). */
function nonFinite(v: unknown, index: number, name: string, fail: Fail): number {
  if (v === "NaN") return Number.NaN;
  if (v === "Infinity") return Number.POSITIVE_INFINITY;
  if (v === "-Infinity") return Number.NEGATIVE_INFINITY;
  return fail(v, index, `is not a number; ${name} takes numbers`);
}

function checkInteger(v: unknown, index: number, name: string, fail: Fail): void {
  if (typeof v === "number" && Number.isInteger(v)) return;
  if (v === "NaN" || v === "Infinity" || v === "-Infinity") fail(v, index, `is not finite; ${name} takes integers`);
  if (typeof v === "number") fail(v, index, `is not an integer; ${name} takes integers`);
  fail(v, index, `is not a number; ${name} takes integers`);
}

export function describe(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === "NaN" || v === "Infinity" || v === "-Infinity") return v;
  if (Array.isArray(v)) return "a list";
  if (v === null) return "null";
  const text = JSON.stringify(v);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
