import { describe, expect, test } from "bun:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type InferParameter,
  InferParameterSchema,
  ModelInferRequestSchema,
  ModelInferResponseSchema,
  ModelStreamInferResponseSchema,
} from "../src/grpc/gen/grpc_service_pb.ts";
import { decodeInferRequestFast } from "../src/grpc/wire/decode-request.ts";
import { type WireOutput, encodeInferResponse } from "../src/grpc/wire/encode-response.ts";

/** A small deterministic generator (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMES = ["", "x", "features", "logits", "a_long_output_name_of_some_length", "ünïcødé", "名前", "bad\uD800"];

function pick<T>(rnd: () => number, list: readonly T[]): T {
  return list[Math.floor(rnd() * list.length)] as T;
}

function dims(rnd: () => number): number[] {
  const scales = [1, 200, 70_000, 3_000_000_000, 2 ** 52];
  return Array.from({ length: Math.floor(rnd() * 4) }, () => Math.floor(rnd() * pick(rnd, scales)));
}

function bytes(rnd: () => number): Uint8Array {
  const n = pick(rnd, [0, 1, 4, 127, 128, 300, 20_000]);
  return Uint8Array.from({ length: n }, () => Math.floor(rnd() * 256));
}

describe("the ModelInferResponse wire encoder", () => {
  test("writes the bytes protobuf-es writes, for 500 random answers", () => {
    const rnd = random(7);
    for (let i = 0; i < 500; i++) {
      const outputs: WireOutput[] = Array.from({ length: Math.floor(rnd() * 4) }, () => ({
        name: pick(rnd, NAMES),
        datatype: pick(rnd, ["FP32", "INT64", "BOOL", ""]),
        shape: dims(rnd),
        parameters: Array.from({ length: Math.floor(rnd() * 3) }, (_, k) =>
          rnd() < 0.5
            ? { key: `k${k}${pick(rnd, NAMES)}`, string: pick(rnd, NAMES) }
            : { key: `k${k}`, int64: Math.floor(rnd() * pick(rnd, [1, 300, 2 ** 40])) },
        ),
        bytes: bytes(rnd),
      }));
      const head = { modelName: pick(rnd, NAMES), modelVersion: pick(rnd, ["", "1", "12"]), id: pick(rnd, NAMES) };
      const message = create(ModelInferResponseSchema, {
        ...head,
        outputs: outputs.map((o) => ({
          name: o.name,
          datatype: o.datatype,
          shape: o.shape.map((d) => BigInt(d)),
          parameters: Object.fromEntries(
            o.parameters.map((p): [string, InferParameter] => [
              p.key,
              create(InferParameterSchema, {
                parameterChoice:
                  p.string !== undefined
                    ? { case: "stringParam", value: p.string }
                    : { case: "int64Param", value: BigInt(p.int64) },
              }),
            ]),
          ),
        })),
        rawOutputContents: outputs.map((o) => o.bytes),
      });
      const ours = encodeInferResponse(head, outputs);
      expect(Buffer.from(ours).equals(Buffer.from(toBinary(ModelInferResponseSchema, message)))).toBe(true);
      const wrapped = encodeInferResponse(head, outputs, 2);
      const stream = toBinary(
        ModelStreamInferResponseSchema,
        create(ModelStreamInferResponseSchema, { inferResponse: message }),
      );
      expect(Buffer.from(wrapped).equals(Buffer.from(stream))).toBe(true);
    }
  });
});

describe("the ModelInferRequest wire decoder", () => {
  test("reads what protobuf-es reads from 500 random common requests, raw contents as views", () => {
    const rnd = random(11);
    const ascii = NAMES.filter((n) => /^[\x00-\x7f]*$/.test(n));
    for (let i = 0; i < 500; i++) {
      const message = create(ModelInferRequestSchema, {
        modelName: pick(rnd, ascii),
        modelVersion: pick(rnd, ["", "1"]),
        id: pick(rnd, ascii),
        inputs: Array.from({ length: Math.floor(rnd() * 3) }, () => ({
          name: pick(rnd, ascii),
          datatype: pick(rnd, ["FP32", "INT64", ""]),
          shape: dims(rnd)
            .filter((d) => d < 2 ** 49)
            .map((d) => BigInt(d)),
        })),
        outputs: Array.from({ length: Math.floor(rnd() * 3) }, () => ({ name: pick(rnd, ascii) })),
        rawInputContents: Array.from({ length: Math.floor(rnd() * 3) }, () => bytes(rnd)),
      });
      const wire = toBinary(ModelInferRequestSchema, message);
      const ours = decodeInferRequestFast(wire);
      expect(ours).not.toBeNull();
      expect(ours).toEqual(fromBinary(ModelInferRequestSchema, wire));
      for (const raw of ours?.rawInputContents ?? []) expect(raw.buffer).toBe(wire.buffer);
    }
  });

  test("accepts an unpacked shape as protobuf-es does", () => {
    // inputs[0] { name "x", shape 2 (unpacked), shape 3 (unpacked) }
    const wire = Uint8Array.from([0x2a, 0x07, 0x0a, 0x01, 0x78, 0x18, 0x02, 0x18, 0x03]);
    expect(decodeInferRequestFast(wire)?.inputs[0]?.shape).toEqual([2n, 3n]);
    expect(fromBinary(ModelInferRequestSchema, wire).inputs[0]?.shape).toEqual([2n, 3n]);
  });

  test("leaves to protobuf-es what it does not read: parameters, contents, UTF-8, huge or negative dims, bad bytes", () => {
    const leftOver = [
      create(ModelInferRequestSchema, {
        modelName: "m",
        parameters: { priority: create(InferParameterSchema, { parameterChoice: { case: "int64Param", value: 1n } }) },
      }),
      create(ModelInferRequestSchema, { inputs: [{ name: "x", contents: { fp32Contents: [1] } }] }),
      create(ModelInferRequestSchema, { modelName: "ünï" }),
      create(ModelInferRequestSchema, { inputs: [{ name: "x", shape: [-1n] }] }),
      create(ModelInferRequestSchema, { inputs: [{ name: "x", shape: [2n ** 50n] }] }),
      create(ModelInferRequestSchema, { outputs: [{ name: "y", parameters: { a: create(InferParameterSchema) } }] }),
    ];
    for (const m of leftOver) expect(decodeInferRequestFast(toBinary(ModelInferRequestSchema, m))).toBeNull();
    const good = toBinary(ModelInferRequestSchema, create(ModelInferRequestSchema, { modelName: "mlp", id: "abc" }));
    for (let cut = 1; cut < good.length; cut++) {
      const r = decodeInferRequestFast(good.subarray(0, cut));
      if (r !== null) expect(r).toEqual(fromBinary(ModelInferRequestSchema, good.subarray(0, cut)));
    }
    expect(decodeInferRequestFast(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toBeNull();
    expect(decodeInferRequestFast(Uint8Array.from([0x0a, 0x05, 0x61]))).toBeNull();
    expect(decodeInferRequestFast(Uint8Array.from([0x08, 0x01]))).toBeNull();
  });
});
