import { runConformanceText } from "./packages/backend-reactant/src/conformance/run-file.ts";
import { readdirSync, readFileSync } from "node:fs";
const counts: Record<string, number> = {};
for (const dir of ["/work/shared/conformance/stablehlo/testdata", "/work/shared/conformance/stablehlo/interpret"]) {
  for (const f of readdirSync(dir).sort()) { if (!f.endsWith(".mlir")) continue;
    const text = readFileSync(`${dir}/${f}`, "utf8");
    const a = runConformanceText(text, f, { fold: false });
    const b = runConformanceText(text, f);
    a.forEach((r, i) => { const k = `${r.status}/${b[i]?.status}`; counts[k] = (counts[k] ?? 0) + 1; if (r.status !== b[i]?.status) console.log(f, r.func, r.status, r.detail?.slice(0, 200)); });
  }
}
console.log(counts);
