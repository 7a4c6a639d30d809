/**
 * Portable artifacts of the jax that exported them (jax 0.11.2 on the GPU host: StableHLO
 * 1.18) against their text twins: for each model exported both ways (DIR/<model> with text
 * modules, DIR/<model>-portable with --portable), the bundle loader's signature check, the CPU
 * engine's outputs on the reference inputs (must be byte-identical), and read times (text parse
 * as the anchor, portable decode, same run).
 *
 *   bun bench/cpu/portable-twins.bench.ts --models DIR [--only mlp,cnn,transformer,resnet50]
 */
import { join, resolve } from "node:path";
import { loadBundle } from "@xlaserve/core/bundle/load.ts";
import { createReactantBackend } from "@xlaserve/backend-reactant";
import { parseModule, portableInfo, readPortableArtifact } from "@xlaserve/stablehlo";
import { listFlag, parseFlags } from "../lib/args.ts";
import { batchSizes, moduleFor, referenceInputs, uploadWeights } from "../lib/bundle-io.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { median, round } from "../lib/stats.ts";

const USAGE = `
bun bench/cpu/portable-twins.bench.ts --models DIR [--only a,b] [--results-dir DIR]
`;
const { values } = parseFlags(USAGE, {
  models: { type: "string" },
  only: { type: "string" },
  "results-dir": { type: "string" },
});
if (!values.models) {
  console.error(USAGE);
  process.exit(2);
}
const dir = resolve(values.models as string);
const models = listFlag(values.only, ["mlp", "cnn", "transformer", "resnet50"]);
const result = new BenchResult("portable-twins");
result.dir = resultsDir(values["results-dir"] as string | undefined);

function timed(fn: () => void, runs = 15): number {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    out.push(performance.now() - t);
  }
  return median(out);
}

for (const model of models) {
  await result.step(model, async () => {
    const text = await loadBundle(join(dir, model));
    const portable = await loadBundle(join(dir, `${model}-portable`));
    const backend = createReactantBackend();
    const weights = await uploadWeights(backend, text);
    const perBatch: Record<string, unknown> = {};
    for (const batch of batchSizes(text)) {
      const [t, p] = [moduleFor(text, batch), moduleFor(portable, batch)];
      const [tb, pb] = [await t.read(), await p.read()];
      if (p.format !== "bytecode") throw new Error(`${model}-portable b${batch} is not bytecode`);
      const sameSignature = JSON.stringify(t.signature) === JSON.stringify(p.signature);
      const inputs = referenceInputs(text, batch) ?? [];
      const run = async (bytes: Uint8Array, format: "text" | "bytecode") => {
        const exe = await backend.compile({ bytes, format, origin: `${model}.b${batch}` }, {});
        const args = await Promise.all(inputs.map((x) => backend.upload(x)));
        const outs = await backend.execute(exe, [...args, ...weights]);
        return Promise.all(outs.map((o) => backend.download(o)));
      };
      const [fromText, fromPortable] = [await run(tb, "text"), await run(pb, "bytecode")];
      const identical =
        fromText.length === fromPortable.length &&
        fromText.every((o, i) =>
          Buffer.from(o.data.buffer, o.data.byteOffset, o.data.byteLength).equals(
            Buffer.from(
              fromPortable[i]?.data.buffer ?? new ArrayBuffer(0),
              fromPortable[i]?.data.byteOffset,
              fromPortable[i]?.data.byteLength,
            ),
          ),
        );
      const source = new TextDecoder().decode(tb);
      const parseMs = timed(() => parseModule(source, "m"));
      const decodeMs = timed(() => readPortableArtifact(pb, "m", { strict: true }));
      perBatch[`b${batch}`] = {
        producer: portableInfo(pb, "m").producer,
        sameSignature,
        identicalOutputs: identical,
        textParseMs: round(parseMs),
        portableDecodeMs: round(decodeMs),
      };
      console.log(
        `${model} b${batch}: signature ${sameSignature ? "same" : "DIFFERENT"}, outputs ${identical ? "identical" : "DIFFERENT"}`,
      );
      result.ratio(
        `${model} b${batch} read: text / portable`,
        { label: "text parse median ms", value: parseMs },
        { label: "portable decode median ms", value: decodeMs },
      );
      if (!sameSignature || !identical) result.error(`${model} b${batch}`, new Error("portable and text twins differ"));
    }
    result.figure(model, perBatch);
  });
}
result.write();
