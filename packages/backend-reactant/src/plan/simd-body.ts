/**
 * What the fused SIMD modules are written with: the SIMD opcodes they use (prefix 0xfd), vector
 * constants, and the body of the one function being written with its temporaries.
 */
import { op, u32 } from "../blas/wasm-encode.ts";

export const simd = (code: number, ...immediates: number[]) => [0xfd, ...u32(code), ...immediates];
/** Memory accesses take a byte offset from the address on the stack (a memarg's offset). */
export const M = {
  load: (offset: number) => simd(0x00, 0, ...u32(offset)),
  load16x4u: (offset: number) => simd(0x04, 0, ...u32(offset)),
  store: (offset: number) => simd(0x0b, 0, ...u32(offset)),
  store64Lane0: (offset: number) => simd(0x5b, 0, ...u32(offset), 0),
  store32Lane0: (offset: number) => simd(0x5a, 0, ...u32(offset), 0),
};
export const S = {
  load: M.load(0),
  load16x4u: M.load16x4u(0),
  store: M.store(0),
  store64Lane0: M.store64Lane0(0),
  store32Lane0: M.store32Lane0(0),
  i32Splat: simd(0x11),
  f32Splat: simd(0x13),
  i32Eq: simd(0x37),
  i32LtU: simd(0x3a),
  i32GtU: simd(0x3c),
  i32GeU: simd(0x40),
  f32Ne: simd(0x42),
  f32Lt: simd(0x43),
  f32Ge: simd(0x46),
  and: simd(0x4e),
  andNot: simd(0x4f),
  or: simd(0x50),
  bitselect: simd(0x52),
  narrowU: simd(0x86),
  /** i8x16.narrow_i16x8_s / i16x8.narrow_i32x4_s: signed, saturating. */
  narrowI16S: simd(0x65),
  narrowI32S: simd(0x85),
  shl: simd(0xab),
  shrU: simd(0xad),
  i32Add: simd(0xae),
  i32Sub: simd(0xb1),
  abs: simd(0xe0),
  neg: simd(0xe1),
  sqrt: simd(0xe3),
  add: simd(0xe4),
  sub: simd(0xe5),
  mul: simd(0xe6),
  div: simd(0xe7),
  min: simd(0xe8),
  max: simd(0xe9),
  convertS: simd(0xfa),
  floor: simd(0x68),
  ceil: simd(0x67),
  nearest: simd(0x6a),
  demote: simd(0x5e),
  promoteLow: simd(0x5f),
  f64Add: simd(0xf0),
  f64Sub: simd(0xf1),
  f64Mul: simd(0xf2),
  truncSatS: simd(0xf8),
  /** i8x16.shuffle of the two vectors on the stack by 16 byte indices (0-15 the first, 16-31 the second). */
  shuffle: (lanes: readonly number[]) => simd(0x0d, ...lanes),
};
export const I32_LOAD16_U = [0x2f, 0, 0];
export const F32_LOAD = [0x2a, 0, 0];
export const I32_LOAD = [0x28, 0, 0];
export const I32_LT_U = [0x49];

/** A v128 constant with `bits` in every i32 lane. */
export function splat32(bits: number): number[] {
  const b = bits >>> 0;
  const lane = [b & 0xff, (b >>> 8) & 0xff, (b >>> 16) & 0xff, b >>> 24];
  return simd(0x0c, ...lane, ...lane, ...lane, ...lane);
}
/** A v128 constant with the f64 `x` in both lanes. */
export function splat64(x: number): number[] {
  const bytes = new Uint8Array(new Float64Array([x]).buffer);
  return simd(0x0c, ...bytes, ...bytes);
}
export const f32Bits = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0] as number;

/** Locals of the function being written: i32 parameters first, then the v128 temporaries. */
export class Body {
  readonly code: number[] = [];
  private temps = 0;
  constructor(private readonly firstTemp: number) {}
  temp(): number {
    return this.firstTemp + this.temps++;
  }
  get tempCount(): number {
    return this.temps;
  }
  emit(...parts: (readonly number[])[]): void {
    for (const p of parts) for (const b of p) this.code.push(b);
  }
  private readonly marks: number[] = [];
  /**
   * Marks the end of a statement: a point where the code so far leaves the stack as it found
   * it. Code written for several vectors in turn, statement for statement alike, is
   * interleaved at these points (interleave).
   */
  mark(): void {
    this.marks.push(this.code.length);
  }
  /** The code written since the last call, cut at its marks; the code is taken out of the body. */
  takeStatements(): number[][] {
    const out: number[][] = [];
    let from = 0;
    for (const at of this.marks) {
      if (at > from) out.push(this.code.slice(from, at));
      from = Math.max(from, at);
    }
    if (from < this.code.length) out.push(this.code.slice(from));
    this.code.length = 0;
    this.marks.length = 0;
    return out;
  }
  private readonly constants = new Map<string, number>();
  /** Sets every constant's local; the module runs it once, before its loop. */
  readonly constantCode: number[] = [];
  /**
   * The code that pushes the v128 constant `bytes` (a v128.const) from a local set once before
   * the loop: JavaScriptCore builds a v128.const in the loop body anew each time it runs, which
   * made a polynomial's coefficients cost more than its arithmetic.
   */
  constant(bytes: readonly number[]): number[] {
    const key = bytes.join(",");
    let local = this.constants.get(key);
    if (local === undefined) {
      local = this.temp();
      this.constants.set(key, local);
      this.constantCode.push(...bytes, ...op.set(local));
    }
    return op.get(local);
  }
}

/**
 * The statements of several vectors' code (takeStatements, one list per vector, written by the
 * same emitter) one of each in turn: each vector's next statement mostly waits on its previous
 * one (a polynomial step is about 20 cycles of latency and 3 of throughput), and the other
 * vectors' statements fill that wait.
 */
export function interleave(streams: readonly (readonly number[][])[]): number[] {
  const out: number[] = [];
  const longest = Math.max(0, ...streams.map((s) => s.length));
  for (let i = 0; i < longest; i++) for (const s of streams) for (const byte of s[i] ?? []) out.push(byte);
  return out;
}
