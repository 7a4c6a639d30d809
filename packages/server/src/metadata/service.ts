import { type TensorSpec, XlaserveError, kserveName } from "@xlaserve/core";
import type { ModelRegistryView, ServedModel } from "../contract.ts";
import { clientShape } from "../infer/model-index.ts";

/** The extensions this HTTP layer implements; the registry may add its own. */
export const SERVER_EXTENSIONS = ["binary_tensor_data", "model_repository", "statistics"] as const;

export function serverMetadata(registry: ModelRegistryView) {
  const info = registry.serverInfo();
  return {
    name: info.name,
    version: info.version,
    extensions: [...new Set([...SERVER_EXTENSIONS, ...info.extensions])],
    xlaserve: { ...info.extra },
  };
}

/** A model by name and optional version, or NOT_FOUND naming which part is unknown. */
export function findModel(registry: ModelRegistryView, name: string, version?: string): ServedModel {
  const model = registry.getModel(name, version);
  if (model) return model;
  if (version !== undefined && registry.getModel(name)) {
    throw new XlaserveError("NOT_FOUND", `model "${name}" has no version "${version}"`);
  }
  throw new XlaserveError("NOT_FOUND", `unknown model "${name}"`);
}

function tensorMetadata(spec: TensorSpec) {
  return { name: spec.name, datatype: kserveName(spec.dtype), shape: clientShape(spec) };
}

export function modelMetadata(model: ServedModel) {
  return {
    name: model.name,
    versions: [model.version],
    platform: model.platform,
    inputs: model.inputs.map(tensorMetadata),
    outputs: model.outputs.map(tensorMetadata),
    xlaserve: {
      compiled_batch_sizes: [...model.compiledBatchSizes],
      max_batch_size: model.maxBatchSize,
      ...model.extra(),
    },
  };
}
