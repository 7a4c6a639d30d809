import { rmSync } from "node:fs";
import {
  type AbstractBackend,
  type CompileOptions,
  asXlaserveError,
  discoverBundles,
  loadBundle,
} from "@xlaserve/core";
import { ProgramCache } from "../program-cache.ts";
import type { BundleWithModules, CacheOutcome } from "../types.ts";
import type { WarningSink } from "../warnings.ts";
import { type OutStream, formatBytes, formatMs } from "./out.ts";
import { ProgressBar } from "./progress.ts";
import { formatTable } from "./table.ts";

export interface PrecompileOptions {
  readonly repository: string;
  readonly backend: AbstractBackend;
  readonly options: CompileOptions;
  readonly out: OutStream;
  /** An open cache to use; otherwise one is opened in stateDir and closed at the end. */
  readonly cache?: ProgramCache;
  readonly stateDir?: string;
  readonly onWarning?: WarningSink;
  /** Compile every program again, replacing the stored one (the CLI's compile --no-cache). */
  readonly recompile?: boolean;
  /** Loads one bundle directory; defaults to core's loadBundle. */
  readonly loadBundle?: (dir: string) => Promise<BundleWithModules>;
}

export interface PrecompileRow {
  readonly model: string;
  readonly module: string;
  readonly outcome: CacheOutcome | "failed";
  /** Compile ms for a miss, load ms for a hit. */
  readonly ms: number | null;
  readonly bytes: number;
  readonly error?: string;
}

export interface PrecompileSummary {
  readonly rows: readonly PrecompileRow[];
  readonly failed: number;
  readonly totalMs: number;
}

/**
 * `xlaserve compile <repository>`: compiles every program of every bundle for this device and
 * stores it, so an image can ship a warm cache. A bundle or module that fails is reported in
 * the table and the rest carry on; the caller decides the exit status from `failed`.
 */
export async function precompileRepository(opts: PrecompileOptions): Promise<PrecompileSummary> {
  const t0 = performance.now();
  const load = opts.loadBundle ?? loadBundle;
  const warn = opts.onWarning ?? ((w) => opts.out.write(`warning: ${w.message}\n`));
  if (!opts.cache && !opts.stateDir) throw new Error("precompileRepository needs a cache or a stateDir");
  const cache = opts.cache ?? (await ProgramCache.open({ stateDir: opts.stateDir!, onWarning: warn }));
  const rows: PrecompileRow[] = [];
  try {
    const bundles: BundleWithModules[] = [];
    for (const loc of discoverBundles(opts.repository)) {
      try {
        bundles.push(await load(loc.dir));
      } catch (e) {
        rows.push({
          model: loc.name,
          module: "-",
          outcome: "failed",
          ms: null,
          bytes: 0,
          error: asXlaserveError(e).message,
        });
      }
    }
    const total = bundles.reduce((s, b) => s + b.modules.length, 0);
    const identity = opts.backend.identity(opts.options.device);
    opts.out.write(
      `precompiling ${total} programs of ${bundles.length} models for ${identity.backend}/${identity.platform} ${identity.deviceKind}\n`,
    );
    const bar = new ProgressBar(opts.out, total);
    for (const bundle of bundles) {
      cache.syncModuleHashes(bundle);
      for (const module of bundle.modules) {
        bar.start(`${bundle.name}/${module.file}`);
        try {
          const args = { bundle, module, backend: opts.backend, options: opts.options };
          // The stored program goes first: the index is derived from the files, so the lookup misses.
          if (opts.recompile) rmSync(cache.keyFor(args).path, { recursive: true, force: true });
          const r = await cache.getOrCompile(args);
          r.executable.dispose();
          const ms = r.outcome === "hit" ? r.loadMs : r.compileMs;
          rows.push({ model: bundle.name, module: module.file, outcome: r.outcome, ms, bytes: r.sizeBytes });
        } catch (e) {
          const error = asXlaserveError(e).message;
          rows.push({ model: bundle.name, module: module.file, outcome: "failed", ms: null, bytes: 0, error });
        }
        bar.step(`${bundle.name}/${module.file}`);
      }
    }
    bar.finish();
  } finally {
    if (!opts.cache) cache.close();
  }
  const totalMs = performance.now() - t0;
  printSummary(opts.out, rows, totalMs);
  return { rows, failed: rows.filter((r) => r.outcome === "failed").length, totalMs };
}

function printSummary(out: OutStream, rows: readonly PrecompileRow[], totalMs: number): void {
  out.write(
    formatTable(
      ["model", "module", "outcome", "ms", "bytes"],
      rows.map((r) => [r.model, r.module, r.outcome, formatMs(r.ms), r.bytes ? formatBytes(r.bytes) : "-"]),
      ["left", "left", "left", "right", "right"],
    ),
  );
  for (const r of rows) if (r.error) out.write(`failed: ${r.model}/${r.module}: ${r.error}\n`);
  const count = (o: PrecompileRow["outcome"]) => rows.filter((r) => r.outcome === o).length;
  out.write(
    `${rows.length} programs: ${count("miss") + count("recompiled")} compiled, ${count("hit")} already cached, ${count("failed")} failed; ${formatBytes(rows.reduce((s, r) => s + r.bytes, 0))} in ${formatMs(totalMs)} ms\n`,
  );
}
