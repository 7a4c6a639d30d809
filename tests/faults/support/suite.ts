/**
 * The fault classes (one file each under faults/, grouped by what they break) and what the test
 * and the long run (run.ts) use with them.
 */
import { diskFull } from "./faults/disk-full.ts";
import { hostileBodies } from "./faults/hostile-bodies.ts";
import { linkOutside } from "./faults/link-outside.ts";
import { halfWritten, reloadStorm, truncateDuringReload } from "./faults/reloads.ts";
import { cacheCorruption, indexCorruption, killDuringCompile } from "./faults/restarts.ts";
import { twoWorkers } from "./faults/two-workers.ts";

export { type SuiteContext, suiteContext } from "./context.ts";
export { type FaultRow, formatTable } from "./fault-row.ts";
export { canMount } from "./faults/disk-full.ts";

export const FAULT_CLASSES = {
  truncateDuringReload,
  halfWritten,
  reloadStorm,
  killDuringCompile,
  cacheCorruption,
  indexCorruption,
  twoWorkers,
  hostileBodies,
  linkOutside,
  diskFull,
} as const;
