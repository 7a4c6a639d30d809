import { spawnSync } from "node:child_process";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const SCRIPT = join(ROOT, "scripts", "postgres.mjs");

let cached: { url: string } | { skip: string } | undefined;

/**
 * The repository's private PostgreSQL cluster (scripts/postgres.mjs: Debian's package,
 * installed and started by the set-up script; started again here if it is down). Returns the
 * URL of its `xlaserve` database, or why there is none, for tests to skip saying so.
 */
export function repoPostgres(): { url: string } | { skip: string } {
  if (cached) return cached;
  const r = spawnSync("node", [SCRIPT, "ensure"], { encoding: "utf8", timeout: 120_000 });
  const url = r.stdout?.trim();
  cached =
    r.status === 0 && url
      ? { url }
      : { skip: `no PostgreSQL: ${(r.stderr || r.error?.message || "").trim().split("\n").at(-1)}` };
  if ("skip" in cached) console.warn(`[skip] ${cached.skip}`);
  return cached;
}

/** A fresh database on the cluster for one test file; dropped by the disposer. */
export async function freshDatabase(
  url: string,
  tag: string,
): Promise<{ url: string; [Symbol.asyncDispose](): Promise<void> }> {
  const name = `xlaserve_${tag}_${crypto.randomUUID().slice(0, 8)}`.replace(/[^a-z0-9_]/g, "_");
  const admin = new Bun.SQL(url, { max: 1 });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.close();
  const dbUrl = url.replace(/\/[^/]*$/, `/${name}`);
  return {
    url: dbUrl,
    async [Symbol.asyncDispose]() {
      const a = new Bun.SQL(url, { max: 1 });
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await a.close();
    },
  };
}
