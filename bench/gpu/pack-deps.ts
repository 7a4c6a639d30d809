/**
 * Packs what the benchmarks need from node_modules into tmp/bench-deps.tar.xz (gitignored), so
 * the device command can carry it next to .device/ within the 64 MiB limit: the runtime
 * dependency closure of the workspace packages (typebox, drizzle-orm, elysia, prom-client and
 * their dependencies) plus the node_modules/@xlaserve links. No dev tools (typescript, biome,
 * the bun npm package: the device gets bun from .device/bun.xz).
 *
 *   bun bench/gpu/pack-deps.ts            (run here, before the device call)
 *
 * bench/gpu/run-all.sh unpacks it into the repository root when node_modules lacks them.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..", "..");
const nm = join(root, "node_modules");
const workspaceDirs = ["packages", "apps"].flatMap((d) =>
  readdirSync(join(root, d))
    .map((x) => join(root, d, x))
    .filter((p) => existsSync(join(p, "package.json"))),
);

interface Pkg {
  name?: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}
const read = (p: string): Pkg => JSON.parse(readFileSync(p, "utf8")) as Pkg;

/** Peer dependencies that only type-check (never loaded at run time). */
const DEV_ONLY = /^(typescript|bun|bun-types|@types\/.*)$/;
const needed = new Set<string>();
const queue: { name: string; from: string }[] = [];
for (const dir of workspaceDirs) {
  const pkg = read(join(dir, "package.json"));
  for (const dep of Object.keys({ ...pkg.dependencies })) queue.push({ name: dep, from: dir });
}
while (queue.length) {
  const { name } = queue.shift() as { name: string; from: string };
  if (name.startsWith("@xlaserve/") || needed.has(name) || DEV_ONLY.test(name)) continue;
  const dir = join(nm, name);
  if (!existsSync(join(dir, "package.json"))) {
    // optional or peer dependency that is not installed: nothing to carry
    continue;
  }
  needed.add(name);
  const pkg = read(join(dir, "package.json"));
  for (const dep of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies })) {
    queue.push({ name: dep, from: name });
  }
}
const paths = [...needed].sort().map((n) => join("node_modules", n));
paths.push("node_modules/@xlaserve");
mkdirSync(join(root, "tmp"), { recursive: true });
const out = join(root, "tmp", "bench-deps.tar.xz");
writeFileSync(join(root, "tmp", "bench-deps.list"), `${paths.join("\n")}\n`);
execFileSync("tar", ["-cJf", out, "-C", root, ...paths], {
  stdio: "inherit",
  env: { ...process.env, XZ_OPT: "-6 -T2" },
});
const size = statSync(out).size;
console.log(`packed ${paths.length} paths (${[...needed].join(", ")}) into ${out}: ${(size / 2 ** 20).toFixed(1)} MiB`);
