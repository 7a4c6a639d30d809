import { loadExample } from "./packages/backend-reactant/test/helpers/bundles.ts";
import { parseModule } from "./packages/backend-reactant/src/parser/parser.ts";
import { Program } from "./packages/backend-reactant/src/plan/program.ts";
import { serializeModule, deserializeModule } from "./packages/backend-reactant/src/plan/serialize.ts";
for (const m of ["mlp","cnn","transformer"]) {
  const c = loadExample(m, 1);
  let bytes!: Uint8Array; let tp = 0, tl = 0, tc = 0;
  for (let i = 0; i < 20; i++) {
    let t = performance.now(); const mod = parseModule(c.mlir, m); tp += performance.now() - t;
    t = performance.now(); const p = new Program(mod); p.func(p.entryName()); tc += performance.now() - t;
    bytes = serializeModule(mod);
    t = performance.now(); deserializeModule(bytes); tl += performance.now() - t;
  }
  console.log(m, "parse", (tp/20).toFixed(2), "compile", (tc/20).toFixed(2), "load", (tl/20).toFixed(2), bytes.length, c.mlir.length);
}
