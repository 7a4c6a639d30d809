import { loadExample, compareF32 } from "./packages/backend-reactant/test/helpers/bundles.ts";
import { parseModule } from "./packages/backend-reactant/src/parser/parser.ts";
import { Program } from "./packages/backend-reactant/src/plan/program.ts";
import { Arena } from "./packages/backend-reactant/src/plan/arena.ts";
for (const [m, b] of [["mlp",1],["mlp",8],["cnn",1],["cnn",4],["transformer",1],["transformer",4]] as const) {
  const c = loadExample(m, b);
  let t0 = performance.now();
  const prog = new Program(parseModule(c.mlir, m));
  const f = prog.func(prog.entryName());
  const tc = performance.now() - t0;
  const arena = new Arena();
  let out = f.invoke(c.args, { arena, failures: [] });
  t0 = performance.now(); const N = 5;
  for (let i = 0; i < N; i++) out = f.invoke(c.args, { arena, failures: [] });
  const tr = (performance.now() - t0) / N;
  console.log(m, b, "compile", tc.toFixed(1), "run", tr.toFixed(2), "ms", c.expected.map((e, i) => [e.name, compareF32(out[i] as any, e.value)]), "peak", arena.peakBytes);
}
