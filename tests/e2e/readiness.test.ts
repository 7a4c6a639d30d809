/**
 * Readiness as a load balancer needs it: the worker is ready only when every model that should
 * serve does (strict, the default), or with `server.readiness: lenient` when at least one does;
 * never when nothing serves. The reason is in the body. A model that failed to load answers 503
 * with its load error, not 404. gRPC's ServerReady gives the same answer as REST in every case.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { type ServiceError, status } from "@grpc/grpc-js";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { InferenceClient } from "../../packages/server/src/grpc/client.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { type TempRepo, collectLogs, copyBundle, makeRepo } from "./helpers.ts";

const repos: TempRepo[] = [];
const workers: StartedWorker[] = [];
afterAll(async () => {
  for (const w of workers) await w.stop();
  for (const r of repos) r.cleanup();
});

/** mlp, plus "broken": a copy of mlp whose manifest names an input the module does not have. */
function repoWithBrokenBundle(): TempRepo {
  const repo = makeRepo(["mlp"]);
  const dir = join(repo.repository, "broken");
  copyBundle("mlp", dir);
  writeFileSync(join(dir, "manifest.yaml"), "format_version: '2.0'\nname: broken\n");
  repos.push(repo);
  return repo;
}

async function start(repo: TempRepo, readiness?: "strict" | "lenient"): Promise<StartedWorker> {
  const { logger } = collectLogs();
  const worker = await startCpuWorker(repo, logger, {
    repository: { dynamic: false },
    ...(readiness ? { server: { readiness } } : {}),
  });
  workers.push(worker);
  return worker;
}

/** gRPC ServerReady of the worker (same rule and setting as REST's /v2/health/ready). */
async function grpcReady(worker: StartedWorker): Promise<boolean> {
  const client = new InferenceClient(worker.grpcAddress as string);
  try {
    return (await client.call("serverReady", {})).ready;
  } finally {
    client.close();
  }
}

async function get(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(url);
  return { status: r.status, body: JSON.parse(await r.text()) };
}

describe("readiness", () => {
  test("strict (default): a model that failed to load keeps the worker not ready, naming it and why", async () => {
    const worker = await start(repoWithBrokenBundle());
    const r = await get(`${worker.url}/v2/health/ready`);
    expect(r.status).toBe(503);
    expect(r.body.ready).toBe(false);
    expect(String(r.body.error)).toContain("broken");
    expect(String(r.body.error)).toContain("executable_inputs");
    expect(r.body.not_ready).toEqual([expect.objectContaining({ name: "broken", state: "UNAVAILABLE" })]);
    expect(await grpcReady(worker)).toBe(false);
    // The model that loaded still serves.
    expect((await fetch(`${worker.url}/v2/models/mlp/ready`)).status).toBe(200);
  });

  test("a model that failed to load answers 503 with its load error, on infer and metadata", async () => {
    const worker = workers[0] as StartedWorker;
    const infer = await fetch(`${worker.url}/v2/models/broken/infer`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"inputs":[]}',
    });
    expect(infer.status).toBe(503);
    const error = String(((await infer.json()) as { error: string }).error);
    expect(error).toContain('model "broken"');
    expect(error).toContain("executable_inputs");
    const meta = await get(`${worker.url}/v2/models/broken`);
    expect(meta.status).toBe(503);
    expect(String(meta.body.error)).toContain("executable_inputs");
    // A name the repository does not hold stays 404.
    expect((await fetch(`${worker.url}/v2/models/nothing-here`)).status).toBe(404);
    // gRPC says the same: UNAVAILABLE with the load error, NOT_FOUND for an unknown name.
    const client = new InferenceClient(worker.grpcAddress as string);
    try {
      const failed = await client.call("modelMetadata", { name: "broken" }).catch((e: ServiceError) => e);
      expect((failed as ServiceError).code).toBe(status.UNAVAILABLE);
      expect((failed as ServiceError).details).toContain("executable_inputs");
      const unknown = await client.call("modelMetadata", { name: "nothing-here" }).catch((e: ServiceError) => e);
      expect((unknown as ServiceError).code).toBe(status.NOT_FOUND);
    } finally {
      client.close();
    }
  });

  test("lenient: ready while at least one model serves", async () => {
    const worker = await start(repoWithBrokenBundle(), "lenient");
    const r = await get(`${worker.url}/v2/health/ready`);
    expect(r.status).toBe(200);
    expect(r.body.ready).toBe(true);
    expect(await grpcReady(worker)).toBe(true);
  });

  for (const readiness of ["strict", "lenient"] as const) {
    test(`${readiness}: an empty repository is not ready, and says so`, async () => {
      const repo = makeRepo([]);
      mkdirSync(repo.repository, { recursive: true });
      repos.push(repo);
      const worker = await start(repo, readiness);
      const r = await get(`${worker.url}/v2/health/ready`);
      expect(r.status).toBe(503);
      expect(String(r.body.error)).toContain("no model");
      expect(await grpcReady(worker)).toBe(false);
    });
  }
});
