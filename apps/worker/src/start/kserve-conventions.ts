/**
 * KServe's conventions for a serving runtime's container, applied as defaults (a config file,
 * XLASERVE_* variables and flags still win). KServe sets STORAGE_URI on a predictor whose model
 * has a storageUri, and its storage initializer downloads the model there to /mnt/models; the
 * container is expected on port 8080 (Knative passes PORT) for REST and 8081 for gRPC (the port
 * named h2c), reachable from outside the pod.
 */
export const KSERVE_MODEL_DIR = "/mnt/models";
export const KSERVE_PORT = 8080;
export const KSERVE_GRPC_PORT = 8081;

export function kserveConventions(
  env: Readonly<Record<string, string | undefined>>,
): { values: Record<string, unknown>; source: string } | undefined {
  if (!env.STORAGE_URI) return undefined;
  const port = env.PORT && /^[0-9]+$/.test(env.PORT) ? Number(env.PORT) : KSERVE_PORT;
  return {
    values: { repository: { path: KSERVE_MODEL_DIR }, server: { host: "0.0.0.0", port, grpcPort: KSERVE_GRPC_PORT } },
    source: `KServe convention (STORAGE_URI is set${env.PORT ? ", PORT" : ""})`,
  };
}
