import { type TensorSpec, XlaserveError, kserveName } from "@xlaserve/core";
import type { ModelRegistryView, ServedModel } from "../contract.ts";
import { isDeliberatelyOut } from "../health/readiness.ts";
import { clientShape } from "../infer/model-index.ts";

/** The extensions this HTTP layer implements; the registry may add its own. */
export const SERVER_EXTENSIONS = [
  "binary_tensor_data",
  "model_repository",
  "statistics",
  "model_configuration",
  "system_shared_memory",
] as const;

export function serverMetadata(registry: ModelRegistryView) {
  const info = registry.serverInfo();
  return {
    name: info.name,
    version: info.version,
    extensions: [...new Set([...SERVER_EXTENSIONS, ...info.extensions])],
    xlaserve: { ...info.extra },
  };
}

/**
 * A model by name and optional version. A model the repository holds but does not serve (its
 * load failed, it is still loading) is UNAVAILABLE (503) with the index's reason:
 * the client learns why, and that another worker may serve it. NOT_FOUND (404) names which part
 * is unknown, or that the model was unloaded.
 */
export function findModel(
  registry: Pick<ModelRegistryView, "getModel" | "isShuttingDown"> &
    Partial<Pick<ModelRegistryView, "repositoryIndex">>,
  name: string,
  version?: string,
): ServedModel {
  const model = registry.getModel(name, version);
  if (model) return model;
  if (registry.isShuttingDown?.()) throw new XlaserveError("SHUTTING_DOWN", "the worker is shutting down");
  if (version !== undefined && registry.getModel(name)) {
    throw new XlaserveError("NOT_FOUND", `model "${name}" has no version "${version}"`);
  }
  const entry = registry.repositoryIndex?.().find((e) => e.name === name && e.state !== "READY");
  if (entry && !isDeliberatelyOut(entry)) {
    const why = entry.reason ? `: ${entry.reason}` : "";
    throw new XlaserveError("UNAVAILABLE", `model "${name}" is not being served (${entry.state})${why}`, {
      model: name,
      state: entry.state,
    });
  }
  if (entry) throw new XlaserveError("NOT_FOUND", `model "${name}" is not loaded (${entry.reason})`);
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

/**
 * Triton's model configuration extension (GET .../config), which perf_analyzer and Triton's
 * clients read for max_batch_size and dims. Triton's dims leave out the batch axis when
 * max_batch_size > 0, which it can only do when that axis comes first; otherwise the model is
 * shown as non-batching with -1 where the batch goes.
 */
export function modelConfig(model: ServedModel) {
  const batchFirst = [...model.inputs, ...model.outputs].every((s) => s.batchAxis === null || s.batchAxis === 0);
  const maxBatch = batchFirst && model.inputs.some((s) => s.batchAxis === 0) ? model.maxBatchSize : 0;
  const tensor = (spec: TensorSpec) => {
    const shape = clientShape(spec);
    return {
      name: spec.name,
      data_type: `TYPE_${kserveName(spec.dtype)}`,
      dims: maxBatch > 0 && spec.batchAxis === 0 ? shape.slice(1) : shape,
    };
  };
  return {
    name: model.name,
    platform: model.platform,
    backend: model.platform,
    max_batch_size: maxBatch,
    input: model.inputs.map(tensor),
    output: model.outputs.map(tensor),
    version_policy: { specific: { versions: [model.version] } },
  };
}
