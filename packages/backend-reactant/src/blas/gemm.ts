/**
 * GEMM entry point for the kernels: OpenBLAS when it loads, the TypeScript fallback otherwise
 * (with one warning per process). A, B and C must all be Float32Array or all Float64Array.
 */
import { type Pointer, ptr } from "bun:ffi";
import { XlaserveError } from "@xlaserve/core";
import { fallbackGemm } from "./fallback-gemm.ts";
import type { GemmCall } from "./gemm-call.ts";
import { type LoadedBlas, loadOpenBlas } from "./library.ts";
import { SMALL_GEMM_LIMIT, smallGemm } from "./small-gemm.ts";

const CBLAS_ROW_MAJOR = 101;
const CBLAS_NO_TRANS = 111;
const CBLAS_TRANS = 112;

let loaded: LoadedBlas | null | undefined;
let loadFailures: readonly string[] = [];
let forceFallback = false;
let warned = false;

function blas(): LoadedBlas | null {
  if (loaded === undefined) {
    const result = loadOpenBlas();
    loaded = result.blas;
    loadFailures = result.failures;
  }
  return forceFallback ? null : loaded;
}

function warnOnce(): void {
  if (warned) return;
  warned = true;
  console.warn(
    `xlaserve: OpenBLAS not found, using the slower TypeScript GEMM (install libopenblas0-pthread or set XLASERVE_BLAS_LIBRARY). Tried: ${loadFailures.join("; ") || "nothing"}`,
  );
}

/**
 * The address of a view's first element. Touching `.buffer` first matters: JavaScriptCore
 * keeps small typed arrays in movable storage until their buffer is materialised, so a
 * pointer taken before that could go stale under C.
 */
function address(view: Float32Array | Float64Array, elementOffset: number): Pointer {
  void view.buffer;
  return ptr(view, elementOffset * view.BYTES_PER_ELEMENT);
}

function checkBounds(
  name: string,
  data: Float32Array | Float64Array,
  offset: number,
  rows: number,
  cols: number,
  ld: number,
) {
  if (rows === 0 || cols === 0) return;
  if (ld < Math.max(1, cols) || offset < 0 || offset + (rows - 1) * ld + cols > data.length) {
    throw new XlaserveError(
      "INTERNAL",
      `GEMM operand ${name} (${rows}x${cols}, ld ${ld}, offset ${offset}) exceeds its ${data.length} elements`,
    );
  }
}

/** C (+)= op(A) * op(B), row-major. See GemmCall for the fields. */
export function gemm(call: GemmCall): void {
  const { m, n, k } = call;
  const isF32 = call.a instanceof Float32Array;
  if (call.b instanceof Float32Array !== isF32 || call.c instanceof Float32Array !== isF32) {
    throw new XlaserveError("INTERNAL", "GEMM operands must share one float type (all f32 or all f64)");
  }
  checkBounds("A", call.a, call.aOffset, call.transA ? k : m, call.transA ? m : k, call.lda);
  checkBounds("B", call.b, call.bOffset, call.transB ? n : k, call.transB ? k : n, call.ldb);
  checkBounds("C", call.c, call.cOffset, m, n, call.ldc);
  if (m === 0 || n === 0) return;
  if (k === 0) {
    if (!call.accumulate)
      for (let i = 0; i < m; i++) call.c.fill(0, call.cOffset + i * call.ldc, call.cOffset + i * call.ldc + n);
    return;
  }
  if (m * n * k <= SMALL_GEMM_LIMIT) {
    smallGemm(call);
    return;
  }
  const library = blas();
  if (!library) {
    if (!forceFallback) warnOnce();
    fallbackGemm(call);
    return;
  }
  const beta = call.accumulate ? 1 : 0;
  const gemmFn = isF32 ? library.symbols.cblas_sgemm : library.symbols.cblas_dgemm;
  gemmFn(
    CBLAS_ROW_MAJOR,
    call.transA ? CBLAS_TRANS : CBLAS_NO_TRANS,
    call.transB ? CBLAS_TRANS : CBLAS_NO_TRANS,
    m,
    n,
    k,
    1,
    address(call.a, call.aOffset),
    call.lda,
    address(call.b, call.bOffset),
    call.ldb,
    beta,
    address(call.c, call.cOffset),
    call.ldc,
  );
}

export interface BlasStatus {
  /** The library in use, or null when the fallback runs. */
  readonly library: string | null;
  /** OPENBLAS_CORETYPE chosen from the CPU flags, or null when OpenBLAS chose itself. */
  readonly coreType: string | null;
  readonly threads: number;
  readonly failures: readonly string[];
}

export function blasStatus(): BlasStatus {
  const library = blas();
  return {
    library: library?.path ?? null,
    coreType: library?.coreType ?? null,
    threads: library ? library.symbols.openblas_get_num_threads() : 1,
    failures: loadFailures,
  };
}

/** Forces the TypeScript GEMM even when OpenBLAS loaded (tests and benchmarks compare the two). */
export function setForceFallbackGemm(force: boolean): void {
  forceFallback = force;
}

/** Sets OpenBLAS's thread count; no effect on the fallback. */
export function setBlasThreads(threads: number): void {
  blas()?.symbols.openblas_set_num_threads(Math.max(1, Math.floor(threads)));
}
