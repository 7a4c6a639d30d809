import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createReactantBackend } from "@xlaserve/backend-reactant";
import { type HostTensor, loadBundle } from "@xlaserve/core";
import { openSafetensors } from "@xlaserve/core/bundle/safetensors.ts";

/** The MLP example's b1 reference input, as a JSON infer body. */
export function mlpInput(examplesDir: string): { tensor: HostTensor; body: string } {
  const reference = openSafetensors(join(examplesDir, "mlp", "reference.safetensors"));
  const t = reference.tensor("b1/inputs/features");
  const tensor = { dtype: t.dtype, shape: [...t.shape], data: t.data.slice() } as HostTensor;
  const body = JSON.stringify({
    inputs: [
      { name: "features", shape: tensor.shape, datatype: "FP32", data: Array.from(tensor.data as Float32Array) },
    ],
    outputs: [{ name: "logits" }],
  });
  return { tensor, body };
}

/**
 * What the MLP bundle in `dir` answers for `input` (its logits), computed in this process with the
 * same CPU engine the worker runs: the answers a worker serving that version must give.
 */
export async function expectedLogits(dir: string, input: HostTensor): Promise<Float32Array> {
  const bundle = await loadBundle(dir);
  const backend = createReactantBackend();
  const module = bundle.modules.find((m) => m.batchSize === 1);
  if (!module) throw new Error("the MLP example has no b1 module");
  const program = await backend.compile({ bytes: await module.read(), format: module.format }, {});
  const weights = await Promise.all(bundle.weights.argumentOrder.map((n) => backend.upload(bundle.weights.tensor(n))));
  const x = await backend.upload(input);
  const outputs = await backend.execute(program, [x, ...weights]);
  const index = bundle.manifest.executableOutputs.findIndex((o) => o.name === "logits");
  const logits = (await backend.download(outputs[index] as never)).data as Float32Array;
  await backend.dispose();
  return Float32Array.from(logits);
}

export function close(a: ArrayLike<number>, b: ArrayLike<number>, tolerance = 1e-4): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = Number(a[i]);
    const y = Number(b[i]);
    if (!(Math.abs(x - y) <= tolerance * Math.max(1, Math.abs(y)))) return false;
  }
  return true;
}

/** Keeps the bytes of a file for writing back later. */
export function snapshot(path: string): Uint8Array {
  return new Uint8Array(readFileSync(path));
}
