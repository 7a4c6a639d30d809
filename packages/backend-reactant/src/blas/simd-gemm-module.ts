/**
 * The small GEMM's arithmetic (small-gemm.ts: per C element, the first product, then each later
 * product added in k order, every product and every sum rounded to the precision, no fused
 * multiply-add) as a WebAssembly SIMD module. Lanes hold adjacent columns of one C row, so each
 * lane runs exactly the scalar loop's operations in its order: IEEE f32 (f64) multiply and add
 * round as Math.fround of the f64 result does, and nothing is reassociated. Four vectors of
 * columns are in flight at once so the adds' latency overlaps. NaN results are stored as the
 * canonical quiet NaN, as the JavaScript loops store them (WebAssembly leaves a NaN's sign and
 * payload unspecified).
 *
 * gemm32 / gemm64 (m, n, k, a, aRow, aCol, b, bRow, c): C[i][j] = sum over p of
 * A[a + i*aRow + p*aCol] * B[b + p*bRow + j*size], C dense (row stride n) at c; pointers and
 * strides in bytes, k >= 1. Columns are taken a whole vector at a time, so past the last
 * column the loads read up to a vector's worth beyond a row of B (lanes that are dropped) and
 * the stores write that much beyond a row of C: into the next row, which is written after, or
 * past the end, where the caller leaves room (simd-gemm.ts).
 * transpose32 / transpose64 (src, rows, cols, ld, dst): dst[c*rows + r] = src[r*ld + c], ld in
 * elements, for B stored transposed.
 */
import { I32, V128, addTo, countUp, memoryModule, op, u32, v128, vec, whileBelow } from "./wasm-encode.ts";

interface Precision {
  readonly size: number;
  readonly lanes: number;
  readonly load: (offset?: number) => number[];
  readonly store: (offset?: number) => number[];
  readonly splat: number[];
  readonly add: number[];
  readonly mul: number[];
  readonly eq: number[];
  /** The canonical quiet NaN in every lane, little-endian. */
  readonly nan: number[];
}

const F32: Precision = {
  size: 4,
  lanes: 4,
  load: op.f32Load,
  store: op.f32Store,
  splat: v128.f32x4Splat,
  add: v128.f32x4Add,
  mul: v128.f32x4Mul,
  eq: v128.f32x4Eq,
  nan: Array.from({ length: 4 }, () => [0x00, 0x00, 0xc0, 0x7f]).flat(),
};

const F64: Precision = {
  size: 8,
  lanes: 2,
  load: op.f64Load,
  store: op.f64Store,
  splat: v128.f64x2Splat,
  add: v128.f64x2Add,
  mul: v128.f64x2Mul,
  eq: v128.f64x2Eq,
  nan: Array.from({ length: 2 }, () => [0, 0, 0, 0, 0, 0, 0xf8, 0x7f]).flat(),
};

// gemm's parameters and locals.
const [M, N, K, A, A_ROW, A_COL, B, B_ROW, C] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
const [I, J, P, PA, PB, PC] = [9, 10, 11, 12, 13, 14];
const X = 15;
const ACC = 16; // four v128 accumulators
const MAX_VECTORS = 4;

/** `vectors` vectors of columns starting at column j of row i, then j moves past them. */
function columnBlock(t: Precision, vectors: number): number[] {
  const vs = Array.from({ length: vectors }, (_, v) => v);
  const product = (v: number) => [...op.get(X), ...op.get(PB), ...v128.load(16 * v), ...t.mul];
  const nextX = [...op.get(PA), ...t.load(), ...t.splat, ...op.set(X)];
  return [
    // pa = a + i*aRow; pb = b + j*size; acc = x * row 0
    ...op.get(A),
    ...op.get(I),
    ...op.get(A_ROW),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.set(PA),
    ...op.get(B),
    ...op.get(J),
    ...op.i32(t.size),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.set(PB),
    ...nextX,
    ...vs.flatMap((v) => [...product(v), ...op.set(ACC + v)]),
    ...countUp(P, 1, K, [
      ...addTo(PA, op.get(A_COL)),
      ...addTo(PB, op.get(B_ROW)),
      ...nextX,
      ...vs.flatMap((v) => [...op.get(ACC + v), ...product(v), ...t.add, ...op.set(ACC + v)]),
    ]),
    // pc = c + (i*n + j)*size; NaN lanes replaced by the canonical NaN
    ...op.get(C),
    ...op.get(I),
    ...op.get(N),
    ...op.i32Mul,
    ...op.get(J),
    ...op.i32Add,
    ...op.i32(t.size),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.set(PC),
    ...vs.flatMap((v) => [
      ...op.get(PC),
      ...op.get(ACC + v),
      ...v128.const(t.nan),
      ...op.get(ACC + v),
      ...op.get(ACC + v),
      ...t.eq,
      ...v128.bitselect,
      ...v128.store(16 * v),
    ]),
    ...addTo(J, op.i32(vectors * t.lanes)),
  ];
}

function gemmBody(t: Precision): number[] {
  // Four vectors while more than three are needed, then the fewest that cover the rest of the row.
  let choose: number[] = columnBlock(t, 1);
  for (let v = 2; v <= MAX_VECTORS; v++) {
    choose = [
      ...op.get(N),
      ...op.get(J),
      ...op.i32Sub,
      ...op.i32((v - 1) * t.lanes),
      ...op.i32GtU,
      ...op.if,
      ...columnBlock(t, v),
      ...op.else,
      ...choose,
      ...op.end,
    ];
  }
  const locals = vec([
    [...u32(PC - I + 1), I32],
    [...u32(1 + MAX_VECTORS), V128],
  ]);
  // Each column block moves j on by its own width.
  const rows = countUp(I, 0, M, [...op.i32(0), ...op.set(J), ...whileBelow(J, N, choose)]);
  return [...locals, ...rows, ...op.end];
}

// transpose's parameters and locals.
const [SRC, ROWS, COLS, LD, DST] = [0, 1, 2, 3, 4];
const [R, CI, FROM, TO] = [5, 6, 7, 8];

function transposeBody(t: Precision): number[] {
  const locals = vec([[...u32(TO - R + 1), I32]]);
  const rows = countUp(R, 0, ROWS, [
    // from = src + r*ld*size; to = dst + r*size
    ...op.get(SRC),
    ...op.get(R),
    ...op.get(LD),
    ...op.i32Mul,
    ...op.i32(t.size),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.set(FROM),
    ...op.get(DST),
    ...op.get(R),
    ...op.i32(t.size),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.set(TO),
    ...countUp(CI, 0, COLS, [
      ...op.get(TO),
      ...op.get(FROM),
      ...t.load(),
      ...t.store(),
      ...addTo(FROM, op.i32(t.size)),
      ...addTo(TO, [...op.get(ROWS), ...op.i32(t.size), ...op.i32Mul]),
    ]),
  ]);
  return [...locals, ...rows, ...op.end];
}

/** The module's bytes; it exports `memory` (`pages` 64 KiB pages to start) and the four functions. */
export function simdGemmModule(pages: number): Uint8Array<ArrayBuffer> {
  return memoryModule(pages, [
    { name: "gemm32", i32Params: 9, body: gemmBody(F32) },
    { name: "gemm64", i32Params: 9, body: gemmBody(F64) },
    { name: "transpose32", i32Params: 5, body: transposeBody(F32) },
    { name: "transpose64", i32Params: 5, body: transposeBody(F64) },
  ]);
}
