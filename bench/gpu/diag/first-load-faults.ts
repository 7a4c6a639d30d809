/**
 * Diagnostic: where a process's first program load spends its extra time. A first load of
 * ResNet-50 b1 takes about 6,000-7,000 minor page faults against about 33 for every later load,
 * and 12-14 ms more (bench/results/pjrt-load-faults-*). This process (one variant, fresh) reads
 * /proc/self/smaps before and after its first and second loads and reports which mappings grew
 * (the plugin's code, other libraries' code, the heap, anonymous memory), each load's ms and
 * minor faults. With a variant, it first makes the kernel map pages in advance with
 * madvise(MADV_POPULATE_READ / MADV_POPULATE_WRITE), timed:
 *   none         nothing
 *   plugin-code  the plugin's executable mappings
 *   all-code     every executable file mapping
 *   heap         64 MiB malloc'ed, written and freed on this thread (glibc keeps it for reuse)
 *   code+heap    plugin-code and heap
 * and two variants that load on a loader thread (loadThreads 1), waiting for it to open the plugin:
 *   thread           no prefault
 *   thread+prefault  the thread maps in the plugin's code and 32 MiB of its arena when it starts
 *
 *   bun bench/gpu/diag/first-load-faults.ts <plugin.so> <program.pjrt> <variant>
 */
import { readFileSync } from "node:fs";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { prefaultHeap, prefaultMappings } from "../../../packages/backend-pjrt/src/runtime/prefault.ts";

const [pluginPath, programPath, variant = "none"] = process.argv.slice(2);
if (!pluginPath || !programPath) {
  console.error("usage: bun bench/gpu/diag/first-load-faults.ts <plugin.so> <program.pjrt> <variant>");
  process.exit(2);
}

interface Mapping {
  name: string;
  perms: string;
  rssKb: number;
}

function mappings(): Mapping[] {
  const out: Mapping[] = [];
  let current: Mapping | null = null;
  for (const line of readFileSync("/proc/self/smaps", "utf8").split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      current = { perms: head[1] as string, name: (head[2] as string).trim(), rssKb: 0 };
      out.push(current);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && current) current.rssKb = Number(rss[1]);
  }
  return out;
}

const plugin = pluginPath.replace(/^.*\//, "");
function groups(): Record<string, number> {
  const g: Record<string, number> = { pluginCode: 0, pluginData: 0, otherCode: 0, otherFileData: 0, heap: 0, anon: 0 };
  for (const m of mappings()) {
    const isCode = m.perms.includes("x");
    const key =
      m.name === "[heap]"
        ? "heap"
        : m.name === "" || m.name.startsWith("[")
          ? "anon"
          : m.name.endsWith(plugin)
            ? isCode
              ? "pluginCode"
              : "pluginData"
            : isCode
              ? "otherCode"
              : "otherFileData";
    g[key] = (g[key] ?? 0) + m.rssKb;
  }
  return g;
}
const diff = (a: Record<string, number>, b: Record<string, number>) =>
  Object.fromEntries(Object.keys(b).map((k) => [k, (b[k] ?? 0) - (a[k] ?? 0)]));

const onThread = variant.startsWith("thread");
const backend = createPjrtBackend({
  pluginPath,
  isolateCompile: false,
  loadThreads: onThread ? 1 : 0,
  prefaultLoads: variant === "thread+prefault",
});
const bytes = new Uint8Array(await Bun.file(programPath).arrayBuffer());
const r0 = performance.now();
await backend.loadersReady();
const loaderWaitMs = performance.now() - r0;
const t0 = performance.now();
const prefault: Record<string, unknown> = {};
if (variant === "plugin-code" || variant === "code+heap") prefault.code = prefaultMappings((m) => m.endsWith(plugin));
if (variant === "all-code") prefault.code = prefaultMappings((m) => m.startsWith("/"));
if (variant === "heap" || variant === "code+heap") prefault.heap = prefaultHeap(64 << 20);
const prefaultMs = performance.now() - t0;

const loads: Record<string, unknown>[] = [];
for (let i = 0; i < 3; i++) {
  const before = groups();
  const f0 = process.resourceUsage().minorPageFault;
  const l0 = performance.now();
  const exe = await backend.deserialize(bytes, {});
  const ms = performance.now() - l0;
  const faults = process.resourceUsage().minorPageFault - f0;
  loads.push({ ms: +ms.toFixed(2), faults, rssGrowthKb: diff(before, groups()) });
  exe.dispose();
}
console.log(
  JSON.stringify({
    variant,
    startupMs: backend.startupMs,
    loaderWaitMs: +loaderWaitMs.toFixed(2),
    loaderReports: backend.loaderReports,
    prefaultMs: +prefaultMs.toFixed(2),
    prefault,
    loads,
  }),
);
await backend.dispose();
