import { describe, expect, test } from "bun:test";
import { type ElemType, type NDArray, allocData, elementCount, slotsPerElement, strides } from "../src/array.ts";
import { dynamicSliceKernel, dynamicUpdateSliceKernel } from "../src/kernels/dynamic-slices.ts";
import { Arena } from "../src/plan/arena.ts";
import type { Frame } from "../src/plan/program.ts";

/**
 * dynamic_slice and dynamic_update_slice by runs of contiguous elements (kernels/block-rows.ts)
 * against the spec's element-by-element definition, over random shapes, boxes and starts (out
 * of range ones clamped), for storage of every width, complex and 64-bit integers included.
 */

const frame = (): Frame => ({
  env: [],
  ctx: { arena: new Arena({ pool: true }), failures: [] },
  constant: new Uint8Array(0),
});

/** A small deterministic generator: the same cases every run. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function filled(type: ElemType, shape: number[], next: () => number): NDArray {
  const data = allocData(type, elementCount(shape));
  for (let i = 0; i < data.length; i++) {
    const v = Math.floor(next() * 200) - 100;
    if (data instanceof BigInt64Array) data[i] = BigInt(v) * 1000000000007n;
    else if (data instanceof Uint8Array && type === "i1") data[i] = v & 1;
    else (data as Float32Array)[i] = v;
  }
  return { type, shape, data };
}

const scalar = (v: number): NDArray => ({ type: "i32", shape: [], data: Int32Array.of(v) });

/** Element (multi-index) offsets of the box at clamped `starts`, in row-major box order. */
function boxOffsets(shape: number[], box: number[], starts: number[]): number[] {
  const st = strides(shape);
  const begin = starts.map((s, d) => Math.min(Math.max(s, 0), (shape[d] as number) - (box[d] as number)));
  const out: number[] = [];
  const n = elementCount(box);
  for (let i = 0; i < n; i++) {
    let rest = i;
    let off = 0;
    for (let d = box.length - 1; d >= 0; d--) {
      const size = box[d] as number;
      off += ((begin[d] as number) + (rest % size)) * (st[d] as number);
      rest = Math.floor(rest / size);
    }
    out.push(off);
  }
  return out;
}

const TYPES: ElemType[] = ["f32", "f64", "i32", "i8", "ui16", "i64", "i1", "c64", "c128", "bf16"];

describe("dynamic_slice / dynamic_update_slice by runs", () => {
  test("match the element-by-element definition on random shapes, boxes and starts", () => {
    const next = random(7);
    for (let c = 0; c < 300; c++) {
      const type = TYPES[c % TYPES.length] as ElemType;
      const rank = 1 + (c % 4);
      const shape = Array.from({ length: rank }, () => 1 + Math.floor(next() * 5));
      // Every third case has long rows, which are copied natively rather than word by word.
      if (c % 3 === 0) shape[rank - 1] = 200 + Math.floor(next() * 100);
      const box = shape.map((s) => Math.floor(next() * (s + 1)));
      const starts = shape.map((s) => Math.floor(next() * (s + 4)) - 2);
      const x = filled(type, shape, next);
      const slots = slotsPerElement(type);
      const offsets = boxOffsets(shape, box, starts);
      const [sliced] = dynamicSliceKernel(box)([x, ...starts.map(scalar)], frame()) as NDArray[];
      const want: unknown[] = [];
      for (const o of offsets) for (let k = 0; k < slots; k++) want.push(x.data[o * slots + k]);
      expect(sliced?.shape).toEqual(box);
      expect(Array.from(sliced?.data as ArrayLike<unknown>)).toEqual(want);

      const update = filled(type, box, next);
      const [updated] = dynamicUpdateSliceKernel()([x, update, ...starts.map(scalar)], frame()) as NDArray[];
      const expected = Array.from(x.data as ArrayLike<unknown>);
      offsets.forEach((o, i) => {
        for (let k = 0; k < slots; k++) expected[o * slots + k] = update.data[i * slots + k];
      });
      expect(Array.from(updated?.data as ArrayLike<unknown>)).toEqual(expected);
      // Not marked in place by the plan: the operand is left as it was.
      expect(updated?.data).not.toBe(x.data);
    }
  });

  test("float bits move as they are: NaN payloads and signed zeros survive both ops", () => {
    const bits = Uint32Array.of(0x7fa00001, 0xffc12345, 0x80000000, 0x3f800000, 0x7f800001, 0x00000001);
    const x: NDArray = { type: "f32", shape: [2, 3], data: new Float32Array(bits.buffer.slice(0)) };
    const [s] = dynamicSliceKernel([2, 2])([x, scalar(0), scalar(1)], frame()) as NDArray[];
    expect(Array.from(new Uint32Array(((s as NDArray).data as Float32Array).buffer))).toEqual([
      0xffc12345, 0x80000000, 0x7f800001, 0x00000001,
    ]);
    const zeros: NDArray = { type: "f32", shape: [2, 3], data: new Float32Array(6) };
    const [u] = dynamicUpdateSliceKernel()([zeros, x, scalar(0), scalar(0)], frame()) as NDArray[];
    expect(Array.from(new Uint32Array(((u as NDArray).data as Float32Array).buffer))).toEqual(Array.from(bits));
  });

  test("an update that does not fit the operand is refused, naming both shapes", () => {
    const x: NDArray = { type: "f32", shape: [2, 3], data: new Float32Array(6) };
    const big: NDArray = { type: "f32", shape: [3, 1], data: new Float32Array(3) };
    expect(() => dynamicUpdateSliceKernel()([x, big, scalar(0), scalar(0)], frame())).toThrow(
      "update [3,1] does not fit operand [2,3]",
    );
    const other: NDArray = { type: "f64", shape: [1, 1], data: new Float64Array(1) };
    expect(() => dynamicUpdateSliceKernel()([x, other, scalar(0), scalar(0)], frame())).toThrow(
      "update of f64 into an operand of f32",
    );
    expect(() => dynamicSliceKernel([3, 1])([x, scalar(0), scalar(0)], frame())).toThrow("do not fit operand");
  });
});
