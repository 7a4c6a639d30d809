import { describe, expect, test } from "bun:test";
import { gpuBackend } from "./support/backend.ts";
import { recordResult } from "./support/results.ts";

const backend = await gpuBackend();

describe.skipIf(!backend)("the backend identity on the GPU", () => {
  test("names every field the program cache partitions by", () => {
    if (!backend) return;
    const id = backend.identity();
    expect(id.backend).toBe("pjrt");
    expect(id.platform).toBe("cuda");
    expect(id.buildId).toMatch(/\+[0-9a-f]{16}$/);
    expect(id.buildId.startsWith("unknown")).toBe(false);
    expect(id.runtimeVersion).not.toBe("none");
    expect(id.deviceKind.length).toBeGreaterThan(0);
    expect(id.computeCapability).toMatch(/^\d+\.\d+/);
    recordResult("identity", { ...id, plugin: backend.attributes, devices: backend.devices() });
  });
});
