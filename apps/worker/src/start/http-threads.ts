import type { AbstractBackend, Logger } from "@xlaserve/core";
import { XlaserveError } from "@xlaserve/core";
import type { Config } from "@xlaserve/core/config/schema.ts";

/**
 * The HTTP threads to run. Extra threads pay off only through the models they run themselves,
 * and everything else they relay costs more than it would on the main thread: where they could
 * run nothing (PJRT, the engine kept on the main thread, inline runs off, dynamic batching),
 * the worker serves on one thread and says why. SO_REUSEPORT spreads connections over sockets
 * on Linux only (elsewhere the last socket bound tends to get them all).
 */
export function httpThreadsFor(config: Config, log: Logger, backend: AbstractBackend): number {
  const asked = config.server.httpThreads;
  if (asked <= 1) return asked;
  const why =
    process.platform !== "linux"
      ? `SO_REUSEPORT spreads connections on Linux only (this is ${process.platform})`
      : backend.spawnSpec === undefined
        ? "the engine cannot run models on other threads (PJRT, or the engine on the main thread)"
        : config.placement.inlineMaxUs <= 0
          ? "inline runs are off (XLASERVE_INLINE_MAX_US=0), so no model would run on them"
          : config.concurrency.dynamicBatching
            ? "dynamic batching keeps every run on the engine thread"
            : null;
  if (why === null) return asked;
  log.warn(`server.httpThreads is ${asked}, but the worker serves on one thread: ${why}`, { asked });
  return 1;
}

/** Throws a clear error when something already listens on host:port (`what`: which port it is, if not the REST one). */
export function assertPortFree(host: string, port: number, what?: string): void {
  try {
    Bun.serve({ hostname: host, port, fetch: () => new Response(null, { status: 503 }) }).stop(true);
  } catch (err) {
    const which = what ? ` (${what})` : "";
    throw new XlaserveError("CONFIG_INVALID", `cannot listen on ${host}:${port}${which}: ${(err as Error).message}`);
  }
}
