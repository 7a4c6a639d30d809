import type { CaseResult } from "./run-file.ts";

export interface Totals {
  passed: number;
  failed: number;
  unsupported: number;
}

export function totals(results: readonly CaseResult[]): Totals {
  const t: Totals = { passed: 0, failed: 0, unsupported: 0 };
  for (const r of results) t[r.status]++;
  return t;
}

/**
 * The report: one line per op family, then each failure with its file and first mismatch, and
 * as the last line exactly `conformance: <P> passed, <F> failed, <U> unsupported`.
 */
export function formatReport(results: readonly CaseResult[], showUnsupported = false): string {
  const families = new Map<string, CaseResult[]>();
  for (const r of results) {
    const list = families.get(r.family) ?? [];
    list.push(r);
    families.set(r.family, list);
  }
  const lines: string[] = [];
  for (const [family, list] of [...families].sort((a, b) => a[0].localeCompare(b[0]))) {
    const t = totals(list);
    lines.push(`${family}: ${t.passed} passed, ${t.failed} failed, ${t.unsupported} unsupported`);
  }
  const failures = results.filter((r) => r.status === "failed");
  if (failures.length > 0) {
    lines.push("", "failures:");
    for (const r of failures) lines.push(`  ${r.file}${r.func ? ` @${r.func}` : ""}: ${r.detail ?? ""}`);
  }
  if (showUnsupported) {
    const unsupported = results.filter((r) => r.status === "unsupported");
    if (unsupported.length > 0) lines.push("", "unsupported:");
    for (const r of unsupported) lines.push(`  ${r.file}${r.func ? ` @${r.func}` : ""}: ${r.detail ?? ""}`);
  }
  const t = totals(results);
  lines.push(`conformance: ${t.passed} passed, ${t.failed} failed, ${t.unsupported} unsupported`);
  return lines.join("\n");
}
