import { defineConfig } from "drizzle-kit";

// `bunx drizzle-kit generate` (run in packages/cache) writes the SQL migrations the cache
// applies at open. The database location is chosen at runtime (the worker's state directory),
// so no dbCredentials here: generate needs only the schema.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./drizzle",
});
