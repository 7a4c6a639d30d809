/**
 * Large inputs that lie in a registered shared-memory region reach the engine thread as where
 * they lie, not as bytes: the packed call is a few words, the engine thread maps the same object
 * and runs from it, the answer is the one the bytes give when copied, and an object that shrank
 * meanwhile fails that call with a clear error while the engine serves on.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync, truncateSync, writeFileSync } from "node:fs";
import type { Executable, HostTensor } from "@xlaserve/core";
import { SharedMemoryRegistry } from "@xlaserve/server";
import { ThreadedBackend } from "../src/engine-thread/threaded-backend.ts";
import { IN_FILE_MIN_BYTES, decodeRunCalls, encodeRunCalls } from "../src/engine-thread/run-wire.ts";

const N = IN_FILE_MIN_BYTES / 4; // f32 elements: just large enough to travel in place
const name = `xlaserve-mapped-inputs-${process.pid}`;
const path = `/dev/shm/${name}`;
const OFFSET = 4096;

let backend: ThreadedBackend;
let exe: Executable;
let registry: SharedMemoryRegistry;
beforeAll(async () => {
  backend = await ThreadedBackend.create({ module: "@xlaserve/backend-reactant", export: "createReactantBackend" });
  const source = `func.func @main(%x: tensor<${N}xf32>) -> tensor<f32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<${N}xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
`;
  exe = await backend.compile({ bytes: new TextEncoder().encode(source), format: "text" }, {});
  writeFileSync(path, new Uint8Array(OFFSET + 4 * N));
  registry = new SharedMemoryRegistry();
  registry.register("in", `/${name}`, 0, OFFSET + 4 * N);
});
afterAll(async () => {
  registry.unregister("");
  exe?.dispose();
  await backend?.dispose();
  rmSync(path, { force: true });
});

function regionInput(): HostTensor {
  const bytes = registry.view("x", "in", OFFSET, 4 * N);
  return { dtype: "f32", shape: [N], data: new Float32Array(bytes.buffer, bytes.byteOffset, N) };
}

test("a region's input packs as its place, and the engine thread reads the object itself", async () => {
  const x = regionInput();
  const values = x.data as Float32Array;
  for (let i = 0; i < N; i++) values[i] = (i % 7) - 3;
  const packed = encodeRunCalls([{ id: 1, handle: 0, inputs: [x], resident: [] }]).message as ArrayBuffer;
  expect(packed.byteLength).toBeLessThan(256);
  // Decoded on this thread with the engine thread's opener: a view of the object, not a copy.
  const { openMappedInput } = await import("../src/engine-thread/mapped-inputs.ts");
  const [call] = decodeRunCalls(packed, openMappedInput);
  const seen = call?.inputs[0]?.data as Float32Array;
  expect(Array.from(seen.subarray(0, 8))).toEqual(Array.from(values.subarray(0, 8)));
  values[0] = 100;
  expect(seen[0]).toBe(100);
  values[0] = -3;

  const [inPlace] = await backend.run(exe, [x], []);
  const [copied] = await backend.run(exe, [{ dtype: "f32", shape: [N], data: values.slice() }], []);
  expect(Array.from(inPlace?.data as Float32Array)).toEqual(Array.from(copied?.data as Float32Array));
  // 16384 = 7 * 2340 + 4: whole cycles of -3..3 sum to 0, the last four to -3 - 2 - 1 + 0.
  expect(Array.from(inPlace?.data as Float32Array)).toEqual([-6]);
});

test("an object that shrank after registration fails that run, and the engine serves on", async () => {
  const x = regionInput();
  truncateSync(path, OFFSET);
  try {
    await expect(backend.run(exe, [x], [])).rejects.toThrow(
      `the shared-memory object of an input shrank to ${OFFSET} bytes; the input needs bytes up to ${OFFSET + 4 * N}`,
    );
  } finally {
    truncateSync(path, OFFSET + 4 * N);
  }
  const [after] = await backend.run(exe, [{ dtype: "f32", shape: [N], data: new Float32Array(N).fill(1) }], []);
  expect(Array.from(after?.data as Float32Array)).toEqual([N]);
});
