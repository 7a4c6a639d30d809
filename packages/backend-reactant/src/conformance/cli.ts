import { readdirSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { runPool } from "./pool.ts";
import { formatReport, totals } from "./summary.ts";

/**
 * `bun run conformance [--backend reactant|pjrt] [--jobs N] [--timeout-ms MS] [--no-fold] [--verbose] <dir>...`
 * Runs every .mlir file under the folders and prints the report (summary.ts). Exits 1 when any
 * case failed.
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
      help: { type: "boolean", short: "h", default: false },
    },
    allowPositionals: true,
  });
  if (values.help || positionals.length === 0) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  if (values.backend === "pjrt") return runPjrt();
  if (values.backend !== "reactant") {
    console.error(`unknown backend '${values.backend}'\n${USAGE}`);
    return 2;
  }
  const files = positionals.flatMap((dir) => {
    const root = resolve(dir);
    return listMlir(root).map((path) => ({ path, name: relative(root, path) }));
  });
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

function listMlir(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...listMlir(path));
    else if (entry.endsWith(".mlir")) out.push(path);
  }
  return out;
}

/**
 * The PJRT backend cannot evaluate the check ops itself; loading it here tells the user whether
 * it is available at all. Running conformance programs through it is not implemented yet.
 */
async function runPjrt(): Promise<number> {
  try {
    const pjrt = await import("@xlaserve/backend-pjrt" as string);
    void pjrt;
  } catch (e) {
    console.error(`the PJRT backend is unavailable: ${(e as Error).message}`);
    return 1;
  }
  console.error("the PJRT backend loaded, but running conformance checks through PJRT is not implemented yet");
  return 1;
}

process.exit(await main());
