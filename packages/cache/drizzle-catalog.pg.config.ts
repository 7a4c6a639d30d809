import { defineConfig } from "drizzle-kit";

// The fleet catalog in PostgreSQL: `bunx drizzle-kit generate --config drizzle-catalog.pg.config.ts`.
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/fleet/catalog-tables.pg.ts",
  out: "./drizzle-catalog/pg",
});
