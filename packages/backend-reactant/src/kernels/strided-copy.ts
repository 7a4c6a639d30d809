/**
 * The copy loop behind the data-movement ops (layout.ts), generated once per storage class and
 * slot count. One shared loop sees every element type a program moves (f32 activations, i32
 * indices, i1 masks...), and JavaScriptCore then compiles its element accesses for all of them
 * at once, several times slower than a loop that only ever sees one class.
 */
import type { TypedArray } from "../array.ts";

/**
 * Writes `out` (dense, row-major over `shape`, rank >= 1, no zero axis): element (i0, i1, ...)
 * reads source slot `base + sum(ik * step[k])`. `step` and `base` are in slots.
 */
export type CopyLoop = (src: TypedArray, out: TypedArray, base: number, step: number[], shape: number[]) => void;

const LOOPS = new Map<unknown, CopyLoop>();

export function copyLoopFor(src: TypedArray, slots: number): CopyLoop {
  const key = slots === 1 ? src.constructor : `${src.constructor.name}/${slots}`;
  let loop = LOOPS.get(key);
  if (!loop) {
    loop = generate(slots);
    LOOPS.set(key, loop);
  }
  return loop;
}

function generate(slots: number): CopyLoop {
  const element = Array.from({ length: slots }, (_, k) => `out[w++] = src[p${k === 0 ? "" : ` + ${k}`}];`).join(" ");
  const source = `
const rank = shape.length;
const inner = shape[rank - 1];
const innerStep = step[rank - 1];
const idx = new Array(rank).fill(0);
let w = 0;
for (;;) {
  for (let j = 0, p = base; j < inner; j++, p += innerStep) { ${element} }
  let d = rank - 2;
  for (; d >= 0; d--) {
    idx[d]++;
    base += step[d];
    if (idx[d] < shape[d]) break;
    base -= step[d] * shape[d];
    idx[d] = 0;
  }
  if (d < 0) break;
}`;
  return new Function("src", "out", "base", "step", "shape", source) as CopyLoop;
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
    copy = new Function(
      "src",
      "out",
      "rows",
      "length",
      "pitch",
      "at",
      "let r = 0; for (let i = 0; i < rows; i++) { const w = at + i * pitch; for (let q = 0; q < length; q++) out[w + q] = src[r++]; }",
    ) as RowCopy;
    ROW_COPIES.set(src.constructor, copy);
  }
  return copy;
}
