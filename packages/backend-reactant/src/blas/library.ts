/**
 * Finds and opens OpenBLAS through bun:ffi. The library is optional: when none loads, callers
 * fall back to the TypeScript GEMM (see gemm.ts), so this module never throws on a missing
 * library, it reports null and the reason.
 */
import { dlopen, FFIType } from "bun:ffi";
import { availableParallelism } from "node:os";
import { chooseOpenBlasCore } from "./core-type.ts";
import { configureThreads } from "./thread-policy.ts";

/**
 * Where Debian, Ubuntu, Fedora and Homebrew put the threaded OpenBLAS. The bare soname comes
 * first so the dynamic loader's own search (LD_LIBRARY_PATH, ldconfig) wins when it works.
 */
const SEARCH_LIST = [
  "libopenblas.so.0",
  "/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
  "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
  "/usr/lib/aarch64-linux-gnu/libopenblas.so.0",
  "/usr/lib64/libopenblas.so.0",
  "/usr/lib/libopenblas.so.0",
  "/opt/homebrew/opt/openblas/lib/libopenblas.dylib",
  "/usr/local/opt/openblas/lib/libopenblas.dylib",
];

const SYMBOLS = {
  cblas_sgemm: {
    args: [
      FFIType.i32,
      FFIType.i32,
      FFIType.i32,
      FFIType.i32,
      FFIType.i32,
      FFIType.i32,
      FFIType.f32,
      FFIType.ptr,
      FFIType.i32,
      FFIType.ptr,
      FFIType.i32,
      FFIType.f32,
      FFIType.ptr,
      FFIType.i32,
    ],
    returns: FFIType.void,
  },
  cblas_dgemm: {
    args: [
      FFIType.i32,
      FFIType.i32,
      FFIType.i32,
      FFIType.i32,
      FFIType.i32,
      FFIType.i32,
      FFIType.f64,
      FFIType.ptr,
      FFIType.i32,
      FFIType.ptr,
      FFIType.i32,
      FFIType.f64,
      FFIType.ptr,
      FFIType.i32,
    ],
    returns: FFIType.void,
  },
  openblas_set_num_threads: { args: [FFIType.i32], returns: FFIType.void },
  openblas_get_num_threads: { args: [], returns: FFIType.i32 },
} as const;

type OpenBlasSymbols = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];

export interface LoadedBlas {
  readonly path: string;
  readonly symbols: OpenBlasSymbols;
  /** The OPENBLAS_CORETYPE xlaserve chose, or null when OpenBLAS detected the CPU itself. */
  readonly coreType: string | null;
}

export interface BlasLoadResult {
  readonly blas: LoadedBlas | null;
  /** Every path tried and why it failed; empty when the first one loaded. */
  readonly failures: readonly string[];
}

/** XLASERVE_BLAS_LIBRARY names a library to use instead of the search list; "none" disables BLAS. */
export function candidatePaths(env: Record<string, string | undefined> = process.env): string[] {
  const chosen = env.XLASERVE_BLAS_LIBRARY?.trim();
  if (chosen === "none") return [];
  if (chosen) return [chosen];
  return SEARCH_LIST;
}

/** Threads for BLAS: XLASERVE_BLAS_THREADS, else every core this process may use. */
export function wantedThreads(env: Record<string, string | undefined> = process.env): number {
  const fromEnv = Number.parseInt(env.XLASERVE_BLAS_THREADS ?? "", 10);
  if (Number.isFinite(fromEnv) && fromEnv > 0) return fromEnv;
  return Math.max(1, availableParallelism());
}

export function loadOpenBlas(paths: readonly string[] = candidatePaths()): BlasLoadResult {
  const failures: string[] = [];
  const coreType = paths.length > 0 ? chooseOpenBlasCore() : null;
  for (const path of paths) {
    try {
      const library = dlopen(path, SYMBOLS);
      configureThreads(library.symbols, wantedThreads());
      return { blas: { path, symbols: library.symbols, coreType }, failures };
    } catch (error) {
      failures.push(`${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return { blas: null, failures };
}
