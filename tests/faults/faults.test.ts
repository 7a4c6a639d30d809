import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import {
  FAULT_CLASSES,
  type FaultRow,
  type SuiteContext,
  canMount,
  formatTable,
  suiteContext,
} from "./support/suite.ts";

/**
 * The fault-injection suite, bounded for CI (about a minute): each fault class a few times on
 * real worker processes. `bun tests/faults/run.ts --scale 10` runs the long version by hand and
 * writes the table to bench/results/. FAULTS_SEED repeats a run's random choices.
 */
const scale = Number(process.env.FAULTS_SCALE ?? 1);
const seed = Number(process.env.FAULTS_SEED ?? 20261201);
let ctx: SuiteContext;
const rows: FaultRow[] = [];
beforeAll(async () => {
  ctx = await suiteContext(scale, seed);
});
afterAll(() => {
  if (rows.length) console.log(`\n${formatTable(rows)}\n`);
  ctx?.cleanup();
});

const mountable = canMount(join(process.env.TMPDIR ?? "/tmp", `xlaserve-faults-mount-${process.pid}`));

for (const [name, run] of Object.entries(FAULT_CLASSES)) {
  const skip = name === "diskFull" && !mountable;
  test.skipIf(skip)(
    skip ? `${name} (skipped: needs root and a kernel that lets it mount a tmpfs)` : name,
    async () => {
      const r = await run(ctx);
      rows.push(r);
      expect({ fault: r.fault, survived: r.survived, wrongAnswers: r.wrongAnswers, notes: r.notes }).toEqual({
        fault: r.fault,
        survived: true,
        wrongAnswers: 0,
        notes: r.notes,
      });
    },
    120_000,
  );
}
