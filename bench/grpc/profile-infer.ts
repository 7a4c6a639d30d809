/**
 * ModelInfer on the MLP under load, for a CPU profile of the serving process only (the load runs
 * in a process of its own):
 *   bun --cpu-prof-md --cpu-prof-dir DIR bench/grpc/profile-infer.ts [seconds]
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { startWorker } from "../../apps/worker/src/index.ts";
import { ModelInferRequestSchema } from "../../packages/server/src/grpc/gen/grpc_service_pb.ts";
import { load } from "./load.ts";

const seconds = Number(process.argv[2] ?? 8);
const root = mkdtempSync(join(tmpdir(), "xlaserve-grpc-profile-"));
cpSync(resolve(import.meta.dir, "../../examples/models/mlp"), join(root, "models", "mlp"), {
  recursive: true,
  filter: (src) => !src.includes("/.cache") && !src.endsWith("reference.safetensors"),
});
const worker = await startWorker({
  env: {},
  repository: join(root, "models"),
  port: 0,
  config: { cache: { stateDir: join(root, "state") }, repository: { dynamic: false }, log: { level: "warn" } },
});
try {
  const features = new Float32Array(64).map((_, i) => Math.sin(i));
  const body = toBinary(
    ModelInferRequestSchema,
    create(ModelInferRequestSchema, {
      modelName: "mlp",
      inputs: [{ name: "features", datatype: "FP32", shape: [1n, 64n] }],
      rawInputContents: [new Uint8Array(features.buffer)],
    }),
  );
  const target = worker.grpcAddress as string;
  const spec = { kind: "grpc" as const, target, body: Buffer.from(body).toString("base64"), concurrency: 16, seconds };
  // A short load first: the model's programs are timed for inline runs after its first requests.
  await load({ ...spec, seconds: 2 });
  const meta = (await (await fetch(`${worker.url}/v2/models/mlp`)).json()) as { xlaserve?: { inline?: unknown } };
  console.log(JSON.stringify({ inline: meta.xlaserve?.inline ?? null }));
  console.log(JSON.stringify(await load(spec)));
} finally {
  await worker.stop();
  rmSync(root, { recursive: true, force: true });
}
