/**
 * Diagnostic: how fast each CPU of this machine runs the same work, in `sweeps` passes over the
 * CPUs. On a virtual machine a vCPU whose physical core is shared runs visibly slower, and the
 * latency of a launch-bound GPU program, or the time of a program load, follows the CPU of the
 * thread doing it. This process moves its own main thread to each CPU in turn (taskset -p) and
 * times two gauges there: sha256 of 16 MiB, and JSON round trips of a nested object (branchy,
 * allocating work like a program load's). Prints one JSON line; with --pick N it also names the N
 * fastest and the N slowest CPUs by the JSON gauge (for `taskset -c`).
 *
 *   bun bench/gpu/diag/cpu-speeds.ts [sweeps] [--pick N]
 */
import { availableParallelism } from "node:os";
import { allowedCpus, currentCpu } from "../../lib/current-cpu.ts";
import { median } from "../../lib/stats.ts";

const args = process.argv.slice(2);
const pickAt = args.indexOf("--pick");
const pick = pickAt >= 0 ? Number(args[pickAt + 1]) : 0;
const sweeps = Number(args.find((a, i) => /^\d+$/.test(a) && i !== pickAt + 1) ?? 3);
const cpuList = allowedCpus() ?? Array.from({ length: availableParallelism() }, (_, k) => k);

const block = new Uint8Array(16 << 20).map((_, i) => i * 31);
const tree = {
  items: Array.from({ length: 2000 }, (_, i) => ({ id: i, name: `op.${i}`, dims: [i % 7, 3, 224], meta: { k: i } })),
};
function time(work: () => void): number {
  const t0 = performance.now();
  work();
  return performance.now() - t0;
}
const sha = () => new Bun.CryptoHasher("sha256").update(block).digest();
const json = () => {
  for (let i = 0; i < 10; i++) JSON.parse(JSON.stringify(tree));
};

const perCpu: Record<number, { sha256Ms: number[]; jsonMs: number[]; ranOn: (number | null)[] }> = {};
for (let s = 0; s < sweeps; s++) {
  for (const cpu of cpuList) {
    const moved = Bun.spawnSync(["taskset", "-pc", String(cpu), String(process.pid)], {
      stdout: "ignore",
      stderr: "pipe",
    });
    if (moved.exitCode !== 0) {
      console.log(JSON.stringify({ error: `taskset failed: ${moved.stderr.toString().trim()}` }));
      process.exit(1);
    }
    const row = perCpu[cpu] ?? { sha256Ms: [], jsonMs: [], ranOn: [] };
    perCpu[cpu] = row;
    sha(); // settle on the CPU before timing
    row.sha256Ms.push(+Math.min(time(sha), time(sha)).toFixed(3));
    row.jsonMs.push(+Math.min(time(json), time(json)).toFixed(3));
    row.ranOn.push(currentCpu());
  }
}
const summary = Object.entries(perCpu).map(([cpu, r]) => ({
  cpu: Number(cpu),
  sha256Ms: median(r.sha256Ms),
  jsonMs: median(r.jsonMs),
  sweeps: r,
}));
const byJson = [...summary].sort((a, b) => a.jsonMs - b.jsonMs);
const fastest = byJson[0]!.jsonMs;
console.log(
  JSON.stringify({
    cpus: cpuList.length,
    sweeps,
    slowestToFastestJson: byJson[byJson.length - 1]!.jsonMs / fastest,
    slowestToFastestSha256: Math.max(...summary.map((x) => x.sha256Ms)) / Math.min(...summary.map((x) => x.sha256Ms)),
    picked: pick > 0 ? byJson.slice(0, pick).map((x) => x.cpu) : null,
    slowest: pick > 0 ? byJson.slice(-pick).map((x) => x.cpu) : null,
    perCpu: summary,
  }),
);
