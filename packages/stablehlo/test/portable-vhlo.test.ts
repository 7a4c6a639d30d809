import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { isModuleError } from "../src/errors.ts";
import { parseModule } from "../src/parser/parser.ts";
import { isBytecode, portableInfo, readPortableArtifact } from "../src/portable.ts";
import { printModule } from "../src/printer.ts";
import { structure } from "./helpers/structure.ts";

const DIR = join(import.meta.dir, "../../../../shared/vhlo");
const have = existsSync(DIR);
const artifacts = have
  ? readdirSync(DIR)
      .filter((f) => /^stablehlo_legalize_to_vhlo\.\d+_\d+_\d+\.mlir\.bc$/.test(f))
      .sort()
  : [];

function bytes(file: string): Uint8Array {
  return new Uint8Array(readFileSync(join(DIR, file)));
}

describe.skipIf(!have)("StableHLO portable artifacts 0.9.0 to 1.20.0", () => {
  test("the shared data holds one artifact per release, bytecode formats 0, 1, 3, 4 and 6", () => {
    expect(artifacts.length).toBeGreaterThanOrEqual(32);
    const formats = new Set(artifacts.map((f) => portableInfo(bytes(f), f).bytecodeVersion));
    expect([...formats].sort()).toEqual([0, 1, 3, 4, 6]);
  });

  for (const file of artifacts) {
    test(`${file} decodes to the program its .mlir source parses to`, () => {
      const version = /(\d+)_(\d+)_(\d+)/.exec(file)?.slice(1).join(".") ?? null;
      expect(portableInfo(bytes(file), file).stablehloVersion).toBe(version);
      const fromBytecode = structure(readPortableArtifact(bytes(file), file)) as { funcs: { name: string }[] };
      const source = file.replace(/\.bc$/, "");
      const fromText = structure(parseModule(readFileSync(join(DIR, source), "utf8"), source, { lenient: true })) as {
        funcs: { name: string }[];
      };
      expect(fromBytecode.funcs.length).toBeGreaterThan(150);
      expect(fromBytecode.funcs.map((f) => f.name)).toEqual(fromText.funcs.map((f) => f.name));
      for (let i = 0; i < fromText.funcs.length; i++) expect(fromBytecode.funcs[i]).toEqual(fromText.funcs[i]);
      // The printed form reads back to the same program.
      const printed = printModule(readPortableArtifact(bytes(file), file));
      expect(structure(parseModule(printed, "printed.mlir", { lenient: true }))).toEqual(fromBytecode);
    });
  }

  test("an artifact from a newer StableHLO is refused, naming its producer", () => {
    const future = bytes("invalid_vhlo_future.mlir.bc");
    expect(isBytecode(future)).toBe(true);
    let error: unknown;
    try {
      readPortableArtifact(future, "future.mlir.bc");
    } catch (e) {
      error = e;
    }
    expect(isModuleError(error, "MODULE_INVALID")).toBe(true);
    expect((error as Error).message).toContain("StableHLO 2.0.0, newer than 1.20.0");
  });

  test("an unknown VHLO op is refused with its name and offset even under a known producer", () => {
    const patched = bytes("invalid_vhlo_future.mlir.bc").slice();
    const at = Buffer.from(patched).indexOf("2.0.0");
    patched.set(new TextEncoder().encode("1.0.0"), at);
    expect(() => readPortableArtifact(patched, "patched.mlir.bc")).toThrow(
      /vhlo\.constant_v99 at offset \d+: expected a VHLO operation this reader knows/,
    );
  });

  test("the engine's reading reports types it does not run as UNSUPPORTED, like the text parser", () => {
    const file = artifacts[artifacts.length - 1] as string;
    let error: unknown;
    try {
      readPortableArtifact(bytes(file), file, { strict: true });
    } catch (e) {
      error = e;
    }
    expect(isModuleError(error, "UNSUPPORTED")).toBe(true);
  });
});
