import { decodeEntry } from "../entry-format.ts";
import { entryName } from "../entry-key.ts";
import { sha256Hex } from "../hash.ts";
import { partitionName } from "../partition.ts";
import type { ProgramFleet } from "./fleet.ts";

export interface FleetVerifyProblem {
  readonly key: string;
  readonly blob: string;
  readonly reason: string;
}

export interface FleetVerifyReport {
  readonly checked: number;
  readonly ok: number;
  readonly bytes: number;
  readonly removed: readonly FleetVerifyProblem[];
}

/**
 * Reads every program the fleet's catalog lists in full and drops the ones that are not what
 * the catalog says: missing, another size, another sha256, an entry failing its own checks, or
 * an entry whose identity or hashes name another program. Dropped programs are rebuilt by the
 * next worker that needs them.
 */
export async function verifyFleet(fleet: ProgramFleet): Promise<FleetVerifyReport> {
  const removed: FleetVerifyProblem[] = [];
  let bytes = 0;
  const programs = await fleet.catalog.programs();
  for (const p of programs) {
    const blob = await fleet.store.get(p.blob);
    let reason: string | null = null;
    if (!blob) reason = "missing from the store";
    else if (blob.length !== Number(p.sizeBytes)) reason = `size ${blob.length}, catalog says ${p.sizeBytes}`;
    else if (sha256Hex(blob) !== p.blobSha256) reason = "sha256 differs from the catalog's";
    else {
      const decoded = decodeEntry(blob);
      if (!decoded.ok) reason = `${decoded.reason}: ${decoded.detail}`;
      else if (partitionName(decoded.header.facts.identity) !== p.partition)
        reason = "written for another backend identity";
      else if (entryName(decoded.header.sourceHash, decoded.header.optionsHash) !== p.entry)
        reason = "holds another module or options";
    }
    if (reason === null) {
      bytes += blob!.length;
      continue;
    }
    removed.push({ key: p.key, blob: p.blob, reason });
    if (await fleet.catalog.dropProgram(p.key, p.blobSha256)) await fleet.store.delete(p.blob).catch(() => {});
  }
  fleet.counters.badBlobs += removed.length;
  return { checked: programs.length, ok: programs.length - removed.length, bytes, removed };
}
