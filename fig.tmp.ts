import { createReactantBackend } from "./packages/backend-reactant/src/index.ts";
import { loadExample } from "./packages/backend-reactant/test/helpers/bundles.ts";
import { dtypeOf } from "./packages/backend-reactant/src/plan/dtype-map.ts";
const b = createReactantBackend();
for (const [m, bs] of [["mlp",1],["mlp",8],["cnn",1],["cnn",4],["transformer",1],["transformer",4]] as const) {
  const c = loadExample(m, bs);
  const bytes = new TextEncoder().encode(c.mlir);
  let tc = Infinity, td = Infinity, tr = Infinity;
  let exe = await b.compile({ bytes, format: "text" }, {});
  for (let i = 0; i < 10; i++) { const t = performance.now(); exe = await b.compile({ bytes, format: "text" }, {}); tc = Math.min(tc, performance.now() - t); }
  const plan = await b.serialize(exe);
  for (let i = 0; i < 10; i++) { const t = performance.now(); await b.deserialize(plan, {}); td = Math.min(td, performance.now() - t); }
  const args = await Promise.all(c.args.map((a) => b.upload({ dtype: dtypeOf(a.type), shape: a.shape, data: a.data as any })));
  for (let i = 0; i < 5; i++) (await b.execute(exe, args)).forEach((o) => o.dispose());
  for (let i = 0; i < 20; i++) { const t = performance.now(); const o = await b.execute(exe, args); tr = Math.min(tr, performance.now() - t); o.forEach((x) => x.dispose()); }
  console.log(`${m} b${bs}: compile ${tc.toFixed(2)} ms, load plan ${td.toFixed(2)} ms (${plan.length} B), run ${tr.toFixed(2)} ms, peak ${b.memoryStats().peakBytes}`);
}
