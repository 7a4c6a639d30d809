import { defineConfig } from "drizzle-kit";

// The fleet catalog in SQLite: `bunx drizzle-kit generate --config drizzle-catalog.sqlite.config.ts`.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/fleet/catalog-tables.sqlite.ts",
  out: "./drizzle-catalog/sqlite",
});
