/**
 * The CLI as an operator runs it: `xlaserve --help`, `serve` (load lines, a curl example that
 * works) and SIGTERM (stops accepting, drains in-flight requests, exits 0).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { type TempRepo, inferJson, makeRepo, readReference } from "./helpers.ts";

const MAIN = resolve(import.meta.dir, "../../apps/worker/src/main.ts");
const repos: TempRepo[] = [];
afterAll(() => {
  for (const r of repos) r.cleanup();
});

describe("xlaserve CLI", () => {
  test("--help documents every command and flag", async () => {
    const p = Bun.spawn([process.execPath, MAIN, "--help"], { stdout: "pipe", stderr: "pipe" });
    const text = await new Response(p.stdout).text();
    expect(await p.exited).toBe(0);
    for (const word of [
      "serve",
      "compile <repository>",
      "cache ls",
      "cache verify",
      "cache prune",
      "--max-bytes",
      "--port",
      "--repository",
      "XLASERVE_PORT",
      "XLASERVE_MODEL_REPOSITORY",
      "--memory-limit",
      "--residency",
    ]) {
      expect(text).toContain(word);
    }
  });

  test("serve prints load lines and a working curl example; SIGTERM drains and exits 0", async () => {
    const repo = makeRepo(["mlp"]);
    repos.push(repo);
    const p = Bun.spawn(
      [
        process.execPath,
        MAIN,
        "serve",
        "--port",
        "0",
        "--repository",
        repo.repository,
        "--state-dir",
        repo.stateDir,
        "--engine",
        "reactant",
        "--log-level",
        "warn",
      ],
      { stdout: "pipe", stderr: "pipe", env: { ...process.env, XLASERVE_PORT: undefined } },
    );
    const reader = p.stdout.getReader();
    let out = "";
    const deadline = Date.now() + 240_000;
    while (!out.includes("curl -s -X POST") && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
    expect(out).toContain("loaded mlp: cache 0/2 hit");
    const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
    expect(url).toBeDefined();
    // The printed curl example works as printed.
    const curl = /(curl -s -X POST .*)/.exec(out)?.[1] ?? "";
    const c = Bun.spawn(["sh", "-c", curl], { stdout: "pipe" });
    const answer = JSON.parse(await new Response(c.stdout).text()) as { outputs: unknown[] };
    expect(answer.outputs.length).toBe(2);
    // In-flight requests finish across SIGTERM.
    const inputs = readReference("mlp").get(8)?.inputs ?? new Map();
    const inflight = Array.from({ length: 8 }, () =>
      inferJson(url as string, "mlp", inputs).catch((e) => ({ status: String(e) })),
    );
    await Bun.sleep(5);
    p.kill("SIGTERM");
    const statuses = (await Promise.all(inflight)).map((r) => r.status);
    expect(await p.exited).toBe(0);
    // Each request either finished (200) or was refused as the worker drained (503), never dropped mid-run.
    for (const s of statuses) expect([200, 503]).toContain(s as number);
    expect(statuses).toContain(200);
  }, 300_000);
});
