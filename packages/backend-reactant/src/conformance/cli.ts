import { readFileSync, readdirSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { AbstractBackend } from "@xlaserve/core";
import { isReferenceBundle, runBundleCases } from "./bundle-case.ts";
import { runPool } from "./pool.ts";
import type { CaseResult } from "./run-file.ts";
import { runFileOnBackend } from "./via-backend.ts";
import { formatReport, totals } from "./summary.ts";

/**
 * `bun run conformance [--backend reactant|pjrt] [--jobs N] [--timeout-ms MS] [--no-fold] [--verbose] <dir>...`
 * Runs every .mlir file (and .mlir.bc portable artifact) under the folders and prints the report (summary.ts). A bundle folder
 * with reference.safetensors (the model zoo, tests/zoo/models) runs each batch size against XLA's
 * outputs. Exits 1 when any case failed.
 */
const USAGE =
  "usage: conformance [--backend reactant|pjrt] [--jobs N] [--timeout-ms MS] [--no-fold] [--verbose] <dir>...";

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    options: {
      backend: { type: "string", default: "reactant" },
      jobs: { type: "string" },
      "timeout-ms": { type: "string", default: "60000" },
      verbose: { type: "boolean", default: false },
      "no-fold": { type: "boolean", default: false },
      plugin: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    allowPositionals: true,
  });
  if (values.help || positionals.length === 0) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const files = positionals.flatMap((dir) => {
    const root = resolve(dir);
    return listMlir(root).map((path) => ({ path, name: relative(root, path) }));
  });
  if (values.backend === "pjrt")
    return runPjrt(files, values.plugin ?? process.env.XLASERVE_PJRT_PLUGIN, values.verbose);
  if (values.backend !== "reactant") {
    console.error(`unknown backend '${values.backend}'\n${USAGE}`);
    return 2;
  }
  const jobs = Number(values.jobs ?? Math.min(availableParallelism(), 4));
  const results = await runPool(files, {
    jobs,
    timeoutMs: Number(values["timeout-ms"]),
    // The conformance programs compute on constants, which the compiler folds; --no-fold runs
    // them through run-time steps (fusion, liveness) instead.
    programOptions: values["no-fold"] ? { fold: false } : {},
  });
  console.log(formatReport(results, values.verbose));
  return totals(results).failed > 0 ? 1 : 0;
}

/** The .mlir files (and .mlir.bc portable artifacts) under `dir`, and its bundle folders with reference outputs (each one job). */
function listMlir(dir: string): string[] {
  if (isReferenceBundle(dir)) return [dir];
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...listMlir(path));
    else if (entry.endsWith(".mlir") || entry.endsWith(".mlir.bc")) out.push(path);
  }
  return out;
}

/**
 * Through the PJRT backend (a teammate's package, loaded lazily so this CLI works without it):
 * files run one after another in this process, which owns the device.
 */
async function runPjrt(
  files: { path: string; name: string }[],
  plugin: string | undefined,
  verbose: boolean,
): Promise<number> {
  if (!plugin) {
    console.error("--backend pjrt needs --plugin <path of a PJRT plugin .so> (or XLASERVE_PJRT_PLUGIN)");
    return 2;
  }
  let backend: AbstractBackend;
  try {
    const pjrt = (await import("@xlaserve/backend-pjrt" as string)) as {
      createPjrtBackend?: (o: { pluginPath: string }) => AbstractBackend;
    };
    if (typeof pjrt.createPjrtBackend !== "function")
      throw new Error("@xlaserve/backend-pjrt exports no createPjrtBackend");
    backend = pjrt.createPjrtBackend({ pluginPath: plugin });
  } catch (e) {
    console.error(`the PJRT backend is unavailable: ${(e as Error).message}`);
    return 1;
  }
  const results: CaseResult[] = [];
  for (const f of files) {
    if (isReferenceBundle(f.path)) results.push(...(await runBundleCases(f.path, f.name, backend)));
    else results.push(await runFileOnBackend(backend, readFileSync(f.path, "utf8"), f.name));
  }
  await backend.dispose();
  console.log(formatReport(results, verbose));
  return totals(results).failed > 0 ? 1 : 0;
}

process.exit(await main());
