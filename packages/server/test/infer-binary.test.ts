import { afterAll, describe, expect, test } from "bun:test";
import { type HostTensor, unalignedBytesOf } from "@xlaserve/core";
import { binaryBody, readBinaryResponse, startHarness } from "./support/harness.ts";
import type { Json } from "./support/harness.ts";

const h = startHarness();
afterAll(() => h.stop());

const post = (model: string, body: Uint8Array | string, headerLength?: number) =>
  fetch(`${h.url}/v2/models/${model}/infer`, {
    method: "POST",
    headers: {
      "content-type": "application/octet-stream",
      ...(headerLength === undefined ? {} : { "inference-header-content-length": String(headerLength) }),
    },
    body: body as BodyInit,
  });

const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** Raw little-endian bytes for [2, 3] tensors of each datatype, including values JSON cannot carry. */
const RAW: Record<string, ArrayBufferView> = {
  BOOL: new Uint8Array([1, 0, 0, 1, 1, 0]),
  INT8: new Int8Array([-128, 127, 0, -1, 2, 3]),
  INT16: new Int16Array([-32768, 32767, 0, -1, 2, 3]),
  INT32: new Int32Array([-2147483648, 2147483647, 0, -1, 2, 3]),
  INT64: new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n, 0n, -1n, 2n ** 53n + 1n, 3n]),
  UINT8: new Uint8Array([0, 255, 1, 2, 3, 4]),
  UINT16: new Uint16Array([0, 65535, 1, 2, 3, 4]),
  UINT32: new Uint32Array([0, 4294967295, 1, 2, 3, 4]),
  UINT64: new BigUint64Array([0n, 2n ** 64n - 1n, 1n, 2n ** 53n + 1n, 3n, 4n]),
  // Raw half bits, including a signalling-looking NaN payload and -0: passed through untouched.
  FP16: new Uint16Array([0x3c00, 0xfc00, 0x7d01, 0x8000, 0x0001, 0x7bff]),
  BF16: new Uint16Array([0x3f80, 0xff80, 0x7fc1, 0x8000, 0x0001, 0x7f7f]),
  FP32: new Float32Array([0.1, -0, Number.NaN, 3.4e38, 1e-45, -1]),
  FP64: new Float64Array([0.1, -0, Number.NaN, 1.7976931348623157e308, 5e-324, -1]),
};

describe("binary tensor data extension", () => {
  for (const [datatype, raw] of Object.entries(RAW)) {
    test(`${datatype}: binary in, binary out, byte-exact`, async () => {
      const bytes = bytesOf(raw);
      const { body, headerLength } = binaryBody(
        {
          id: `bin-${datatype}`,
          inputs: [{ name: "in", shape: [2, 3], datatype, parameters: { binary_data_size: bytes.byteLength } }],
          parameters: { binary_data_output: true },
        },
        [bytes],
      );
      const r = await post(`echo_${datatype.toLowerCase()}`, body, headerLength);
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("application/octet-stream");
      const { header, binary } = await readBinaryResponse(r);
      expect(header).toEqual({
        model_name: `echo_${datatype.toLowerCase()}`,
        model_version: "1",
        id: `bin-${datatype}`,
        outputs: [{ name: "out", datatype, shape: [2, 3], parameters: { binary_data_size: bytes.byteLength } }],
      });
      expect(binary).toEqual(bytes);
    });
  }

  test("mixed: JSON input and binary input, one binary and one JSON output", async () => {
    const x = new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]);
    const { body, headerLength } = binaryBody(
      {
        inputs: [{ name: "x", shape: [2, 4], datatype: "FP32", parameters: { binary_data_size: 32 } }],
        outputs: [
          { name: "y", parameters: { binary_data: true } },
          { name: "row_sum", parameters: { binary_data: false } },
        ],
      },
      [bytesOf(x)],
    );
    const r = await post("affine", body, headerLength);
    const { header, binary } = await readBinaryResponse(r);
    expect(header.outputs).toEqual([
      { name: "y", datatype: "FP32", shape: [2, 4], parameters: { binary_data_size: 32 } },
      { name: "row_sum", datatype: "FP64", shape: [2], data: [24, 56] },
    ]);
    expect(new Float32Array(binary.slice().buffer)).toEqual(new Float32Array([3, 5, 7, 9, 11, 13, 15, 17]));
  });

  test("binary inputs consumed in order across several inputs", async () => {
    const a = new Float32Array([0.5, 1.5]);
    const b = new Int32Array([10, 20]);
    const { body, headerLength } = binaryBody(
      {
        inputs: [
          { name: "a", shape: [1, 2], datatype: "FP32", parameters: { binary_data_size: 8 } },
          { name: "b", shape: [1, 2], datatype: "INT32", parameters: { binary_data_size: 8 } },
        ],
      },
      [bytesOf(a), bytesOf(b)],
    );
    const r = await post("sum", body, headerLength);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(((await r.json()) as Json).outputs[0].data).toEqual([10.5, 21.5]);
  });

  test("a per-output binary_data: false overrides binary_data_output", async () => {
    const r = await fetch(`${h.url}/v2/models/affine/infer`, {
      method: "POST",
      body: JSON.stringify({
        inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", data: [0, 0, 0, 0] }],
        outputs: [{ name: "y", parameters: { binary_data: false } }, { name: "row_sum" }],
        parameters: { binary_data_output: true },
      }),
    });
    const { header, binary } = await readBinaryResponse(r);
    expect(header.outputs[0].data).toEqual([1, 1, 1, 1]);
    expect(header.outputs[1].parameters).toEqual({ binary_data_size: 8 });
    expect(new Float64Array(binary.slice().buffer)).toEqual(new Float64Array([4]));
  });

  test("binary input of a misaligned offset is copied, not misread", async () => {
    // A header of odd length puts the FP64 data at an odd byte offset in the body.
    const x = new Float64Array([1.25, -2.5, 3.75]);
    const header = {
      inputs: [{ name: "in", shape: [1, 3], datatype: "FP64", parameters: { binary_data_size: 24 } }],
      id: "o",
    };
    let { body, headerLength } = binaryBody(header, [bytesOf(x)]);
    if (headerLength % 8 === 0) ({ body, headerLength } = binaryBody({ ...header, id: "od" }, [bytesOf(x)]));
    const r = await post("echo_fp64", body, headerLength);
    expect(((await r.json()) as Json).outputs[0].data).toEqual([1.25, -2.5, 3.75]);
    // The model got the bytes as they lie, the aligned copy made where its elements were read.
    const input = h.registry.models.get("echo_fp64")?.lastRequest?.inputs.get("in") as HostTensor;
    expect(unalignedBytesOf(input)?.byteOffset).toBe(headerLength);
    expect(input.data.byteOffset % 8).toBe(0);
    expect([...input.data]).toEqual([1.25, -2.5, 3.75]);
  });

  test("byte-length and header-length problems are 400s naming the tensor", async () => {
    const { body, headerLength } = binaryBody(
      { inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", parameters: { binary_data_size: 12 } }] },
      [new Uint8Array(12)],
    );
    const short = await post("affine", body, headerLength);
    expect(short.status).toBe(400);
    expect(((await short.json()) as Json).error).toBe(
      'input "x": binary_data_size is 12 bytes but shape [1, 4] of FP32 needs 16',
    );
    const past = await post("affine", body, body.byteLength + 1);
    expect(((await past.json()) as Json).error).toContain("past the end");
    const nan = await post("affine", body, Number.NaN);
    expect(nan.status).toBe(400);
    expect(((await nan.json()) as Json).error).toContain("is not a non-negative integer");
  });
});
