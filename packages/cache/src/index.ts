export { ProgramCache, type ProgramCacheOptions } from "./program-cache.ts";
export type {
  BundleWithModules,
  CacheBundle,
  CacheModule,
  CacheOutcome,
  EntryKey,
  GetOrCompileArgs,
  GetOrCompileResult,
} from "./types.ts";
export type { CacheWarning, CacheWarningKind, WarningSink } from "./warnings.ts";
export type { CacheCounters } from "./metrics.ts";
export type { SyncResult } from "./sync-modules.ts";
export type { VerifyReport, VerifyProblem } from "./verify.ts";
export type { PruneReport } from "./prune.ts";
export type { ReconcileReport } from "./reconcile.ts";
export type { CacheEntryRow } from "./db/schema.ts";
export { defaultDbPath, DEFAULT_DB_FILE } from "./db/open.ts";
export { partitionName, canonicalIdentity, identityEquals } from "./partition.ts";
export { entryName, optionsHash } from "./entry-key.ts";
export { encodeEntry, decodeEntry, ENTRY_FORMAT_VERSION, type EntryFacts, type EntryHeader } from "./entry-format.ts";
export { CACHE_DIR, MODULE_HASHES_FILE, cacheDir } from "./layout.ts";
export { moduleHashesPath, readModuleHashes } from "./module-hashes.ts";
export {
  cacheLs,
  cacheVerify,
  cachePrune,
  precompileRepository,
  parseByteSize,
  formatBytes,
  type CacheCommandOptions,
  type PrecompileOptions,
  type PrecompileRow,
  type PrecompileSummary,
} from "./cli/index.ts";
export type { OutStream } from "./cli/out.ts";
export { ProgramFleet, type FleetOptions, type FleetCounters, blobName, programKey } from "./fleet/fleet.ts";
export { Catalog, type LeaseAttempt } from "./fleet/catalog.ts";
export { openCatalogDb, maskUrl, type CatalogConnection, SQLITE_CATALOG_FILE } from "./fleet/catalog-db.ts";
export { openBlobStore, type BlobStore } from "./fleet/blob-store.ts";
export type { CatalogProgram, CatalogCompile } from "./fleet/catalog-schema.ts";
export { verifyFleet, type FleetVerifyReport, type FleetVerifyProblem } from "./fleet/verify-fleet.ts";
