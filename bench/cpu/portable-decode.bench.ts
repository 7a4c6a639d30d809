/**
 * Reading a model's program: decoding its portable artifact (MLIR bytecode of VHLO) against
 * parsing its StableHLO text twin, both into the same program model, then planning it for the
 * CPU engine (`new Program(module).func("main")`), as a compile does. ResNet-50 at batch 1 by
 * default. The text side is the anchor: the ratio is text time / bytecode time, same run.
 *
 * The two modules come from tools/export_jax_bundle.py (exported here into a temporary folder
 * unless --text and --portable name existing module files).
 *
 *   bun bench/cpu/portable-decode.bench.ts [--model resnet50] [--text F --portable F] [--runs 40]
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Program } from "@xlaserve/backend-reactant";
import { parseModule, readPortableArtifact } from "@xlaserve/stablehlo";
import { python } from "../lib/anchor.ts";
import { intFlag, parseFlags } from "../lib/args.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { round, summarize } from "../lib/stats.ts";

const USAGE = `
bun bench/cpu/portable-decode.bench.ts [options]
  --model NAME       example to export (default resnet50)
  --text FILE        an existing text module (with --portable: no export)
  --portable FILE    its portable-artifact twin
  --runs N           timed repetitions of each (default 40, after 10 untimed)
  --results-dir DIR  where the JSON goes
`;
const { values } = parseFlags(USAGE, {
  model: { type: "string" },
  text: { type: "string" },
  portable: { type: "string" },
  runs: { type: "string" },
  "results-dir": { type: "string" },
});
const model = (values.model as string | undefined) ?? "resnet50";
const runs = Math.max(1, intFlag(values.runs, 40, "runs"));
const result = new BenchResult("portable-decode");
result.dir = resultsDir(values["results-dir"] as string | undefined);
result.figure("settings", { model, runs });

function exportPair(): { text: string; portable: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "xlaserve-portable-bench-"));
  const tool = resolve(import.meta.dir, "..", "..", "tools", "export_jax_bundle.py");
  for (const [sub, extra] of [
    ["text", []],
    ["portable", ["--portable"]],
  ] as const) {
    console.log(`exporting ${model} (${sub}) ...`);
    execFileSync(python(), [tool, model, join(dir, sub), "--batch-sizes", "1", "--name", model, ...extra], {
      stdio: ["ignore", "ignore", "inherit"],
      timeout: 600_000,
    });
  }
  return {
    text: join(dir, "text", "model.mlir"),
    portable: join(dir, "portable", "model.mlir"),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function time(fn: () => void): number[] {
  for (let i = 0; i < 10; i++) fn();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    fn();
    out.push(performance.now() - started);
  }
  return out;
}

await result.step("measure", () => {
  const pair =
    values.text && values.portable
      ? { text: values.text as string, portable: values.portable as string, cleanup: () => {} }
      : exportPair();
  try {
    const text = readFileSync(pair.text, "utf8");
    const bytes = new Uint8Array(readFileSync(pair.portable));
    result.figure("moduleBytes", { text: Buffer.byteLength(text), portable: bytes.byteLength });
    const parse = summarize(time(() => parseModule(text, "model.mlir")));
    const decode = summarize(time(() => readPortableArtifact(bytes, "model.mlir", { strict: true })));
    const textTotal = summarize(time(() => new Program(parseModule(text, "model.mlir")).func("main")));
    const portableTotal = summarize(
      time(() => new Program(readPortableArtifact(bytes, "model.mlir", { strict: true })).func("main")),
    );
    const ms = (s: { median: number; min: number }) => ({ medianMs: round(s.median), minMs: round(s.min) });
    result.figure("readOnly", { textParse: ms(parse), portableDecode: ms(decode) });
    result.figure("readAndPlan", { text: ms(textTotal), portable: ms(portableTotal) });
    console.log(`parse ${parse.median.toFixed(2)} ms, decode ${decode.median.toFixed(2)} ms (medians)`);
    console.log(`parse+plan ${textTotal.median.toFixed(2)} ms, decode+plan ${portableTotal.median.toFixed(2)} ms`);
    result.ratio(
      `${model} read+plan: text / portable`,
      { label: "text: parse + plan, median ms", value: textTotal.median },
      { label: "portable: decode + plan, median ms", value: portableTotal.median },
      ">= 3",
    );
    result.ratio(
      `${model} read only: text / portable`,
      { label: "text parse, median ms", value: parse.median },
      { label: "portable decode, median ms", value: decode.median },
    );
  } finally {
    pair.cleanup();
  }
});
result.write();
