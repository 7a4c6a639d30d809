import { t } from "elysia";

const Duration = t.Object({ count: t.Integer(), ns: t.Integer() });

export const ModelStatistics = t.Object({
  name: t.String(),
  version: t.String(),
  last_inference: t.Integer({ description: "milliseconds since the epoch" }),
  inference_count: t.Integer(),
  execution_count: t.Integer(),
  inference_stats: t.Object({
    success: Duration,
    fail: Duration,
    queue: Duration,
    compute_input: Duration,
    compute_infer: Duration,
    compute_output: Duration,
    cache_hit: Duration,
    cache_miss: Duration,
  }),
  batch_stats: t.Array(
    t.Object({ batch_size: t.Integer(), compute_input: Duration, compute_infer: Duration, compute_output: Duration }),
    { description: "executions by the number of rows run together" },
  ),
});

export const StatisticsResponse = t.Object({ model_stats: t.Array(ModelStatistics) });
