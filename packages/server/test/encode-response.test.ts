import { describe, expect, test } from "bun:test";
import {
  DTYPES,
  type DType,
  type HostTensor,
  allocTyped,
  dtypeInfo,
  numberToBf16Bits,
  numberToF16Bits,
} from "@xlaserve/core";
import type { OutputPlan } from "../src/infer/decode-request.ts";
import { encodeInferResponse } from "../src/infer/encode-response.ts";
import { encodeInferResponse as referenceEncode } from "./support/reference-encoder.ts";

/** Every client-visible dtype, with values that probe its text form (extremes, NaN, -0, ...). */
const CLIENT_DTYPES = DTYPES.filter((d) => dtypeInfo(d).clientVisible);

function valuesFor(dtype: DType): HostTensor["data"] {
  const floats = [0, -0, 1, -1.5, 0.1, 1 / 3, 65504, 1e-8, 3.4e38, Number.NaN, Infinity, -Infinity, 1e300];
  switch (dtype) {
    case "bool":
      return Uint8Array.from([0, 1, 1, 0]);
    case "f16":
      return Uint16Array.from(floats.map(numberToF16Bits));
    case "bf16":
      return Uint16Array.from(floats.map(numberToBf16Bits));
    case "f32":
      return Float32Array.from(floats);
    case "f64":
      return Float64Array.from(floats);
    case "i64":
      return BigInt64Array.from([0n, -1n, 9007199254740993n, -9223372036854775808n, 9223372036854775807n]);
    case "u64":
      return BigUint64Array.from([0n, 1n, 18446744073709551615n, 9007199254740993n]);
    default: {
      const out = allocTyped(dtype, 6) as Int32Array;
      const samples = [0, 1, -1, 127, -128, 255, 65535, -32768, 2147483647, -2147483648, 4294967295];
      for (let i = 0; i < out.length; i++) out[i] = samples[(i * 3) % samples.length] as number;
      return out;
    }
  }
}

function tensor(dtype: DType, data = valuesFor(dtype)): HostTensor {
  return { dtype, shape: [1, data.length], data };
}

async function bytesOf(response: Response) {
  return {
    status: response.status,
    headers: [...response.headers.entries()],
    body: new Uint8Array(await response.arrayBuffer()),
  };
}

async function expectSame(
  head: { modelName: string; modelVersion: string; id: string | undefined },
  plans: OutputPlan[],
  results: Map<string, HostTensor>,
) {
  const mine = await bytesOf(encodeInferResponse(head, plans, results));
  const reference = await bytesOf(referenceEncode(head, plans, results));
  expect(mine.headers).toEqual(reference.headers);
  expect(mine.status).toBe(reference.status);
  expect(Buffer.from(mine.body).toString("latin1")).toBe(Buffer.from(reference.body).toString("latin1"));
}

describe("infer response encoder: byte-equal to the reference encoder", () => {
  for (const dtype of CLIENT_DTYPES) {
    test(`${dtype}: JSON data and binary data`, async () => {
      const results = new Map([["out", tensor(dtype)]]);
      for (const binary of [false, true]) {
        await expectSame({ modelName: "m", modelVersion: "1", id: undefined }, [{ name: "out", binary }], results);
      }
    });
  }

  test("every dtype in one answer, mixed JSON and binary outputs, an id, in the order asked", async () => {
    const results = new Map(CLIENT_DTYPES.map((d) => [`t_${d}`, tensor(d)]));
    const plans = CLIENT_DTYPES.map((d, i) => ({ name: `t_${d}`, binary: i % 3 === 1 }));
    await expectSame({ modelName: "all", modelVersion: "7", id: "req-1" }, plans, results);
    await expectSame({ modelName: "all", modelVersion: "7", id: undefined }, [...plans].reverse(), results);
  });

  test("names, versions and ids that need escaping; empty and scalar tensors", async () => {
    const odd = 'out "quoted" \\ é \u2028 \n';
    const results = new Map<string, HostTensor>([
      [odd, { dtype: "f32", shape: [0], data: new Float32Array(0) }],
      ["scalar", { dtype: "i32", shape: [], data: Int32Array.from([42]) }],
    ]);
    const plans = [
      { name: odd, binary: false },
      { name: "scalar", binary: false },
    ];
    await expectSame({ modelName: 'mo"del\u00e9', modelVersion: "v\\1", id: '</script>"\u0000' }, plans, results);
  });

  test("one output name with another dtype or model version later (the name texts are per dtype and version)", async () => {
    for (const [dtype, version] of [
      ["f32", "1"],
      ["i64", "1"],
      ["f32", "2"],
      ["bool", "2"],
    ] as const) {
      await expectSame(
        { modelName: "swap", modelVersion: version, id: undefined },
        [{ name: "y", binary: false }],
        new Map([["y", tensor(dtype)]]),
      );
    }
  });

  test("more names than the name-text tables keep: answers stay the same after they are cleared", async () => {
    for (let i = 0; i < 2100; i += 7) {
      const name = `model_${i}`;
      const results = new Map([[`o${i}`, tensor("f32", Float32Array.from([i, i / 7]))]]);
      await expectSame(
        { modelName: name, modelVersion: String(i % 3), id: String(i) },
        [{ name: `o${i}`, binary: false }],
        results,
      );
    }
  });

  test("a missing output is the same INTERNAL error", () => {
    const head = { modelName: "m", modelVersion: "1", id: undefined };
    const plans = [{ name: "absent", binary: false }];
    expect(() => encodeInferResponse(head, plans, new Map())).toThrow('the model returned no output "absent"');
    expect(() => referenceEncode(head, plans, new Map())).toThrow('the model returned no output "absent"');
  });
});
