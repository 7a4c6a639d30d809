/** Command-line flags for the benchmarks (node:util parseArgs with a usage message on error). */
import { parseArgs } from "node:util";

export type FlagSpec = Record<string, { type: "string" | "boolean"; default?: string | boolean; short?: string }>;

export function parseFlags<T extends FlagSpec>(
  usage: string,
  spec: T,
  argv: readonly string[] = process.argv.slice(2),
): { values: Record<keyof T, string | boolean | undefined>; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: { ...spec, help: { type: "boolean", short: "h" } } as FlagSpec,
      allowPositionals: true,
      strict: true,
    });
    if ((values as Record<string, unknown>).help) {
      console.log(usage.trim());
      process.exit(0);
    }
    return { values: values as unknown as Record<keyof T, string | boolean | undefined>, positionals };
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n\n${usage.trim()}`);
    process.exit(2);
  }
}

export function intFlag(v: string | boolean | undefined, fallback: number, name: string): number {
  if (v === undefined || v === false) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`--${name} expects a non-negative integer, got ${String(v)}`);
    process.exit(2);
  }
  return n;
}

export function listFlag(v: string | boolean | undefined, fallback: string[]): string[] {
  if (typeof v !== "string" || v.trim() === "") return fallback;
  return v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}
