import { afterAll, describe, expect, test } from "bun:test";
import { FAULT_CODES } from "./support/test-models.ts";
import { type Json, postJson, startHarness } from "./support/harness.ts";

const h = startHarness({ maxBodyBytes: 4096 });
afterAll(() => h.stop());

const EXPECTED_STATUS: Record<string, number> = {
  INVALID_ARGUMENT: 400,
  NOT_FOUND: 404,
  UNAVAILABLE: 503,
  SHUTTING_DOWN: 503,
  QUEUE_FULL: 429,
  UNAUTHORIZED: 401,
  OUT_OF_MEMORY: 507,
  EXECUTE_FAILED: 500,
};

describe("error mapping", () => {
  FAULT_CODES.forEach((code, index) => {
    test(`${code} from the model is ${EXPECTED_STATUS[code]}`, async () => {
      const r = await postJson(`${h.url}/v2/models/faulty/infer`, {
        inputs: [{ name: "code", shape: [1], datatype: "INT32", data: [index] }],
      });
      expect(r.status).toBe(EXPECTED_STATUS[code] as number);
      expect(r.body).toEqual({ error: `faulty model raised ${code}` });
    });
  });

  test("a model that is not ready is 503", async () => {
    const r = await postJson(`${h.url}/v2/models/cold/infer`, {
      inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }],
    });
    expect(r.status).toBe(503);
    expect(r.body.error).toBe('model "cold" is not ready');
  });

  test("a body over the limit is 413 with the limit in the message, chunked or not", async () => {
    const big = JSON.stringify({
      inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }],
      pad: "x".repeat(5000),
    });
    const r = await postJson(`${h.url}/v2/models/affine/infer`, big);
    expect(r.status).toBe(413);
    expect(r.body.error).toBe(`request body of ${big.length} bytes exceeds the limit of 4096 bytes`);
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(new TextEncoder().encode("x".repeat(1000)));
        controller.close();
      },
    });
    const chunked = await fetch(`${h.url}/v2/models/affine/infer`, { method: "POST", body: stream });
    expect(chunked.status).toBe(413);
    expect(((await chunked.json()) as Json).error).toContain("exceeds the limit of 4096 bytes");
  });

  test("a compressed body that inflates past the limit is 413", async () => {
    const bomb = Bun.gzipSync(new Uint8Array(1024 * 1024));
    expect(bomb.byteLength).toBeLessThan(4096);
    const r = await fetch(`${h.url}/v2/models/affine/infer`, {
      method: "POST",
      headers: { "content-encoding": "gzip" },
      body: bomb,
    });
    expect(r.status).toBe(413);
    expect(((await r.json()) as Json).error).toBe("the gzip request body inflates past the limit of 4096 bytes");
  });

  test("the server keeps serving and counts every answer by status", async () => {
    const ok = await postJson(`${h.url}/v2/models/affine/infer`, {
      inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }],
    });
    expect(ok.status).toBe(200);
    const text = await (await fetch(`${h.url}/metrics`)).text();
    expect(text).toContain('worker_requests_total{model="faulty",status="429",protocol="http"} 1');
    expect(text).toContain('worker_requests_total{model="faulty",status="507",protocol="http"} 1');
    expect(text).toContain('worker_requests_total{model="cold",status="503",protocol="http"} 1');
  });

  test("one log line per request: debug on success, warn with the error on failure", async () => {
    const before = h.logs.length;
    await postJson(`${h.url}/v2/models/affine/infer`, {
      id: "log-me",
      inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }],
    });
    await postJson(`${h.url}/v2/models/affine/infer`, {
      id: "bad",
      inputs: [{ name: "q", shape: [1], datatype: "FP32", data: [1] }],
    });
    const lines = h.logs.slice(before);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: "debug", msg: "infer", model: "affine", status: 200, id: "log-me" });
    expect(typeof lines[0]?.ms).toBe("number");
    expect(lines[1]).toMatchObject({ level: "warn", msg: "infer failed", model: "affine", status: 400, id: "bad" });
    expect(String(lines[1]?.error)).toContain('unknown input "q"');
  });
});
