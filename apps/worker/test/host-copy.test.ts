import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import { copyTensorsYielding } from "../src/memory/host-copy.ts";

const bytesOf = (t: HostTensor) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);

describe("copyTensorsYielding", () => {
  test("copies every tensor byte for byte into storage of its own, with its dtype's array type", async () => {
    const backing = new ArrayBuffer(64 + 3 * 4 + 2 * 2);
    const f32 = new Float32Array(backing, 64, 3).fill(Number.NaN);
    f32[1] = -0;
    const f16 = new Uint16Array(backing, 76, 2).fill(0x7e01);
    const source: HostTensor[] = [
      { dtype: "f32", shape: [3], data: f32 },
      { dtype: "f16", shape: [1, 2], data: f16 },
      { dtype: "i32", shape: [0], data: new Int32Array(0) },
    ];
    const copies = await copyTensorsYielding(source, 4);
    copies.forEach((c, i) => {
      const s = source[i] as HostTensor;
      expect(c.dtype).toBe(s.dtype);
      expect(c.shape).toEqual(s.shape);
      expect(c.data.constructor).toBe(s.data.constructor);
      expect(Array.from(bytesOf(c))).toEqual(Array.from(bytesOf(s)));
      if (c.data.byteLength > 0) expect(c.data.buffer).not.toBe(s.data.buffer);
    });
  });

  test("lets the event loop run between slices of a large tensor", async () => {
    const big: HostTensor = { dtype: "u8", shape: [48 << 20], data: new Uint8Array(48 << 20).fill(7) };
    let turns = 0;
    const tick = setInterval(() => turns++, 0);
    const [copy] = (await copyTensorsYielding([big], 4 << 20)) as [HostTensor];
    clearInterval(tick);
    expect(turns).toBeGreaterThan(3); // 12 slices, a turn of the loop after each
    expect(copy.data.byteLength).toBe(48 << 20);
    expect((copy.data as Uint8Array)[(48 << 20) - 1]).toBe(7);
  });
});
