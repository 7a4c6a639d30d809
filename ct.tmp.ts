import { runConformanceText } from "./packages/backend-reactant/src/conformance/run-file.ts";
import { readdirSync, readFileSync } from "node:fs";
const dir = process.argv[2]!;
const filter = process.argv[3] ?? "";
const counts: Record<string, number> = {}; const details = new Map<string, number>();
const t0 = performance.now();
for (const f of readdirSync(dir).sort()) { if (!f.endsWith(".mlir") || !f.includes(filter)) continue;
  const t1 = performance.now();
  const rs = runConformanceText(readFileSync(`${dir}/${f}`, "utf8"), f);
  const dt = performance.now() - t1; if (dt > 2000) console.log("SLOW", f, dt);
  for (const r of rs) { counts[r.status] = (counts[r.status] ?? 0) + 1; if (r.status !== "passed") { const k = r.status + " " + r.family + ": " + (r.detail ?? "").slice(0, 150); details.set(k, (details.get(k) ?? 0) + 1); } }
}
console.log(counts, performance.now() - t0);
for (const [k, v] of [...details].sort()) console.log(v, k);
