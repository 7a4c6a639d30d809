/**
 * Channels-last max / min pooling (pool-nhwc.ts) as a WebAssembly SIMD module, on the same
 * order-preserving integer keys: a vector of channels' keys per output position, combined by an
 * integer max over every valid tap, then mapped back to float bits. The keys are pool-nhwc.ts's
 * (NaN forced to win, -0 below +0; min as the max of complemented keys), so the result is its
 * result bit for bit.
 *
 * pool16 / pool32 (src, dst, n, oh, ow, channelBytes, ih, iw, kH, kW, rowTable, colTable, init,
 * flip): 16-bit (f16 / bf16) or f32 storage at src ([n, ih, iw, C]) pooled into dst ([n, oh,
 * ow, C]); the tables give each output index's input index per tap or -1; `init` is the init
 * value's key, `flip` 0 for max and -1 for min (16-bit only). Channel runs are taken a vector
 * at a time: a run that is not a whole number of vectors reads past itself (the caller leaves
 * slack past the input) and writes into the next position's run, which is written after, or
 * past the end, where the caller leaves room.
 */
import { I32, V128, addTo, countUp, memoryModule, op, u32, v128, vec, whileBelow } from "../../blas/wasm-encode.ts";

const simd = (code: number) => [0xfd, ...u32(code)];
const and = simd(0x4e);
const or = simd(0x50);
const xor = simd(0x51);
const bitselect = simd(0x52);

interface Lanes {
  readonly bits: number;
  readonly splat: number[];
  readonly gtS: number[];
  readonly shrS: number[];
  readonly maxS: number[];
  /** Magnitude mask and the infinity's bits (NaN above it). */
  readonly magnitude: number;
}

const I16: Lanes = {
  bits: 16,
  splat: simd(0x10),
  gtS: simd(0x31),
  shrS: simd(0x8c),
  maxS: simd(0x98),
  magnitude: 0x7fff,
};
const I32X4: Lanes = {
  bits: 32,
  splat: simd(0x11),
  gtS: simd(0x3b),
  shrS: simd(0xac),
  maxS: simd(0xb8),
  magnitude: 0x7fffffff,
};

const [SRC, DST, N, OH, OW, ROW_BYTES, IH, IW, KH, KW, ROW_TAB, COL_TAB, INIT, FLIP, INF, NAN_SIGN] = [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
];
const PARAMS = 16;
const [NI, OHI, OWI, CI, KHI, KWI, IHV, IWV, OUT, PTR] = [16, 17, 18, 19, 20, 21, 22, 23, 24, 25];
const I32_LOCALS = PTR - NI + 1;
const [ACC, V, B] = [26, 27, 28];

function splatLocal(t: Lanes, local: number): number[] {
  return [...op.get(local), ...t.splat];
}

function splatConst(t: Lanes, value: number): number[] {
  return [...op.i32(value), ...t.splat];
}

/** The value on the stack (float bits) -> its key. */
function keyOf(t: Lanes): number[] {
  return [
    ...op.set(V),
    // b = NaN ? magnitude | nanSign : v
    ...op.get(V),
    ...splatConst(t, t.magnitude),
    ...and,
    ...splatLocal(t, NAN_SIGN),
    ...or,
    ...op.get(V),
    ...op.get(V),
    ...splatConst(t, t.magnitude),
    ...and,
    ...splatLocal(t, INF),
    ...t.gtS,
    ...bitselect,
    // key = b ^ ((b >> bits-1) & magnitude) ^ flip
    ...signFold(t),
    ...splatLocal(t, FLIP),
    ...xor,
  ];
}

/** b ^ ((b >> bits-1) & magnitude) for the b on the stack: flips a negative value's magnitude. */
function signFold(t: Lanes): number[] {
  return [
    ...op.set(B),
    ...op.get(B),
    ...op.get(B),
    ...op.i32(t.bits - 1),
    ...t.shrS,
    ...splatConst(t, t.magnitude),
    ...and,
    ...xor,
  ];
}

/** The key on the stack -> float bits. */
function bitsOf(t: Lanes): number[] {
  return [...splatLocal(t, FLIP), ...xor, ...signFold(t)];
}

/** i32 at table + index*4. */
function tableAt(table: number, index: number[]): number[] {
  return [...op.get(table), ...index, ...op.i32(4), ...op.i32Mul, ...op.i32Add, ...op.i32Load()];
}

function poolBody(t: Lanes): number[] {
  // ptr = src + ((n*ih + ihv)*iw + iwv)*rowBytes + ci
  const tap = [
    ...op.get(SRC),
    ...op.get(NI),
    ...op.get(IH),
    ...op.i32Mul,
    ...op.get(IHV),
    ...op.i32Add,
    ...op.get(IW),
    ...op.i32Mul,
    ...op.get(IWV),
    ...op.i32Add,
    ...op.get(ROW_BYTES),
    ...op.i32Mul,
    ...op.i32Add,
    ...op.get(CI),
    ...op.i32Add,
    ...op.set(PTR),
    ...op.get(ACC),
    ...op.get(PTR),
    ...v128.load(),
    ...keyOf(t),
    ...t.maxS,
    ...op.set(ACC),
  ];
  const taps = countUp(KHI, 0, KH, [
    ...tableAt(ROW_TAB, [...op.get(OHI), ...op.get(KH), ...op.i32Mul, ...op.get(KHI), ...op.i32Add]),
    ...op.set(IHV),
    ...op.get(IHV),
    ...op.i32(0),
    ...op.i32GeS,
    ...op.if,
    ...countUp(KWI, 0, KW, [
      ...tableAt(COL_TAB, [...op.get(OWI), ...op.get(KW), ...op.i32Mul, ...op.get(KWI), ...op.i32Add]),
      ...op.set(IWV),
      ...op.get(IWV),
      ...op.i32(0),
      ...op.i32GeS,
      ...op.if,
      ...tap,
      ...op.end,
    ]),
    ...op.end,
  ]);
  const channels = [
    ...op.i32(0),
    ...op.set(CI),
    ...whileBelow(CI, ROW_BYTES, [
      ...splatLocal(t, INIT),
      ...op.set(ACC),
      ...taps,
      ...op.get(OUT),
      ...op.get(CI),
      ...op.i32Add,
      ...op.get(ACC),
      ...bitsOf(t),
      ...v128.store(),
      ...addTo(CI, op.i32(16)),
    ]),
    ...addTo(OUT, op.get(ROW_BYTES)),
  ];
  const positions = countUp(NI, 0, N, [...countUp(OHI, 0, OH, [...countUp(OWI, 0, OW, channels)])]);
  const locals = vec([
    [...u32(I32_LOCALS), I32],
    [3, V128],
  ]);
  return [...locals, ...op.get(DST), ...op.set(OUT), ...positions, ...op.end];
}

/**
 * The module's bytes; it exports `memory` (`pages` 64 KiB pages to start), `pool16` and
 * `pool32`, each taking (src, dst, n, oh, ow, rowBytes, ih, iw, kH, kW, rowTable, colTable,
 * init, flip, infinity, nanSign): the last two the storage's infinity bits and the sign a NaN
 * takes (0 for max, the sign bit for min).
 */
export function poolModule(pages: number): Uint8Array<ArrayBuffer> {
  return memoryModule(pages, [
    { name: "pool16", i32Params: PARAMS, body: poolBody(I16) },
    { name: "pool32", i32Params: PARAMS, body: poolBody(I32X4) },
  ]);
}
