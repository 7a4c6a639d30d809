import { afterAll, describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { Arena } from "../src/plan/arena.ts";
import { fusedSimdRuns, setFusedSimdDisabled } from "../src/plan/fused-simd.ts";
import { Program } from "../src/plan/program.ts";
import { engineThreads, setEngineThreads } from "../src/parallel/threads.ts";

/**
 * Which fused trees run in WebAssembly SIMD (fusion.ts simdPays): f32 arithmetic alone keeps the
 * JavaScript loop unless it is large enough to split over threads, trees with tanh / exp /
 * logistic or f16 / bf16 values take the SIMD loop; the bytes are the same as with SIMD off.
 */
const T = "tensor<4x64xf32>";
const arithmetic = `func.func @main(%a: ${T}, %b: ${T}, %c: tensor<64xf32>) -> ${T} {
  %cb = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<64xf32>) -> ${T}
  %0 = stablehlo.add %a, %b : ${T}
  %1 = stablehlo.multiply %0, %cb : ${T}
  return %1 : ${T}
}`;
const withTanh = arithmetic.replace("return %1", `%2 = stablehlo.tanh %1 : ${T}\n  return %2`);
const narrow = `func.func @main(%a: ${T}, %b: ${T}, %c: tensor<64xf32>) -> ${T} {
  %0 = stablehlo.add %a, %b : ${T}
  %1 = stablehlo.convert %0 : (${T}) -> tensor<4x64xbf16>
  %2 = stablehlo.convert %1 : (tensor<4x64xbf16>) -> ${T}
  return %2 : ${T}
}`;

const args = (rows: number): NDArray[] => [
  { type: "f32", shape: [rows, 64], data: Float32Array.from({ length: rows * 64 }, (_, i) => Math.sin(i) * 3) },
  { type: "f32", shape: [rows, 64], data: Float32Array.from({ length: rows * 64 }, (_, i) => Math.cos(i * 0.7)) },
  { type: "f32", shape: [64], data: Float32Array.from({ length: 64 }, (_, i) => 0.25 + i / 64) },
];

function run(text: string, simd: boolean, rows = 4): { bytes: number[]; simdRuns: number } {
  setFusedSimdDisabled(!simd);
  const before = fusedSimdRuns();
  const f = new Program(parseModule(text.replaceAll("4x64", `${rows}x64`))).func("main");
  const [r] = f.invoke(args(rows), { arena: new Arena({ pool: true }), failures: [] }) as NDArray[];
  const data = r?.data as Float32Array;
  return {
    bytes: Array.from(new Uint32Array(data.buffer, data.byteOffset, data.length)),
    simdRuns: fusedSimdRuns() - before,
  };
}

describe("the fused loop's path", () => {
  const threads = engineThreads();
  afterAll(() => {
    setFusedSimdDisabled(false);
    setEngineThreads(threads);
  });
  test("f32 arithmetic alone runs as JavaScript, tanh and bf16 trees in SIMD, with the same bytes", () => {
    const plain = run(arithmetic, true);
    expect(plain.simdRuns).toBe(0);
    expect(plain.bytes).toEqual(run(arithmetic, false).bytes);
    for (const text of [withTanh, narrow]) {
      const simd = run(text, true);
      expect(simd.simdRuns).toBeGreaterThan(0);
      expect(simd.bytes).toEqual(run(text, false).bytes);
    }
  });

  test("f32 arithmetic large enough to split over two threads takes the SIMD loop, on one thread it does not", () => {
    // 1024 x 64 elements of an add and a multiply: several split shares' worth of work.
    setEngineThreads(1);
    const one = run(arithmetic, true, 1024);
    expect(one.simdRuns).toBe(0);
    setEngineThreads(2);
    const two = run(arithmetic, true, 1024);
    expect(two.simdRuns).toBeGreaterThan(0);
    expect(two.bytes).toEqual(one.bytes);
  });
});
