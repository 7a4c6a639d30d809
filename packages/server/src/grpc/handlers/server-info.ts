import type { ModelRegistryView } from "../../contract.ts";
import { type ReadinessMode, readinessOf } from "../../health/readiness.ts";
import { findModel, modelConfig, modelMetadata, serverMetadata } from "../../metadata/service.ts";
import type { RequestBook } from "../../stats/request-book.ts";
import { allStatistics, modelStatistics } from "../../stats/service.ts";
import { GRPCInferenceService } from "../gen/grpc_service_pb.ts";
import { DataType } from "../gen/model_config_pb.ts";
import { type UnaryHandler, unary } from "../unary.ts";

const m = GRPCInferenceService.method;

/** An empty proto3 string is "not given". */
function version(v: string): string | undefined {
  return v === "" ? undefined : v;
}

/**
 * Health, metadata, configuration and statistics: the REST answers' content, as messages.
 * ServerReady follows the same rule as REST's /v2/health/ready (`readiness`, strict by default).
 */
export function serverInfoHandlers(
  registry: ModelRegistryView,
  book?: RequestBook,
  readiness: ReadinessMode = "strict",
): Record<string, UnaryHandler> {
  return {
    ServerLive: unary(m.serverLive, () => ({ live: registry.isLive() })),
    ServerReady: unary(m.serverReady, () => ({ ready: readinessOf(registry, readiness).ready })),
    ModelReady: unary(m.modelReady, (r) => ({ ready: findModel(registry, r.name, version(r.version)).ready() })),
    ServerMetadata: unary(m.serverMetadata, () => {
      const info = serverMetadata(registry);
      return { name: info.name, version: info.version, extensions: info.extensions };
    }),
    ModelMetadata: unary(m.modelMetadata, (r) => {
      const meta = modelMetadata(findModel(registry, r.name, version(r.version)));
      const tensor = (t: { name: string; datatype: string; shape: number[] }) => ({
        name: t.name,
        datatype: t.datatype,
        shape: t.shape.map(BigInt),
      });
      return {
        name: meta.name,
        versions: meta.versions,
        platform: meta.platform,
        inputs: meta.inputs.map(tensor),
        outputs: meta.outputs.map(tensor),
      };
    }),
    ModelConfig: unary(m.modelConfig, (r) => {
      const config = modelConfig(findModel(registry, r.name, version(r.version)));
      const tensor = (t: { name: string; data_type: string; dims: number[] }) => ({
        name: t.name,
        dataType: DataType[t.data_type as keyof typeof DataType] ?? DataType.TYPE_INVALID,
        dims: t.dims.map(BigInt),
      });
      const versions = config.version_policy.specific.versions.filter((v) => /^\d+$/.test(v)).map(BigInt);
      return {
        config: {
          name: config.name,
          platform: config.platform,
          backend: config.backend,
          maxBatchSize: config.max_batch_size,
          input: config.input.map(tensor),
          output: config.output.map(tensor),
          versionPolicy: { policyChoice: { case: "specific" as const, value: { versions } } },
        },
      };
    }),
    ModelStatistics: unary(m.modelStatistics, (r) => {
      const stats =
        r.name === ""
          ? allStatistics(registry, book).model_stats
          : [modelStatistics(findModel(registry, r.name, version(r.version)), book)];
      return { modelStats: stats.map(statisticsMessage) };
    }),
  };
}

type Stats = ReturnType<typeof modelStatistics>;

function duration(d: { count: number; ns: number }) {
  return { count: BigInt(Math.round(d.count)), ns: BigInt(Math.round(d.ns)) };
}

function statisticsMessage(s: Stats) {
  const i = s.inference_stats;
  return {
    name: s.name,
    version: s.version,
    lastInference: BigInt(Math.round(s.last_inference)),
    inferenceCount: BigInt(s.inference_count),
    executionCount: BigInt(s.execution_count),
    inferenceStats: {
      success: duration(i.success),
      fail: duration(i.fail),
      queue: duration(i.queue),
      computeInput: duration(i.compute_input),
      computeInfer: duration(i.compute_infer),
      computeOutput: duration(i.compute_output),
      cacheHit: duration(i.cache_hit),
      cacheMiss: duration(i.cache_miss),
    },
    batchStats: s.batch_stats.map((b) => ({
      batchSize: BigInt(b.batch_size),
      computeInput: duration(b.compute_input),
      computeInfer: duration(b.compute_infer),
      computeOutput: duration(b.compute_output),
    })),
  };
}
