/**
 * The gRPC service of `npm start` itself (set-up, then the CLI serving examples/models): asked for
 * a free REST port, the worker takes a free gRPC port too and prints it; a grpc-js client checks
 * health, metadata, every example model's answer against REST, and a shared-memory round trip.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import type { HostTensor } from "@xlaserve/core";
import { InferenceClient } from "../../packages/server/src/grpc/client.ts";
import { ShmObject } from "../../packages/server/test/support/shm-object.ts";
import { bytesOf, exampleInput, inferRequest, restBytes } from "./grpc-support.ts";

const ROOT = resolve(import.meta.dir, "../..");
let child: ChildProcess;
let url = "";
let grpcAddress = "";
let output = "";

beforeAll(async () => {
  // Its own process group, so that stopping it stops npm's children too.
  child = spawn("npm", ["start", "--silent", "--", "--port", "0", "--log-level", "warn", "--engine", "reactant"], {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, XLASERVE_PORT: undefined, XLASERVE_GRPC_PORT: undefined },
  });
  await new Promise<void>((resolveStarted, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm start printed no gRPC address in 120 s:\n${output}`)),
      120_000,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const rest = /listening on (\S+)/.exec(output);
      const grpc = /gRPC \(inference\.GRPCInferenceService\) on (\S+)/.exec(output);
      if (rest && grpc) {
        url = rest[1] as string;
        grpcAddress = grpc[1] as string;
        clearTimeout(timer);
        resolveStarted();
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (c: Buffer) => {
      output += c.toString();
    });
    child.on("exit", (code) => reject(new Error(`npm start exited ${code}:\n${output}`)));
  });
}, 130_000);

afterAll(async () => {
  if (child?.pid && child.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    process.kill(-child.pid, "SIGTERM");
    await Promise.race([exited, Bun.sleep(10_000)]);
  }
});

test("npm start: grpc-js client on the printed gRPC port", async () => {
  const client = new InferenceClient(grpcAddress);
  try {
    expect((await client.call("serverLive", {})).live).toBe(true);
    expect((await client.call("serverReady", {})).ready).toBe(true);
    expect((await client.call("serverMetadata", {})).extensions).toContain("system_shared_memory");
    const index = await client.call("repositoryIndex", { ready: true });
    expect(index.models.map((m) => m.name).sort()).toEqual(["cnn", "mlp", "transformer"]);
    const examples: [string, string, HostTensor][] = [
      ["mlp", "features", exampleInput("f32", [2, 64], 21)],
      ["cnn", "image", exampleInput("f32", [1, 32, 32, 3], 22)],
      ["transformer", "tokens", exampleInput("i32", [2, 16], 23)],
    ];
    for (const [model, name, t] of examples) {
      const x = new Map([[name, t]]);
      const rest = await restBytes(url, model, x);
      for (const typed of [false, true]) {
        const answer = await client.call("modelInfer", inferRequest(model, x, typed));
        answer.outputs.forEach((o, i) => {
          const expected = rest.get(o.name) as Uint8Array;
          expect(Buffer.from(answer.rawOutputContents[i] as Uint8Array).equals(Buffer.from(expected))).toBe(true);
        });
      }
    }
    const obj = new ShmObject(4096);
    try {
      const features = exampleInput("f32", [1, 64], 24);
      obj.bytes().set(bytesOf(features), 0);
      await client.call("systemSharedMemoryRegister", { name: "npm", key: obj.key, offset: 0n, byteSize: 4096n });
      const ref = (byteSize: number, offset: number) => ({
        shared_memory_region: { parameterChoice: { case: "stringParam" as const, value: "npm" } },
        shared_memory_byte_size: { parameterChoice: { case: "int64Param" as const, value: BigInt(byteSize) } },
        shared_memory_offset: { parameterChoice: { case: "int64Param" as const, value: BigInt(offset) } },
      });
      await client.call("modelInfer", {
        modelName: "mlp",
        inputs: [{ name: "features", datatype: "FP32", shape: [1n, 64n], parameters: ref(256, 0) }],
        outputs: [{ name: "logits", parameters: ref(40, 1024) }],
      });
      const rest = await restBytes(url, "mlp", new Map([["features", features]]));
      expect(Buffer.from(obj.bytes().slice(1024, 1064)).equals(Buffer.from(rest.get("logits") as Uint8Array))).toBe(
        true,
      );
      await client.call("systemSharedMemoryUnregister", { name: "npm" });
    } finally {
      obj.remove();
    }
  } finally {
    client.close();
  }
}, 60_000);
