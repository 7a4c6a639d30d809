import { closeSync, existsSync, openSync, readdirSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { type FaultRepo, type SuiteContext, freshRepo, started } from "./context.ts";
import { spawnWorker } from "./worker-process.ts";

/** A warm repository: its programs compiled and stored once. */
export async function warmRepo(ctx: SuiteContext): Promise<FaultRepo> {
  const repo = freshRepo(ctx);
  const w = await started(spawnWorker(repo));
  await w.stop();
  return repo;
}

/** Every file under `dir` (none if it is missing). */
export function cacheFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

/** `count` random bytes of the file overwritten in place. */
export function flipBytes(path: string, random: () => number, count: number): void {
  const size = statSync(path).size;
  if (size === 0) return;
  const fd = openSync(path, "r+");
  try {
    for (let i = 0; i < count; i++) {
      const at = Math.floor(random() * size);
      writeSync(fd, new Uint8Array([Math.floor(random() * 256)]), 0, 1, at);
    }
  } finally {
    closeSync(fd);
  }
}
