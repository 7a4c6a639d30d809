import type { ServerApp } from "./app.ts";

export interface ListenOptions {
  /** Interface to bind; 127.0.0.1 unless the operator opens it up. */
  readonly host: string;
  /** 0 picks a free port (tests, benches). */
  readonly port: number;
  /**
   * Bind with SO_REUSEPORT, so that the worker's other HTTP threads can bind the same port and the
   * kernel spreads connections over them.
   */
  readonly reusePort?: boolean;
}

export interface RunningServer {
  /** http://host:port of the bound socket (the real port when 0 was asked for). */
  readonly url: string;
  readonly port: number;
  /** Requests being answered now. */
  readonly pendingRequests: number;
  /** Stops accepting connections; with `force`, also closes in-flight ones. */
  stop(force?: boolean): Promise<void>;
}

/** Binds the app with Bun.serve (through Elysia) and reports where it listens. */
export function startServer(app: ServerApp, options: ListenOptions): RunningServer {
  app.listen({ hostname: options.host, port: options.port, reusePort: options.reusePort ?? false });
  const server = app.server;
  if (!server) throw new Error(`the HTTP server did not start on ${options.host}:${options.port}`);
  const port = server.port as number;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    port,
    get pendingRequests() {
      return server.pendingRequests;
    },
    stop: async (force = false) => {
      await app.stop(force);
    },
  };
}
