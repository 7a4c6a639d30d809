import { expect, test } from "bun:test";
import { getTableColumns } from "drizzle-orm";
import { getTableConfig as pgConfig } from "drizzle-orm/pg-core";
import { getTableConfig as liteConfig } from "drizzle-orm/sqlite-core";
import { liteCatalogSchema, pgCatalogSchema } from "../src/fleet/catalog-schema.ts";

/** SQL types that hold the same values in the two dialects. */
const SAME: Record<string, string> = { text: "text", integer: "bigint", real: "double precision" };

test("the catalog's SQLite and PostgreSQL tables declare the same columns", () => {
  for (const name of Object.keys(liteCatalogSchema) as (keyof typeof liteCatalogSchema)[]) {
    const lite = liteConfig(liteCatalogSchema[name]);
    const pg = pgConfig(pgCatalogSchema[name]);
    expect(pg.name).toBe(lite.name);
    // The catalog code addresses columns by these names in both dialects.
    expect(Object.keys(getTableColumns(pgCatalogSchema[name]))).toEqual(
      Object.keys(getTableColumns(liteCatalogSchema[name])),
    );
    const describe = (cols: typeof lite.columns | typeof pg.columns, map: (t: string) => string) =>
      cols.map((c) => ({ name: c.name, key: c.primary, notNull: c.notNull, type: map(c.getSQLType()) }));
    expect(describe(pg.columns, (t) => t)).toEqual(describe(lite.columns, (t) => SAME[t] ?? `unmapped ${t}`));
  }
});
