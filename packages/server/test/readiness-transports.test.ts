/**
 * REST's /v2/health/ready and gRPC's ServerReady answer by one rule: for each repository state
 * both transports, in strict and in lenient mode, say the same, and what the rule says.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ReadinessMode } from "../src/health/readiness.ts";
import { type GrpcHarness, startGrpcHarness } from "./support/grpc-harness.ts";
import { affineModel } from "./support/test-models.ts";
import { TestRegistry } from "./support/test-registry.ts";

const registry = new TestRegistry();
const harness = new Map<ReadinessMode, GrpcHarness>();
beforeAll(async () => {
  // One registry behind both pairs of servers, so each state is seen by all four at once.
  harness.set("strict", await startGrpcHarness({ registry, readiness: "strict" }));
  harness.set("lenient", await startGrpcHarness({ registry, readiness: "lenient" }));
});
afterAll(async () => {
  for (const h of harness.values()) await h.stop();
});

/** The repository holds exactly these models (serving) and these failed loads. */
function repository(serving: string[], failed: string[]): void {
  registry.models.clear();
  registry.unloaded.clear();
  for (const name of serving) {
    const model = affineModel();
    Object.assign(model, { name });
    registry.models.set(name, model);
  }
  for (const name of failed) registry.unloaded.set(name, "BUNDLE_INVALID: manifest.yaml: executable_inputs is missing");
}

async function answers(mode: ReadinessMode): Promise<{ rest: boolean; grpc: boolean; error: string | undefined }> {
  const h = harness.get(mode) as GrpcHarness;
  const r = await fetch(`${h.url}/v2/health/ready`);
  const body = (await r.json()) as { ready: boolean; error?: string };
  expect(body.ready).toBe(r.status === 200);
  const grpc = (await h.client.call("serverReady", {})).ready;
  return { rest: r.status === 200, grpc, error: body.error };
}

const CASES: Array<{ name: string; serving: string[]; failed: string[]; strict: boolean; lenient: boolean }> = [
  { name: "empty repository", serving: [], failed: [], strict: false, lenient: false },
  { name: "only a failed model", serving: [], failed: ["broken"], strict: false, lenient: false },
  {
    name: "a failed model beside a serving one",
    serving: ["affine"],
    failed: ["broken"],
    strict: false,
    lenient: true,
  },
  { name: "every model serving", serving: ["affine", "other"], failed: [], strict: true, lenient: true },
];

describe("readiness: REST and gRPC agree", () => {
  for (const c of CASES) {
    test(c.name, async () => {
      repository(c.serving, c.failed);
      for (const mode of ["strict", "lenient"] as const) {
        const a = await answers(mode);
        expect({ mode, rest: a.rest, grpc: a.grpc }).toEqual({ mode, rest: c[mode], grpc: c[mode] });
        if (!a.rest && c.failed.length > 0) expect(a.error).toContain("broken");
      }
    });
  }

  test("neither is ready while the worker starts", async () => {
    repository(["affine"], []);
    registry.ready = false;
    try {
      for (const mode of ["strict", "lenient"] as const)
        expect(await answers(mode)).toMatchObject({ rest: false, grpc: false });
    } finally {
      registry.ready = true;
    }
  });
});
