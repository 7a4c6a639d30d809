import type { FleetOptions } from "../fleet/fleet.ts";
import { ProgramCache } from "../program-cache.ts";
import type { WarningSink } from "../warnings.ts";
import type { OutStream } from "./out.ts";

/** What every cache command takes: where the index lives and which repository to look at. */
export interface CacheCommandOptions {
  readonly stateDir: string;
  readonly dbPath?: string;
  /** A model repository whose bundles' `.cache/` directories are included. */
  readonly repository?: string;
  readonly out: OutStream;
  readonly onWarning?: WarningSink;
  /** The fleet's shared cache, where the command covers it too (verify). */
  readonly fleet?: FleetOptions;
}

/** Warnings go to the same stream as the command's output, marked. */
export async function openForCommand(opts: CacheCommandOptions): Promise<ProgramCache> {
  const cache = await ProgramCache.open({
    stateDir: opts.stateDir,
    ...(opts.dbPath ? { dbPath: opts.dbPath } : {}),
    onWarning: opts.onWarning ?? ((w) => opts.out.write(`warning: ${w.message}\n`)),
    ...(opts.fleet ? { fleet: opts.fleet } : {}),
  });
  if (opts.repository) cache.addRepository(opts.repository);
  return cache;
}
