// What drizzle-kit reads for the SQLite catalog migrations (it takes every table a file exports).
export { liteCompiles, liteLeases, liteProbeFigures, litePrograms } from "./catalog-schema.ts";
