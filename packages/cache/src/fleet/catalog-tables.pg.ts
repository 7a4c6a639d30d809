// What drizzle-kit reads for the PostgreSQL catalog migrations (it takes every table a file exports).
export { pgCompiles, pgLeases, pgProbeFigures, pgPrograms } from "./catalog-schema.ts";
