import type { ModelRegistryView, ServedModel } from "../contract.ts";

const NONE = { count: 0, ns: 0 };

/** One model's figures in KServe/Triton's statistics-extension JSON shape. */
export function modelStatistics(model: ServedModel) {
  const s = model.stats();
  return {
    name: model.name,
    version: model.version,
    last_inference: s.lastInference,
    inference_count: s.inferenceCount,
    execution_count: s.executionCount,
    inference_stats: {
      success: { ...s.success },
      fail: { ...s.fail },
      queue: { ...s.queue },
      compute_input: { ...s.computeInput },
      compute_infer: { ...s.computeInfer },
      compute_output: { ...s.computeOutput },
      // Triton's response cache; xlaserve has none, so these stay zero (clients expect the keys).
      cache_hit: { ...NONE },
      cache_miss: { ...NONE },
    },
    batch_stats: [],
  };
}

/** Every model currently served (each name once, at its served version). */
export function allStatistics(registry: ModelRegistryView) {
  const seen = new Set<string>();
  const stats = [];
  for (const entry of registry.repositoryIndex()) {
    if (seen.has(entry.name)) continue;
    seen.add(entry.name);
    const model = registry.getModel(entry.name);
    if (model) stats.push(modelStatistics(model));
  }
  return { model_stats: stats };
}
