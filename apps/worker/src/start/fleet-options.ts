import { XlaserveError } from "@xlaserve/core";
import type { Config } from "@xlaserve/core/config/schema.ts";
import type { FleetOptions } from "@xlaserve/cache";

/**
 * The fleet's shared program cache from the configuration: on when cache.store is set. A
 * PostgreSQL catalog without a store is a mistake (every worker would compile anyway), so it is
 * refused, naming both settings.
 */
export function fleetOptions(config: Config): FleetOptions | undefined {
  const { catalog, store, leaseMs } = config.cache;
  if (!store) {
    if (catalog !== "sqlite") {
      throw new XlaserveError(
        "CONFIG_INVALID",
        "cache.catalog is a PostgreSQL URL but cache.store is not set: a fleet needs both (a shared directory or s3://bucket/prefix for the programs)",
      );
    }
    return undefined;
  }
  return { catalog, store, leaseMs };
}
