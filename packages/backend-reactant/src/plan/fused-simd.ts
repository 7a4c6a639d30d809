/**
 * Fused elementwise trees on f32 / bf16 / f16 as WebAssembly SIMD, four lanes of f32 at a time:
 * the same bits as the JavaScript loop fused-codegen.ts generates, several times faster (that
 * loop decodes each narrow element through a table, rounds every op in f64 and encodes on the
 * bits one element at a time; here a narrow load is a widening load and a shift, rounding is
 * four integer ops on a whole vector).
 *
 * Why the bits are the same: each op computes in f32 and then rounds to its own type, as the
 * loop does from f64. For add, subtract, multiply, divide and sqrt, f32 (24 bits) is at least
 * 2p + 2 bits for p = 11 (f16) and 8 (bf16), so rounding the f32 result to the narrow type
 * equals rounding the exact result (the loop's f64 result likewise); f32 ops equal Math.fround
 * of f64 ones for the same reason. max / min follow Math.max / Math.min (NaN wins, -0 < +0).
 * Conversions between the three types are roundings. NaNs are stored canonical (0x7fc00000,
 * 0x7fc0, 0x7e00), as the loop's encoders store them.
 *
 * Only the `outer x inner` layouts (fused-codegen.ts's LeafClass, but for slices' rows) and the ops above are taken;
 * anything else (tanh, exp, compare, integers, f64, strided leaves) keeps the loop. Vectors run
 * past the end of a row: those lanes are written into the next row, which overwrites them, or
 * into slack past the output. Every tree is a module of its own over one shared memory; inputs
 * are copied in and the result out (one memcpy each), as the SIMD GEMM does.
 */
import type { ElemType, NDArray, TypedArray } from "../array.ts";
import { I32, V128, name, op, section, u32, vec } from "../blas/wasm-encode.ts";
import type { Layout, Node } from "./fused-codegen.ts";

/** Runs the tree into `out`; false (nothing written) where its operands would not fit the memory cap. */
export type SimdLoop = (leaves: readonly NDArray[], out: TypedArray, outer: number, inner: number) => boolean;

/**
 * The most bytes of operands and result one call copies into the module's memory, which never
 * shrinks: larger trees keep the loop, so a big convnet's activations are not held twice.
 */
const MAX_BYTES = 32 * 1024 * 1024;

type Narrow = "f32" | "bf16" | "f16";
const SIZE: Record<Narrow, number> = { f32: 4, bf16: 2, f16: 2 };

const simd = (code: number, ...immediates: number[]) => [0xfd, ...u32(code), ...immediates];
const S = {
  load: simd(0x00, 0, 0),
  load16x4u: simd(0x04, 0, 0),
  store: simd(0x0b, 0, 0),
  store64Lane0: simd(0x5b, 0, 0, 0),
  i32Splat: simd(0x11),
  f32Splat: simd(0x13),
  i32Eq: simd(0x37),
  i32LtU: simd(0x3a),
  i32GtU: simd(0x3c),
  i32GeU: simd(0x40),
  f32Ne: simd(0x42),
  and: simd(0x4e),
  andNot: simd(0x4f),
  or: simd(0x50),
  bitselect: simd(0x52),
  narrowU: simd(0x86),
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
};
const I32_LOAD16_U = [0x2f, 0, 0];
const F32_LOAD = [0x2a, 0, 0];
const I32_LT_U = [0x49];

/** A v128 constant with `bits` in every i32 lane. */
function splat32(bits: number): number[] {
  const b = bits >>> 0;
  const lane = [b & 0xff, (b >>> 8) & 0xff, (b >>> 16) & 0xff, b >>> 24];
  return simd(0x0c, ...lane, ...lane, ...lane, ...lane);
}
const f32Bits = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0] as number;

const BINARY: Record<string, number[]> = {
  add: S.add,
  subtract: S.sub,
  multiply: S.mul,
  divide: S.div,
  maximum: S.max,
  minimum: S.min,
};
const UNARY: Record<string, number[]> = { negate: S.neg, abs: S.abs, sqrt: S.sqrt };

/** Locals of the function being written: i32 parameters first, then the v128 temporaries. */
class Body {
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
}

/** The value on the stack (f32 lanes) rounded to bf16's precision; NaN stays NaN. */
function roundBf16(b: Body): void {
  const t = b.temp();
  b.emit(op.set(t), op.get(t), op.get(t), op.get(t), op.i32(16), S.shrU, splat32(1), S.and, S.i32Add);
  b.emit(splat32(0x7fff), S.i32Add, splat32(0xffff0000), S.and);
  b.emit(op.get(t), op.get(t), S.f32Ne, S.bitselect); // [x, rounded, isNaN]
}

/** The value on the stack rounded to f16's precision (subnormals, overflow and NaN included). */
function roundF16(b: Body): void {
  const t = b.temp();
  const a = b.temp();
  b.emit(op.set(t), op.get(t), splat32(0x7fffffff), S.and, op.set(a));
  // NaN: itself; at least 65520 in magnitude: infinity; below 2^-14: to a multiple of 2^-24
  // by adding and taking away 0.5 in f32; otherwise on the bits, ties to even.
  b.emit(op.get(t));
  b.emit(splat32(0x7f800000));
  b.emit(op.get(a), splat32(f32Bits(0.5)), S.add, splat32(f32Bits(0.5)), S.sub);
  b.emit(op.get(a), splat32(0xfff), S.i32Add, op.get(a), op.i32(13), S.shrU, splat32(1), S.and, S.i32Add);
  b.emit(splat32(0xffffe000), S.and);
  b.emit(op.get(a), splat32(0x38800000), S.i32LtU, S.bitselect); // [x, infinity, finite]
  b.emit(op.get(a), splat32(0x477ff000), S.i32GeU, S.bitselect);
  b.emit(op.get(t), splat32(0x80000000), S.and, S.or); // the sign back
  b.emit(op.get(t), op.get(t), S.f32Ne, S.bitselect);
}

function roundTo(b: Body, t: Narrow): void {
  if (t === "bf16") roundBf16(b);
  else if (t === "f16") roundF16(b);
}

/** i32 lanes holding f16 bits -> their f32 values. */
function widenF16(b: Body): void {
  const h = b.temp();
  const m = b.temp();
  b.emit(op.set(h), op.get(h), splat32(0x7fff), S.and, op.set(m));
  // Subnormal and zero: m * 2^-24 exactly; infinity and NaN: exponent all ones; else rebias.
  b.emit(op.get(m), S.convertS, splat32(f32Bits(2 ** -24)), S.mul);
  b.emit(op.get(m), op.i32(13), S.shl, splat32(0x70000000), S.i32Add);
  b.emit(op.get(m), op.i32(13), S.shl, splat32(0x38000000), S.i32Add);
  b.emit(op.get(m), splat32(0x7c00), S.i32GeU, S.bitselect);
  b.emit(op.get(m), splat32(0x400), S.i32LtU, S.bitselect);
  b.emit(op.get(h), splat32(0x8000), S.and, op.i32(16), S.shl, S.or);
}

/** i32 lanes of 16-bit storage -> f32 values. */
function widen(b: Body, t: Narrow): void {
  if (t === "bf16") b.emit(op.i32(16), S.shl);
  else if (t === "f16") widenF16(b);
}

/** f32 lanes already exact in `t` -> the i32 lanes of t's canonical bits (16-bit types). */
function encode16(b: Body, t: "bf16" | "f16"): void {
  const x = b.temp();
  b.emit(op.set(x));
  if (t === "bf16") {
    b.emit(splat32(0x7fc0), op.get(x), op.i32(16), S.shrU, op.get(x), op.get(x), S.f32Ne, S.bitselect);
    return;
  }
  const a = b.temp();
  b.emit(op.get(x), splat32(0x7fffffff), S.and, op.set(a));
  b.emit(splat32(0x7e00), splat32(0x7c00));
  // Normal: rebias on the bits; subnormal: the count of 2^-24 quanta, read off |x| + 0.5.
  b.emit(op.get(a), splat32(f32Bits(0.5)), S.add, splat32(f32Bits(0.5)), S.i32Sub);
  b.emit(op.get(a), splat32(0x38000000), S.i32Sub, op.i32(13), S.shrU);
  b.emit(op.get(a), splat32(0x38800000), S.i32LtU, S.bitselect); // [nan, infinity, finite]
  b.emit(op.get(a), splat32(0x7f800000), S.i32Eq, S.bitselect);
  b.emit(op.get(a), splat32(0x7f800000), S.i32GtU, S.bitselect);
  // The sign, except on NaN (canonical, positive).
  b.emit(op.get(x), splat32(0x80000000), S.and, op.i32(16), S.shrU, op.get(x), op.get(x), S.f32Ne, S.andNot, S.or);
}

interface Plan {
  readonly leafTypes: Narrow[];
  readonly outType: Narrow;
  readonly classes: Layout["classes"];
}

/** The tree's ops in the subset, with every type one of the three; null otherwise. */
function check(tree: Node, leaves: readonly NDArray[], literals: readonly (number | null)[]): Narrow | null {
  if (tree.kind !== "op") {
    const k = tree.kind === "leaf" ? tree.index : tree.leaf;
    const t = (leaves[k] as NDArray).type;
    if (t !== "f32" && t !== "bf16" && t !== "f16") return null;
    return literals[k] !== null && literals[k] !== undefined && t !== "f32" ? null : t;
  }
  const kids = tree.children.map((c) => check(c, leaves, literals));
  if (kids.some((k) => k === null)) return null;
  const n = tree.op.name.replace(/^stablehlo\./, "");
  const first = kids[0] as Narrow | undefined;
  if (n === "convert") {
    const r = tree.op.resultTypes[tree.op.resultTypes.length - 1];
    const to = r && "elem" in r ? (r.elem as ElemType) : null;
    return kids.length === 1 && (to === "f32" || to === "bf16" || to === "f16") ? to : null;
  }
  if (BINARY[n] && kids.length === 2 && kids[1] === first) return first ?? null;
  if (UNARY[n] && kids.length === 1) return first ?? null;
  return null;
}

function emitTree(
  b: Body,
  n: Node,
  plan: Plan,
  literals: readonly (number | null)[],
  leafValue: (k: number) => void,
): void {
  if (n.kind !== "op") {
    const k = n.kind === "leaf" ? n.index : n.leaf;
    const literal = literals[k];
    if (literal !== null && literal !== undefined) b.emit(splat32(f32Bits(literal)));
    else leafValue(k);
    return;
  }
  for (const c of n.children) emitTree(b, c, plan, literals, leafValue);
  const name = n.op.name.replace(/^stablehlo\./, "");
  if (name !== "convert") b.emit(BINARY[name] ?? UNARY[name] ?? []);
  roundTo(b, resultType(n, plan));
}

/** The element type an op node produces (its children's, or a convert's target). */
function resultType(n: Node, plan: Plan): Narrow {
  if (n.kind !== "op") return plan.leafTypes[n.kind === "leaf" ? n.index : n.leaf] as Narrow;
  if (n.op.name.endsWith("convert")) {
    const r = n.op.resultTypes[n.op.resultTypes.length - 1];
    return (r && "elem" in r ? r.elem : "f32") as Narrow;
  }
  return resultType(n.children[0] as Node, plan);
}

/** The module's function body: params (outer, inner, leaf pointers..., out pointer). */
function body(tree: Node, plan: Plan, literals: readonly (number | null)[]): number[] {
  const count = plan.leafTypes.length;
  const OUTER = 0;
  const INNER = 1;
  const ptr = (k: number) => 2 + k;
  const OUT = 2 + count;
  const I = OUT + 1;
  const J = OUT + 2;
  const W = OUT + 3;
  const i32Locals = 3;
  const firstV = OUT + 1 + i32Locals;
  const b = new Body(firstV);
  const held = new Map<number, number>();
  const scalarInto = (k: number, index: number | null) => {
    const t = plan.leafTypes[k] as Narrow;
    b.emit(op.get(ptr(k)));
    if (index !== null) b.emit(op.get(index), op.i32(SIZE[t]), op.i32Mul, op.i32Add);
    if (t === "f32") b.emit(F32_LOAD, S.f32Splat);
    else {
      b.emit(I32_LOAD16_U, S.i32Splat);
      widen(b, t);
    }
    let local = held.get(k);
    if (local === undefined) {
      local = b.temp();
      held.set(k, local);
    }
    b.emit(op.set(local));
  };
  const rowCode: number[][] = [];
  // Per-element (vector) reads of the "d" and "r" leaves; the others are held in locals.
  const leafValue = (k: number) => {
    const c = plan.classes[k];
    const local = held.get(k);
    if (local !== undefined) {
      b.emit(op.get(local));
      return;
    }
    const t = plan.leafTypes[k] as Narrow;
    b.emit(op.get(ptr(k)), op.get(J));
    if (c === "d") b.emit(op.get(W), op.i32Add);
    b.emit(op.i32(SIZE[t]), op.i32Mul, op.i32Add);
    if (t === "f32") b.emit(S.load);
    else {
      b.emit(S.load16x4u);
      widen(b, t);
    }
  };
  // Prologue: "s" leaves once.
  for (let k = 0; k < count; k++) if (plan.classes[k] === "s" && literals[k] == null) scalarInto(k, null);
  const prologue = b.code.splice(0);
  for (let k = 0; k < count; k++) if (plan.classes[k] === "c" && literals[k] == null) scalarInto(k, I);
  rowCode.push(b.code.splice(0));
  // The element: out address, value, store.
  const outSize = SIZE[plan.outType];
  b.emit(op.get(OUT), op.get(W), op.get(J), op.i32Add, op.i32(outSize), op.i32Mul, op.i32Add);
  emitTree(b, tree, plan, literals, leafValue);
  if (plan.outType === "f32") {
    const x = b.temp();
    b.emit(op.set(x), splat32(0x7fc00000), op.get(x), op.get(x), op.get(x), S.f32Ne, S.bitselect, S.store);
  } else {
    encode16(b, plan.outType);
    const h = b.temp();
    b.emit([0x22, ...u32(h)], op.get(h), S.narrowU, S.store64Lane0);
  }
  const element = b.code.splice(0);
  const code = [
    ...prologue,
    ...op.block,
    ...op.loop,
    ...op.get(I),
    ...op.get(OUTER),
    ...op.i32GeU,
    ...op.brIf(1),
    ...(rowCode[0] as number[]),
    ...op.i32(0),
    ...op.set(J),
    ...op.loop,
    ...element,
    ...op.get(J),
    ...op.i32(4),
    ...op.i32Add,
    ...[0x22, ...u32(J)],
    ...op.get(INNER),
    ...I32_LT_U,
    ...op.brIf(0),
    ...op.end,
    ...op.get(W),
    ...op.get(INNER),
    ...op.i32Add,
    ...op.set(W),
    ...op.get(I),
    ...op.i32(1),
    ...op.i32Add,
    ...op.set(I),
    ...op.br(0),
    ...op.end,
    ...op.end,
    ...op.end,
  ];
  const locals = vec([
    [...u32(i32Locals), I32],
    [...u32(b.tempCount), V128],
  ]);
  return [...locals, ...code];
}

function moduleBytes(tree: Node, plan: Plan, literals: readonly (number | null)[]): Uint8Array<ArrayBuffer> {
  const params = 3 + plan.leafTypes.length;
  const type = [0x60, ...vec(Array.from({ length: params }, () => [I32])), ...vec([])];
  const code = body(tree, plan, literals);
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec([type])),
    ...section(2, vec([[...name("e"), ...name("m"), 0x02, 0x00, 0x00]])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name("run"), 0x00, 0]])),
    ...section(10, vec([[...u32(code.length), ...code]])),
  ];
  return new Uint8Array(bytes);
}

/** The memory every fused module works in (one call at a time on a thread). */
let memory: WebAssembly.Memory | null | undefined;
let u8 = new Uint8Array(0);
let disabled = false;
let runs = 0;

function sharedMemory(): WebAssembly.Memory | null {
  if (memory === undefined) {
    try {
      memory = new WebAssembly.Memory({ initial: 16 });
      u8 = new Uint8Array(memory.buffer);
    } catch {
      memory = null;
    }
  }
  return memory;
}

function reserve(mem: WebAssembly.Memory, bytes: number): void {
  const have = mem.buffer.byteLength;
  if (bytes > have) {
    mem.grow(Math.ceil((bytes - have) / 65536));
    u8 = new Uint8Array(mem.buffer);
  }
}

const MODULES = new Map<string, ((...args: number[]) => void) | null>();

/** Bytes of a leaf's run in memory: "d" the output's count, "r" a row, "c" a column, "s" one. */
function leafElements(c: Layout["classes"][number], outer: number, inner: number): number {
  return c === "d" ? outer * inner : c === "r" ? inner : c === "c" ? outer : 1;
}

/**
 * The SIMD loop for `tree`, or null where it does not apply (no SIMD here, no `outer x inner`
 * layout, a type or op outside the subset).
 */
export function generateSimd(
  tree: Node,
  leaves: readonly NDArray[],
  layout: Layout | null,
  literals: readonly (number | null)[],
): { loop: SimdLoop; outType: ElemType } | null {
  // Rows of a slice read in place ("g", at an offset and pitch of their own) keep the loop.
  if (disabled || layout === null || layout.classes.includes("g")) return null;
  const outType = check(tree, leaves, literals);
  if (outType === null || tree.kind !== "op") return null;
  const mem = sharedMemory();
  if (mem === null) return null;
  const plan: Plan = {
    leafTypes: leaves.map((l) => l.type as Narrow),
    outType,
    classes: layout.classes,
  };
  const bytes = moduleBytes(tree, plan, literals);
  const key = Array.from(bytes, (x) => String.fromCharCode(x)).join("");
  let run = MODULES.get(key);
  if (run === undefined) {
    try {
      const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), { e: { m: mem } });
      run = instance.exports.run as (...args: number[]) => void;
    } catch {
      run = null;
    }
    MODULES.set(key, run);
  }
  if (run === null) return null;
  const fn = run;
  const sizes = plan.leafTypes.map((t) => SIZE[t]);
  const outSize = SIZE[outType];
  const args: number[] = new Array(3 + leaves.length).fill(0);
  const loop: SimdLoop = (ls, out, outer, inner) => {
    if (outer * inner === 0) return true;
    // Each run 16-byte aligned with a vector of slack after it.
    let at = 0;
    for (let k = 0; k < ls.length; k++) {
      if (literals[k] !== null && literals[k] !== undefined) continue;
      const n = leafElements(layout.classes[k] as Layout["classes"][number], outer, inner);
      args[2 + k] = at;
      at += Math.ceil((n * (sizes[k] as number) + 16) / 16) * 16;
    }
    const outAt = at;
    const outBytes = outer * inner * outSize;
    if (outAt + outBytes + 16 > MAX_BYTES) return false;
    reserve(mem, outAt + outBytes + 16);
    for (let k = 0; k < ls.length; k++) {
      if (literals[k] !== null && literals[k] !== undefined) continue;
      const l = ls[k] as NDArray;
      const n = leafElements(layout.classes[k] as Layout["classes"][number], outer, inner);
      const d = l.data as Float32Array | Uint16Array;
      const bytesIn = new Uint8Array(d.buffer, d.byteOffset, n * (sizes[k] as number));
      u8.set(bytesIn, args[2 + k] as number);
    }
    args[0] = outer;
    args[1] = inner;
    args[2 + ls.length] = outAt;
    fn(...args);
    runs++;
    const o = out as Float32Array | Uint16Array;
    new Uint8Array(o.buffer, o.byteOffset, outBytes).set(u8.subarray(outAt, outAt + outBytes));
    return true;
  };
  return { loop, outType };
}

/** Turns the SIMD loops off (true) or back on, for tests that compare them with the loop. */
export function setFusedSimdDisabled(off: boolean): void {
  disabled = off;
}

/** How many fused loops have run in WebAssembly on this thread (tests check the path is taken). */
export function fusedSimdRuns(): number {
  return runs;
}
