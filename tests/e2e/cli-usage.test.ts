/**
 * The CLI with a person at the keyboard: --version, help for each command, "did you mean" for a
 * misspelt flag, one clear line (no stack trace) for every user error, the port checked before
 * any model loads, and `compile` doing what its usage says (a repository is needed; --no-cache
 * compiles every program again).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { type TempRepo, makeRepo } from "./helpers.ts";

const MAIN = resolve(import.meta.dir, "../../apps/worker/src/main.ts");
const repos: TempRepo[] = [];
afterAll(() => {
  for (const r of repos) r.cleanup();
});

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("XLASERVE_")) delete env[k];
  const p = Bun.spawn([process.execPath, MAIN, ...args], { stdout: "pipe", stderr: "pipe", env });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

const noStack = (text: string) => expect(text).not.toMatch(/^\s+at .*\(.*:\d+:\d+\)$/m);

function repo(models: string[] = ["mlp"]): TempRepo {
  const r = makeRepo(models);
  repos.push(r);
  return r;
}

describe("xlaserve CLI usage", () => {
  test("--version and version print the version", async () => {
    for (const args of [["--version"], ["version"], ["-v"]]) {
      const r = await cli(args);
      expect(r.code).toBe(0);
      expect(r.out.trim()).toMatch(/^xlaserve \d+\.\d+\.\d+$/);
    }
  });

  test("each command has its own --help", async () => {
    for (const [command, words] of [
      ["serve", ["Usage: xlaserve serve", "--port", "--repository"]],
      ["compile", ["Usage: xlaserve compile <repository>", "--no-cache"]],
      ["cache", ["Usage: xlaserve cache ls", "prune --max-bytes"]],
    ] as const) {
      const r = await cli([command, "--help"]);
      expect(r.code).toBe(0);
      for (const w of words) expect(r.out).toContain(w);
      expect(r.out).not.toContain("Usage:\n  xlaserve serve [options]"); // not the whole overview
    }
  });

  test("a misspelt flag or command gets a did-you-mean, exit 2, no stack trace", async () => {
    const flag = await cli(["serve", "--prot", "9000"]);
    expect(flag.code).toBe(2);
    expect(flag.err).toContain("unknown option --prot; did you mean --port?");
    noStack(flag.err);
    const command = await cli(["sevre"]);
    expect(command.code).toBe(2);
    expect(command.err).toContain('unknown command "sevre"; did you mean serve?');
  });

  test("--http-threads and XLASERVE_HTTP_THREADS were removed: each says to use node --workers", async () => {
    const flag = await cli(["serve", "--http-threads", "2"]);
    expect(flag.code).toBe(2);
    expect(flag.err).toContain("--http-threads was removed");
    expect(flag.err).toContain("xlaserve node --workers N");
    noStack(flag.err);
    const env = { ...process.env, XLASERVE_HTTP_THREADS: "2", XLASERVE_PORT: "0" };
    const p = Bun.spawn([process.execPath, MAIN, "serve"], { stdout: "pipe", stderr: "pipe", env });
    const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    expect(code).not.toBe(0);
    expect(err).toContain("server.httpThreads (env XLASERVE_HTTP_THREADS)");
    expect(err).toContain("xlaserve node --workers N");
    noStack(err);
  });

  test("bad values and missing folders are one clear line each, no stack trace", async () => {
    const r = repo();
    for (const [args, words] of [
      [
        ["serve", "--memory-limit", "2X", "--repository", r.repository],
        ["--memory-limit", "2X"],
      ],
      [
        ["serve", "--residency", "mlp", "--repository", r.repository],
        ["--residency", "MODEL=pinned|device|host"],
      ],
      [
        ["serve", "--port", "eighty", "--repository", r.repository],
        ['--port "eighty"', "expected a number"],
      ],
      [["serve", "--port", "0", "--repository", "/nonexistent/models"], ["/nonexistent/models"]],
      [["compile", "/nonexistent/models"], ["/nonexistent/models"]],
    ] as const) {
      const res = await cli([...args, "--state-dir", r.stateDir]);
      expect(res.code).not.toBe(0);
      for (const w of words) expect(res.err).toContain(w);
      noStack(res.err);
    }
  }, 60_000);

  test("a busy port (REST or gRPC) is reported before any model loads", async () => {
    const r = repo();
    const busy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") });
    try {
      const res = await cli([
        "serve",
        "--port",
        String(busy.port),
        "--repository",
        r.repository,
        "--state-dir",
        r.stateDir,
      ]);
      expect(res.code).toBe(1);
      expect(res.err).toContain(`cannot listen on 127.0.0.1:${busy.port}`);
      expect(res.err).not.toContain("model loaded");
      noStack(res.err);
      // The gRPC port too: checked at start, named as the gRPC port.
      const grpc = await cli([
        "serve",
        "--port",
        "0",
        "--grpc-port",
        String(busy.port),
        "--repository",
        r.repository,
        "--state-dir",
        r.stateDir,
      ]);
      expect(grpc.code).toBe(1);
      expect(grpc.err).toContain(`cannot listen on 127.0.0.1:${busy.port} (the gRPC port, server.grpcPort)`);
      expect(grpc.err).not.toContain("model loaded");
      noStack(grpc.err);
    } finally {
      busy.stop(true);
    }
  }, 60_000);

  test("compile needs a repository; --no-cache compiles every program again", async () => {
    const bare = await cli(["compile"]);
    expect(bare.code).toBe(2);
    expect(bare.err).toContain("compile needs a model repository");
    expect(bare.err).toContain("Usage: xlaserve compile <repository>");

    const r = repo();
    const args = ["compile", r.repository, "--engine", "reactant", "--state-dir", r.stateDir];
    const first = await cli(args);
    expect(first.code).toBe(0);
    expect(first.out).toContain("2 programs: 2 compiled, 0 already cached");
    expect((await cli(args)).out).toContain("2 programs: 0 compiled, 2 already cached");
    const again = await cli([...args, "--no-cache"]);
    expect(again.code).toBe(0);
    expect(again.out).toContain("2 programs: 2 compiled, 0 already cached");
  }, 120_000);
});
