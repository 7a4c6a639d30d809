import type { TensorSpec } from "@xlaserve/core";
import { kserveName } from "@xlaserve/core";
import type { ServedModel } from "../contract.ts";

/** Per-model lookups the codec needs on every request, built once per ServedModel object. */
export interface ModelIndex {
  readonly inputs: ReadonlyMap<string, TensorSpec>;
  readonly outputs: ReadonlyMap<string, TensorSpec>;
  readonly inputNames: string;
  readonly outputNames: string;
}

const cache = new WeakMap<ServedModel, ModelIndex>();

export function modelIndex(model: ServedModel): ModelIndex {
  let index = cache.get(model);
  if (!index) {
    index = {
      inputs: new Map(model.inputs.map((s) => [s.name, s])),
      outputs: new Map(model.outputs.map((s) => [s.name, s])),
      inputNames: model.inputs.map((s) => s.name).join(", "),
      outputNames: model.outputs.map((s) => s.name).join(", "),
    };
    cache.set(model, index);
  }
  return index;
}

/** Row-major client shape of a spec: -1 for the batch axis and variable axes. */
export function clientShape(spec: TensorSpec): number[] {
  return spec.dims.map((d) => (d.kind === "fixed" ? d.size : -1));
}

export function describeSpec(spec: TensorSpec): string {
  return `${kserveName(spec.dtype)} [${clientShape(spec).join(", ")}]`;
}
