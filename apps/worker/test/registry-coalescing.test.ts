/** How the registry's models run concurrent requests, with and without dynamic batching (fake engine). */
import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import { readReference } from "../../../tests/e2e/helpers.ts";
import { setup } from "./fake-registry.ts";
describe("request coalescing (fake engine)", () => {
  test("concurrent requests share executions and each gets exactly its own rows", async () => {
    const { registry, backend } = setup(["mlp"]);
    await registry.loadAll();
    const model = registry.getModel("mlp");
    if (!model) throw new Error("no mlp");
    const x = readReference("mlp").get(8)?.inputs.get("features") as HostTensor;
    const rows = (start: number, n: number): Map<string, HostTensor> =>
      new Map([
        [
          "features",
          { dtype: "f32", shape: [n, 64], data: (x.data as Float32Array).slice(start * 64, (start + n) * 64) },
        ],
      ]);
    const requests = [
      [0, 1],
      [1, 2],
      [3, 3],
      [6, 1],
      [7, 1],
      [2, 4],
    ] as const;
    const solo: Map<string, HostTensor>[] = [];
    for (const [s, n] of requests) solo.push(await model.infer({ inputs: rows(s, n) }));
    backend.execDelayMs = 20;
    const before = model.stats();
    const together = await Promise.all(requests.map(([s, n]) => model.infer({ inputs: rows(s, n) })));
    const after = model.stats();
    together.forEach((out, i) => {
      const want = solo[i];
      expect(out.get("logits")?.shape).toEqual(want?.get("logits")?.shape as number[]);
      expect(Array.from(out.get("logits")?.data as Float32Array)).toEqual(
        Array.from(want?.get("logits")?.data as Float32Array),
      );
      expect(Array.from(out.get("probabilities")?.data as Float32Array)).toEqual(
        Array.from(want?.get("probabilities")?.data as Float32Array),
      );
    });
    expect(after.inferenceCount - before.inferenceCount).toBe(12);
    expect(after.executionCount - before.executionCount).toBeLessThan(requests.length);
  });
});

describe("without dynamic batching (the default)", () => {
  test("each request runs on its own batch size's program, whatever else is in flight", async () => {
    const { registry, backend } = setup(["mlp"], {}, false);
    await registry.loadAll();
    const model = registry.getModel("mlp");
    if (!model) throw new Error("no mlp");
    const x = readReference("mlp").get(8)?.inputs.get("features") as HostTensor;
    const one = (i: number): Map<string, HostTensor> =>
      new Map([
        ["features", { dtype: "f32", shape: [1, 64], data: (x.data as Float32Array).slice(i * 64, (i + 1) * 64) }],
      ]);
    backend.execDelayMs = 20;
    const before = model.stats();
    await Promise.all([0, 1, 2, 3].map((i) => model.infer({ inputs: one(i) })));
    const after = model.stats();
    expect(after.executionCount - before.executionCount).toBe(4);
  });
});
