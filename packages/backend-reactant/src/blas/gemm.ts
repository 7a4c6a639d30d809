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
import { configureThreads, configuredThreads, threadsForGemm, useThreads } from "./thread-policy.ts";
import type { GemmShape, SmallGemmKernel } from "./small-gemm-codegen.ts";

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

/** Each view's first-element address, taken once (see `address`). */
const addresses = new WeakMap<Float32Array | Float64Array, number>();

/**
 * The address of a view's element. Touching `.buffer` first matters: JavaScriptCore keeps
 * small typed arrays in movable storage until their buffer is materialised, so a pointer taken
 * before that could go stale under C. Once it is, the storage stays where it is for the view's
 * life (the collector does not move it), so the address is remembered per view: reading
 * `.buffer` and calling ptr cost about 30 ns each, some 100 ns per GEMM call, a sixth of a
 * 1x64x256 product. A view whose buffer was detached reads as length 0, which the callers'
 * bounds checks refuse before asking for an address.
 */
function address(view: Float32Array | Float64Array, elementOffset: number): Pointer {
  let base = addresses.get(view);
  if (base === undefined) {
    void view.buffer;
    base = ptr(view) as number;
    addresses.set(view, base);
  }
  return (base + elementOffset * view.BYTES_PER_ELEMENT) as Pointer;
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
  useThreads(library.symbols, threadsForGemm(m, n, k));
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

/**
 * The library call for one overwrite-C shape (m, n, k >= 1, strides at least the extents),
 * made once when a dot_general op plans its shape: a call then skips the request object and
 * the checks `gemm` repeats, the caller having checked the operands' types and bounds (as
 * planGemm does). The same library call as `gemm` makes, so the same bits. Null when no
 * library loaded; the caller sends calls to `gemm` while `fallbackForced()`.
 */
export function blasGemmFor(shape: GemmShape, f32: boolean): SmallGemmKernel | null {
  const library = blas();
  if (!library) return null;
  const { m, n, k, lda, ldb, ldc } = shape;
  const transA = shape.transA ? CBLAS_TRANS : CBLAS_NO_TRANS;
  const transB = shape.transB ? CBLAS_TRANS : CBLAS_NO_TRANS;
  // One call shape for both: alpha 1 and beta 0 pass as float or double as each symbol declares.
  const gemm = f32 ? library.symbols.cblas_sgemm : library.symbols.cblas_dgemm;
  const symbols = library.symbols;
  return (a, aOffset, b, bOffset, c, cOffset) => {
    useThreads(symbols, threadsForGemm(m, n, k));
    gemm(
      CBLAS_ROW_MAJOR,
      transA,
      transB,
      m,
      n,
      k,
      1,
      address(a, aOffset),
      lda,
      address(b, bOffset),
      ldb,
      0,
      address(c, cOffset),
      ldc,
    );
  };
}

/** Whether setForceFallbackGemm is on. */
export function fallbackForced(): boolean {
  return forceFallback;
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
    threads: library ? configuredThreads() : 1,
    failures: loadFailures,
  };
}

/** Forces the TypeScript GEMM even when OpenBLAS loaded (tests and benchmarks compare the two). */
export function setForceFallbackGemm(force: boolean): void {
  forceFallback = force;
}

/** Sets the threads large GEMMs use (small ones keep one, see thread-policy.ts); no effect on the fallback. */
export function setBlasThreads(threads: number): void {
  const library = blas();
  if (library) configureThreads(library.symbols, threads);
}
