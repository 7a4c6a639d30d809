import { dlopen } from "bun:ffi";
import { readFileSync } from "node:fs";

/**
 * Mapping pages in ahead of use. A process's first program load touches megabytes the process has
 * never touched (the plugin's parser and printers, fresh heap), one minor page fault per 4 KiB
 * page, and each costs microseconds on a virtual machine; later loads reuse all of it. Asking
 * the kernel to map them in one call (madvise MADV_POPULATE_READ / _WRITE, Linux 5.14+) is far
 * cheaper than faulting them one at a time. Where the call is refused (older kernels), nothing
 * changes but the pages fault as before.
 */
const MADV_POPULATE_READ = 22;
const M_TRIM_THRESHOLD = -1;

type Libc = ReturnType<typeof openLibc>;
let opened: Libc | null | undefined;
function openLibc() {
  return dlopen("libc.so.6", {
    madvise: { args: ["ptr", "u64", "i32"], returns: "i32" },
    malloc: { args: ["u64"], returns: "ptr" },
    free: { args: ["ptr"], returns: "void" },
    memset: { args: ["ptr", "i32", "u64"], returns: "ptr" },
    mallopt: { args: ["i32", "i32"], returns: "i32" },
  }).symbols;
}
function libc(): Libc | null {
  if (opened === undefined) {
    try {
      opened = openLibc();
    } catch {
      opened = null; // not glibc: nothing to do
    }
  }
  return opened;
}

export interface PrefaultReport {
  readonly mappings: number;
  readonly bytes: number;
  readonly refused: number;
}

/** Maps in every executable file mapping whose path `select` accepts (see /proc/self/maps). */
export function prefaultMappings(select: (path: string) => boolean): PrefaultReport {
  const lib = libc();
  let mappings = 0;
  let bytes = 0;
  let refused = 0;
  if (!lib) return { mappings, bytes, refused };
  for (const line of readFileSync("/proc/self/maps", "utf8").split("\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (!m || !(m[3] as string).includes("x") || !select((m[4] as string).trim())) continue;
    const start = Number.parseInt(m[1] as string, 16);
    const length = Number.parseInt(m[2] as string, 16) - start;
    mappings++;
    if (lib.madvise(start as never, length, MADV_POPULATE_READ) === 0) bytes += length;
    else refused++;
  }
  return { mappings, bytes, refused };
}

/**
 * Touches `bytes` of this thread's malloc arena in 64 KiB blocks (under glibc's mmap threshold,
 * so they come from the arena) and frees them, with trimming off, so the arena keeps the pages
 * mapped for the allocations to come.
 */
export function prefaultHeap(bytes: number): { bytes: number } {
  const lib = libc();
  if (!lib) return { bytes: 0 };
  lib.mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const block = 64 << 10;
  const blocks: number[] = [];
  for (let done = 0; done < bytes; done += block) {
    const p = lib.malloc(block) as number | null;
    if (!p) break;
    lib.memset(p as never, 0, block);
    blocks.push(p);
  }
  for (const p of blocks) lib.free(p as never);
  return { bytes: blocks.length * block };
}
