/**
 * The copy loop behind the data-movement ops (layout.ts), generated once per storage class.
 * One shared loop would see every element type a program moves (f32 activations, i32
 * indices, i1 masks...), and JavaScriptCore then compiles its element accesses for all of them
 * at once, several times slower than a loop that only ever sees one class; each class's loop
 * therefore has code of its own (own-function.ts).
 */
import type { TypedArray } from "../array.ts";
import { ownFunction } from "./own-function.ts";

/**
 * Writes `out` (dense, row-major over `shape`, rank >= 1, no zero axis): element (i0, i1, ...)
 * reads its slots from source slot `base + sum(ik * step[k])` on. `step` and `base` are in slots.
 */
export type CopyLoop = (src: TypedArray, out: TypedArray, base: number, step: number[], shape: number[]) => void;

/** Runs of at least this many contiguous slots go by a native copy; a subarray costs more than a shorter loop. */
const NATIVE_RUN = 256;
/** Runs of at least this many copies of one slot (a broadcast along the last axis) go by fill. */
const NATIVE_FILL = 64;

const LOOPS = new Map<unknown, CopyLoop>();

/** The copy loop for `src`'s storage class with `slots` slots per element. */
export function copyLoopFor(src: TypedArray, slots: number): CopyLoop {
  const key = slots === 1 ? src.constructor : `${src.constructor.name}/${slots}`;
  let loop = LOOPS.get(key);
  if (!loop) {
    const one = slotLoop(src);
    // An element of several slots is one more axis, of `slots` consecutive slots, that merges
    // with the axes above it wherever the elements themselves are consecutive.
    loop =
      slots === 1
        ? one
        : (s, o, base, step, shape) => {
            const merged = mergeAxes([...step, 1], [...shape, slots]);
            one(s, o, base, merged.step, merged.shape);
          };
    LOOPS.set(key, loop);
  }
  return loop;
}

const SLOT_LOOPS = new Map<unknown, CopyLoop>();

function slotLoop(src: TypedArray): CopyLoop {
  let loop = SLOT_LOOPS.get(src.constructor);
  if (!loop) {
    loop = ownFunction(`copy ${src.constructor.name}`, ["src", "out", "base", "step", "shape"], COPY) as CopyLoop;
    SLOT_LOOPS.set(src.constructor, loop);
  }
  return loop;
}

/**
 * The two innermost axes are loops of their own and the rest an odometer, so a short inner run
 * (a transpose's 16 heads) does not pay an odometer step each. Every position is kept in int32
 * (`| 0`): a shape worked out with a division arrives as a double, and one double position
 * makes the whole loop index with doubles.
 */
const COPY = `
const rank = shape.length;
const inner = shape[rank - 1] | 0;
const innerStep = step[rank - 1] | 0;
const mid = rank > 1 ? shape[rank - 2] | 0 : 1;
const midStep = rank > 1 ? step[rank - 2] | 0 : 0;
const native = innerStep === 1 && inner >= ${NATIVE_RUN};
const fill = innerStep === 0 && inner >= ${NATIVE_FILL};
const idx = rank > 2 ? new Int32Array(rank - 2) : null;
let at = base | 0;
let w = 0;
for (;;) {
  for (let i = 0, q = at; i < mid; i++, q = (q + midStep) | 0) {
    if (native) {
      out.set(src.subarray(q, q + inner), w);
      w = (w + inner) | 0;
    } else if (fill) {
      out.fill(src[q], w, w + inner);
      w = (w + inner) | 0;
    } else for (let j = 0, p = q; j < inner; j++, p = (p + innerStep) | 0) out[w++] = src[p];
  }
  if (idx === null) break;
  let d = rank - 3;
  for (; d >= 0; d--) {
    idx[d]++;
    at = (at + step[d]) | 0;
    if (idx[d] < shape[d]) break;
    at = (at - step[d] * shape[d]) | 0;
    idx[d] = 0;
  }
  if (d < 0) break;
}`;

/**
 * The same walk over fewer axes: axes of size 1 dropped, and an axis merged into the next where
 * it steps by the next one's whole extent (a slice of whole rows, a transpose that keeps the
 * innermost axes). The copy loop's inner run is then as long as the data allows, instead of,
 * say, 16 elements with an odometer step after each. Sizes and steps come back as int32.
 */
export function mergeAxes(step: readonly number[], shape: readonly number[]): { step: number[]; shape: number[] } {
  const outStep: number[] = [];
  const outShape: number[] = [];
  for (let d = 0; d < shape.length; d++) {
    const size = (shape[d] as number) | 0;
    if (size === 1) continue;
    const s = (step[d] as number) | 0;
    const last = outShape.length - 1;
    if (last >= 0 && (outStep[last] as number) === s * size) {
      outShape[last] = ((outShape[last] as number) * size) | 0;
      outStep[last] = s;
    } else {
      outShape.push(size);
      outStep.push(s);
    }
  }
  if (outShape.length === 0) return { step: [0], shape: [1] };
  return { step: outStep, shape: outShape };
}

/** `rows` dense rows of `length` slots from `src` into `out`, `pitch` apart, starting at `at`. */
export type RowCopy = (
  src: TypedArray,
  out: TypedArray,
  rows: number,
  length: number,
  pitch: number,
  at: number,
) => void;

const ROW_COPIES = new Map<unknown, RowCopy>();

/** The row copy for `src`'s storage class, one per class for the reason given above. */
export function rowCopyFor(src: TypedArray): RowCopy {
  let copy = ROW_COPIES.get(src.constructor);
  if (!copy) {
    copy = ownFunction(
      `rows ${src.constructor.name}`,
      ["src", "out", "rows", "length", "pitch", "at"],
      "let r = 0; for (let i = 0; i < rows; i++) { const w = at + i * pitch; for (let q = 0; q < length; q++) out[w + q] = src[r++]; }",
    ) as RowCopy;
    ROW_COPIES.set(src.constructor, copy);
  }
  return copy;
}
