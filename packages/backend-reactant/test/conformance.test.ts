import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { runPool } from "../src/conformance/pool.ts";
import { familyOf, runConformanceText } from "../src/conformance/run-file.ts";
import { rewriteForBackend, runFileOnBackend } from "../src/conformance/via-backend.ts";
import { createReactantBackend } from "../src/index.ts";
import { formatReport, totals } from "../src/conformance/summary.ts";

/**
 * The StableHLO conformance programs (../shared/conformance, or XLASERVE_CONFORMANCE_DIR).
 * Floors only ever rise: set them to what the engine reaches.
 */
const FLOORS = {
  testdata: { passed: 1511, maxUnsupported: 0 },
  interpret: { passed: 447 },
  portable: { passed: 1431 },
};

const ROOT =
  process.env.XLASERVE_CONFORMANCE_DIR ?? new URL("../../../../shared/conformance", import.meta.url).pathname;
const STABLEHLO = join(ROOT, "stablehlo");
const available = existsSync(join(STABLEHLO, "testdata"));

function files(dir: string, suffix = ".mlir"): { path: string; name: string }[] {
  const out: { path: string; name: string }[] = [];
  for (const entry of readdirSync(dir, { recursive: true }) as string[]) {
    if (entry.endsWith(suffix)) out.push({ path: join(dir, entry), name: entry });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

describe.skipIf(!available)("conformance", () => {
  test("testdata: pass floor, >= 97% of in-scope files, <= 10% out of scope", async () => {
    const list = files(join(STABLEHLO, "testdata"));
    const results = await runPool(list, { jobs: 2, timeoutMs: 60_000 });
    const t = totals(results);
    const inScope = t.passed + t.failed;
    console.log(
      `testdata: ${t.passed} passed, ${t.failed} failed, ${t.unsupported} unsupported of ${list.length} files`,
    );
    expect(results.length).toBe(list.length);
    expect(t.passed).toBeGreaterThanOrEqual(FLOORS.testdata.passed);
    expect(t.unsupported).toBeLessThanOrEqual(FLOORS.testdata.maxUnsupported);
    expect(t.passed / inScope).toBeGreaterThanOrEqual(0.97);
    expect(t.unsupported / list.length).toBeLessThanOrEqual(0.1);
  }, 300_000);

  test("without constant folding (every op a run-time step: fusion, liveness) the outcomes are the same", async () => {
    const list = [...files(join(STABLEHLO, "testdata")), ...files(join(STABLEHLO, "interpret"))];
    const folded = await runPool(list, { jobs: 2, timeoutMs: 60_000 });
    const runtime = await runPool(list, { jobs: 2, timeoutMs: 60_000, programOptions: { fold: false } });
    const key = (r: { file: string; func: string | null }) => `${r.file}@${r.func}`;
    const byCase = new Map(folded.map((r) => [key(r), r.status]));
    const differing = runtime
      .filter((r) => byCase.get(key(r)) !== r.status)
      .map((r) => `${key(r)}: ${r.status} ${r.detail ?? ""}`);
    expect(differing).toEqual([]);
  }, 300_000);

  test("through the AbstractBackend path (what --backend pjrt runs) the outcomes are the engine's", async () => {
    // Every 5th testdata file keeps this quick; complex results have no host dtype in core.
    const list = files(join(STABLEHLO, "testdata")).filter((_, i) => i % 5 === 0);
    const backend = createReactantBackend();
    const differing: string[] = [];
    for (const f of list) {
      const text = readFileSync(f.path, "utf8");
      const viaBackend = await runFileOnBackend(backend, text, f.name);
      const direct = runConformanceText(text, f.name)[0];
      const complexResults = rewriteForBackend(text)?.checks.some((c) => c.types.some((t) => t.includes("complex")));
      const expected = complexResults ? "unsupported" : direct?.status;
      if (viaBackend.status !== expected) differing.push(`${f.name}: ${viaBackend.status} ${viaBackend.detail ?? ""}`);
    }
    expect(differing).toEqual([]);
  }, 120_000);

  test.skipIf(!existsSync(join(STABLEHLO, "portable")))(
    "portable: each bytecode twin has its text file's outcome (passes exactly the files the text passes)",
    async () => {
      const portable = files(join(STABLEHLO, "portable"), ".mlir.bc");
      const twins = portable.map((f) => ({
        path: join(STABLEHLO, "testdata", f.name.replace(/\.bc$/, "")),
        name: f.name.replace(/\.bc$/, ""),
      }));
      expect(portable.length).toBeGreaterThan(1400);
      const [fromBytecode, fromText] = [
        await runPool(portable, { jobs: 2, timeoutMs: 60_000 }),
        await runPool(twins, { jobs: 2, timeoutMs: 60_000 }),
      ];
      const t = totals(fromBytecode);
      console.log(
        `portable: ${t.passed} passed, ${t.failed} failed, ${t.unsupported} unsupported of ${portable.length} files`,
      );
      const textStatus = new Map(fromText.map((r) => [r.file, r.status]));
      const differing = fromBytecode
        .filter((r) => textStatus.get(r.file.replace(/\.bc$/, "")) !== r.status)
        .map((r) => `${r.file}: ${r.status} (text: ${textStatus.get(r.file.replace(/\.bc$/, ""))}) ${r.detail ?? ""}`);
      expect(differing).toEqual([]);
      expect(t.passed).toBeGreaterThanOrEqual(FLOORS.portable.passed);
    },
    300_000,
  );

  test("interpret: pass floor, >= 90% of in-scope functions", async () => {
    const results = await runPool(files(join(STABLEHLO, "interpret")), { jobs: 2, timeoutMs: 60_000 });
    const t = totals(results);
    console.log(`interpret: ${t.passed} passed, ${t.failed} failed, ${t.unsupported} unsupported functions`);
    expect(t.passed).toBeGreaterThanOrEqual(FLOORS.interpret.passed);
    expect(t.passed / (t.passed + t.failed)).toBeGreaterThanOrEqual(0.9);
  }, 300_000);
});

describe("conformance report", () => {
  test("families, failures with their first mismatch, and the exact last line", () => {
    const report = formatReport([
      { file: "add_float32_2.mlir", func: null, family: "add", status: "passed" },
      {
        file: "add_int8_2.mlir",
        func: null,
        family: "add",
        status: "failed",
        detail: "element [1]: got 2, expected 3",
      },
      { file: "infeed.mlir", func: "infeed", family: "infeed", status: "unsupported", detail: "out of scope" },
    ]);
    const lines = report.split("\n");
    expect(lines).toContain("add: 1 passed, 1 failed, 0 unsupported");
    expect(lines).toContain("  add_int8_2.mlir: element [1]: got 2, expected 3");
    expect(lines[lines.length - 1]).toBe("conformance: 1 passed, 1 failed, 1 unsupported");
  });

  test("family names drop the type and shape suffix", () => {
    expect(familyOf("dot_general_float32_4_3_float32_3_6.mlir")).toBe("dot_general");
    expect(familyOf("shift_right_logical_uint8_20_30.mlir")).toBe("shift_right_logical");
    expect(familyOf("chlo/top_k.mlir")).toBe("top_k");
  });

  test("a hanging file times out without stopping the run", async () => {
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(join(tmpdir(), "xlaserve-conformance-"));
    writeFileSync(
      join(dir, "hang.mlir"),
      `func.func @main() {
  %c = stablehlo.constant dense<0> : tensor<i64>
  %r = stablehlo.while(%i = %c) : tensor<i64>
  cond {
    %t = stablehlo.constant dense<true> : tensor<i1>
    stablehlo.return %t : tensor<i1>
  } do {
    stablehlo.return %i : tensor<i64>
  }
  func.return
}`,
    );
    writeFileSync(
      join(dir, "ok.mlir"),
      `func.func @main() {
  %c = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %c, dense<[1, 2]> : tensor<2xi32>
  func.return
}`,
    );
    const results = await runPool(files(dir), { jobs: 1, timeoutMs: 1500 });
    expect(results.map((r) => [r.file, r.status])).toEqual([
      ["hang.mlir", "failed"],
      ["ok.mlir", "passed"],
    ]);
    expect(results[0]?.detail).toContain("timed out");
  }, 30_000);
});
