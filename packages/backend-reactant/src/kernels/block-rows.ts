import { type NDArray, type TypedArray, slotsPerElement, strides } from "../array.ts";
import { ownFunction } from "./own-function.ts";
import { wordView } from "./word-view.ts";

/**
 * dynamic_slice and dynamic_update_slice move a block of an array: a box of `block` extents at
 * clamped starts. In row-major order the box is `offsets.length` runs of `run` contiguous
 * elements (its trailing axes merged while they span the whole array), each at a fixed offset
 * from the box's first element. A loop slices the same box shape every iteration, so the runs
 * are worked out once per shape and a call only adds up the starts and copies runs.
 */
export interface BlockRows {
  readonly arrayShape: readonly number[];
  readonly blockShape: readonly number[];
  readonly strides: number[];
  /** Elements per run. */
  readonly run: number;
  /** Per run, its first element's offset from the box's first element, in elements. */
  readonly offsets: Int32Array;
}

export function blockRows(arrayShape: readonly number[], blockShape: readonly number[]): BlockRows {
  const rank = arrayShape.length;
  const st = strides([...arrayShape]);
  let inner = rank - 1;
  let run = rank === 0 ? 1 : (blockShape[inner] as number);
  while (inner > 0 && blockShape[inner] === arrayShape[inner]) {
    inner--;
    run *= blockShape[inner] as number;
  }
  let rows = 1;
  for (let d = 0; d < inner; d++) rows *= blockShape[d] as number;
  if (run === 0) rows = 0;
  const offsets = new Int32Array(rows);
  const idx = new Array<number>(Math.max(inner, 0)).fill(0);
  for (let r = 0; r < rows; r++) {
    let off = 0;
    for (let d = 0; d < inner; d++) off += (idx[d] as number) * (st[d] as number);
    offsets[r] = off;
    for (let d = inner - 1; d >= 0; d--) {
      idx[d] = (idx[d] as number) + 1;
      if ((idx[d] as number) < (blockShape[d] as number)) break;
      idx[d] = 0;
    }
  }
  return { arrayShape: [...arrayShape], blockShape: [...blockShape], strides: st, run, offsets };
}

/** Whether `rows` was made for these shapes. */
export function fits(rows: BlockRows | null, arrayShape: readonly number[], blockShape: readonly number[]): boolean {
  if (rows === null || rows.arrayShape.length !== arrayShape.length) return false;
  for (let d = 0; d < arrayShape.length; d++) {
    if (rows.arrayShape[d] !== arrayShape[d] || rows.blockShape[d] !== blockShape[d]) return false;
  }
  return true;
}

/**
 * The box's first element for start operands `args[from...]` (scalars), each clamped so the box
 * stays inside the array (the spec of both ops).
 */
export function boxOffset(rows: BlockRows, args: readonly unknown[], from: number): number {
  let offset = 0;
  const shape = rows.arrayShape;
  for (let d = 0; d < shape.length; d++) {
    const limit = (shape[d] as number) - (rows.blockShape[d] as number);
    const start = Math.min(Math.max(Number((args[d + from] as NDArray).data[0]), 0), limit);
    offset += start * (rows.strides[d] as number);
  }
  return offset;
}

/**
 * Copies runs between `dense` (the box, row-major) and `array` at `at`: into the array when
 * `toArray`, out of it otherwise. Float storage moves as its bit patterns, so NaN payloads stay
 * as they are.
 */
export function copyRuns(
  rows: BlockRows,
  type: NDArray["type"],
  array: TypedArray,
  dense: TypedArray,
  at: number,
  toArray: boolean,
): void {
  const n = rows.offsets.length;
  if (n === 0) return;
  const a = wordView(array);
  const b = wordView(dense);
  const scale = slotsPerElement(type) * (a.length / array.length);
  const run = rows.run * scale;
  const loop = loopFor(a);
  if (toArray) loop(b, a, rows.offsets, n, run, at * scale, scale, true);
  else loop(a, b, rows.offsets, n, run, at * scale, scale, false);
}

/**
 * `scatter`: from dense runs into offsets (dynamic_update_slice), else from offsets into dense
 * runs (dynamic_slice). All offsets in words; `scale` words per element.
 */
type RunLoop = (
  from: TypedArray,
  to: TypedArray,
  offsets: Int32Array,
  n: number,
  run: number,
  at: number,
  scale: number,
  scatter: boolean,
) => void;

const LOOPS = new Map<unknown, RunLoop>();

/** One loop per storage class: a loop that sees several classes is compiled for all of them, slowly. */
function loopFor(a: TypedArray): RunLoop {
  let loop = LOOPS.get(a.constructor);
  if (!loop) {
    // Long runs by a native copy; a subarray per run costs more than copying a short one.
    loop = ownFunction(
      `runs ${a.constructor.name}`,
      ["from", "to", "offsets", "n", "run", "at", "scale", "scatter"],
      `for (let r = 0; r < n; r++) {
  const far = at + offsets[r] * scale;
  const s = scatter ? r * run : far;
  const d = scatter ? far : r * run;
  if (run >= 256) to.set(from.subarray(s, s + run), d);
  else for (let k = 0; k < run; k++) to[d + k] = from[s + k];
}`,
    ) as RunLoop;
    LOOPS.set(a.constructor, loop);
  }
  return loop;
}
