import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type HostTensor, isXlaserveError } from "@xlaserve/core";
import { createReactantBackend } from "../src/index.ts";
import { dtypeOf } from "../src/plan/dtype-map.ts";
import { loadExample } from "./helpers/bundles.ts";

/** The MLP's b1 module exported by jax.export as a portable artifact (StableHLO 1.18). */
const PORTABLE_MLP_B1 = new Uint8Array(
  readFileSync(join(import.meta.dir, "..", "..", "..", "tests", "fixtures", "mlp_portable_b1.mlirbc")),
);

async function run(bytes: Uint8Array, format: "text" | "bytecode"): Promise<Uint8Array[]> {
  const b = createReactantBackend();
  const c = loadExample("mlp", 1);
  const exe = await b.compile({ bytes, format, origin: `mlp.b1 (${format})` }, {});
  const args = await Promise.all(
    c.args.map((a) => b.upload({ dtype: dtypeOf(a.type), shape: a.shape, data: a.data as HostTensor["data"] })),
  );
  const outs = await b.execute(exe, args);
  const host = await Promise.all(outs.map((o) => b.download(o)));
  return host.map((h) => new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength).slice());
}

describe("the CPU engine runs portable artifacts", () => {
  test("the MLP's portable artifact gives the same bytes as its text twin", async () => {
    const c = loadExample("mlp", 1);
    const fromText = await run(new TextEncoder().encode(c.mlir), "text");
    const fromBytecode = await run(PORTABLE_MLP_B1, "bytecode");
    expect(fromBytecode.length).toBe(fromText.length);
    for (let i = 0; i < fromText.length; i++)
      expect(Buffer.from(fromBytecode[i] as Uint8Array).equals(Buffer.from(fromText[i] as Uint8Array))).toBe(true);
  });

  test("a truncated artifact is MODULE_INVALID naming where it ends and what was expected", async () => {
    const b = createReactantBackend();
    const truncated = PORTABLE_MLP_B1.subarray(0, 700);
    let error: unknown;
    try {
      await b.compile({ bytes: truncated, format: "bytecode", origin: "model.b1.mlir" }, {});
    } catch (e) {
      error = e;
    }
    expect(isXlaserveError(error, "MODULE_INVALID")).toBe(true);
    expect((error as Error).message).toMatch(/^model\.b1\.mlir: invalid MLIR bytecode at offset \d+: expected /);
    expect(typeof (error as { details: { offset: unknown } }).details.offset).toBe("number");
  });
});
