import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { loadBundle, uploadAll } from "@xlaserve/core";
import { createReactantBackend } from "@xlaserve/backend-reactant";
import {
  FLOAT_TOLERANCE,
  checkOutputs,
  isReferenceBundle,
  runBatch,
} from "@xlaserve/backend-reactant/conformance/bundle-case.ts";

/**
 * Every zoo model (tools/zoo, rebuilt by tools/build_zoo.py) at both of its batch sizes on the CPU
 * engine against XLA CPU's outputs stored with it. Integer and bool outputs (token ids, top_k
 * indices, rankings, int32 accumulators) must be equal; float outputs within FLOAT_TOLERANCE of
 * the output's largest magnitude (f32 1e-5, f16 1e-2, bf16 3e-2).
 */
const ZOO = join(import.meta.dir, "models");
const MODELS = readdirSync(ZOO)
  .filter((m) => isReferenceBundle(join(ZOO, m)))
  .sort();

test("the zoo covers the model kinds users serve, each at two batch sizes", async () => {
  expect(MODELS.length).toBeGreaterThanOrEqual(10);
  for (const m of MODELS) {
    const bundle = await loadBundle(join(ZOO, m));
    expect(bundle.manifest.compiledBatchSizes.length).toBe(2);
    expect(bundle.manifest.compiledBatchSizes).toContain(1);
  }
});

describe("zoo models on the CPU engine match XLA CPU", () => {
  const backend = createReactantBackend();
  for (const model of MODELS) {
    test(model, async () => {
      const bundle = await loadBundle(join(ZOO, model));
      const weights = await uploadAll(
        backend,
        bundle.weights.argumentOrder.map((w) => bundle.weights.tensor(w)),
      );
      try {
        for (const batch of bundle.manifest.compiledBatchSizes) {
          const checks = await runBatch(backend, bundle, batch, weights);
          const line = checks.map((c) => `${c.name} ${c.dtype} ${c.error.toExponential(1)}`).join(", ");
          console.log(`${model} b${batch}: ${line}`);
          for (const c of checks)
            expect({ model, batch, output: c.name, ok: c.ok, detail: c.detail }).toEqual({
              model,
              batch,
              output: c.name,
              ok: true,
              detail: undefined,
            });
        }
      } finally {
        for (const w of weights) w.dispose();
      }
    }, 60_000);
  }
});

test("the check fails an output off by more than its tolerance, and any integer that differs", () => {
  const f32 = (v: number[]) => ({ dtype: "f32" as const, shape: [v.length], data: Float32Array.from(v) });
  const i32 = (v: number[]) => ({ dtype: "i32" as const, shape: [v.length], data: Int32Array.from(v) });
  const tol = FLOAT_TOLERANCE.f32 as number;
  const near = checkOutputs(["x"], [f32([10, 1 + 5 * tol])], [f32([10, 1])]);
  expect(near[0]?.ok).toBe(true);
  const far = checkOutputs(["x"], [f32([10, 1 + 20 * tol])], [f32([10, 1])]);
  expect(far[0]?.ok).toBe(false);
  expect(far[0]?.detail).toContain("relative error");
  const ids = checkOutputs(["ids"], [i32([3, 1, 2])], [i32([3, 2, 1])]);
  expect(ids[0]?.ok).toBe(false);
  expect(ids[0]?.detail).toContain("2 differ");
  const shape = checkOutputs(["x"], [f32([1, 2])], [f32([1, 2, 3])]);
  expect(shape[0]?.detail).toContain("XLA f32[3]");
});
