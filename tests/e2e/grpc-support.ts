/**
 * Helpers for the gRPC end-to-end tests: the typed client, ModelInferRequest builders for the
 * example models' inputs, and REST's binary answer for the same inputs to compare against.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type HostTensor, kserveName } from "@xlaserve/core";
import type { ModelInferRequestSchema } from "../../packages/server/src/grpc/gen/grpc_service_pb.ts";
import { inferBinary } from "./helpers.ts";

export type InferInit = MessageInitShape<typeof ModelInferRequestSchema>;

/** A deterministic input for a spec-like description (FP32 in [-1, 1), INT32 tokens in [0, 8)). */
export function exampleInput(dtype: "f32" | "i32", shape: number[], seed: number): HostTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  let s = seed >>> 0 || 1;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  const data =
    dtype === "f32"
      ? Float32Array.from({ length: n }, () => next() * 2 - 1)
      : Int32Array.from({ length: n }, () => Math.floor(next() * 8));
  return { dtype, shape, data };
}

export function bytesOf(t: HostTensor): Uint8Array {
  return new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
}

/** The same inputs as raw_input_contents, or as typed contents. */
export function inferRequest(model: string, inputs: Map<string, HostTensor>, typed: boolean): InferInit {
  const list = [...inputs];
  return {
    modelName: model,
    inputs: list.map(([name, t]) => ({
      name,
      datatype: kserveName(t.dtype),
      shape: t.shape.map(BigInt),
      ...(typed
        ? {
            contents:
              t.dtype === "f32"
                ? { fp32Contents: Array.from(t.data as Float32Array) }
                : { intContents: Array.from(t.data as Int32Array) },
          }
        : {}),
    })),
    rawInputContents: typed ? [] : list.map(([, t]) => bytesOf(t)),
  };
}

/** REST's answer as binary outputs: name -> bytes. */
export async function restBytes(
  url: string,
  model: string,
  inputs: Map<string, HostTensor>,
): Promise<Map<string, Uint8Array>> {
  const r = await inferBinary(url, model, inputs);
  if (r.status !== 200) throw new Error(`REST answered ${r.status}: ${r.error}`);
  const out = new Map<string, Uint8Array>();
  for (const [name, o] of r.outputs)
    out.set(name, new Uint8Array(o.data.buffer, o.data.byteOffset, o.data.byteLength).slice());
  return out;
}

/** The error a call ended with (it must fail). */
export { refused } from "../../packages/server/test/support/grpc-harness.ts";
