import { dlopen } from "bun:ffi";

const PR_SET_PDEATHSIG = 1;
const SIGTERM = 15;

/**
 * A worker started by `xlaserve node` asks the kernel for SIGTERM when its parent dies, however
 * the parent dies (SIGKILL included, which no forwarding survives), so no orphaned worker keeps
 * a GPU or a port. If the parent is already gone by now, the worker exits. Linux only; elsewhere
 * it only checks the parent.
 */
export function stopWithParent(expectedParent: number): void {
  if (process.platform === "linux") {
    try {
      const libc = dlopen("libc.so.6", { prctl: { args: ["i32", "u64", "u64", "u64", "u64"], returns: "i32" } });
      libc.symbols.prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    } catch {
      /* no glibc: the parent check below still catches a parent gone before now */
    }
  }
  if (process.ppid !== expectedParent) {
    console.error(`[worker] the node supervisor (pid ${expectedParent}) is gone; exiting`);
    process.exit(1);
  }
}
