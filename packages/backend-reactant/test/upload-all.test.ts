import { describe, expect, test } from "bun:test";
import { type HostTensor, XlaserveError, uploadAll } from "@xlaserve/core";
import { createReactantBackend } from "../src/backend.ts";

const tensor = (n: number, fill: number): HostTensor => ({
  dtype: "f32",
  shape: [n],
  data: new Float32Array(n).fill(fill),
});

describe("uploadAll (core) on the CPU engine", () => {
  test("keeps argument order", async () => {
    const be = createReactantBackend();
    const buffers = await uploadAll(be, [tensor(3, 1), tensor(5, 2), tensor(7, 3)]);
    expect(buffers.map((b) => b.shape[0])).toEqual([3, 5, 7]);
    const back = await Promise.all(buffers.map((b) => be.download(b)));
    expect(back.map((t) => t.data[0])).toEqual([1, 2, 3]);
    for (const b of buffers) b.dispose();
    await be.dispose();
  });

  test("a failing upload frees the ones that succeeded and throws its error", async () => {
    const be = createReactantBackend();
    const before = be.memoryStats().inUseBytes;
    const broken: HostTensor = { dtype: "f32", shape: [4], data: new Float32Array(3) };
    const big = (fill: number) => tensor(1 << 16, fill);
    const attempt = uploadAll(be, [big(1), big(2), broken, big(3)]);
    await expect(attempt).rejects.toBeInstanceOf(XlaserveError);
    await expect(attempt).rejects.toThrow(/3 elements, shape needs 4/);
    expect(be.memoryStats().inUseBytes).toBe(before);
    await be.dispose();
  });
});
