import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { profileExecution } from "../src/profile.ts";

/** A while loop whose body does a dot and an add: the loop is charged only for its own work. */
const MODULE = `
func.func @main(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<20> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i32>, tensor<64x64xf32>
  cond {
    %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %d = stablehlo.dot_general %acc, %x, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %s = stablehlo.tanh %d : tensor<64x64xf32>
    %i2 = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %i2, %s : tensor<i32>, tensor<64x64xf32>
  }
  return %r#1 : tensor<64x64xf32>
}`;

test("profile: exclusive time per op kind and per op, with the op's line", async () => {
  const x = {
    dtype: "f32" as const,
    shape: [64, 64],
    data: Float32Array.from({ length: 4096 }, (_, i) => (i % 7) / 70),
  };
  const p = await profileExecution(MODULE, [x], { runs: 2 });
  const kinds = new Map(p.byKind.map((k) => [k.kind, k]));
  expect(kinds.get("stablehlo.dot_general")?.callsPerRun).toBe(20);
  expect(kinds.get("stablehlo.tanh")?.callsPerRun).toBe(20);
  expect(kinds.get("stablehlo.while")?.callsPerRun).toBe(1);
  // Exclusive: the parts never add up to more than the wall time.
  const sum = p.byKind.reduce((a, k) => a + k.msPerRun, 0);
  expect(sum).toBeLessThanOrEqual(p.wallMsPerRun * 1.01 + 0.01);
  const dot = p.byOp.find((o) => o.kind === "stablehlo.dot_general");
  expect(dot?.op).toStartWith("line 11: %d = stablehlo.dot_general -> f32[64x64]");
  expect(p.text).toContain("by op kind");
  expect(p.text).toContain("stablehlo.dot_general");
});

test("profile: a module that does not compile is refused with the engine's error", async () => {
  await expect(profileExecution("func.func @main( {", [])).rejects.toThrow();
});

const PORTABLE = new URL("../../../../shared/conformance/stablehlo/portable/abs_float32_20_20.mlir.bc", import.meta.url)
  .pathname;

test.skipIf(!existsSync(PORTABLE))(
  "profile: a portable artifact (MLIR bytecode) profiles too, without lines",
  async () => {
    const p = await profileExecution(new Uint8Array(readFileSync(PORTABLE)), [], { runs: 1 });
    expect(p.byKind.length).toBeGreaterThan(0);
    expect(p.byOp.every((o) => !o.op.startsWith("line "))).toBe(true);
  },
);
