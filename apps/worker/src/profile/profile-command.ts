import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { profileBundle } from "@xlaserve/backend-reactant";

export const PROFILE_HELP = `xlaserve profile: where one program's time goes on the CPU engine

Usage: xlaserve profile BUNDLE [--batch N] [--runs N] [--top N] [--json]

Runs the bundle's program for one batch size on the CPU engine (after one warm-up run) and prints
the exclusive time per op kind and the slowest ops, each with its line in the module: a while,
case or reduce is charged only for what its body's ops did not take, and a fused elementwise
chain counts as one op. Inputs are the bundle's reference.safetensors inputs where it has them,
else zeros.

  --batch N   compiled batch size to run (default: the smallest)
  --runs N    timed runs (default 5)
  --top N     ops listed one by one (default 15)
  --json      the whole profile as JSON
`;

/** `xlaserve profile ...`: exit status 0, or 2 for bad arguments. */
export async function runProfile(argv: readonly string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${PROFILE_HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(PROFILE_HELP);
    return 0;
  }
  const [bundle, extra] = positionals;
  if (!bundle || extra !== undefined) {
    process.stderr.write(`xlaserve profile takes one bundle folder\n\n${PROFILE_HELP}`);
    return 2;
  }
  const counts: Record<string, number | undefined> = {};
  for (const name of ["batch", "runs", "top"] as const) {
    const v = values[name];
    if (v === undefined) continue;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) {
      process.stderr.write(`--${name} must be a positive integer, got "${v}"\n`);
      return 2;
    }
    counts[name] = n;
  }
  const p = await profileBundle(resolve(bundle), {
    ...(counts.batch ? { batch: counts.batch } : {}),
    ...(counts.runs ? { runs: counts.runs } : {}),
    ...(counts.top ? { top: counts.top } : {}),
  });
  if (values.json) {
    const { text: _text, ...rest } = p;
    process.stdout.write(`${JSON.stringify(rest, null, 2)}\n`);
  } else {
    process.stdout.write(
      `${p.model} ${p.module} (batch ${p.batch}, ${p.inputs} inputs) on the CPU engine\n${p.text}\n`,
    );
  }
  return 0;
}

const OPTIONS = {
  batch: { type: "string" },
  runs: { type: "string" },
  top: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;
