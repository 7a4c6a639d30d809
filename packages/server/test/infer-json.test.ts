import { afterAll, describe, expect, test } from "bun:test";
import { numberToBf16Bits, numberToF16Bits } from "@xlaserve/core";
import { type Json, postJson, startHarness } from "./support/harness.ts";

const h = startHarness();
afterAll(() => h.stop());
const infer = (model: string, body: unknown, headers?: Record<string, string>) =>
  postJson(`${h.url}/v2/models/${model}/infer`, body, headers);

describe("JSON inference", () => {
  test("flat data: y = 2x + 1 and FP64 row sums, id echoed", async () => {
    const r = await infer("affine", {
      id: "req-42",
      inputs: [{ name: "x", shape: [2, 4], datatype: "FP32", data: [0, 1, 2, 3, -1, 0.5, 10, 100] }],
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(r.headers.get("inference-header-content-length")).toBeNull();
    expect(r.body).toEqual({
      model_name: "affine",
      model_version: "1",
      id: "req-42",
      outputs: [
        { name: "y", datatype: "FP32", shape: [2, 4], data: [1, 3, 5, 7, -1, 2, 21, 201] },
        { name: "row_sum", datatype: "FP64", shape: [2], data: [16, 223] },
      ],
    });
  });

  test("nested data is read row-major", async () => {
    const r = await infer("affine", {
      inputs: [
        {
          name: "x",
          shape: [2, 4],
          datatype: "FP32",
          data: [
            [0, 1, 2, 3],
            [4, 5, 6, 7],
          ],
        },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.id).toBeUndefined();
    expect(r.body.outputs[0].data).toEqual([1, 3, 5, 7, 9, 11, 13, 15]);
  });

  test("the versioned infer route serves the same model", async () => {
    const r = await postJson(`${h.url}/v2/models/affine/versions/1/infer`, {
      inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", data: [1, 1, 1, 1] }],
    });
    expect(r.status).toBe(200);
    expect(r.body.outputs[1].data).toEqual([12]);
  });

  test("requested outputs: only those, in the order asked", async () => {
    const r = await infer("affine", {
      inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }],
      outputs: [{ name: "row_sum" }],
    });
    expect(r.body.outputs).toEqual([{ name: "row_sum", datatype: "FP64", shape: [1], data: [24] }]);
    const bad = await infer("affine", {
      inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }],
      outputs: [{ name: "z" }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('unknown requested output "z"; model "affine" produces: y, row_sum');
  });

  test("two inputs of different datatypes", async () => {
    const r = await infer("sum", {
      inputs: [
        { name: "b", shape: [1, 2], datatype: "INT32", data: [10, -20] },
        { name: "a", shape: [1, 2], datatype: "FP32", data: [0.5, 0.25] },
      ],
    });
    expect(r.body.outputs[0].data).toEqual([10.5, -19.75]);
  });
});

/** Per datatype: values sent, values expected back (after the dtype's rounding). */
const CASES: Record<string, { send: unknown[]; back: unknown[] }> = {
  BOOL: { send: [true, false, 1, 0, true, false], back: [true, false, true, false, true, false] },
  INT8: { send: [-128, 127, 0, -1, 5, 6], back: [-128, 127, 0, -1, 5, 6] },
  INT16: { send: [-32768, 32767, 0, 1, 2, 3], back: [-32768, 32767, 0, 1, 2, 3] },
  INT32: { send: [-2147483648, 2147483647, 0, 1, 2, 3], back: [-2147483648, 2147483647, 0, 1, 2, 3] },
  INT64: {
    send: [-9007199254740991, 9007199254740991, 0, -1, 2, 3],
    back: [-9007199254740991, 9007199254740991, 0, -1, 2, 3],
  },
  UINT8: { send: [0, 255, 1, 2, 3, 4], back: [0, 255, 1, 2, 3, 4] },
  UINT16: { send: [0, 65535, 1, 2, 3, 4], back: [0, 65535, 1, 2, 3, 4] },
  UINT32: { send: [0, 4294967295, 1, 2, 3, 4], back: [0, 4294967295, 1, 2, 3, 4] },
  UINT64: { send: [0, 9007199254740991, 1, 2, 3, 4], back: [0, 9007199254740991, 1, 2, 3, 4] },
  // 1 + 2^-11 is halfway between two FP16 values: ties to even gives 1; 65519 is below the
  // halfway point to the next power of two, so it rounds to the largest finite 65504.
  FP16: { send: [1.5, -2, 1 + 2 ** -11, 65504, 65519, 2 ** -24], back: [1.5, -2, 1, 65504, 65504, 2 ** -24] },
  // 1 + 2^-8 is halfway for BF16 (8 significand bits): ties to even gives 1; 1 + 3*2^-8 rounds up
  // to 1 + 2^-6; 3e38 rounds to 226/128 * 2^127.
  BF16: {
    send: [1.5, -2, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 3.0e38, 0],
    back: [1.5, -2, 1, 1 + 2 ** -6, 1.765625 * 2 ** 127, 0],
  },
  FP32: {
    send: [0.1, -1, 3.4e38, 1e-45, 0, 2],
    back: [Math.fround(0.1), -1, Math.fround(3.4e38), Math.fround(1e-45), 0, 2],
  },
  FP64: {
    send: [0.1, -1, 1.7976931348623157e308, 5e-324, 0, 2],
    back: [0.1, -1, 1.7976931348623157e308, 5e-324, 0, 2],
  },
};

describe("every datatype through JSON", () => {
  for (const [datatype, { send, back }] of Object.entries(CASES)) {
    test(datatype, async () => {
      const model = `echo_${datatype.toLowerCase()}`;
      const r = await infer(model, { inputs: [{ name: "in", shape: [2, 3], datatype, data: send }] });
      expect(r.status).toBe(200);
      expect(r.body.outputs[0]).toEqual({ name: "out", datatype, shape: [2, 3], data: back });
    });
  }

  test("FP16 and BF16 reach the model as round-to-nearest-even bits", async () => {
    await infer("echo_fp16", {
      inputs: [{ name: "in", shape: [1, 3], datatype: "FP16", data: [0.1, 1 + 2 ** -11, -1.5] }],
    });
    const f16 = h.registry.models.get("echo_fp16")?.lastRequest?.inputs.get("in")?.data as Uint16Array;
    expect([...f16]).toEqual([numberToF16Bits(0.1), 0x3c00, 0xbe00]);
    await infer("echo_bf16", {
      inputs: [{ name: "in", shape: [1, 3], datatype: "BF16", data: [0.1, 1 + 2 ** -8, -1] }],
    });
    const bf16 = h.registry.models.get("echo_bf16")?.lastRequest?.inputs.get("in")?.data as Uint16Array;
    expect([...bf16]).toEqual([numberToBf16Bits(0.1), 0x3f80, 0xbf80]);
  });

  test("64-bit integers keep every digit on the way out", async () => {
    const r = await fetch(`${h.url}/v2/models/echo_int64/infer`, {
      method: "POST",
      body: JSON.stringify({ inputs: [{ name: "in", shape: [1, 3], datatype: "INT64", data: [1, 2, 3] }] }),
    });
    expect(await r.text()).toContain('"data":[1,2,3]');
  });

  test("Python-style NaN / Infinity literals are read for floats and written back as strings", async () => {
    const body = '{"inputs":[{"name":"in","shape":[1,3],"datatype":"FP32","data":[NaN, Infinity, -Infinity]}]}';
    const r = await fetch(`${h.url}/v2/models/echo_fp32/infer`, { method: "POST", body });
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('"data":["NaN","Infinity","-Infinity"]');
  });

  test("non-finite literals inside strings are left alone", async () => {
    const body =
      '{"id":"NaN \\" Infinity","inputs":[{"name":"in","shape":[1,3],"datatype":"FP64","data":[-Infinity, 1, NaN]}]}';
    const r = await fetch(`${h.url}/v2/models/echo_fp64/infer`, { method: "POST", body });
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text).toContain('"id":"NaN \\" Infinity"');
    expect(text).toContain('"data":["-Infinity",1,"NaN"]');
  });

  test("nested data must be the shape's own nesting: deeper, shallower or regrouped is 400", async () => {
    const cases: Array<{ shape: number[]; data: unknown; why: string }> = [
      // One more level than the shape's two axes.
      {
        shape: [2, 2],
        data: [
          [[10], [20]],
          [[30], [40]],
        ],
        why: "nested deeper than shape [2, 2] has axes",
      },
      // The right element count, grouped for another shape.
      { shape: [1, 2], data: [[1], [2]], why: "2 elements at depth 0 but axis 0 of shape [1, 2] is 1" },
      { shape: [2, 2], data: [[1, 2, 3, 4]], why: "1 elements at depth 0 but axis 0 of shape [2, 2] is 2" },
    ];
    for (const { shape, data, why } of cases) {
      const r = await infer("sum", {
        inputs: [
          { name: "a", shape, datatype: "FP32", data: Array((shape[0] as number) * 2).fill(1) },
          { name: "b", shape, datatype: "INT32", data },
        ],
      });
      expect(r.status).toBe(400);
      expect(r.body.error).toContain(why);
    }
  });

  test("a gzip-compressed request body is accepted", async () => {
    const json = JSON.stringify({ inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] });
    const r = await fetch(`${h.url}/v2/models/affine/infer`, {
      method: "POST",
      headers: { "content-encoding": "gzip", "content-type": "application/json" },
      body: Bun.gzipSync(new TextEncoder().encode(json)),
    });
    expect(r.status).toBe(200);
    expect(((await r.json()) as Json).outputs[0].data).toEqual([3, 5, 7, 9]);
  });
});
