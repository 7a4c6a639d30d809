import { expect, test } from "bun:test";
import { join } from "node:path";

/** `xlaserve profile` as a user runs it: a real process on a zoo bundle. */
const ROOT = join(import.meta.dir, "..", "..", "..");
const MAIN = join(ROOT, "apps", "worker", "src", "main.ts");

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn([process.execPath, MAIN, ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

test("profile prints time per op kind and the slowest ops with their lines", async () => {
  const r = await cli([
    "profile",
    join(ROOT, "tests", "zoo", "models", "rnn_scan"),
    "--batch",
    "16",
    "--runs",
    "2",
    "--top",
    "5",
  ]);
  expect(r.err).toBe("");
  expect(r.code).toBe(0);
  expect(r.out).toContain("rnn_scan model.b16.mlir (batch 16, reference inputs) on the CPU engine");
  expect(r.out).toContain("by op kind");
  expect(r.out).toContain("stablehlo.while");
  expect(r.out).toMatch(/top 5 ops:\n(.*line \d+: %.*\n){5}/);
}, 60_000);

test("profile --json, and clear errors for a missing bundle, a batch it lacks and bad flags", async () => {
  const json = await cli(["profile", join(ROOT, "tests", "zoo", "models", "int8_mlp"), "--runs", "1", "--json"]);
  expect(json.code).toBe(0);
  const p = JSON.parse(json.out) as { batch: number; byKind: { kind: string }[] };
  expect(p.batch).toBe(1);
  expect(p.byKind.map((k) => k.kind)).toContain("stablehlo.dot_general");
  const missing = await cli(["profile", join(ROOT, "no-such-bundle")]);
  expect(missing.code).toBe(1);
  expect(missing.err).toContain("no-such-bundle");
  const batch = await cli(["profile", join(ROOT, "tests", "zoo", "models", "int8_mlp"), "--batch", "3"]);
  expect(batch.code).toBe(1);
  expect(batch.err).toContain("no program for batch 3 (compiled: 1, 32)");
  const flag = await cli(["profile", "x", "--runs", "0"]);
  expect(flag.code).toBe(2);
  expect(flag.err).toContain("--runs must be a positive integer");
}, 60_000);
