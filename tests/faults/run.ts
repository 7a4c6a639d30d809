/**
 * The long fault-injection run, by hand:
 *   bun tests/faults/run.ts [--scale N] [--seed S] [--only a,b]
 * runs every fault class N times as often as CI does (default 10), prints the table and writes it
 * with the command, date and machine to bench/results/faults-<date>.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, hostname } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { FAULT_CLASSES, type FaultRow, canMount, formatTable, suiteContext } from "./support/suite.ts";

const { values } = parseArgs({
  options: { scale: { type: "string" }, seed: { type: "string" }, only: { type: "string" } },
});
const scale = Number(values.scale ?? 10);
const seed = Number(values.seed ?? Date.now() % 1_000_000);
const only = values.only ? new Set(values.only.split(",")) : null;
const ctx = await suiteContext(scale, seed);
const rows: FaultRow[] = [];
try {
  for (const [name, run] of Object.entries(FAULT_CLASSES)) {
    if (only && !only.has(name)) continue;
    if (name === "diskFull" && !canMount(join(ctx.root, "probe-mount"))) {
      console.log(`${name}: skipped (needs root and a kernel that lets it mount a tmpfs)`);
      continue;
    }
    const t0 = performance.now();
    const r = await run(ctx);
    rows.push(r);
    console.log(
      `${name}: ${r.survived ? "survived" : "DID NOT SURVIVE"}, ${r.wrongAnswers} wrong, ${Math.round(performance.now() - t0)} ms`,
    );
  }
} finally {
  ctx.cleanup();
}
console.log(`\n${formatTable(rows)}`);
const out = resolve(import.meta.dir, "../../bench/results");
mkdirSync(out, { recursive: true });
const date = new Date().toISOString();
const file = join(out, `faults-${date.replace(/[:.]/g, "-").slice(0, 19)}Z.json`);
writeFileSync(
  file,
  `${JSON.stringify({ command: `bun tests/faults/run.ts --scale ${scale} --seed ${seed}${values.only ? ` --only ${values.only}` : ""}`, date, machine: { host: hostname(), cpus: cpus().length, model: cpus()[0]?.model }, scale, seed, rows }, null, 2)}\n`,
);
console.log(`\nwrote ${file}`);
process.exit(rows.every((r) => r.survived && r.wrongAnswers === 0) ? 0 : 1);
