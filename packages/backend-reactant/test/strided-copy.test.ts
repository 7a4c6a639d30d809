import { describe, expect, test } from "bun:test";
import { type ElemType, type NDArray, allocData, elementCount, slotsPerElement, strides } from "../src/array.ts";
import { broadcastInDim, reverse, slice, stridedCopy, transpose } from "../src/kernels/layout.ts";
import { ownFunction } from "../src/kernels/own-function.ts";
import { copyLoopFor, mergeAxes } from "../src/kernels/strided-copy.ts";
import { wordView } from "../src/kernels/word-view.ts";

/** Every storage class the copy moves, with the word width it moves it in. */
const TYPES: ElemType[] = [
  "f32",
  "f64",
  "c64",
  "c128",
  "bf16",
  "f16",
  "i1",
  "i8",
  "ui8",
  "i16",
  "i32",
  "ui32",
  "i64",
  "ui64",
];

/** A dense array whose every slot's bytes are distinct (so a misplaced slot shows), NaNs with payloads among the floats. */
function filled(type: ElemType, shape: number[], seed: number): NDArray {
  const data = allocData(type, elementCount(shape));
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + seed * 71 + (i >> 8) * 17) & 0xff;
  if (type === "i1") for (let i = 0; i < bytes.length; i++) bytes[i] = (bytes[i] as number) & 1;
  if (type === "f32" || type === "c64") {
    const words = new Uint32Array(data.buffer, data.byteOffset, data.byteLength / 4);
    for (let i = 0; i < words.length; i += 5) words[i] = 0x7f800001 + i; // signalling NaNs with payloads
  }
  if (type === "f64" || type === "c128") {
    const words = new Uint32Array(data.buffer, data.byteOffset, data.byteLength / 4);
    for (let i = 1; i < words.length; i += 6) words[i] = 0xfff00000 + (i & 0xff); // high word of a NaN
  }
  return { type, shape, data };
}

/** The bytes of element `e` (a flat index). */
function elementBytes(x: NDArray, e: number): number[] {
  const size = slotsPerElement(x.type) * x.data.BYTES_PER_ELEMENT;
  return [...new Uint8Array(x.data.buffer, x.data.byteOffset + e * size, size)];
}

/** The index oracle: output element i reads source element offset + sum(i_k * step_k). */
function expectCopy(src: NDArray, offset: number, step: number[], shape: number[], out: NDArray): void {
  expect(out.shape).toEqual(shape);
  const n = elementCount(shape);
  const idx = shape.map(() => 0);
  for (let i = 0; i < n; i++) {
    let e = offset;
    for (let d = 0; d < shape.length; d++) e += (idx[d] as number) * (step[d] as number);
    const got = elementBytes(out, i);
    const want = elementBytes(src, e);
    if (got.join() !== want.join())
      expect({ type: src.type, element: i, bytes: got }).toEqual({ type: src.type, element: i, bytes: want });
    for (let d = shape.length - 1; d >= 0; d--) {
      idx[d] = (idx[d] as number) + 1;
      if ((idx[d] as number) < (shape[d] as number)) break;
      idx[d] = 0;
    }
  }
}

/** Shapes and steps that take each path: long contiguous runs, broadcasts by fill, short strided runs, reversed runs. */
const CASES: { name: string; src: number[]; offset: number; step: number[]; shape: number[] }[] = [
  { name: "rank 1 whole (one native run)", src: [700], offset: 0, step: [1], shape: [700] },
  { name: "rank 1 offset, short", src: [40], offset: 3, step: [1], shape: [30] },
  { name: "rank 1 strided", src: [90], offset: 1, step: [3], shape: [29] },
  { name: "rank 1 reversed", src: [300], offset: 299, step: [-1], shape: [300] },
  { name: "rank 1 broadcast (fill)", src: [1], offset: 0, step: [0], shape: [100] },
  { name: "rank 2 rows of 300 (native runs)", src: [4, 310], offset: 5, step: [310, 1], shape: [4, 300] },
  { name: "rank 2 transpose", src: [17, 23], offset: 0, step: [1, 23], shape: [23, 17] },
  { name: "rank 2 row broadcast (fill)", src: [5], offset: 0, step: [1, 0], shape: [5, 70] },
  { name: "rank 2 column broadcast", src: [70], offset: 0, step: [0, 1], shape: [3, 70] },
  { name: "rank 3 qkv split", src: [4, 3, 100], offset: 100, step: [300, 100, 1], shape: [4, 1, 100] },
  { name: "rank 4 head transpose", src: [2, 4, 16, 32], offset: 0, step: [2048, 1, 512, 32], shape: [2, 32, 4, 16] },
  { name: "rank 4 last-axis broadcast", src: [2, 3, 4], offset: 0, step: [12, 4, 1, 0], shape: [2, 3, 4, 65] },
  {
    name: "rank 5 slice of heads",
    src: [2, 8, 3, 4, 16],
    offset: 128,
    step: [1536, 192, 64, 16, 1],
    shape: [2, 8, 1, 4, 16],
  },
  { name: "rank 5 mixed", src: [3, 4, 5, 6, 7], offset: 7, step: [840, -210, 42, 7, 1], shape: [2, 3, 5, 2, 3] },
];

describe("strided copy", () => {
  test("every path moves every storage class's bytes where the index oracle says", () => {
    for (const type of TYPES)
      for (const c of CASES) {
        const src = filled(type, c.src, 1);
        // The reversed case starts at the end of the source's second axis for its -210 step.
        const offset = c.name === "rank 5 mixed" ? c.offset + 3 * 210 : c.offset;
        const out = stridedCopy(src, offset, c.step, c.shape);
        expect(out.type).toBe(type);
        expectCopy(src, offset, c.step, c.shape, out);
      }
  });

  test("zero-size outputs write nothing and keep their shape", () => {
    for (const type of TYPES) {
      const src = filled(type, [3, 4], 2);
      const out = stridedCopy(src, 0, [4, 1], [0, 4]);
      expect(out.shape).toEqual([0, 4]);
      expect(out.data.length).toBe(0);
      expect(slice(src, [1, 0], [1, 4], [1, 1]).shape).toEqual([0, 4]);
      expect(transpose(filled(type, [0, 3], 1), [1, 0]).shape).toEqual([3, 0]);
    }
  });

  test("a rank-0 copy moves one element", () => {
    for (const type of TYPES) {
      const src = filled(type, [9], 3);
      const out = stridedCopy(src, 4, [], []);
      expect(out.shape).toEqual([]);
      expect(elementBytes(out, 0)).toEqual(elementBytes(src, 4));
    }
  });

  test("the ops over it: slice with strides, transpose, broadcast, reverse", () => {
    for (const type of TYPES) {
      const x = filled(type, [3, 5, 300], 4);
      const st = strides(x.shape);
      const s = slice(x, [1, 1, 10], [3, 5, 290], [1, 2, 1]);
      expectCopy(x, st[0]! + st[1]! + 10, [st[0]!, 2 * st[1]!, 1], [2, 2, 280], s);
      const t = transpose(x, [2, 0, 1]);
      expectCopy(x, 0, [1, st[0]!, st[1]!], [300, 3, 5], t);
      const r = reverse(x, [0, 2]);
      expectCopy(x, 2 * st[0]! + 299, [-st[0]!, st[1]!, -1], [3, 5, 300], r);
      const row = filled(type, [3, 1], 5);
      expectCopy(row, 0, [1, 0, 0], [3, 4, 80], broadcastInDim(row, [0, 1], [3, 4, 80]));
    }
  });

  test("a copy writes into the storage alloc gives it, every element, whatever it held", () => {
    const src = filled("f32", [4, 300], 6);
    const stale = new Float32Array(1200).fill(123);
    const out = stridedCopy(src, 0, [300, 1], [4, 300], () => stale);
    expect(out.data).toBe(stale);
    expectCopy(src, 0, [300, 1], [4, 300], out);
  });

  test("shapes that arrive as doubles copy the same as int32 ones", () => {
    const src = filled("f32", [8, 3, 64], 7);
    const half = new Float64Array([8, 64, 192, 1, 0.5]);
    // Values read out of a Float64Array are doubles in JavaScriptCore, as a division's quotient is.
    const shape = [half[0] as number, half[1] as number];
    const step = [half[2] as number, half[3] as number];
    const out = stridedCopy(src, 64 * (half[4] as number) * 2, step, shape);
    expectCopy(src, 64, [192, 1], [8, 64], out);
  });

  test("mergeAxes joins axes, drops unit axes and returns int32 sizes", () => {
    expect(mergeAxes([6144, 192, 64, 16, 1], [8, 32, 1, 4, 16])).toEqual({ step: [192, 1], shape: [256, 64] });
    expect(mergeAxes([300, 100, 1], [4, 1, 100])).toEqual({ step: [300, 1], shape: [4, 100] });
    expect(mergeAxes([4, 1, 0], [3, 4, 80])).toEqual({ step: [1, 0], shape: [12, 80] });
    expect(mergeAxes([], [])).toEqual({ step: [0], shape: [1] });
  });

  test("copyLoopFor with several slots per element moves whole elements", () => {
    const words = new Int32Array(40).map((_, i) => i);
    const out = new Int32Array(12);
    // Elements of two words, steps in words: rows of 3 consecutive elements from word 18, then from word 14.
    copyLoopFor(words, 2)(words, out, 18, [-4, 2], [2, 3]);
    expect([...out]).toEqual([18, 19, 20, 21, 22, 23, 14, 15, 16, 17, 18, 19]);
    // Overlapping elements (a step of one word) still copy both words of each.
    copyLoopFor(words, 2)(words, out, 3, [1], [6]);
    expect([...out]).toEqual([3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9]);
  });
});

describe("word views and code of its own", () => {
  test("a word view is made once per array and covers its bytes", () => {
    const f = new Float64Array(3);
    const v = wordView(f);
    expect(v).toBeInstanceOf(Int32Array);
    expect(v.length).toBe(6);
    expect(wordView(f)).toBe(v);
    const u = new Uint8Array(4);
    expect(wordView(u)).toBe(u);
    const offset = new Float32Array(new ArrayBuffer(64), 8, 4);
    expect(wordView(offset).byteOffset).toBe(8);
    expect(wordView(new BigUint64Array(2)).length).toBe(4);
  });

  test("ownFunction puts its tag in the code's text, so two tags never share one text", () => {
    const a = ownFunction("copy Float32Array", ["x"], "return x + 1;") as (x: number) => number;
    const b = ownFunction("copy Int32Array", ["x"], "return x + 1;") as (x: number) => number;
    expect(a(1)).toBe(2);
    expect(b(2)).toBe(3);
    expect(a.toString()).toContain("copy Float32Array");
    expect(a.toString()).not.toBe(b.toString());
    // A tag cannot end its comment early.
    expect((ownFunction("x\nreturn 5;", [], "return 1;") as () => number)()).toBe(1);
  });
});
