/**
 * OpenBLAS picks its kernels from the CPU model, and under virtualisation it often sees an
 * anonymous "Intel Xeon Processor" and falls back to Prescott (SSE3) kernels, 5-10x slower
 * than the AVX-512 ones the CPU actually has. When the user has not chosen a core type,
 * choose one from the instruction-set flags the kernel reports, and hand it to OpenBLAS
 * through the C environment (Bun's process.env is not what C's getenv reads) before the
 * library loads.
 */
import { readFileSync } from "node:fs";
import { dlopen, FFIType } from "bun:ffi";

/** The best OpenBLAS core type whose instructions are all present in `flags`, or null. */
export function coreTypeForFlags(flags: ReadonlySet<string>): string | null {
  const has = (...names: string[]) => names.every((n) => flags.has(n));
  if (has("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")) return "SkylakeX";
  if (has("avx2", "fma")) return "Haswell";
  return null;
}

function cpuFlags(): Set<string> {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8").match(/^flags\s*:(.*)$/m)?.[1] ?? "";
    return new Set(line.trim().split(/\s+/));
  } catch {
    return new Set();
  }
}

/** Sets OPENBLAS_CORETYPE in the C environment unless the user set it; returns what was chosen. */
export function chooseOpenBlasCore(env: Record<string, string | undefined> = process.env): string | null {
  if (env.OPENBLAS_CORETYPE !== undefined || process.platform !== "linux" || process.arch !== "x64") return null;
  const core = coreTypeForFlags(cpuFlags());
  if (!core) return null;
  try {
    const libc = dlopen("libc.so.6", {
      setenv: { args: [FFIType.cstring, FFIType.cstring, FFIType.i32], returns: FFIType.i32 },
    });
    const encode = (s: string) => Buffer.from(`${s}\0`, "utf8");
    libc.symbols.setenv(encode("OPENBLAS_CORETYPE"), encode(core), 0);
    libc.close();
    return core;
  } catch {
    return null;
  }
}
