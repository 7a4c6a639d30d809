import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { truncateSync } from "node:fs";
import { status } from "@grpc/grpc-js";
import { type GrpcHarness, refused, startGrpcHarness } from "./support/grpc-harness.ts";
import { type Json, postJson } from "./support/harness.ts";
import { SHM_AVAILABLE, ShmObject } from "./support/shm-object.ts";

let h: GrpcHarness;
const objects: ShmObject[] = [];
beforeAll(async () => {
  h = await startGrpcHarness();
});
afterAll(async () => {
  await h.stop();
  for (const o of objects) o.remove();
});

function shm(bytes: number | Uint8Array): ShmObject {
  const o = new ShmObject(bytes);
  objects.push(o);
  return o;
}

const register = (name: string, body: unknown) =>
  postJson(`${h.url}/v2/systemsharedmemory/region/${name}/register`, body);

const sharedParams = (region: string, byteSize: number, offset = 0) => ({
  shared_memory_region: { parameterChoice: { case: "stringParam" as const, value: region } },
  shared_memory_byte_size: { parameterChoice: { case: "int64Param" as const, value: BigInt(byteSize) } },
  ...(offset
    ? { shared_memory_offset: { parameterChoice: { case: "int64Param" as const, value: BigInt(offset) } } }
    : {}),
});

describe.skipIf(!SHM_AVAILABLE)("system shared memory", () => {
  test("REST: register, status, infer from and into regions, unregister", async () => {
    const input = new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]);
    const obj = shm(4096);
    obj.bytes().set(new Uint8Array(input.buffer), 64);
    expect((await register("in", { key: obj.key, offset: 64, byte_size: 32 })).status).toBe(200);
    expect((await register("out", { key: obj.key, offset: 1024, byte_size: 256 })).status).toBe(200);
    const status = await (await fetch(`${h.url}/v2/systemsharedmemory/status`)).json();
    expect(status).toEqual([
      { name: "in", key: obj.key, offset: 64, byte_size: 32 },
      { name: "out", key: obj.key, offset: 1024, byte_size: 256 },
    ]);
    const r = await postJson(`${h.url}/v2/models/affine/infer`, {
      inputs: [
        {
          name: "x",
          shape: [2, 4],
          datatype: "FP32",
          parameters: { shared_memory_region: "in", shared_memory_byte_size: 32 },
        },
      ],
      outputs: [
        { name: "y", parameters: { shared_memory_region: "out", shared_memory_byte_size: 32 } },
        { name: "row_sum" },
      ],
    });
    expect(r.status).toBe(200);
    const body = r.body as Json;
    expect(body.outputs[0]).toEqual({
      name: "y",
      datatype: "FP32",
      shape: [2, 4],
      parameters: { shared_memory_region: "out", shared_memory_byte_size: 32 },
    });
    expect(body.outputs[1].data).toEqual([24, 56]);
    const out = new Float32Array(obj.bytes().slice(1024, 1024 + 32).buffer);
    expect([...out]).toEqual([3, 5, 7, 9, 11, 13, 15, 17]);
    expect((await postJson(`${h.url}/v2/systemsharedmemory/region/in/unregister`, "")).status).toBe(200);
    const gone = await fetch(`${h.url}/v2/systemsharedmemory/region/in/status`);
    expect(gone.status).toBe(404);
    expect(await gone.json()).toEqual({ error: 'no shared-memory region "in" is registered' });
    expect((await postJson(`${h.url}/v2/systemsharedmemory/unregister`, "")).status).toBe(200);
    expect(await (await fetch(`${h.url}/v2/systemsharedmemory/status`)).json()).toEqual([]);
  });

  test("gRPC: a region registered over gRPC serves REST too, and back; outputs get empty raw entries", async () => {
    const obj = shm(1024);
    obj.bytes().set(new Uint8Array(new Float32Array([1, 1, 1, 1]).buffer), 0);
    await h.client.call("systemSharedMemoryRegister", { name: "g", key: obj.key, offset: 0n, byteSize: 1024n });
    const st = await h.client.call("systemSharedMemoryStatus", { name: "g" });
    expect(st.regions.g).toMatchObject({ name: "g", key: obj.key, offset: 0n, byteSize: 1024n });
    const r = await h.client.call("modelInfer", {
      modelName: "affine",
      inputs: [{ name: "x", datatype: "FP32", shape: [1n, 4n], parameters: sharedParams("g", 16) }],
      outputs: [{ name: "y", parameters: sharedParams("g", 16, 512) }, { name: "row_sum" }],
    });
    expect(r.rawOutputContents.map((b) => b.byteLength)).toEqual([0, 8]);
    expect(r.outputs[0]?.parameters.shared_memory_region?.parameterChoice.value).toBe("g");
    expect(r.outputs[0]?.parameters.shared_memory_byte_size?.parameterChoice.value).toBe(16n);
    expect([...new Float32Array(obj.bytes().slice(512, 528).buffer)]).toEqual([3, 3, 3, 3]);
    const rest = await (await fetch(`${h.url}/v2/systemsharedmemory/region/g/status`)).json();
    expect(rest).toEqual([{ name: "g", key: obj.key, offset: 0, byte_size: 1024 }]);
    await h.client.call("systemSharedMemoryUnregister", { name: "g" });
    const e = await refused(h.client.call("systemSharedMemoryStatus", { name: "g" }));
    expect(e.code).toBe(status.NOT_FOUND);
  });

  test("every bound is checked; a bad region is a clear error and nothing is read outside it", async () => {
    const obj = shm(256);
    const bad = async (body: unknown, message: string) => {
      const r = await register("bad", body);
      expect([r.status, (r.body as Json).error]).toEqual([400, message]);
    };
    await bad(
      { key: obj.key, offset: 200, byte_size: 100 },
      `shared-memory region "bad": offset 200 + byte_size 100 is past the end of "${obj.key}" (256 bytes)`,
    );
    await bad(
      { key: "/xlaserve-no-such-object", byte_size: 16 },
      'shared-memory key "/xlaserve-no-such-object" does not open here (ENOENT): the object must exist in this host\'s IPC namespace',
    );
    await bad(
      { key: "/../etc/passwd", byte_size: 16 },
      'shared-memory key "/../etc/passwd" is not a POSIX shared-memory object name',
    );
    await bad({ key: obj.key, byte_size: 0 }, "request body at /byte_size: byte_size must be a positive integer");
    expect((await register("r", { key: obj.key, offset: 0, byte_size: 64 })).status).toBe(200);
    const again = await register("r", { key: obj.key, byte_size: 16 });
    expect((again.body as Json).error).toBe('shared-memory region "r" is already registered; unregister it first');

    const infer = async (input: Record<string, unknown>, output?: Record<string, unknown>) => {
      const r = await postJson(`${h.url}/v2/models/affine/infer`, {
        inputs: [{ name: "x", shape: [1, 4], datatype: "FP32", ...input }],
        ...(output ? { outputs: [{ name: "y", parameters: output }] } : {}),
      });
      return [r.status, (r.body as Json).error];
    };
    const inRegion = (extra: Record<string, unknown>) => ({ parameters: { shared_memory_region: "r", ...extra } });
    expect(await infer(inRegion({ shared_memory_byte_size: 16, shared_memory_offset: 56 }))).toEqual([
      400,
      'input "x": 16 bytes at offset 56 run past the end of shared-memory region "r" (64 bytes)',
    ]);
    expect(await infer(inRegion({ shared_memory_byte_size: 12 }))).toEqual([
      400,
      'input "x": shared_memory_byte_size is 12 bytes but shape [1, 4] of FP32 needs 16',
    ]);
    expect(await infer(inRegion({}))).toEqual([
      400,
      'input "x": parameters.shared_memory_region needs parameters.shared_memory_byte_size (the tensor\'s bytes in the region)',
    ]);
    expect(await infer({ parameters: { shared_memory_region: "nope", shared_memory_byte_size: 16 } })).toEqual([
      400,
      'input "x": shared-memory region "nope" is not registered',
    ]);
    expect(await infer({ data: [1, 2, 3, 4], ...inRegion({ shared_memory_byte_size: 16 }) })).toEqual([
      400,
      'input "x" has both its own data and parameters.shared_memory_region',
    ]);
    const data = { data: [1, 2, 3, 4] };
    expect(await infer(data, { shared_memory_region: "r", shared_memory_byte_size: 8 })).toEqual([
      400,
      'requested output "y": shared_memory_byte_size 8 is smaller than the output\'s 16 bytes',
    ]);
    expect(
      await infer(data, { shared_memory_region: "r", shared_memory_byte_size: 16, shared_memory_offset: 50 }),
    ).toEqual([
      400,
      'requested output "y": 16 bytes at offset 50 run past the end of shared-memory region "r" (64 bytes)',
    ]);
    // The client shrinks the object under a registered region: refused, never a read past its end.
    truncateSync(obj.path, 8);
    expect(await infer(inRegion({ shared_memory_byte_size: 16 }))).toEqual([
      400,
      `input "x": shared-memory object "${obj.key}" shrank to 8 bytes, smaller than region "r" (offset 0 + 64 bytes); register it again`,
    ]);
    expect(await infer(data)).toEqual([200, undefined]);
    await postJson(`${h.url}/v2/systemsharedmemory/unregister`, "");
  });

  test("IsSameIPCNamespace: true only for an object that opens here", async () => {
    const obj = shm(16);
    expect((await h.client.call("isSameIPCNamespace", { name: obj.key })).same).toBe(true);
    expect((await h.client.call("isSameIPCNamespace", { name: obj.key.slice(1) })).same).toBe(true);
    expect((await h.client.call("isSameIPCNamespace", { name: "/xlaserve-no-such-object" })).same).toBe(false);
    expect((await h.client.call("isSameIPCNamespace", { name: "" })).same).toBe(false);
    expect((await h.client.call("isSameIPCNamespace", { name: "/../etc/passwd" })).same).toBe(false);
  });

  test("CUDA shared memory: an empty status, and registering says to use system shared memory", async () => {
    expect((await h.client.call("cudaSharedMemoryStatus", {})).regions).toEqual({});
    const e = await refused(h.client.call("cudaSharedMemoryRegister", { name: "c", byteSize: 16n }));
    expect(e.code).toBe(status.UNIMPLEMENTED);
    expect(e.details).toBe(
      "CUDA shared memory is not supported by xlaserve; register a system shared-memory region instead",
    );
  });
});
