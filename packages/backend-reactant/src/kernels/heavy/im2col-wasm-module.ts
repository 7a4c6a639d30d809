/**
 * The 2-d im2col (im2col.ts, im2col2d) as a WebAssembly SIMD module: the same rows, byte for
 * byte, copied 16 bytes at a time instead of one element per JavaScript operation (a 3x3 layer's
 * im2col ran at about 1 ns per element in JavaScript, several times its GEMM's time).
 *
 * im2col(src, dst, rowStart, rowEnd, outW, kH, kW, pixelBytes, runBytes, lineBytes, rowTable,
 * colTable, contiguous): for output positions [rowStart, rowEnd), every kernel tap's run of
 * channels (runBytes) read at src + ih*lineBytes + iw*pixelBytes, or zeros where a tap table
 * answers -1; with `contiguous` 1 and every tap of a kernel row valid, the row's taps are one
 * span. Pointers and sizes in bytes, tables of i32. Spans are copied whole vectors at a time, so
 * each may read up to 12 bytes past its end and write that far past its end (into the next span,
 * written after, or past the last row, where the caller leaves room).
 */
import { I32, V128, addTo, countUp, memoryModule, op, u32, v128, vec, whileBelow } from "../../blas/wasm-encode.ts";

const [SRC, DST, ROW_START, ROW_END, OUT_W, KH, KW, PIXEL, RUN, LINE_BYTES, ROW_TAB, COL_TAB, CONTIG] = [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
];
const PARAMS = 13;
const [ROW, OH, OW, KHI, IH, KWI, IW, FIRST, WHOLE, LINE, SPAN, I, FROM] = [
  13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
];
const LOCALS = FROM - ROW + 1;

const ZERO = new Array<number>(16).fill(0);

/** dst gets as many bytes as local `bytes` holds from FROM (or zeros), then moves past them. */
function span(bytes: number, zero: boolean): number[] {
  const value = zero ? v128.const(ZERO) : [...op.get(FROM), ...op.get(I), ...op.i32Add, ...v128.load()];
  return [
    ...op.i32(0),
    ...op.set(I),
    ...whileBelow(I, bytes, [
      ...op.get(DST),
      ...op.get(I),
      ...op.i32Add,
      ...value,
      ...v128.store(),
      ...addTo(I, op.i32(16)),
    ]),
    ...addTo(DST, op.get(bytes)),
  ];
}

/** i32 at table + index*4. */
function tableAt(table: number, index: number[]): number[] {
  return [...op.get(table), ...index, ...op.i32(4), ...op.i32Mul, ...op.i32Add, ...op.i32Load()];
}

function body(): number[] {
  const owKw = [...op.get(OW), ...op.get(KW), ...op.i32Mul];
  const perTap = countUp(KWI, 0, KW, [
    ...tableAt(COL_TAB, [...owKw, ...op.get(KWI), ...op.i32Add]),
    ...op.set(IW),
    ...op.get(IW),
    ...op.i32(0),
    ...op.i32LtS,
    ...op.if,
    ...span(RUN, true),
    ...op.else,
    ...op.get(LINE),
    ...op.get(IW),
    ...op.get(PIXEL),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.set(FROM),
    ...span(RUN, false),
    ...op.end,
  ]);
  const kernelRow = countUp(KHI, 0, KH, [
    ...tableAt(ROW_TAB, [...op.get(OH), ...op.get(KH), ...op.i32Mul, ...op.get(KHI), ...op.i32Add]),
    ...op.set(IH),
    ...op.get(IH),
    ...op.i32(0),
    ...op.i32LtS,
    ...op.if,
    ...span(SPAN, true),
    ...op.else,
    ...op.get(SRC),
    ...op.get(IH),
    ...op.get(LINE_BYTES),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.set(LINE),
    ...op.get(WHOLE),
    ...op.if,
    ...op.get(LINE),
    ...op.get(FIRST),
    ...op.get(PIXEL),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.set(FROM),
    ...span(SPAN, false),
    ...op.else,
    ...perTap,
    ...op.end,
    ...op.end,
  ]);
  const rowBody = [
    ...op.get(ROW),
    ...op.get(OUT_W),
    ...op.i32DivU,
    ...op.set(OH),
    ...op.get(ROW),
    ...op.get(OH),
    ...op.get(OUT_W),
    ...op.i32Mul,
    ...op.i32Sub,
    ...op.set(OW),
    ...tableAt(COL_TAB, owKw),
    ...op.set(FIRST),
    // whole = contiguous & first >= 0 & last >= 0
    ...op.get(CONTIG),
    ...op.get(FIRST),
    ...op.i32(0),
    ...op.i32GeS,
    ...op.i32And,
    ...tableAt(COL_TAB, [...owKw, ...op.get(KW), ...op.i32Add, ...op.i32(1), ...op.i32Sub]),
    ...op.i32(0),
    ...op.i32GeS,
    ...op.i32And,
    ...op.set(WHOLE),
    ...kernelRow,
    ...addTo(ROW, op.i32(1)),
  ];
  const rows = [...op.get(ROW_START), ...op.set(ROW), ...whileBelow(ROW, ROW_END, rowBody)];
  const locals = vec([[...u32(LOCALS), I32]]);
  return [...locals, ...op.get(KW), ...op.get(RUN), ...op.i32Mul, ...op.set(SPAN), ...rows, ...op.end];
}

const simd = (code: number) => [0xfd, ...u32(code)];
const S = {
  extendLowU: simd(0xa9),
  extendHighU: simd(0xaa),
  shl: simd(0xab),
  shrU: simd(0xad),
  i32Add: simd(0xae),
  narrowU: simd(0x86),
  and: simd(0x4e),
  andNot: simd(0x4f),
  or: simd(0x50),
  bitselect: simd(0x52),
  f32Ne: simd(0x42),
  f32Lt: simd(0x43),
  f32Ge: simd(0x46),
  i32GeU: simd(0x40),
  abs: simd(0xe0),
  add: simd(0xe4),
  sub: simd(0xe5),
  mul: simd(0xe6),
};

const f32Bits = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0] as number;

/** A v128 constant with `bits` in every i32 lane. */
function splat32(value: number): number[] {
  const bits = value >>> 0;
  const lane = [bits & 0xff, (bits >>> 8) & 0xff, (bits >>> 16) & 0xff, bits >>> 24];
  return v128.const([...lane, ...lane, ...lane, ...lane]);
}

// widen / narrow parameters and locals: (src, dst, n), element counter, one v128 temporary.
const [FROM_PTR, TO_PTR, COUNT, AT, X] = [0, 1, 2, 3, 4];

/** Pointer local + AT * size + extra bytes, on the stack. */
function at(pointer: number, size: number, extra = 0): number[] {
  return [
    ...op.get(pointer),
    ...op.get(AT),
    ...op.i32(size),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.i32(extra),
    ...op.i32Add,
  ];
}

/** `step` for every 8 elements below COUNT, with the locals' declaration (`temps` v128s from X) and the end. */
function byEights(step: number[], temps = 1): number[] {
  const locals = vec([
    [1, I32],
    [...u32(temps), V128],
  ]);
  return [
    ...locals,
    ...op.i32(0),
    ...op.set(AT),
    ...whileBelow(AT, COUNT, [...step, ...addTo(AT, op.i32(8))]),
    ...op.end,
  ];
}

/** bf16 bits -> f32: each 16-bit value moved to the top of its lane (exact for every value). */
function widenBf16Body(): number[] {
  const half = (extend: number[], extra: number) => [
    ...at(TO_PTR, 4, extra),
    ...at(FROM_PTR, 2),
    ...v128.load(),
    ...extend,
    ...op.i32(16),
    ...S.shl,
    ...v128.store(),
  ];
  return byEights([...half(S.extendLowU, 0), ...half(S.extendHighU, 16)]);
}

/**
 * f32 -> bf16 bits rounded to nearest even on the bits, (u + 0x7fff + bit 16 of u) >> 16, as
 * element-io's narrowToBf16 computes them; a NaN stays a NaN of its sign, made quiet, as
 * numberToBf16Bits makes it.
 */
function narrowBf16Body(): number[] {
  const rounded = (extra: number) => [
    ...at(FROM_PTR, 4, extra),
    ...v128.load(),
    ...op.set(X),
    ...op.get(X),
    ...op.i32(16),
    ...S.shrU,
    ...splat32(0x40),
    ...S.or,
    ...op.get(X),
    ...op.get(X),
    ...op.i32(16),
    ...S.shrU,
    ...splat32(1),
    ...S.and,
    ...S.i32Add,
    ...splat32(0x7fff),
    ...S.i32Add,
    ...op.i32(16),
    ...S.shrU,
    ...op.get(X),
    ...op.get(X),
    ...S.f32Ne,
    ...S.bitselect,
  ];
  return byEights([...at(TO_PTR, 2), ...rounded(0), ...rounded(16), ...S.narrowU, ...v128.store()]);
}

// The f16 conversions' v128 temporaries after X.
const [M, T, C] = [X + 1, X + 2, X + 3];

/**
 * f16 bits -> f32, exact for every value: the magnitude bits moved to f32's place and multiplied
 * by 2^112 (which rebiases a normal value's exponent and makes a subnormal one exact), f32's
 * exponent for infinity and NaN, the sign put back.
 */
function widenF16Body(): number[] {
  const half = (extend: number[], extra: number) => [
    ...at(TO_PTR, 4, extra),
    ...at(FROM_PTR, 2),
    ...v128.load(),
    ...extend,
    ...op.set(X),
    ...op.get(X),
    ...splat32(0x7fff),
    ...S.and,
    ...op.i32(13),
    ...S.shl,
    ...op.set(M),
    ...op.get(M),
    ...splat32(0x7f800000),
    ...S.or,
    ...op.get(M),
    ...splat32(f32Bits(2 ** 112)),
    ...S.mul,
    ...op.get(M),
    ...splat32(0x0f800000),
    ...S.i32GeU,
    ...S.bitselect,
    ...op.get(X),
    ...splat32(0x8000),
    ...S.and,
    ...op.i32(16),
    ...S.shl,
    ...S.or,
    ...v128.store(),
  ];
  return byEights([...half(S.extendLowU, 0), ...half(S.extendHighU, 16)], 2);
}

/**
 * f32 -> f16 bits, nearest even, as element-io's narrowToF16 gives them: the value rounded to
 * f16's precision as an f32 (Veltkamp's split c - (c - x), c = x (2^13 + 1), in the normal
 * range; adding and taking away 0.75, whose f32 step is 2^-24, below 2^-14, the sign kept for a
 * zero; infinity from 65520 on), then encoded exactly (|x| 2^-112 has f16's bits 13 places
 * up); NaN becomes 0x7e00.
 */
function narrowF16Body(): number[] {
  const sign = [...op.get(T), ...splat32(0x80000000), ...S.and];
  const magnitude = (limit: number, compare: number[]) => [
    ...op.get(T),
    ...S.abs,
    ...splat32(f32Bits(limit)),
    ...compare,
  ];
  const rounded = (extra: number) => [
    ...at(FROM_PTR, 4, extra),
    ...v128.load(),
    ...op.set(T),
    ...sign,
    ...splat32(0x7f800000),
    ...S.or,
    ...op.get(T),
    ...splat32(f32Bits(0.75)),
    ...S.add,
    ...splat32(f32Bits(0.75)),
    ...S.sub,
    ...sign,
    ...S.or,
    ...op.get(T),
    ...splat32(f32Bits(8193)),
    ...S.mul,
    ...op.set(C),
    ...op.get(C),
    ...op.get(C),
    ...op.get(T),
    ...S.sub,
    ...S.sub,
    ...magnitude(2 ** -14, S.f32Lt),
    ...S.bitselect,
    ...magnitude(65520, S.f32Ge),
    ...S.bitselect,
    ...op.set(X),
    // X is exact in f16 now: its bits.
    ...splat32(0x7e00),
    ...splat32(0x7c00),
    ...op.get(X),
    ...S.abs,
    ...splat32(f32Bits(2 ** -112)),
    ...S.mul,
    ...op.i32(13),
    ...S.shrU,
    ...op.get(X),
    ...S.abs,
    ...splat32(f32Bits(65536)),
    ...S.f32Ge,
    ...S.bitselect,
    ...op.get(X),
    ...op.get(X),
    ...S.f32Ne,
    ...S.bitselect,
    ...op.get(X),
    ...splat32(0x80000000),
    ...S.and,
    ...op.i32(16),
    ...S.shrU,
    ...op.get(X),
    ...op.get(X),
    ...S.f32Ne,
    ...S.andNot,
    ...S.or,
  ];
  return byEights([...at(TO_PTR, 2), ...rounded(0), ...rounded(16), ...S.narrowU, ...v128.store()], 4);
}

/**
 * The module's bytes; it exports `memory` (`pages` 64 KiB pages to start), `im2col`, and
 * `widenBf16` / `narrowBf16` / `widenF16` / `narrowF16` (src, dst, n): n elements, 8 at a time (so up to 7 past the end
 * are read and written, into slack the caller leaves).
 */
export function im2colModule(pages: number): Uint8Array<ArrayBuffer> {
  return memoryModule(pages, [
    { name: "im2col", i32Params: PARAMS, body: body() },
    { name: "widenBf16", i32Params: 3, body: widenBf16Body() },
    { name: "narrowBf16", i32Params: 3, body: narrowBf16Body() },
    { name: "widenF16", i32Params: 3, body: widenF16Body() },
    { name: "narrowF16", i32Params: 3, body: narrowF16Body() },
  ]);
}
