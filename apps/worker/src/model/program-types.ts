import type { Executable } from "@xlaserve/core";
import type { Bundle, BundleModule } from "@xlaserve/core/bundle/types.ts";

export type CacheOutcome = "hit" | "miss" | "recompiled" | "uncached";

export interface LoadedProgram {
  readonly executable: Executable;
  readonly outcome: CacheOutcome;
  readonly compileMs: number;
  readonly loadMs: number;
  /** The program cache entry it came from (keys the stored probe figures); absent uncached. */
  readonly entryPath?: string;
}

/** Compiles a module or loads it from the program cache. */
export type ProgramSource = (bundle: Bundle, module: BundleModule) => Promise<LoadedProgram>;

export interface ProgramRecord {
  readonly file: string;
  readonly variant: number | null;
  readonly batchSize: number | null;
  readonly outcome: CacheOutcome;
  readonly compileMs: number;
  readonly loadMs: number;
}

/** One (variant, batch size) a model runs, with the program serving it. */
export interface ProgramTarget {
  readonly variant: number | null;
  readonly batchSize: number;
  readonly program: LoadedProgram;
}
