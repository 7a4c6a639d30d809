import { describe, expect, test } from "bun:test";
import { poolNhwc } from "../../src/kernels/heavy/pool-nhwc.ts";
import { setPoolWasm } from "../../src/kernels/heavy/pool-wasm.ts";
import { windowGeometry } from "../../src/kernels/heavy/window-geometry.ts";
import { randInt, rng } from "./helpers.ts";

/** Bits that exercise the keys: NaNs of both signs, infinities, both zeros, subnormals, and noise. */
function specialBits(next: () => number, half: boolean): number {
  const pick = next();
  const specials = half
    ? [0x7e00, 0xfe01, 0x7c00, 0xfc00, 0x7f80, 0xff80, 0x7fc1, 0, 0x8000, 0x0001, 0x8001]
    : [0x7fc00000, 0xffc00001, 0x7f800000, 0xff800000, 0, 0x80000000, 1, 0x80000001];
  if (pick < 0.15) return specials[Math.floor(next() * specials.length)] as number;
  return Math.floor(next() * (half ? 0x10000 : 2 ** 32)) >>> 0;
}

function bytes(view: Uint16Array | Float32Array): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice();
}

describe("WebAssembly channels-last pooling", () => {
  test("gives the JavaScript loops' bits for max and min, f32 / bf16 / f16, on 90 random windows", () => {
    for (let seed = 1; seed <= 90; seed++) {
      const next = rng(seed);
      const type = (["f32", "bf16", "f16"] as const)[seed % 3] as "f32" | "bf16" | "f16";
      const kind = next() < 0.5 ? "max" : "min";
      const half = type !== "f32";
      const shape = [randInt(next, 1, 2), randInt(next, 1, 9), randInt(next, 1, 9), randInt(next, 1, 21)];
      const k = [randInt(next, 1, 3), randInt(next, 1, 3)];
      const g = windowGeometry("reduce_window", shape, {
        windowDimensions: [1, k[0] as number, k[1] as number, 1],
        windowStrides: [1, randInt(next, 1, 2), randInt(next, 1, 2), 1],
        padding: [
          [0, 0],
          [randInt(next, 0, 1), randInt(next, 0, 1)],
          [randInt(next, 0, 1), randInt(next, 0, 1)],
          [0, 0],
        ],
      });
      const count = shape.reduce((a, b) => a * b, 1);
      const outCount = g.outShape.reduce((a, b) => a * b, 1);
      const input = half ? new Uint16Array(count) : new Float32Array(count);
      const bits = half ? (input as Uint16Array) : new Uint32Array(input.buffer);
      for (let i = 0; i < count; i++) bits[i] = specialBits(next, half);
      const init = half ? (kind === "max" ? 0xff80 : 0x7f80) : kind === "max" ? -Infinity : Infinity;
      const run = (wasm: boolean) => {
        const out = half ? new Uint16Array(outCount).fill(init) : new Float32Array(outCount).fill(init);
        if (half && type === "f16") out.fill(kind === "max" ? 0xfc00 : 0x7c00);
        setPoolWasm(wasm);
        try {
          expect(poolNhwc(g, input, out, kind, half ? type : undefined)).toBe(true);
        } finally {
          setPoolWasm(true);
        }
        return bytes(out);
      };
      expect(run(true)).toEqual(run(false));
    }
  });
});
