/**
 * ModelInfer on the real worker: every example model, batches 1 and 3, raw and typed contents,
 * each answer byte-equal to REST's for the same inputs.
 */
import { describe, expect, test } from "bun:test";
import { inferRequest, restBytes } from "./grpc-support.ts";
import { MODELS, inputs, useGrpcWorker } from "./grpc-worker.ts";

const w = useGrpcWorker();

describe("ModelInfer: every example model, typed and raw contents, byte-equal to REST", () => {
  for (const [model, spec] of Object.entries(MODELS)) {
    test(model, async () => {
      for (const batch of [1, 3]) {
        const x = inputs(model, batch, 11 + batch);
        const rest = await restBytes(w.worker.url, model, x);
        const raw = await w.client.call("modelInfer", { ...inferRequest(model, x, false), id: `raw-${batch}` });
        const typed = await w.client.call("modelInfer", inferRequest(model, x, true));
        expect(raw.id).toBe(`raw-${batch}`);
        expect(raw.outputs.map((o) => o.name)).toEqual(spec.outputs);
        for (let i = 0; i < spec.outputs.length; i++) {
          const name = spec.outputs[i] as string;
          const expected = rest.get(name) as Uint8Array;
          expect(expected.byteLength).toBeGreaterThan(0);
          expect(raw.outputs[i]?.shape.map(Number)[0]).toBe(batch);
          expect(Buffer.from(raw.rawOutputContents[i] as Uint8Array).equals(Buffer.from(expected))).toBe(true);
          expect(Buffer.from(typed.rawOutputContents[i] as Uint8Array).equals(Buffer.from(expected))).toBe(true);
        }
      }
    }, 60_000);
  }
});
