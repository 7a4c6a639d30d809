/**
 * The WebAssembly module of one fused elementwise tree (fused-simd.ts runs it): a loop over
 * `outer x inner` elements, four f32 lanes at a time, each op computed in f32 and rounded to
 * its own type (f32, bf16 or f16) on the bits; narrow leaves widened on load, the result stored
 * in its type's canonical bits. A row's last vector ends at the row's end, overlapping the one
 * before it (those lanes are computed again from the same inputs, to the same bits), so nothing is
 * written outside the row and threads can share an output by rows (fused-simd-split.ts). Only a
 * row shorter than a vector runs past its end, into the next row or slack left past the output.
 */
import { I32, V128, name, op, section, u32, vec } from "../blas/wasm-encode.ts";
import type { Layout, Node } from "./fused-codegen.ts";
import { MATH } from "./fused-simd-math.ts";
import { Body, F32_LOAD, I32_LOAD, I32_LOAD16_U, I32_LT_U, M, S, f32Bits, interleave, splat32 } from "./simd-body.ts";

/** wasm `select`: [a, b, c] -> c ? a : b. */
const SELECT = [0x1b];
const I32_GT_U = [0x4b];
/** Vectors the main loop computes together (their code interleaved). */
const VECTORS = 4;

export type Narrow = "f32" | "bf16" | "f16";
/** What a leaf can hold: a float type, or i32 read only through a convert to f32. */
export type Lane = Narrow | "i32";
/**
 * What a module can store: a float type, or a signed integer a float tree is converted to as
 * its last op (a quantizing layer's round, clip and convert to i8).
 */
export type Stored = Lane | "i8" | "i16";
export const SIZE: Record<Stored, number> = { f32: 4, bf16: 2, f16: 2, i32: 4, i16: 2, i8: 1 };
/** The signed integer types a float tree's result can be converted to. */
export const INT_RESULTS: ReadonlySet<string> = new Set(["i8", "i16", "i32"]);

export const BINARY: Record<string, number[]> = {
  add: S.add,
  subtract: S.sub,
  multiply: S.mul,
  divide: S.div,
  maximum: S.max,
  minimum: S.min,
};
/**
 * floor, ceil and round_nearest_even are IEEE's roundings to an integer (the sign of a zero
 * result kept, NaN and infinities unchanged), as Math.floor / Math.ceil and the loop's
 * round-half-even give them; an integer so rounded from a bf16 / f16 value is one of that type.
 */
export const UNARY: Record<string, number[]> = {
  negate: S.neg,
  abs: S.abs,
  sqrt: S.sqrt,
  floor: S.floor,
  ceil: S.ceil,
  round_nearest_even: S.nearest,
};

/** The value on the stack (f32 lanes) rounded to bf16's precision; NaN stays NaN. */
function roundBf16(b: Body): void {
  const t = b.temp();
  b.emit(op.set(t), op.get(t), op.get(t), op.get(t), op.i32(16), S.shrU, splat32(1), S.and, S.i32Add);
  b.emit(splat32(0x7fff), S.i32Add, splat32(0xffff0000), S.and);
  b.emit(op.get(t), op.get(t), S.f32Ne, S.bitselect); // [x, rounded, isNaN]
}

/**
 * The value on the stack rounded to f16's precision (subnormals, overflow and NaN included).
 * In f16's normal range by Veltkamp's split, c = x (2^13 + 1), c - (c - x): three f32 ops giving
 * x to 11 significant bits, ties to even (tested on every midpoint); below 2^-14 to a multiple
 * of 2^-24 by adding and taking away 0.75 (whose f32 step is 2^-24), the sign put back for a
 * zero; from 65520 in magnitude on, infinity. NaN stays NaN (no comparison holds for it).
 */
function roundF16(b: Body): void {
  const t = b.temp();
  const c = b.temp();
  b.emit(op.set(t));
  b.emit(op.get(t), splat32(0x80000000), S.and, splat32(0x7f800000), S.or); // signed infinity
  b.emit(op.get(t), splat32(f32Bits(0.75)), S.add, splat32(f32Bits(0.75)), S.sub);
  b.emit(op.get(t), splat32(0x80000000), S.and, S.or);
  b.emit(op.get(t), splat32(f32Bits(8193)), S.mul, op.set(c), op.get(c), op.get(c), op.get(t), S.sub, S.sub);
  b.emit(op.get(t), S.abs, splat32(f32Bits(2 ** -14)), S.f32Lt, S.bitselect); // [inf, finite]
  b.emit(op.get(t), S.abs, splat32(f32Bits(65520)), S.f32Ge, S.bitselect);
}

function roundTo(b: Body, t: Stored): void {
  if (t === "bf16") roundBf16(b);
  else if (t === "f16") roundF16(b);
}

/**
 * i32 lanes holding f16 bits -> their f32 values: the magnitude bits moved to f32's place and
 * multiplied by 2^112, which rebiases the exponent of a normal value and turns a subnormal one
 * (an f32 subnormal after the shift) into its exact value; infinity and NaN get f32's exponent.
 */
function widenF16(b: Body): void {
  const h = b.temp();
  const m = b.temp();
  b.emit(op.set(h), op.get(h), splat32(0x7fff), S.and, op.i32(13), S.shl, op.set(m));
  b.emit(op.get(m), splat32(0x7f800000), S.or); // infinity / NaN
  b.emit(op.get(m), splat32(f32Bits(2 ** 112)), S.mul);
  b.emit(op.get(m), splat32(0x0f800000), S.i32GeU, S.bitselect);
  b.emit(op.get(h), splat32(0x8000), S.and, op.i32(16), S.shl, S.or);
}

/** i32 lanes of 16-bit storage -> f32 values (i32 values stay as they are). */
function widen(b: Body, t: Lane): void {
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
  // |x| times 2^-112 has f16's bits 13 places up (a subnormal f16 becomes an exact f32
  // subnormal); at 65536 and beyond (only infinity here), 0x7c00; NaN, 0x7e00 without sign.
  b.emit(splat32(0x7e00), splat32(0x7c00));
  b.emit(op.get(x), S.abs, splat32(f32Bits(2 ** -112)), S.mul, op.i32(13), S.shrU);
  b.emit(op.get(x), S.abs, splat32(f32Bits(65536)), S.f32Ge, S.bitselect);
  b.emit(op.get(x), op.get(x), S.f32Ne, S.bitselect);
  b.emit(op.get(x), splat32(0x80000000), S.and, op.i32(16), S.shrU, op.get(x), op.get(x), S.f32Ne, S.andNot, S.or);
}

/**
 * One module's leaves and output. A leaf's storage (`loadTypes`) can differ from the type of
 * the value it holds (`valueTypes`): a value computed between modules is kept as f32.
 */
export interface Plan {
  readonly loadTypes: Lane[];
  readonly valueTypes: Lane[];
  readonly outType: Stored;
  readonly classes: Layout["classes"];
}

/**
 * Writes node `n`'s value into a new local, one statement per op (Body.mark), and returns the
 * code that pushes it: a leaf held in a local or a literal pushes that local.
 */
function emitTree(
  b: Body,
  n: Node,
  plan: Plan,
  literals: readonly (number | null)[],
  leafValue: (k: number) => number[],
): number[] {
  if (n.kind !== "op") {
    const k = n.kind === "leaf" ? n.index : n.leaf;
    const literal = literals[k];
    if (literal !== null && literal !== undefined) return b.constant(splat32(f32Bits(literal)));
    return leafValue(k);
  }
  const operands = n.children.map((c) => emitTree(b, c, plan, literals, leafValue));
  b.emit(...operands);
  const name = n.op.name.replace(/^stablehlo\./, "");
  const math = MATH[name];
  if (math) {
    const f16 = resultType(n, plan) === "f16";
    math(b, () => {
      if (f16) roundF16(b);
    });
  } else if (name !== "convert") b.emit(BINARY[name] ?? UNARY[name] ?? []);
  else {
    // i32 -> f32 rounds to nearest, ties to even, as Math.fround of the integer does; a float
    // -> integer convert truncates with saturation and NaN -> 0 (the loop's convertExpr): to
    // i32 here, to i16 / i8 by the saturating narrowings at the store.
    const from = resultType(n.children[0] as Node, plan);
    const to = resultType(n, plan);
    if (from === "i32") b.emit(S.convertS);
    else if (INT_RESULTS.has(to)) b.emit(S.truncSatS);
  }
  roundTo(b, resultType(n, plan));
  const value = b.temp();
  b.emit(op.set(value));
  b.mark();
  return op.get(value);
}

/** The element type an op node produces (its children's, or a convert's target). */
function resultType(n: Node, plan: Plan): Stored {
  if (n.kind !== "op") return plan.valueTypes[n.kind === "leaf" ? n.index : n.leaf] as Lane;
  if (n.op.name.endsWith("convert")) {
    const r = n.op.resultTypes[n.op.resultTypes.length - 1];
    return (r && "elem" in r ? r.elem : "f32") as Stored;
  }
  return resultType(n.children[0] as Node, plan);
}

/** The module's function body: params (outer, inner, leaf pointers..., out pointer). */
function body(tree: Node, plan: Plan, literals: readonly (number | null)[]): number[] {
  const count = plan.loadTypes.length;
  const OUTER = 0;
  const INNER = 1;
  const ptr = (k: number) => 2 + k;
  const OUT = 2 + count;
  const I = OUT + 1;
  const J = OUT + 2;
  const W = OUT + 3;
  /** Where a row's last vector starts: inner - 4, or past any index for rows shorter than a vector. */
  const LAST = OUT + 4;
  const i32Locals = 4;
  const firstV = OUT + 1 + i32Locals;
  const b = new Body(firstV);
  const held = new Map<number, number>();
  const scalarInto = (k: number, index: number | null) => {
    const t = plan.loadTypes[k] as Lane;
    b.emit(op.get(ptr(k)));
    if (index !== null) b.emit(op.get(index), op.i32(SIZE[t]), op.i32Mul, op.i32Add);
    if (t === "f32") b.emit(F32_LOAD, S.f32Splat);
    else if (t === "i32") b.emit(I32_LOAD, S.i32Splat);
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
  // Per-element (vector) reads of the "d" and "r" leaves, `vector` vectors past J; the others
  // are held in locals.
  let vector = 0;
  const leafValue = (k: number): number[] => {
    const c = plan.classes[k];
    const local = held.get(k);
    if (local !== undefined) return op.get(local);
    const t = plan.loadTypes[k] as Lane;
    b.emit(op.get(ptr(k)), op.get(J));
    if (c === "d") b.emit(op.get(W), op.i32Add);
    b.emit(op.i32(SIZE[t]), op.i32Mul, op.i32Add);
    if (t === "f32" || t === "i32") b.emit(M.load(16 * vector));
    else {
      b.emit(M.load16x4u(8 * vector));
      widen(b, t);
    }
    const value = b.temp();
    b.emit(op.set(value));
    b.mark();
    return op.get(value);
  };
  // Prologue: "s" leaves once.
  for (let k = 0; k < count; k++) if (plan.classes[k] === "s" && literals[k] == null) scalarInto(k, null);
  const prologue = b.code.splice(0);
  for (let k = 0; k < count; k++) if (plan.classes[k] === "c" && literals[k] == null) scalarInto(k, I);
  rowCode.push(b.code.splice(0));
  // The element: its value, then the out address and the store.
  const outSize = SIZE[plan.outType];
  /** Code for `vectors` vectors from J on, their statements interleaved. */
  const elements = (vectors: number): number[] => {
    const streams: number[][][] = [];
    for (let at = 0; at < vectors; at++) {
      vector = at;
      const offset = 4 * outSize * at;
      const value = emitTree(b, tree, plan, literals, leafValue);
      b.emit(op.get(OUT), op.get(W), op.get(J), op.i32Add, op.i32(outSize), op.i32Mul, op.i32Add, value);
      if (plan.outType === "f32") {
        const x = b.temp();
        b.emit(op.set(x), splat32(0x7fc00000), op.get(x), op.get(x), op.get(x), S.f32Ne, S.bitselect, M.store(offset));
      } else if (plan.outType === "i32") b.emit(M.store(offset));
      else if (plan.outType === "i16" || plan.outType === "i8") {
        // Saturating narrowings: i32 lanes -> i16 (-> i8) clamp as the loop's convert does.
        const v = b.temp();
        b.emit([0x22, ...u32(v)], op.get(v), S.narrowI32S);
        if (plan.outType === "i16") b.emit(M.store64Lane0(offset));
        else b.emit([0x22, ...u32(v)], op.get(v), S.narrowI16S, M.store32Lane0(offset));
      } else {
        encode16(b, plan.outType);
        const h = b.temp();
        b.emit([0x22, ...u32(h)], op.get(h), S.narrowU, M.store64Lane0(offset));
      }
      b.mark();
      streams.push(b.takeStatements());
    }
    return interleave(streams);
  };
  const single = elements(1);
  // VECTORS vectors an iteration while a row has them (see interleave).
  const several = elements(VECTORS);
  const jAtMostLast = [
    ...op.get(J),
    ...op.get(LAST),
    ...op.get(J),
    ...op.get(LAST),
    ...I32_LT_U,
    ...SELECT,
    ...op.set(J),
  ];
  const code = [
    ...b.constantCode,
    ...prologue,
    ...op.get(INNER),
    ...op.i32(4),
    ...op.i32Sub,
    ...op.i32(0x7fffffff),
    ...op.get(INNER),
    ...op.i32(4),
    ...op.i32GeU,
    ...SELECT,
    ...op.set(LAST),
    ...op.block,
    ...op.loop,
    ...op.get(I),
    ...op.get(OUTER),
    ...op.i32GeU,
    ...op.brIf(1),
    ...(rowCode[0] as number[]),
    ...op.i32(0),
    ...op.set(J),
    ...op.block,
    ...op.loop,
    ...op.get(J),
    ...op.i32(4 * VECTORS),
    ...op.i32Add,
    ...op.get(INNER),
    ...I32_GT_U,
    ...op.brIf(1),
    ...several,
    ...op.get(J),
    ...op.i32(4 * VECTORS),
    ...op.i32Add,
    ...op.set(J),
    ...op.br(0),
    ...op.end,
    ...op.end,
    // The rest of the row (the whole of a row shorter than one pass) one vector at a time, unless
    // the several-vector loop ended at the row's end; it starts no later than where its last vector
    // ends the row.
    ...op.block,
    ...op.get(J),
    ...op.get(INNER),
    ...op.i32GeU,
    ...op.brIf(0),
    // j = min(j, LAST), here and after each vector: the last vector moves back to end at the row's end.
    ...jAtMostLast,
    ...op.loop,
    ...single,
    ...op.get(J),
    ...op.i32(4),
    ...op.i32Add,
    ...[0x22, ...u32(J)],
    ...op.get(INNER),
    ...op.i32GeU,
    ...op.brIf(1),
    ...jAtMostLast,
    ...op.br(0),
    ...op.end,
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

/**
 * The module, importing memory `e.m`: a shared memory of at most `sharedPages` pages where that
 * is given (so the same module can be instantiated on several threads), else a plain one.
 */
export function moduleBytes(
  tree: Node,
  plan: Plan,
  literals: readonly (number | null)[],
  sharedPages: number | null = null,
): Uint8Array<ArrayBuffer> {
  const params = 3 + plan.loadTypes.length;
  const type = [0x60, ...vec(Array.from({ length: params }, () => [I32])), ...vec([])];
  const code = body(tree, plan, literals);
  const limits = sharedPages === null ? [0x00, 0x00] : [0x03, 0x00, ...u32(sharedPages)];
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec([type])),
    ...section(2, vec([[...name("e"), ...name("m"), 0x02, ...limits]])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name("run"), 0x00, 0]])),
    ...section(10, vec([[...u32(code.length), ...code]])),
  ];
  return new Uint8Array(bytes);
}
