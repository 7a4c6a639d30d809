import type { TypedArray } from "../array.ts";

/**
 * Storage seen as the words that data-movement loops copy: 32-bit floats, unsigned 32-bit
 * integers and every 64-bit type as signed 32-bit words, other classes as they are. A copy of
 * words keeps NaN payloads (reading a float into a JS number may canonicalise it), never turns
 * an element into a double (an unsigned word above 2^31 is one in JavaScriptCore, which a loop
 * compiled for int32 keeps bailing out on) and never into a BigInt (an allocation per element).
 * Views are kept per array: the plan's pool hands the same arrays out on every run, and a view
 * costs more to make than a short copy.
 */
const VIEWS = new WeakMap<TypedArray, Int32Array>();

export function wordView(a: TypedArray): TypedArray {
  if (
    !(
      a instanceof Float32Array ||
      a instanceof Float64Array ||
      a instanceof Uint32Array ||
      a instanceof BigInt64Array ||
      a instanceof BigUint64Array
    )
  )
    return a;
  let view = VIEWS.get(a);
  if (view === undefined) {
    view = new Int32Array(a.buffer, a.byteOffset, a.byteLength / 4);
    VIEWS.set(a, view);
  }
  return view;
}
