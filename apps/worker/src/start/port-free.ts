import { XlaserveError } from "@xlaserve/core";

/** Throws a clear error when something already listens on host:port (`what`: which port it is, if not the REST one). */
export function assertPortFree(host: string, port: number, what?: string): void {
  try {
    Bun.serve({ hostname: host, port, fetch: () => new Response(null, { status: 503 }) }).stop(true);
  } catch (err) {
    const which = what ? ` (${what})` : "";
    throw new XlaserveError("CONFIG_INVALID", `cannot listen on ${host}:${port}${which}: ${(err as Error).message}`);
  }
}
