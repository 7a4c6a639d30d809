import { describe, expect, test } from "bun:test";
import { DTYPES, type HostTensor, allocTyped, noteMovable, tensorOverBytes } from "@xlaserve/core";
import {
  decodeRunCalls,
  decodeRunReplies,
  encodeRunCalls,
  encodeRunReplies,
  isRunCalls,
  isRunReplies,
  OUT_OF_LINE_MIN_BYTES,
} from "../src/engine-thread/run-wire.ts";
import { BatchBuffers, POOLED_MIN_BYTES } from "../src/engine-thread/batch-buffers.ts";
import { joinRowsLater } from "../src/model/joined-rows.ts";

/** A tensor of every dtype with distinct bytes, including odd byte lengths. */
function sample(dtype: (typeof DTYPES)[number], shape: number[]): HostTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = allocTyped(dtype, n);
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 37 + 11) & 0xff;
  return { dtype, shape, data };
}

function bytesOf(t: HostTensor): number[] {
  return [...new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)];
}

describe("the packed run messages", () => {
  test("calls round-trip every dtype, scalars, empty tensors and several calls per batch", () => {
    const calls = DTYPES.map((dtype, i) => ({
      id: i + 1,
      handle: 100 + i,
      resident: Array.from({ length: i % 4 }, (_, k) => k + 7),
      inputs: [sample(dtype, [3, 1 + (i % 3)]), sample(dtype, []), sample(dtype, [0, 5])],
    }));
    const packed = encodeRunCalls(calls).message;
    expect(isRunCalls(packed)).toBe(true);
    expect(isRunReplies(packed)).toBe(false);
    const back = decodeRunCalls(packed);
    expect(back.length).toBe(calls.length);
    back.forEach((c, i) => {
      const want = calls[i] as (typeof calls)[number];
      expect(c.id).toBe(want.id);
      expect(c.handle).toBe(want.handle);
      expect(c.resident).toEqual(want.resident);
      c.inputs.forEach((t, k) => {
        const w = want.inputs[k] as HostTensor;
        expect(t.dtype).toBe(w.dtype);
        expect(t.shape).toEqual(w.shape);
        expect(t.data.constructor).toBe(w.data.constructor);
        expect(bytesOf(t)).toEqual(bytesOf(w));
      });
    });
  });

  test("replies carry outputs, typed errors and the memory figures (limit may be null)", () => {
    const out = [sample("f32", [1, 10]), sample("bf16", [2, 3]), sample("i64", [5])];
    const error = { code: "INVALID_ARGUMENT", message: "bad shape ✓", details: { input: "x", n: 3 } };
    const packed = encodeRunReplies(
      [
        { id: 4, ok: true, outputs: out },
        { id: 5, ok: false, error },
        { id: 6, ok: true, outputs: [] },
      ],
      { inUseBytes: 123, peakBytes: 456, limitBytes: null },
    );
    expect(isRunReplies(packed)).toBe(true);
    const { replies, stats } = decodeRunReplies(packed);
    expect(stats).toEqual({ inUseBytes: 123, peakBytes: 456, limitBytes: null });
    expect(replies.map((r) => [r.id, r.ok])).toEqual([
      [4, true],
      [5, false],
      [6, true],
    ]);
    const first = replies[0];
    if (!first?.ok) throw new Error("first reply should be ok");
    for (const [i, t] of first.outputs.entries()) expect(bytesOf(t)).toEqual(bytesOf(out[i] as HostTensor));
    const second = replies[1];
    if (second?.ok !== false) throw new Error("second reply should be an error");
    expect(second.error).toEqual(error);
    expect(decodeRunReplies(encodeRunReplies([], null)).stats).toBeNull();
    // The pool and largest free block cross too, where the engine reports them.
    const full = { inUseBytes: 1, peakBytes: 2, limitBytes: 3, poolBytes: 4, largestFreeBlockBytes: 5 };
    expect(decodeRunReplies(encodeRunReplies([], full)).stats).toEqual(full);
  });

  test("inputs that are views into a larger buffer pack only their own bytes", () => {
    const big = new Float32Array(100).map((_, i) => i);
    const view: HostTensor = { dtype: "f32", shape: [2, 5], data: big.subarray(10, 20) };
    const [c] = decodeRunCalls(encodeRunCalls([{ id: 1, handle: 1, resident: [], inputs: [view] }]).message);
    expect(Array.from((c?.inputs[0]?.data ?? []) as Float32Array)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  });

  test("a large input in a movable buffer is transferred, not copied; any other large one is copied once", () => {
    const n = OUT_OF_LINE_MIN_BYTES / 4;
    // Two requests' bodies: a header, then the floats (aligned), as the REST decoder leaves them.
    const body = (seed: number) => {
      const bytes = new Uint8Array(8 + n * 4);
      const floats = new Float32Array(bytes.buffer, 8, n).map((_, i) => seed + i);
      return floats;
    };
    const moved = body(1);
    noteMovable(moved.buffer);
    const kept = body(5);
    const batch = encodeRunCalls([
      { id: 1, handle: 1, resident: [], inputs: [{ dtype: "f32", shape: [1, n], data: moved }] },
      { id: 2, handle: 1, resident: [], inputs: [{ dtype: "f32", shape: [1, n], data: kept }] },
    ]);
    expect(batch.movedBytes).toBe(n * 4);
    expect(batch.copiedBytes).toBe(n * 4);
    expect(batch.transfer).toContain(moved.buffer as ArrayBuffer);
    expect(batch.transfer).not.toContain(kept.buffer as ArrayBuffer);
    // The packed words stay small: the floats travel beside them.
    expect(((batch.message as ArrayBuffer[])[0] as ArrayBuffer).byteLength).toBeLessThan(512);
    const [a, b] = decodeRunCalls(batch.message).map((c) => c.inputs[0]?.data as Float32Array);
    expect(a?.[n - 1]).toBe(n);
    expect(b?.[n - 1]).toBe(n + 4);
    expect(a?.buffer).toBe(moved.buffer);
  });

  test("a coalesced input's rows travel as their requests' buffers and are joined, zero-padded, on reading", () => {
    const n = OUT_OF_LINE_MIN_BYTES / 4;
    // Each request's floats in a movable buffer of its own, as the REST decoder leaves them.
    const request = (seed: number): HostTensor => {
      const floats = new Float32Array(n).map((_, i) => seed * 1000 + i);
      noteMovable(floats.buffer);
      return { dtype: "f32", shape: [1, n], data: floats };
    };
    const parts = [request(1), request(2)];
    const joined = joinRowsLater(parts, 4);
    expect(joined.shape).toEqual([4, n]);
    const buffers = parts.map((p) => p.data.buffer);
    const batch = encodeRunCalls([{ id: 1, handle: 1, resident: [], inputs: [joined] }]);
    expect(batch.movedBytes).toBe(2 * n * 4);
    expect(batch.copiedBytes).toBe(0);
    for (const b of buffers) expect(batch.transfer).toContain(b as ArrayBuffer);
    const data = decodeRunCalls(batch.message)[0]?.inputs[0]?.data as Float32Array;
    expect(data.length).toBe(4 * n);
    expect([data[0], data[n - 1], data[n], data[2 * n - 1]]).toEqual([1000, 1000 + n - 1, 2000, 2000 + n - 1]);
    expect(data.subarray(2 * n).every((v) => v === 0)).toBe(true);
  });

  test("a coalesced input joins into a reused batch buffer: the earlier run's bytes are overwritten, the padding zeroed", () => {
    const n = OUT_OF_LINE_MIN_BYTES / 4;
    const pool = new BatchBuffers();
    const take = (byteLength: number) => pool.take(byteLength);
    const run = (seeds: number[], size: number) => {
      const parts = seeds.map((seed): HostTensor => {
        const floats = new Float32Array(n).map((_, i) => seed * 1000 + i);
        noteMovable(floats.buffer);
        return { dtype: "f32", shape: [1, n], data: floats };
      });
      const batch = encodeRunCalls([{ id: 1, handle: 1, resident: [], inputs: [joinRowsLater(parts, size)] }]);
      return decodeRunCalls(batch.message, undefined, take)[0]?.inputs[0]?.data as Float32Array;
    };
    const first = run([1, 2, 3, 4], 4);
    expect([first[0], first[3 * n]]).toEqual([1000, 4000]);
    pool.give(first.buffer as ArrayBuffer);
    const second = run([7], 4);
    // The same storage, taken again: no fresh allocation of the whole batch.
    expect(second.buffer).toBe(first.buffer);
    expect([pool.allocated, pool.reused]).toEqual([1, 1]);
    expect([second[0], second[n - 1]]).toEqual([7000, 7000 + n - 1]);
    expect(second.subarray(n).every((v) => v === 0)).toBe(true);
    // Taken and not given back: a run in flight never shares its buffer with the next one.
    expect(run([8], 4).buffer).not.toBe(second.buffer);
  });

  test("inputs at an offset their dtype cannot be viewed at move as they lie, and are aligned on reading", () => {
    const n = OUT_OF_LINE_MIN_BYTES / 4;
    // A request body: a 3-byte header, then the floats (unaligned), as the REST decoder leaves it.
    const request = (seed: number): HostTensor => {
      const body = new Uint8Array(3 + n * 4);
      body.set(new Uint8Array(new Float32Array(n).map((_, i) => seed * 1000 + i).buffer), 3);
      noteMovable(body.buffer);
      return tensorOverBytes("f32", [1, n], body.subarray(3));
    };
    const single = request(5);
    const alone = encodeRunCalls([{ id: 1, handle: 1, resident: [], inputs: [single] }]);
    // Moved without the aligned copy on this side (reading `data` would have made one).
    expect([alone.movedBytes, alone.copiedBytes]).toEqual([n * 4, 0]);
    const one = decodeRunCalls(alone.message)[0]?.inputs[0]?.data as Float32Array;
    expect(one.byteOffset % 4).toBe(0);
    expect([one[0], one[n - 1]]).toEqual([5000, 5000 + n - 1]);
    const joined = joinRowsLater([request(1), request(2)], 4);
    const batch = encodeRunCalls([{ id: 2, handle: 1, resident: [], inputs: [joined] }]);
    expect([batch.movedBytes, batch.copiedBytes]).toEqual([2 * n * 4, 0]);
    const data = decodeRunCalls(batch.message)[0]?.inputs[0]?.data as Float32Array;
    expect([data[0], data[n - 1], data[n], data[2 * n - 1], data[2 * n]]).toEqual([
      1000,
      1000 + n - 1,
      2000,
      2000 + n - 1,
      0,
    ]);
  });

  test("the batch buffers keep a few per size, and ignore buffers they never handed out", () => {
    const pool = new BatchBuffers(1);
    const a = pool.take(POOLED_MIN_BYTES);
    const b = pool.take(POOLED_MIN_BYTES);
    pool.give(a.buffer as ArrayBuffer);
    pool.give(b.buffer as ArrayBuffer);
    pool.give(new ArrayBuffer(POOLED_MIN_BYTES));
    expect(pool.keptBytes()).toBe(POOLED_MIN_BYTES);
    // Small ones are never kept.
    const small = pool.take(16);
    pool.give(small.buffer as ArrayBuffer);
    expect(pool.keptBytes()).toBe(POOLED_MIN_BYTES);
  });

  test("a coalesced input whose parts cannot all move is joined before it leaves, the same bytes", () => {
    const n = OUT_OF_LINE_MIN_BYTES / 4;
    const parts: HostTensor[] = [1, 2].map((seed) => ({
      dtype: "f32",
      shape: [1, n],
      data: new Float32Array(n).map((_, i) => seed * 1000 + i),
    }));
    noteMovable((parts[0] as HostTensor).data.buffer);
    const batch = encodeRunCalls([{ id: 1, handle: 1, resident: [], inputs: [joinRowsLater(parts, 2)] }]);
    // Joined here into one buffer of the execution's own, which then moves.
    expect(batch.movedBytes).toBe(2 * n * 4);
    expect(batch.transfer).not.toContain((parts[1] as HostTensor).data.buffer as ArrayBuffer);
    const data = decodeRunCalls(batch.message)[0]?.inputs[0]?.data as Float32Array;
    expect([data[0], data[n], data[2 * n - 1]]).toEqual([1000, 2000, 2000 + n - 1]);
  });
});
