export { cacheLs } from "./ls.ts";
export { cacheVerify } from "./verify.ts";
export { cachePrune } from "./prune.ts";
export {
  precompileRepository,
  type PrecompileOptions,
  type PrecompileRow,
  type PrecompileSummary,
} from "./precompile.ts";
export { parseByteSize, formatBytes } from "./out.ts";
export type { CacheCommandOptions } from "./open.ts";
