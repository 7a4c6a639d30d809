import { afterAll, describe, expect, test } from "bun:test";
import { startHarness } from "./support/harness.ts";
import type { Json } from "./support/harness.ts";

const h = startHarness();
afterAll(() => h.stop());

const get = async (path: string) => {
  const r = await fetch(h.url + path);
  return { status: r.status, body: (await r.json()) as Json };
};

describe("health and metadata", () => {
  test("live answers 200; strict readiness is 503 while a model of the repository does not serve", async () => {
    expect(await get("/v2/health/live")).toEqual({ status: 200, body: { live: true } });
    // The test registry holds "cold" (loading) and "broken" (its load failed).
    const r = await get("/v2/health/ready");
    expect(r.status).toBe(503);
    expect(r.body.ready).toBe(false);
    expect(r.body.error).toContain("strict readiness");
    expect(r.body.not_ready.map((m: { name: string }) => m.name).sort()).toEqual(["broken", "cold"]);
    expect(r.body.error).toContain("executable_inputs is missing");
  });

  test("lenient readiness answers 200 while any model serves", async () => {
    const lenient = startHarness({ readiness: "lenient" });
    try {
      const r = await fetch(`${lenient.url}/v2/health/ready`);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ ready: true });
    } finally {
      await lenient.stop();
    }
  });

  test("ready is 503 while the worker is not ready", async () => {
    h.registry.ready = false;
    try {
      const r = await get("/v2/health/ready");
      expect(r.status).toBe(503);
      expect(r.body.ready).toBe(false);
    } finally {
      h.registry.ready = true;
    }
  });

  test("server metadata lists extensions and the xlaserve extra field", async () => {
    const { status, body } = await get("/v2");
    expect(status).toBe(200);
    expect(body.name).toBe("xlaserve");
    expect(body.version).toBe("0.1.0-test");
    expect(body.extensions).toEqual(expect.arrayContaining(["binary_tensor_data", "model_repository", "statistics"]));
    expect(body.xlaserve).toEqual({ engine: "test", engine_reason: "test registry", plugin: null, device: "host" });
  });

  test("model metadata: KServe datatypes, row-major shapes, -1 for the batch axis", async () => {
    const { status, body } = await get("/v2/models/affine");
    expect(status).toBe(200);
    expect(body).toMatchObject({
      name: "affine",
      versions: ["1"],
      platform: "xlaserve_test",
      inputs: [{ name: "x", datatype: "FP32", shape: [-1, 4] }],
      outputs: [
        { name: "y", datatype: "FP32", shape: [-1, 4] },
        { name: "row_sum", datatype: "FP64", shape: [-1] },
      ],
    });
    expect(body.xlaserve).toMatchObject({ compiled_batch_sizes: [1, 8], max_batch_size: 8, engine: "test" });
    const fp16 = await get("/v2/models/echo_fp16");
    expect(fp16.body.inputs).toEqual([{ name: "in", datatype: "FP16", shape: [-1, 3] }]);
    const faulty = await get("/v2/models/faulty");
    expect(faulty.body.inputs).toEqual([{ name: "code", datatype: "INT32", shape: [1] }]);
  });

  test("versioned metadata and readiness", async () => {
    expect((await get("/v2/models/affine/versions/1")).body.name).toBe("affine");
    expect(await get("/v2/models/affine/ready")).toEqual({ status: 200, body: { name: "affine", ready: true } });
    expect((await get("/v2/models/affine/versions/1/ready")).status).toBe(200);
    const cold = await get("/v2/models/cold/ready");
    expect(cold.status).toBe(503);
    expect(cold.body).toMatchObject({ name: "cold", ready: false });
  });

  test("unknown model or version is 404 with an error naming it", async () => {
    const model = await get("/v2/models/nope");
    expect(model.status).toBe(404);
    expect(model.body.error).toContain('"nope"');
    const version = await get("/v2/models/affine/versions/7");
    expect(version.status).toBe(404);
    expect(version.body.error).toBe('model "affine" has no version "7"');
    expect((await get("/v2/models/nope/ready")).status).toBe(404);
    const route = await get("/v2/nothing/here");
    expect(route.status).toBe(404);
    expect(route.body.error).toContain("/v2/nothing/here");
  });

  test("model configuration in Triton's shape (batch axis left out of dims)", async () => {
    const { status, body } = await get("/v2/models/affine/config");
    expect(status).toBe(200);
    expect(body).toMatchObject({
      name: "affine",
      max_batch_size: 8,
      input: [{ name: "x", data_type: "TYPE_FP32", dims: [4] }],
      output: [
        { name: "y", data_type: "TYPE_FP32", dims: [4] },
        { name: "row_sum", data_type: "TYPE_FP64", dims: [] },
      ],
    });
    const faulty = await get("/v2/models/faulty/versions/1/config");
    expect(faulty.body).toMatchObject({
      max_batch_size: 0,
      input: [{ name: "code", data_type: "TYPE_INT32", dims: [1] }],
    });
    expect((await get("/v2/models/ghost/config")).status).toBe(404);
  });

  test("an OpenAPI document describes the routes", async () => {
    const { status, body } = await get("/openapi.json");
    expect(status).toBe(200);
    expect(body.openapi).toMatch(/^3\./);
    for (const path of [
      "/v2/health/live",
      "/v2/models/{model}",
      "/v2/models/{model}/infer",
      "/v2/models/{model}/versions/{version}/infer",
      "/v2/repository/index",
      "/v2/models/{model}/stats",
      "/metrics",
    ]) {
      expect(Object.keys(body.paths)).toContain(path);
    }
    const infer = body.paths["/v2/models/{model}/infer"].post;
    expect(infer.requestBody.content["application/json"].schema.properties.inputs.type).toBe("array");
  });
});
