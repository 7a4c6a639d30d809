import { join } from "node:path";
import { ProgramCache } from "../../src/program-cache.ts";
import type { CacheWarning } from "../../src/warnings.ts";

/** A cache in `<root>/state` that collects its warnings for the test to inspect. */
export async function openTestCache(root: string): Promise<{ cache: ProgramCache; warnings: CacheWarning[] }> {
  const warnings: CacheWarning[] = [];
  const cache = await ProgramCache.open({ stateDir: join(root, "state"), onWarning: (w) => warnings.push(w) });
  return { cache, warnings };
}
