import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseModule, readPortableArtifact } from "@xlaserve/stablehlo";
import { mlirInfo, mlirPrint } from "../src/mlir/mlir-command.ts";

const ROOT = resolve(import.meta.dir, "../../..");
const PORTABLE = join(ROOT, "tests", "fixtures", "mlp_portable_b1.mlirbc");
const TEXT = join(ROOT, "examples", "models", "mlp", "model.b1.mlir");
const MAIN = join(ROOT, "apps", "worker", "src", "main.ts");

function cli(...args: string[]): { code: number; out: string; err: string } {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { cwd: ROOT });
  return { code: p.exitCode ?? -1, out: p.stdout.toString(), err: p.stderr.toString() };
}

describe("xlaserve mlir", () => {
  test("info names the format, producer, versions, functions and the @main signature", () => {
    const info = mlirInfo(PORTABLE);
    expect(info).toContain("format: portable artifact (MLIR bytecode, VHLO)");
    expect(info).toContain("producer: StableHLO_v1.18.0");
    expect(info).toContain("bytecode format version: 6");
    expect(info).toMatch(/@main public, \d+ ops/);
    expect(info).toContain("argument 0: tensor<1x64xf32>");
    expect(info).toContain("result 1: tensor<1x10xf32>");
    expect(mlirInfo(TEXT)).toContain("format: StableHLO text");
  });

  test("print writes StableHLO text that reads back to the artifact's program", () => {
    const printed = mlirPrint(PORTABLE);
    expect(printed).toContain('"stablehlo.dot_general"');
    const back = parseModule(printed, "printed.mlir");
    const original = readPortableArtifact(new Uint8Array(readFileSync(PORTABLE)), "x");
    expect(back.funcs.map((f) => [f.name, f.body.length])).toEqual(original.funcs.map((f) => [f.name, f.body.length]));
  });

  test("the CLI: exit 0 with the output, 1 naming the problem for an unreadable file, 2 for usage", () => {
    const ok = cli("mlir", "info", PORTABLE);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain("StableHLO version: 1.18.0");
    const dir = mkdtempSync(join(tmpdir(), "xlaserve-mlir-"));
    const broken = join(dir, "model.mlir");
    writeFileSync(broken, new Uint8Array([0x4d, 0x4c, 0xef, 0x52, 0x0d]));
    const bad = cli("mlir", "print", broken);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/invalid MLIR bytecode at offset \d+: expected /);
    rmSync(dir, { recursive: true });
    expect(cli("mlir", "show", PORTABLE).code).toBe(2);
    expect(cli("mlir", "info").code).toBe(2);
  });
});
