/**
 * Collects one run-all.sh results folder: every benchmark JSON and steps.jsonl into one JSON on
 * stdout (what comes back from the device), or with --text a short readable digest: each step's
 * status, each ratio with both sides, each recorded error.
 *
 *   bun bench/gpu/summarize.ts <results dir> [--text]
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const [dir, flag] = process.argv.slice(2);
if (!dir || !existsSync(dir)) {
  console.error("usage: bun bench/gpu/summarize.ts <results dir> [--text]");
  process.exit(2);
}
const steps = existsSync(join(dir, "steps.jsonl"))
  ? readFileSync(join(dir, "steps.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          return { unparsable: l };
        }
      })
  : [];
const results: Record<string, Record<string, unknown>> = {};
for (const f of readdirSync(dir).sort()) {
  if (!f.endsWith(".json")) continue;
  try {
    results[f] = JSON.parse(readFileSync(join(dir, f), "utf8")) as Record<string, unknown>;
  } catch (err) {
    results[f] = { unparsable: String(err) };
  }
}

// Cross-check: the ResNet-50 b1 program's outputs in the compile-load process and in the fresh
// first-result processes (the same serialized executable, the same reference input).
const crossChecks: Record<string, unknown> = {};
const byName = (prefix: string) => Object.entries(results).find(([f]) => f.startsWith(prefix))?.[1];
const cl = byName("pjrt-compile-load") as
  | { figures?: { programs?: { model: string; batch: number; outputsSha256?: string[] }[] } }
  | undefined;
const fr = byName("first-result") as { figures?: { outputsSha256?: string[] } } | undefined;
const inProcess = cl?.figures?.programs?.find((p) => p.model === "resnet50" && p.batch === 1)?.outputsSha256?.join(",");
const fresh = fr?.figures?.outputsSha256?.[0];
if (inProcess && fresh) crossChecks.resnet50b1OutputsIdenticalInProcessAndFreshProcess = inProcess === fresh;

if (flag !== "--text") {
  console.log(JSON.stringify({ dir, generated: new Date().toISOString(), steps, crossChecks, results }, null, 1));
} else {
  for (const [k, v] of Object.entries(crossChecks)) console.log(`check ${k}: ${v}`);
  for (const s of steps) {
    const status = s.skipped ? `skipped (${s.reason})` : `rc ${s.rc} in ${s.seconds}s${s.timedOut ? " TIMED OUT" : ""}`;
    console.log(`step ${String(s.step).padEnd(14)} ${status}`);
  }
  for (const [file, r] of Object.entries(results)) {
    console.log(`${file}:`);
    const ratios = (r.ratios ?? {}) as Record<
      string,
      {
        value: number | null;
        goal?: string;
        met?: boolean | null;
        numerator: { label: string; value: number | null };
        denominator: { label: string; value: number | null };
      }
    >;
    for (const [k, v] of Object.entries(ratios)) {
      const goal = v.goal ? ` goal ${v.goal} ${v.met === null ? "n/a" : v.met ? "met" : "NOT met"}` : "";
      console.log(`  ${k}: ${v.value ?? "n/a"} (${v.numerator.value} / ${v.denominator.value})${goal}`);
    }
    for (const e of (r.errors ?? []) as { step: string; message: string }[]) {
      console.log(`  ERROR ${e.step}: ${e.message.split("\n")[0]?.slice(0, 200)}`);
    }
  }
}
