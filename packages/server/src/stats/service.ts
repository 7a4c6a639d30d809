import type { ModelRegistryView, ServedModel } from "../contract.ts";
import type { RequestBook } from "./request-book.ts";

const NONE = { count: 0, ns: 0 };

/**
 * One model's figures in KServe/Triton's statistics-extension JSON shape. Success and fail come
 * from the request book (every answered request, as /metrics counts them; kept across reloads);
 * the model's own figures give the executions, queue and compute times and batch_stats. Without
 * a book (a caller that keeps none), the model's own success and fail counts.
 */
export function modelStatistics(model: ServedModel, book?: RequestBook) {
  const s = model.stats();
  const requests = book?.get(model.name);
  return {
    name: model.name,
    version: model.version,
    last_inference: Math.max(s.lastInference, requests?.lastInference ?? 0),
    inference_count: s.inferenceCount,
    execution_count: s.executionCount,
    inference_stats: {
      success: { ...(book ? (requests?.success ?? NONE) : s.success) },
      fail: { ...(book ? (requests?.fail ?? NONE) : s.fail) },
      queue: { ...s.queue },
      compute_input: { ...s.computeInput },
      compute_infer: { ...s.computeInfer },
      compute_output: { ...s.computeOutput },
      // Triton's response cache; xlaserve has none, so these stay zero (clients expect the keys).
      cache_hit: { ...NONE },
      cache_miss: { ...NONE },
    },
    batch_stats: Object.entries(s.batches ?? {})
      .map(([size, b]) => ({
        batch_size: Number(size),
        compute_input: { ...b.computeInput },
        compute_infer: { ...b.computeInfer },
        compute_output: { ...b.computeOutput },
      }))
      .sort((a, b) => a.batch_size - b.batch_size),
  };
}

export type ModelStatisticsJson = ReturnType<typeof modelStatistics>;

/** Every model currently served (each name once, at its served version). */
export function allStatistics(registry: ModelRegistryView, book?: RequestBook) {
  const seen = new Set<string>();
  const stats = [];
  for (const entry of registry.repositoryIndex()) {
    if (seen.has(entry.name)) continue;
    seen.add(entry.name);
    const model = registry.getModel(entry.name);
    if (model) stats.push(modelStatistics(model, book));
  }
  return { model_stats: stats };
}
