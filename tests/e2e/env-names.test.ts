/**
 * The auth token by the name the 403 message gives: XLASERVE_AUTH_TOKEN turns load/unload on; a
 * misspelt XLASERVE_* variable is warned about at start, with the name it most likely meant.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { type StartedWorker, startWorker } from "../../apps/worker/src/index.ts";
import { type TempRepo, collectLogs, makeRepo } from "./helpers.ts";

const repo: TempRepo = makeRepo(["mlp"]);
let worker: StartedWorker | undefined;
afterAll(async () => {
  await worker?.stop();
  repo.cleanup();
});

describe("environment names", () => {
  test("XLASERVE_AUTH_TOKEN enables load/unload; a misspelt variable draws a did-you-mean warning", async () => {
    const logs = collectLogs();
    worker = await startWorker({
      env: { XLASERVE_AUTH_TOKEN: "tok", XLASERVE_MODEL_REPOSITROY: "/elsewhere" },
      repository: repo.repository,
      port: 0,
      logger: logs.logger,
      config: { engine: "reactant", cache: { stateDir: repo.stateDir }, repository: { dynamic: false } },
    });
    const warned = logs.lines.filter((l) => String(l.msg).includes("XLASERVE_MODEL_REPOSITROY"));
    expect(warned.length).toBe(1);
    expect(warned[0]?.level).toBe("warn");
    expect(String(warned[0]?.msg)).toContain("did you mean XLASERVE_MODEL_REPOSITORY?");

    const unload = (token: string | null) =>
      fetch(`${worker?.url}/v2/repository/models/mlp/unload`, {
        method: "POST",
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
    expect((await unload(null)).status).toBe(401); // on, and guarded
    expect((await unload("tok")).status).toBe(200);
  });
});
