import type { Logger } from "@xlaserve/core";
import type { ModelRegistryView } from "../../contract.ts";
import { requireBearer } from "../../repository/auth.ts";
import { changeModel, repositoryIndex } from "../../repository/service.ts";
import { GRPCInferenceService } from "../gen/grpc_service_pb.ts";
import type { UnaryCall } from "../transport/calls.ts";
import { type UnaryHandler, unary } from "../unary.ts";

const m = GRPCInferenceService.method;

function authorization(call: UnaryCall): string | null {
  return call.header("authorization") ?? null;
}

/**
 * The model repository extension. Load and unload need the bearer token in the call's
 * `authorization` metadata, as REST needs it in its header (PERMISSION_DENIED when none is
 * configured, UNAUTHENTICATED when it is missing or wrong).
 */
export function repositoryHandlers(
  registry: ModelRegistryView,
  authToken: string | undefined,
  logger: Logger,
): Record<string, UnaryHandler> {
  return {
    RepositoryIndex: unary(m.repositoryIndex, (r) => ({
      models: repositoryIndex(registry, r.ready).map((e) => ({
        name: e.name,
        version: e.version,
        state: e.state,
        reason: e.reason,
      })),
    })),
    RepositoryModelLoad: unary(m.repositoryModelLoad, async (r, call) => {
      requireBearer(authToken, authorization(call));
      await changeModel(registry, logger, r.modelName, "load", Object.keys(r.parameters));
      return {};
    }),
    RepositoryModelUnload: unary(m.repositoryModelUnload, async (r, call) => {
      requireBearer(authToken, authorization(call));
      await changeModel(registry, logger, r.modelName, "unload", Object.keys(r.parameters));
      return {};
    }),
  };
}
