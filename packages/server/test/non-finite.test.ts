/**
 * Non-finite floats in answers: every JSON answer parses with a strict JSON parser (JSON.parse),
 * NaN / Infinity / -Infinity come out as the strings "NaN", "Infinity", "-Infinity" (which the
 * server also reads back as input), and binary outputs keep every bit, NaN payloads included.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { binaryBody, readBinaryResponse, startHarness } from "./support/harness.ts";

const h = startHarness();
afterAll(() => h.stop());

const FLOAT_TYPES = ["FP16", "BF16", "FP32", "FP64"] as const;

async function inferText(model: string, body: string): Promise<{ status: number; text: string }> {
  const r = await fetch(`${h.url}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return { status: r.status, text: await r.text() };
}

describe("non-finite floats in JSON answers", () => {
  for (const datatype of FLOAT_TYPES) {
    test(`${datatype}: the answer is strict JSON with "NaN" / "Infinity" / "-Infinity" strings`, async () => {
      const body = JSON.stringify({
        inputs: [{ name: "in", shape: [1, 3], datatype, data: ["NaN", "Infinity", "-Infinity"] }],
      });
      const r = await inferText(`echo_${datatype.toLowerCase()}`, body);
      expect(r.status).toBe(200);
      const parsed = JSON.parse(r.text);
      expect(parsed.outputs[0].data).toEqual(["NaN", "Infinity", "-Infinity"]);
    });
  }

  test("finite values stay numbers beside non-finite ones, and the answer is valid input again", async () => {
    const body = '{"inputs":[{"name":"in","shape":[2,3],"datatype":"FP64","data":[NaN,1.5,-0,Infinity,-2,-Infinity]}]}';
    const first = await inferText("echo_fp64", body);
    expect(first.status).toBe(200);
    const out = JSON.parse(first.text).outputs[0];
    expect(out.data).toEqual(["NaN", 1.5, 0, "Infinity", -2, "-Infinity"]);
    // What the server wrote is what it reads: the output sent back as an input echoes the same.
    const again = await inferText("echo_fp64", JSON.stringify({ inputs: [{ ...out, name: "in" }] }));
    expect(again.status).toBe(200);
    expect(JSON.parse(again.text).outputs[0].data).toEqual(out.data);
  });

  test("binary outputs keep the exact bits of NaN payloads and infinities", async () => {
    const raw = new Uint32Array([0x7fc00001, 0xffbfffff, 0x7f800000, 0xff800000, 0x7fa00000, 0x3f800000]);
    const bytes = new Uint8Array(raw.buffer);
    const { body, headerLength } = binaryBody(
      {
        inputs: [{ name: "in", shape: [2, 3], datatype: "FP32", parameters: { binary_data_size: bytes.byteLength } }],
        outputs: [{ name: "out", parameters: { binary_data: true } }],
      },
      [bytes],
    );
    const r = await fetch(`${h.url}/v2/models/echo_fp32/infer`, {
      method: "POST",
      headers: { "inference-header-content-length": String(headerLength) },
      body: body as BodyInit,
    });
    expect(r.status).toBe(200);
    const { binary } = await readBinaryResponse(r);
    expect([...new Uint32Array(binary.slice().buffer)]).toEqual([...raw]);
  });
});
